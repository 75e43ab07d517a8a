/* cpu_qdot_unpack.h: the bytes u of a 32-element sub-block of a weight row (cpu_qdot_types.h's
 * qd_bytes) as one 256-bit vector, in element order, with AVX2 instructions; the signed q8 types
 * give their codes unchanged (int8), the caller adds 128 where it multiplies unsigned bytes.
 * Included by cpu_qdot_avx2.c and cpu_qdot_avx512.c (compiled with their ISA flags) only. */
#ifndef WK_CPU_QDOT_UNPACK_H
#define WK_CPU_QDOT_UNPACK_H

#include <immintrin.h>
#include <stdint.h>

static inline __m256i qdu_ld(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 16 bytes of nibbles: low nibbles are elements 0..15, high ones 16..31 */
static inline __m256i qdu_nib32(const uint8_t *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)p);
    const __m256i w = _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    return _mm256_and_si256(w, _mm256_set1_epi8(15));
}

/* byte e = 0x10 where bit e of the 32-bit little-endian word at p is set, else 0 */
static inline __m256i qdu_bit4(const uint8_t *p)
{
    uint32_t m;
    __builtin_memcpy(&m, p, 4);
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)m), sel);
    /* byte i of the mask has every bit set but bit i % 8: all ones iff that bit of m was set */
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfeLL));
    v = _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* (v >> sh) & mask per byte */
static inline __m256i qdu_field(__m256i v, int sh, int mask)
{
    return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(sh)), _mm256_set1_epi8((char)mask));
}

/* sub-block s of the block at b of type qt (a constant after inlining) */
static inline __attribute__((always_inline)) __m256i qdu_bytes(int qt, const uint8_t *b, int s)
{
    const int h = s >> 2, j = s & 3, g = s >> 1, t = s & 1;
    switch (qt) {
    case 2: return qdu_nib32(b + 2);
    case 3: return qdu_nib32(b + 4);
    case 6: return _mm256_or_si256(qdu_nib32(b + 6), qdu_bit4(b + 2));
    case 7: return _mm256_or_si256(qdu_nib32(b + 8), qdu_bit4(b + 4));
    case 8: return qdu_ld(b + 2);
    case 9: return qdu_ld(b + 4);
    case 10: return qdu_field(qdu_ld(b + 16 + 32 * h), 2 * j, 3);
    case 11:
        return _mm256_or_si256(qdu_field(qdu_ld(b + 32 + 32 * h), 2 * j, 3),
                               _mm256_slli_epi16(qdu_field(qdu_ld(b), s, 1), 2));
    case 12: return qdu_field(qdu_ld(b + 16 + 32 * g), 4 * t, 15);
    case 13:
        return _mm256_or_si256(qdu_field(qdu_ld(b + 48 + 32 * g), 4 * t, 15),
                               _mm256_slli_epi16(qdu_field(qdu_ld(b + 16), s, 1), 4));
    case 14:
        return _mm256_or_si256(qdu_field(qdu_ld(b + 64 * h + 32 * (j & 1)), 4 * (j >> 1), 15),
                               _mm256_slli_epi16(qdu_field(qdu_ld(b + 128 + 32 * h), 2 * j, 3), 4));
    case 15: return qdu_ld(b + 4 + 32 * s);
    default: return _mm256_setzero_si256();
    }
}

#endif
