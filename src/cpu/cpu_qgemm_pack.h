/* cpu_qgemm_pack.h: the packing of W that the products of many rows share (the AMX tiles,
 * cpu_qgemm_amx.c, and AVX-512 VNNI, cpu_qgemm_vnni.c): per call, panels of 16 weight rows; for
 * every 32-element sub-block u a 512-byte tile whose 64-byte row q holds elements 4q..4q+3 of the
 * 16 weight rows (one dword per row: rows 0-3 half 0, rows 4-7 half 1), and the sub-block's
 * F * K products of the 16 rows (d * S_0, d * S_1, e * N_0, e * N_1: cpu_qdot.h), 64 floats.
 * The codes are the signed u - c (tdpbssd multiplies two signed operands) or the unsigned u
 * (vpdpbusd's first operand; the caller subtracts c * xh). Weight rows past j1 get zero codes and
 * scales. Included only by files compiled with -mavx512f -mavx512bw -mavx512vl -mf16c. */
#ifndef WK_CPU_QGEMM_PACK_H
#define WK_CPU_QGEMM_PACK_H

#include "cpu_qdot.h"
#include "cpu_qdot_avx512.h"

#define QG_TILE_B 512 /* bytes of one sub-block's packed weight tile */
#define QG_SCALES 64  /* floats of one sub-block's scales: dS0, dS1, eN0, eN1 x 16 rows */

static inline __attribute__((always_inline)) void qg_store_scales(float *sc, __m512 dS0, __m512 dS1,
                                                                __m512 eN0, __m512 eN1)
{
    _mm512_storeu_ps(sc, dS0);
    _mm512_storeu_ps(sc + 16, dS1);
    _mm512_storeu_ps(sc + 32, eN0);
    _mm512_storeu_ps(sc + 48, eN1);
}

/* d and e of the 16 rows' block at byte offset bo (cpu_qdot_types.h's qd_floats, lane = row) */
static inline __attribute__((always_inline)) void qg_floats16(const qd_type *ty,
                                                            const uint8_t *const wr[16], int64_t bo,
                                                            __m512 *dv, __m512 *ev)
{
    if (ty->sgn && ty->sub == 8) { /* q8_k: an f32 d */
        uint32_t dd[16];
        for (int l = 0; l < 16; l++)
            dd[l] = wk_qb_u32(wr[l] + bo);
        *dv = _mm512_castsi512_ps(_mm512_loadu_si512(dd));
    } else {
        uint16_t dh[16];
        for (int l = 0; l < 16; l++)
            dh[l] = (uint16_t)wk_qb_u16(wr[l] + bo + ty->dof);
        *dv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dh));
    }
    *ev = _mm512_setzero_ps();
    if (ty->eof >= 0) {
        uint16_t eh[16];
        for (int l = 0; l < 16; l++)
            eh[l] = (uint16_t)(wk_qb_u16(wr[l] + bo + ty->eof) ^ (ty->eneg ? 0x8000u : 0u));
        *ev = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)eh));
    }
}

/* The lanes of the panel at weight row pj (16 rows) that hold rows below j1 */
static inline __attribute__((always_inline)) __mmask16 qg_panel_lanes(int64_t pj, int64_t j1)
{
    return (__mmask16)(j1 - pj >= 16 ? 0xFFFF : (1u << (j1 - pj)) - 1u);
}

/* Weight rows [j0, j0 + 16) (rows >= j1 zero), sub-blocks [u0, u0 + nu) of jb into B
 * (nu x QG_TILE_B bytes) and sc (nu x QG_SCALES floats); unsigned_codes: u, else u - c. */
static inline __attribute__((always_inline)) void qg_pack(const wk_qdot_job *jb, const int qt,
                                                           int64_t j0, int64_t j1, int64_t u0,
                                                           int64_t nu, int8_t *B, float *sc,
                                                           const int unsigned_codes)
{
    const qd_type ty = qd_type_of(qt);
    const uint8_t *wr[16];
    for (int i = 0; i < 16; i++)
        wr[i] = jb->w + (j0 + i < j1 ? j0 + i : j1 - 1) * jb->row_bytes;
    /* rows past j1 repeat row j1 - 1 while packing and are zeroed here (codes and scales) */
    const __mmask16 live = qg_panel_lanes(j0, j1);
    /* the stored code of a transposed vector F of qdu_bytes / kbytes (the q8 types' raw bytes
     * are the signed codes u - 128) */
    const __m512i cv = _mm512_set1_epi8((char)(ty.sgn ? 0 : ty.c));
    const __m512i flip = _mm512_set1_epi8((char)0x80);
#define QG_CODE(F) (unsigned_codes ? (ty.sgn ? _mm512_xor_si512((F), flip) : (F)) : _mm512_sub_epi8((F), cv))
    for (int64_t blk = u0 / ty.sub; blk < (u0 + nu) / ty.sub; blk++) {
        const int64_t bo = blk * ty.bytes;
        __m512 dv, ev;
        qg_floats16(&ty, wr, bo, &dv, &ev);
        dv = _mm512_maskz_mov_ps(live, dv);
        ev = _mm512_maskz_mov_ps(live, ev);
        if (ty.sub == 1 || ty.sgn) { /* the one-sub-block types and q8_k: S = N = 1 */
            for (int s = 0; s < ty.sub; s++) {
                const int64_t u = blk * ty.sub + s - u0;
                __m256i R[16];
                for (int i = 0; i < 16; i++)
                    R[i] = qdu_bytes(qt, wr[i] + bo, s);
                __m512i F[8];
                dword_t(R, F);
                for (int q = 0; q < 8; q++)
                    _mm512_store_si512(B + u * QG_TILE_B + 64 * q,
                                       _mm512_maskz_mov_epi32(live, QG_CODE(F[q])));
                qg_store_scales(sc + u * QG_SCALES, dv, dv, ev, ev);
            }
            continue;
        }
        /* the K types: fields transposed once per block (cpu_qdot_avx512.h) */
        int foff[6];
        const int nf = qd_kfields(qt, foff);
        __m128i T[16];
        {
            __m128i R[16];
            for (int l = 0; l < 16; l++)
                R[l] = _mm_loadu_si128((const __m128i *)(wr[l] + bo + qdk_off(qt)));
            qdk_transpose16(R, T);
        }
        __m512i Fd[6][8];
        for (int f = 0; f < nf; f++)
            field_t(wr, bo + foff[f], Fd[f]);
        for (int s = 0; s < 8; s++) {
            const int64_t u = blk * 8 + s - u0;
            __m512i S0, S1, N0, N1, U[8];
            ints_t(qt, T, s, &S0, &S1, &N0, &N1);
            kbytes(qt, Fd, s, U);
            for (int q = 0; q < 8; q++)
                _mm512_store_si512(B + u * QG_TILE_B + 64 * q,
                                   _mm512_maskz_mov_epi32(live, QG_CODE(U[q])));
            qg_store_scales(sc + u * QG_SCALES, _mm512_mul_ps(dv, _mm512_cvtepi32_ps(S0)),
                         _mm512_mul_ps(dv, _mm512_cvtepi32_ps(S1)),
                         _mm512_mul_ps(ev, _mm512_cvtepi32_ps(N0)),
                         _mm512_mul_ps(ev, _mm512_cvtepi32_ps(N1)));
        }
    }
}
#undef QG_CODE


/* The panels of weight rows [j0, j1) (16 rows each, the last one short), sub-blocks [u0,
 * u0 + nu): panel p's tiles at B + p kc QG_TILE_B, its scales at sc + p kc QG_SCALES (qg_pack) */
static inline __attribute__((always_inline)) void qg_pack_panels(const wk_qdot_job *jb, const int qt,
                                                                  int64_t j0, int64_t j1, int64_t u0,
                                                                  int64_t nu, int64_t kc, int8_t *B,
                                                                  float *sc, const int unsigned_codes)
{
    for (int64_t p = 0; j0 + 16 * p < j1; p++) {
        const int64_t pj = j0 + 16 * p;
        qg_pack(jb, qt, pj, pj + 16 < j1 ? pj + 16 : j1, u0, nu, B + p * kc * QG_TILE_B,
                sc + p * kc * QG_SCALES, unsigned_codes);
    }
}

#endif
