/* api_conv.c: front end of conv1d, conv_transpose1d, conv2d, conv_transpose2d. Checks the
 * parameters (WK_ERR_INVALID_ARGUMENT), the shapes and output sizes (WK_ERR_SHAPE, rules in
 * docs/semantics.md "Convolutions"), computes the output dims with Candle's / PyTorch's
 * formulas, allocates the contiguous output and calls the backend. */
#include "api.h"

/* out = a * b + c with overflow detection (1 on overflow). */
static int mul_add(int64_t *out, int64_t a, int64_t b, int64_t c)
{
    int64_t t;
    return __builtin_mul_overflow(a, b, &t) || __builtin_add_overflow(t, c, out);
}

/* The output size of one spatial dim i (0 = H or L, 1 = W), or an error. */
static wk_status out_size(int64_t *o, wk_op op, int transposed, int64_t in, int64_t k,
                          const wk_conv_params *p, int i)
{
    const char *name = wk_op_name(op);
    const int64_t s = p->stride[i], pad = p->padding[i], d = p->dilation[i];
    int64_t span; /* dilation * (k - 1) + 1: the kernel's extent */
    if (mul_add(&span, d, k - 1, 1))
        return wk_err(WK_ERR_OVERFLOW, "%s: kernel extent overflows", name);
    if (!transposed) {
        int64_t padded; /* in + 2 * padding */
        if (mul_add(&padded, 2, pad, in))
            return wk_err(WK_ERR_OVERFLOW, "%s: padded input size overflows", name);
        if (span > padded)
            return wk_err(WK_ERR_SHAPE, "%s: kernel extent %lld (k=%lld, dilation %lld) exceeds the "
                          "padded input %lld (spatial dim %d)", name, (long long)span, (long long)k,
                          (long long)d, (long long)padded, i);
        *o = (padded - span) / s + 1;
        return WK_OK;
    }
    /* (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1 */
    int64_t v;
    if (mul_add(&v, in - 1, s, span) || __builtin_add_overflow(v, (int64_t)p->output_padding[i], &v))
        return wk_err(WK_ERR_OVERFLOW, "%s: output size overflows", name);
    v -= 2 * pad;
    if (v <= 0)
        return wk_err(WK_ERR_SHAPE, "%s: output size %lld <= 0 (input %lld, kernel %lld, stride %lld, "
                      "padding %lld; spatial dim %d)", name, (long long)v, (long long)in,
                      (long long)k, (long long)s, (long long)pad, i);
    *o = v;
    return WK_OK;
}

/* Parameter checks (nsp spatial dims). */
static wk_status check_params(wk_op op, int transposed, int nsp, const wk_conv_params *p)
{
    const char *name = wk_op_name(op);
    for (int i = 0; i < nsp; i++) {
        if (p->stride[i] < 1 || p->dilation[i] < 1 || p->padding[i] < 0)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: stride %d, dilation %d, padding %d "
                          "(spatial dim %d; want stride, dilation >= 1, padding >= 0)", name,
                          (int)p->stride[i], (int)p->dilation[i], (int)p->padding[i], i);
        const int32_t lim = p->stride[i] > p->dilation[i] ? p->stride[i] : p->dilation[i];
        if (transposed && (p->output_padding[i] < 0 || p->output_padding[i] >= lim))
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: output_padding %d not in [0, max(stride, "
                          "dilation) = %d) (spatial dim %d)", name, (int)p->output_padding[i],
                          (int)lim, i);
    }
    if (p->groups < 1)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: groups %d < 1", name, (int)p->groups);
    return WK_OK;
}

static wk_status conv_run(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                          const wk_storage *w, const wk_layout *lw, const wk_conv_params *p)
{
    const char *name = wk_op_name(op);
    const int transposed = op == WK_OP_CONV_TRANSPOSE1D || op == WK_OP_CONV_TRANSPOSE2D;
    const int nsp = op == WK_OP_CONV1D || op == WK_OP_CONV_TRANSPOSE1D ? 1 : 2;
    wk_status st;
    if (!out || !p)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", name, out ? "parameters" : "output");
    if ((st = wk_check_operand(x, lx, name, "input")) || (st = wk_check_operand(w, lw, name, "kernel")))
        return st;
    if ((st = wk_check_same_device(x, w, name)))
        return st;
    if (x->dtype != w->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: input is %s, kernel is %s", name, wk_dtype_name(x->dtype),
                      wk_dtype_name(w->dtype));
    if ((st = check_params(op, transposed, nsp, p)))
        return st;
    char sx[256], sw[256];
    wk_layout_str(sx, sizeof sx, lx);
    wk_layout_str(sw, sizeof sw, lw);
    if (lx->rank != 2 + nsp || lw->rank != 2 + nsp)
        return wk_err(WK_ERR_SHAPE, "%s: want rank-%d input and kernel, got %s and %s", name,
                      2 + nsp, sx, sw);
    const int64_t cin = lx->dims[1], g = p->groups;
    int64_t cout;
    if (cin % g != 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: groups %lld does not divide %lld input channels",
                      name, (long long)g, (long long)cin);
    if (transposed) { /* w (C_in, C_out/groups, k...) */
        if (lw->dims[0] != cin)
            return wk_err(WK_ERR_SHAPE, "%s: kernel %s has %lld input channels, input %s has %lld",
                          name, sw, (long long)lw->dims[0], sx, (long long)cin);
        if (__builtin_mul_overflow(lw->dims[1], g, &cout))
            return wk_err(WK_ERR_OVERFLOW, "%s: output channel count overflows", name);
    } else { /* w (C_out, C_in/groups, k...) */
        cout = lw->dims[0];
        if (cout % g != 0)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: groups %lld does not divide %lld output "
                          "channels", name, (long long)g, (long long)cout);
        if (lw->dims[1] != cin / g)
            return wk_err(WK_ERR_SHAPE, "%s: kernel %s has %lld channels per group, want %lld "
                          "(input %s, groups %lld)", name, sw, (long long)lw->dims[1],
                          (long long)(cin / g), sx, (long long)g);
    }
    int64_t odims[4] = {lx->dims[0], cout, 0, 0};
    for (int i = 0; i < nsp; i++) {
        const int64_t k = lw->dims[2 + i];
        if (k < 1)
            return wk_err(WK_ERR_SHAPE, "%s: kernel %s has an empty spatial dim", name, sw);
        /* the 1-D ops read element [0] of the parameters */
        if ((st = out_size(&odims[2 + i], op, transposed, lx->dims[2 + i], k, p, i)))
            return st;
    }
    if ((st = wk_check_op(x->dev, op, x->dtype)))
        return st;
    int64_t n = 1;
    for (int i = 0; i < 2 + nsp; i++)
        if (__builtin_mul_overflow(n, odims[i], &n))
            return wk_err(WK_ERR_OVERFLOW, "%s: output element count overflows", name);
    wk_storage *o;
    if ((st = wk_storage_new(&o, x->dev, x->dtype, (size_t)n, name)))
        return st;
    if (n > 0)
        st = x->dev->be->conv(x->dev, op, x->dtype, o->data, x->data, lx, w->data, lw, p);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_conv1d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                    const wk_storage *w, const wk_layout *lw, const wk_conv_params *p)
{
    return conv_run(out, WK_OP_CONV1D, x, lx, w, lw, p);
}

wk_status wk_conv_transpose1d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                              const wk_storage *w, const wk_layout *lw, const wk_conv_params *p)
{
    return conv_run(out, WK_OP_CONV_TRANSPOSE1D, x, lx, w, lw, p);
}

wk_status wk_conv2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                    const wk_storage *w, const wk_layout *lw, const wk_conv_params *p)
{
    return conv_run(out, WK_OP_CONV2D, x, lx, w, lw, p);
}

wk_status wk_conv_transpose2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                              const wk_storage *w, const wk_layout *lw, const wk_conv_params *p)
{
    return conv_run(out, WK_OP_CONV_TRANSPOSE2D, x, lx, w, lw, p);
}
