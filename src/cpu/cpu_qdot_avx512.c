/* cpu_qdot_avx512.c: the quantized dot product (cpu_qdot.h) on AVX-512 with VNNI: 16 weight rows
 * at a time, two rows per 512-bit vector (32 bytes u of a sub-block each, cpu_qdot_unpack.h),
 * multiplied by the x codes with vpdpbusd (u8 x s8, four products summed per 32-bit lane, exact),
 * the lanes of each row's halves summed by a fixed tree of shuffles into one vector per half with
 * one lane per weight row, then the float combination of cpu_qdot.h lane by lane (so each output
 * gets exactly the scalar path's operations). Compiled with -mavx512f -mavx512bw -mavx512vl
 * -mavx512vnni -mf16c (cmake/cpu.cmake); called only on a CPU that has them (cpu_qdot.c). */
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "cpu_qdot_types.h"
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

/* Output rows j0 .. j0 + 15 (those below j1; the others read row j1 - 1 and are not stored). */
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
            __m512i S0 = _mm512_set1_epi32(1), S1 = S0, N0 = S0, N1 = S0;
            if (ty.ints) {
                int32_t sv[4][16];
                for (int l = 0; l < 16; l++) {
                    int32_t S[2], N[2];
                    qd_ints(qt, wl[l] + bo, s, S, N);
                    sv[0][l] = S[0], sv[1][l] = S[1], sv[2][l] = N[0], sv[3][l] = N[1];
                }
                S0 = _mm512_loadu_si512(sv[0]), S1 = _mm512_loadu_si512(sv[1]);
                N0 = _mm512_loadu_si512(sv[2]), N1 = _mm512_loadu_si512(sv[3]);
            }
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
                const __m512i I = ty.ints ? _mm512_add_epi32(_mm512_mullo_epi32(S0, H0),
                                                             _mm512_mullo_epi32(S1, H1))
                                          : _mm512_add_epi32(H0, H1);
                __m512 a = _mm512_mul_ps(_mm512_cvtepi32_ps(I), dv);
                if (ty.eof >= 0) {
                    const __m512i M = ty.ints ? _mm512_add_epi32(
                                                    _mm512_mullo_epi32(N0, _mm512_set1_epi32(xh0)),
                                                    _mm512_mullo_epi32(N1, _mm512_set1_epi32(xh1)))
                                              : _mm512_set1_epi32(xh0 + xh1);
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

#define QD_ROWS(id)                                                               \
    static void rows_##id(const wk_qdot_job *jb, int64_t j0, int64_t j1)          \
    {                                                                             \
        for (int64_t j = j0; j < j1; j += 16)                                     \
            group(jb, id, j, j1);                                                 \
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
