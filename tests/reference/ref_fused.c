/* ref_fused.c: reference of candle-nn's fused ops (docs/semantics.md, "Fused ops"): naive f64
 * from the f64 values of the inputs, one rounding to the output dtype at the end.
 *   softmax_last_dim: exp(x - max) / sum exp(x - max) per row of the last dim.
 *   rms_norm:   x / sqrt(mean(x^2) + eps) * alpha;  layer_norm: (x - mean) / sqrt(var + eps) *
 *               alpha + beta with the biased variance (two passes, the mean corrected by its
 *               residual so that a constant row has its value as the mean exactly).
 *   rope / rope_i / rope_thd: the rotation of the pairs (i, i + D/2) or (2i, 2i + 1) by
 *               cos[t, i], sin[t, i] (cos/sin (Tc >= T, D/2) or (B, Tc >= T, D/2)).
 *   arg_sort_last_dim: insertion sort of indices (stable); NaN last ascending, first descending;
 *               integers compared exactly as int64.
 * Shape rules return WK_ERR_SHAPE, as the library must. */
#include "ref.h"
#include <math.h>

/* Row r of the last dim: element j is at ref_offset(l, r * d + j). */
static double ld(wk_dtype dt, const void *x, const wk_layout *l, int64_t i)
{
    return ref_load_f(dt, x, ref_offset(l, i));
}

wk_status ref_softmax_last_dim(void *out, wk_dtype dt, const void *x, const wk_layout *lx)
{
    if (lx->rank < 1)
        return WK_ERR_SHAPE;
    const int64_t n = ref_count(lx), d = lx->dims[lx->rank - 1];
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < d; j++) {
            double v = ld(dt, x, lx, r * d + j);
            if (v > m)
                m = v;
        }
        for (int64_t j = 0; j < d; j++)
            sum += exp(ld(dt, x, lx, r * d + j) - m);
        for (int64_t j = 0; j < d; j++)
            ref_store_f(dt, out, r * d + j, exp(ld(dt, x, lx, r * d + j) - m) / sum);
    }
    return WK_OK;
}

static int vec_ok(const wk_layout *lx, const wk_layout *lp)
{
    return lp->rank == 1 && lp->dims[0] == lx->dims[lx->rank - 1];
}

wk_status ref_rms_norm(void *out, wk_dtype dt, const void *x, const wk_layout *lx,
                       const void *alpha, const wk_layout *la, float eps)
{
    if (lx->rank < 1 || !vec_ok(lx, la))
        return WK_ERR_SHAPE;
    const int64_t n = ref_count(lx), d = lx->dims[lx->rank - 1];
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        double s2 = 0;
        for (int64_t j = 0; j < d; j++) {
            double v = ld(dt, x, lx, r * d + j);
            s2 += v * v;
        }
        double rms = sqrt(s2 / (double)d + (double)eps);
        for (int64_t j = 0; j < d; j++)
            ref_store_f(dt, out, r * d + j, ld(dt, x, lx, r * d + j) / rms * ld(dt, alpha, la, j));
    }
    return WK_OK;
}

wk_status ref_layer_norm(void *out, wk_dtype dt, const void *x, const wk_layout *lx,
                         const void *alpha, const wk_layout *la, const void *beta,
                         const wk_layout *lb, float eps)
{
    if (lx->rank < 1 || !vec_ok(lx, la) || !vec_ok(lx, lb))
        return WK_ERR_SHAPE;
    const int64_t n = ref_count(lx), d = lx->dims[lx->rank - 1];
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        double s = 0, s2 = 0, c = 0;
        for (int64_t j = 0; j < d; j++)
            s += ld(dt, x, lx, r * d + j);
        double mean = s / (double)d;
        /* the mean corrected by the mean residual: the value itself for a constant row (whose
         * residuals are one small exact value), so that (x - mean) is 0 there, as it is for
         * the exact mean */
        for (int64_t j = 0; j < d; j++)
            c += ld(dt, x, lx, r * d + j) - mean;
        if (isfinite(c))
            mean += c / (double)d;
        for (int64_t j = 0; j < d; j++) {
            double v = ld(dt, x, lx, r * d + j) - mean;
            s2 += v * v;
        }
        double sd = sqrt(s2 / (double)d + (double)eps);
        for (int64_t j = 0; j < d; j++)
            ref_store_f(dt, out, r * d + j,
                        (ld(dt, x, lx, r * d + j) - mean) / sd * ld(dt, alpha, la, j) +
                            ld(dt, beta, lb, j));
    }
    return WK_OK;
}

wk_status ref_rope(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                   const void *cos, const wk_layout *lc, const void *sin, const wk_layout *ls)
{
    int thd = op == WK_OP_ROPE_THD, inter = op == WK_OP_ROPE_I;
    if (lx->rank != 4 || lx->dims[3] % 2 != 0 || lc->rank != ls->rank)
        return WK_ERR_SHAPE;
    for (int k = 0; k < lc->rank; k++)
        if (lc->dims[k] != ls->dims[k])
            return WK_ERR_SHAPE;
    const int64_t B = lx->dims[0], H = lx->dims[thd ? 2 : 1], T = lx->dims[thd ? 1 : 2];
    const int64_t D = lx->dims[3], h = D / 2;
    const int cr = lc->rank;
    if ((cr != 2 && cr != 3) || lc->dims[cr - 1] != h || lc->dims[cr - 2] < T ||
        (cr == 3 && lc->dims[0] != B))
        return WK_ERR_SHAPE;
    const int64_t tc = lc->dims[cr - 2];
    for (int64_t b = 0; b < B; b++)
        for (int64_t hh = 0; hh < H; hh++)
            for (int64_t t = 0; t < T; t++) {
                /* linear index of element 0 of the row in x's dims order */
                int64_t row = thd ? ((b * T + t) * H + hh) * D : ((b * H + hh) * T + t) * D;
                int64_t crow = (cr == 3 ? b * tc + t : t) * h;
                for (int64_t i = 0; i < h; i++) {
                    int64_t p0 = inter ? 2 * i : i, p1 = inter ? 2 * i + 1 : i + h;
                    double x0 = ld(dt, x, lx, row + p0), x1 = ld(dt, x, lx, row + p1);
                    double c = ld(dt, cos, lc, crow + i), s = ld(dt, sin, ls, crow + i);
                    ref_store_f(dt, out, row + p0, x0 * c - x1 * s);
                    ref_store_f(dt, out, row + p1, x0 * s + x1 * c);
                }
            }
    return WK_OK;
}

/* 1 if element a goes strictly before element b. */
static int sort_before(wk_dtype dt, const void *x, int64_t oa, int64_t ob, int asc)
{
    if (!ref_is_float(dt)) {
        int64_t a = ref_load_i(dt, x, oa), b = ref_load_i(dt, x, ob);
        return asc ? a < b : a > b;
    }
    double a = ref_load_f(dt, x, oa), b = ref_load_f(dt, x, ob);
    if (isnan(a) || isnan(b)) /* NaN: last ascending, first descending; NaNs tie */
        return asc ? !isnan(a) : !isnan(b);
    return asc ? a < b : a > b;
}

wk_status ref_arg_sort(void *out, wk_dtype dt, const void *x, const wk_layout *lx, int ascending)
{
    if (lx->rank < 1 || lx->dims[lx->rank - 1] > ((int64_t)1 << 32))
        return WK_ERR_SHAPE;
    const int64_t n = ref_count(lx), d = lx->dims[lx->rank - 1];
    uint32_t *o = out;
    for (int64_t r = 0; d > 0 && r < n / d; r++) {
        uint32_t *idx = o + r * d;
        for (int64_t j = 0; j < d; j++) {
            int64_t k = j;
            for (; k > 0 && sort_before(dt, x, ref_offset(lx, r * d + j),
                                        ref_offset(lx, r * d + idx[k - 1]), ascending);
                 k--)
                idx[k] = idx[k - 1];
            idx[k] = (uint32_t)j;
        }
    }
    return WK_OK;
}
