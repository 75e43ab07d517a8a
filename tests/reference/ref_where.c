/* ref_where.c: reference of where_cond: out = cond != 0 ? t : f, the selected element copied
 * bit for bit. cond is u8, u32 or i64. */
#include "ref.h"
#include <string.h>

wk_status ref_where_cond(void *out, wk_dtype cdt, wk_dtype dt, const void *c, const wk_layout *lc,
                         const void *t, const wk_layout *lt, const void *f, const wk_layout *lf)
{
    if (cdt != WK_DTYPE_U8 && cdt != WK_DTYPE_U32 && cdt != WK_DTYPE_I64)
        return WK_ERR_DTYPE;
    size_t es = ref_dtype_size(dt);
    int64_t n = ref_count(lc);
    for (int64_t i = 0; i < n; i++) {
        int take_t = ref_load_i(cdt, c, ref_offset(lc, i)) != 0;
        const unsigned char *src = take_t ? (const unsigned char *)t + (size_t)ref_offset(lt, i) * es
                                          : (const unsigned char *)f + (size_t)ref_offset(lf, i) * es;
        memcpy((unsigned char *)out + (size_t)i * es, src, es);
    }
    return WK_OK;
}
