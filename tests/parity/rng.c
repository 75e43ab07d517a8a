/* rng.c: the harness's own small PRNG (xorshift64*), seeded per case so a failure reproduces. */
#include "parity_impl.h"

uint64_t pt_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t pt_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

void pt_rng_seed(pt_rng *r, uint64_t seed)
{
    r->s = pt_mix(seed);
    if (r->s == 0)
        r->s = 1;
}

uint64_t pt_rng_next(pt_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dULL;
}

double pt_rng_unif(pt_rng *r) { return (double)(pt_rng_next(r) >> 11) * 0x1.0p-53; }

double pt_rng_uniform(pt_rng *r, double lo, double hi) { return lo + (hi - lo) * pt_rng_unif(r); }

int64_t pt_rng_range(pt_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    return (int64_t)((uint64_t)lo + (span ? pt_rng_next(r) % span : pt_rng_next(r)));
}
