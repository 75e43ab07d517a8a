/* cpu_qdot.h: the CPU's quantized matrix product (x (rows, k) against a GGML block-quantized W
 * (n, k)) on integers, for any number of rows: decode (a few rows) and prefill (many). The GPUs'
 * decode path (kernels/qmv.cu) quantizes x the same way:
 *   1. x is quantized once per call to int8 blocks of 32 with an f32 scale, the GPU's grid
 *      (wk_qb_q8_grid of quant_blocks.h: d = amax / 127, round half away from zero, subnormal
 *      blocks gridded on x * 2^64; a block holding NaN or +-inf gets d = NaN and codes 0);
 *   2. per output (r, j) and 32-element sub-block u of W row j: the exact int32 dot products of
 *      the weight codes with the x codes, one per half (elements 0..15, 16..31):
 *          is_h = sum over the half of u_l * q_l  -  c * xh_h
 *      (u the weight's byte, c its offset: cpu_qdot_types.h; q the x codes, xh_h their half sums);
 *   3. per sub-block, in f32, a fixed list of terms, each  acc = fmaf(A, (F * K) * dx, acc)  with
 *      A an exact integer (|A| < 2^24), F a float scale of W's block, K an integer sub-scale
 *      (F * K is exact in f32: F has 11 significant bits, or 24 with K = 1; K at most 8), dx the x
 *      block's scale; acc starts at +0 and takes the sub-blocks u = 0, 1, 2, ... in order:
 *        scale terms: the types with one scale per half (q2_k, q3_k, q6_k): (is_0, d * S_0) then
 *                     (is_1, d * S_1); every other type one term (is_0 + is_1, d * S), S = 1 for
 *                     the one-sub-block types and q8_k;
 *        min terms (the affine types): q2_k (xh_0, e * N_0) then (xh_1, e * N_1); q4_1, q5_1,
 *                     q4_k, q5_k one term (xh_0 + xh_1, e * N), N = 1 for q4_1, q5_1;
 *      (d the block's scale, e its min m or -dmin: cpu_qdot_types.h) and out = acc rounded to dt.
 * Every code path (scalar, AVX2, AVX-512 VNNI, AMX) performs exactly these operations for every
 * output, whatever its tiles (SIMD lanes across weight rows or x rows), and one output is always
 * computed by one thread, so the result is the same bits on every path, every thread count and
 * every number of rows in the call (a row's outputs do not depend on the other rows). The
 * codes/scales per type: cpu_qdot_types.h. Internal to src/cpu. */
#ifndef WK_CPU_QDOT_H
#define WK_CPU_QDOT_H

#include "backend.h"
#include <stdint.h>

/* One piece of a call's work: x already quantized (wk_cpu_qdot fills it); the rows functions
 * take at most 8 rows of x at a time (rows, xq, xd, xh, out point at the first of them). */
typedef struct wk_qdot_job {
    int qt;                /* wk_qtype, a block type (not F32/F16/BF16) */
    const uint8_t *w;      /* W (n, k): n rows of row_bytes */
    int64_t row_bytes, n, nsub; /* nsub = k / 32 */
    int rows;              /* x rows, 1..8 */
    const int8_t *xq;      /* (rows, nsub, 32) x codes */
    const float *xd;       /* (rows, nsub) x block scales */
    const int32_t *xh;     /* (rows, nsub, 2) half sums of the x codes */
    float *out;            /* (rows, n) f32, row stride n */
    const float *xf;       /* AVX-512 and AMX paths, affine types: (rows, nsub, 3) xh0, xh1,
                            * xh0 + xh1 as floats (exact: |xh| < 2^24); else NULL */
    int pf_next;           /* AVX-512 path: wk_cpu_qdot_pf_next() (how W is prefetched) */
    int gather;            /* AVX-512 path: q4_0 / q4_1 read the 16 rows' block scales with one
                            * vpgatherdd (1, where gathers are fast) or 16 loads (0, AMD CPUs:
                            * wk_cpu_qdot_gather()) */
} wk_qdot_job;

/* Code paths. AVX512: x of at least WK_QDOT_GEMM_MIN_ROWS rows on the VNNI product of many rows
 * (cpu_qgemm_vnni.c), fewer on the decode functions (cpu_qdot_avx512.c); AMX: the same, with the
 * tile units (cpu_qgemm_amx.c) in place of the VNNI product where the thread may use them. */
enum { WK_QDOT_EXACT = 0, WK_QDOT_SCALAR = 1, WK_QDOT_AVX2 = 2, WK_QDOT_AVX512 = 3, WK_QDOT_AMX = 4 };

/* The path wk_qmatmul takes, chosen once per process: the best this CPU runs, or what the
 * environment variable WICK_CPU_QDOT (exact, scalar, avx2, avx512, amx) asks for (a level the CPU
 * or build cannot run falls to the next lower one). EXACT: the float path of cpu_quant.c (x not
 * quantized). */
int wk_cpu_qdot_path(void);
/* 1 when this CPU and build run path p (EXACT and SCALAR always). */
int wk_cpu_qdot_can(int path);
/* How the AVX-512 functions prefetch W, chosen once per process: 1 = each group of 16 weight
 * rows brings the next group into L2 (W read as one stream), 0 = each row's blocks a few ahead
 * into L1 (16 short streams; q4_0 and q4_1 take the next group as well either way). 1 on AMD
 * CPUs, 0 on others, or what WICK_CPU_QDOT_PREFETCH (group, lines) asks for. Measured one row
 * from memory, 2 threads: AMD EPYC (Zen 4) q4_k 128256 x 4096 18 -> 33-44 GB/s, q6_k 19 ->
 * 31-39, q2_k 16 -> 25, q3_k 14 -> 26, q8_0 29 -> 33; the Intel CPU with AMX read the K types
 * no faster with it (docs/performance.md "CPU"). Only the order of reads changes: the bits are
 * the same. */
int wk_cpu_qdot_pf_next(void);
/* 1 where vpgatherdd is fast enough for the block scales of q4_0 / q4_1 (not on AMD CPUs: Zen 4,
 * one row of q4_0 4096 x 4096 in cache on one thread, 17.8 GB/s with the gather, 20.4-21.5 with
 * 16 loads; the Intel CPU measured q4_1 1.3x faster with it than with the loads it replaced), or
 * what WICK_CPU_QDOT_GATHER (1, 0) asks for; chosen once per process; the same bits either way. */
int wk_cpu_qdot_gather(void);
/* Name of path p: "exact", "scalar", "avx2", "avx512", "amx". */
const char *wk_cpu_qdot_name(int path);

/* out (rows, n) of dt = x (rows, k) of dt @ W^T, W (n, k) of block type qt, on path (SCALAR,
 * AVX2, AVX512 or AMX; one this CPU runs). Threads over weight rows (OpenMP). */
wk_status wk_cpu_qdot(int path, wk_qtype qt, wk_dtype dt, void *out, const void *x, int64_t rows,
                      const void *w, int64_t n, int64_t k);

/* The same from x's activations (wick.h's layout: wk_quantize_act) instead of x: the bits of
 * wk_cpu_qdot on the x they were quantized from. */
wk_status wk_cpu_qdot_act(int path, wk_qtype qt, wk_dtype dt, void *out, const void *act,
                          int64_t rows, const void *w, int64_t n, int64_t k);

/* Output rows [j0, j1) of jb, per path (cpu_qdot.c, cpu_qdot_avx2.c, cpu_qdot_avx512.c). */
void wk_qdot_rows_scalar(const wk_qdot_job *jb, int64_t j0, int64_t j1);
void wk_qdot_rows_avx2(const wk_qdot_job *jb, int64_t j0, int64_t j1);
void wk_qdot_rows_avx512(const wk_qdot_job *jb, int64_t j0, int64_t j1);
extern const int wk_qdot_avx2_built, wk_qdot_avx512_built;

/* x (rows, nsub * 32) of dt (f32, f16, bf16) -> codes xq, scales xd, half sums xh (step 1), rows
 * [r0, r1); the AVX-512 one gives the scalar one's bits (cpu_qdot.c, cpu_qdot_avx512.c). */
void wk_qdot_quant_x(int dt, const void *x, int64_t r0, int64_t r1, int64_t nsub, int8_t *xq,
                     float *xd, int32_t *xh);
void wk_qdot_quant_x_avx512(int dt, const void *x, int64_t r0, int64_t r1, int64_t nsub,
                            int8_t *xq, float *xd, int32_t *xh);

/* The products of many rows (cpu_qgemm_amx.c, cpu_qgemm_vnni.c): out rows [0, rows) (xq, xd, xh,
 * xf padded with zero rows to a multiple of 16), weight rows [j0, j1) of jb (at most
 * WK_QDOT_GEMM_ROWS), on the calling thread; scratch (64-byte aligned) is the thread's packing
 * buffer of wk_qgemm_*_scratch(jb) bytes. 0 on success, -1 when this thread cannot run it (AMX:
 * the tile units not granted; then nothing was written). */
#define WK_QDOT_GEMM_MIN_ROWS 16
#define WK_QDOT_GEMM_ROWS 128
int wk_qgemm_amx(const wk_qdot_job *jb, int64_t rows, int64_t j0, int64_t j1, void *scratch);
size_t wk_qgemm_amx_scratch(const wk_qdot_job *jb);
int wk_qgemm_vnni(const wk_qdot_job *jb, int64_t rows, int64_t j0, int64_t j1, void *scratch);
size_t wk_qgemm_vnni_scratch(const wk_qdot_job *jb);
extern const int wk_qgemm_vnni_built;
/* 1 when the CPU has AMX tiles and the OS lets this process use the tile data (Linux:
 * arch_prctl ARCH_REQ_XCOMP_PERM, asked once: cpu_amx.c); 0 otherwise. */
int wk_cpu_amx_tiles(void);
/* 1 when the build has the AMX product, the CPU AMX-INT8 and the process the tile data. */
int wk_qgemm_amx_ready(void);
/* 1 when the AMX product takes block type qt. */
int wk_qgemm_amx_takes(int qt);
extern const int wk_qgemm_amx_built;

#endif
