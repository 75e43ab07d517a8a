/* run_index.c: runner of the indexing rows (index_select, gather, scatter_set, scatter_add_set,
 * index_add). The values (src, and dst for the in-place and index_add rows) take the family's
 * layout; the ids take the family's layout too (strided, transposed, broadcast: repeated ids),
 * with ids dtypes u8, u32 and i64 in turn, about 8% of them the "none" sentinel, and values
 * drawn from a range shorter than the ids, so duplicates are common. Two cases per family along
 * random dims; the contiguous and strided families add a case with one id out of range, which
 * must fail with WK_ERR_INDEX_OUT_OF_RANGE and leave the destination untouched. On a GPU the
 * error may surface at the next synchronizing call instead (docs/semantics.md): the call returns
 * WK_OK, the synchronize the error, the op's output is undefined and only the elements outside it
 * (the guard regions of the in-place destination) must be untouched. In-place rows check the
 * whole destination storage (guard regions). Inputs must stay untouched. */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const wk_dtype id_types[3] = {WK_DTYPE_U8, WK_DTYPE_U32, WK_DTYPE_I64};

/* After a deferred failure: every element of t's storage outside `written` is unchanged. */
static void guards_unchanged(pt_ctx *c, const pt_tensor *t, const unsigned char *written)
{
    const size_t es = ref_dtype_size(t->dtype);
    unsigned char *got = pt_alloc(c, t->len * es);
    if (!got)
        return;
    const wk_status st = wk_storage_to_host(got, t->len, t->s);
    if (st != WK_OK)
        pt_fail(c, "wk_storage_to_host(destination) failed: %s", wk_status_string(st));
    for (size_t i = 0; st == WK_OK && i < t->len; i++)
        if (!written[i] && memcmp(got + i * es, t->host + i * es, es) != 0) {
            pt_fail(c, "destination element %zu outside the op's output was modified by a call "
                       "that failed (deferred)", i);
            break;
        }
    free(got);
}

/* ids: dims (rank), layout of the family, every storage element an id in [0, limit) (capped
 * for u8 below its sentinel) or the sentinel; bad >= 0: row-major element `bad` is out of range. */
static int make_ids(pt_ctx *c, pt_tensor *t, wk_dtype idt, int32_t rank, const int64_t *dims,
                    int64_t limit, int64_t bad, pt_rng *r)
{
    wk_layout l;
    size_t len;
    pt_layout_for(&l, &len, c->fam, rank, dims, r);
    unsigned char *host = pt_alloc(c, len * ref_dtype_size(idt));
    if (!host)
        return 0;
    const int64_t cap = idt == WK_DTYPE_U8 && limit > 255 ? 255 : limit;
    for (size_t i = 0; i < len; i++) {
        int64_t v = cap == 0 || pt_rng_unif(r) < 0.08 ? ref_int_max(idt) : pt_rng_range(r, 0, cap - 1);
        ref_store_i(idt, host, (int64_t)i, v);
    }
    if (bad >= 0 && bad < ref_count(&l)) {
        /* u8/u32: the first value past the dim (not the sentinel); i64: a negative id */
        int64_t v = idt == WK_DTYPE_I64 ? -1 - pt_rng_range(r, 0, 5) : limit;
        if (v == ref_int_max(idt))
            v--; /* limit 255 on u8 would be the sentinel: 254 is then in range, use no bad id */
        ref_store_i(idt, host, ref_offset(&l, bad), v);
    }
    int ok = pt_tensor_upload(c, t, idt, len, host, &l);
    free(host);
    return ok;
}

/* A destination of the family's layout holding values of the row's domain; written[] marks the
 * storage elements its layout addresses. */
static int make_dst(pt_ctx *c, pt_tensor *t, unsigned char **written, int32_t rank,
                    const int64_t *dims, pt_rng *r)
{
    if (!pt_tensor_make(c, t, c->dt, rank, dims, r, c->row->domain, 0))
        return 0;
    *written = pt_alloc(c, t->len);
    if (!*written)
        return 0;
    for (int64_t i = 0; i < ref_count(&t->l); i++)
        (*written)[ref_offset(&t->l, i)] = 1;
    return 1;
}

static void index_case(pt_ctx *c, pt_rng *r, int32_t rank, const int64_t *dims, int32_t dim,
                       wk_dtype idt, int with_bad)
{
    const wk_op op = c->row->op;
    const size_t es = ref_dtype_size(c->dt);
    pt_tensor src = {0}, ids = {0}, dst = {0};
    unsigned char *written = NULL, *want = NULL;
    wk_storage *out = NULL;
    int64_t idims[WK_MAX_RANK], sdims[WK_MAX_RANK];
    pt_case_begin(c);
    const int64_t limit = dims[dim];
    const int64_t nd = pt_rng_range(r, 1, limit + 3); /* ids along dim */
    const int inplace = op == WK_OP_SCATTER_SET || op == WK_OP_SCATTER_ADD_SET;
    const int rank1_ids = op == WK_OP_INDEX_SELECT || op == WK_OP_INDEX_ADD;
    /* ids dims: rank 1 (nd), or the values' rank, no larger outside dim (and not empty unless
     * the values are: an empty view at an offset does not fit a storage of 0 elements) */
    for (int k = 0; k < rank; k++)
        idims[k] = k == dim ? nd : dims[k] - pt_rng_range(r, 0, dims[k] > 2 ? 2 : dims[k] > 0 ? dims[k] - 1 : 0);
    if (rank1_ids)
        idims[0] = nd;
    int64_t nids = 1;
    for (int k = 0; k < (rank1_ids ? 1 : rank); k++)
        nids *= idims[k];
    const int64_t bad = with_bad && nids > 0 ? pt_rng_range(r, 0, nids - 1) : -1;
    const int bad_real = bad >= 0 && !(idt == WK_DTYPE_U8 && limit >= 255);
    if (!make_ids(c, &ids, idt, rank1_ids ? 1 : rank, idims, limit, bad_real ? bad : -1, r))
        goto done;

    wk_status st, rst = WK_OK;
    int64_t n = 0;
    char sub_ids[96], sub_v[96];
    pt_layout_str(sub_ids, sizeof sub_ids, &ids.l);
    if (op == WK_OP_INDEX_SELECT || op == WK_OP_GATHER) {
        if (!pt_tensor_make(c, &src, c->dt, rank, dims, r, c->row->domain, 0))
            goto done;
        n = 1;
        for (int k = 0; k < rank; k++)
            n *= op == WK_OP_GATHER ? idims[k] : k == dim ? nd : dims[k];
        want = pt_alloc(c, (size_t)n * es);
        if (!want)
            goto done;
        snprintf(c->sub, sizeof c->sub, "dim %d ids %s %s src %s", (int)dim, wk_dtype_name(idt), sub_ids,
                 pt_layout_str(sub_v, sizeof sub_v, &src.l));
        int deferred = 0;
        if (op == WK_OP_INDEX_SELECT) {
            st = wk_index_select(&out, src.s, &src.l, ids.s, &ids.l, dim);
            if (!c->probing)
                rst = ref_index_select(want, c->dt, src.host, &src.l, idt, ids.host, &ids.l, dim);
        } else {
            st = wk_gather(&out, src.s, &src.l, ids.s, &ids.l, dim);
            if (!c->probing)
                rst = ref_gather(want, c->dt, src.host, &src.l, idt, ids.host, &ids.l, dim);
        }
        st = pt_settle(c, st, &out, &deferred);
        if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
            pt_check_output(c, out, c->dt, want, n, c->row->tol);
        if (st != WK_OK && out)
            pt_fail(c, "a failed call returned an output");
    } else {
        /* src: ids' dims (scatter) or dst's dims with dims[dim] = nd (index_add) */
        for (int k = 0; k < rank; k++)
            sdims[k] = inplace ? idims[k] : k == dim ? nd : dims[k];
        if (!make_dst(c, &dst, &written, rank, dims, r) ||
            !pt_tensor_make(c, &src, c->dt, rank, sdims, r, c->row->domain, 0))
            goto done;
        snprintf(c->sub, sizeof c->sub, "dim %d ids %s %s dst %s", (int)dim, wk_dtype_name(idt), sub_ids,
                 pt_layout_str(sub_v, sizeof sub_v, &dst.l));
        if (inplace) {
            want = pt_alloc(c, dst.len * es);
            if (!want)
                goto done;
            memcpy(want, dst.host, dst.len * es);
            st = op == WK_OP_SCATTER_SET ? wk_scatter_set(dst.s, &dst.l, ids.s, &ids.l, src.s, &src.l, dim)
                                         : wk_scatter_add_set(dst.s, &dst.l, ids.s, &ids.l, src.s, &src.l, dim);
            int deferred = 0;
            st = pt_settle(c, st, NULL, &deferred);
            if (!c->probing)
                rst = ref_scatter(want, op == WK_OP_SCATTER_ADD_SET, c->dt, &dst.l, idt, ids.host, &ids.l,
                                  src.host, &src.l, dim);
            if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
                pt_check_inplace(c, dst.s, c->dt, want, dst.len, written);
            if (st != WK_OK && deferred)
                guards_unchanged(c, &dst, written);
            else if (st != WK_OK) /* a failed call writes nothing */
                pt_tensor_unchanged(c, &dst, "destination of a failed call");
        } else {
            n = ref_count(&dst.l);
            want = pt_alloc(c, (size_t)n * es);
            if (!want)
                goto done;
            st = wk_index_add(&out, dst.s, &dst.l, ids.s, &ids.l, src.s, &src.l, dim);
            int deferred = 0;
            st = pt_settle(c, st, &out, &deferred);
            if (!c->probing)
                rst = ref_index_add(want, c->dt, dst.host, &dst.l, idt, ids.host, &ids.l, src.host, &src.l, dim);
            if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
                pt_check_output(c, out, c->dt, want, n, c->row->tol);
            if (st != WK_OK && out)
                pt_fail(c, "a failed call returned an output");
            pt_tensor_unchanged(c, &dst, "dst");
        }
    }
    pt_tensor_unchanged(c, &src, "src");
    pt_tensor_unchanged(c, &ids, "ids");
done:
    wk_storage_free(out);
    free(want);
    free(written);
    pt_tensor_free(&src);
    pt_tensor_free(&ids);
    pt_tensor_free(&dst);
}

void pt_run_index(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    if (rank == 0)
        return; /* no dim to index */
    const int ncases = c->probing ? 1 : 2;
    for (int k = 0; k < ncases; k++) {
        const int32_t dim = (int32_t)pt_rng_range(r, 0, rank - 1);
        index_case(c, r, rank, dims, dim, id_types[(c->fam + k) % 3], 0);
    }
    if (!c->probing && (c->fam == PF_CONTIG || c->fam == PF_STRIDED))
        for (int k = 0; k < 3; k++) /* one bad id per ids dtype */
            index_case(c, r, rank, dims, (int32_t)pt_rng_range(r, 0, rank - 1), id_types[k], 1);
}
