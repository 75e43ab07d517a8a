/* gpu_index.c: the GPU indexing ops (index_select, gather, scatter_set, scatter_add_set,
 * index_add; every value dtype, ids u8/u32/i64, any layouts), through kernels/index.cu.
 *
 * Each op is an iteration over dims `it` (the output's for index_select, the ids' for gather and
 * the scatters, src's for index_add) with up to three operands of those dims, offsets folded
 * into the pointers: the indexed operand (src when reading, dst when writing) with its stride
 * along `dim` replaced by 0 (the kernel adds id * dstep), the plain operand and the ids.
 *
 * Ids cannot be checked on the host without a sync: the kernels skip a bad id (no access with
 * it; a read yields 0) and record it in the device's error record, which the next synchronize
 * or download reports as WK_ERR_INDEX_OUT_OF_RANGE. Elements of valid ids in the same launch
 * may have been written by then.
 *
 * Paths:
 *   - index_select from a contiguous src: whole rows, 16-byte units where sizes and addresses
 *     allow ("rows"); gather along the last dim with contiguous ids, rows of 4k positions and
 *     src rows at one stride: 4 positions per thread, vector id loads and stores ("gather_rows");
 *     other layouts: one element per thread ("read");
 *   - scatter_set, and float adds by default: the ordered path ("walk", one thread per slice
 *     walking `dim` in order: the CPU's result bit for bit);
 *   - integer adds: atomics ("elem"; wrapping adds commute, so the result is exact);
 *   - float adds with many updates (>= IDX_ATOMIC_MIN_UPDATES) over too few slices to fill the
 *     device: atomics too, unless WK_OPTION_DETERMINISTIC (then not bit-reproducible: the
 *     rounding of each add depends on the order of colliding updates);
 *   - a scatter destination whose elements alias (stride 0, overlapping strides): every
 *     position in row-major order on one thread (rare; the CPU does the same).
 * Outputs with no elements but ids still have their ids checked ("check"). */
#include "gpu_ops.h"
#include <stdio.h>

/* Float adds take atomics only from this many updates on (and only when the ordered path would
 * leave the device idle): smaller ops, the parity matrix among them, stay bit-exact. */
#define IDX_ATOMIC_MIN_UPDATES ((int64_t)1 << 20)

/* One operand row over the iteration dims: strides of `strides` (rank it->rank), the one along
 * zero_dim (if >= 0) set to 0, offset 0. */
static wk_layout row_of(const wk_layout *it, const int64_t *strides, int32_t zero_dim)
{
    wk_layout o = {.rank = it->rank};
    for (int k = 0; k < it->rank; k++) {
        o.dims[k] = it->dims[k];
        o.strides[k] = k == zero_dim ? 0 : strides[k];
    }
    return o;
}

/* An ids row for rank-1 ids indexed along dim: stride `s` along dim, 0 elsewhere. */
static wk_layout ids_row_by_dim(const wk_layout *it, int32_t dim, int64_t s)
{
    wk_layout o = {.rank = it->rank};
    for (int k = 0; k < it->rank; k++) {
        o.dims[k] = it->dims[k];
        o.strides[k] = k == dim ? s : 0;
    }
    return o;
}

static uint32_t kerr_code(wk_op op)
{
    switch (op) {
    case WK_OP_INDEX_SELECT: return WK_KERR_INDEX_SELECT;
    case WK_OP_GATHER: return WK_KERR_GATHER;
    case WK_OP_SCATTER_SET: return WK_KERR_SCATTER_SET;
    case WK_OP_SCATTER_ADD_SET: return WK_KERR_SCATTER_ADD_SET;
    default: return WK_KERR_INDEX_ADD;
    }
}

/* What every launch of one call shares. */
typedef struct idx_ctx {
    wk_device *dev;
    const wk_index_args *a;
    const char *idn;    /* ids dtype name in kernel names */
    const void *ids;    /* at the ids' layout offset */
    uint32_t *word;     /* the device's error record */
    uint32_t code;      /* WK_KERR_<op> */
    int64_t limit;      /* size of the indexed dim */
} idx_ctx;

/* Validates the ids alone (an output with no elements). */
static wk_status run_check(const idx_ctx *c)
{
    wk_klay1 k;
    wk_layout col;
    wk_gpu_klay1(&k, &col, c->a->li);
    int64_t n = wk_layout_elem_count(c->a->li), limit = c->limit;
    const void *ids = c->ids;
    uint32_t *word = c->word;
    uint32_t code = c->code;
    char name[48];
    snprintf(name, sizeof name, "index_check_%s", c->idn);
    void *args[] = {&n, &k, &ids, &limit, &word, &code};
    return wk_gpu_run(c->dev, "index", name, wk_gpu_blocks(c->dev, n), 1, 1, args);
}

/* out[i] = src[ind(i) + id(i) * dstep] over the iteration dims; ids at offsets idr(i). */
static wk_status run_read(const idx_ctx *c, const wk_layout *ind, const wk_layout *idr,
                          const void *src, int64_t dstep)
{
    wk_klay2 k;
    wk_layout col[2];
    wk_gpu_klay2(&k, col, ind, idr);
    int64_t n = wk_layout_elem_count(ind), limit = c->limit;
    const void *ids = c->ids;
    void *out = c->a->out;
    uint32_t *word = c->word;
    uint32_t code = c->code;
    char name[48];
    snprintf(name, sizeof name, "index_read_%s_%zu", c->idn, wk_dtype_size(c->a->dt));
    void *args[] = {&n, &k, &src, &ids, &out, &dstep, &limit, &word, &code};
    return wk_gpu_run(c->dev, "index", name, wk_gpu_blocks(c->dev, n), 1, 1, args);
}

/* index_select from a contiguous src (outer, S, inner): whole rows in units of B bytes. */
static wk_status run_rows(const idx_ctx *c, const void *src)
{
    const wk_index_args *a = c->a;
    const size_t es = wk_dtype_size(a->dt);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < a->dim; k++)
        outer *= a->ls->dims[k];
    for (int k = a->dim + 1; k < a->ls->rank; k++)
        inner *= a->ls->dims[k];
    int64_t nids = a->li->dims[0], S = c->limit, istep = a->li->strides[0];
    const uint64_t all = (uint64_t)inner * es | (uint64_t)(uintptr_t)src |
                         (uint64_t)(uintptr_t)a->out;
    int64_t B = 16;
    while (B > 1 && (all & (uint64_t)(B - 1)) != 0)
        B /= 2;
    int64_t V = inner * (int64_t)es / B;
    int64_t total = outer * nids * V; /* the output's bytes / B: fits (checked by the front end) */
    const void *ids = c->ids;
    void *out = a->out;
    uint32_t *word = c->word;
    uint32_t code = c->code;
    char name[48];
    snprintf(name, sizeof name, "index_rows_%s_%lld", c->idn, (long long)B);
    void *args[] = {&total, &V, &nids, &S, &ids, &istep, &src, &out, &word, &code};
    return wk_gpu_run(c->dev, "index", name, wk_gpu_blocks(c->dev, total), 1, 1, args);
}

static wk_status run_select(const idx_ctx *c)
{
    const wk_index_args *a = c->a;
    const int32_t dim = a->dim;
    wk_layout it = *a->ls;
    it.dims[dim] = a->li->dims[0];
    if (wk_layout_elem_count(&it) == 0)
        return run_check(c);
    const void *src = wk_gpu_at(a->src, a->ls->offset, wk_dtype_size(a->dt));
    if (wk_layout_is_contiguous(a->ls))
        return run_rows(c, src);
    const wk_layout ind = row_of(&it, a->ls->strides, dim);
    const wk_layout idr = ids_row_by_dim(&it, dim, a->li->strides[0]);
    return run_read(c, &ind, &idr, src, a->ls->strides[dim]);
}

/* gather along the last dim with contiguous ids whose rows have a multiple of 4 positions, src
 * rows at a constant stride over the ids' leading dims, ids and out aligned for 4-element
 * accesses: 4 positions per thread (kernels/index.cu, index_gather_rows). false: not this case. */
static bool gather_rows_fits(const idx_ctx *c, int64_t *srow)
{
    const wk_index_args *a = c->a;
    const wk_layout *it = a->li;
    const int r = it->rank;
    if (a->dim != r - 1 || it->dims[r - 1] % 4 != 0 || !wk_layout_is_contiguous(it))
        return false;
    /* src's offset of row (i_0 .. i_{r-2}) must be its row-major index times srow */
    *srow = r >= 2 ? a->ls->strides[r - 2] : 0;
    int64_t e = *srow;
    for (int k = r - 2; k >= 0; k--) {
        if (it->dims[k] > 1 && a->ls->strides[k] != e)
            return false;
        e *= it->dims[k];
    }
    const uint64_t is = wk_dtype_size(a->idt), es = wk_dtype_size(a->dt);
    const uint64_t ial = 4 * is < 16 ? 4 * is : 16, oal = 4 * es < 16 ? 4 * es : 16;
    return (uint64_t)(uintptr_t)c->ids % ial == 0 && (uint64_t)(uintptr_t)a->out % oal == 0;
}

static wk_status run_gather(const idx_ctx *c)
{
    const wk_index_args *a = c->a;
    const wk_layout *it = a->li;
    const void *src = wk_gpu_at(a->src, a->ls->offset, wk_dtype_size(a->dt));
    int64_t srow;
    if (gather_rows_fits(c, &srow)) {
        int64_t n4 = wk_layout_elem_count(it) / 4, L4 = it->dims[it->rank - 1] / 4;
        int64_t dstep = a->ls->strides[a->dim], limit = c->limit;
        const void *ids = c->ids;
        void *out = a->out;
        uint32_t *word = c->word;
        uint32_t code = c->code;
        char name[48];
        snprintf(name, sizeof name, "index_gather_rows_%s_%zu", c->idn, wk_dtype_size(a->dt));
        void *args[] = {&n4, &L4, &srow, &dstep, &src, &ids, &out, &limit, &word, &code};
        return wk_gpu_run(c->dev, "index", name, wk_gpu_blocks(c->dev, n4), 1, 1, args);
    }
    const wk_layout ind = row_of(it, a->ls->strides, a->dim);
    const wk_layout idr = row_of(it, a->li->strides, -1);
    return run_read(c, &ind, &idr, src, a->ls->strides[a->dim]);
}

/* The writing ops: dst[ind(p) + id(p) * dstep] (+)= src[pl(p)] over the iteration dims. */
typedef struct idx_write {
    wk_layout ind, pl, idr; /* operand rows over the iteration dims (ind: 0 along dim) */
    void *dst;
    const void *src;
    int64_t dstep;
    bool add, injective;
} idx_write;

static wk_status run_write(const idx_ctx *c, const idx_write *w)
{
    const wk_index_args *a = c->a;
    const int32_t dim = a->dim;
    int64_t n = wk_layout_elem_count(&w->ind);
    if (n == 0)
        return run_check(c);
    const bool is_int = wk_dtype_is_int(a->dt);
    int64_t len = w->ind.dims[dim], ns = n / len; /* n > 0: len > 0 */
    const int64_t sm = wk_gpu_sm_count(c->dev) > 0 ? wk_gpu_sm_count(c->dev) : 1;
    const bool few_slices = ns < sm * 2048; /* fewer walkers than the device has thread slots */
    const char *kind; /* "walk" or "elem" */
    int32_t serial = 0;
    if (!w->injective && !(w->add && is_int)) {
        kind = "elem"; /* aliasing destination: row-major order on one thread */
        serial = 1;
    } else if (w->add && (is_int || (!wk_get_option(WK_OPTION_DETERMINISTIC) &&
                                     n >= IDX_ATOMIC_MIN_UPDATES && few_slices))) {
        kind = "elem";
    } else {
        kind = "walk";
    }
    char name[48];
    if (w->add)
        snprintf(name, sizeof name, "index_%s_add_%s_%s", kind, c->idn,
                 wk_gpu_dtype_kname(a->dt));
    else
        snprintf(name, sizeof name, "index_%s_set_%s_%zu", kind, c->idn, wk_dtype_size(a->dt));

    void *dst = w->dst;
    const void *src = w->src, *ids = c->ids;
    int64_t dstep = w->dstep, limit = c->limit;
    uint32_t *word = c->word;
    uint32_t code = c->code;
    wk_klay3 k;
    wk_layout col[3];
    if (kind[0] == 'e') {
        wk_gpu_klay3(&k, col, &w->ind, &w->pl, &w->idr);
        void *args[] = {&n, &serial, &k, &dst, &src, &ids, &dstep, &limit, &word, &code};
        return wk_gpu_run(c->dev, "index", name, serial ? 1u : wk_gpu_blocks(c->dev, n), 1, 1,
                          args);
    }
    /* walk: the slices are the iteration dims without dim */
    int64_t sstep = w->pl.strides[dim], istep = w->idr.strides[dim];
    wk_layout si = w->ind, sp = w->pl, sd = w->idr;
    si.dims[dim] = sp.dims[dim] = sd.dims[dim] = 1;
    wk_gpu_klay3(&k, col, &si, &sp, &sd);
    void *args[] = {&ns, &len, &k, &dst, &src, &ids, &dstep, &sstep, &istep, &limit, &word,
                    &code};
    int64_t blocks = (ns + WK_GPU_BLOCK - 1) / WK_GPU_BLOCK;
    if (blocks > ((int64_t)1 << 20))
        blocks = (int64_t)1 << 20; /* the kernel's grid-stride loop covers the rest */
    return wk_gpu_run(c->dev, "index", name, (unsigned)blocks, 1, 1, args);
}

static wk_status run_scatter(const idx_ctx *c)
{
    const wk_index_args *a = c->a;
    const size_t es = wk_dtype_size(a->dt);
    const wk_layout *it = a->li;
    idx_write w = {
        .ind = row_of(it, a->ld->strides, a->dim),
        .pl = row_of(it, a->ls->strides, -1),
        .idr = row_of(it, a->li->strides, -1),
        .dst = wk_gpu_at(a->dst, a->ld->offset, es),
        .src = wk_gpu_at(a->src, a->ls->offset, es),
        .dstep = a->ld->strides[a->dim],
        .add = a->op == WK_OP_SCATTER_ADD_SET,
        .injective = wk_layout_injective(a->ld),
    };
    return run_write(c, &w);
}

/* index_add: out (contiguous, dst's dims, already a copy of dst) [.., ids[i], ..] += src. */
static wk_status run_index_add(const idx_ctx *c)
{
    const wk_index_args *a = c->a;
    const int32_t dim = a->dim;
    const wk_layout *it = a->ls;
    int64_t cs[WK_MAX_RANK], m = 1; /* out's contiguous strides */
    for (int k = a->ld->rank - 1; k >= 0; k--) {
        cs[k] = m;
        m *= a->ld->dims[k];
    }
    idx_write w = {
        .ind = row_of(it, cs, dim),
        .pl = row_of(it, a->ls->strides, -1),
        .idr = ids_row_by_dim(it, dim, a->li->strides[0]),
        .dst = a->out,
        .src = wk_gpu_at(a->src, a->ls->offset, wk_dtype_size(a->dt)),
        .dstep = cs[dim],
        .add = true,
        .injective = true, /* a fresh contiguous output */
    };
    return run_write(c, &w);
}

wk_status wk_gpu_index(wk_device *dev, const wk_index_args *a)
{
    if (wk_layout_elem_count(a->li) == 0)
        return WK_OK; /* no ids: nothing to check, nothing to move */
    idx_ctx c = {
        .dev = dev,
        .a = a,
        .idn = wk_gpu_dtype_kname(a->idt),
        .ids = wk_gpu_at(a->ids, a->li->offset, wk_dtype_size(a->idt)),
        .code = kerr_code(a->op),
    };
    wk_status st = wk_gpu_error_word(dev, &c.word);
    if (st != WK_OK)
        return st;
    switch (a->op) {
    case WK_OP_INDEX_SELECT:
        c.limit = a->ls->dims[a->dim];
        return run_select(&c);
    case WK_OP_GATHER:
        c.limit = a->ls->dims[a->dim];
        return run_gather(&c);
    case WK_OP_SCATTER_SET:
    case WK_OP_SCATTER_ADD_SET:
        c.limit = a->ld->dims[a->dim];
        return run_scatter(&c);
    case WK_OP_INDEX_ADD:
        c.limit = a->ld->dims[a->dim];
        return run_index_add(&c);
    default:
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu index: op %s is not an indexing op",
                      wk_op_name(a->op));
    }
}
