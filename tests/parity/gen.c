/* gen.c: input values per domain (see pt_domain), stored with the reference's own rounding so
 * every input is a value of its dtype. */
#include "parity_impl.h"
#include <math.h>

/* Values on the edges of the conversion rules: halves (ties), integer range ends, f16 overflow
 * (65520 rounds to inf), f8e4m3 saturation (448, 464), subnormals, 2^63, NaN, infinities. */
static const double cast_specials[] = {
    0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, -0.99, 127.5, 255.0, 255.5, 256.0, -1.0, -129.0,
    32767.5, 32768.0, -32769.0, 65504.0, 65519.0, 65520.0, 65536.0, 448.0, 464.0, 480.0, -448.0,
    0x1p-24, 0x1p-25, 0x3p-26, 0x1p-9, 0x1p-10, 0x1p-149, 0x1p-133, 2147483647.0, 2147483648.0,
    -2147483648.0, -2147483649.0, 4294967295.0, 4294967296.0, 9223372036854775807.0,
    -9223372036854775808.0, 1e30, -1e30, 3.4e38, 1e300, NAN, INFINITY, -INFINITY,
};

static double gen_float(pt_rng *r, pt_domain d)
{
    double u = pt_rng_unif(r);
    switch (d) {
    case PD_POS:
        return u < 0.03 ? 0.0 : exp(pt_rng_uniform(r, log(0.01), log(100.0)));
    case PD_RECIP: {
        double m = exp(pt_rng_uniform(r, log(0.1), log(10.0)));
        return u < 0.5 ? -m : m;
    }
    case PD_EXP: return pt_rng_uniform(r, -8, 8);
    case PD_TRIG: return pt_rng_uniform(r, -6, 6);
    case PD_ROUND: return u < 0.4 ? (double)pt_rng_range(r, -9, 8) + 0.5 : pt_rng_uniform(r, -8, 8);
    case PD_POW: return exp(pt_rng_uniform(r, log(0.1), log(4.0)));
    case PD_TIES: {
        static const double set[] = {-2, -1, -0.5, 0, 0.5, 1, 2, 3};
        return u < 0.5 ? set[pt_rng_range(r, 0, 7)] : pt_rng_uniform(r, -4, 4);
    }
    case PD_SUM: return pt_rng_uniform(r, -0.5, 1.0);
    case PD_CORE: return pt_rng_uniform(r, 0.5, 4.0);
    case PD_CAST: {
        int ns = (int)(sizeof cast_specials / sizeof cast_specials[0]);
        if (u < 0.2)
            return cast_specials[pt_rng_range(r, 0, ns - 1)];
        if (u < 0.5)
            return pt_rng_uniform(r, -300, 300);
        if (u < 0.8) {
            double m = ldexp(1.0 + pt_rng_unif(r), (int)pt_rng_range(r, -30, 66));
            return pt_rng_unif(r) < 0.5 ? -m : m;
        }
        return pt_rng_uniform(r, -2, 2);
    }
    default: return pt_rng_uniform(r, -4, 4);
    }
}

static int64_t gen_int(pt_rng *r, wk_dtype dt, pt_domain d)
{
    double u = pt_rng_unif(r);
    if (d == PD_COND)
        return u < 0.5 ? 0 : u < 0.8 ? 1 : (int64_t)pt_rng_next(r);
    if (d == PD_TIES && u < 0.6)
        return pt_rng_range(r, -3, 3);
    if (u < 0.4)
        return pt_rng_range(r, -100, 100); /* negative values wrap for unsigned dtypes */
    if (u < 0.8)
        return (int64_t)pt_rng_next(r);    /* wrapped to the width by the store */
    switch (pt_rng_range(r, 0, 4)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: return ref_int_min(dt);
    default: return ref_int_max(dt);
    }
}

void pt_fill(void *buf, wk_dtype dt, size_t n, pt_rng *r, pt_domain d, int specials)
{
    static const double float_specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
    if (d == PD_BITS) {
        unsigned char *p = buf;
        size_t bytes = n * ref_dtype_size(dt);
        for (size_t i = 0; i < bytes; i++)
            p[i] = (unsigned char)(pt_rng_next(r) >> 56);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!ref_is_float(dt)) {
            ref_store_i(dt, buf, (int64_t)i, gen_int(r, dt, d));
        } else if (specials && pt_rng_unif(r) < 0.03) {
            ref_store_f(dt, buf, (int64_t)i, float_specials[pt_rng_range(r, 0, 4)]);
        } else {
            ref_store_f(dt, buf, (int64_t)i, gen_float(r, d));
        }
    }
}
