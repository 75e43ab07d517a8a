/* cpu_index.c: the CPU indexing ops: index_select, gather (out-of-place reads), scatter_set,
 * scatter_add_set (in place) and index_add (adds into a fresh copy of dst), every value dtype,
 * ids u8/u32/i64.
 *
 * Two passes, so that a bad id writes nothing: first every id is read (any layout), checked and
 * resolved into an i64 table (-1 for Candle's "none" sentinel, the dtype's maximum); then one
 * driver walks the iteration dims in row-major order with two walkers: the "indexed" operand
 * (the one addressed by the id along `dim`, its stride along dim replaced by 0 and id * stride
 * added) and the "plain" operand (read or written at the same multi-index).
 * Writes that can collide (scatter*, index_add: positions that differ only along dim, or a
 * destination layout that aliases itself) keep row-major order: the work is split only at
 * boundaries of the dims before `dim`, and runs on one thread when the destination may alias.
 * Float adds compute in f32 (f64 for f64) and round to the storage type at each add; integer
 * adds wrap.
 * Fast paths: index_select whose source rows (the dims after `dim`) are contiguous copies whole
 * rows with memcpy (embedding lookups); gather over contiguous operands of equal dims (but along
 * `dim`) reads ids and values with plain index arithmetic, per id dtype and element size. */
#include "cpu_elem.h"
#include <stdio.h>
#include <string.h>

/* ---- per-dtype element add: *d += *x */
#define DEF_ADD_F(E, s, T, CT)                                                 \
    static void add_##s(void *d, const void *x)                                \
    {                                                                          \
        T *p = d;                                                              \
        *p = wk_cpu_st_##s(wk_cpu_ld_##s(*p) + wk_cpu_ld_##s(*(const T *)x)); \
    }
WK_CPU_FLOAT_TYPES(DEF_ADD_F)
#define DEF_ADD_I(E, s, T, A, S, MIN, MAX)          \
    static void add_##s(void *d, const void *x)     \
    {                                               \
        T *p = d;                                   \
        *p = (T)((A)*p + (A)*(const T *)x);         \
    }
WK_CPU_INT_TYPES(DEF_ADD_I)
typedef void (*add_fn)(void *d, const void *x);
#define ADD_ENTRY(E, s, T) [WK_DTYPE_##E] = add_##s,
static const add_fn adds[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(ADD_ENTRY)};

static inline void copy_elem(void *d, const void *x, size_t es)
{
    switch (es) {
    case 1: *(uint8_t *)d = *(const uint8_t *)x; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)x; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)x; break;
    default: *(uint64_t *)d = *(const uint64_t *)x; break;
    }
}

/* "[1,2]" for the multi-index of a walker (messages). */
static void index_str(char *buf, size_t cap, const wk_walker *w)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int k = 0; k < w->rank && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", k ? "," : "", (long long)w->idx[k]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

/* rid[p] = the id at row-major position p of li (n elements), -1 for the sentinel. Any other id
 * outside [0, limit) fails, naming the value and its position; nothing else happens. */
static wk_status resolve_ids(int64_t *rid, const wk_index_args *a, int64_t n, int64_t limit)
{
    wk_walker w;
    wk_walker_init(&w, a->li, 0);
    for (int64_t p = 0; p < n; p++, wk_walker_next(&w)) {
        int64_t v;
        int neg = 0;
        unsigned long long raw;
        switch (a->idt) {
        case WK_DTYPE_U8: raw = ((const uint8_t *)a->ids)[w.off]; v = raw == UINT8_MAX ? -1 : (int64_t)raw; break;
        case WK_DTYPE_U32: raw = ((const uint32_t *)a->ids)[w.off]; v = raw == UINT32_MAX ? -1 : (int64_t)raw; break;
        default: {
            const int64_t s = ((const int64_t *)a->ids)[w.off];
            raw = (unsigned long long)s;
            v = s == INT64_MAX ? -1 : s;
            neg = s < 0;
            break;
        }
        }
        if (neg || v >= limit) {
            char pos[160];
            index_str(pos, sizeof pos, &w);
            if (neg)
                return wk_err(WK_ERR_INDEX_OUT_OF_RANGE,
                              "%s: id %lld at ids position %s is negative (dim %d has size %lld)",
                              wk_op_name(a->op), (long long)raw, pos, (int)a->dim, (long long)limit);
            return wk_err(WK_ERR_INDEX_OUT_OF_RANGE,
                          "%s: id %llu (%s) at ids position %s is out of range for dim %d of size %lld",
                          wk_op_name(a->op), raw, wk_dtype_name(a->idt), pos, (int)a->dim, (long long)limit);
        }
        rid[p] = v;
    }
    return WK_OK;
}

typedef enum mode { M_READ, M_SET, M_ADD } mode;

/* One run of the driver. iter: the iteration dims; ind: the indexed operand (iteration dims, its
 * own strides, 0 along dim), istride its stride along dim; plain: the other operand. */
typedef struct job {
    mode m;
    int32_t dim;
    int by_dim; /* id = rid[idx[dim]] (ids rank 1) rather than rid[position] */
    const int64_t *rid;
    size_t es;
    add_fn add;
    char *ind_base;
    wk_layout ind;
    int64_t istride;
    char *plain_base;
    wk_layout plain;
} job;

static void run_range(const job *j, int64_t s, int64_t e)
{
    wk_walker wi, wp;
    wk_walker_init(&wi, &j->ind, s);
    wk_walker_init(&wp, &j->plain, s);
    const size_t es = j->es;
    for (int64_t p = s; p < e; p++, wk_walker_next(&wi), wk_walker_next(&wp)) {
        const int64_t id = j->rid[j->by_dim ? wi.idx[j->dim] : p];
        char *pl = j->plain_base + (size_t)wp.off * es;
        if (id < 0) { /* the sentinel: zero when reading, nothing when writing */
            if (j->m == M_READ)
                memset(pl, 0, es);
            continue;
        }
        char *in = j->ind_base + (size_t)(wi.off + id * j->istride) * es;
        if (j->m == M_READ)
            copy_elem(pl, in, es);
        else if (j->m == M_SET)
            copy_elem(in, pl, es);
        else
            j->add(in, pl);
    }
}

/* Runs j over n positions, in parallel chunks that start at multiples of `block` positions
 * (block = 1: any split; block 0: one thread, in order). */
static void run_job(const job *j, int64_t n, int64_t block)
{
    int64_t units = block > 0 ? n / block : 1;
    int64_t nch = block > 0 ? wk_cpu_chunks(n) : 1;
    if (nch > units)
        nch = units;
    if (nch <= 1) {
        run_range(j, 0, n);
        return;
    }
    const int64_t per = (units + nch - 1) / nch;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < nch; c++) {
        int64_t s = c * per * block, e = (c + 1) * per * block;
        if (e > n)
            e = n;
        if (s < e)
            run_range(j, s, e);
    }
}

/* A layout with dims `dims` (rank r) over the strides of l, stride 0 along dim. */
static wk_layout with_dims(const wk_layout *l, const wk_layout *dims, int32_t dim)
{
    wk_layout o = *l;
    o.rank = dims->rank;
    for (int k = 0; k < dims->rank; k++)
        o.dims[k] = dims->dims[k];
    if (dim >= 0)
        o.strides[dim] = 0;
    return o;
}

/* Row-major contiguous layout of dims. */
static wk_layout contig_of(const wk_layout *dims)
{
    wk_layout o = {.rank = dims->rank};
    int64_t m = 1;
    for (int k = dims->rank - 1; k >= 0; k--) {
        o.dims[k] = dims->dims[k];
        o.strides[k] = m;
        m *= dims->dims[k];
    }
    return o;
}

/* ---- fast paths of the reads. A fresh output may be written before a bad id is found (the
 * front end frees it on failure); every read is checked first, so nothing out of range is read.
 */

/* 1 when dims [k0, rank) of l are row-major contiguous (strides[k] = product of later dims). */
static int inner_contig(const wk_layout *l, int k0)
{
    int64_t m = 1;
    for (int k = l->rank - 1; k >= k0; k--) {
        if (l->dims[k] != 1 && l->strides[k] != m)
            return 0;
        m *= l->dims[k];
    }
    return 1;
}

/* index_select with src's dims after dim contiguous: out (outer, nids, inner) is nids whole rows
 * of inner elements per outer index, each one memcpy (the rows of an embedding table). */
static void select_rows(const wk_index_args *a, const int64_t *rid, int64_t nids)
{
    const wk_layout *ls = a->ls;
    const int32_t dim = a->dim;
    const size_t es = wk_dtype_size(a->dt);
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < dim; k++)
        outer *= ls->dims[k];
    for (int k = dim + 1; k < ls->rank; k++)
        inner *= ls->dims[k];
    const size_t rowb = (size_t)inner * es;
    const int64_t nrows = outer * nids;
    const char *src = a->src;
    char *out = a->out;
#pragma omp parallel for schedule(static) if (nrows > 1 && nrows * inner >= WK_CPU_PAR_THRESHOLD)
    for (int64_t r = 0; r < nrows; r++) {
        const int64_t i = r % nids;
        int64_t rem = r / nids, off = ls->offset;
        for (int k = dim - 1; k >= 0; k--) {
            off += (rem % ls->dims[k]) * ls->strides[k];
            rem /= ls->dims[k];
        }
        char *d = out + (size_t)r * rowb;
        if (rid[i] < 0)
            memset(d, 0, rowb);
        else
            memcpy(d, src + (size_t)(off + rid[i] * ls->strides[dim]) * es, rowb);
    }
}

/* gather over contiguous src and ids of the same dims except along dim, viewed as (outer, D, K):
 * out[(o*di + i)*K + k] = src[(o*ds + id)*K + k], id = ids[(o*di + i)*K + k], read directly
 * (no resolved table). Returns 1 if some id was out of range (its element is left 0). */
#define DEF_GATHER(IN, IT, SENT, EN, ET)                                                         \
    /* o[i] = s[ir[i]] for i < n, every id known to be in range: a plain loop that the clones    \
     * for AVX2 and AVX-512 turn into vector gathers */                                          \
    WK_CPU_CLONES static void gather_run_##IN##_##EN(ET *restrict o, const ET *restrict s,       \
                                                     const IT *restrict ir, int64_t n)           \
    {                                                                                            \
        for (int64_t i = 0; i < n; i++)                                                          \
            o[i] = s[(int64_t)ir[i]];                                                            \
    }                                                                                            \
    /* 1 if every id of ir[0..n) is < ds (the sentinel of u8/u32 ids is not) */                 \
    WK_CPU_CLONES static int gather_ok_##IN##_##EN(const IT *restrict ir, int64_t n, int64_t ds) \
    {                                                                                            \
        int ok = 1;                                                                              \
        for (int64_t i = 0; i < n; i++)                                                          \
            ok &= (uint64_t)ir[i] < (uint64_t)ds;                                                \
        return ok;                                                                               \
    }                                                                                            \
    /* positions [i0, i1) along dim of one outer slab: o (di x K) <- s (ds x K) by ir */         \
    static int gather_slab_##IN##_##EN(ET *restrict o, const ET *restrict s,                     \
                                       const IT *restrict ir, int64_t i0, int64_t i1,            \
                                       int64_t ds, int64_t K)                                    \
    {                                                                                            \
        if (K == 1 && gather_ok_##IN##_##EN(ir + i0, i1 - i0, ds)) {                             \
            gather_run_##IN##_##EN(o + i0, s, ir + i0, i1 - i0);                                 \
            return 0;                                                                            \
        }                                                                                        \
        int bad = 0;                                                                             \
        for (int64_t i = i0; i < i1; i++)                                                        \
            for (int64_t k = 0; k < K; k++) {                                                    \
                const IT v = ir[i * K + k];                                                      \
                const int ok = v != (SENT) && (uint64_t)v < (uint64_t)ds;                        \
                bad |= !ok && v != (SENT);                                                       \
                o[i * K + k] = ok ? s[(int64_t)v * K + k] : 0;                                   \
            }                                                                                    \
        return bad;                                                                              \
    }                                                                                            \
    static int gather_##IN##_##EN(ET *out, const ET *src, const IT *ids, int64_t outer,          \
                                  int64_t di, int64_t ds, int64_t K)                             \
    {                                                                                            \
        int bad = 0;                                                                             \
        const int par = outer * di * K >= WK_CPU_PAR_THRESHOLD;                                  \
        if (outer >= 2 * omp_get_max_threads()) { /* threads over outer slabs */                 \
            _Pragma("omp parallel for schedule(static) reduction(|:bad) if (par)")               \
            for (int64_t o = 0; o < outer; o++)                                                  \
                bad |= gather_slab_##IN##_##EN(out + o * di * K, src + o * ds * K,               \
                                               ids + o * di * K, 0, di, ds, K);                  \
            return bad;                                                                          \
        }                                                                                        \
        const int64_t nch = par ? 4 * (int64_t)omp_get_max_threads() : 1;                       \
        for (int64_t o = 0; o < outer; o++) { /* threads over chunks along dim */                \
            _Pragma("omp parallel for schedule(static) reduction(|:bad) if (par)")               \
            for (int64_t c = 0; c < nch; c++)                                                    \
                bad |= gather_slab_##IN##_##EN(out + o * di * K, src + o * ds * K,               \
                                               ids + o * di * K, di * c / nch,                   \
                                               di * (c + 1) / nch, ds, K);                       \
        }                                                                                        \
        return bad;                                                                              \
    }
#define GATHER_ES(IN, IT, SENT)                       \
    DEF_GATHER(IN, IT, SENT, 1, uint8_t)              \
    DEF_GATHER(IN, IT, SENT, 2, uint16_t)             \
    DEF_GATHER(IN, IT, SENT, 4, uint32_t)             \
    DEF_GATHER(IN, IT, SENT, 8, uint64_t)
GATHER_ES(u8, uint8_t, UINT8_MAX)
GATHER_ES(u32, uint32_t, UINT32_MAX)
GATHER_ES(i64, int64_t, INT64_MAX)

/* The gather fast path when it applies: returns 1 if it ran and every id was in range. */
static int gather_fast(const wk_index_args *a)
{
    const wk_layout *ls = a->ls, *li = a->li;
    const int32_t dim = a->dim;
    if (!wk_layout_is_contiguous(ls) || !wk_layout_is_contiguous(li) || li->rank != ls->rank)
        return 0;
    for (int k = 0; k < ls->rank; k++)
        if (k != dim && li->dims[k] != ls->dims[k])
            return 0;
    int64_t outer = 1, K = 1;
    for (int k = 0; k < dim; k++)
        outer *= ls->dims[k];
    for (int k = dim + 1; k < ls->rank; k++)
        K *= ls->dims[k];
    const int64_t di = li->dims[dim], ds = ls->dims[dim];
    const size_t es = wk_dtype_size(a->dt);
    const void *src = (const char *)a->src + (size_t)ls->offset * es;
    const void *ids = (const char *)a->ids + (size_t)li->offset * wk_dtype_size(a->idt);
    int bad = 1;
#define GATHER_CALL(IN, IT)                                                                      \
    switch (es) {                                                                                \
    case 1: bad = gather_##IN##_1(a->out, src, ids, outer, di, ds, K); break;                    \
    case 2: bad = gather_##IN##_2(a->out, src, ids, outer, di, ds, K); break;                    \
    case 4: bad = gather_##IN##_4(a->out, src, ids, outer, di, ds, K); break;                    \
    default: bad = gather_##IN##_8(a->out, src, ids, outer, di, ds, K); break;                   \
    }
    switch (a->idt) {
    case WK_DTYPE_U8: GATHER_CALL(u8, uint8_t) break;
    case WK_DTYPE_U32: GATHER_CALL(u32, uint32_t) break;
    default: GATHER_CALL(i64, int64_t) break;
    }
#undef GATHER_CALL
    return !bad;
}

wk_status wk_cpu_index(wk_device *dev, const wk_index_args *a)
{
    (void)dev;
    /* a gather over contiguous operands reads its ids directly; a bad id sends it on to the
     * general path below, which names the first one */
    if (a->op == WK_OP_GATHER && wk_layout_elem_count(a->li) > 0 && gather_fast(a))
        return WK_OK;
    const int32_t dim = a->dim;
    const int64_t nids = wk_layout_elem_count(a->li);
    job j = {.dim = dim, .es = wk_dtype_size(a->dt), .add = adds[a->dt]};
    wk_layout iter;
    int64_t limit, block = 1;
    switch (a->op) {
    case WK_OP_INDEX_SELECT: { /* out (src dims, dims[dim] = n) = src[.., ids[i], ..] */
        iter = *a->ls;
        iter.dims[dim] = nids;
        limit = a->ls->dims[dim];
        j.m = M_READ;
        j.by_dim = 1;
        j.ind_base = (char *)a->src;
        j.ind = with_dims(a->ls, &iter, dim);
        j.istride = a->ls->strides[dim];
        j.plain_base = a->out;
        j.plain = contig_of(&iter);
        break;
    }
    case WK_OP_GATHER:
        iter = *a->li;
        limit = a->ls->dims[dim];
        j.m = M_READ;
        j.ind_base = (char *)a->src;
        j.ind = with_dims(a->ls, &iter, dim);
        j.istride = a->ls->strides[dim];
        j.plain_base = a->out;
        j.plain = contig_of(&iter);
        break;
    case WK_OP_SCATTER_SET:
    case WK_OP_SCATTER_ADD_SET:
        iter = *a->li;
        limit = a->ld->dims[dim];
        j.m = a->op == WK_OP_SCATTER_SET ? M_SET : M_ADD;
        j.ind_base = a->dst;
        j.ind = with_dims(a->ld, &iter, dim);
        j.istride = a->ld->strides[dim];
        j.plain_base = (char *)a->src;
        j.plain = with_dims(a->ls, &iter, -1);
        break;
    case WK_OP_INDEX_ADD: { /* out (dst dims, contiguous) [.., ids[i], ..] += src[.., i, ..] */
        iter = *a->ls;
        limit = a->ld->dims[dim];
        j.m = M_ADD;
        j.by_dim = 1;
        const wk_layout lo = contig_of(a->ld);
        j.ind_base = a->out;
        j.ind = with_dims(&lo, &iter, dim);
        j.istride = lo.strides[dim];
        j.plain_base = (char *)a->src;
        j.plain = with_dims(a->ls, &iter, -1);
        break;
    }
    default:
        return wk_err(WK_ERR_INVALID_ARGUMENT, "cpu index: op %s is not an indexing op", wk_op_name(a->op));
    }

    int64_t *rid = wk_malloc((size_t)(nids > 0 ? nids : 1) * sizeof *rid);
    if (!rid)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: cannot allocate %lld resolved ids", wk_op_name(a->op),
                      (long long)nids);
    wk_status st = resolve_ids(rid, a, nids, limit);
    if (st == WK_OK) {
        j.rid = rid;
        const int64_t n = wk_layout_elem_count(&iter);
        if (j.m != M_READ) { /* collisions only within one block of the dims before dim */
            block = 1;
            for (int k = dim; k < iter.rank; k++)
                block *= iter.dims[k];
            if (a->op != WK_OP_INDEX_ADD && !wk_layout_injective(a->ld))
                block = 0;
        }
        if (n > 0 && a->op == WK_OP_INDEX_SELECT && inner_contig(a->ls, dim + 1))
            select_rows(a, rid, nids);
        else if (n > 0)
            run_job(&j, n, block);
    }
    wk_free(rid);
    return st;
}
