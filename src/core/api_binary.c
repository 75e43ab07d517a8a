/* api_binary.c: front end of the binary family: wk_binary, wk_cmp, wk_where_cond. */
#include "api.h"

static wk_status binary_run(wk_storage **out, wk_op op, const wk_storage *a, const wk_layout *la,
                            const wk_storage *b, const wk_layout *lb, wk_dtype out_dt)
{
    const char *name = wk_op_name(op);
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    if ((st = wk_check_pair(a, la, b, lb, name)))
        return st;
    if ((st = wk_check_same_dims(la, lb, name)) || (st = wk_check_op(a->dev, op, a->dtype)))
        return st;
    int64_t n = wk_layout_elem_count(la);
    wk_storage *o;
    if ((st = wk_storage_new(&o, a->dev, out_dt, (size_t)n, name)))
        return st;
    if (n > 0)
        st = a->dev->be->binary(a->dev, op, a->dtype, o->data, a->data, la, b->data, lb);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_binary(wk_storage **out, wk_op op, const wk_storage *a, const wk_layout *la,
                    const wk_storage *b, const wk_layout *lb)
{
    if (op < WK_OP_ADD || op > WK_OP_GEGLU_ERF)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_binary: op %d (%s) is not a binary op", (int)op,
                      wk_op_name(op));
    return binary_run(out, op, a, la, b, lb, a ? a->dtype : WK_DTYPE_U8);
}

wk_status wk_cmp(wk_storage **out, wk_op op, const wk_storage *a, const wk_layout *la,
                 const wk_storage *b, const wk_layout *lb)
{
    if (op < WK_OP_EQ || op > WK_OP_GE)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_cmp: op %d (%s) is not a comparison", (int)op,
                      wk_op_name(op));
    return binary_run(out, op, a, la, b, lb, WK_DTYPE_U8);
}

wk_status wk_where_cond(wk_storage **out, const wk_storage *cond, const wk_layout *lc,
                        const wk_storage *t, const wk_layout *lt, const wk_storage *f,
                        const wk_layout *lf)
{
    const char *name = "where_cond";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    if ((st = wk_check_operand(cond, lc, name, "cond")) || (st = wk_check_operand(t, lt, name, "on_true")) ||
        (st = wk_check_operand(f, lf, name, "on_false")))
        return st;
    if ((st = wk_check_same_device(cond, t, name)) || (st = wk_check_same_device(cond, f, name)))
        return st;
    if (cond->dtype != WK_DTYPE_U8 && cond->dtype != WK_DTYPE_U32 && cond->dtype != WK_DTYPE_I64)
        return wk_err(WK_ERR_DTYPE, "%s: condition is %s (want u8, u32 or i64)", name,
                      wk_dtype_name(cond->dtype));
    if (t->dtype != f->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: on_true is %s, on_false is %s", name,
                      wk_dtype_name(t->dtype), wk_dtype_name(f->dtype));
    if ((st = wk_check_same_dims(lc, lt, name)) || (st = wk_check_same_dims(lc, lf, name)) ||
        (st = wk_check_op(t->dev, WK_OP_WHERE_COND, t->dtype)))
        return st;
    int64_t n = wk_layout_elem_count(lc);
    wk_storage *o;
    if ((st = wk_storage_new(&o, t->dev, t->dtype, (size_t)n, name)))
        return st;
    if (n > 0)
        st = t->dev->be->where_cond(t->dev, cond->dtype, t->dtype, o->data, cond->data, lc, t->data,
                                    lt, f->data, lf);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}
