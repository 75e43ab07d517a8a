/* cpu_qdot.h: the CPU's quantized matrix-vector product for decode (x with rows <= 8 against a
 * GGML block-quantized W (n, k)), the integer path that the GPUs run too (kernels/qmv.cu):
 *   1. x is quantized once per call to int8 blocks of 32 with an f32 scale, the GPU's grid
 *      (wk_qb_q8_grid of quant_blocks.h: d = amax / 127, round half away from zero, subnormal
 *      blocks gridded on x * 2^64; a block holding NaN or +-inf gets d = NaN and codes 0);
 *   2. per output (r, j) and 32-element sub-block u of W row j: the exact int32 dot products of
 *      the weight codes with the x codes, one per half (elements 0..15, 16..31): is0, is1;
 *   3. per sub-block, with the block's integer sub-scales S and mins N (K types) and its float
 *      scales d and e (e: the min / -dmin term of the affine types), in f32:
 *          I = S0 * is0 + S1 * is1,  M = N0 * xs0 + N1 * xs1  (xs: the x codes' half sums)
 *          a = (float)I * d;  a = a + (float)M * e  (affine types only);  t = dx * a
 *      (every integer is exact, |I| < 2^24, so (float)I is exact), and acc += (double)t in f64,
 *      u = 0, 1, 2, ... in order; out = (float)acc, then rounded to dt.
 * Every code path (scalar, AVX2, AVX-512 VNNI) performs exactly these operations for every
 * output, vectorised across weight rows only (one output per SIMD lane), so the result is the same
 * bits on every path and any thread count. The codes/scales per type: cpu_qdot_types.h.
 * Internal to src/cpu. */
#ifndef WK_CPU_QDOT_H
#define WK_CPU_QDOT_H

#include "backend.h"
#include <stdint.h>

/* One call's work: x already quantized (wk_cpu_qdot fills it). */
typedef struct wk_qdot_job {
    int qt;                /* wk_qtype, a block type (not F32/F16/BF16) */
    const uint8_t *w;      /* W (n, k): n rows of row_bytes */
    int64_t row_bytes, n, nsub; /* nsub = k / 32 */
    int rows;              /* x rows, 1..8 */
    const int8_t *xq;      /* (rows, nsub, 32) x codes */
    const float *xd;       /* (rows, nsub) x block scales */
    const int32_t *xh;     /* (rows, nsub, 2) half sums of the x codes */
    float *out;            /* (rows, n) f32 */
} wk_qdot_job;

/* Code paths. */
enum { WK_QDOT_EXACT = 0, WK_QDOT_SCALAR = 1, WK_QDOT_AVX2 = 2, WK_QDOT_AVX512 = 3 };

/* The path wk_qmatmul takes for rows <= 8, chosen once per process: the best this CPU runs,
 * or what the environment variable WICK_CPU_QDOT (exact, scalar, avx2, avx512) asks for
 * (a level the CPU or build cannot run falls to the next lower one). EXACT: the float path of
 * cpu_quant.c (x not quantized). */
int wk_cpu_qdot_path(void);
/* 1 when this CPU and build run path p (EXACT and SCALAR always). */
int wk_cpu_qdot_can(int path);
/* Name of path p: "exact", "scalar", "avx2", "avx512". */
const char *wk_cpu_qdot_name(int path);

/* out (rows, n) of dt = x (rows, k) of dt @ W^T, W (n, k) of block type qt, rows 1..8, on path
 * (SCALAR, AVX2 or AVX512; one this CPU runs). Threads over weight rows (OpenMP, static). */
wk_status wk_cpu_qdot(int path, wk_qtype qt, wk_dtype dt, void *out, const void *x, int64_t rows,
                      const void *w, int64_t n, int64_t k);

/* Output rows [j0, j1) of jb, per path (cpu_qdot.c, cpu_qdot_avx2.c, cpu_qdot_avx512.c). */
void wk_qdot_rows_scalar(const wk_qdot_job *jb, int64_t j0, int64_t j1);
void wk_qdot_rows_avx2(const wk_qdot_job *jb, int64_t j0, int64_t j1);
void wk_qdot_rows_avx512(const wk_qdot_job *jb, int64_t j0, int64_t j1);
extern const int wk_qdot_avx2_built, wk_qdot_avx512_built;

#endif
