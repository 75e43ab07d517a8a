/* test_softmax_quot.c: the arithmetic of kernels/softmax.cu's sm_quot<float>, checked on the
 * host against IEEE division. The kernels write softmax's out = v / s (v = exp(x - m), s the
 * row's sum) as y = 1 / s once per row, then q = v y and one correction q + (v - q s) y with
 * FMAs, where v >= 2^-100 s and s is in [1, 2^64]; the claim is that this is v / s rounded to
 * nearest, bit for bit (Markstein's theorem, with y the rounded reciprocal). Checked here:
 * every 3rd v of the binade [0.5, 1) (the sequence is invariant under scaling v by a power of
 * two while nothing leaves the normal range) against sums that are hard for a reciprocal
 * (significands of all ones, one ulp above a power of two, 4/3, sqrt 2) and random sums in
 * [1, 2^24); then the low edge, v just above 2^-100 s, and v = 0. The same formula, written
 * out here, is what the device code computes: f32 FMAs round once on every platform.
 * Run: ctest -R test_softmax_quot */
#include "testlib.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t rng = 88172645463325252ull;

static uint32_t next(void) /* xorshift64 */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static float quot(float v, float s, float y) /* the kernels' fast path */
{
    const float q = v * y;
    return fmaf(fmaf(-q, s, v), y, q);
}

/* every step-th v of [v0 bits, v1 bits) against s: the number of mismatches */
static long check_range(float s, uint32_t v0, uint32_t v1, uint32_t step)
{
    const float y = 1.0f / s;
    long bad = 0;
    for (uint32_t u = v0; u < v1; u += step) {
        const float v = from_bits(u), want = v / s, got = quot(v, s, y);
        if (bits(got) != bits(want)) {
            if (bad < 3)
                TEST_CHECK(0, "v %a / s %a: got %a, want %a", (double)v, (double)s, (double)got,
                           (double)want);
            bad++;
        }
    }
    return bad;
}

int main(void)
{
    float sums[48];
    int ns = 0;
    const uint32_t hard[] = {0x3f800000u, 0x3f800001u, 0x3f800003u, 0x3fffffffu, 0x3ffffffeu,
                             0x3faaaaabu, 0x3fb504f3u, 0x40400001u, 0x457fffffu, 0x4b7fffffu};
    for (size_t i = 0; i < sizeof hard / sizeof hard[0]; i++)
        sums[ns++] = from_bits(hard[i]);
    while (ns < 48) /* [1, 2^24): 24 binades of s */
        sums[ns++] = from_bits(0x3f800000u + next() % (24u << 23));
    long bad = 0, n = 0;
    for (int i = 0; i < ns; i++) {
        bad += check_range(sums[i], 0x3f000000u, 0x3f800000u, 3);
        n += (0x3f800000u - 0x3f000000u + 2) / 3;
        /* the low edge: v from 2^-100 s upward, 2^16 consecutive values */
        const uint32_t lo = bits(0x1p-100f * sums[i]);
        bad += check_range(sums[i], lo, lo + 65536u, 1);
        n += 65536;
        const float y = 1.0f / sums[i];
        TEST_CHECK(bits(quot(0.0f, sums[i], y)) == 0u, "0 / %a is not +0", (double)sums[i]);
    }
    TEST_CHECK(bad == 0, "%ld of %ld quotients differ from the division", bad, n);
    printf("%ld quotients over %d sums, %ld differ from IEEE division\n", n, ns, bad);
    return testlib_summary();
}
