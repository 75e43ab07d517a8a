/* ref_index.c: reference of the indexing ops (docs/semantics.md, "Indexing"): index_select,
 * gather, scatter_set, scatter_add_set, index_add. Every id is read and checked before anything
 * is written: the dtype's maximum is the "none" sentinel (zero when reading, skipped when
 * writing); any other id outside [0, size of dim) gives WK_ERR_INDEX_OUT_OF_RANGE. Writes go
 * one by one in row-major order of the ids (so the last duplicate wins); float adds round to
 * the dtype at each add, integer adds wrap. */
#include "ref.h"
#include <stdlib.h>
#include <string.h>

static int ids_dtype_ok(wk_dtype idt)
{
    return idt == WK_DTYPE_U8 || idt == WK_DTYPE_U32 || idt == WK_DTYPE_I64;
}

/* The id at storage offset `at`: -1 for the sentinel, -2 for out of range, else the id. */
static int64_t read_id(wk_dtype idt, const void *ids, int64_t at, int64_t size)
{
    int64_t v = ref_load_i(idt, ids, at);
    if (v == ref_int_max(idt))
        return -1;
    return v < 0 || v >= size ? -2 : v;
}

/* Checks every id of li against size; 1 if all are valid or sentinels. */
static int ids_valid(wk_dtype idt, const void *ids, const wk_layout *li, int64_t size)
{
    for (int64_t i = 0; i < ref_count(li); i++)
        if (read_id(idt, ids, ref_offset(li, i), size) == -2)
            return 0;
    return 1;
}

/* Multi-index of row-major element i of dims (rank r). */
static void coords(int64_t *c, const wk_layout *l, int64_t i)
{
    for (int k = l->rank - 1; k >= 0; k--) {
        c[k] = l->dims[k] ? i % l->dims[k] : 0;
        i = l->dims[k] ? i / l->dims[k] : 0;
    }
}

/* Storage offset of multi-index c in l, with c[dim] replaced by id. */
static int64_t at_with(const wk_layout *l, const int64_t *c, int32_t dim, int64_t id)
{
    int64_t off = l->offset;
    for (int k = 0; k < l->rank; k++)
        off += (k == dim ? id : c[k]) * l->strides[k];
    return off;
}

static void copy_el(void *dst, int64_t di, const void *src, int64_t si, size_t es)
{
    memcpy((unsigned char *)dst + (size_t)di * es, (const unsigned char *)src + (size_t)si * es, es);
}

/* base[di] += src[si] in dt: floats rounded to dt, integers wrapped. */
static void add_el(wk_dtype dt, void *base, int64_t di, const void *src, int64_t si)
{
    if (ref_is_float(dt))
        ref_store_f(dt, base, di, ref_load_f(dt, base, di) + ref_load_f(dt, src, si));
    else
        ref_store_i(dt, base, di,
                    ref_wrap(dt, (uint64_t)ref_load_i(dt, base, di) + (uint64_t)ref_load_i(dt, src, si)));
}

wk_status ref_index_select(void *out, wk_dtype dt, const void *src, const wk_layout *ls,
                           wk_dtype idt, const void *ids, const wk_layout *li, int32_t dim)
{
    if (!ids_dtype_ok(idt))
        return WK_ERR_DTYPE;
    if (dim < 0 || dim >= ls->rank)
        return WK_ERR_INDEX_OUT_OF_RANGE;
    if (li->rank != 1)
        return WK_ERR_SHAPE;
    if (!ids_valid(idt, ids, li, ls->dims[dim]))
        return WK_ERR_INDEX_OUT_OF_RANGE;
    wk_layout od = *ls;
    od.dims[dim] = li->dims[0];
    const size_t es = ref_dtype_size(dt);
    int64_t c[WK_MAX_RANK];
    for (int64_t i = 0; i < ref_count(&od); i++) {
        coords(c, &od, i);
        const int64_t id = read_id(idt, ids, ref_offset(li, c[dim]), ls->dims[dim]);
        if (id < 0)
            memset((unsigned char *)out + (size_t)i * es, 0, es);
        else
            copy_el(out, i, src, at_with(ls, c, dim, id), es);
    }
    return WK_OK;
}

/* ids (rank of vals) no larger than vals outside dim. */
static wk_status same_rank_ok(const wk_layout *li, const wk_layout *vals, int32_t dim)
{
    if (li->rank != vals->rank)
        return WK_ERR_SHAPE;
    for (int k = 0; k < li->rank; k++)
        if (k != dim && li->dims[k] > vals->dims[k])
            return WK_ERR_SHAPE;
    return WK_OK;
}

wk_status ref_gather(void *out, wk_dtype dt, const void *src, const wk_layout *ls, wk_dtype idt,
                     const void *ids, const wk_layout *li, int32_t dim)
{
    if (!ids_dtype_ok(idt))
        return WK_ERR_DTYPE;
    if (dim < 0 || dim >= ls->rank)
        return WK_ERR_INDEX_OUT_OF_RANGE;
    if (same_rank_ok(li, ls, dim))
        return WK_ERR_SHAPE;
    if (!ids_valid(idt, ids, li, ls->dims[dim]))
        return WK_ERR_INDEX_OUT_OF_RANGE;
    const size_t es = ref_dtype_size(dt);
    int64_t c[WK_MAX_RANK];
    for (int64_t i = 0; i < ref_count(li); i++) {
        coords(c, li, i);
        const int64_t id = read_id(idt, ids, ref_offset(li, i), ls->dims[dim]);
        if (id < 0)
            memset((unsigned char *)out + (size_t)i * es, 0, es);
        else
            copy_el(out, i, src, at_with(ls, c, dim, id), es);
    }
    return WK_OK;
}

wk_status ref_scatter(void *dst, int add, wk_dtype dt, const wk_layout *ld, wk_dtype idt,
                      const void *ids, const wk_layout *li, const void *src, const wk_layout *ls,
                      int32_t dim)
{
    if (!ids_dtype_ok(idt))
        return WK_ERR_DTYPE;
    if (dim < 0 || dim >= ld->rank)
        return WK_ERR_INDEX_OUT_OF_RANGE;
    if (same_rank_ok(li, ld, dim) || li->rank != ls->rank)
        return WK_ERR_SHAPE;
    for (int k = 0; k < li->rank; k++)
        if (li->dims[k] != ls->dims[k])
            return WK_ERR_SHAPE;
    if (!ids_valid(idt, ids, li, ld->dims[dim]))
        return WK_ERR_INDEX_OUT_OF_RANGE;
    const size_t es = ref_dtype_size(dt);
    int64_t c[WK_MAX_RANK];
    for (int64_t i = 0; i < ref_count(li); i++) {
        coords(c, li, i);
        const int64_t id = read_id(idt, ids, ref_offset(li, i), ld->dims[dim]);
        if (id < 0)
            continue;
        const int64_t d = at_with(ld, c, dim, id), s = ref_offset(ls, i);
        if (add)
            add_el(dt, dst, d, src, s);
        else
            copy_el(dst, d, src, s, es);
    }
    return WK_OK;
}

wk_status ref_index_add(void *out, wk_dtype dt, const void *dst, const wk_layout *ld, wk_dtype idt,
                        const void *ids, const wk_layout *li, const void *src, const wk_layout *ls,
                        int32_t dim)
{
    if (!ids_dtype_ok(idt))
        return WK_ERR_DTYPE;
    if (dim < 0 || dim >= ld->rank)
        return WK_ERR_INDEX_OUT_OF_RANGE;
    if (li->rank != 1 || ls->rank != ld->rank)
        return WK_ERR_SHAPE;
    for (int k = 0; k < ld->rank; k++)
        if (ls->dims[k] != (k == dim ? li->dims[0] : ld->dims[k]))
            return WK_ERR_SHAPE;
    if (!ids_valid(idt, ids, li, ld->dims[dim]))
        return WK_ERR_INDEX_OUT_OF_RANGE;
    const size_t es = ref_dtype_size(dt);
    for (int64_t i = 0; i < ref_count(ld); i++)
        copy_el(out, i, dst, ref_offset(ld, i), es);
    wk_layout lo = {.rank = ld->rank}; /* out: contiguous with dst's dims */
    int64_t m = 1;
    for (int k = ld->rank - 1; k >= 0; k--) {
        lo.dims[k] = ld->dims[k];
        lo.strides[k] = m;
        m *= ld->dims[k];
    }
    int64_t c[WK_MAX_RANK];
    for (int64_t i = 0; i < ref_count(ls); i++) {
        coords(c, ls, i);
        const int64_t id = read_id(idt, ids, ref_offset(li, c[dim]), ld->dims[dim]);
        if (id >= 0)
            add_el(dt, out, at_with(&lo, c, dim, id), src, ref_offset(ls, i));
    }
    return WK_OK;
}
