/* cpu_qdot_avx512.c: the quantized dot product (cpu_qdot.h) on AVX-512 with VNNI, 16 weight rows
 * at a time. The one-sub-block types and q8_k (group): two rows per 512-bit vector (32 bytes u of
 * a sub-block each, cpu_qdot_unpack.h), multiplied by the x codes with vpdpbusd (u8 x s8, four
 * products summed per 32-bit lane, exact), the lanes of each row's halves summed by a fixed tree
 * of shuffles into one vector per half with one lane per weight row. The K types q2_k .. q6_k
 * (group_k): their packed fields transposed so that each 32-bit lane holds 4 bytes of one row,
 * vpdpbusd against x's 4 codes broadcast, no tree. Then the float combination of cpu_qdot.h lane
 * by lane (so each output gets exactly the scalar path's operations). Compiled with -mavx512f -mavx512bw -mavx512vl
 * -mavx512vnni -mf16c (cmake/cpu.cmake); called only on a CPU that has them (cpu_qdot.c). */
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "cpu_qdot_types.h"
#include "cpu_qdot_kscale.h"
#include "cpu_qdot_unpack.h"

const int wk_qdot_avx512_built = 1;

/* Lane L of the reduced vectors holds weight row PERM[L] of the group (the order the shuffle tree
 * of reduce() leaves): q = L / 4, t = L % 4 -> 8 (q / 2) + 2 t + q % 2. */
static const int PERM[16] = {0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15};

/* P[i] (rows 2i, 2i + 1: 128-bit lanes h0, h1 of row 2i, then of row 2i + 1) -> the half sums
 * *h0, *h1, lane L for row PERM[L]. Integer adds: exact in any order. */
static inline __attribute__((always_inline)) void reduce(const __m512i P[8], __m512i *h0,
                                                          __m512i *h1)
{
    __m512i a[4], r[2];
    for (int i = 0; i < 4; i++)
        a[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(P[2 * i], P[2 * i + 1]),
                                _mm512_unpackhi_epi32(P[2 * i], P[2 * i + 1]));
    for (int i = 0; i < 2; i++)
        r[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(a[2 * i], a[2 * i + 1]),
                                _mm512_unpackhi_epi64(a[2 * i], a[2 * i + 1]));
    /* r[i], 128-bit lane l, dword t: the sum of 128-bit lane l of P[4i + t] */
    *h0 = _mm512_shuffle_i32x4(r[0], r[1], 0x88); /* lanes 0, 2 of r0, then of r1 */
    *h1 = _mm512_shuffle_i32x4(r[0], r[1], 0xDD); /* lanes 1, 3 */
}

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

/* Output rows j0 .. j0 + 15 (those below j1; the others read row j1 - 1 and are not stored) of
 * a one-sub-block type or q8_k (S = N = 1). */
static inline __attribute__((always_inline)) void group(const wk_qdot_job *jb, const int qt,
                                                         int64_t j0, int64_t j1)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t nblk = jb->nsub / ty.sub;
    const int rows = jb->rows;
    const uint8_t *wr[16], *wl[16];
    for (int i = 0; i < 16; i++)
        wr[i] = jb->w + (j0 + i < j1 ? j0 + i : j1 - 1) * jb->row_bytes;
    for (int l = 0; l < 16; l++)
        wl[l] = wr[PERM[l]];
    __m512d acc[8][2];
    for (int r = 0; r < 8; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    const __m256i flip = _mm256_set1_epi8((char)0x80);

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        __m512 dv, ev = _mm512_setzero_ps();
        if (ty.sgn && ty.sub == 8) { /* q8_k: f32 d */
            uint32_t dd[16];
            for (int l = 0; l < 16; l++)
                dd[l] = wk_qb_u32(wl[l] + bo);
            dv = _mm512_castsi512_ps(_mm512_loadu_si512(dd));
        } else {
            uint16_t dh[16], eh[16];
            for (int l = 0; l < 16; l++)
                dh[l] = (uint16_t)wk_qb_u16(wl[l] + bo + ty.dof);
            dv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dh));
            if (ty.eof >= 0) {
                for (int l = 0; l < 16; l++)
                    eh[l] = (uint16_t)(wk_qb_u16(wl[l] + bo + ty.eof) ^ (ty.eneg ? 0x8000u : 0u));
                ev = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)eh));
            }
        }
        for (int s = 0; s < ty.sub; s++) {
            __m512i W[8];
            for (int i = 0; i < 8; i++) {
                __m256i a = qdu_bytes(qt, wr[2 * i] + bo, s), b = qdu_bytes(qt, wr[2 * i + 1] + bo, s);
                if (ty.sgn)
                    a = _mm256_xor_si256(a, flip), b = _mm256_xor_si256(b, flip);
                W[i] = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
            }
            for (int r = 0; r < rows; r++) {
                const int64_t xi = (int64_t)r * jb->nsub + blk * ty.sub + s;
                const __m512i xv =
                    _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(jb->xq + xi * 32)));
                __m512i P[8], H0, H1;
                for (int i = 0; i < 8; i++)
                    P[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), W[i], xv);
                reduce(P, &H0, &H1);
                const int32_t xh0 = jb->xh[2 * xi], xh1 = jb->xh[2 * xi + 1];
                if (ty.c) {
                    H0 = _mm512_sub_epi32(H0, _mm512_set1_epi32(ty.c * xh0));
                    H1 = _mm512_sub_epi32(H1, _mm512_set1_epi32(ty.c * xh1));
                }
                const __m512i I = _mm512_add_epi32(H0, H1); /* S = 1 */
                __m512 a = _mm512_mul_ps(_mm512_cvtepi32_ps(I), dv);
                if (ty.eof >= 0) { /* q4_1, q5_1: N = 1 */
                    const __m512i M = _mm512_set1_epi32(xh0 + xh1);
                    a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_cvtepi32_ps(M), ev));
                }
                const __m512 t = _mm512_mul_ps(_mm512_set1_ps(jb->xd[xi]), a);
                acc[r][0] = _mm512_add_pd(acc[r][0], _mm512_cvtps_pd(_mm512_castps512_ps256(t)));
                acc[r][1] = _mm512_add_pd(
                    acc[r][1], _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1))));
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        double v[16];
        _mm512_storeu_pd(v, acc[r][0]);
        _mm512_storeu_pd(v + 8, acc[r][1]);
        for (int l = 0; l < 16; l++)
            if (j0 + PERM[l] < j1)
                jb->out[(int64_t)r * jb->n + j0 + PERM[l]] = (float)v[l];
    }
}

/* ---- the K types (q2_k .. q6_k): weight rows across lanes, no reduction tree.
 * The raw 32-byte fields of a block (quant bits, high bits) are transposed for the 16 rows at
 * dword granularity once per block: vector q of a field holds bytes 4q..4q+3 of it for rows
 * 0..15, lane i = row i. Every byte of a field decodes to the element of the same position with
 * the same shifts and masks, so decoding the transposed fields gives vector q of the sub-block's
 * bytes u (elements 4q..4q+3 of each row), and vpdpbusd with x's dword q broadcast sums each
 * row's products in its own lane: the half sums is0 (q < 4) and is1 (q >= 4) directly, the same
 * exact integers as the tree above. */

/* F[q] = dword q (bytes 4q..4q+3) of the 32 bytes at p[i] + off, lane i for i = 0..15. */
static inline __attribute__((always_inline)) void field_t(const uint8_t *const p[16], int64_t off,
                                                           __m512i F[8])
{
    __m512i Z[8], A[8], Y[8];
    for (int i = 0; i < 4; i++) { /* Z[i]: rows i | i + 4, Z[4 + i]: rows 8 + i | 12 + i */
        Z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(qdu_ld(p[i] + off)), qdu_ld(p[i + 4] + off), 1);
        Z[4 + i] = _mm512_inserti64x4(_mm512_castsi256_si512(qdu_ld(p[8 + i] + off)),
                                      qdu_ld(p[12 + i] + off), 1);
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

/* ((v >> from) & (2^width - 1)) << to per byte (from + width <= 8, to + width <= 8) */
static inline __attribute__((always_inline)) __m512i place(__m512i v, int from, int width, int to)
{
    const __m512i m = _mm512_set1_epi8((char)(((1 << width) - 1) << to));
    const __m512i sh = from >= to ? _mm512_srl_epi16(v, _mm_cvtsi32_si128(from - to))
                                  : _mm512_sll_epi16(v, _mm_cvtsi32_si128(to - from));
    return _mm512_and_si512(sh, m);
}

/* The raw 32-byte fields of a block that the sub-blocks' bytes come from: offsets and count. */
static inline int kfields(int qt, int off[6])
{
    switch (qt) {
    case 10: off[0] = 16, off[1] = 48; return 2;                         /* q2_k: qs */
    case 11: off[0] = 32, off[1] = 64, off[2] = 0; return 3;             /* q3_k: qs, hmask */
    case 12: off[0] = 16, off[1] = 48, off[2] = 80, off[3] = 112; return 4; /* q4_k: qs */
    case 13: /* q5_k: qs, qh */
        off[0] = 48, off[1] = 80, off[2] = 112, off[3] = 144, off[4] = 16;
        return 5;
    default: /* q6_k: ql, qh */
        off[0] = 0, off[1] = 32, off[2] = 64, off[3] = 96, off[4] = 128, off[5] = 160;
        return 6;
    }
}

/* U[q]: dword q of sub-block s's bytes u (cpu_qdot_types.h's qd_bytes), lane i = row i, from
 * the transposed fields F[f][q] (kfields order). */
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

/* Output rows j0 .. j0 + 15 of a K type (those below j1; the others read row j1 - 1 and are not
 * stored); lane i = row j0 + i. The float combination is group()'s, lane by lane. */
static inline __attribute__((always_inline)) void group_k(const wk_qdot_job *jb, const int qt,
                                                           int64_t j0, int64_t j1, const int rows)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t nblk = jb->nsub / 8;
    const uint8_t *wr[16];
    for (int i = 0; i < 16; i++)
        wr[i] = jb->w + (j0 + i < j1 ? j0 + i : j1 - 1) * jb->row_bytes;
    __m512d acc[8][2];
    for (int r = 0; r < 8; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    int foff[6];
    const int nf = kfields(qt, foff);
    const int tof = qdk_off(qt); /* the scale bytes, transposed once per block */

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        /* the 16 rows' block two ahead into L1: the blocks are read out of address order (d and
         * the scales at the end of a q6_k / q3_k block first), which the hardware prefetchers
         * follow poorly; measured q6_k m = 1 ~2200 -> ~1550 us, no loss on the others */
        if (blk + 2 < nblk)
            for (int i = 0; i < 16; i++)
                for (int c = 0; c < ty.bytes + 63; c += 64)
                    _mm_prefetch((const char *)(wr[i] + bo + 2 * ty.bytes + (c < ty.bytes ? c : ty.bytes - 1)),
                                 _MM_HINT_T0);
        __m512 dv, ev = _mm512_setzero_ps();
        {
            uint16_t dh[16], eh[16];
            for (int l = 0; l < 16; l++)
                dh[l] = (uint16_t)wk_qb_u16(wr[l] + bo + ty.dof);
            dv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dh));
            if (ty.eof >= 0) {
                for (int l = 0; l < 16; l++)
                    eh[l] = (uint16_t)(wk_qb_u16(wr[l] + bo + ty.eof) ^ (ty.eneg ? 0x8000u : 0u));
                ev = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)eh));
            }
        }
        __m128i T[16];
        {
            __m128i R[16];
            for (int l = 0; l < 16; l++)
                R[l] = _mm_loadu_si128((const __m128i *)(wr[l] + bo + tof));
            qdk_transpose16(R, T);
        }
        __m512i F[6][8];
        for (int f = 0; f < nf; f++)
            field_t(wr, bo + foff[f], F[f]);
        for (int s = 0; s < 8; s++) {
            __m512i S0, S1, N0, N1;
            ints_t(qt, T, s, &S0, &S1, &N0, &N1);
            __m512i U[8];
            kbytes(qt, F, s, U);
            for (int r = 0; r < rows; r++) {
                const int64_t xi = (int64_t)r * jb->nsub + blk * 8 + s;
                const int8_t *xq = jb->xq + xi * 32;
                const int32_t xh0 = jb->xh[2 * xi], xh1 = jb->xh[2 * xi + 1];
                /* is0, is1 less c * (the x half sums), all exact int32 */
                __m512i H0 = _mm512_set1_epi32(-ty.c * xh0), H1 = _mm512_set1_epi32(-ty.c * xh1);
                for (int q = 0; q < 4; q++) {
                    int32_t x0, x1;
                    __builtin_memcpy(&x0, xq + 4 * q, 4);
                    __builtin_memcpy(&x1, xq + 16 + 4 * q, 4);
                    H0 = _mm512_dpbusd_epi32(H0, U[q], _mm512_set1_epi32(x0));
                    H1 = _mm512_dpbusd_epi32(H1, U[4 + q], _mm512_set1_epi32(x1));
                }
                const __m512i I = _mm512_add_epi32(_mm512_mullo_epi32(S0, H0), _mm512_mullo_epi32(S1, H1));
                __m512 a = _mm512_mul_ps(_mm512_cvtepi32_ps(I), dv);
                if (ty.eof >= 0) {
                    const __m512i M = _mm512_add_epi32(_mm512_mullo_epi32(N0, _mm512_set1_epi32(xh0)),
                                                       _mm512_mullo_epi32(N1, _mm512_set1_epi32(xh1)));
                    a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_cvtepi32_ps(M), ev));
                }
                const __m512 tt = _mm512_mul_ps(_mm512_set1_ps(jb->xd[xi]), a);
                acc[r][0] = _mm512_add_pd(acc[r][0], _mm512_cvtps_pd(_mm512_castps512_ps256(tt)));
                acc[r][1] = _mm512_add_pd(
                    acc[r][1], _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(tt), 1))));
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        double v[16];
        _mm512_storeu_pd(v, acc[r][0]);
        _mm512_storeu_pd(v + 8, acc[r][1]);
        for (int l = 0; l < 16; l++)
            if (j0 + l < j1)
                jb->out[(int64_t)r * jb->n + j0 + l] = (float)v[l];
    }
}

/* K types with one x row (decode proper) get their own copy of group_k, its f64 accumulators in
 * registers rather than reloaded from the stack every sub-block. */
#define QD_ROWS(id)                                                               \
    static void rows_##id(const wk_qdot_job *jb, int64_t j0, int64_t j1)          \
    {                                                                             \
        for (int64_t j = j0; j < j1; j += 16)                                     \
            if (id < 10 || id > 14)                                               \
                group(jb, id, j, j1);                                             \
            else if (jb->rows == 1)                                               \
                group_k(jb, id, j, j1, 1);                                        \
            else                                                                  \
                group_k(jb, id, j, j1, jb->rows);                                 \
    }
WK_QDOT_SIMD_TYPES(QD_ROWS)

void wk_qdot_rows_avx512(const wk_qdot_job *jb, int64_t j0, int64_t j1)
{
    switch (jb->qt) {
        WK_QDOT_SIMD_TYPES(WK_QDOT_CASE)
    default: wk_qdot_rows_scalar(jb, j0, j1); break;
    }
}
#else
const int wk_qdot_avx512_built = 0;
void wk_qdot_rows_avx512(const wk_qdot_job *jb, int64_t j0, int64_t j1)
{
    wk_qdot_rows_scalar(jb, j0, j1);
}
#endif
