/* cpu_where.c: the CPU where_cond: out = cond != 0 ? t : f. cond is u8, u32 or i64; the values
 * are copied as raw bits, so one row function per (cond type, value size) serves every dtype. */
#include "cpu_elem.h"

/* One row: c, t, f step by their own strides; out is contiguous. */
#define DEF_WHERE(cs, CT, vs, VT)                                                               \
    static void where_row_##cs##_##vs(void *out, const void *const *in, const int64_t *step,    \
                                      int64_t n, const void *ctx)                               \
    {                                                                                           \
        (void)ctx;                                                                              \
        VT *o = out;                                                                            \
        const CT *c = in[0];                                                                    \
        const VT *t = in[1], *f = in[2];                                                        \
        const int64_t sc = step[0], st = step[1], sf = step[2];                                 \
        if (sc == 1 && st == 1 && sf == 1)                                                      \
            for (int64_t i = 0; i < n; i++)                                                     \
                o[i] = c[i] != 0 ? t[i] : f[i];                                                 \
        else                                                                                    \
            for (int64_t i = 0; i < n; i++)                                                     \
                o[i] = c[i * sc] != 0 ? t[i * st] : f[i * sf];                                  \
    }

/* Value sizes: 1, 2, 4, 8 bytes (index = log2 of the size). */
#define WHERE_VALUE_SIZES(X, cs, CT) \
    X(cs, CT, 1, uint8_t)            \
    X(cs, CT, 2, uint16_t)           \
    X(cs, CT, 4, uint32_t)           \
    X(cs, CT, 8, uint64_t)
WHERE_VALUE_SIZES(DEF_WHERE, u8, uint8_t)
WHERE_VALUE_SIZES(DEF_WHERE, u32, uint32_t)
WHERE_VALUE_SIZES(DEF_WHERE, i64, int64_t)

#define WHERE_ENTRY(cs, CT, vs, VT) where_row_##cs##_##vs,
static const wk_cpu_row_fn where_u8[4] = {WHERE_VALUE_SIZES(WHERE_ENTRY, u8, uint8_t)};
static const wk_cpu_row_fn where_u32[4] = {WHERE_VALUE_SIZES(WHERE_ENTRY, u32, uint32_t)};
static const wk_cpu_row_fn where_i64[4] = {WHERE_VALUE_SIZES(WHERE_ENTRY, i64, int64_t)};

/* out (contiguous, elem_count(lc) elements of dt) = c != 0 ? t : f. */
wk_status wk_cpu_where_cond(wk_device *dev, wk_dtype cdt, wk_dtype dt, void *out, const void *c,
                            const wk_layout *lc, const void *t, const wk_layout *lt, const void *f,
                            const wk_layout *lf)
{
    (void)dev;
    const wk_cpu_row_fn *rows = cdt == WK_DTYPE_U8    ? where_u8
                                : cdt == WK_DTYPE_U32 ? where_u32
                                : cdt == WK_DTYPE_I64 ? where_i64
                                                      : NULL;
    const size_t vsz = wk_dtype_valid(dt) ? wk_dtype_size(dt) : 0;
    const int vlog = vsz == 1 ? 0 : vsz == 2 ? 1 : vsz == 4 ? 2 : vsz == 8 ? 3 : -1;
    if (!rows || vlog < 0)
        return wk_err(WK_ERR_DTYPE, "cpu where_cond: condition %s, values %s not supported",
                      wk_dtype_name(cdt), wk_dtype_name(dt));
    const size_t isz[3] = {wk_dtype_size(cdt), vsz, vsz};
    const void *in[3] = {c, t, f};
    const wk_layout *lay[3] = {lc, lt, lf};
    wk_cpu_for_rows(out, vsz, 3, in, isz, lay, rows[vlog], NULL);
    return WK_OK;
}
