/* cpu_softmax.c: the CPU softmax over the last dim (candle-nn's softmax_last_dim), float dtypes.
 * Per row: m = max, e_j = exp(x_j - m), out_j = e_j / sum(e). Subtracting the row max keeps exp
 * in range; bf16/f16/f8e4m3 compute and accumulate in f32 and round once, f32 in f32, f64 in
 * f64. Any layout: each row is read through its own start offset and the last dim's stride;
 * rows strided in memory (a transposed x) are first copied to contiguous rows. Rows run in
 * parallel above WK_CPU_PAR_THRESHOLD elements. */
#include "cpu_elem.h"
#include <math.h>

static inline float sm_exp_float(float v) { return expf(v); }
static inline double sm_exp_double(double v) { return exp(v); }

/* One row of D elements at x (stride sx) into o (contiguous). f32/f64 keep e_j in o between the
 * passes (INPLACE 1); the reduced types recompute it, which gives the same value. */
/* The row loop: parallel above WK_CPU_PAR_THRESHOLD elements (rows and d in scope). */
#define SM_PAR_ROWS \
    _Pragma("omp parallel for schedule(static) if (rows > 1 && rows * d >= WK_CPU_PAR_THRESHOLD)")

#define DEF_SOFTMAX_ROW(E, s, T, CT)                                                           \
    static void softmax_row_##s(T *o, const T *x, int64_t sx, int64_t d)                        \
    {                                                                                           \
        CT m = -INFINITY;                                                                       \
        for (int64_t j = 0; j < d; j++) {                                                       \
            const CT v = wk_cpu_ld_##s(x[j * sx]);                                              \
            if (v > m)                                                                          \
                m = v;                                                                          \
        }                                                                                       \
        CT sum = 0;                                                                             \
        for (int64_t j = 0; j < d; j++) {                                                       \
            const CT e = sm_exp_##CT(wk_cpu_ld_##s(x[j * sx]) - m);                             \
            sum += e;                                                                           \
            SM_KEEP_##s(o[j] = e);                                                              \
        }                                                                                       \
        for (int64_t j = 0; j < d; j++)                                                         \
            o[j] = wk_cpu_st_##s(SM_GET_##s(o[j], x[j * sx], m) / sum);                         \
    }                                                                                           \
    static void softmax_##s(void *out, const void *x, const wk_layout *lx, int64_t rows,        \
                            int64_t d)                                                          \
    {                                                                                           \
        const int64_t sx = lx->strides[lx->rank - 1];                                           \
        SM_PAR_ROWS                                                                             \
        for (int64_t r = 0; r < rows; r++)                                                      \
            softmax_row_##s((T *)out + r * d, (const T *)x + wk_layout_offset_of(lx, r * d), sx, \
                            d);                                                                 \
    }

/* f32/f64: e_j stays in the output; reduced types: recomputed from x. */
#define SM_KEEP_f32(S) S
#define SM_KEEP_f64(S) S
#define SM_KEEP_bf16(S) ((void)0)
#define SM_KEEP_f16(S) ((void)0)
#define SM_KEEP_f8e4m3(S) ((void)0)
#define SM_GET_f32(ov, xv, m) (ov)
#define SM_GET_f64(ov, xv, m) (ov)
#define SM_GET_bf16(ov, xv, m) expf(wk_cpu_ld_bf16(xv) - (m))
#define SM_GET_f16(ov, xv, m) expf(wk_cpu_ld_f16(xv) - (m))
#define SM_GET_f8e4m3(ov, xv, m) expf(wk_cpu_ld_f8e4m3(xv) - (m))
WK_CPU_FLOAT_TYPES(DEF_SOFTMAX_ROW)

typedef void (*softmax_fn)(void *out, const void *x, const wk_layout *lx, int64_t rows, int64_t d);
#define SM_ENTRY(E, s, T, CT) [WK_DTYPE_##E] = softmax_##s,
static const softmax_fn softmax_fns[WK_DTYPE_COUNT] = {WK_CPU_FLOAT_TYPES(SM_ENTRY)};

/* out (contiguous, dims of lx) = softmax of x over the last dim; lx->rank >= 1. */
wk_status wk_cpu_softmax(wk_device *dev, wk_dtype dt, void *out, const void *x, const wk_layout *lx)
{
    if (!wk_dtype_valid(dt) || !softmax_fns[dt] || lx->rank < 1)
        return wk_err(WK_ERR_DTYPE, "cpu softmax_last_dim: not defined for %s (rank %d)",
                      wk_dtype_name(dt), (int)lx->rank);
    const int64_t d = lx->dims[lx->rank - 1];
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    void *tmp;
    wk_layout lt;
    wk_status st = wk_cpu_rows_contiguous(dev, dt, x, lx, &tmp, &lt, "softmax_last_dim");
    if (st)
        return st;
    softmax_fns[dt](out, tmp ? tmp : x, tmp ? &lt : lx, n / d, d);
    wk_free(tmp);
    return WK_OK;
}
