/* cpu_qdot_avx512.h: the AVX-512 pieces of the quantized product that the decode functions
 * (cpu_qdot_avx512.c) and the AMX product's packing (cpu_qgemm_amx.c) share: 16 weight rows across
 * the 32-bit lanes of a vector, 4 bytes of one row per lane. The K types' raw 32-byte fields of a
 * block are transposed at dword granularity for the 16 rows (field_t); decoding the transposed
 * fields with qd_bytes's per-byte shifts gives vector q of a sub-block's bytes u, elements
 * 4q..4q+3 of each row (kbytes); the one-sub-block types transpose their unpacked rows the same
 * way (dword_t). Included only by files compiled with -mavx512f -mavx512bw -mavx512vl. */
#ifndef WK_CPU_QDOT_AVX512_H
#define WK_CPU_QDOT_AVX512_H

#include "cpu_qdot_kscale.h"
#include "cpu_qdot_types.h"
#include "cpu_qdot_unpack.h"
#include <immintrin.h>

/* The integer sub-scales S0, S1 and mins N0, N1 of sub-block s for the 16 lanes
 * (cpu_qdot_kscale.h). */
static inline __attribute__((always_inline)) void ints_t(int qt, const __m128i T[16], int s,
                                                          __m512i *S0, __m512i *S1, __m512i *N0,
                                                          __m512i *N1)
{
    __m128i v[4];
    qdk_ints(qt, T, s, v);
    __m512i w[4];
    for (int i = 0; i < 4; i++)
        w[i] = qdk_signed(qt) ? _mm512_cvtepi8_epi32(v[i]) : _mm512_cvtepu8_epi32(v[i]);
    *S0 = w[0], *S1 = w[1], *N0 = w[2], *N1 = w[3];
}

/* F[q] = dword q of R[i], lane i for i = 0..15: a 16 x 8 dword transpose. */
static inline __attribute__((always_inline)) void dword_t(const __m256i R[16], __m512i F[8])
{
    __m512i Z[8], A[8], Y[8];
    for (int i = 0; i < 4; i++) { /* Z[i]: rows i | i + 4, Z[4 + i]: rows 8 + i | 12 + i */
        Z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(R[i]), R[i + 4], 1);
        Z[4 + i] = _mm512_inserti64x4(_mm512_castsi256_si512(R[8 + i]), R[12 + i], 1);
    }
    for (int g = 0; g < 2; g++) /* per 128-bit lane: A[4g + 2t + w] rows (2t, 2t + 1) of Z[4g..] */
        for (int t = 0; t < 2; t++) {
            A[4 * g + 2 * t] = _mm512_unpacklo_epi32(Z[4 * g + 2 * t], Z[4 * g + 2 * t + 1]);
            A[4 * g + 2 * t + 1] = _mm512_unpackhi_epi32(Z[4 * g + 2 * t], Z[4 * g + 2 * t + 1]);
        }
    for (int g = 0; g < 2; g++) { /* Y[4g + q], 128-bit lane c: dword q (lanes 0, 2) or 4 + q (1, 3) */
        Y[4 * g] = _mm512_unpacklo_epi64(A[4 * g], A[4 * g + 2]);
        Y[4 * g + 1] = _mm512_unpackhi_epi64(A[4 * g], A[4 * g + 2]);
        Y[4 * g + 2] = _mm512_unpacklo_epi64(A[4 * g + 1], A[4 * g + 3]);
        Y[4 * g + 3] = _mm512_unpackhi_epi64(A[4 * g + 1], A[4 * g + 3]);
    }
    for (int q = 0; q < 4; q++) { /* 128-bit lanes: rows 0-3, 4-7 (from Y[q]), 8-11, 12-15 */
        F[q] = _mm512_shuffle_i32x4(Y[q], Y[4 + q], 0x88);
        F[4 + q] = _mm512_shuffle_i32x4(Y[q], Y[4 + q], 0xDD);
    }
}

/* F[q] = dword q (bytes 4q..4q+3) of the 32 bytes at p[i] + off, lane i for i = 0..15. */
static inline __attribute__((always_inline)) void field_t(const uint8_t *const p[16], int64_t off,
                                                           __m512i F[8])
{
    __m256i R[16];
    for (int i = 0; i < 16; i++)
        R[i] = qdu_ld(p[i] + off);
    dword_t(R, F);
}

/* ((v >> from) & (2^width - 1)) << to per byte (from + width <= 8, to + width <= 8) */
static inline __attribute__((always_inline)) __m512i place(__m512i v, int from, int width, int to)
{
    const __m512i m = _mm512_set1_epi8((char)(((1 << width) - 1) << to));
    const __m512i sh = from >= to ? _mm512_srl_epi16(v, _mm_cvtsi32_si128(from - to))
                                  : _mm512_sll_epi16(v, _mm_cvtsi32_si128(to - from));
    return _mm512_and_si512(sh, m);
}

/* U[q]: dword q of sub-block s's bytes u (cpu_qdot_types.h's qd_bytes), lane i = row i, from
 * the transposed fields F[f][q] (qd_kfields order). */
static inline __attribute__((always_inline)) void kbytes(int qt, __m512i F[6][8], int s,
                                                          __m512i U[8])
{
    const int h = s >> 2, j = s & 3, g = s >> 1, t = s & 1;
    for (int q = 0; q < 8; q++)
        switch (qt) {
        case 10: U[q] = place(F[h][q], 2 * j, 2, 0); break;
        case 11: U[q] = _mm512_or_si512(place(F[h][q], 2 * j, 2, 0), place(F[2][q], s, 1, 2)); break;
        case 12: U[q] = place(F[g][q], 4 * t, 4, 0); break;
        case 13: U[q] = _mm512_or_si512(place(F[g][q], 4 * t, 4, 0), place(F[4][q], s, 1, 4)); break;
        default:
            U[q] = _mm512_or_si512(place(F[2 * h + (j & 1)][q], 4 * (j >> 1), 4, 0),
                                   place(F[4 + h][q], 2 * j, 2, 4));
            break;
        }
}

/* acc + the 4-element dot products of the u8 codes w with x's dword at p (4 codes) in every
 * lane: vpdpbusd with p as an embedded-broadcast operand (GCC does not fold _mm512_set1_epi32 of
 * a load into it, and a separate broadcast per product costs as much as the product in the
 * product of many rows) */
static inline __attribute__((always_inline)) __m512i dot_bcast(__m512i acc, __m512i w, const int8_t *p)
{
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)p));
    return acc;
}

#endif
