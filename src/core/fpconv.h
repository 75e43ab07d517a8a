/* fpconv.h: reduced-precision float <-> f32 conversions, written once for every backend.
 *
 * Pure integer code on raw bits (round to nearest even), so the CPU backend (C11), the CUDA
 * kernels (nvcc) and the ROCm kernels (hipcc) round identically. Included by src/core and by
 * kernels/gpu.h; it knows nothing about the host library. Rules (docs/semantics.md):
 *   f16:    overflow -> +-inf; NaN -> quiet NaN keeping sign and top payload bits.
 *   bf16:   overflow -> +-inf; NaN -> quiet NaN keeping sign and top payload bits.
 *   f8e4m3: OCP E4M3FN (bias 7, max 448, no inf): |x| >= 448 and +-inf saturate to +-448;
 *           NaN -> 0x7f with the sign kept. Subnormals (m * 2^-9) are kept in both directions.
 * f64 values reach the reduced types through f32 (two roundings; documented). */
#ifndef WK_FPCONV_H
#define WK_FPCONV_H

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
#define WK_FP_FN static __host__ __device__ __forceinline__
#define WK_FP_GPU 1
#else
#include <stdint.h>
#include <string.h>
#define WK_FP_FN static inline
#endif

WK_FP_FN uint32_t wk_fp_bits(float f)
{
#if defined(WK_FP_GPU) && (defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__))
    return __float_as_uint(f);
#else
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
#endif
}

WK_FP_FN float wk_fp_from_bits(uint32_t u)
{
#if defined(WK_FP_GPU) && (defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__))
    return __uint_as_float(u);
#else
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
#endif
}

/* Shift m right by s (1..31) rounding to nearest even. */
WK_FP_FN uint32_t wk_fp_shift_rne(uint32_t m, uint32_t s)
{
    uint32_t q = m >> s;
    uint32_t rem = m & ((1u << s) - 1u);
    uint32_t half = 1u << (s - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

/* ---- IEEE binary16 */
WK_FP_FN uint16_t wk_fp_f32_to_f16(float f)
{
    uint32_t x = wk_fp_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* >= 65520 rounds past 65504: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) { /* normal: >= 2^-14 */
        ax += 0xfffu + ((ax >> 13) & 1u);
        ax -= 112u << 23; /* rebias 127 -> 15 */
        return (uint16_t)(sign | (ax >> 13));
    }
    if (ax < 0x33000000u) /* below 2^-25 (the tie at 2^-25 goes to even: 0) */
        return (uint16_t)sign;
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | wk_fp_shift_rne(m, 126u - e)); /* units of 2^-24 */
}

WK_FP_FN float wk_fp_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
    uint32_t m = (uint32_t)h & 0x3ffu;
    if (e == 0x1fu)
        return wk_fp_from_bits(sign | 0x7f800000u | (m << 13));
    if (e == 0u) { /* zero or subnormal: m * 2^-24, exact in f32 (no loop: small unrolled code) */
        float v = (float)m * 5.9604644775390625e-8f;
        return wk_fp_from_bits(sign | wk_fp_bits(v));
    }
    return wk_fp_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* ---- bfloat16 */
WK_FP_FN uint16_t wk_fp_f32_to_bf16(float f)
{
    uint32_t x = wk_fp_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x0040u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

WK_FP_FN float wk_fp_bf16_to_f32(uint16_t h)
{
    return wk_fp_from_bits((uint32_t)h << 16);
}

/* ---- OCP float8 E4M3FN */
WK_FP_FN uint8_t wk_fp_f32_to_f8e4m3(float f)
{
    uint32_t x = wk_fp_bits(f);
    uint32_t sign = (x >> 24) & 0x80u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN */
        return (uint8_t)(sign | 0x7fu);
    if (ax >= 0x43e00000u) /* >= 448, inf included: saturate */
        return (uint8_t)(sign | 0x7eu);
    if (ax >= 0x3c800000u) { /* normal: >= 2^-6 */
        ax += 0x7ffffu + ((ax >> 20) & 1u);
        ax -= 120u << 23; /* rebias 127 -> 7 */
        return (uint8_t)(sign | (ax >> 20));
    }
    if (ax < 0x3a800000u) /* below 2^-10 (tie at 2^-10 goes to even: 0) */
        return (uint8_t)sign;
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    return (uint8_t)(sign | wk_fp_shift_rne(m, 141u - e)); /* units of 2^-9 */
}

WK_FP_FN float wk_fp_f8e4m3_to_f32(uint8_t b)
{
    uint32_t sign = ((uint32_t)b & 0x80u) << 24;
    uint32_t e = ((uint32_t)b >> 3) & 0xfu;
    uint32_t m = (uint32_t)b & 7u;
    if (e == 0xfu && m == 7u)
        return wk_fp_from_bits(sign | 0x7fc00000u);
    if (e == 0u) { /* zero or subnormal: m * 2^-9, exact in f32 */
        float v = (float)m * 1.953125e-3f;
        return wk_fp_from_bits(sign | wk_fp_bits(v));
    }
    return wk_fp_from_bits(sign | ((e + 120u) << 23) | (m << 20));
}

/* float8 E4M3FN -> f16 bits, exact (every e4m3 value is an f16 value; f16's quiet NaN 0x7e00
 * with the sign for NaN): the matrix-unit GEMM of kernels/gemm.h widens f8e4m3 operands with
 * it. Normal: the exponent rebiased 7 -> 15, the mantissa moved up 7 bits; subnormal m * 2^-9
 * (m = 1..7) is normal in f16: 2^(p - 9) (1 + the bits of m below its top bit p). */
WK_FP_FN uint16_t wk_fp_f8e4m3_to_f16(uint8_t b)
{
    const uint32_t sign = ((uint32_t)b & 0x80u) << 8, em = (uint32_t)b & 0x7fu;
    if (em == 0x7fu)
        return (uint16_t)(sign | 0x7e00u);
    if (em >= 8u) /* (e << 3 | m) + (8 << 3), shifted up 7: (e + 8) << 10 | m << 7 */
        return (uint16_t)(sign | ((em + 64u) << 7));
    if (em == 0u)
        return (uint16_t)sign;
    const uint32_t p = em >= 4u ? 2u : em >= 2u ? 1u : 0u; /* the top bit of m */
    return (uint16_t)(sign | ((6u + p) << 10) | ((em << (10u - p)) & 0x3ffu));
}

#endif /* WK_FPCONV_H */
