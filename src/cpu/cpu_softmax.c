/* cpu_softmax.c: the CPU softmax over the last dim (candle-nn's softmax_last_dim), float dtypes.
 * Per row: m = max, e_j = exp(x_j - m), out_j = e_j / sum(e). Subtracting the row max keeps exp
 * in range; bf16/f16/f8e4m3 compute and accumulate in f32 and round once, f32 in f32, f64 in
 * f64. Fused and vectorised per row (cpu_rows.h block kernels, exp from cpu_vmath.h): f32/f64
 * keep e_j in the output between the passes; the reduced types convert blocks of the row into a
 * buffer and recompute e_j (the same value) in the last pass. Sums use WK_ROWS_LANES partial sums
 * in a fixed order, so a row's result does not depend on the thread count. Any layout: each row
 * is read through its own start offset and the last dim's stride; rows strided in memory (a
 * transposed x) are first copied to contiguous rows. Rows run in parallel above
 * WK_CPU_PAR_THRESHOLD elements. */
#include "cpu_elem.h"
#include "cpu_rows.h"
#include "cpu_vmath.h"
#include <math.h>

/* The row loop: parallel above WK_CPU_PAR_THRESHOLD elements (rows and d in scope). */
#define SM_PAR_ROWS \
    _Pragma("omp parallel for schedule(static) if (rows > 1 && rows * d >= WK_CPU_PAR_THRESHOLD)")

/* Per compute type: its block kernels (f32/f64) and vector exp. */
#define RK_float(fn) wk_rows_##fn##_f32
#define RK_double(fn) wk_rows_##fn##_f64
#define VM_float wk_vm_f32
#define VM_double wk_vm_f64
/* DIRECT: the storage type is the compute type, so the output holds e_j between passes. */
#define SM_DIRECT_bf16 0
#define SM_DIRECT_f16 0
#define SM_DIRECT_f32 1
#define SM_DIRECT_f64 1
#define SM_DIRECT_f8e4m3 0

#define DEF_SOFTMAX_ROW(E, s, T, CT)                                                            \
    /* cnt elements of x (stride sx) as CT: x itself for a unit-stride row of the compute type, \
     * else converted into buf. */                                                              \
    static inline const CT *sm_load_##s(CT *buf, const T *x, int64_t sx, int64_t cnt)           \
    {                                                                                           \
        if (SM_DIRECT_##s && sx == 1)                                                           \
            return (const CT *)(const void *)x;                                                 \
        for (int64_t i = 0; i < cnt; i++)                                                       \
            buf[i] = wk_cpu_ld_##s(x[i * sx]);                                                  \
        return buf;                                                                             \
    }                                                                                           \
    static void softmax_row_##s(T *o, const T *x, int64_t sx, int64_t d)                        \
    {                                                                                           \
        CT buf[WK_ROWS_BLOCK], acc[WK_ROWS_LANES];                                              \
        for (int k = 0; k < WK_ROWS_LANES; k++)                                                 \
            acc[k] = -INFINITY;                                                                 \
        for (int64_t b = 0; b < d; b += WK_ROWS_BLOCK) {                                        \
            const int64_t cnt = d - b < WK_ROWS_BLOCK ? d - b : WK_ROWS_BLOCK;                  \
            RK_##CT(max)(acc, sm_load_##s(buf, x + b * sx, sx, cnt), cnt);                      \
        }                                                                                       \
        const CT m = RK_##CT(fold_max)(acc);                                                    \
        for (int k = 0; k < WK_ROWS_LANES; k++)                                                 \
            acc[k] = 0;                                                                         \
        for (int64_t b = 0; b < d; b += WK_ROWS_BLOCK) {                                        \
            const int64_t cnt = d - b < WK_ROWS_BLOCK ? d - b : WK_ROWS_BLOCK;                  \
            CT *e = SM_DIRECT_##s ? (CT *)(void *)(o + b) : buf;                                \
            RK_##CT(sub)(e, sm_load_##s(buf, x + b * sx, sx, cnt), cnt, m);                     \
            VM_##CT(WK_VM_EXP, e, e, cnt, 0);                                                   \
            RK_##CT(sum)(acc, e, cnt, 0);                                                       \
        }                                                                                       \
        const CT sum = RK_##CT(fold_sum)(acc);                                                  \
        for (int64_t b = 0; b < d; b += WK_ROWS_BLOCK) {                                        \
            const int64_t cnt = d - b < WK_ROWS_BLOCK ? d - b : WK_ROWS_BLOCK;                  \
            if (SM_DIRECT_##s) {                                                                \
                CT *e = (CT *)(void *)(o + b);                                                  \
                RK_##CT(div)(e, e, cnt, sum);                                                   \
                continue;                                                                       \
            }                                                                                   \
            RK_##CT(sub)(buf, sm_load_##s(buf, x + b * sx, sx, cnt), cnt, m);                   \
            VM_##CT(WK_VM_EXP, buf, buf, cnt, 0);                                               \
            RK_##CT(div)(buf, buf, cnt, sum);                                                   \
            for (int64_t i = 0; i < cnt; i++)                                                   \
                o[b + i] = wk_cpu_st_##s(buf[i]);                                               \
        }                                                                                       \
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
