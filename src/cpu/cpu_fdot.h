/* cpu_fdot.h: the CPU's product with float weights (W (n, k) of F32, F16 or BF16: the
 * one-element wk_qtypes) for a few rows of x (decode), x not quantized:
 *   out[r][j] = tree(p),  p_l = fmaf chain over i = l, l + 16, l + 32, ... < k of x[r][i] * w[j][i]
 *                                (both as f32; W's value converted exactly), from +0, l = 0..15;
 *   tree(p): t_l = p_l + p_{l+8} (l < 8), u_l = t_l + t_{l+4} (l < 4), v_l = u_l + u_{l+2}
 *            (l < 2), out = v_0 + v_1,
 * then rounded to dt (x rows 1..8; more rows go to the CPU's gemm: wk_cpu_fmatmul). Every path (scalar, AVX2 with FMA and F16C, AVX-512F) performs exactly these
 * operations (16 lanes: one zmm, two ymm or 16 scalars), so the bits are the same on every path and
 * thread count. Weight rows over threads (OpenMP, static). Internal to src/cpu. */
#ifndef WK_CPU_FDOT_H
#define WK_CPU_FDOT_H

#include "backend.h"
#include <stdint.h>

/* out (rows, n) f32 = x (rows, k) f32 @ W^T, W (n, k) of qt (WK_QTYPE_F32, F16 or BF16), weight
 * rows [j0, j1), x rows 1..8; the row stride of out is n. */
typedef void (*wk_fdot_rows_fn)(int qt, float *out, const float *x, int rows, const void *w,
                                int64_t n, int64_t k, int64_t j0, int64_t j1);
void wk_fdot_rows_scalar(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                         int64_t k, int64_t j0, int64_t j1);
void wk_fdot_rows_avx2(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                       int64_t k, int64_t j0, int64_t j1);
void wk_fdot_rows_avx512(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                         int64_t k, int64_t j0, int64_t j1);
extern const int wk_fdot_avx2_built, wk_fdot_avx512_built;

/* wk_qmatmul's CPU work for a float W (qt F32, F16 or BF16; x (rows, k) and out (rows, n) of
 * dt): rows <= 8 the order above; 16 rows or more of an F16 or BF16 W on the AMX path
 * (WICK_CPU_QDOT, cpu_qdot.h) the AMX-BF16 product below; other rows > 8 of an F16 or BF16 W on
 * the AVX-512 path (or AMX) the AVX-512F product below; else the CPU's gemm (cpu_gemm.c,
 * OpenBLAS: its order, the same bits on any thread count) on W converted to f32 a panel of rows
 * at a time (F32: W read in place). */
wk_status wk_cpu_fmatmul(wk_qtype qt, wk_dtype dt, void *out, const void *x, int64_t rows,
                         const void *w, int64_t n, int64_t k);

/* The AMX-BF16 product of many rows (cpu_fgemm_amx.c: its header has the order and the error
 * bound): out (rows, n) f32 = x (rows, k) f32 @ W^T, W of qt F16 or BF16; par: threads over
 * weight rows. wk_fgemm_amx_ready: the build has it, the CPU AMX-BF16 and AVX512-BF16, the
 * process the tile data. */
int wk_fgemm_amx_ready(void);
wk_status wk_fgemm_amx(int qt, float *out, const float *x, int64_t rows, const void *w, int64_t n,
                       int64_t k, int par);
extern const int wk_fgemm_amx_built;

/* The AVX-512F product of many rows (cpu_fgemm_avx512.c: each output the fmaf chain over i of
 * x[r][i] * w[j][i] from +0, in order): out (rows, n) f32 = x (rows, k) f32 @ W^T, W of qt F16
 * or BF16; par: threads over panels of weight rows. Only where the CPU has AVX-512F. */
wk_status wk_fgemm_avx512(int qt, float *out, const float *x, int64_t rows, const void *w,
                          int64_t n, int64_t k, int par);
extern const int wk_fgemm_avx512_built;

/* The best path this CPU runs (WICK_CPU_QDOT=scalar or avx2 asks for a lower one, as for the
 * quantized product: cpu_qdot.h). */
wk_fdot_rows_fn wk_fdot_rows_best(void);

#endif
