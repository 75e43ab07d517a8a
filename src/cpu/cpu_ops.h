/* cpu_ops.h: the CPU backend's op entry points, one family per file (cpu_<family>.c), wired into
 * the vtable in cpu_backend.c. Contracts: src/core/backend.h. */
#ifndef WK_CPU_OPS_H
#define WK_CPU_OPS_H

#include "backend.h"

/* Parallel loops: OpenMP above this many elements. */
#define WK_CPU_PAR_THRESHOLD 32768

/* cpu_unary.c: plain unary ops, affine, powf, elu */
wk_status wk_cpu_unary(wk_device *dev, wk_op op, wk_dtype dt, const wk_unary_params *p, void *out,
                       const void *x, const wk_layout *lx);
/* cpu_binary.c: binary arithmetic, the gated ops (cpu_elem.h's wk_cpu_glu_row) and comparisons */
wk_status wk_cpu_binary(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb);
/* cpu_where.c */
wk_status wk_cpu_where_cond(wk_device *dev, wk_dtype cdt, wk_dtype dt, void *out, const void *c,
                            const wk_layout *lc, const void *t, const wk_layout *lt, const void *f,
                            const wk_layout *lf);
/* cpu_cast.c */
wk_status wk_cpu_to_dtype(wk_device *dev, wk_dtype from, wk_dtype to, void *out, const void *x,
                          const wk_layout *lx);
/* cpu_copy.c: const_set, copy_strided, copy2d */
wk_status wk_cpu_const_set(wk_device *dev, wk_dtype dt, void *base, const wk_layout *l,
                           const void *value);
wk_status wk_cpu_copy_strided(wk_device *dev, wk_dtype dt, void *dst, size_t dst_offset,
                              const void *x, const wk_layout *lx);
wk_status wk_cpu_copy2d(wk_device *dev, wk_dtype dt, void *dst, const void *src, size_t d1,
                        size_t d2, size_t src_stride1, size_t dst_stride1, size_t src_offset,
                        size_t dst_offset);
/* cpu_copy.c: for row-wise ops. *tmp = NULL when x's rows (last dim) are unit-stride (or there is
 * only one row or one column); otherwise a contiguous copy of x (the caller wk_frees it) with
 * layout *lt, made in one tiled pass rather than passes that miss the cache on every element.
 * Fails only with WK_ERR_OUT_OF_MEMORY (naming op). lx->rank >= 1. */
wk_status wk_cpu_rows_contiguous(wk_device *dev, wk_dtype dt, const void *x, const wk_layout *lx,
                                 void **tmp, wk_layout *lt, const char *op);
/* cpu_reduce.c */
wk_status wk_cpu_reduce(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, uint32_t dims_mask);

/* cpu_rand.c */
wk_status wk_cpu_rand(wk_device *dev, wk_op op, wk_dtype dt, void *out, size_t n, double a,
                      double b, uint64_t seed, uint64_t offset);

/* cpu_matmul.c: matmul through the gemm below */
wk_status wk_cpu_matmul(wk_device *dev, wk_dtype dt, void *out, const void *a, const wk_layout *la,
                        const void *b, const wk_layout *lb);
/* cpu_gemm.c: the gemm of matmul and the convolutions, over OpenBLAS, threaded by wick:
 * c (m x n, row stride ldc) = op(a) @ op(b), row-major, ct F32 or F64, op = transpose if ta/tb;
 * every extent and leading dim fits in int (the callers check). Outside a parallel region a large
 * gemm is cut into row or column blocks over the OpenMP threads; inside one it runs on its thread. */
void wk_cpu_gemm(wk_dtype ct, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a,
                 int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc);
/* 1 if `count` independent m x n x k gemms should be spread over the OpenMP threads (each then
 * runs on its thread), 0 if they should run one after the other (each cut by wk_cpu_gemm). */
int wk_cpu_gemm_spread(int64_t count, int64_t m, int64_t n, int64_t k);
/* "wick" (the default) or "blas" (WICK_CPU_BLAS_THREADS=blas: OpenBLAS threads its gemms). */
const char *wk_cpu_gemm_threading(void);
/* cpu_matmul_bf16.c: the bf16 gemm for CPUs with AVX512-BF16 (call only where the CPU has it and
 * wk_cpu_bf16gemm_built is 1): c (m x n, row stride ldc) = a (m x k, strides sam, sak) @
 * b (k x n, strides sbk, sbn), all bf16 bits, through ws (wk_cpu_bf16gemm_ws bytes for the
 * number of threads that run it). Called
 * by one thread (team 0), or by every thread of a parallel region (team 1: the work is shared
 * through OpenMP loops with barriers). Results do not depend on the threads. */
extern const int wk_cpu_bf16gemm_built;
size_t wk_cpu_bf16gemm_ws(int64_t m, int64_t n, int64_t k, int64_t sak, int nthreads);
void wk_cpu_bf16gemm(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t sam, int64_t sak,
                     const uint16_t *b, int64_t sbk, int64_t sbn, uint16_t *c, int64_t ldc, void *ws,
                     int team);
/* 1 if bf16 matmuls take wk_cpu_bf16gemm: built, the CPU has AVX512-BF16, and the environment
 * variable WICK_CPU_BF16GEMM is not "off" (read once). */
int wk_cpu_bf16gemm_on(void);
/* cpu_conv.c: conv1d, conv_transpose1d, conv2d, conv_transpose2d (im2col / col2im + gemm) */
wk_status wk_cpu_conv(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *w, const wk_layout *lw,
                      const wk_conv_params *p);
/* @marker:linalg */
/* cpu_pool.c: avg_pool2d, max_pool2d */
wk_status wk_cpu_pool2d(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, const wk_pool_params *p);
/* cpu_upsample.c: upsample_nearest1d/2d, upsample_bilinear2d */
wk_status wk_cpu_upsample(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, const int64_t *out_dims, int align_corners,
                          double scale_h, double scale_w);
/* @marker:image */
/* cpu_index.c: index_select, gather, scatter_set, scatter_add_set, index_add */
wk_status wk_cpu_index(wk_device *dev, const wk_index_args *a);
/* @marker:index */
/* cpu_softmax.c, cpu_norm.c, cpu_rope.c, cpu_sort.c: candle-nn's fused ops */
wk_status wk_cpu_softmax(wk_device *dev, wk_dtype dt, void *out, const void *x, const wk_layout *lx);
wk_status wk_cpu_norm(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *alpha, const wk_layout *la,
                      const void *beta, const wk_layout *lb, float eps);
/* cpu_norm.c: sum = x + r, out = the norm of sum (wk_add_rms_norm, wk_add_layer_norm) */
wk_status wk_cpu_add_norm(wk_device *dev, wk_op op, wk_dtype dt, wk_dtype rdt, void *sum,
                          void *out, const void *x, const wk_layout *lx, const void *r,
                          const wk_layout *lr, const void *alpha, const wk_layout *la,
                          const void *beta, const wk_layout *lb, float eps);
wk_status wk_cpu_rope(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *cos, const wk_layout *lc, const void *sin,
                      const wk_layout *ls);
/* cpu_attn.c: decode attention */
wk_status wk_cpu_attention(wk_device *dev, const wk_attn_args *a);
/* cpu_rope_kv.c: rope of q and k, k and v appended to a KV cache */
wk_status wk_cpu_rope_kv(wk_device *dev, const wk_rope_kv_args *a);
wk_status wk_cpu_arg_sort(wk_device *dev, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, int ascending);
/* @marker:fused */
/* cpu_quant.c: the quantized ops of the vtable (contracts in backend.h) */
bool wk_cpu_supports_q(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt);
wk_status wk_cpu_dequantize(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *q,
                            int64_t n);
wk_status wk_cpu_qmatmul(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                         int64_t rows, const void *w, int64_t n, int64_t k);
wk_status wk_cpu_qembedding(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *ids,
                            wk_dtype idt, const wk_layout *li, const void *w, int64_t rows,
                            int64_t k);
/* cpu_qact.c: the int8 activations (contracts in backend.h) */
wk_status wk_cpu_quantize_act(wk_device *dev, wk_dtype dt, void *act, const void *x, int64_t m,
                              int64_t k);
wk_status wk_cpu_qmatmul_act(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *act,
                             int64_t m, const void *w, int64_t n, int64_t k);
/* cpu_quantize.c: out (n / block_elems blocks of qt) <- x (n contiguous f32, n a multiple of the
 * block size). Host work: the CPU vtable's quantize, which the front end's wk_quantize calls
 * (quantizing is CPU-only). Fails only with WK_ERR_OUT_OF_MEMORY. */
wk_status wk_cpu_quantize(wk_qtype qt, void *out, const float *x, int64_t n);

#endif
