/* ref_quant.h: the float64 reference of the quantized ops (wk_dequantize, wk_qmatmul,
 * wk_qembedding). A second decoder of the GGML blocks, written from the format description
 * (ggml's loop structure: halves, 128-element chunks, packed scale words), sharing no code with
 * src/core/quant_blocks.h. Each element's value is computed exactly in f64 (small integers times
 * f16/f32 scales) and rounded once to f32, then stored to the output dtype (ref_store_f). */
#ifndef WK_REF_QUANT_H
#define WK_REF_QUANT_H

#include "wick.h"
#include <stdint.h>

/* Elements and bytes per block of qt (0 for a value that is not a block type). */
int64_t ref_qblock_elems(wk_qtype qt);
int64_t ref_qblock_bytes(wk_qtype qt);
/* y[0 .. ref_qblock_elems(qt)) <- the values of the block at b (each the f32 value, as f64). */
void ref_dequant_block(double *y, wk_qtype qt, const unsigned char *b);
/* out (n elements of dt) <- the first n / block elements of q decoded. */
wk_status ref_dequantize(void *out, wk_dtype dt, wk_qtype qt, const void *q, int64_t n);
/* out (rows, n) of dt = x (..., k) through lx @ W^T, W (n, k) quantized; f64 sums. */
wk_status ref_qmatmul(void *out, wk_dtype dt, const void *x, const wk_layout *lx, wk_qtype qt,
                      const void *w, int64_t n, int64_t k);
/* out (count(li), k) of dt: row ids[p] of W (rows, k) decoded; the dtype's max id is "none"
 * (zeros); another id outside [0, rows): WK_ERR_INDEX_OUT_OF_RANGE, nothing written. */
wk_status ref_qembedding(void *out, wk_dtype dt, wk_dtype idt, const void *ids,
                         const wk_layout *li, wk_qtype qt, const void *w, int64_t rows,
                         int64_t k);

#endif
