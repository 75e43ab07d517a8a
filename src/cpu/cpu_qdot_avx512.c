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

/* T[c] (16 bytes) = byte c of R[0..15]: a 16 x 16 byte transpose in four rounds of unpacks. */
static inline __attribute__((always_inline)) void transpose16(const __m128i R[16], __m128i T[16])
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

/* The integer sub-scales of sub-block s for the 16 lanes, from the block's scale bytes
 * transposed (T[c]: byte c of the scale field of each lane's row): the same values as
 * qd_ints (cpu_qdot_types.h) for q2_k, q4_k, q5_k, q6_k, without a scalar decode per lane. */
static inline __attribute__((always_inline)) void ints_t(int qt, const __m128i T[16], int s,
                                                          __m512i *S0, __m512i *S1, __m512i *N0,
                                                          __m512i *N1)
{
    const __m128i m4 = _mm_set1_epi8(15), m6 = _mm_set1_epi8(63);
    if (qt == 14) { /* q6_k: int8 scales 2s + h */
        *S0 = _mm512_cvtepi8_epi32(T[2 * s]);
        *S1 = _mm512_cvtepi8_epi32(T[2 * s + 1]);
        *N0 = *N1 = _mm512_setzero_si512();
    } else if (qt == 10) { /* q2_k: byte 2s + h, scale low nibble, min high nibble */
        *S0 = _mm512_cvtepu8_epi32(_mm_and_si128(T[2 * s], m4));
        *S1 = _mm512_cvtepu8_epi32(_mm_and_si128(T[2 * s + 1], m4));
        *N0 = _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(T[2 * s], 4), m4));
        *N1 = _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(T[2 * s + 1], 4), m4));
    } else { /* q4_k, q5_k: 6-bit scale and min of sub-block s (wk_qb_k4_scale) */
        __m128i sc, mn;
        if (s < 4) {
            sc = _mm_and_si128(T[s], m6);
            mn = _mm_and_si128(T[s + 4], m6);
        } else {
            const __m128i hi2 = _mm_set1_epi8(3), top = _mm_set1_epi8((char)0x30);
            sc = _mm_or_si128(_mm_and_si128(T[s + 4], m4),
                              _mm_and_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(T[s - 4], 6), hi2), 4), top));
            mn = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(T[s + 4], 4), m4),
                              _mm_and_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(T[s], 6), hi2), 4), top));
        }
        *S0 = *S1 = _mm512_cvtepu8_epi32(sc);
        *N0 = *N1 = _mm512_cvtepu8_epi32(mn);
    }
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
        /* the scale bytes of q2_k (0..15), q4_k / q5_k (4..15) and q6_k (192..207), one row
         * per lane, transposed once per block */
        const int tof = qt == 14 ? 192 : qt == 12 || qt == 13 ? 4 : 0;
        const int tr = qt == 10 || qt == 12 || qt == 13 || qt == 14;
        __m128i T[16];
        if (tr) {
            __m128i R[16];
            for (int l = 0; l < 16; l++)
                R[l] = _mm_loadu_si128((const __m128i *)(wl[l] + bo + tof));
            transpose16(R, T);
        }
        for (int s = 0; s < ty.sub; s++) {
            __m512i S0 = _mm512_set1_epi32(1), S1 = S0, N0 = S0, N1 = S0;
            if (tr) {
                ints_t(qt, T, s, &S0, &S1, &N0, &N1);
            } else if (ty.ints) {
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
