/* api_copy.c: front end of the in-place family: wk_const_set, wk_copy_strided_src, wk_copy2d.
 * Every bound is checked before anything is written. */
#include "api.h"

wk_status wk_const_set(wk_storage *s, const wk_layout *l, const void *value)
{
    const char *name = "const_set";
    wk_status st;
    if (!value)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL value", name);
    if ((st = wk_check_operand(s, l, name, "destination")) || (st = wk_check_writable(s, name)) ||
        (st = wk_check_op(s->dev, WK_OP_CONST_SET, s->dtype)))
        return st;
    if (wk_layout_elem_count(l) == 0)
        return WK_OK;
    return s->dev->be->const_set(s->dev, s->dtype, s->data, l, value);
}

wk_status wk_copy_strided_src(wk_storage *dst, size_t dst_offset, const wk_storage *src,
                              const wk_layout *ls)
{
    const char *name = "copy_strided_src";
    wk_status st;
    if (!dst)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL destination", name);
    if ((st = wk_check_operand(src, ls, name, "source")) || (st = wk_check_same_device(dst, src, name)) ||
        (st = wk_check_writable(dst, name)))
        return st;
    if (dst->dtype != src->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: source is %s, destination is %s", name,
                      wk_dtype_name(src->dtype), wk_dtype_name(dst->dtype));
    if ((st = wk_check_op(dst->dev, WK_OP_COPY_STRIDED, dst->dtype)))
        return st;
    size_t n = (size_t)wk_layout_elem_count(ls);
    if (dst_offset > dst->len || n > dst->len - dst_offset)
        return wk_err(WK_ERR_LAYOUT, "%s: %zu elements at offset %zu do not fit a destination of %zu",
                      name, n, dst_offset, dst->len);
    if (n == 0)
        return WK_OK;
    return dst->dev->be->copy_strided(dst->dev, dst->dtype, dst->data, dst_offset, src->data, ls);
}

/* Last element addressed by rows of d2 elements, d1 rows apart by stride, from offset:
 * offset + (d1-1)*stride + d2 - 1 must be < len. Returns a status naming `what`. */
static wk_status check_2d(size_t d1, size_t d2, size_t stride, size_t offset, size_t len,
                          size_t elem_size, const char *what)
{
    size_t last, count;
    const size_t max_elems = (size_t)INT64_MAX / elem_size;
    if (__builtin_mul_overflow(d1, d2, &count) || count > max_elems ||
        __builtin_mul_overflow(d1 - 1, stride, &last) || __builtin_add_overflow(last, offset, &last) ||
        __builtin_add_overflow(last, d2 - 1, &last) || last >= max_elems)
        return wk_err(WK_ERR_OVERFLOW, "copy2d: %s extent (%zu rows of %zu, stride %zu, offset %zu) overflows",
                      what, d1, d2, stride, offset);
    if (last >= len)
        return wk_err(WK_ERR_LAYOUT,
                      "copy2d: %s element %zu (%zu rows of %zu, stride %zu, offset %zu) is outside its %zu elements",
                      what, last, d1, d2, stride, offset, len);
    return WK_OK;
}

wk_status wk_copy2d(wk_storage *dst, const wk_storage *src, size_t d1, size_t d2,
                    size_t src_stride1, size_t dst_stride1, size_t src_offset, size_t dst_offset)
{
    const char *name = "copy2d";
    wk_status st;
    if (!dst || !src)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", name, dst ? "source" : "destination");
    if ((st = wk_check_same_device(dst, src, name)) || (st = wk_check_writable(dst, name)))
        return st;
    if (dst->dtype != src->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: source is %s, destination is %s", name,
                      wk_dtype_name(src->dtype), wk_dtype_name(dst->dtype));
    if ((st = wk_check_op(dst->dev, WK_OP_COPY2D, dst->dtype)))
        return st;
    if (d1 == 0 || d2 == 0)
        return WK_OK;
    const size_t es = wk_dtype_size(dst->dtype);
    if ((st = check_2d(d1, d2, src_stride1, src_offset, src->len, es, "source")) ||
        (st = check_2d(d1, d2, dst_stride1, dst_offset, dst->len, es, "destination")))
        return st;
    return dst->dev->be->copy2d(dst->dev, dst->dtype, dst->data, src->data, d1, d2, src_stride1,
                                dst_stride1, src_offset, dst_offset);
}
