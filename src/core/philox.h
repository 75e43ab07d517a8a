/* philox.h: the Philox4x32-10 counter-based generator (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3", SC'11) and the mapping from its words to uniform and normal samples.
 * Written once for every backend: the CPU (C11) and the GPU kernels (through kernels/gpu.h)
 * include this header, so the stream is a pure function of (seed, element index):
 *   element i of a call = philox(counter = {lo32(offset+i), hi32(offset+i), 0, 0},
 *                                key = {lo32(seed), hi32(seed)}),
 * where `offset` is the device's count of elements drawn since its last set_seed.
 * Uniform samples are bit-identical across backends (integer code and one multiply-add without
 * contraction). Normal samples (Box-Muller) are computed in f64 with the log and cos below, made
 * only of IEEE + - * / and sqrt, so they too are bit-identical on every backend rather than
 * depending on each vendor's libm. */
#ifndef WK_PHILOX_H
#define WK_PHILOX_H

#include "fpconv.h" /* WK_FP_FN and the integer types */
#if !defined(WK_FP_GPU)
#include <math.h>
#endif

typedef struct wk_philox4 {
    uint32_t v[4];
} wk_philox4;

WK_FP_FN wk_philox4 wk_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                     uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    wk_philox4 out;
    out.v[0] = c0;
    out.v[1] = c1;
    out.v[2] = c2;
    out.v[3] = c3;
    return out;
}

/* The four words for element `i` of a call starting at `offset` under `seed`. */
WK_FP_FN wk_philox4 wk_philox_at(uint64_t seed, uint64_t offset, uint64_t i)
{
    uint64_t c = offset + i;
    return wk_philox4x32_10((uint32_t)c, (uint32_t)(c >> 32), 0u, 0u, (uint32_t)seed,
                            (uint32_t)(seed >> 32));
}

/* [0, 1) with 24 random bits. */
WK_FP_FN float wk_philox_u01_f32(uint32_t w) { return (float)(w >> 8) * 5.9604644775390625e-8f; }
/* (0, 1] with 24 random bits (safe for log). */
WK_FP_FN float wk_philox_u01_open_f32(uint32_t w)
{
    return (float)((w >> 8) + 1u) * 5.9604644775390625e-8f;
}
/* [0, 1) with 53 random bits from two words. */
WK_FP_FN double wk_philox_u01_f64(uint32_t a, uint32_t b)
{
    uint64_t m = ((uint64_t)(a >> 5) << 26) | (uint64_t)(b >> 6);
    return (double)m * 1.1102230246251565e-16;
}
/* (0, 1] with 53 random bits. */
WK_FP_FN double wk_philox_u01_open_f64(uint32_t a, uint32_t b)
{
    uint64_t m = ((uint64_t)(a >> 5) << 26) | (uint64_t)(b >> 6);
    return (double)(m + 1u) * 1.1102230246251565e-16;
}

/* Bits of a double, for the log below. */
WK_FP_FN uint64_t wk_philox_dbits(double d)
{
#if defined(WK_FP_GPU) && (defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__))
    return (uint64_t)__double_as_longlong(d);
#else
    union { double d; uint64_t u; } v;
    v.d = d;
    return v.u;
#endif
}

WK_FP_FN double wk_philox_dfrom(uint64_t u)
{
#if defined(WK_FP_GPU) && (defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__))
    return __longlong_as_double((long long)u);
#else
    union { double d; uint64_t u; } v;
    v.u = u;
    return v.d;
#endif
}

/* ln(x) for a normal double x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)),
 * ln(m) = 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.1716, series to s^23 (error < 1e-18). */
WK_FP_FN double wk_philox_log(double x)
{
    uint64_t b = wk_philox_dbits(x);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    double m = wk_philox_dfrom((b & 0x000fffffffffffffull) | 0x3ff0000000000000ull); /* [1, 2) */
    if (m > 1.4142135623730951) {
        m = m * 0.5;
        e += 1;
    }
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double sum = 0.0;
    for (int k = 23; k >= 3; k -= 2)
        sum = (sum + 1.0 / (double)k) * s2;
    return 2.0 * s * (1.0 + sum) + (double)e * 0.6931471805599453;
}

/* cos(2*pi*t) for t in [0, 1): reduce to a in [0, 1/4] by symmetry, then Taylor to x^22. */
WK_FP_FN double wk_philox_cos2pi(double t)
{
    double a = t > 0.5 ? 1.0 - t : t; /* cos is symmetric about t = 1/2; exact */
    double sign = 1.0;
    if (a > 0.25) { /* cos(2 pi a) = -cos(2 pi (1/2 - a)) */
        a = 0.5 - a;
        sign = -1.0;
    }
    double x = 6.283185307179586 * a;
    double x2 = x * x;
    double term = 1.0, sum = 1.0;
    for (int k = 1; k <= 11; k++) {
        term = term * (-x2) / (double)((2 * k - 1) * (2 * k));
        sum = sum + term;
    }
    return sign * sum;
}

/* Standard normal sample for element i (Box-Muller on two 53-bit uniforms). */
WK_FP_FN double wk_philox_normal(uint64_t seed, uint64_t offset, uint64_t i)
{
    wk_philox4 r = wk_philox_at(seed, offset, i);
    double u1 = wk_philox_u01_open_f64(r.v[0], r.v[1]);
    double u2 = wk_philox_u01_f64(r.v[2], r.v[3]);
    return sqrt(-2.0 * wk_philox_log(u1)) * wk_philox_cos2pi(u2);
}

#endif
