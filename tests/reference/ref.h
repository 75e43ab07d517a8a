/* ref.h: the float64 reference of every wick op, used by the parity harness (tests/parity) and by
 * `wick check`. Naive scalar code, written from docs/semantics.md and nothing else: it shares no
 * code with the library (its own dtype sizes, its own rounding to bf16/f16/f8e4m3, its own layout
 * walk). Only the public types of wick.h (wk_dtype, wk_op, wk_layout, wk_status) are used.
 *
 * Float ops compute in f64 from the f64 values of the inputs and round once to the output dtype
 * (through f32 for the reduced types, as the semantics say). Integer ops compute exactly in 64-bit
 * integer arithmetic and wrap explicitly to the dtype's width.
 *
 * Buffers are host memory in the storage format of their dtype (bf16/f16 raw uint16_t bits,
 * f8e4m3 a raw byte). Every op returns the status the library must return for these inputs
 * (WK_OK, or e.g. WK_ERR_SHAPE for a min over an empty extent); on an error nothing is written.
 * Outputs of the out-of-place ops are contiguous, elem_count(first input layout) elements. */
#ifndef WK_REF_H
#define WK_REF_H

#include "wick.h"
#include <stddef.h>
#include <stdint.h>

/* ---- dtype facts (ref_dtype.c) */
size_t ref_dtype_size(wk_dtype dt);
int ref_is_float(wk_dtype dt);
int ref_is_signed(wk_dtype dt); /* i16 i32 i64 */
/* Smallest and largest value of an integer dtype. */
int64_t ref_int_min(wk_dtype dt);
int64_t ref_int_max(wk_dtype dt);

/* ---- values and rounding (ref_dtype.c) */
/* The value a float dtype holds for x: round to nearest even; f16/bf16 overflow to +-inf; f8e4m3
 * saturates to +-448 (inf too); reduced types go through f32 first. NaN stays NaN. */
double ref_round(wk_dtype dt, double x);
/* v two's-complement wrapped to the width of integer dtype dt, as a value of dt. */
int64_t ref_wrap(wk_dtype dt, uint64_t v);
/* Float -> integer dtype: NaN -> 0, truncation toward zero, saturation at the dtype's range. */
int64_t ref_float_to_int(wk_dtype dt, double x);
/* Integer -> float dtype: round to nearest even from the exact integer (to f32 first for the
 * reduced types); the result as a double (exact). */
double ref_int_to_float(wk_dtype dt, int64_t v);

/* Element i (in elements from base) of a buffer of dtype dt. */
double ref_load_f(wk_dtype dt, const void *base, int64_t i);   /* any dtype, as f64 */
int64_t ref_load_i(wk_dtype dt, const void *base, int64_t i);  /* integer dtypes */
/* Stores x: rounded (float dtypes) or converted by the float -> integer rule (integer dtypes). */
void ref_store_f(wk_dtype dt, void *base, int64_t i, double x);
/* Stores v wrapped to the width of integer dtype dt. */
void ref_store_i(wk_dtype dt, void *base, int64_t i, int64_t v);

/* ---- layouts (ref_dtype.c) */
int64_t ref_count(const wk_layout *l);
/* Storage offset (elements) of row-major element i of l. */
int64_t ref_offset(const wk_layout *l, int64_t i);

/* ---- which (op, dtype) pairs docs/semantics.md defines (ref_defined.c) */
int ref_op_defined(wk_op op, wk_dtype dt);

/* ---- ops */
/* ref_unary.c: op in EXP..SIGMOID, AFFINE (p0 = mul, p1 = add), POWF (p0 = e), ELU (p0 = alpha). */
wk_status ref_unary(void *out, wk_op op, wk_dtype dt, double p0, double p1, const void *x,
                    const wk_layout *lx);
/* ref_unary.c: the formula of a float unary op (EXP..SIGMOID, POWF, ELU: p0) in f64. */
double ref_unary_f64(wk_op op, double x, double p0);
/* ref_binary.c: op in ADD..GEGLU_ERF (out dtype dt) or EQ..GE (out u8). */
wk_status ref_binary(void *out, wk_op op, wk_dtype dt, const void *a, const wk_layout *la,
                     const void *b, const wk_layout *lb);
/* ref_where.c: out = cond != 0 ? t : f; cond dtype cdt, values dt. */
wk_status ref_where_cond(void *out, wk_dtype cdt, wk_dtype dt, const void *c, const wk_layout *lc,
                         const void *t, const wk_layout *lt, const void *f, const wk_layout *lf);
/* ref_cast.c */
wk_status ref_to_dtype(void *out, wk_dtype from, wk_dtype to, const void *x, const wk_layout *lx);
/* ref_reduce.c: op in SUM..ARGMAX over dims[0..ndims); keepdim output (u32 for argmin/argmax). */
wk_status ref_reduce(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                     const int32_t *dims, int32_t ndims);
/* ref_copy.c: the in-place ops; base/dst is the whole destination storage. */
wk_status ref_const_set(void *base, wk_dtype dt, const wk_layout *l, const void *value);
wk_status ref_copy_strided_src(void *dst, wk_dtype dt, size_t dst_offset, const void *src,
                               const wk_layout *ls);
wk_status ref_copy2d(void *dst, wk_dtype dt, const void *src, size_t d1, size_t d2,
                     size_t src_stride1, size_t dst_stride1, size_t src_offset, size_t dst_offset);

/* ref_matmul.c: out [..., m, n] = a [..., m, k] @ b [..., k, n] (f64 sums, one rounding). */
wk_status ref_matmul(void *out, wk_dtype dt, const void *a, const wk_layout *la, const void *b,
                     const wk_layout *lb);
/* ref_conv.c: op in CONV1D..CONV_TRANSPOSE2D; shapes of wick.h. ref_conv_count gives the output
 * element count (0 and the status on an error). */
wk_status ref_conv(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                   const void *w, const wk_layout *lw, const wk_conv_params *p);
wk_status ref_conv_count(int64_t *count, wk_op op, const wk_layout *lx, const wk_layout *lw,
                         const wk_conv_params *p);
/* @marker:linalg */
/* ref_image.c: op AVG_POOL2D / MAX_POOL2D; op UPSAMPLE_* (out_dims: l_out, or h_out, w_out). */
wk_status ref_pool2d(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                     const wk_pool_params *p);
wk_status ref_upsample(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                       const int64_t *out_dims, int align_corners, double scale_h, double scale_w);
/* @marker:image */
/* ref_index.c: the indexing ops; ids of dtype idt. ref_scatter writes dst (the whole
 * destination buffer) in place (add = 0: scatter_set, 1: scatter_add_set); index_add writes out
 * (contiguous, dst's dims). */
wk_status ref_index_select(void *out, wk_dtype dt, const void *src, const wk_layout *ls,
                           wk_dtype idt, const void *ids, const wk_layout *li, int32_t dim);
wk_status ref_gather(void *out, wk_dtype dt, const void *src, const wk_layout *ls, wk_dtype idt,
                     const void *ids, const wk_layout *li, int32_t dim);
wk_status ref_scatter(void *dst, int add, wk_dtype dt, const wk_layout *ld, wk_dtype idt,
                      const void *ids, const wk_layout *li, const void *src, const wk_layout *ls,
                      int32_t dim);
wk_status ref_index_add(void *out, wk_dtype dt, const void *dst, const wk_layout *ld, wk_dtype idt,
                        const void *ids, const wk_layout *li, const void *src, const wk_layout *ls,
                        int32_t dim);
/* @marker:index */
/* ref_fused.c: candle-nn's fused ops; shape rules give WK_ERR_SHAPE. rope: op ROPE, ROPE_I or
 * ROPE_THD. arg_sort writes u32 indices. */
wk_status ref_softmax_last_dim(void *out, wk_dtype dt, const void *x, const wk_layout *lx);
wk_status ref_rms_norm(void *out, wk_dtype dt, const void *x, const wk_layout *lx,
                       const void *alpha, const wk_layout *la, float eps);
wk_status ref_layer_norm(void *out, wk_dtype dt, const void *x, const wk_layout *lx,
                         const void *alpha, const wk_layout *la, const void *beta,
                         const wk_layout *lb, float eps);
wk_status ref_rope(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                   const void *cos, const wk_layout *lc, const void *sin, const wk_layout *ls);
wk_status ref_arg_sort(void *out, wk_dtype dt, const void *x, const wk_layout *lx, int ascending);
/* @marker:fused */

#endif
