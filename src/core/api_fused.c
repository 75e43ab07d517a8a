/* api_fused.c: front end of candle-nn's fused ops: softmax_last_dim, rms_norm, layer_norm, rope,
 * rope_i, rope_thd, arg_sort_last_dim, and of wick's add_rms_norm / add_layer_norm /
 * add_rms_norm_act. Checks every
 * argument once (docs/semantics.md, "Fused ops"), allocates the contiguous output and calls the
 * backend. Order of the checks: NULL output, operands (NULL, layout), devices, dtype agreement,
 * shapes, then whether the op is defined for the dtype and implemented by the device. */
#include "api.h"

/* One fused call's arguments, as the backend entries take them. */
typedef struct fz_call {
    wk_op op;
    wk_dtype dt;     /* the data operand's dtype */
    const void *x;
    const wk_layout *lx;
    const void *a, *b; /* alpha/beta or cos/sin */
    const wk_layout *la, *lb;
    float eps;
    int ascending;
} fz_call;

static wk_status fz_dispatch(wk_device *dev, const fz_call *c, void *o)
{
    const wk_backend *be = dev->be;
    switch (c->op) {
    case WK_OP_SOFTMAX_LAST_DIM: return be->softmax(dev, c->dt, o, c->x, c->lx);
    case WK_OP_RMS_NORM:
    case WK_OP_LAYER_NORM:
        return be->norm(dev, c->op, c->dt, o, c->x, c->lx, c->a, c->la, c->b, c->lb, c->eps);
    case WK_OP_ARG_SORT_LAST_DIM: return be->arg_sort(dev, c->dt, o, c->x, c->lx, c->ascending);
    default: return be->rope(dev, c->op, c->dt, o, c->x, c->lx, c->a, c->la, c->b, c->lb);
    }
}

/* The shared tail: op defined and supported, allocate, run, free on failure. */
static wk_status fz_run(wk_storage **out, wk_device *dev, const fz_call *c, wk_dtype odt)
{
    const char *name = wk_op_name(c->op);
    wk_status st = wk_check_op(dev, c->op, c->dt);
    if (st)
        return st;
    const int64_t n = wk_layout_elem_count(c->lx);
    wk_storage *o;
    if ((st = wk_storage_new(&o, dev, odt, (size_t)n, name)))
        return st;
    if (n > 0)
        st = fz_dispatch(dev, c, o->data);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

/* out non-NULL, x a valid operand of rank >= 1 (the ops work on the last dim). */
static wk_status fz_check_x(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                            const char *name)
{
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    return wk_check_operand(x, lx, name, "x");
}

static wk_status fz_check_rank1(const wk_layout *lx, const char *name)
{
    if (lx->rank >= 1)
        return WK_OK;
    return wk_err(WK_ERR_SHAPE, "%s: x has rank 0 (the op needs a last dim)", name);
}

/* p (alpha, beta, cos, sin) on x's device with x's dtype. */
static wk_status fz_check_param(const wk_storage *x, const wk_storage *p, const char *name,
                                const char *what)
{
    wk_status st = wk_check_same_device(x, p, name);
    if (st)
        return st;
    if (p->dtype != x->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: x is %s, %s is %s", name, wk_dtype_name(x->dtype), what,
                      wk_dtype_name(p->dtype));
    return WK_OK;
}

wk_status wk_softmax_last_dim(wk_storage **out, const wk_storage *x, const wk_layout *lx)
{
    const char *name = "softmax_last_dim";
    wk_status st;
    if ((st = fz_check_x(out, x, lx, name)) || (st = fz_check_rank1(lx, name)))
        return st;
    const fz_call c = {.op = WK_OP_SOFTMAX_LAST_DIM, .dt = x->dtype, .x = x->data, .lx = lx};
    return fz_run(out, x->dev, &c, x->dtype);
}

/* alpha (and beta) rank 1 with dims (D), D the last dim of x. */
static wk_status fz_check_vec(const wk_layout *lx, const wk_layout *lp, const char *name,
                              const char *what)
{
    const int64_t d = lx->dims[lx->rank - 1];
    if (lp->rank == 1 && lp->dims[0] == d)
        return WK_OK;
    char sx[256], sp[256];
    return wk_err(WK_ERR_SHAPE, "%s: %s must have dims (%lld) for x %s, got %s", name, what,
                  (long long)d, wk_layout_str(sx, sizeof sx, lx), wk_layout_str(sp, sizeof sp, lp));
}

static wk_status norm_run(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                          const wk_storage *alpha, const wk_layout *la, const wk_storage *beta,
                          const wk_layout *lb, float eps)
{
    const char *name = wk_op_name(op);
    const int layer = op == WK_OP_LAYER_NORM;
    wk_status st;
    if ((st = fz_check_x(out, x, lx, name)) || (st = wk_check_operand(alpha, la, name, "alpha")) ||
        (layer && (st = wk_check_operand(beta, lb, name, "beta"))))
        return st;
    if ((st = fz_check_param(x, alpha, name, "alpha")) ||
        (layer && (st = fz_check_param(x, beta, name, "beta"))))
        return st;
    if ((st = fz_check_rank1(lx, name)) || (st = fz_check_vec(lx, la, name, "alpha")) ||
        (layer && (st = fz_check_vec(lx, lb, name, "beta"))))
        return st;
    const fz_call c = {.op = op, .dt = x->dtype, .x = x->data, .lx = lx, .a = alpha->data,
                       .la = la, .b = layer ? beta->data : NULL, .lb = layer ? lb : NULL,
                       .eps = eps};
    return fz_run(out, x->dev, &c, x->dtype);
}

wk_status wk_rms_norm(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                      const wk_storage *alpha, const wk_layout *la, float eps)
{
    return norm_run(out, WK_OP_RMS_NORM, x, lx, alpha, la, NULL, NULL, eps);
}

wk_status wk_layer_norm(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                        const wk_storage *alpha, const wk_layout *la, const wk_storage *beta,
                        const wk_layout *lb, float eps)
{
    return norm_run(out, WK_OP_LAYER_NORM, x, lx, alpha, la, beta, lb, eps);
}

/* wk_add_rms_norm (op ADD_RMS_NORM), wk_add_layer_norm and wk_add_rms_norm_act (act non-NULL):
 * sum = x + r rounded, out = the norm of sum, act = its int8 activations. sum and out are
 * allocated even when the caller does not want them (the backend writes them either way); the
 * outputs are set only on success. */
static wk_status add_norm_run(wk_storage **sum, wk_storage **out, wk_storage **act, wk_op op,
                              const wk_storage *x, const wk_layout *lx, const wk_storage *r,
                              const wk_layout *lr, const wk_storage *alpha, const wk_layout *la,
                              const wk_storage *beta, const wk_layout *lb, float eps)
{
    const char *name = wk_op_name(op);
    const int layer = op == WK_OP_ADD_LAYER_NORM;
    wk_status st;
    if ((sum && (sum == out || sum == act)) || (out && out == act))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: two outputs are the same pointer", name);
    if (act) /* the norm's output is optional here: checked through act */
        *act = NULL;
    if ((st = fz_check_x(act ? act : out, x, lx, name)) ||
        (st = wk_check_operand(r, lr, name, "r")) ||
        (st = wk_check_operand(alpha, la, name, "alpha")) ||
        (layer && (st = wk_check_operand(beta, lb, name, "beta"))))
        return st;
    if ((st = wk_check_same_device(x, r, name)))
        return st;
    if (r->dtype != x->dtype &&
        (x->dtype != WK_DTYPE_F32 || (r->dtype != WK_DTYPE_F16 && r->dtype != WK_DTYPE_BF16)))
        return wk_err(WK_ERR_DTYPE, "%s: x is %s, r is %s (x's dtype expected, or f16/bf16 "
                      "under f32 x)", name, wk_dtype_name(x->dtype), wk_dtype_name(r->dtype));
    if ((st = fz_check_param(x, alpha, name, "alpha")) ||
        (layer && (st = fz_check_param(x, beta, name, "beta"))))
        return st;
    if ((st = fz_check_rank1(lx, name)) || (st = wk_check_same_dims(lx, lr, name)) ||
        (st = fz_check_vec(lx, la, name, "alpha")) ||
        (layer && (st = fz_check_vec(lx, lb, name, "beta"))))
        return st;
    wk_device *dev = x->dev;
    const int64_t n = wk_layout_elem_count(lx), D = lx->dims[lx->rank - 1];
    int64_t abytes = 0;
    if (act && D % 32 != 0)
        return wk_err(WK_ERR_SHAPE, "%s: the last dim %lld is not a multiple of 32", name,
                      (long long)D);
    if (act && (abytes = wk_act_bytes(D > 0 ? n / D : 0, D)) < 0)
        return wk_err(WK_ERR_OVERFLOW, "%s: the activations' size overflows", name);
    if ((st = wk_check_op(dev, op, x->dtype)))
        return st;
    wk_storage *s = NULL, *o = NULL, *a = NULL;
    if ((st = wk_storage_new(&s, dev, x->dtype, (size_t)n, name)) ||
        (st = wk_storage_new(&o, dev, x->dtype, (size_t)n, name)) ||
        (act && (st = wk_storage_new(&a, dev, WK_DTYPE_U8, (size_t)abytes, name)))) {
        wk_storage_free(s);
        wk_storage_free(o);
        return st;
    }
    const int nop = layer ? WK_OP_LAYER_NORM : WK_OP_RMS_NORM;
    if (n > 0 && act && dev->be->add_norm_act) {
        st = dev->be->add_norm_act(dev, x->dtype, r->dtype, s->data, o->data, a->data, x->data,
                                   lx, r->data, lr, alpha->data, la, eps);
    } else if (n > 0) {
        st = dev->be->add_norm(dev, nop, x->dtype, r->dtype, s->data, o->data, x->data, lx,
                               r->data, lr, alpha->data, la, layer ? beta->data : NULL,
                               layer ? lb : NULL, eps);
        if (!st && act) /* the composition: the same bits as the fused entry */
            st = dev->be->quantize_act(dev, x->dtype, a->data, o->data, n / D, D);
    }
    if (st) {
        wk_storage_free(s);
        wk_storage_free(o);
        wk_storage_free(a);
        return st;
    }
    if (sum)
        *sum = s;
    else
        wk_storage_free(s);
    if (out)
        *out = o;
    else
        wk_storage_free(o);
    if (act)
        *act = a;
    return WK_OK;
}

wk_status wk_add_rms_norm(wk_storage **sum, wk_storage **out, const wk_storage *x,
                          const wk_layout *lx, const wk_storage *r, const wk_layout *lr,
                          const wk_storage *alpha, const wk_layout *la, float eps)
{
    return add_norm_run(sum, out, NULL, WK_OP_ADD_RMS_NORM, x, lx, r, lr, alpha, la, NULL, NULL,
                        eps);
}

wk_status wk_add_rms_norm_act(wk_storage **sum, wk_storage **out, wk_storage **act,
                              const wk_storage *x, const wk_layout *lx, const wk_storage *r,
                              const wk_layout *lr, const wk_storage *alpha, const wk_layout *la,
                              float eps)
{
    if (!act)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "add_rms_norm_act: NULL output (act)");
    return add_norm_run(sum, out, act, WK_OP_ADD_RMS_NORM_ACT, x, lx, r, lr, alpha, la, NULL,
                        NULL, eps);
}

wk_status wk_add_layer_norm(wk_storage **sum, wk_storage **out, const wk_storage *x,
                            const wk_layout *lx, const wk_storage *r, const wk_layout *lr,
                            const wk_storage *alpha, const wk_layout *la, const wk_storage *beta,
                            const wk_layout *lb, float eps)
{
    return add_norm_run(sum, out, NULL, WK_OP_ADD_LAYER_NORM, x, lx, r, lr, alpha, la, beta, lb,
                        eps);
}

/* x rank 4 with D even; cos and sin the same dims, (Tc, D/2) or (B, Tc, D/2) with Tc >= T. */
static wk_status rope_check_shapes(wk_op op, const wk_layout *lx, const wk_layout *lc,
                                   const wk_layout *ls)
{
    const char *name = wk_op_name(op);
    char sx[256], sc[256], ss[256];
    wk_layout_str(sx, sizeof sx, lx);
    wk_layout_str(sc, sizeof sc, lc);
    wk_layout_str(ss, sizeof ss, ls);
    if (lx->rank != 4)
        return wk_err(WK_ERR_SHAPE, "%s: x must have rank 4 (%s), got %s", name,
                      op == WK_OP_ROPE_THD ? "B, T, H, D" : "B, H, T, D", sx);
    const int64_t b = lx->dims[0], t = lx->dims[op == WK_OP_ROPE_THD ? 1 : 2], d = lx->dims[3];
    if (d % 2 != 0)
        return wk_err(WK_ERR_SHAPE, "%s: the last dim of x must be even, got %s", name, sx);
    if (!wk_layout_same_dims(lc, ls))
        return wk_err(WK_ERR_SHAPE, "%s: cos %s and sin %s must have the same dims", name, sc, ss);
    const int r = lc->rank;
    if ((r != 2 && r != 3) || lc->dims[r - 1] != d / 2 || lc->dims[r - 2] < t ||
        (r == 3 && lc->dims[0] != b))
        return wk_err(WK_ERR_SHAPE, "%s: cos/sin must be (T, D/2) or (B, T, D/2) with at least "
                      "T = %lld rows, D/2 = %lld, B = %lld; got cos %s for x %s", name,
                      (long long)t, (long long)(d / 2), (long long)b, sc, sx);
    return WK_OK;
}

static wk_status rope_run(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                          const wk_storage *cos, const wk_layout *lc, const wk_storage *sin,
                          const wk_layout *ls)
{
    const char *name = wk_op_name(op);
    wk_status st;
    if ((st = fz_check_x(out, x, lx, name)) || (st = wk_check_operand(cos, lc, name, "cos")) ||
        (st = wk_check_operand(sin, ls, name, "sin")))
        return st;
    if ((st = fz_check_param(x, cos, name, "cos")) || (st = fz_check_param(x, sin, name, "sin")) ||
        (st = rope_check_shapes(op, lx, lc, ls)))
        return st;
    const fz_call c = {.op = op, .dt = x->dtype, .x = x->data, .lx = lx, .a = cos->data,
                       .la = lc, .b = sin->data, .lb = ls};
    return fz_run(out, x->dev, &c, x->dtype);
}

wk_status wk_rope(wk_storage **out, const wk_storage *x, const wk_layout *lx, const wk_storage *cos,
                  const wk_layout *lc, const wk_storage *sin, const wk_layout *ls)
{
    return rope_run(out, WK_OP_ROPE, x, lx, cos, lc, sin, ls);
}

wk_status wk_rope_i(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                    const wk_storage *cos, const wk_layout *lc, const wk_storage *sin,
                    const wk_layout *ls)
{
    return rope_run(out, WK_OP_ROPE_I, x, lx, cos, lc, sin, ls);
}

wk_status wk_rope_thd(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                      const wk_storage *cos, const wk_layout *lc, const wk_storage *sin,
                      const wk_layout *ls)
{
    return rope_run(out, WK_OP_ROPE_THD, x, lx, cos, lc, sin, ls);
}

wk_status wk_arg_sort_last_dim(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                               int ascending)
{
    const char *name = "arg_sort_last_dim";
    wk_status st;
    if ((st = fz_check_x(out, x, lx, name)) || (st = fz_check_rank1(lx, name)))
        return st;
    if (lx->dims[lx->rank - 1] > (INT64_C(1) << 32)) {
        char sx[256];
        return wk_err(WK_ERR_SHAPE, "%s: rows of %s have more than 2^32 elements (u32 indices)",
                      name, wk_layout_str(sx, sizeof sx, lx));
    }
    const fz_call c = {.op = WK_OP_ARG_SORT_LAST_DIM, .dt = x->dtype, .x = x->data, .lx = lx,
                       .ascending = ascending != 0};
    return fz_run(out, x->dev, &c, WK_DTYPE_U32);
}
