/* api_reduce.c: front end of wk_reduce (sum, min, max, argmin, argmax over any set of dims). */
#include "api.h"

wk_status wk_reduce(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                    const int32_t *dims, int32_t ndims)
{
    if (op < WK_OP_SUM || op > WK_OP_ARGMAX)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_reduce: op %d (%s) is not a reduction", (int)op,
                      wk_op_name(op));
    const char *name = wk_op_name(op);
    wk_status st;
    if (!out || (ndims > 0 && !dims))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", name, out ? "dims" : "output");
    if ((st = wk_check_operand(x, lx, name, "x")))
        return st;
    if (ndims < 0 || ndims > lx->rank)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: %d reduce dims for rank %d", name, (int)ndims,
                      (int)lx->rank);
    uint32_t mask = 0;
    for (int32_t i = 0; i < ndims; i++) {
        if (dims[i] < 0 || dims[i] >= lx->rank)
            return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "%s: reduce dim %d for rank %d", name,
                          (int)dims[i], (int)lx->rank);
        if (mask & (1u << dims[i]))
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: reduce dim %d given twice", name, (int)dims[i]);
        mask |= 1u << dims[i];
    }
    if ((st = wk_check_op(x->dev, op, x->dtype)))
        return st;
    /* The kept and the reduced extents. A layout with a zero dim is valid whatever its other dims,
     * so either product may pass INT64_MAX while the other is 0 (found by fuzz_ops). */
    int64_t n_out = 1, n_red = 1;
    bool out_ovf = false, red_ovf = false, out_zero = false, red_zero = false;
    for (int32_t k = 0; k < lx->rank; k++) {
        const int64_t d = lx->dims[k];
        if (mask & (1u << k)) {
            red_zero |= d == 0;
            red_ovf |= __builtin_mul_overflow(n_red, d, &n_red);
        } else {
            out_zero |= d == 0;
            out_ovf |= __builtin_mul_overflow(n_out, d, &n_out);
        }
    }
    if (out_zero)
        n_out = 0;
    if (red_zero)
        n_red = 0;
    if ((out_ovf && !out_zero) || (red_ovf && !red_zero && n_out > 0)) {
        char b[256];
        return wk_err(WK_ERR_OVERFLOW, "%s: the %s extent of %s overflows int64", name,
                      out_ovf && !out_zero ? "output" : "reduced", wk_layout_str(b, sizeof b, lx));
    }
    if (op != WK_OP_SUM && n_red == 0 && n_out > 0) {
        char b[256];
        return wk_err(WK_ERR_SHAPE, "%s: empty reduced extent in %s %s", name,
                      wk_dtype_name(x->dtype), wk_layout_str(b, sizeof b, lx));
    }
    if ((op == WK_OP_ARGMIN || op == WK_OP_ARGMAX) && n_red > (int64_t)UINT32_MAX + 1)
        return wk_err(WK_ERR_OVERFLOW, "%s: %lld reduced elements do not fit a u32 index", name,
                      (long long)n_red);
    wk_dtype odt = (op == WK_OP_ARGMIN || op == WK_OP_ARGMAX) ? WK_DTYPE_U32 : x->dtype;
    wk_storage *o;
    if ((st = wk_storage_new(&o, x->dev, odt, (size_t)n_out, name)))
        return st;
    if (n_out > 0) {
        if (n_red == 0) /* an empty sum is 0 */
            st = x->dev->be->memset_zero(x->dev, o->data, (size_t)n_out * wk_dtype_size(odt));
        else
            st = x->dev->be->reduce(x->dev, op, x->dtype, o->data, x->data, lx, mask);
    }
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}
