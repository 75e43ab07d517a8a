/* cpu_t16.h: AVX-512 register helpers of the files compiled with -mavx512f that read 16-bit
 * floats or transpose tiles. Internal to src/cpu.
 *   wk_widen16_ps   16 f16 or bf16 values to f32 (the products with F16/BF16 weights:
 *                   cpu_fdot_avx512.c, cpu_fgemm_avx512.c; 16-bit key rows: cpu_attn_avx512.c)
 *   wk_t16_epi32    a 16 x 16 transpose of 32-bit elements (r[i] = row i in, r[c] = column c
 *                   out) in four rounds of shuffles: the attention's key tiles, the AMX-BF16
 *                   packing of weight pairs (cpu_fgemm_amx.c), the AVX-512 F16/BF16 product's
 *                   packing of W (cpu_fgemm_avx512.c) */
#ifndef WK_CPU_T16_H
#define WK_CPU_T16_H

#include <immintrin.h>

/* 16 values of 16 bits, f16 when f16 is nonzero else bf16, as f32, exactly: vcvtph2ps (F16C's
 * conversion, no rounding: every f16 is an f32), or bf16's bits moved to the top half */
static inline __attribute__((always_inline)) __m512 wk_widen16_ps(__m256i h, int f16)
{
    if (f16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) void wk_t16_epi32(__m512i r[16])
{
    __m512i t[16], u[16];
    for (int j = 0; j < 8; j++) {
        t[2 * j] = _mm512_unpacklo_epi32(r[2 * j], r[2 * j + 1]);
        t[2 * j + 1] = _mm512_unpackhi_epi32(r[2 * j], r[2 * j + 1]);
    }
    for (int j = 0; j < 4; j++) { /* u[4j + q], 128-bit lane L: rows 4j..4j+3 of column 4L + q */
        u[4 * j] = _mm512_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
        u[4 * j + 1] = _mm512_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
        u[4 * j + 2] = _mm512_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
        u[4 * j + 3] = _mm512_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
    }
    for (int q = 0; q < 4; q++) {
        const __m512i x0 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x88);
        const __m512i x1 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xDD);
        const __m512i y0 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x88);
        const __m512i y1 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xDD);
        r[q] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[8 + q] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        r[4 + q] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[12 + q] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
}

#endif
