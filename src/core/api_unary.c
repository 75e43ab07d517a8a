/* api_unary.c: front end of the unary family: wk_unary, wk_affine, wk_powf, wk_elu. */
#include "api.h"

static wk_status unary_run(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                           const wk_unary_params *p)
{
    const char *name = wk_op_name(op);
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    wk_status st = wk_check_operand(x, lx, name, "x");
    if (st)
        return st;
    if ((st = wk_check_op(x->dev, op, x->dtype)))
        return st;
    int64_t n = wk_layout_elem_count(lx);
    wk_storage *o;
    if ((st = wk_storage_new(&o, x->dev, x->dtype, (size_t)n, name)))
        return st;
    if (n > 0)
        st = x->dev->be->unary(x->dev, op, x->dtype, p, o->data, x->data, lx);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_unary(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx)
{
    if ((unsigned)op > WK_OP_SIGMOID)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_unary: op %d (%s) is not a unary op", (int)op,
                      wk_op_name(op));
    const wk_unary_params p = {0.0, 0.0};
    return unary_run(out, op, x, lx, &p);
}

wk_status wk_affine(wk_storage **out, const wk_storage *x, const wk_layout *lx, double mul, double add)
{
    const wk_unary_params p = {mul, add};
    return unary_run(out, WK_OP_AFFINE, x, lx, &p);
}

wk_status wk_powf(wk_storage **out, const wk_storage *x, const wk_layout *lx, double e)
{
    const wk_unary_params p = {e, 0.0};
    return unary_run(out, WK_OP_POWF, x, lx, &p);
}

wk_status wk_elu(wk_storage **out, const wk_storage *x, const wk_layout *lx, double alpha)
{
    const wk_unary_params p = {alpha, 0.0};
    return unary_run(out, WK_OP_ELU, x, lx, &p);
}
