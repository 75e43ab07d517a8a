/* api_index.c: front end of the indexing ops: wk_index_select, wk_gather, wk_scatter_set,
 * wk_scatter_add_set, wk_index_add. Checks operands, dtypes (ids u8/u32/i64, values sharing one
 * dtype), the dim and the shapes, allocates the output (index_add: a contiguous copy of dst) and
 * calls the backend's `index` entry, which validates the id values before writing anything.
 * Rules: docs/semantics.md, "Indexing". */
#include "api.h"

typedef struct idx_call {
    wk_op op;
    const char *name;
    wk_storage **out;                        /* select, gather, index_add */
    wk_storage *dst; const wk_layout *ld;    /* scatter*, index_add */
    const wk_storage *src; const wk_layout *ls;
    const wk_storage *ids; const wk_layout *li;
    int32_t dim;
} idx_call;

static wk_status shape_err(const idx_call *c, const char *why)
{
    char a[256], b[256], d[256] = "";
    if (c->ld)
        wk_layout_str(d, sizeof d, c->ld);
    return wk_err(WK_ERR_SHAPE, "%s: %s (dim %d; src %s, ids %s%s%s)", c->name, why, (int)c->dim,
                  wk_layout_str(a, sizeof a, c->ls), wk_layout_str(b, sizeof b, c->li),
                  c->ld ? ", dst " : "", d);
}

/* Operands, devices, dtypes and the dim; vals is the operand whose rank `dim` indexes. */
static wk_status check_common(const idx_call *c, const wk_layout *vals)
{
    wk_status st;
    if (c->out) {
        *c->out = NULL;
    } else if (c->op != WK_OP_SCATTER_SET && c->op != WK_OP_SCATTER_ADD_SET) {
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", c->name);
    }
    if (c->ld || c->dst) {
        if (!c->dst)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for dst", c->name);
        if ((st = wk_check_operand(c->dst, c->ld, c->name, "dst")))
            return st;
    }
    if ((st = wk_check_operand(c->src, c->ls, c->name, "src")) ||
        (st = wk_check_operand(c->ids, c->li, c->name, "ids")) ||
        (st = wk_check_same_device(c->src, c->ids, c->name)) ||
        (c->dst && (st = wk_check_same_device(c->src, c->dst, c->name))))
        return st;
    const wk_dtype it = c->ids->dtype;
    if (it != WK_DTYPE_U8 && it != WK_DTYPE_U32 && it != WK_DTYPE_I64)
        return wk_err(WK_ERR_DTYPE, "%s: ids are %s (want u8, u32 or i64)", c->name, wk_dtype_name(it));
    if (c->dst && c->dst->dtype != c->src->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: dst is %s, src is %s", c->name, wk_dtype_name(c->dst->dtype),
                      wk_dtype_name(c->src->dtype));
    if (c->dim < 0 || c->dim >= vals->rank)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "%s: dim %d out of range for rank %d", c->name,
                      (int)c->dim, (int)vals->rank);
    return WK_OK;
}

/* ids (rank r) against values of rank r: dims no larger except along dim. */
static wk_status check_same_rank(const idx_call *c, const wk_layout *vals)
{
    if (c->li->rank != vals->rank)
        return shape_err(c, "ids must have the rank of the values");
    for (int k = 0; k < vals->rank; k++)
        if (k != c->dim && c->li->dims[k] > vals->dims[k])
            return shape_err(c, "ids are larger than the values outside dim");
    return WK_OK;
}

/* Runs the backend; for an out-of-place op, allocates *out (dims `od`) first and frees it on
 * failure. index_add's output starts as a contiguous copy of dst. */
static wk_status run(const idx_call *c, const wk_layout *od)
{
    wk_status st;
    const wk_storage *vs = c->dst ? c->dst : c->src;
    if ((st = wk_check_op(vs->dev, c->op, vs->dtype)))
        return st;
    wk_device *dev = vs->dev;
    wk_index_args a = {
        .op = c->op, .dt = vs->dtype, .idt = c->ids->dtype, .dim = c->dim,
        .dst = c->out ? NULL : c->dst->data, .ld = c->ld,
        .src = c->src->data, .ls = c->ls, .ids = c->ids->data, .li = c->li,
    };
    wk_storage *o = NULL;
    if (c->out) {
        int64_t n = wk_layout_elem_count(od);
        if (n < 0)
            return wk_err(WK_ERR_OVERFLOW, "%s: the output element count overflows", c->name);
        if ((st = wk_storage_new(&o, dev, vs->dtype, (size_t)n, c->name)))
            return st;
        a.out = o->data;
        if (c->op == WK_OP_INDEX_ADD && n > 0 &&
            (st = dev->be->copy_strided(dev, vs->dtype, o->data, 0, c->dst->data, c->ld))) {
            wk_storage_free(o);
            return st;
        }
    }
    /* Called whenever there are ids, so that every id is validated even for an empty output. */
    if (wk_layout_elem_count(c->li) > 0 && (st = dev->be->index(dev, &a))) {
        wk_storage_free(o);
        return st;
    }
    if (c->out)
        *c->out = o;
    return WK_OK;
}

/* Output dims: l's dims with dims[dim] = n; overflow -> count -1 (checked by run). */
static wk_layout dims_with(const wk_layout *l, int32_t dim, int64_t n)
{
    wk_layout o = {.rank = l->rank};
    for (int k = 0; k < l->rank; k++)
        o.dims[k] = k == dim ? n : l->dims[k];
    return o;
}

/* elem count of dims, -1 on overflow (wk_layout_elem_count's contract for a layout of dims). */
static int64_t count_or_neg(const wk_layout *l)
{
    int64_t n = 1;
    for (int k = 0; k < l->rank; k++)
        if (__builtin_mul_overflow(n, l->dims[k], &n))
            return -1;
    return n;
}

wk_status wk_index_select(wk_storage **out, const wk_storage *src, const wk_layout *ls,
                          const wk_storage *ids, const wk_layout *li, int32_t dim)
{
    const idx_call c = {.op = WK_OP_INDEX_SELECT, .name = "index_select", .out = out, .src = src,
                        .ls = ls, .ids = ids, .li = li, .dim = dim};
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "index_select: NULL output");
    if ((st = check_common(&c, ls)))
        return st;
    if (li->rank != 1)
        return shape_err(&c, "ids must have rank 1");
    const wk_layout od = dims_with(ls, dim, li->dims[0]);
    if (count_or_neg(&od) < 0)
        return wk_err(WK_ERR_OVERFLOW, "index_select: the output element count overflows");
    return run(&c, &od);
}

wk_status wk_gather(wk_storage **out, const wk_storage *src, const wk_layout *ls,
                    const wk_storage *ids, const wk_layout *li, int32_t dim)
{
    const idx_call c = {.op = WK_OP_GATHER, .name = "gather", .out = out, .src = src, .ls = ls,
                        .ids = ids, .li = li, .dim = dim};
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gather: NULL output");
    if ((st = check_common(&c, ls)) || (st = check_same_rank(&c, ls)))
        return st;
    const wk_layout od = dims_with(li, -1, 0);
    return run(&c, &od);
}

static wk_status scatter(wk_op op, wk_storage *dst, const wk_layout *ld, const wk_storage *ids,
                         const wk_layout *li, const wk_storage *src, const wk_layout *ls,
                         int32_t dim)
{
    const idx_call c = {.op = op, .name = wk_op_name(op), .dst = dst, .ld = ld, .src = src,
                        .ls = ls, .ids = ids, .li = li, .dim = dim};
    wk_status st;
    if (!dst)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for dst", c.name);
    if (!ld)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL layout for dst", c.name);
    if ((st = check_common(&c, ld)) || (st = check_same_rank(&c, ld)) ||
        (st = wk_check_writable(dst, c.name)))
        return st;
    if (!wk_layout_same_dims(li, ls))
        return shape_err(&c, "ids and src must have the same dims");
    return run(&c, NULL);
}

wk_status wk_scatter_set(wk_storage *dst, const wk_layout *ld, const wk_storage *ids,
                         const wk_layout *li, const wk_storage *src, const wk_layout *ls,
                         int32_t dim)
{
    return scatter(WK_OP_SCATTER_SET, dst, ld, ids, li, src, ls, dim);
}

wk_status wk_scatter_add_set(wk_storage *dst, const wk_layout *ld, const wk_storage *ids,
                             const wk_layout *li, const wk_storage *src, const wk_layout *ls,
                             int32_t dim)
{
    return scatter(WK_OP_SCATTER_ADD_SET, dst, ld, ids, li, src, ls, dim);
}

wk_status wk_index_add(wk_storage **out, const wk_storage *dst, const wk_layout *ld,
                       const wk_storage *ids, const wk_layout *li, const wk_storage *src,
                       const wk_layout *ls, int32_t dim)
{
    const idx_call c = {.op = WK_OP_INDEX_ADD, .name = "index_add", .out = out,
                        .dst = (wk_storage *)dst, .ld = ld, .src = src, .ls = ls, .ids = ids,
                        .li = li, .dim = dim};
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "index_add: NULL output");
    if (!dst)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "index_add: NULL storage for dst");
    if (!ld)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "index_add: NULL layout for dst");
    if ((st = check_common(&c, ld)))
        return st;
    if (li->rank != 1)
        return shape_err(&c, "ids must have rank 1");
    if (ls->rank != ld->rank)
        return shape_err(&c, "src must have the rank of dst");
    for (int k = 0; k < ld->rank; k++)
        if (ls->dims[k] != (k == dim ? li->dims[0] : ld->dims[k]))
            return shape_err(&c, "src must have dst's dims with dims[dim] = the number of ids");
    return run(&c, ld);
}
