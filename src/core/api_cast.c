/* api_cast.c: front end of wk_to_dtype. */
#include "api.h"

wk_status wk_to_dtype(wk_storage **out, const wk_storage *x, const wk_layout *lx, wk_dtype to)
{
    const char *name = "to_dtype";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    if (!wk_dtype_valid(to))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: unknown target dtype %d", name, (int)to);
    if ((st = wk_check_operand(x, lx, name, "x")) || (st = wk_check_op(x->dev, WK_OP_TO_DTYPE, x->dtype)) ||
        (st = wk_check_op(x->dev, WK_OP_TO_DTYPE, to)))
        return st;
    int64_t n = wk_layout_elem_count(lx);
    wk_storage *o;
    if ((st = wk_storage_new(&o, x->dev, to, (size_t)n, name)))
        return st;
    if (n > 0)
        st = x->dev->be->to_dtype(x->dev, x->dtype, to, o->data, x->data, lx);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}
