/* api_image.c: front end of the pooling and upsampling ops: wk_avg_pool2d, wk_max_pool2d,
 * wk_upsample_nearest1d, wk_upsample_nearest2d, wk_upsample_bilinear2d. Checks the input
 * (rank 4, or 3 for nearest1d), the parameters, computes the output dims, allocates the
 * contiguous output and calls the backend. Rules: docs/semantics.md, "Pooling and upsampling". */
#include "api.h"
#include <math.h>

/* out non-NULL, x a valid operand of the given rank. */
static wk_status check_input(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                             int32_t rank, const char *name)
{
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *out = NULL;
    if ((st = wk_check_operand(x, lx, name, "x")))
        return st;
    if (lx->rank != rank) {
        char s[256];
        return wk_err(WK_ERR_SHAPE, "%s: x must have rank %d, got %s", name, (int)rank,
                      wk_layout_str(s, sizeof s, lx));
    }
    return WK_OK;
}

/* Allocates the output (N, C, spatial...) and runs `call`; frees the output on failure. */
static wk_status alloc_out(wk_storage **o, const wk_storage *x, const wk_layout *lx,
                           const int64_t *sp, int nsp, const char *name, int64_t *count)
{
    int64_t n = lx->dims[0];
    if (__builtin_mul_overflow(n, lx->dims[1], &n))
        n = -1;
    for (int k = 0; k < nsp && n >= 0; k++)
        if (__builtin_mul_overflow(n, sp[k], &n))
            n = -1;
    if (n < 0 || (size_t)n > SIZE_MAX / wk_dtype_size(x->dtype))
        return wk_err(WK_ERR_OVERFLOW, "%s: the output element count overflows", name);
    *count = n;
    return wk_storage_new(o, x->dev, x->dtype, (size_t)n, name);
}

static wk_status pool(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                      const wk_pool_params *p)
{
    const char *name = wk_op_name(op);
    wk_status st;
    if ((st = check_input(out, x, lx, 4, name)))
        return st;
    if (!p)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL parameters", name);
    for (int k = 0; k < 2; k++)
        if (p->kernel[k] < 1 || p->stride[k] < 1)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: kernel (%d, %d) and stride (%d, %d) must be >= 1",
                          name, (int)p->kernel[0], (int)p->kernel[1], (int)p->stride[0], (int)p->stride[1]);
    int64_t sp[2];
    for (int k = 0; k < 2; k++) {
        const int64_t in = lx->dims[2 + k];
        if (p->kernel[k] > in)
            return wk_err(WK_ERR_SHAPE, "%s: kernel (%d, %d) larger than the input's (H, W) = (%lld, %lld)",
                          name, (int)p->kernel[0], (int)p->kernel[1], (long long)lx->dims[2],
                          (long long)lx->dims[3]);
        sp[k] = (in - p->kernel[k]) / p->stride[k] + 1;
    }
    if ((st = wk_check_op(x->dev, op, x->dtype)))
        return st;
    wk_storage *o;
    int64_t n = 0;
    if ((st = alloc_out(&o, x, lx, sp, 2, name, &n)))
        return st;
    if (n > 0 && (st = x->dev->be->pool2d(x->dev, op, x->dtype, o->data, x->data, lx, p))) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_avg_pool2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                        const wk_pool_params *p)
{
    return pool(out, WK_OP_AVG_POOL2D, x, lx, p);
}

wk_status wk_max_pool2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                        const wk_pool_params *p)
{
    return pool(out, WK_OP_MAX_POOL2D, x, lx, p);
}

/* sp: nsp output spatial dims (the last nsp dims of x). */
static wk_status upsample(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                          const int64_t *sp, int nsp, int align_corners, double scale_h,
                          double scale_w)
{
    const char *name = wk_op_name(op);
    wk_status st;
    if ((st = check_input(out, x, lx, 2 + nsp, name)))
        return st;
    for (int k = 0; k < nsp; k++) {
        const int64_t in = lx->dims[2 + k];
        if (sp[k] < 0)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: output size %lld is negative", name,
                          (long long)sp[k]);
        if (in == 0 && sp[k] > 0)
            return wk_err(WK_ERR_SHAPE, "%s: an input of spatial size 0 cannot give an output of size %lld",
                          name, (long long)sp[k]);
    }
    if (isnan(scale_h) || isnan(scale_w) || isinf(scale_h) || isinf(scale_w))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: scale factors (%g, %g) must be finite", name,
                      scale_h, scale_w);
    if (align_corners != 0 && align_corners != 1)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: align_corners is %d (want 0 or 1)", name,
                      align_corners);
    if ((st = wk_check_op(x->dev, op, x->dtype)))
        return st;
    wk_storage *o;
    int64_t n = 0;
    if ((st = alloc_out(&o, x, lx, sp, nsp, name, &n)))
        return st;
    if (n > 0 && (st = x->dev->be->upsample(x->dev, op, x->dtype, o->data, x->data, lx, sp,
                                            align_corners, scale_h, scale_w))) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_upsample_nearest1d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                int64_t l_out)
{
    return upsample(out, WK_OP_UPSAMPLE_NEAREST1D, x, lx, &l_out, 1, 0, 0, 0);
}

wk_status wk_upsample_nearest2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                int64_t h_out, int64_t w_out)
{
    const int64_t sp[2] = {h_out, w_out};
    return upsample(out, WK_OP_UPSAMPLE_NEAREST2D, x, lx, sp, 2, 0, 0, 0);
}

wk_status wk_upsample_bilinear2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                 int64_t h_out, int64_t w_out, int align_corners, double scale_h,
                                 double scale_w)
{
    const int64_t sp[2] = {h_out, w_out};
    return upsample(out, WK_OP_UPSAMPLE_BILINEAR2D, x, lx, sp, 2, align_corners, scale_h, scale_w);
}
