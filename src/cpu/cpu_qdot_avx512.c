/* cpu_qdot_avx512.c: the quantized dot product (cpu_qdot.h) on AVX-512 with VNNI, 16 weight rows
 * at a time. The one-sub-block types and q8_k (group): two rows per 512-bit vector (32 bytes u of
 * a sub-block each, cpu_qdot_unpack.h), multiplied by the x codes with vpdpbusd (u8 x s8, four
 * products summed per 32-bit lane, exact), the lanes of each row's halves summed by a fixed tree
 * of shuffles into one vector per half with one lane per weight row. The K types q2_k .. q6_k
 * (group_k): their packed fields transposed so that each 32-bit lane holds 4 bytes of one row,
 * vpdpbusd against x's 4 codes broadcast, no tree. Then the terms of cpu_qdot.h lane by lane
 * (so each output gets exactly the scalar path's operations). Also the quantization of x
 * (wk_qdot_quant_x_avx512). Compiled with -mavx512f -mavx512bw -mavx512vl
 * -mavx512vnni -mf16c (cmake/cpu.cmake); called only on a CPU that has them (cpu_qdot.c). */
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "cpu_qdot_avx512.h"
#include <string.h>

const int wk_qdot_avx512_built = 1;

/* wr[i]: weight row j0 + i of the group, or row j1 - 1 for the lanes past the last row (read,
 * not stored) */
static inline __attribute__((always_inline)) void group_rows(const wk_qdot_job *jb, int64_t j0,
                                                              int64_t j1, const uint8_t *wr[16])
{
    for (int i = 0; i < 16; i++)
        wr[i] = jb->w + (j0 + i < j1 ? j0 + i : j1 - 1) * jb->row_bytes;
}

/* out rows 0..rows-1, columns j0 + l for lane l of acc[r] (those below j1) */
static inline __attribute__((always_inline)) void store_lanes(const wk_qdot_job *jb,
                                                               const __m512 acc[8], int rows,
                                                               int64_t j0, int64_t j1)
{
    for (int r = 0; r < rows; r++) {
        float v[16];
        _mm512_storeu_ps(v, acc[r]);
        for (int l = 0; l < 16; l++)
            if (j0 + l < j1)
                jb->out[(int64_t)r * jb->n + j0 + l] = v[l];
    }
}

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

/* Block blk of nblk of the group at weight row j0: its share of the next group's 16 rows (which
 * follow this group's in memory; at the end of a thread's run of chunks they may be another
 * thread's, and the prefetch is merely wasted) into L2, so that the reads from memory run ahead
 * of the compute instead of waiting on it (m = 1, q4_0 128256 x 4096 in the 8B-shaped model, 2
 * threads: 15.7 -> 13.3 ms). group_nib always; the other functions when jb->pf_next (cpu_qdot.h:
 * the AMD CPU, where it doubles the K types' read rate; on the Intel CPU the K types and q8_0
 * were slower with it than with their prefetch into L1). */
static inline __attribute__((always_inline)) void next_group_l2(const wk_qdot_job *jb, int64_t j0,
                                                                 int64_t blk, int64_t nblk)
{
    const char *nx = (const char *)(jb->w + (j0 + 16) * jb->row_bytes);
    const int64_t lines = 16 * jb->row_bytes / 64;
    for (int64_t c = blk * lines / nblk; c < (blk + 1) * lines / nblk; c++)
        _mm_prefetch(nx + 64 * c, _MM_HINT_T1);
}

/* The K types' prefetch: block blk + 2 of the 16 rows (blocks of `bytes`) into L1. Their blocks
 * are read out of address order (d and the scales at the end of a q6_k / q3_k block first), which
 * the hardware prefetchers follow poorly; measured q6_k m = 1 ~2200 -> ~1550 us, no loss on the
 * others. */
static inline __attribute__((always_inline)) void block_ahead_l1(const uint8_t *const wr[16],
                                                                  int bytes, int64_t blk,
                                                                  int64_t nblk)
{
    if (blk + 2 >= nblk)
        return;
    for (int i = 0; i < 16; i++)
        for (int c = 0; c < bytes + 63; c += 64)
            _mm_prefetch((const char *)(wr[i] + (blk + 2) * bytes + (c < bytes ? c : bytes - 1)),
                         _MM_HINT_T0);
}

/* The K types' prefetch at block blk: the next group into L2 (jb->pf_next) or their own rows'
 * block blk + 2 into L1. */
static inline __attribute__((always_inline)) void k_prefetch(const wk_qdot_job *jb,
                                                              const uint8_t *const wr[16],
                                                              int64_t j0, int bytes, int64_t blk,
                                                              int64_t nblk)
{
    if (jb->pf_next)
        next_group_l2(jb, j0, blk, nblk);
    else
        block_ahead_l1(wr, bytes, blk, nblk);
}

/* wr[i] - wr[0] for the 16 rows of a group (a group spans 16 rows: int32 offsets) */
static inline __attribute__((always_inline)) __m512i row_offsets(const uint8_t *const wr[16])
{
    int32_t o[16];
    for (int i = 0; i < 16; i++)
        o[i] = (int32_t)(wr[i] - wr[0]);
    return _mm512_loadu_si512(o);
}

/* dv, ev: the f16 d in the low half of each lane of g and, when pair, e in the high half (negated
 * for ty.eneg); else ev = 0 */
static inline __attribute__((always_inline)) void de_of(const qd_type ty, __m512i g, int pair,
                                                         __m512 *dv, __m512 *ev)
{
    *dv = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g));
    *ev = _mm512_setzero_ps();
    if (pair)
        *ev = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
            _mm512_xor_si512(_mm512_srli_epi32(g, 16), _mm512_set1_epi32(ty.eneg ? 0x8000 : 0))));
}

/* Z[j], 128-bit lane l: the 16 bytes at byte bo of row 4l + j (one load and three masked
 * broadcasts each: no shuffle) */
static inline __attribute__((always_inline)) void chunk_rows(const uint8_t *const wr[16], int64_t bo,
                                                              __m512i Z[4])
{
    for (int j = 0; j < 4; j++) {
        Z[j] = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(wr[j] + bo)));
        for (int l = 1; l < 4; l++)
            Z[j] = _mm512_mask_broadcast_i32x4(Z[j], (__mmask16)(0xF << (4 * l)),
                                               _mm_loadu_si128((const __m128i *)(wr[4 * l + j] + bo)));
    }
}

/* A 4 x 4 dword transpose in each 128-bit lane of chunk_rows' Z: dword j of lane l of V[q] is
 * dword q of row 4l + j, so V[q] holds dword q of the 16 rows, lane i = row i. */
static inline __attribute__((always_inline)) void dword_t4(const __m512i Z[4], __m512i V[4])
{
    const __m512i A0 = _mm512_unpacklo_epi32(Z[0], Z[1]), A1 = _mm512_unpackhi_epi32(Z[0], Z[1]);
    const __m512i A2 = _mm512_unpacklo_epi32(Z[2], Z[3]), A3 = _mm512_unpackhi_epi32(Z[2], Z[3]);
    V[0] = _mm512_unpacklo_epi64(A0, A2), V[1] = _mm512_unpackhi_epi64(A0, A2);
    V[2] = _mm512_unpacklo_epi64(A1, A3), V[3] = _mm512_unpackhi_epi64(A1, A3);
}

/* Lane 4l + j: the sum of the four dwords of 128-bit lane l of P[j] (chunk_rows' rows in lanes:
 * row 4l + j's sum in lane 4l + j). Integer adds: exact in any order. */
static inline __attribute__((always_inline)) __m512i hsum4(const __m512i P[4])
{
    const __m512i a0 = _mm512_add_epi32(_mm512_unpacklo_epi32(P[0], P[1]), _mm512_unpackhi_epi32(P[0], P[1]));
    const __m512i a1 = _mm512_add_epi32(_mm512_unpacklo_epi32(P[2], P[3]), _mm512_unpackhi_epi32(P[2], P[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(a0, a1), _mm512_unpackhi_epi64(a0, a1));
}

/* The same from 16 loads of the rows wr[i] (jb->gather 0: where gathers are slow) */
static inline __attribute__((always_inline)) void load_de(const qd_type ty,
                                                           const uint8_t *const wr[16], int64_t bo,
                                                           __m512 *dv, __m512 *ev)
{
    uint16_t h[16];
    for (int l = 0; l < 16; l++)
        h[l] = (uint16_t)wk_qb_u16(wr[l] + bo + ty.dof);
    *dv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h));
    *ev = _mm512_setzero_ps();
    if (ty.eof >= 0) {
        for (int l = 0; l < 16; l++)
            h[l] = (uint16_t)(wk_qb_u16(wr[l] + bo + ty.eof) ^ (ty.eneg ? 0x8000u : 0u));
        *ev = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h));
    }
}

/* The f16 d and e (cpu_qdot_types.h) of the blocks at byte bo of the 16 rows w0 + off[i]: one
 * gather of the dword that holds d (and e when it follows d: q4_1, q2_k, q4_k, q5_k), which
 * replaces 16 (or 32) scalar loads (q4_1, m = 1: 1.3x; q4_k 1.05x). The dword read ends inside
 * the block. */
static inline __attribute__((always_inline)) void gather_de(const qd_type ty, const uint8_t *w0,
                                                             __m512i off, int64_t bo, __m512 *dv,
                                                             __m512 *ev)
{
    const int pair = ty.eof == ty.dof + 2; /* d the low half, e the high half */
    const __m512i g = _mm512_i32gather_epi32(off, (const void *)(w0 + bo + ty.dof - (pair ? 0 : 2)), 1);
    de_of(ty, pair ? g : _mm512_srli_epi32(g, 16), pair, dv, ev);
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
    __m512 acc[8];
    for (int r = 0; r < 8; r++)
        acc[r] = _mm512_setzero_ps();
    const __m256i flip = _mm256_set1_epi8((char)0x80);

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        /* each row's stream 4 lines ahead, once per line: 16 short streams (a row of k = 4096
         * is 36 lines of q4_0) restart too often for the hardware prefetchers (m = 1, q4_0
         * 14336 x 4096: 14 -> 20 GB/s on 2 cores); or the next group into L2 (jb->pf_next) */
        if (jb->pf_next)
            next_group_l2(jb, j0, blk, nblk);
        else if ((bo + ty.bytes) / 64 != bo / 64 || blk == 0)
            for (int i = 0; i < 16; i++)
                _mm_prefetch((const char *)(wr[i] + bo + 256), _MM_HINT_T0);
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
                /* the terms of cpu_qdot.h: S = 1 (d * S = d), N = 1 for q4_1, q5_1 */
                const __m512 dx = _mm512_set1_ps(jb->xd[xi]);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(H0, H1)),
                                         _mm512_mul_ps(dv, dx), acc[r]);
                if (ty.eof >= 0)
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps((float)(xh0 + xh1)),
                                             _mm512_mul_ps(ev, dx), acc[r]);
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float v[16];
        _mm512_storeu_ps(v, acc[r]);
        for (int l = 0; l < 16; l++)
            if (j0 + PERM[l] < j1)
                jb->out[(int64_t)r * jb->n + j0 + PERM[l]] = v[l];
    }
}

/* ---- q4_0 and q4_1: the packed nibbles transposed, weight rows across lanes.
 * Dword q (bytes 4q..4q+3) of a row's 16 nibble bytes holds elements 4q..4q+3 in its low nibbles
 * and 16+4q..16+4q+3 in its high ones, so transposing the packed bytes of 16 rows at dword
 * granularity (4 vectors) and splitting the nibbles afterwards gives vectors U[q] (q < 4: low
 * nibbles, elements 4q..; q >= 4: high, 16+4(q-4)..) with lane i = row i; vpdpbusd against x's
 * matching dword broadcast sums each row's products in its own lane: the exact integer
 * is_0 + is_1 of cpu_qdot.h without group()'s unpacking per row and its reduction tree (m = 1,
 * q4_0 4096 x 14336, W in cache, 2 threads: 27.5 -> 42 GB/s). The terms are group()'s, lane by lane. */

/* Output rows j0 .. j0 + 15 of q4_0 (qt 2) or q4_1 (qt 3) (those below j1; the others read row
 * j1 - 1 and are not stored); lane i = row j0 + i. */
static inline __attribute__((always_inline)) void group_nib(const wk_qdot_job *jb, const int qt,
                                                             int64_t j0, int64_t j1, const int rows)
{
    const qd_type ty = qd_type_of(qt);
    const int qof = qt == 2 ? 2 : 4; /* the nibble bytes' offset in the block */
    const int64_t nblk = jb->nsub;
    const uint8_t *wr[16];
    group_rows(jb, j0, j1, wr);
    __m512 acc[8];
    for (int r = 0; r < 8; r++)
        acc[r] = _mm512_setzero_ps();
    const __m512i lo4 = _mm512_set1_epi8(15);

    const __m512i roff = row_offsets(wr);

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        /* each row two lines ahead into L1, from L2 where next_group_l2 put it (256 bytes ahead
         * instead: 3% slower in the model) */
        if ((bo + ty.bytes) / 64 != bo / 64 || blk == 0)
            for (int i = 0; i < 16; i++)
                _mm_prefetch((const char *)(wr[i] + bo + 128), _MM_HINT_T0);
        next_group_l2(jb, j0, blk, nblk);
        __m512 dv, ev;
        if (jb->gather)
            gather_de(ty, wr[0], roff, bo, &dv, &ev);
        else
            load_de(ty, wr, bo, &dv, &ev);
        /* V[q]: dword q of the 16 rows' nibble bytes, lane i = row i */
        __m512i Z[4], V[4], U[8];
        chunk_rows(wr, bo + qof, Z);
        dword_t4(Z, V);
        for (int q = 0; q < 4; q++) {
            U[q] = _mm512_and_si512(V[q], lo4);
            U[4 + q] = _mm512_and_si512(_mm512_srli_epi16(V[q], 4), lo4);
        }
        for (int r = 0; r < rows; r++) {
            const int64_t xi = (int64_t)r * jb->nsub + blk;
            const int8_t *xq = jb->xq + xi * 32;
            const int32_t xh0 = jb->xh[2 * xi], xh1 = jb->xh[2 * xi + 1];
            __m512i H = _mm512_set1_epi32(-ty.c * (xh0 + xh1));
            for (int q = 0; q < 8; q++)
                H = dot_bcast(H, U[q], xq + 4 * (q & 3) + 16 * (q >> 2));
            const __m512 dx = _mm512_set1_ps(jb->xd[xi]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(H), _mm512_mul_ps(dv, dx), acc[r]);
            if (ty.eof >= 0)
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(jb->xf[3 * xi + 2]), _mm512_mul_ps(ev, dx),
                                         acc[r]);
        }
    }
    store_lanes(jb, acc, rows, j0, j1);
}

/* ---- the K types (q2_k .. q6_k): weight rows across lanes, no reduction tree.
 * The raw 32-byte fields of a block (quant bits, high bits) are transposed for the 16 rows at
 * dword granularity once per block: vector q of a field holds bytes 4q..4q+3 of it for rows
 * 0..15, lane i = row i. Every byte of a field decodes to the element of the same position with
 * the same shifts and masks, so decoding the transposed fields gives vector q of the sub-block's
 * bytes u (elements 4q..4q+3 of each row), and vpdpbusd with x's dword q broadcast sums each
 * row's products in its own lane: the half sums is0 (q < 4) and is1 (q >= 4) directly, the same
 * exact integers as the tree above (field_t, kbytes: cpu_qdot_avx512.h). */

/* Output rows j0 .. j0 + 15 of a K type (those below j1; the others read row j1 - 1 and are not
 * stored); lane i = row j0 + i. The terms are group()'s, lane by lane. */
static inline __attribute__((always_inline)) void group_k(const wk_qdot_job *jb, const int qt,
                                                           int64_t j0, int64_t j1, const int rows)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t nblk = jb->nsub / 8;
    const uint8_t *wr[16];
    group_rows(jb, j0, j1, wr);
    __m512 acc[8];
    for (int r = 0; r < 8; r++)
        acc[r] = _mm512_setzero_ps();
    int foff[6];
    const int nf = qd_kfields(qt, foff);
    const int tof = qdk_off(qt); /* the scale bytes, transposed once per block */
    const __m512i roff = row_offsets(wr);

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        k_prefetch(jb, wr, j0, ty.bytes, blk, nblk);
        __m512 dv, ev;
        gather_de(ty, wr[0], roff, bo, &dv, &ev);
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
        /* unrolled: the shifts, the fields and the scale extraction of each sub-block become
         * constants (q4_k m = 1, W in cache: 31 -> 38 GB/s; q6_k 30 -> 39) */
#pragma GCC unroll 8
        for (int s = 0; s < 8; s++) {
            __m512i S0, S1, N0, N1;
            ints_t(qt, T, s, &S0, &S1, &N0, &N1);
            /* d * S and e * N, exact (cpu_qdot.h) */
            const __m512 dS0 = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(S0));
            const __m512 dS1 = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(S1));
            const __m512 eN0 = _mm512_mul_ps(ev, _mm512_cvtepi32_ps(N0));
            const __m512 eN1 = _mm512_mul_ps(ev, _mm512_cvtepi32_ps(N1));
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
                const __m512 dx = _mm512_set1_ps(jb->xd[xi]);
                if (ty.ints == 2) { /* q2_k, q3_k, q6_k: a term per half */
                    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(H0), _mm512_mul_ps(dS0, dx), acc[r]);
                    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(H1), _mm512_mul_ps(dS1, dx), acc[r]);
                } else {
                    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(H0, H1)),
                                             _mm512_mul_ps(dS0, dx), acc[r]);
                }
                if (ty.eof >= 0) {
                    /* the half sums as floats from xf (cpu_qdot.c): a broadcast load rather
                     * than a scalar conversion per row and sub-block */
                    const float *xf = jb->xf + 3 * xi;
                    if (ty.ints == 2) { /* q2_k */
                        acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(xf[0]), _mm512_mul_ps(eN0, dx), acc[r]);
                        acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(xf[1]), _mm512_mul_ps(eN1, dx), acc[r]);
                    } else { /* q4_k, q5_k */
                        acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(xf[2]), _mm512_mul_ps(eN0, dx), acc[r]);
                    }
                }
            }
        }
    }
    store_lanes(jb, acc, rows, j0, j1);
}

/* ---- q4_k and q5_k with few x rows (group_k45): the rows' 16-byte chunks in 128-bit lanes as
 * loaded (chunk_rows: no transpose of the quant bits), vpdpbusd against x's matching 16 codes
 * broadcast to every 128-bit lane, and each sub-block's four dword partial sums per row added by
 * one tree over 4 vectors (hsum4) into lane i = row i: is_0 + is_1 of cpu_qdot.h, the exact
 * integer group_k computes (c = 0 for both types). The scales and mins come from the block's first
 * 16 bytes transposed at dword granularity (lane i: d | dmin, then scale bytes 0-3, 4-7, 8-11 of
 * row i; wk_qb_k4_scale with 32-bit shifts). Fewer shuffles than group_k's field transposes; the
 * terms are group_k's, lane by lane. */

/* Output rows j0 .. j0 + 15 of q4_k (qt 12) or q5_k (qt 13) (those below j1; the others read row
 * j1 - 1 and are not stored); lane i = row j0 + i. */
static inline __attribute__((always_inline)) void group_k45(const wk_qdot_job *jb, const int qt,
                                                             int64_t j0, int64_t j1, const int rows)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t nblk = jb->nsub / 8;
    const int qof = qt == 12 ? 16 : 48; /* the nibbles' offset in the block (q5_k: qh at 16) */
    const uint8_t *wr[16];
    group_rows(jb, j0, j1, wr);
    __m512 acc[8];
    for (int r = 0; r < 8; r++)
        acc[r] = _mm512_setzero_ps();
    const __m512i lo4 = _mm512_set1_epi8(15), m6 = _mm512_set1_epi32(63),
                  m4 = _mm512_set1_epi32(15), top = _mm512_set1_epi32(0x30);

    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t bo = blk * ty.bytes;
        /* (W from memory, m = 1, 2 threads, the Intel CPU: a line-by-line prefetch as
         * group_nib's, the next group into L2 (T0 or T1) or 1 or 4 blocks ahead: no faster) */
        k_prefetch(jb, wr, j0, ty.bytes, blk, nblk);
        /* D[0]: d | dmin; D[1..3]: scale bytes 0-3, 4-7, 8-11 (lane i = row i) */
        __m512i Z[4], D[4], QH[2][4];
        chunk_rows(wr, bo, Z);
        dword_t4(Z, D);
        __m512 dv, ev;
        de_of(ty, D[0], 1, &dv, &ev);
        if (qt == 13)
            for (int c = 0; c < 2; c++)
                chunk_rows(wr, bo + 16 + 16 * c, QH[c]);
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            /* Q[c]: chunk c (elements 16c .. 16c + 15) of the nibble bytes of sub-blocks 2g, 2g + 1 */
            __m512i Q[2][4];
            for (int c = 0; c < 2; c++)
                chunk_rows(wr, bo + qof + 32 * g + 16 * c, Q[c]);
#pragma GCC unroll 2
            for (int t = 0; t < 2; t++) {
                const int s = 2 * g + t, b = 8 * (s & 3);
                __m512i S, N; /* wk_qb_k4_scale of sub-block s */
                if (s < 4) {
                    S = _mm512_and_si512(_mm512_srli_epi32(D[1], b), m6);
                    N = _mm512_and_si512(_mm512_srli_epi32(D[2], b), m6);
                } else {
                    S = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(D[3], b), m4),
                                        _mm512_and_si512(_mm512_srli_epi32(D[1], b + 2), top));
                    N = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(D[3], b + 4), m4),
                                        _mm512_and_si512(_mm512_srli_epi32(D[2], b + 2), top));
                }
                /* d * S and e * N, exact (cpu_qdot.h) */
                const __m512 dS = _mm512_mul_ps(dv, _mm512_cvtepi32_ps(S));
                const __m512 eN = _mm512_mul_ps(ev, _mm512_cvtepi32_ps(N));
                __m512i U[2][4]; /* the bytes u of sub-block s, rows as Q */
                for (int c = 0; c < 2; c++)
                    for (int j = 0; j < 4; j++) {
                        U[c][j] = t ? _mm512_and_si512(_mm512_srli_epi16(Q[c][j], 4), lo4)
                                    : _mm512_and_si512(Q[c][j], lo4);
                        if (qt == 13) /* bit s of qh: the fifth bit */
                            U[c][j] = _mm512_or_si512(U[c][j], place(QH[c][j], s, 1, 4));
                    }
                for (int r = 0; r < rows; r++) {
                    const int64_t xi = (int64_t)r * jb->nsub + blk * 8 + s;
                    const int8_t *xq = jb->xq + xi * 32;
                    __m512i P[4];
                    for (int c = 0; c < 2; c++) {
                        const __m512i xv =
                            _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(xq + 16 * c)));
                        for (int j = 0; j < 4; j++)
                            P[j] = _mm512_dpbusd_epi32(c ? P[j] : _mm512_setzero_si512(), U[c][j], xv);
                    }
                    const __m512 dx = _mm512_set1_ps(jb->xd[xi]);
                    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hsum4(P)), _mm512_mul_ps(dS, dx), acc[r]);
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(jb->xf[3 * xi + 2]), _mm512_mul_ps(eN, dx),
                                             acc[r]);
                }
            }
        }
    }
    store_lanes(jb, acc, rows, j0, j1);
}

/* K types with one x row (decode proper) get their own copy of group_k, its accumulators in
 * registers rather than reloaded from the stack every sub-block. */
#define QD_ROWS(id)                                                               \
    static void rows_##id(const wk_qdot_job *jb, int64_t j0, int64_t j1)          \
    {                                                                             \
        for (int64_t j = j0; j < j1; j += 16)                                     \
            if ((id == 2 || id == 3) && jb->rows == 1)                            \
                group_nib(jb, id, j, j1, 1);                                      \
            else if (id == 2 || id == 3)                                          \
                group_nib(jb, id, j, j1, jb->rows);                               \
            else if (id < 10 || id > 14)                                          \
                group(jb, id, j, j1);                                             \
            else if ((id == 12 || id == 13) && jb->rows == 1)                     \
                group_k45(jb, id, j, j1, 1);                                      \
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

/* ---- x to int8 blocks of 32: cpu_qdot.c's quant_block on 16 lanes, the same operations */

/* 32 values of dt at x + 32 b as f32 */
static inline __attribute__((always_inline)) void load32(int dt, const void *x, int64_t b,
                                                          __m512 *v0, __m512 *v1)
{
    if (dt == WK_DTYPE_F32) {
        *v0 = _mm512_loadu_ps((const float *)x + 32 * b);
        *v1 = _mm512_loadu_ps((const float *)x + 32 * b + 16);
        return;
    }
    const __m256i h0 = _mm256_loadu_si256((const __m256i *)((const uint16_t *)x + 32 * b));
    const __m256i h1 = _mm256_loadu_si256((const __m256i *)((const uint16_t *)x + 32 * b + 16));
    if (dt == WK_DTYPE_F16) {
        *v0 = _mm512_cvtph_ps(h0);
        *v1 = _mm512_cvtph_ps(h1);
    } else { /* bf16: the high half of an f32 */
        *v0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h0), 16));
        *v1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16));
    }
}

/* round half away from zero of (v * g1) * g2, clamped to +-127, as int32 */
static inline __attribute__((always_inline)) __m512i codes16(__m512 v, __m512 g1, __m512 g2)
{
    const __m512 f = _mm512_mul_ps(_mm512_mul_ps(v, g1), g2);
    const __m512 t = _mm512_roundscale_ps(f, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_sub_ps(f, t); /* exact */
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 q = _mm512_mask_add_ps(t, _mm512_cmp_ps_mask(r, _mm512_set1_ps(0.5f), _CMP_GE_OQ), t, one);
    q = _mm512_mask_sub_ps(q, _mm512_cmp_ps_mask(r, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), t, one);
    q = _mm512_min_ps(_mm512_max_ps(q, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    return _mm512_cvttps_epi32(q);
}

void wk_qdot_quant_x_avx512(int dt, const void *x, int64_t r0, int64_t r1, int64_t nsub,
                            int8_t *xq, float *xd, int32_t *xh)
{
    const __m512 big = _mm512_set1_ps(3.40282347e38f);
    for (int64_t b = r0 * nsub; b < r1 * nsub; b++) {
        __m512 v0, v1;
        load32(dt, x, b, &v0, &v1);
        const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
        /* NaN and infinities: not <= the largest finite value */
        const int bad = (_mm512_cmp_ps_mask(a0, big, _CMP_LE_OQ) &
                         _mm512_cmp_ps_mask(a1, big, _CMP_LE_OQ)) != 0xFFFF;
        if (bad) {
            memset(xq + 32 * b, 0, 32);
            xh[2 * b] = xh[2 * b + 1] = 0;
            xd[b] = wk_fp_from_bits(0x7fc00000u);
            continue;
        }
        float g[3];
        wk_qb_q8_grid(_mm512_reduce_max_ps(_mm512_max_ps(a0, a1)), g);
        const __m512 g1 = _mm512_set1_ps(g[1]), g2 = _mm512_set1_ps(g[2]);
        const __m512i c0 = codes16(v0, g1, g2), c1 = codes16(v1, g1, g2);
        _mm_storeu_si128((__m128i *)(xq + 32 * b), _mm512_cvtepi32_epi8(c0));
        _mm_storeu_si128((__m128i *)(xq + 32 * b + 16), _mm512_cvtepi32_epi8(c1));
        xh[2 * b] = _mm512_reduce_add_epi32(c0);
        xh[2 * b + 1] = _mm512_reduce_add_epi32(c1);
        xd[b] = g[0];
    }
}
#else
const int wk_qdot_avx512_built = 0;
void wk_qdot_rows_avx512(const wk_qdot_job *jb, int64_t j0, int64_t j1)
{
    wk_qdot_rows_scalar(jb, j0, j1);
}
void wk_qdot_quant_x_avx512(int dt, const void *x, int64_t r0, int64_t r1, int64_t nsub,
                            int8_t *xq, float *xd, int32_t *xh)
{
    wk_qdot_quant_x(dt, x, r0, r1, nsub, xq, xd, xh);
}
#endif
