/* run_fused.c: runners of candle-nn's fused ops: softmax_last_dim, rms_norm / layer_norm,
 * rope / rope_i / rope_thd, arg_sort_last_dim, and of wick's add_rms_norm / add_layer_norm. Every layout family applies to x (and to the
 * alpha/beta/cos/sin operands, drawn independently); rank 0 (and, for rope, every rank but 4)
 * must fail with WK_ERR_SHAPE as the reference says.
 *   softmax: odd families shift x by +100, where exp without the max subtraction overflows.
 *   norms: eps 1e-5 (even families) or 0.5 (odd); layer_norm shifts x by +50 in odd families
 *          (a one-pass E[x^2] - mean^2 variance would cancel there).
 *   rope: each family runs cos/sin as (Tc >= T, D/2) and as (B, T, D/2).
 *   arg_sort: ascending and descending; PD_TIES values (many ties), NaN/inf/+-0 in odd families. */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>

/* t <- a tensor of family c->fam with values uniform in [lo, hi) (rounded to dt). */
static int fz_make(pt_ctx *c, pt_tensor *t, wk_dtype dt, int32_t rank, const int64_t *dims,
                   pt_rng *r, double lo, double hi)
{
    wk_layout l;
    size_t len;
    pt_layout_for(&l, &len, c->fam, rank, dims, r);
    unsigned char *host = pt_alloc(c, len * ref_dtype_size(dt));
    if (!host) {
        *t = (pt_tensor){0};
        return 0;
    }
    for (size_t i = 0; i < len; i++)
        ref_store_f(dt, host, (int64_t)i, pt_rng_uniform(r, lo, hi));
    int ok = pt_tensor_upload(c, t, dt, len, host, &l);
    free(host);
    return ok;
}

/* Status, output and untouched inputs of one case; frees want and out. */
static void fz_check(pt_ctx *c, wk_status st, wk_status rst, wk_storage *out, wk_dtype odt,
                     void *want, int64_t n, const pt_tensor *const *ins, int nin)
{
    static const char *const names[3] = {"x", "operand 2", "operand 3"};
    if (pt_check_status(c, st, rst, c->row->name) && st == WK_OK && !c->probing)
        pt_check_output(c, out, odt, want, n, c->row->tol);
    for (int k = 0; k < nin; k++)
        pt_tensor_unchanged(c, ins[k], names[k]);
    free(want);
    wk_storage_free(out);
}

void pt_run_softmax(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    const double shift = (c->fam & 1) ? 100.0 : 0.0;
    pt_tensor x = {0};
    pt_case_begin(c);
    if (!fz_make(c, &x, c->dt, rank, dims, r, shift - 4, shift + 4))
        return;
    char lx[128];
    snprintf(c->sub, sizeof c->sub, "shift %g x=%s", shift, pt_layout_str(lx, sizeof lx, &x.l));
    wk_storage *out = NULL;
    wk_status st = wk_softmax_last_dim(&out, x.s, &x.l);
    int64_t n = ref_count(&x.l);
    void *want = pt_alloc(c, (size_t)n * ref_dtype_size(c->dt));
    wk_status rst = c->probing || !want ? WK_OK : ref_softmax_last_dim(want, c->dt, x.host, &x.l);
    const pt_tensor *ins[1] = {&x};
    fz_check(c, st, rst, out, c->dt, want, n, ins, 1);
    pt_tensor_free(&x);
}

/* The operands of a norm case (pt_run_norm, pt_run_add_norm), the case begun: x of the family's
 * dims (shifted by +50 for layer_norm in odd families), alpha (and beta) (D) uniform in [-2, 2),
 * eps 1e-5 (even families) or 0.5 (odd). Returns 1, or 0 after a recorded failure (the tensors
 * made so far are left to the caller to free). */
typedef struct norm_case {
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    float eps;
    pt_tensor x, a, b;
} norm_case;

static int norm_case_make(pt_ctx *c, pt_rng *r, int layer, norm_case *nc)
{
    *nc = (norm_case){0};
    pt_family_dims(&nc->rank, nc->dims, c->fam, r);
    const int64_t d = nc->rank > 0 ? nc->dims[nc->rank - 1] : 1;
    const double shift = layer && (c->fam & 1) ? 50.0 : 0.0;
    nc->eps = (c->fam & 1) ? 0.5f : 1e-5f;
    pt_case_begin(c);
    return fz_make(c, &nc->x, c->dt, nc->rank, nc->dims, r, shift - 4, shift + 4) &&
           fz_make(c, &nc->a, c->dt, 1, &d, r, -2, 2) &&
           (!layer || fz_make(c, &nc->b, c->dt, 1, &d, r, -2, 2));
}

static void norm_case_free(norm_case *nc)
{
    pt_tensor_free(&nc->x);
    pt_tensor_free(&nc->a);
    pt_tensor_free(&nc->b);
}

void pt_run_norm(pt_ctx *c, pt_rng *r)
{
    const int layer = c->row->op == WK_OP_LAYER_NORM;
    norm_case nc;
    if (!norm_case_make(c, r, layer, &nc))
        goto done;
    const pt_tensor *x = &nc.x, *a = &nc.a, *b = &nc.b;
    const float eps = nc.eps;
    char lx[128], la[64], lb[64] = "";
    if (layer)
        pt_layout_str(lb, sizeof lb, &b->l);
    snprintf(c->sub, sizeof c->sub, "eps %g x=%s alpha=%s beta=%s", (double)eps,
             pt_layout_str(lx, sizeof lx, &x->l), pt_layout_str(la, sizeof la, &a->l), lb);
    wk_storage *out = NULL;
    wk_status st = layer ? wk_layer_norm(&out, x->s, &x->l, a->s, &a->l, b->s, &b->l, eps)
                         : wk_rms_norm(&out, x->s, &x->l, a->s, &a->l, eps);
    int64_t n = ref_count(&x->l);
    void *want = pt_alloc(c, (size_t)n * ref_dtype_size(c->dt));
    wk_status rst = WK_OK;
    if (!c->probing && want)
        rst = layer ? ref_layer_norm(want, c->dt, x->host, &x->l, a->host, &a->l, b->host, &b->l, eps)
                    : ref_rms_norm(want, c->dt, x->host, &x->l, a->host, &a->l, eps);
    const pt_tensor *ins[3] = {x, a, b};
    fz_check(c, st, rst, out, c->dt, want, n, ins, layer ? 3 : 2);
done:
    norm_case_free(&nc);
}

/* r's dtype in an add_norm case: x's, except under f32 x in four families, where it is 16-bit
 * (the op widens it exactly): f16 in contig (the fused kernel's layout) and large_t, bf16 in
 * offset and broadcast. */
static wk_dtype add_norm_rdt(const pt_ctx *c)
{
    if (c->dt != WK_DTYPE_F32)
        return c->dt;
    switch (c->fam) {
    case PF_CONTIG: case PF_LARGE_T: return WK_DTYPE_F16;
    case PF_OFFSET: case PF_BROADCAST: return WK_DTYPE_BF16;
    default: return c->dt;
    }
}

/* add_rms_norm / add_layer_norm: x and r of the case's family (drawn independently), the same
 * eps and shift as pt_run_norm; r 16-bit under f32 x in some families (add_norm_rdt). Expected:
 * sum = ref_binary's add of x and r widened to x's dtype (rounded once, exact), out = the
 * reference norm of that rounded sum. */
void pt_run_add_norm(pt_ctx *c, pt_rng *r)
{
    const int layer = c->row->op == WK_OP_ADD_LAYER_NORM;
    const wk_dtype rdt = add_norm_rdt(c);
    norm_case nc;
    pt_tensor res = {0};
    wk_storage *sum = NULL, *out = NULL;
    void *want_sum = NULL, *want = NULL, *rwide = NULL;
    if (!norm_case_make(c, r, layer, &nc) || !fz_make(c, &res, rdt, nc.rank, nc.dims, r, -2, 2))
        goto done;
    const pt_tensor *x = &nc.x, *a = &nc.a, *b = &nc.b;
    const float eps = nc.eps;
    char lx[128], lr[128];
    snprintf(c->sub, sizeof c->sub, "eps %g x=%s r=%s %s", (double)eps,
             pt_layout_str(lx, sizeof lx, &x->l), wk_dtype_name(rdt),
             pt_layout_str(lr, sizeof lr, &res.l));
    wk_status st = layer ? wk_add_layer_norm(&sum, &out, x->s, &x->l, res.s, &res.l, a->s, &a->l,
                                             b->s, &b->l, eps)
                         : wk_add_rms_norm(&sum, &out, x->s, &x->l, res.s, &res.l, a->s, &a->l, eps);
    const int64_t n = ref_count(&x->l);
    const size_t bytes = (size_t)(n > 0 ? n : 1) * ref_dtype_size(c->dt);
    want_sum = pt_alloc(c, bytes);
    want = pt_alloc(c, bytes);
    if (!want_sum || !want)
        goto done;
    wk_status rst = WK_OK;
    if (!c->probing) {
        wk_layout ls;
        const void *rh = res.host;
        if (rdt != c->dt) { /* r's storage widened element by element (exact) */
            if (!(rwide = pt_alloc(c, (res.len > 0 ? res.len : 1) * ref_dtype_size(c->dt))))
                goto done;
            for (size_t i = 0; i < res.len; i++)
                ref_store_f(c->dt, rwide, (int64_t)i, ref_load_f(rdt, res.host, (int64_t)i));
            rh = rwide;
        }
        rst = ref_binary(want_sum, WK_OP_ADD, c->dt, x->host, &x->l, rh, &res.l);
        if (rst == WK_OK && wk_layout_contiguous(&ls, x->l.rank, x->l.dims) == WK_OK)
            rst = layer ? ref_layer_norm(want, c->dt, want_sum, &ls, a->host, &a->l, b->host, &b->l, eps)
                        : ref_rms_norm(want, c->dt, want_sum, &ls, a->host, &a->l, eps);
    }
    if (pt_check_status(c, st, rst, c->row->name) && st == WK_OK && !c->probing) {
        pt_check_output(c, sum, c->dt, want_sum, n, PT_EXACT);
        pt_check_output(c, out, c->dt, want, n, c->row->tol);
    }
    pt_tensor_unchanged(c, x, "x");
    pt_tensor_unchanged(c, &res, "r");
    pt_tensor_unchanged(c, a, "alpha");
    if (layer)
        pt_tensor_unchanged(c, b, "beta");
done:
    free(want_sum);
    free(want);
    free(rwide);
    wk_storage_free(sum);
    wk_storage_free(out);
    pt_tensor_free(&res);
    norm_case_free(&nc);
}

/* The dims of x for a rope case: (B, H, T, D) (or (B, T, H, D)), D even; the rank families keep
 * their rank (only rank 4 is valid; its last dim is made even). */
static void rope_dims(int32_t *rank, int64_t *dims, int fam, pt_rng *r)
{
    if (fam >= PF_RANK0 && fam <= PF_RANK6) {
        pt_family_dims(rank, dims, fam, r);
        if (*rank == 4)
            dims[3] += dims[3] & 1;
        return;
    }
    *rank = 4;
    if (fam == PF_LARGE || fam == PF_LARGE_T) { /* 49152 elements */
        dims[0] = 2, dims[1] = 8, dims[2] = 48, dims[3] = 64;
        return;
    }
    dims[0] = pt_rng_range(r, 1, 3);
    dims[1] = pt_rng_range(r, 1, 4);
    dims[2] = pt_rng_range(r, 1, 12);
    dims[3] = 2 * pt_rng_range(r, 1, 16);
    if (fam == PF_EMPTY)
        dims[pt_rng_range(r, 0, 3)] = 0;
}

void pt_run_rope(pt_ctx *c, pt_rng *r)
{
    const wk_op op = c->row->op;
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    rope_dims(&rank, dims, c->fam, r);
    const int thd = op == WK_OP_ROPE_THD;
    const int64_t bsz = rank > 0 ? dims[0] : 1, t = rank == 4 ? dims[thd ? 1 : 2] : 1;
    const int64_t h2 = rank > 0 ? dims[rank - 1] / 2 : 1;
    for (int batched = 0; batched < 2; batched++) {
        int64_t cd[3];
        int32_t cr = batched ? 3 : 2;
        if (batched)
            cd[0] = bsz, cd[1] = t, cd[2] = h2;
        else
            cd[0] = t + pt_rng_range(r, 0, 2), cd[1] = h2; /* extra positions are allowed */
        pt_tensor x = {0}, cs = {0}, sn = {0};
        pt_case_begin(c);
        if (!fz_make(c, &x, c->dt, rank, dims, r, -4, 4) ||
            !fz_make(c, &cs, c->dt, cr, cd, r, -1, 1) || !fz_make(c, &sn, c->dt, cr, cd, r, -1, 1))
            goto next;
        char lx[128], lc[64], ls[64];
        snprintf(c->sub, sizeof c->sub, "x=%s cos=%s sin=%s", pt_layout_str(lx, sizeof lx, &x.l),
                 pt_layout_str(lc, sizeof lc, &cs.l), pt_layout_str(ls, sizeof ls, &sn.l));
        wk_storage *out = NULL;
        wk_status st = op == WK_OP_ROPE ? wk_rope(&out, x.s, &x.l, cs.s, &cs.l, sn.s, &sn.l)
                       : op == WK_OP_ROPE_I ? wk_rope_i(&out, x.s, &x.l, cs.s, &cs.l, sn.s, &sn.l)
                                            : wk_rope_thd(&out, x.s, &x.l, cs.s, &cs.l, sn.s, &sn.l);
        int64_t n = ref_count(&x.l);
        void *want = pt_alloc(c, (size_t)n * ref_dtype_size(c->dt));
        wk_status rst = c->probing || !want ? WK_OK
                                            : ref_rope(want, op, c->dt, x.host, &x.l, cs.host,
                                                       &cs.l, sn.host, &sn.l);
        const pt_tensor *ins[3] = {&x, &cs, &sn};
        fz_check(c, st, rst, out, c->dt, want, n, ins, 3);
    next:
        pt_tensor_free(&x);
        pt_tensor_free(&cs);
        pt_tensor_free(&sn);
    }
}

void pt_run_arg_sort(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    pt_tensor x = {0};
    for (int asc = 1; asc >= 0; asc--) {
        pt_case_begin(c);
        if (!x.s && !pt_tensor_make(c, &x, c->dt, rank, dims, r, c->row->domain,
                                    c->row->specials && (c->fam & 1)))
            break;
        char lx[128];
        snprintf(c->sub, sizeof c->sub, "%s x=%s", asc ? "ascending" : "descending",
                 pt_layout_str(lx, sizeof lx, &x.l));
        wk_storage *out = NULL;
        wk_status st = wk_arg_sort_last_dim(&out, x.s, &x.l, asc);
        int64_t n = ref_count(&x.l);
        void *want = pt_alloc(c, (size_t)n * sizeof(uint32_t));
        wk_status rst = c->probing || !want ? WK_OK : ref_arg_sort(want, c->dt, x.host, &x.l, asc);
        const pt_tensor *ins[1] = {&x};
        fz_check(c, st, rst, out, WK_DTYPE_U32, want, n, ins, 1);
    }
    pt_tensor_free(&x);
}
