/* cpu_qgemm_vnni.c: the quantized matrix product (cpu_qdot.h) for many rows of x with AVX-512
 * VNNI, on CPUs without AMX tiles (AMD Zen 4 and later, Intel before Sapphire Rapids):
 *
 *   out rows [0, rows) x weight rows [j0, j1) = xq (prow, k) codes . W codes, then the terms
 *
 * W is packed per call as for the AMX product (cpu_qgemm_pack.h: panels of 16 weight rows, each
 * 32-element sub-block a 512-byte tile whose row q holds elements 4q..4q+3 of the 16 rows, one
 * dword per row), here with the unsigned codes u. A micro-tile is XR x rows by one panel: per
 * sub-block and row q of its tile, one load of W and XR vpdpbusd against x's dword 4q..4q+3
 * broadcast (an embedded-broadcast operand), so each x row's exact sum of u * q over the
 * sub-block (or each half of it, for the types with a scale per half) builds up in its own
 * register, the 16 weight rows across the lanes; then c * xh is taken off (the same integers as
 * cpu_qdot.h's is_h) and the terms of cpu_qdot.h are applied in f32 with the accumulators in
 * registers across the sub-blocks. W is unpacked once per call (the decode functions of
 * cpu_qdot_avx512.c unpack it again for every 8 rows of x).
 * Sub-blocks go in chunks of KCHUNK (the packed chunk of PANELS panels, 768 KiB, stays in L2); x
 * rows in blocks of XR (XR x 4 KiB of codes at k = 4096: in L1) sweep the chunk's panels; the
 * accumulators are stored to out between chunks and taken up again, so every output takes its
 * terms in the order u = 0, 1, 2, ... and equals the scalar path's bits.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mf16c (cmake/cpu.cmake). */
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include "cpu_qgemm_pack.h"

const int wk_qgemm_vnni_built = 1;

#define PANELS 8 /* panels of 16 weight rows per packed chunk (the caller's items: WK_QDOT_GEMM_ROWS) */
#define KCHUNK 128 /* sub-blocks of 32 per packed chunk: 8 x 128 x 768 B = 768 KiB */
/* x rows per micro-tile (each divides the 16 the rows are padded to): 8 for the types with one
 * scale per sub-block, 4 for those with a scale per half (two sums per row: at 8 they no longer
 * fit the 32 registers; Q6_K 4096 x 4096 x 512 rows, 2 threads of the AMD EPYC: 229 -> 288
 * GMAC/s). 12 rows ran slower than 8 (Q4_0 and Q8_0: 325 -> 262). */
#define XR1 8
#define XR2 4

size_t wk_qgemm_vnni_scratch(const wk_qdot_job *jb)
{
    const int64_t kc = jb->nsub < KCHUNK ? jb->nsub : KCHUNK;
    return (size_t)(PANELS * kc) * (QG_TILE_B + QG_SCALES * sizeof(float));
}

/* x rows [r0, r0 + XR) (XR <= 16, a constant) against one packed panel, sub-blocks [u0, u0 + nu)
 * of the chunk (packed at B, sc): the accumulators start from the outputs at o (rows n apart,
 * lanes m; zero for the first chunk and for rows past live), take the terms of each sub-block
 * and go back to o (rows below live). */
static inline __attribute__((always_inline)) void tile(const wk_qdot_job *jb, const qd_type *ty,
                                                        const int XR, int64_t r0, int64_t u0,
                                                        int64_t nu, const int8_t *B,
                                                        const float *sc, float *o, __mmask16 m,
                                                        int live)
{
    const int64_t lda = jb->nsub * 32, nsub = jb->nsub;
    const int8_t *xa = jb->xq + r0 * lda + u0 * 32;
    const float *dx = jb->xd + r0 * nsub + u0;
    const int32_t *xh = jb->xh + 2 * (r0 * nsub + u0);
    const float *xf = jb->xf ? jb->xf + 3 * (r0 * nsub + u0) : NULL;
    const int two = ty->ints == 2; /* a scale per half: the halves summed apart */
    __m512 acc[16];
#pragma GCC unroll 16
    for (int i = 0; i < XR; i++)
        acc[i] = u0 > 0 && i < live ? _mm512_maskz_loadu_ps(m, o + i * jb->n) : _mm512_setzero_ps();
    for (int64_t u = 0; u < nu; u++) {
        const int8_t *bw = B + u * QG_TILE_B;
        const int8_t *xu = xa + u * 32;
        __m512i s0[16], s1[16];
        {
            const __m512i w = _mm512_load_si512(bw);
#pragma GCC unroll 16
            for (int i = 0; i < XR; i++)
                s0[i] = dot_bcast(_mm512_setzero_si512(), w, xu + i * lda);
        }
#pragma GCC unroll 4
        for (int q = 1; q < 4; q++) {
            const __m512i w = _mm512_load_si512(bw + 64 * q);
#pragma GCC unroll 16
            for (int i = 0; i < XR; i++)
                s0[i] = dot_bcast(s0[i], w, xu + i * lda + 4 * q);
        }
        if (two) {
            const __m512i w = _mm512_load_si512(bw + 256);
#pragma GCC unroll 16
            for (int i = 0; i < XR; i++)
                s1[i] = dot_bcast(_mm512_setzero_si512(), w, xu + i * lda + 16);
        }
#pragma GCC unroll 4
        for (int q = 4 + two; q < 8; q++) {
            const __m512i w = _mm512_load_si512(bw + 64 * q);
#pragma GCC unroll 16
            for (int i = 0; i < XR; i++) {
                if (two)
                    s1[i] = dot_bcast(s1[i], w, xu + i * lda + 4 * q);
                else
                    s0[i] = dot_bcast(s0[i], w, xu + i * lda + 4 * q);
            }
        }
        /* the terms of cpu_qdot.h, in its order (as cpu_qgemm_amx.c's TERMS) */
        const float *su = sc + u * QG_SCALES;
        const __m512 dS0 = _mm512_load_ps(su), dS1 = _mm512_load_ps(su + 16);
        const __m512 eN0 = _mm512_load_ps(su + 32), eN1 = _mm512_load_ps(su + 48);
#pragma GCC unroll 16
        for (int i = 0; i < XR; i++) {
            const int64_t xi = i * nsub + u;
            const __m512 d = _mm512_set1_ps(dx[xi]);
            const int32_t h0 = xh[2 * xi], h1 = xh[2 * xi + 1];
            if (two) {
                __m512i a0 = s0[i], a1 = s1[i];
                if (ty->c) {
                    a0 = _mm512_sub_epi32(a0, _mm512_set1_epi32(ty->c * h0));
                    a1 = _mm512_sub_epi32(a1, _mm512_set1_epi32(ty->c * h1));
                }
                acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a0), _mm512_mul_ps(dS0, d), acc[i]);
                acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a1), _mm512_mul_ps(dS1, d), acc[i]);
            } else {
                __m512i a = s0[i];
                if (ty->c)
                    a = _mm512_sub_epi32(a, _mm512_set1_epi32(ty->c * (h0 + h1)));
                acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(dS0, d), acc[i]);
            }
            if (ty->eof >= 0) {
                const float *h = xf + 3 * xi; /* xh0, xh1, xh0 + xh1 as floats */
                if (two) {
                    acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(h[0]), _mm512_mul_ps(eN0, d), acc[i]);
                    acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(h[1]), _mm512_mul_ps(eN1, d), acc[i]);
                } else {
                    acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(h[2]), _mm512_mul_ps(eN0, d), acc[i]);
                }
            }
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < XR; i++)
        if (i < live)
            _mm512_mask_storeu_ps(o + i * jb->n, m, acc[i]);
}

/* the whole product for block type qt (a constant after inlining) */
static inline __attribute__((always_inline)) void run(const wk_qdot_job *jb, const int qt,
                                                       int64_t rows, int64_t j0, int64_t j1,
                                                       char *scratch)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t kc = jb->nsub < KCHUNK ? jb->nsub : KCHUNK;
    int8_t *B = (int8_t *)scratch;
    float *sc = (float *)(B + PANELS * kc * QG_TILE_B);
    const int npan = (int)((j1 - j0 + 15) / 16);
    for (int64_t u0 = 0; u0 < jb->nsub; u0 += kc) {
        const int64_t nu = jb->nsub - u0 < kc ? jb->nsub - u0 : kc;
        qg_pack_panels(jb, qt, j0, j1, u0, nu, kc, B, sc, 1);
        const int xr = ty.ints == 2 ? XR2 : XR1;
        for (int64_t r0 = 0; r0 < rows; r0 += xr) {
            const int live = (int)(rows - r0 < xr ? rows - r0 : xr); /* x rows to store */
            for (int p = 0; p < npan; p++) {
                const int64_t pj = j0 + 16 * p;
                tile(jb, &ty, xr, r0, u0, nu, B + p * kc * QG_TILE_B, sc + p * kc * QG_SCALES,
                     jb->out + r0 * jb->n + pj, qg_panel_lanes(pj, j1), live);
            }
        }
    }
}

#define QV_RUN(id)                          \
    case id:                                \
        run(jb, id, rows, j0, j1, scratch); \
        break;

int wk_qgemm_vnni(const wk_qdot_job *jb, int64_t rows, int64_t j0, int64_t j1, void *scratch)
{
    switch (jb->qt) {
        WK_QDOT_SIMD_TYPES(QV_RUN)
    default: return -1;
    }
    return 0;
}
#else
const int wk_qgemm_vnni_built = 0;
size_t wk_qgemm_vnni_scratch(const wk_qdot_job *jb) { (void)jb; return 0; }
int wk_qgemm_vnni(const wk_qdot_job *jb, int64_t rows, int64_t j0, int64_t j1, void *scratch)
{
    (void)jb, (void)rows, (void)j0, (void)j1, (void)scratch;
    return -1;
}
#endif
