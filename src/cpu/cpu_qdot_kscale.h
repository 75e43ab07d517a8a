/* cpu_qdot_kscale.h: the integer sub-scales and mins of the K types (cpu_qdot_types.h's qd_ints)
 * for a group of weight rows at once, one byte per row, from one byte transpose of the block's
 * scale field per block, with SSE2 instructions. Included by cpu_qdot_avx2.c and
 * cpu_qdot_avx512.c (compiled with their ISA flags) only; each widens the bytes to its lanes. */
#ifndef WK_CPU_QDOT_KSCALE_H
#define WK_CPU_QDOT_KSCALE_H

#include <immintrin.h>

/* T[c] (16 bytes) = byte c of R[0..15]: a 16 x 16 byte transpose in four rounds of unpacks. */
static inline __attribute__((always_inline)) void qdk_transpose16(const __m128i R[16], __m128i T[16])
{
    __m128i A[16], B[16], C[16];
    for (int i = 0; i < 8; i++) { /* A[2i], A[2i+1]: columns 0..7, 8..15 of rows 2i, 2i+1 */
        A[2 * i] = _mm_unpacklo_epi8(R[2 * i], R[2 * i + 1]);
        A[2 * i + 1] = _mm_unpackhi_epi8(R[2 * i], R[2 * i + 1]);
    }
    for (int j = 0; j < 4; j++) { /* B[4j + q]: columns 4q..4q+3 of rows 4j..4j+3 */
        B[4 * j] = _mm_unpacklo_epi16(A[4 * j], A[4 * j + 2]);
        B[4 * j + 1] = _mm_unpackhi_epi16(A[4 * j], A[4 * j + 2]);
        B[4 * j + 2] = _mm_unpacklo_epi16(A[4 * j + 1], A[4 * j + 3]);
        B[4 * j + 3] = _mm_unpackhi_epi16(A[4 * j + 1], A[4 * j + 3]);
    }
    for (int h = 0; h < 2; h++) /* C[8h + p]: columns 2p, 2p+1 of rows 8h..8h+7 */
        for (int q = 0; q < 4; q++) {
            C[8 * h + 2 * q] = _mm_unpacklo_epi32(B[8 * h + q], B[8 * h + 4 + q]);
            C[8 * h + 2 * q + 1] = _mm_unpackhi_epi32(B[8 * h + q], B[8 * h + 4 + q]);
        }
    for (int p = 0; p < 8; p++) {
        T[2 * p] = _mm_unpacklo_epi64(C[p], C[8 + p]);
        T[2 * p + 1] = _mm_unpackhi_epi64(C[p], C[8 + p]);
    }
}

/* Byte offset in the block of the 16 bytes to transpose: q2_k 0..15, q3_k 94..109 (its 12
 * scale bytes are 96..107; 16 bytes from 96 would pass the block's end), q4_k / q5_k 4..19,
 * q6_k 192..207. */
static inline int qdk_off(int qt)
{
    return qt == 14 ? 192 : qt == 12 || qt == 13 ? 4 : qt == 11 ? 94 : 0;
}

/* 1 when the bytes of qdk_ints are signed (q3_k, q6_k), 0 when unsigned. */
static inline int qdk_signed(int qt) { return qt == 11 || qt == 14; }

/* v[0], v[1]: S of halves 0, 1 of sub-block s; v[2], v[3]: N (0 for q3_k, q6_k); one byte per
 * row, from T[c] = byte qdk_off + c of each row's block. The values of qd_ints. */
static inline __attribute__((always_inline)) void qdk_ints(int qt, const __m128i T[16], int s,
                                                           __m128i v[4])
{
    const __m128i m4 = _mm_set1_epi8(15), m6 = _mm_set1_epi8(63), hi2 = _mm_set1_epi8(3);
    if (qt == 14) { /* q6_k: int8 scales 2s + h */
        v[0] = T[2 * s], v[1] = T[2 * s + 1];
        v[2] = v[3] = _mm_setzero_si128();
    } else if (qt == 11) { /* q3_k: 6-bit scale 2s + h (wk_qb_q3_k_scale) less 32 */
        for (int h = 0; h < 2; h++) {
            const int i = 2 * s + h;
            const __m128i lo = i < 8 ? _mm_and_si128(T[2 + i], m4)
                                     : _mm_and_si128(_mm_srli_epi16(T[2 + i - 8], 4), m4);
            const __m128i hi =
                _mm_and_si128(_mm_srl_epi16(T[2 + 8 + (i & 3)], _mm_cvtsi32_si128(2 * (i >> 2))), hi2);
            v[h] = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
        }
        v[2] = v[3] = _mm_setzero_si128();
    } else if (qt == 10) { /* q2_k: byte 2s + h, scale low nibble, min high nibble */
        v[0] = _mm_and_si128(T[2 * s], m4);
        v[1] = _mm_and_si128(T[2 * s + 1], m4);
        v[2] = _mm_and_si128(_mm_srli_epi16(T[2 * s], 4), m4);
        v[3] = _mm_and_si128(_mm_srli_epi16(T[2 * s + 1], 4), m4);
    } else { /* q4_k, q5_k: 6-bit scale and min of sub-block s (wk_qb_k4_scale) */
        if (s < 4) {
            v[0] = _mm_and_si128(T[s], m6);
            v[2] = _mm_and_si128(T[s + 4], m6);
        } else {
            const __m128i top = _mm_set1_epi8((char)0x30);
            v[0] = _mm_or_si128(_mm_and_si128(T[s + 4], m4),
                                _mm_and_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(T[s - 4], 6), hi2), 4), top));
            v[2] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(T[s + 4], 4), m4),
                                _mm_and_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(T[s], 6), hi2), 4), top));
        }
        v[1] = v[0], v[3] = v[2];
    }
}

#endif
