/* ref_image.c: reference of the pools and the upsampling ops (docs/semantics.md, "Pooling and
 * upsampling"), naive loops over the output with explicit strides.
 * avg_pool2d: the window sum in f64 divided by kh*kw, rounded once. max_pool2d: the first
 * largest element (the first NaN if any), copied bit for bit. nearest: Candle's
 * min(in - 1, (int)(dst * (in / out))) in f64, elements copied. bilinear: PyTorch's source
 * coordinate and weights (a dim with out = in is copied), all in f64, rounded once. */
#include "ref.h"
#include <string.h>

/* Storage offset of x[n][c][h][w] (rank 4), or x[n][c][w] for rank 3 (h ignored). */
static int64_t off4(const wk_layout *l, int64_t n, int64_t c, int64_t h, int64_t w)
{
    if (l->rank == 3)
        return l->offset + n * l->strides[0] + c * l->strides[1] + w * l->strides[2];
    return l->offset + n * l->strides[0] + c * l->strides[1] + h * l->strides[2] + w * l->strides[3];
}

wk_status ref_pool2d(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                     const wk_pool_params *p)
{
    if (!ref_op_defined(op, dt))
        return WK_ERR_DTYPE;
    if (lx->rank != 4)
        return WK_ERR_SHAPE;
    if (p->kernel[0] < 1 || p->kernel[1] < 1 || p->stride[0] < 1 || p->stride[1] < 1)
        return WK_ERR_INVALID_ARGUMENT;
    if (p->kernel[0] > lx->dims[2] || p->kernel[1] > lx->dims[3])
        return WK_ERR_SHAPE;
    const int64_t kh = p->kernel[0], kw = p->kernel[1];
    const int64_t oh = (lx->dims[2] - kh) / p->stride[0] + 1, ow = (lx->dims[3] - kw) / p->stride[1] + 1;
    const size_t es = ref_dtype_size(dt);
    int64_t o = 0;
    for (int64_t n = 0; n < lx->dims[0]; n++)
        for (int64_t c = 0; c < lx->dims[1]; c++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++, o++) {
                    double sum = 0;
                    int64_t best = -1; /* storage offset of the max so far */
                    int nan = 0;
                    for (int64_t a = 0; a < kh; a++)
                        for (int64_t b = 0; b < kw; b++) {
                            const int64_t at = off4(lx, n, c, i * p->stride[0] + a, j * p->stride[1] + b);
                            if (op == WK_OP_AVG_POOL2D) {
                                sum += ref_load_f(dt, x, at);
                                continue;
                            }
                            if (nan)
                                continue;
                            if (ref_is_float(dt)) {
                                const double v = ref_load_f(dt, x, at);
                                if (v != v) {
                                    best = at;
                                    nan = 1;
                                } else if (best < 0 || v > ref_load_f(dt, x, best)) {
                                    best = at;
                                }
                            } else if (best < 0 || ref_load_i(dt, x, at) > ref_load_i(dt, x, best)) {
                                best = at;
                            }
                        }
                    if (op == WK_OP_AVG_POOL2D)
                        ref_store_f(dt, out, o, sum / (double)(kh * kw));
                    else
                        memcpy((unsigned char *)out + (size_t)o * es,
                               (const unsigned char *)x + (size_t)best * es, es);
                }
    return WK_OK;
}

static int64_t nearest_src(int64_t d, int64_t in, int64_t out)
{
    const int64_t s = (int64_t)((double)d * ((double)in / (double)out));
    return s < in - 1 ? s : in - 1;
}

/* PyTorch's source index and weights along one dim, in f64. */
static void linear_src(int64_t *i0, int64_t *i1, double *l1, int64_t d, int64_t in, int64_t out,
                       int ac, double scale)
{
    double src;
    if (out == in) { /* PyTorch's per-dim shortcut: a copy */
        *i0 = *i1 = d;
        *l1 = 0;
        return;
    }
    if (ac) {
        src = out > 1 ? (double)d * (double)(in - 1) / (double)(out - 1) : 0.0;
    } else {
        const double ratio = scale > 0 ? 1.0 / scale : (double)in / (double)out;
        src = ((double)d + 0.5) * ratio - 0.5;
        if (src < 0)
            src = 0;
    }
    int64_t k = src < (double)(in - 1) ? (int64_t)src : in - 1;
    double lam = src - (double)k;
    *i0 = k;
    *i1 = k < in - 1 ? k + 1 : k;
    *l1 = lam < 0 ? 0 : lam > 1 ? 1 : lam;
}

wk_status ref_upsample(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                       const int64_t *out_dims, int align_corners, double scale_h, double scale_w)
{
    if (!ref_op_defined(op, dt))
        return WK_ERR_DTYPE;
    const int one_d = op == WK_OP_UPSAMPLE_NEAREST1D;
    if (lx->rank != (one_d ? 3 : 4))
        return WK_ERR_SHAPE;
    const int64_t H = one_d ? 1 : lx->dims[2], W = lx->dims[lx->rank - 1];
    const int64_t OH = one_d ? 1 : out_dims[0], OW = one_d ? out_dims[0] : out_dims[1];
    if (OH < 0 || OW < 0)
        return WK_ERR_INVALID_ARGUMENT;
    if ((H == 0 && OH > 0) || (W == 0 && OW > 0))
        return WK_ERR_SHAPE;
    const size_t es = ref_dtype_size(dt);
    int64_t o = 0;
    for (int64_t n = 0; n < lx->dims[0]; n++)
        for (int64_t c = 0; c < lx->dims[1]; c++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++, o++) {
                    if (op != WK_OP_UPSAMPLE_BILINEAR2D) {
                        const int64_t at = off4(lx, n, c, nearest_src(i, H, OH), nearest_src(j, W, OW));
                        memcpy((unsigned char *)out + (size_t)o * es,
                               (const unsigned char *)x + (size_t)at * es, es);
                        continue;
                    }
                    int64_t h0, h1, w0, w1;
                    double lh, lw;
                    linear_src(&h0, &h1, &lh, i, H, OH, align_corners, scale_h);
                    linear_src(&w0, &w1, &lw, j, W, OW, align_corners, scale_w);
                    const double top = (1 - lw) * ref_load_f(dt, x, off4(lx, n, c, h0, w0)) +
                                       lw * ref_load_f(dt, x, off4(lx, n, c, h0, w1));
                    const double bot = (1 - lw) * ref_load_f(dt, x, off4(lx, n, c, h1, w0)) +
                                       lw * ref_load_f(dt, x, off4(lx, n, c, h1, w1));
                    ref_store_f(dt, out, o, (1 - lh) * top + lh * bot);
                }
    return WK_OK;
}
