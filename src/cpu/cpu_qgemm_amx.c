/* cpu_qgemm_amx.c: the quantized matrix product (cpu_qdot.h) for many rows of x on Intel's AMX
 * tile units (tdpbssd: a 16 x K int8 tile times a K x 16 int8 tile into 16 x 16 int32 sums).
 *
 *   out rows [0, rows) x weight rows [j0, j1) = xq (prow, k) codes . W codes, then the terms
 *
 * W is packed per call in panels of 16 weight rows (cpu_qgemm_pack.h): for every 32-element
 * sub-block u a 512-byte tile in the layout tdpbssd reads (row q = elements 4q..4q+3 of the 16
 * weight rows, one dword per row; rows 0-3 are half 0, rows 4-7 half 1), here the signed codes
 * u - c, and the sub-block's F * K products of the 16 rows. The x codes
 * are read in place (row-major, rows padded with zeros to a multiple of 16). Per 16 x rows, panel
 * and sub-block, one tdpbssd gives the exact half sums of 256 outputs at once (K = 32; the types
 * with a scale per half take a tile per half, K = 16), stored to a 1 KiB buffer; the terms of
 * cpu_qdot.h are then applied with AVX-512, one x row per vector, the 16 weight rows across the
 * lanes (accumulators in registers across the sub-blocks). Three sub-blocks are in flight: while
 * the terms of u run on the vector units, the product of u + 2 runs on the tile unit and that of
 * u + 1 (issued a step earlier) is stored, so no unit waits for another's latency (the stored
 * sums are read a step after their store). Measured on one core (q4_0 4096^2 x 512 rows): 287
 * GMAC/s pipelined, 236 with product, store and terms in turn; the terms alone 657, the tile
 * work alone about 400 (bench/cpu_qmv.c).
 * Sub-blocks go in chunks of KCHUNK (the packed chunk of PANELS panels stays in L2); the
 * accumulators are stored to out between chunks and taken up again, so every output still takes
 * its terms in the order u = 0, 1, 2, ... and equals the scalar path's bits.
 *
 * Compiled with -mamx-tile -mamx-int8 -mavx512f -mavx512bw -mavx512vl -mf16c (cmake/cpu.cmake);
 * used only when the CPU has AMX-INT8 and the OS granted the process the tile data (cpu_amx.c). Each call loads the tile configuration on its thread and releases
 * the tiles at the end. */
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_INT8__) && \
    defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include "cpu_qgemm_pack.h"
#include <string.h>

const int wk_qgemm_amx_built = 1;

#define PANELS 8   /* panels of 16 weight rows per packed chunk (the caller's items: WK_QDOT_GEMM_ROWS) */
#define KCHUNK 128 /* sub-blocks of 32 per packed chunk: 8 x 128 x 768 B = 768 KiB */
#define TILE_B QG_TILE_B
#define SCALES QG_SCALES

int wk_qgemm_amx_ready(void)
{
    return wk_cpu_amx_tiles() && __builtin_cpu_supports("amx-int8") &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

int wk_qgemm_amx_takes(int qt)
{
    return qd_type_of(qt).sub > 0;
}

size_t wk_qgemm_amx_scratch(const wk_qdot_job *jb)
{
    const int64_t kc = jb->nsub < KCHUNK ? jb->nsub : KCHUNK;
    return (size_t)(PANELS * kc) * (TILE_B + SCALES * sizeof(float)) + 4 * 256 * sizeof(int32_t);
}

/* ---- tile configuration (palette 1): the bytes ldtilecfg reads */
typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;
_Static_assert(sizeof(tilecfg) == 64, "tilecfg layout");

/* Tiles: C0, C1 (the two buffers' sums, or half 0 and half 1 of buffer 0), A0, A1 (x codes),
 * B0, B1 (packed weights), C2, C3 (halves of buffer 1). kk: bytes of K per product (32, or 16
 * for the types with a scale per half). */
static void config(int kk)
{
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    const int C[4] = {0, 1, 6, 7};
    for (int i = 0; i < 4; i++)
        c.rows[C[i]] = 16, c.colsb[C[i]] = 64;
    c.rows[2] = c.rows[3] = 16, c.colsb[2] = c.colsb[3] = (uint16_t)kk;
    c.rows[4] = c.rows[5] = (uint8_t)(kk / 4), c.colsb[4] = c.colsb[5] = 64;
    _tile_loadconfig(&c);
}

/* ---- the terms (cpu_qdot.h) of one sub-block for 16 x rows from the tile sums in cb
 * (cb: 16 rows of 16 int32; cb2: half 1 when the type has a scale per half) */
#define TERMS(ty, acc, cb, cb2, sc, dx, xf, nsub)                                                 \
    do {                                                                                          \
        const __m512 dS0_ = _mm512_load_ps(sc), dS1_ = _mm512_load_ps((sc) + 16);                \
        const __m512 eN0_ = _mm512_load_ps((sc) + 32), eN1_ = _mm512_load_ps((sc) + 48);         \
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)                                     \
        {                                                                                         \
            const __m512 d_ = _mm512_set1_ps((dx)[i * (nsub)]);                                   \
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512((cb) + 16 * i)),        \
                                     _mm512_mul_ps(dS0_, d_), acc[i]);                            \
            if ((ty)->ints == 2)                                                                  \
                acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512((cb2) + 16 * i)),   \
                                         _mm512_mul_ps(dS1_, d_), acc[i]);                        \
            if ((ty)->eof >= 0) {                                                                 \
                const float *h_ = (xf) + 3 * i * (nsub); /* xh0, xh1, xh0 + xh1 as floats */     \
                if ((ty)->ints == 2) {                                                            \
                    acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(h_[0]), _mm512_mul_ps(eN0_, d_), acc[i]); \
                    acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(h_[1]), _mm512_mul_ps(eN1_, d_), acc[i]); \
                } else {                                                                          \
                    acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(h_[2]), _mm512_mul_ps(eN0_, d_), acc[i]); \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    } while (0)

/* x rows [r0, r0 + 16) against one packed panel, sub-blocks [u0, u0 + nu) of the chunk (packed
 * at B, sc): the 16 accumulators (in registers: every index a constant after unrolling) start
 * from the outputs at o (rows n apart, lanes m; zero for the first chunk and for rows past
 * live), take the terms of each sub-block from its tile product (stored to cbuf: 4 x 256 int32)
 * and go back to o (rows below live). */
static inline __attribute__((always_inline)) void panel(const wk_qdot_job *jb, const qd_type *ty,
                                                         int64_t r0, int64_t u0, int64_t nu,
                                                         const int8_t *B, const float *sc,
                                                         const float *xf, int32_t *cbuf, float *o,
                                                         __mmask16 m, int live)
{
    const int64_t lda = jb->nsub * 32, nsub = jb->nsub;
    const float *dx = jb->xd + r0 * nsub + u0;
    const float *xfu = xf ? xf + 3 * (r0 * nsub + u0) : NULL;
    const int8_t *xa = jb->xq + r0 * lda + u0 * 32;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        acc[i] = u0 > 0 && i < live ? _mm512_maskz_loadu_ps(m, o + i * jb->n) : _mm512_setzero_ps();
    if (ty->ints == 2) {
        /* a product per half (K = 16 each), pipelined as below: even sub-blocks in tiles 0, 1
         * and buffer b0 (2 x 256 int32), odd ones in tiles 6, 7 and b1; x and W tiles 2-5 */
        int32_t *b0 = cbuf, *b1 = cbuf + 512;
#define HALVES(C0, C1, v)                                                                         \
    do {                                                                                          \
        _tile_zero(C0);                                                                           \
        _tile_zero(C1);                                                                           \
        _tile_loadd(2, xa + 32 * (v), lda);                                                       \
        _tile_loadd(4, B + TILE_B * (v), 64);                                                     \
        _tile_dpbssd(C0, 2, 4);                                                                   \
        _tile_loadd(3, xa + 32 * (v) + 16, lda);                                                  \
        _tile_loadd(5, B + TILE_B * (v) + 256, 64);                                               \
        _tile_dpbssd(C1, 3, 5);                                                                   \
    } while (0)
        HALVES(0, 1, 0);
        if (nu > 1)
            HALVES(6, 7, 1);
        _tile_stored(0, b0, 64);
        _tile_stored(1, b0 + 256, 64);
        for (int64_t u = 0; u < nu; u += 2) {
            if (u + 1 < nu) {
                _tile_stored(6, b1, 64);
                _tile_stored(7, b1 + 256, 64);
            }
            if (u + 2 < nu)
                HALVES(0, 1, u + 2);
            TERMS(ty, acc, b0, b0 + 256, sc + SCALES * u, dx + u, xfu ? xfu + 3 * u : NULL, nsub);
            if (u + 1 >= nu)
                break;
            if (u + 2 < nu) {
                _tile_stored(0, b0, 64);
                _tile_stored(1, b0 + 256, 64);
            }
            if (u + 3 < nu)
                HALVES(6, 7, u + 3);
            TERMS(ty, acc, b1, b1 + 256, sc + SCALES * (u + 1), dx + u + 1,
                  xfu ? xfu + 3 * (u + 1) : NULL, nsub);
        }
#undef HALVES
    } else {
        /* A pipeline of three sub-blocks: at step u, u + 1's product (issued a step ago) is
         * stored, u + 2's issued, and u's terms run on the sums stored a step ago, so the tile
         * unit, the tile store and the vector units never wait for each other. Even sub-blocks
         * use tiles 0, 2, 4 and buffer b0, odd ones 1, 3, 5 and b1. */
        int32_t *b0 = cbuf, *b1 = cbuf + 256;
#define PRODUCT(C, A, Bt, v)                                                                      \
    do {                                                                                          \
        _tile_zero(C);                                                                            \
        _tile_loadd(A, xa + 32 * (v), lda);                                                       \
        _tile_loadd(Bt, B + TILE_B * (v), 64);                                                    \
        _tile_dpbssd(C, A, Bt);                                                                   \
    } while (0)
        PRODUCT(0, 2, 4, 0);
        if (nu > 1)
            PRODUCT(1, 3, 5, 1);
        _tile_stored(0, b0, 64);
        for (int64_t u = 0; u < nu; u += 2) {
            if (u + 1 < nu)
                _tile_stored(1, b1, 64);
            if (u + 2 < nu)
                PRODUCT(0, 2, 4, u + 2);
            TERMS(ty, acc, b0, b0, sc + SCALES * u, dx + u, xfu ? xfu + 3 * u : NULL, nsub);
            if (u + 1 >= nu)
                break;
            if (u + 2 < nu)
                _tile_stored(0, b0, 64);
            if (u + 3 < nu)
                PRODUCT(1, 3, 5, u + 3);
            TERMS(ty, acc, b1, b1, sc + SCALES * (u + 1), dx + u + 1,
                  xfu ? xfu + 3 * (u + 1) : NULL, nsub);
        }
#undef PRODUCT
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        if (i < live)
            _mm512_mask_storeu_ps(o + i * jb->n, m, acc[i]);
}

/* the whole product for block type qt (a constant after inlining) */
static inline __attribute__((always_inline)) void run(const wk_qdot_job *jb, const int qt,
                                                       int64_t rows, int64_t j0, int64_t j1,
                                                       char *scratch, const float *xf)
{
    const qd_type ty = qd_type_of(qt);
    const int64_t prow = (rows + 15) / 16 * 16;
    const int64_t kc = jb->nsub < KCHUNK ? jb->nsub : KCHUNK;
    int8_t *B = (int8_t *)scratch;
    float *sc = (float *)(B + PANELS * kc * TILE_B);
    int32_t *cbuf = (int32_t *)(sc + PANELS * kc * SCALES);
    const int npan = (int)((j1 - j0 + 15) / 16);
    for (int64_t u0 = 0; u0 < jb->nsub; u0 += kc) {
        const int64_t nu = jb->nsub - u0 < kc ? jb->nsub - u0 : kc;
        qg_pack_panels(jb, qt, j0, j1, u0, nu, kc, B, sc, 0);
        for (int64_t r0 = 0; r0 < prow; r0 += 16) {
            const int live = (int)(rows - r0 < 16 ? rows - r0 : 16); /* x rows to store */
            for (int p = 0; p < npan; p++) {
                const int64_t pj = j0 + 16 * p;
                panel(jb, &ty, r0, u0, nu, B + p * kc * TILE_B, sc + p * kc * SCALES, xf, cbuf,
                      jb->out + r0 * jb->n + pj, qg_panel_lanes(pj, j1), live);
            }
        }
    }
}

#define QG_RUN(id)                                                                 \
    case id:                                                                       \
        config(qd_type_of(id).ints == 2 ? 16 : 32);                                \
        run(jb, id, rows, j0, j1, scratch, xf);                                    \
        break;

int wk_qgemm_amx(const wk_qdot_job *jb, int64_t rows, int64_t j0, int64_t j1, void *scratch)
{
    if (!wk_qgemm_amx_ready())
        return -1;
    const float *xf = jb->xf;
    switch (jb->qt) {
        WK_QDOT_SIMD_TYPES(QG_RUN)
    default: return -1;
    }
    _tile_release();
    return 0;
}
#else
const int wk_qgemm_amx_built = 0;
int wk_qgemm_amx_ready(void) { return 0; }
int wk_qgemm_amx_takes(int qt) { (void)qt; return 0; }
size_t wk_qgemm_amx_scratch(const wk_qdot_job *jb) { (void)jb; return 0; }
int wk_qgemm_amx(const wk_qdot_job *jb, int64_t rows, int64_t j0, int64_t j1, void *scratch)
{
    (void)jb, (void)rows, (void)j0, (void)j1, (void)scratch;
    return -1;
}
#endif
