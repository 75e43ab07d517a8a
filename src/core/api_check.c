/* api_check.c: argument checks shared by every public op (see api.h). */
#include "api.h"

wk_status wk_check_operand(const wk_storage *s, const wk_layout *l, const char *op, const char *what)
{
    if (!s)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for %s", op, what);
    return wk_layout_check(l, s->len, op, what);
}

wk_status wk_check_same_device(const wk_storage *a, const wk_storage *b, const char *op)
{
    /* CPU handles share memory; a GPU handle owns its stream, so GPU operands must come from the
     * same handle or their work would not be ordered. */
    bool cpu_pair = a->dev->kind == WK_BACKEND_CPU && b->dev->kind == WK_BACKEND_CPU;
    if (a->dev != b->dev && !cpu_pair)
        return wk_err(WK_ERR_DEVICE_MISMATCH, "%s: operands on %s and %s (different device handles)",
                      op, a->dev->name, b->dev->name);
    return WK_OK;
}

wk_status wk_check_pair(const wk_storage *a, const wk_layout *la, const wk_storage *b,
                        const wk_layout *lb, const char *op)
{
    wk_status st;
    if ((st = wk_check_operand(a, la, op, "lhs")) || (st = wk_check_operand(b, lb, op, "rhs")) ||
        (st = wk_check_same_device(a, b, op)))
        return st;
    if (a->dtype != b->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: lhs is %s, rhs is %s", op, wk_dtype_name(a->dtype),
                      wk_dtype_name(b->dtype));
    return WK_OK;
}

wk_status wk_check_op(const wk_device *dev, wk_op op, wk_dtype dt)
{
    if (!wk_op_defined(op, dt))
        return wk_err(WK_ERR_DTYPE, "%s: not defined for %s (docs/semantics.md)", wk_op_name(op),
                      wk_dtype_name(dt));
    if (!dev->be->supports(dev, op, dt))
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %s is not implemented on %s", wk_op_name(op),
                      wk_dtype_name(dt), dev->be->name);
    return WK_OK;
}

wk_status wk_check_same_dims(const wk_layout *a, const wk_layout *b, const char *op)
{
    if (wk_layout_same_dims(a, b))
        return WK_OK;
    char sa[256], sb[256];
    return wk_err(WK_ERR_SHAPE, "%s: dims differ: %s vs %s", op, wk_layout_str(sa, sizeof sa, a),
                  wk_layout_str(sb, sizeof sb, b));
}
