/* cpu_norm.c: the CPU rms_norm and layer_norm over the last dim D (candle-nn's fused norms), and
 * wick's add_rms_norm / add_layer_norm (the binary add, then the norm of its result), float
 * dtypes; alpha and beta are rank-1 (D) of x's dtype, any strides.
 *   rms_norm:   out = x / sqrt(sum(x^2) / D + eps) * alpha
 *   layer_norm: m = sum(x) / D, var = sum((x - m)^2) / D (biased),
 *               out = (x - m) / sqrt(var + eps) * alpha + beta
 * layer_norm takes two passes over the row (mean, then centred squares) rather than Candle's
 * E[x^2] - m^2, which cancels when |m| >> std; the mean is taken of x - x_0 (x_0 the row's first
 * element) and added back, m = x_0 + sum(x - x_0) / D, so a constant row has m = x_0 exactly,
 * x - m = 0 and out = beta exactly. bf16/f16/f8e4m3 compute in f32 and round once, f32 in f32,
 * f64 in f64. Fused and vectorised per row with the block kernels of cpu_rows.h (WK_ROWS_LANES
 * partial sums in a fixed order: the same bits on any thread count); alpha and beta are first
 * made contiguous in the compute type (once per call, unless they already are). Rows are read
 * through their start offsets and the last dim's stride (rows strided in memory are first copied
 * to contiguous rows) and run in parallel above WK_CPU_PAR_THRESHOLD elements. */
#include "cpu_elem.h"
#include "cpu_rows.h"
#include <math.h>

static inline float nm_sqrt_float(float v) { return sqrtf(v); }
static inline double nm_sqrt_double(double v) { return sqrt(v); }

/* The row loop: parallel above WK_CPU_PAR_THRESHOLD elements (rows and d in scope). */
#define NM_PAR_ROWS \
    _Pragma("omp parallel for schedule(static) if (rows > 1 && rows * d >= WK_CPU_PAR_THRESHOLD)")

#define RK_float(fn) wk_rows_##fn##_f32
#define RK_double(fn) wk_rows_##fn##_f64
#define NM_DIRECT_bf16 0
#define NM_DIRECT_f16 0
#define NM_DIRECT_f32 1
#define NM_DIRECT_f64 1
#define NM_DIRECT_f8e4m3 0

#define DEF_NORM(E, s, T, CT)                                                                  \
    /* cnt elements of x (stride sx) as CT: x itself when it already is, else through buf. */  \
    static inline const CT *nm_load_##s(CT *buf, const T *x, int64_t sx, int64_t cnt)          \
    {                                                                                          \
        if (NM_DIRECT_##s && sx == 1)                                                          \
            return (const CT *)(const void *)x;                                                \
        for (int64_t i = 0; i < cnt; i++)                                                      \
            buf[i] = wk_cpu_ld_##s(x[i * sx]);                                                 \
        return buf;                                                                            \
    }                                                                                          \
    /* One row: x (stride sx) -> o; a, b contiguous CT (b NULL for rms_norm). */               \
    static void norm_row_##s(T *o, const T *x, int64_t sx, const CT *a, const CT *b, int64_t d, \
                             CT eps)                                                           \
    {                                                                                          \
        CT buf[WK_ROWS_BLOCK], acc[WK_ROWS_LANES];                                             \
        const CT n = (CT)d;                                                                    \
        CT m = 0;                                                                              \
        if (b) {                                                                               \
            const CT x0 = wk_cpu_ld_##s(x[0]);                                                 \
            for (int k = 0; k < WK_ROWS_LANES; k++)                                            \
                acc[k] = 0;                                                                    \
            for (int64_t j = 0; j < d; j += WK_ROWS_BLOCK) {                                   \
                const int64_t cnt = d - j < WK_ROWS_BLOCK ? d - j : WK_ROWS_BLOCK;             \
                RK_##CT(sum)(acc, nm_load_##s(buf, x + j * sx, sx, cnt), cnt, x0);             \
            }                                                                                  \
            m = x0 + RK_##CT(fold_sum)(acc) / n;                                               \
        }                                                                                      \
        for (int k = 0; k < WK_ROWS_LANES; k++)                                                \
            acc[k] = 0;                                                                        \
        for (int64_t j = 0; j < d; j += WK_ROWS_BLOCK) {                                       \
            const int64_t cnt = d - j < WK_ROWS_BLOCK ? d - j : WK_ROWS_BLOCK;                 \
            RK_##CT(sumsq)(acc, nm_load_##s(buf, x + j * sx, sx, cnt), cnt, m);                \
        }                                                                                      \
        const CT sd = nm_sqrt_##CT(RK_##CT(fold_sum)(acc) / n + eps);                          \
        for (int64_t j = 0; j < d; j += WK_ROWS_BLOCK) {                                       \
            const int64_t cnt = d - j < WK_ROWS_BLOCK ? d - j : WK_ROWS_BLOCK;                 \
            const CT *p = nm_load_##s(buf, x + j * sx, sx, cnt);                               \
            CT *y = NM_DIRECT_##s ? (CT *)(void *)(o + j) : buf;                               \
            if (b)                                                                             \
                RK_##CT(ln)(y, p, a + j, b + j, cnt, m, sd);                                   \
            else                                                                               \
                RK_##CT(rms)(y, p, a + j, cnt, sd);                                            \
            if (!NM_DIRECT_##s)                                                                \
                for (int64_t i = 0; i < cnt; i++)                                              \
                    o[j + i] = wk_cpu_st_##s(buf[i]);                                          \
        }                                                                                      \
    }                                                                                          \
    /* v (d elements, stride sv) as contiguous CT: v itself, or a copy in *tmp (NULL: no     \
     * memory). */                                                                             \
    static const CT *nm_param_##s(const T *v, int64_t sv, int64_t d, CT **tmp)                 \
    {                                                                                          \
        *tmp = NULL;                                                                           \
        if (NM_DIRECT_##s && sv == 1)                                                          \
            return (const CT *)(const void *)v;                                                \
        CT *t = wk_malloc((size_t)d * sizeof(CT));                                             \
        if (!t)                                                                                \
            return NULL;                                                                       \
        for (int64_t j = 0; j < d; j++)                                                        \
            t[j] = wk_cpu_ld_##s(v[j * sv]);                                                   \
        *tmp = t;                                                                              \
        return t;                                                                              \
    }                                                                                          \
    static wk_status norm_##s(void *out, const void *x, const wk_layout *lx, const void *alpha, \
                              const wk_layout *la, const void *beta, const wk_layout *lb,      \
                              int64_t rows, int64_t d, float eps)                              \
    {                                                                                          \
        const int64_t sx = lx->strides[lx->rank - 1];                                          \
        CT *ta = NULL, *tb = NULL;                                                             \
        const CT *a = nm_param_##s((const T *)alpha + la->offset, la->strides[0], d, &ta);     \
        const CT *b = beta ? nm_param_##s((const T *)beta + lb->offset, lb->strides[0], d, &tb) \
                           : NULL;                                                             \
        if (!a || (beta && !b)) {                                                              \
            wk_free(ta);                                                                       \
            wk_free(tb);                                                                       \
            return wk_err(WK_ERR_OUT_OF_MEMORY, "cpu norm: cannot allocate %lld parameters",   \
                          (long long)d);                                                       \
        }                                                                                      \
        NM_PAR_ROWS                                                                            \
        for (int64_t r = 0; r < rows; r++)                                                     \
            norm_row_##s((T *)out + r * d, (const T *)x + wk_layout_offset_of(lx, r * d), sx, a, \
                         b, d, (CT)eps);                                                       \
        wk_free(ta);                                                                           \
        wk_free(tb);                                                                           \
        return WK_OK;                                                                          \
    }
WK_CPU_FLOAT_TYPES(DEF_NORM)

typedef wk_status (*norm_fn)(void *out, const void *x, const wk_layout *lx, const void *alpha,
                             const wk_layout *la, const void *beta, const wk_layout *lb,
                             int64_t rows, int64_t d, float eps);
#define NORM_ENTRY(E, s, T, CT) [WK_DTYPE_##E] = norm_##s,
static const norm_fn norm_fns[WK_DTYPE_COUNT] = {WK_CPU_FLOAT_TYPES(NORM_ENTRY)};

/* out (contiguous, dims of lx) = op(x) over the last dim; op RMS_NORM (beta NULL) or LAYER_NORM;
 * la (and lb) rank 1 of dims (D), checked by the front end. */
wk_status wk_cpu_norm(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *alpha, const wk_layout *la,
                      const void *beta, const wk_layout *lb, float eps)
{
    const bool layer = op == WK_OP_LAYER_NORM;
    if (!wk_dtype_valid(dt) || !norm_fns[dt] || (op != WK_OP_RMS_NORM && !layer) ||
        layer != (beta != NULL) || lx->rank < 1)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "cpu norm: bad call (%s, %s)", wk_op_name(op),
                      wk_dtype_name(dt));
    const int64_t d = lx->dims[lx->rank - 1];
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    void *tmp;
    wk_layout lt;
    wk_status st = wk_cpu_rows_contiguous(dev, dt, x, lx, &tmp, &lt, wk_op_name(op));
    if (st)
        return st;
    st = norm_fns[dt](out, tmp ? tmp : x, tmp ? &lt : lx, alpha, la, layer ? beta : NULL, lb,
                      n / d, d, eps);
    wk_free(tmp);
    return st;
}

/* sum (contiguous) = x + r (the binary ADD), then out = op(sum): the two ops in turn, so out is
 * op(sum) bit for bit by construction. r of another dtype (rdt: 16-bit under f32 x) is first
 * converted to x's (exact). */
wk_status wk_cpu_add_norm(wk_device *dev, wk_op op, wk_dtype dt, wk_dtype rdt, void *sum,
                          void *out, const void *x, const wk_layout *lx, const void *r,
                          const wk_layout *lr, const void *alpha, const wk_layout *la,
                          const void *beta, const wk_layout *lb, float eps)
{
    wk_layout ls;
    wk_status st = wk_layout_contiguous(&ls, lx->rank, lx->dims);
    if (st != WK_OK)
        return st;
    void *tr = NULL;
    if (rdt != dt) {
        const int64_t n = wk_layout_elem_count(lr);
        if (!(tr = wk_malloc((size_t)(n > 0 ? n : 1) * wk_dtype_size(dt))))
            return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: r widened (%lld elements)", wk_op_name(op),
                          (long long)n);
        if ((st = wk_cpu_to_dtype(dev, rdt, dt, tr, r, lr)) != WK_OK) {
            wk_free(tr);
            return st;
        }
    }
    st = wk_cpu_binary(dev, WK_OP_ADD, dt, sum, x, lx, tr ? tr : r, tr ? &ls : lr);
    wk_free(tr);
    if (st != WK_OK)
        return st;
    return wk_cpu_norm(dev, op, dt, out, sum, &ls, alpha, la, beta, lb, eps);
}
