/* cpu_t16.h: a 16 x 16 transpose of 32-bit elements in AVX-512 registers (r[i] = row i in, r[c]
 * = column c out) in four rounds of shuffles, for the files compiled with -mavx512f that
 * transpose tiles: the attention's key tiles (cpu_attn_avx512.c, floats), the AMX-BF16
 * packing of weight pairs (cpu_fgemm_amx.c) and the AVX-512 F16/BF16 product's packing of W
 * (cpu_fgemm_avx512.c). Internal to src/cpu. */
#ifndef WK_CPU_T16_H
#define WK_CPU_T16_H

#include <immintrin.h>

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
