/* ref_copy.c: reference of the in-place ops const_set, copy_strided_src and copy2d: plain
 * element copies, bit for bit, into the whole destination buffer. */
#include "ref.h"
#include <string.h>

wk_status ref_const_set(void *base, wk_dtype dt, const wk_layout *l, const void *value)
{
    size_t es = ref_dtype_size(dt);
    int64_t n = ref_count(l);
    for (int64_t i = 0; i < n; i++)
        memcpy((unsigned char *)base + (size_t)ref_offset(l, i) * es, value, es);
    return WK_OK;
}

wk_status ref_copy_strided_src(void *dst, wk_dtype dt, size_t dst_offset, const void *src,
                               const wk_layout *ls)
{
    size_t es = ref_dtype_size(dt);
    int64_t n = ref_count(ls);
    for (int64_t i = 0; i < n; i++)
        memcpy((unsigned char *)dst + (dst_offset + (size_t)i) * es,
               (const unsigned char *)src + (size_t)ref_offset(ls, i) * es, es);
    return WK_OK;
}

wk_status ref_copy2d(void *dst, wk_dtype dt, const void *src, size_t d1, size_t d2,
                     size_t src_stride1, size_t dst_stride1, size_t src_offset, size_t dst_offset)
{
    size_t es = ref_dtype_size(dt);
    for (size_t i = 0; i < d1; i++)
        for (size_t j = 0; j < d2; j++)
            memcpy((unsigned char *)dst + (dst_offset + i * dst_stride1 + j) * es,
                   (const unsigned char *)src + (src_offset + i * src_stride1 + j) * es, es);
    return WK_OK;
}
