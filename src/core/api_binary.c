/* api_binary.c: front end of the binary family: wk_binary, wk_cmp, wk_where_cond, and
 * wk_binary_act (the int8 activations of a binary op's result: wick.h). */
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

wk_status wk_binary_act(wk_storage **act, wk_op op, const wk_storage *a, const wk_layout *la,
                        const wk_storage *b, const wk_layout *lb)
{
    const char *name = "binary_act";
    wk_status st;
    if (!act)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *act = NULL;
    if (op < WK_OP_ADD || op > WK_OP_GEGLU_ERF)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: op %d (%s) is not a binary op", name, (int)op,
                      wk_op_name(op));
    if ((st = wk_check_pair(a, la, b, lb, name)) || (st = wk_check_same_dims(la, lb, name)))
        return st;
    char sa[256];
    if (la->rank < 1)
        return wk_err(WK_ERR_SHAPE, "%s: want a (..., k) of rank >= 1, got %s", name,
                      wk_layout_str(sa, sizeof sa, la));
    const int64_t n = wk_layout_elem_count(la), k = la->dims[la->rank - 1];
    if (k % 32 != 0)
        return wk_err(WK_ERR_SHAPE, "%s: the last dim %lld is not a multiple of 32", name,
                      (long long)k);
    const int64_t m = k > 0 ? n / k : 0, bytes = wk_act_bytes(m, k);
    if ((st = wk_check_op(a->dev, WK_OP_BINARY_ACT, a->dtype)) ||
        (st = wk_check_op(a->dev, op, a->dtype)))
        return st;
    wk_device *dev = a->dev;
    wk_storage *o = NULL, *y = NULL;
    if ((st = wk_storage_new(&o, dev, WK_DTYPE_U8, (size_t)bytes, name)))
        return st;
    if (n > 0 && dev->be->binary_act) {
        st = dev->be->binary_act(dev, op, a->dtype, o->data, a->data, la, b->data, lb);
    } else if (n > 0) { /* the composition: the same bits as a fused entry */
        if (!(st = wk_storage_new(&y, dev, a->dtype, (size_t)n, name)) &&
            !(st = dev->be->binary(dev, op, a->dtype, y->data, a->data, la, b->data, lb)))
            st = dev->be->quantize_act(dev, a->dtype, o->data, y->data, m, k);
        wk_storage_free(y);
    }
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *act = o;
    return WK_OK;
}
