/* cpu_qdot_avx2.c: the quantized dot product (cpu_qdot.h) on AVX2: 4 weight rows at a time, a
 * 256-bit vector of bytes u per row and sub-block (cpu_qdot_unpack.h), multiplied by the x codes
 * with vpmaddubsw + vpmaddwd (pairs of u8 x s8 products in int16: at most 2 * 63 * 127, no
 * saturation; the signed q8 types multiply |q| by x with q's sign, at most 2 * 128 * 127), the
 * halves summed by a fixed shuffle tree into one lane per weight row, then the float combination
 * of cpu_qdot.h lane by lane (each output gets exactly the scalar path's operations). Compiled
 * with -mavx2 -mf16c (cmake/cpu.cmake); called only on a CPU that has them (cpu_qdot.c). */
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__)
#include "cpu_qdot_types.h"
#include "cpu_qdot_unpack.h"

const int wk_qdot_avx2_built = 1;

/* P[t]: 8 int32 (lanes 0-3 half 0, 4-7 half 1) of row t -> lane t of *h0, *h1 */
static inline __attribute__((always_inline)) void reduce(const __m256i P[4], __m128i *h0,
                                                          __m128i *h1)
{
    const __m256i a0 = _mm256_add_epi32(_mm256_unpacklo_epi32(P[0], P[1]),
                                        _mm256_unpackhi_epi32(P[0], P[1]));
    const __m256i a1 = _mm256_add_epi32(_mm256_unpacklo_epi32(P[2], P[3]),
                                        _mm256_unpackhi_epi32(P[2], P[3]));
    const __m256i r = _mm256_add_epi32(_mm256_unpacklo_epi64(a0, a1), _mm256_unpackhi_epi64(a0, a1));
    *h0 = _mm256_castsi256_si128(r);
    *h1 = _mm256_extracti128_si256(r, 1);
}

/* Output rows j0 .. j0 + 3 (those below j1; the others read row j1 - 1 and are not stored). */
static inline __attribute__((always_inline)) void group(const wk_qdot_job *jb, const int qt,
                                                         int64_t j0, int64_t j1)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t nblk = jb->nsub / ty.sub;
    const int rows = jb->rows;
    const uint8_t *wr[4];
    for (int i = 0; i < 4; i++)
        wr[i] = jb->w + (j0 + i < j1 ? j0 + i : j1 - 1) * jb->row_bytes;
    __m256d acc[8];
    for (int r = 0; r < 8; r++)
        acc[r] = _mm256_setzero_pd();
    const __m256i ones = _mm256_set1_epi16(1);
    const int c = ty.sgn ? 0 : ty.c; /* the q8 types multiply signed codes directly */

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        __m128 dv, ev = _mm_setzero_ps();
        if (ty.sgn && ty.sub == 8) {
            dv = _mm_castsi128_ps(_mm_setr_epi32((int)wk_qb_u32(wr[0] + bo), (int)wk_qb_u32(wr[1] + bo),
                                                 (int)wk_qb_u32(wr[2] + bo), (int)wk_qb_u32(wr[3] + bo)));
        } else {
            dv = _mm_cvtph_ps(_mm_setr_epi16((short)wk_qb_u16(wr[0] + bo + ty.dof),
                                             (short)wk_qb_u16(wr[1] + bo + ty.dof),
                                             (short)wk_qb_u16(wr[2] + bo + ty.dof),
                                             (short)wk_qb_u16(wr[3] + bo + ty.dof), 0, 0, 0, 0));
            if (ty.eof >= 0) {
                const uint32_t ng = ty.eneg ? 0x8000u : 0u;
                ev = _mm_cvtph_ps(_mm_setr_epi16((short)(wk_qb_u16(wr[0] + bo + ty.eof) ^ ng),
                                                 (short)(wk_qb_u16(wr[1] + bo + ty.eof) ^ ng),
                                                 (short)(wk_qb_u16(wr[2] + bo + ty.eof) ^ ng),
                                                 (short)(wk_qb_u16(wr[3] + bo + ty.eof) ^ ng), 0, 0,
                                                 0, 0));
            }
        }
        for (int s = 0; s < ty.sub; s++) {
            __m128i S0 = _mm_set1_epi32(1), S1 = S0, N0 = S0, N1 = S0;
            if (ty.ints) {
                int32_t sv[4][4];
                for (int l = 0; l < 4; l++) {
                    int32_t S[2], N[2];
                    qd_ints(qt, wr[l] + bo, s, S, N);
                    sv[0][l] = S[0], sv[1][l] = S[1], sv[2][l] = N[0], sv[3][l] = N[1];
                }
                S0 = _mm_loadu_si128((const __m128i *)sv[0]), S1 = _mm_loadu_si128((const __m128i *)sv[1]);
                N0 = _mm_loadu_si128((const __m128i *)sv[2]), N1 = _mm_loadu_si128((const __m128i *)sv[3]);
            }
            __m256i W[4];
            for (int i = 0; i < 4; i++)
                W[i] = qdu_bytes(qt, wr[i] + bo, s);
            for (int r = 0; r < rows; r++) {
                const int64_t xi = (int64_t)r * jb->nsub + blk * ty.sub + s;
                const __m256i xv = _mm256_loadu_si256((const __m256i *)(jb->xq + xi * 32));
                __m256i P[4];
                __m128i H0, H1;
                for (int i = 0; i < 4; i++) {
                    const __m256i p = ty.sgn ? _mm256_maddubs_epi16(_mm256_sign_epi8(W[i], W[i]),
                                                                    _mm256_sign_epi8(xv, W[i]))
                                             : _mm256_maddubs_epi16(W[i], xv);
                    P[i] = _mm256_madd_epi16(p, ones);
                }
                reduce(P, &H0, &H1);
                const int32_t xh0 = jb->xh[2 * xi], xh1 = jb->xh[2 * xi + 1];
                if (c) {
                    H0 = _mm_sub_epi32(H0, _mm_set1_epi32(c * xh0));
                    H1 = _mm_sub_epi32(H1, _mm_set1_epi32(c * xh1));
                }
                const __m128i I = ty.ints ? _mm_add_epi32(_mm_mullo_epi32(S0, H0), _mm_mullo_epi32(S1, H1))
                                          : _mm_add_epi32(H0, H1);
                __m128 a = _mm_mul_ps(_mm_cvtepi32_ps(I), dv);
                if (ty.eof >= 0) {
                    const __m128i M = ty.ints ? _mm_add_epi32(_mm_mullo_epi32(N0, _mm_set1_epi32(xh0)),
                                                              _mm_mullo_epi32(N1, _mm_set1_epi32(xh1)))
                                              : _mm_set1_epi32(xh0 + xh1);
                    a = _mm_add_ps(a, _mm_mul_ps(_mm_cvtepi32_ps(M), ev));
                }
                const __m128 t = _mm_mul_ps(_mm_set1_ps(jb->xd[xi]), a);
                acc[r] = _mm256_add_pd(acc[r], _mm256_cvtps_pd(t));
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        double v[4];
        _mm256_storeu_pd(v, acc[r]);
        for (int l = 0; l < 4; l++)
            if (j0 + l < j1)
                jb->out[(int64_t)r * jb->n + j0 + l] = (float)v[l];
    }
}

#define QD_ROWS(id)                                                               \
    static void rows_##id(const wk_qdot_job *jb, int64_t j0, int64_t j1)          \
    {                                                                             \
        for (int64_t j = j0; j < j1; j += 4)                                      \
            group(jb, id, j, j1);                                                 \
    }
WK_QDOT_SIMD_TYPES(QD_ROWS)

void wk_qdot_rows_avx2(const wk_qdot_job *jb, int64_t j0, int64_t j1)
{
    switch (jb->qt) {
        WK_QDOT_SIMD_TYPES(WK_QDOT_CASE)
    default: wk_qdot_rows_scalar(jb, j0, j1); break;
    }
}
#else
const int wk_qdot_avx2_built = 0;
void wk_qdot_rows_avx2(const wk_qdot_job *jb, int64_t j0, int64_t j1)
{
    wk_qdot_rows_scalar(jb, j0, j1);
}
#endif
