/* run_copy.c: runners of the in-place rows (const_set, copy_strided_src, copy2d). The destination
 * starts as a random sentinel pattern; afterwards every element must equal the reference bit for
 * bit, and an element outside the written set that changed is reported as a guard-region
 * violation. Sources must be left untouched. */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A destination of len elements holding a sentinel pattern, and the reference's copy of it. */
static int make_dest(pt_ctx *c, pt_tensor *dst, unsigned char **want, unsigned char **written,
                     size_t len, const wk_layout *l, pt_rng *r)
{
    size_t es = ref_dtype_size(c->dt);
    unsigned char *sentinel = pt_alloc(c, len * es);
    *want = pt_alloc(c, len * es);
    *written = pt_alloc(c, len);
    if (!sentinel || !*want || !*written) {
        free(sentinel);
        return 0;
    }
    pt_fill(sentinel, c->dt, len, r, PD_BITS, 0);
    memcpy(*want, sentinel, len * es);
    int ok = pt_tensor_upload(c, dst, c->dt, len, sentinel, l);
    free(sentinel);
    return ok;
}

void pt_run_const_set(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    wk_layout l;
    size_t len;
    pt_layout_for(&l, &len, c->fam, rank, dims, r);
    pt_tensor dst = {0};
    unsigned char *want = NULL, *written = NULL, value[8];
    pt_case_begin(c);
    pt_fill(value, c->dt, 1, r, c->row->domain, c->row->specials && (c->fam & 1));
    if (!make_dest(c, &dst, &want, &written, len, &l, r))
        goto done;
    char ls[128];
    snprintf(c->sub, sizeof c->sub, "dst=%s of %zu", pt_layout_str(ls, sizeof ls, &l), len);
    wk_status st = wk_const_set(dst.s, &l, value);
    wk_status rst = c->probing ? WK_OK : ref_const_set(want, c->dt, &l, value);
    if (pt_check_status(c, st, rst, "const_set") && !c->probing) {
        for (int64_t i = 0; i < ref_count(&l); i++)
            written[ref_offset(&l, i)] = 1;
        pt_check_inplace(c, dst.s, c->dt, want, len, written);
    }
    if (st != WK_OK) /* a failed call writes nothing */
        pt_tensor_unchanged(c, &dst, "destination of a failed call");
done:
    free(want);
    free(written);
    pt_tensor_free(&dst);
}

void pt_run_copy_strided(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    pt_tensor src = {0}, dst = {0};
    unsigned char *want = NULL, *written = NULL;
    pt_case_begin(c);
    if (!pt_tensor_make(c, &src, c->dt, rank, dims, r, PD_BITS, 0))
        goto done;
    size_t n = (size_t)ref_count(&src.l);
    size_t dst_offset = (size_t)(c->fam == PF_OFFSET ? pt_rng_range(r, 1, 9) : pt_rng_range(r, 0, 2));
    size_t len = dst_offset + n + (size_t)pt_rng_range(r, 0, 3);
    if (!make_dest(c, &dst, &want, &written, len, NULL, r))
        goto done;
    char ls[128];
    snprintf(c->sub, sizeof c->sub, "src=%s dst_offset=%zu of %zu", pt_layout_str(ls, sizeof ls, &src.l),
             dst_offset, len);
    wk_status st = wk_copy_strided_src(dst.s, dst_offset, src.s, &src.l);
    wk_status rst = c->probing ? WK_OK : ref_copy_strided_src(want, c->dt, dst_offset, src.host, &src.l);
    if (pt_check_status(c, st, rst, "copy_strided_src") && !c->probing) {
        memset(written + dst_offset, 1, n);
        pt_check_inplace(c, dst.s, c->dt, want, len, written);
    }
    if (st != WK_OK) /* a failed call writes nothing */
        pt_tensor_unchanged(c, &dst, "destination of a failed call");
    pt_tensor_unchanged(c, &src, "src");
done:
    free(want);
    free(written);
    pt_tensor_free(&src);
    pt_tensor_free(&dst);
}

/* copy2d has no layouts: the families map onto its sizes, strides and offsets. */
typedef struct c2d {
    size_t d1, d2, src_stride1, dst_stride1, src_offset, dst_offset;
} c2d;

static int copy2d_params(c2d *p, int fam, pt_rng *r)
{
    size_t d1 = (size_t)pt_rng_range(r, 3, 40), d2 = (size_t)pt_rng_range(r, 5, 60);
    switch (fam) {
    case PF_CONTIG: p[0] = (c2d){d1, d2, d2, d2, 0, 0}; return 1;
    case PF_STRIDED:
        p[0] = (c2d){d1, d2, d2 + (size_t)pt_rng_range(r, 1, 7), d2 + (size_t)pt_rng_range(r, 0, 5), 0, 0};
        p[1] = (c2d){d1, d2, d2, d2 + (size_t)pt_rng_range(r, 1, 5), 0, 0};
        return 2;
    case PF_BROADCAST: p[0] = (c2d){d1, d2, 0, d2 + 1, 0, 0}; return 1; /* every row from one */
    case PF_OFFSET:
        p[0] = (c2d){d1, d2, d2 + 2, d2 + 3, (size_t)pt_rng_range(r, 1, 20), (size_t)pt_rng_range(r, 1, 20)};
        return 1;
    case PF_EMPTY:
        p[0] = (c2d){0, d2, d2, d2, 1, 2};
        p[1] = (c2d){d1, 0, 3, 4, 0, 1};
        return 2;
    case PF_LARGE: p[0] = (c2d){200, 190, 193, 195, 5, 7}; return 1;
    default: return 0; /* transposed, ranks: no meaning for copy2d */
    }
}

static size_t extent(size_t d1, size_t d2, size_t stride1, size_t offset)
{
    return d1 && d2 ? offset + (d1 - 1) * stride1 + d2 : offset;
}

void pt_run_copy2d(pt_ctx *c, pt_rng *r)
{
    c2d ps[2];
    int np = copy2d_params(ps, c->fam, r);
    for (int k = 0; k < np; k++) {
        const c2d *p = &ps[k];
        pt_tensor src = {0}, dst = {0};
        unsigned char *want = NULL, *written = NULL, *host = NULL;
        pt_case_begin(c);
        size_t slen = extent(p->d1, p->d2, p->src_stride1, p->src_offset) + (size_t)pt_rng_range(r, 0, 3);
        size_t dlen = extent(p->d1, p->d2, p->dst_stride1, p->dst_offset) + (size_t)pt_rng_range(r, 0, 3);
        host = pt_alloc(c, slen * ref_dtype_size(c->dt));
        if (!host)
            goto next;
        pt_fill(host, c->dt, slen, r, PD_BITS, 0);
        if (!pt_tensor_upload(c, &src, c->dt, slen, host, NULL) ||
            !make_dest(c, &dst, &want, &written, dlen, NULL, r))
            goto next;
        snprintf(c->sub, sizeof c->sub,
                 "d1=%zu d2=%zu src_stride1=%zu dst_stride1=%zu src_offset=%zu dst_offset=%zu "
                 "(src %zu, dst %zu elements)",
                 p->d1, p->d2, p->src_stride1, p->dst_stride1, p->src_offset, p->dst_offset, slen, dlen);
        wk_status st = wk_copy2d(dst.s, src.s, p->d1, p->d2, p->src_stride1, p->dst_stride1,
                                 p->src_offset, p->dst_offset);
        wk_status rst = c->probing ? WK_OK
                                   : ref_copy2d(want, c->dt, src.host, p->d1, p->d2, p->src_stride1,
                                                p->dst_stride1, p->src_offset, p->dst_offset);
        if (pt_check_status(c, st, rst, "copy2d") && !c->probing) {
            for (size_t i = 0; i < p->d1; i++)
                memset(written + p->dst_offset + i * p->dst_stride1, 1, p->d2);
            pt_check_inplace(c, dst.s, c->dt, want, dlen, written);
        }
        if (st != WK_OK) /* a failed call writes nothing */
            pt_tensor_unchanged(c, &dst, "destination of a failed call");
        pt_tensor_unchanged(c, &src, "src");
    next:
        free(host);
        free(want);
        free(written);
        pt_tensor_free(&src);
        pt_tensor_free(&dst);
    }
}
