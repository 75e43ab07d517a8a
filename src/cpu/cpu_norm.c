/* cpu_norm.c: the CPU rms_norm and layer_norm over the last dim D (candle-nn's fused norms),
 * float dtypes; alpha and beta are rank-1 (D) of x's dtype, any strides.
 *   rms_norm:   out = x / sqrt(sum(x^2) / D + eps) * alpha
 *   layer_norm: m = sum(x) / D, var = sum((x - m)^2) / D (biased),
 *               out = (x - m) / sqrt(var + eps) * alpha + beta
 * layer_norm takes two passes over the row (mean, then centred squares) rather than Candle's
 * E[x^2] - m^2, which cancels when |m| >> std; the second pass also sums the residuals x - m and
 * corrects the mean by their mean (the corrected two-pass algorithm), so that a constant row has
 * its value as the mean exactly and out = beta exactly. The row sums accumulate in double (a
 * long f32 row summed in f32 loses log2(D) bits), the rest computes in f32 for
 * bf16/f16/f8e4m3/f32 and in f64 for f64, rounding once on store. Rows are read through their start offsets and the last dim's stride
 * (rows strided in memory are first copied to contiguous rows) and run in parallel above
 * WK_CPU_PAR_THRESHOLD elements. */
#include "cpu_elem.h"
#include <math.h>

static inline float nm_sqrt_float(float v) { return sqrtf(v); }
static inline double nm_sqrt_double(double v) { return sqrt(v); }

/* One row: x (stride sx), alpha (stride sa), beta (stride sb; NULL for rms_norm) -> o. */
/* The row loop: parallel above WK_CPU_PAR_THRESHOLD elements (rows and d in scope). */
#define NM_PAR_ROWS \
    _Pragma("omp parallel for schedule(static) if (rows > 1 && rows * d >= WK_CPU_PAR_THRESHOLD)")

#define DEF_NORM(E, s, T, CT)                                                                  \
    static void norm_row_##s(T *o, const T *x, int64_t sx, const T *a, int64_t sa, const T *b,  \
                             int64_t sb, int64_t d, CT eps)                                     \
    {                                                                                           \
        const double n = (double)d;                                                             \
        if (!b) {                                                                               \
            double sum2 = 0;                                                                    \
            for (int64_t j = 0; j < d; j++) {                                                   \
                const CT v = wk_cpu_ld_##s(x[j * sx]);                                          \
                sum2 += (double)v * (double)v;                                                  \
            }                                                                                   \
            const CT rms = nm_sqrt_##CT((CT)(sum2 / n) + eps);                                  \
            for (int64_t j = 0; j < d; j++)                                                     \
                o[j] = wk_cpu_st_##s(wk_cpu_ld_##s(x[j * sx]) / rms * wk_cpu_ld_##s(a[j * sa])); \
            return;                                                                             \
        }                                                                                       \
        double sum = 0;                                                                         \
        for (int64_t j = 0; j < d; j++)                                                         \
            sum += (double)wk_cpu_ld_##s(x[j * sx]);                                            \
        const CT m0 = (CT)(sum / n);                                                            \
        double res = 0, sum2 = 0;                                                               \
        for (int64_t j = 0; j < d; j++) {                                                       \
            const double v = (double)(wk_cpu_ld_##s(x[j * sx]) - m0);                           \
            res += v;                                                                           \
            sum2 += v * v;                                                                      \
        }                                                                                       \
        const double rm = res / n, var = sum2 / n - rm * rm;                                    \
        const CT m = isfinite(rm) ? (CT)((double)m0 + rm) : m0;                                 \
        const CT sd = nm_sqrt_##CT((CT)(var < 0 ? 0 : var) + eps);                              \
        for (int64_t j = 0; j < d; j++)                                                         \
            o[j] = wk_cpu_st_##s((wk_cpu_ld_##s(x[j * sx]) - m) / sd * wk_cpu_ld_##s(a[j * sa]) + \
                                 wk_cpu_ld_##s(b[j * sb]));                                     \
    }                                                                                           \
    static void norm_##s(void *out, const void *x, const wk_layout *lx, const void *alpha,      \
                         const wk_layout *la, const void *beta, const wk_layout *lb,            \
                         int64_t rows, int64_t d, float eps)                                    \
    {                                                                                           \
        const int64_t sx = lx->strides[lx->rank - 1];                                           \
        const T *a = (const T *)alpha + la->offset;                                             \
        const T *b = beta ? (const T *)beta + lb->offset : NULL;                                \
        const int64_t sa = la->strides[0], sb = beta ? lb->strides[0] : 0;                      \
        NM_PAR_ROWS                                                                             \
        for (int64_t r = 0; r < rows; r++)                                                      \
            norm_row_##s((T *)out + r * d, (const T *)x + wk_layout_offset_of(lx, r * d), sx, a, \
                         sa, b, sb, d, (CT)eps);                                                \
    }
WK_CPU_FLOAT_TYPES(DEF_NORM)

typedef void (*norm_fn)(void *out, const void *x, const wk_layout *lx, const void *alpha,
                        const wk_layout *la, const void *beta, const wk_layout *lb, int64_t rows,
                        int64_t d, float eps);
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
    norm_fns[dt](out, tmp ? tmp : x, tmp ? &lt : lx, alpha, la, layer ? beta : NULL, lb, n / d, d,
                 eps);
    wk_free(tmp);
    return WK_OK;
}
