/* cpu_qdot_avx2.c: the quantized dot product (cpu_qdot.h) on AVX2. The one-sub-block types and
 * q8_k (group): 4 weight rows at a time, a 256-bit vector of bytes u per row and sub-block
 * (cpu_qdot_unpack.h), multiplied by the x codes with vpmaddubsw + vpmaddwd (pairs of u8 x s8
 * products in int16: at most 2 * 63 * 127, no saturation; the signed q8 types multiply |q| by x
 * with q's sign, at most 2 * 128 * 127), the halves summed by a fixed shuffle tree into one lane
 * per weight row. The K types q2_k .. q6_k (group_k): 8 rows, one per 32-bit lane, from their
 * packed fields transposed per block. Then the terms of cpu_qdot.h lane by lane
 * (each output gets exactly the scalar path's operations). Compiled
 * with -mavx2 -mf16c -mfma (cmake/cpu.cmake); called only on a CPU that has them (cpu_qdot.c). */
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include "cpu_qdot_types.h"
#include "cpu_qdot_kscale.h"
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
    __m128 acc[8];
    for (int r = 0; r < 8; r++)
        acc[r] = _mm_setzero_ps();
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
                /* the terms of cpu_qdot.h: S = 1 (d * S = d), N = 1 for q4_1, q5_1 */
                const __m128 dx = _mm_set1_ps(jb->xd[xi]);
                acc[r] = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_add_epi32(H0, H1)), _mm_mul_ps(dv, dx), acc[r]);
                if (ty.eof >= 0)
                    acc[r] = _mm_fmadd_ps(_mm_set1_ps((float)(xh0 + xh1)), _mm_mul_ps(ev, dx), acc[r]);
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float v[4];
        _mm_storeu_ps(v, acc[r]);
        for (int l = 0; l < 4; l++)
            if (j0 + l < j1)
                jb->out[(int64_t)r * jb->n + j0 + l] = v[l];
    }
}

/* ---- the K types (q2_k .. q6_k): 8 weight rows across the lanes, as cpu_qdot_avx512.c's
 * group_k: the raw 32-byte fields of a block transposed at dword granularity for the 8 rows once
 * per block (lane i = row i), decoded with qd_bytes's per-byte shifts into vector q of the
 * sub-block's bytes (elements 4q..4q+3 of each row), and multiplied by x's dword q broadcast with
 * vpmaddubsw (pairs, at most 2 * 63 * 127 = 16002; two of them summed in int16 stay below 2^15)
 * and vpmaddwd: the half sums in each row's own lane, the same exact integers as group(). */

/* F[q] = dword q (bytes 4q..4q+3) of the 32 bytes at p[i] + off, lane i for i = 0..7. */
static inline __attribute__((always_inline)) void field_t(const uint8_t *const p[8], int64_t off,
                                                           __m256i F[8])
{
    __m256i Z[8], A[8], Y[8];
    for (int i = 0; i < 8; i++)
        Z[i] = qdu_ld(p[i] + off);
    for (int t = 0; t < 4; t++) { /* per 128-bit lane: A[2t], A[2t + 1] rows 2t, 2t + 1 */
        A[2 * t] = _mm256_unpacklo_epi32(Z[2 * t], Z[2 * t + 1]);
        A[2 * t + 1] = _mm256_unpackhi_epi32(Z[2 * t], Z[2 * t + 1]);
    }
    for (int g = 0; g < 2; g++) { /* Y[4g + q]: rows 4g..4g+3, dword q (lane 0), 4 + q (lane 1) */
        Y[4 * g] = _mm256_unpacklo_epi64(A[4 * g], A[4 * g + 2]);
        Y[4 * g + 1] = _mm256_unpackhi_epi64(A[4 * g], A[4 * g + 2]);
        Y[4 * g + 2] = _mm256_unpacklo_epi64(A[4 * g + 1], A[4 * g + 3]);
        Y[4 * g + 3] = _mm256_unpackhi_epi64(A[4 * g + 1], A[4 * g + 3]);
    }
    for (int q = 0; q < 4; q++) {
        F[q] = _mm256_permute2x128_si256(Y[q], Y[4 + q], 0x20);
        F[4 + q] = _mm256_permute2x128_si256(Y[q], Y[4 + q], 0x31);
    }
}

/* ((v >> from) & (2^width - 1)) << to per byte (from + width <= 8, to + width <= 8) */
static inline __attribute__((always_inline)) __m256i place(__m256i v, int from, int width, int to)
{
    const __m256i m = _mm256_set1_epi8((char)(((1 << width) - 1) << to));
    const __m256i sh = from >= to ? _mm256_srl_epi16(v, _mm_cvtsi32_si128(from - to))
                                  : _mm256_sll_epi16(v, _mm_cvtsi32_si128(to - from));
    return _mm256_and_si256(sh, m);
}

/* U[q]: dword q of sub-block s's bytes u, lane i = row i, from the fields F[f][q] */
static inline __attribute__((always_inline)) void kbytes(int qt, __m256i F[6][8], int s,
                                                          __m256i U[8])
{
    const int h = s >> 2, j = s & 3, g = s >> 1, t = s & 1;
    for (int q = 0; q < 8; q++)
        switch (qt) {
        case 10: U[q] = place(F[h][q], 2 * j, 2, 0); break;
        case 11: U[q] = _mm256_or_si256(place(F[h][q], 2 * j, 2, 0), place(F[2][q], s, 1, 2)); break;
        case 12: U[q] = place(F[g][q], 4 * t, 4, 0); break;
        case 13: U[q] = _mm256_or_si256(place(F[g][q], 4 * t, 4, 0), place(F[4][q], s, 1, 4)); break;
        default:
            U[q] = _mm256_or_si256(place(F[2 * h + (j & 1)][q], 4 * (j >> 1), 4, 0),
                                   place(F[4 + h][q], 2 * j, 2, 4));
            break;
        }
}

/* sum over q of the 4-byte dot products of U[q] (u8) and x dword q (s8) per lane, q = 0..3 */
static inline __attribute__((always_inline)) __m256i dot4(const __m256i U[4], const int8_t *x,
                                                           __m256i init)
{
    int32_t xw[4];
    __builtin_memcpy(xw, x, 16);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i p01 = _mm256_add_epi16(_mm256_maddubs_epi16(U[0], _mm256_set1_epi32(xw[0])),
                                         _mm256_maddubs_epi16(U[1], _mm256_set1_epi32(xw[1])));
    const __m256i p23 = _mm256_add_epi16(_mm256_maddubs_epi16(U[2], _mm256_set1_epi32(xw[2])),
                                         _mm256_maddubs_epi16(U[3], _mm256_set1_epi32(xw[3])));
    return _mm256_add_epi32(init, _mm256_add_epi32(_mm256_madd_epi16(p01, ones),
                                                   _mm256_madd_epi16(p23, ones)));
}

/* Output rows j0 .. j0 + 7 of a K type (those below j1; the others read row j1 - 1 and are not
 * stored); lane i = row j0 + i. The terms are group()'s, lane by lane. */
static inline __attribute__((always_inline)) void group_k(const wk_qdot_job *jb, const int qt,
                                                           int64_t j0, int64_t j1, const int rows)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t nblk = jb->nsub / 8;
    const uint8_t *wr[8];
    for (int i = 0; i < 8; i++)
        wr[i] = jb->w + (j0 + i < j1 ? j0 + i : j1 - 1) * jb->row_bytes;
    __m256 acc[8];
    for (int r = 0; r < 8; r++)
        acc[r] = _mm256_setzero_ps();
    int foff[6];
    const int nf = qd_kfields(qt, foff);
    const int tof = qdk_off(qt); /* the scale bytes, transposed once per block */

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        if (blk + 2 < nblk) /* as cpu_qdot_avx512.c: the rows' block two ahead */
            for (int i = 0; i < 8; i++)
                for (int c = 0; c < ty.bytes + 63; c += 64)
                    _mm_prefetch((const char *)(wr[i] + bo + 2 * ty.bytes + (c < ty.bytes ? c : ty.bytes - 1)),
                                 _MM_HINT_T0);
        __m256 dv, ev = _mm256_setzero_ps();
        {
            uint16_t dh[8], eh[8];
            for (int l = 0; l < 8; l++)
                dh[l] = (uint16_t)wk_qb_u16(wr[l] + bo + ty.dof);
            dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh));
            if (ty.eof >= 0) {
                for (int l = 0; l < 8; l++)
                    eh[l] = (uint16_t)(wk_qb_u16(wr[l] + bo + ty.eof) ^ (ty.eneg ? 0x8000u : 0u));
                ev = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)eh));
            }
        }
        __m128i T[16];
        {
            __m128i R[16];
            for (int l = 0; l < 16; l++)
                R[l] = l < 8 ? _mm_loadu_si128((const __m128i *)(wr[l] + bo + tof)) : _mm_setzero_si128();
            qdk_transpose16(R, T);
        }
        __m256i F[6][8];
        for (int f = 0; f < nf; f++)
            field_t(wr, bo + foff[f], F[f]);
        for (int s = 0; s < 8; s++) {
            __m128i iv[4];
            qdk_ints(qt, T, s, iv);
            __m256i SN[4]; /* S0, S1, N0, N1 */
            for (int i = 0; i < 4; i++)
                SN[i] = qdk_signed(qt) ? _mm256_cvtepi8_epi32(iv[i]) : _mm256_cvtepu8_epi32(iv[i]);
            /* d * S and e * N, exact (cpu_qdot.h) */
            const __m256 dS0 = _mm256_mul_ps(dv, _mm256_cvtepi32_ps(SN[0]));
            const __m256 dS1 = _mm256_mul_ps(dv, _mm256_cvtepi32_ps(SN[1]));
            const __m256 eN0 = _mm256_mul_ps(ev, _mm256_cvtepi32_ps(SN[2]));
            const __m256 eN1 = _mm256_mul_ps(ev, _mm256_cvtepi32_ps(SN[3]));
            __m256i U[8];
            kbytes(qt, F, s, U);
            for (int r = 0; r < rows; r++) {
                const int64_t xi = (int64_t)r * jb->nsub + blk * 8 + s;
                const int8_t *xq = jb->xq + xi * 32;
                const int32_t xh0 = jb->xh[2 * xi], xh1 = jb->xh[2 * xi + 1];
                /* is0, is1 less c * (the x half sums), all exact int32 */
                const __m256i H0 = dot4(U, xq, _mm256_set1_epi32(-ty.c * xh0));
                const __m256i H1 = dot4(U + 4, xq + 16, _mm256_set1_epi32(-ty.c * xh1));
                const __m256 dx = _mm256_set1_ps(jb->xd[xi]);
                if (ty.ints == 2) { /* q2_k, q3_k, q6_k: a term per half */
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(H0), _mm256_mul_ps(dS0, dx), acc[r]);
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(H1), _mm256_mul_ps(dS1, dx), acc[r]);
                } else {
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(H0, H1)),
                                             _mm256_mul_ps(dS0, dx), acc[r]);
                }
                if (ty.eof >= 0) {
                    if (ty.ints == 2) { /* q2_k */
                        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps((float)xh0), _mm256_mul_ps(eN0, dx), acc[r]);
                        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps((float)xh1), _mm256_mul_ps(eN1, dx), acc[r]);
                    } else { /* q4_k, q5_k */
                        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps((float)(xh0 + xh1)),
                                                 _mm256_mul_ps(eN0, dx), acc[r]);
                    }
                }
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float v[8];
        _mm256_storeu_ps(v, acc[r]);
        for (int l = 0; l < 8; l++)
            if (j0 + l < j1)
                jb->out[(int64_t)r * jb->n + j0 + l] = v[l];
    }
}

/* K types with one x row get their own copy of group_k (accumulators in registers) */
#define QD_ROWS(id)                                                               \
    static void rows_##id(const wk_qdot_job *jb, int64_t j0, int64_t j1)          \
    {                                                                             \
        if (id < 10 || id > 14)                                                   \
            for (int64_t j = j0; j < j1; j += 4)                                  \
                group(jb, id, j, j1);                                             \
        else if (jb->rows == 1)                                                   \
            for (int64_t j = j0; j < j1; j += 8)                                  \
                group_k(jb, id, j, j1, 1);                                        \
        else                                                                      \
            for (int64_t j = j0; j < j1; j += 8)                                  \
                group_k(jb, id, j, j1, jb->rows);                                 \
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
