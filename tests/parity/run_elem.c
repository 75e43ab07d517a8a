/* run_elem.c: runners of the elementwise rows: unary (with affine/powf/elu parameters), binary
 * and comparisons, where_cond, to_dtype. Each builds its inputs for the family in c->fam, calls
 * the public API, checks the status against the reference's, the output against the reference's
 * output, and that the inputs were not written. */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>

/* One parameter set of a parametrised unary op, and the input domain it needs. */
typedef struct unary_params {
    double p0, p1;
    pt_domain domain;
} unary_params;

/* The parameter sets of op (1 for the plain unary ops). Exponents and alphas are exact in every
 * float type; affine's 0.1 and 0.7 are not, which checks the (T)mul, (T)add rule. */
static int unary_param_sets(unary_params *ps, wk_op op, pt_domain d)
{
    switch (op) {
    case WK_OP_AFFINE:
        ps[0] = (unary_params){1.5, -0.25, d};
        ps[1] = (unary_params){-2.5, 3.7, d};
        ps[2] = (unary_params){0.1, 0.7, d};
        return 3;
    case WK_OP_POWF: /* positive bases; then negative bases (integer exponents, and 0.5 -> NaN) */
        ps[0] = (unary_params){2.5, 0, PD_POW};
        ps[1] = (unary_params){-1.5, 0, PD_POW};
        ps[2] = (unary_params){0.5, 0, PD_POW};
        ps[3] = (unary_params){2.0, 0, PD_ANY};
        ps[4] = (unary_params){3.0, 0, PD_ANY};
        ps[5] = (unary_params){0.5, 0, PD_ANY};
        return 6;
    case WK_OP_ELU:
        ps[0] = (unary_params){1.0, 0, d};
        ps[1] = (unary_params){0.5, 0, d};
        return 2;
    default:
        ps[0] = (unary_params){0, 0, d};
        return 1;
    }
}

static wk_status call_unary(wk_storage **out, wk_op op, const pt_tensor *x, const unary_params *p)
{
    switch (op) {
    case WK_OP_AFFINE: return wk_affine(out, x->s, &x->l, p->p0, p->p1);
    case WK_OP_POWF: return wk_powf(out, x->s, &x->l, p->p0);
    case WK_OP_ELU: return wk_elu(out, x->s, &x->l, p->p0);
    default: return wk_unary(out, op, x->s, &x->l);
    }
}

/* specials (NaN, inf, +-0) go into half of the families, so the others test ordinary values */
static int use_specials(const pt_ctx *c) { return c->row->specials && (c->fam & 1); }

void pt_run_unary(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    unary_params ps[8];
    int np = unary_param_sets(ps, c->row->op, c->row->domain);
    /* A rank-0 case is one element, so its NMSE is that element's squared relative error: keep
     * it out of the tails where the f32 formulas cancel (gelu_erf(-5) loses every digit in
     * 1 + erf), which multi-element cases average away. */
    if (c->fam == PF_RANK0 && c->row->tol == PT_TRANSC)
        for (int k = 0; k < np; k++)
            ps[k].domain = PD_CORE;
    for (int k = 0; k < np; k++) {
        pt_tensor x = {0};
        wk_storage *out = NULL;
        void *want = NULL;
        pt_case_begin(c);
        if (!pt_tensor_make(c, &x, c->dt, rank, dims, r, ps[k].domain, use_specials(c)))
            goto next;
        char ls[128];
        snprintf(c->sub, sizeof c->sub, "p=(%g, %g) x=%s", ps[k].p0, ps[k].p1,
                 pt_layout_str(ls, sizeof ls, &x.l));
        wk_status st = call_unary(&out, c->row->op, &x, &ps[k]);
        int64_t n = ref_count(&x.l);
        want = pt_alloc(c, (size_t)n * ref_dtype_size(c->dt));
        if (!want)
            goto next;
        wk_status rst = c->probing ? WK_OK
                                   : ref_unary(want, c->row->op, c->dt, ps[k].p0, ps[k].p1, x.host, &x.l);
        if (pt_check_status(c, st, rst, wk_op_name(c->row->op)) && st == WK_OK && !c->probing)
            pt_check_output(c, out, c->dt, want, n, c->row->tol);
        pt_tensor_unchanged(c, &x, "x");
    next:
        free(want);
        wk_storage_free(out);
        pt_tensor_free(&x);
    }
}

void pt_run_binary(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    wk_op op = c->row->op;
    int is_cmp = op >= WK_OP_EQ && op <= WK_OP_GE;
    wk_dtype odt = is_cmp ? WK_DTYPE_U8 : c->dt;
    /* float division: a divisor away from 0 (integer division keeps its zeros: x / 0 = 0) */
    pt_domain db = op == WK_OP_DIV && ref_is_float(c->dt) ? PD_RECIP : c->row->domain;
    /* the gated ops: a goes through an activation, so a rank-0 case stays out of its cancelling
     * tails as the unary rows' do (pt_run_unary) */
    pt_domain da = c->fam == PF_RANK0 && c->row->tol == PT_TRANSC ? PD_CORE : c->row->domain;
    pt_tensor a = {0}, b = {0};
    wk_storage *out = NULL;
    void *want = NULL;
    pt_case_begin(c);
    if (!pt_tensor_make(c, &a, c->dt, rank, dims, r, da, use_specials(c)) ||
        !pt_tensor_make(c, &b, c->dt, rank, dims, r, db, use_specials(c)))
        goto done;
    char la[128], lb[128];
    snprintf(c->sub, sizeof c->sub, "a=%s b=%s", pt_layout_str(la, sizeof la, &a.l),
             pt_layout_str(lb, sizeof lb, &b.l));
    wk_status st = is_cmp ? wk_cmp(&out, op, a.s, &a.l, b.s, &b.l) : wk_binary(&out, op, a.s, &a.l, b.s, &b.l);
    int64_t n = ref_count(&a.l);
    want = pt_alloc(c, (size_t)n * ref_dtype_size(odt));
    if (!want)
        goto done;
    wk_status rst = c->probing ? WK_OK : ref_binary(want, op, c->dt, a.host, &a.l, b.host, &b.l);
    if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
        pt_check_output(c, out, odt, want, n, c->row->tol);
    pt_tensor_unchanged(c, &a, "a");
    pt_tensor_unchanged(c, &b, "b");
done:
    free(want);
    wk_storage_free(out);
    pt_tensor_free(&a);
    pt_tensor_free(&b);
}

void pt_run_where(pt_ctx *c, pt_rng *r)
{
    static const wk_dtype conds[3] = {WK_DTYPE_U8, WK_DTYPE_U32, WK_DTYPE_I64};
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    for (int k = 0; k < 3; k++) {
        pt_tensor cd = {0}, t = {0}, f = {0};
        wk_storage *out = NULL;
        void *want = NULL;
        pt_case_begin(c);
        if (!pt_tensor_make(c, &cd, conds[k], rank, dims, r, PD_COND, 0) ||
            !pt_tensor_make(c, &t, c->dt, rank, dims, r, c->row->domain, use_specials(c)) ||
            !pt_tensor_make(c, &f, c->dt, rank, dims, r, c->row->domain, use_specials(c)))
            goto next;
        char lc[128], lt[128], lf[128];
        snprintf(c->sub, sizeof c->sub, "cond %s=%s t=%s f=%s", wk_dtype_name(conds[k]),
                 pt_layout_str(lc, sizeof lc, &cd.l), pt_layout_str(lt, sizeof lt, &t.l),
                 pt_layout_str(lf, sizeof lf, &f.l));
        wk_status st = wk_where_cond(&out, cd.s, &cd.l, t.s, &t.l, f.s, &f.l);
        int64_t n = ref_count(&cd.l);
        want = pt_alloc(c, (size_t)n * ref_dtype_size(c->dt));
        if (!want)
            goto next;
        wk_status rst = c->probing ? WK_OK
                                   : ref_where_cond(want, conds[k], c->dt, cd.host, &cd.l, t.host,
                                                    &t.l, f.host, &f.l);
        if (pt_check_status(c, st, rst, "where_cond") && st == WK_OK && !c->probing)
            pt_check_output(c, out, c->dt, want, n, c->row->tol);
        pt_tensor_unchanged(c, &cd, "cond");
        pt_tensor_unchanged(c, &t, "t");
        pt_tensor_unchanged(c, &f, "f");
    next:
        free(want);
        wk_storage_free(out);
        pt_tensor_free(&cd);
        pt_tensor_free(&t);
        pt_tensor_free(&f);
    }
}

void pt_run_cast(pt_ctx *c, pt_rng *r)
{
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    wk_dtype to = c->row->target;
    pt_tensor x = {0};
    wk_storage *out = NULL;
    void *want = NULL;
    pt_case_begin(c);
    if (!pt_tensor_make(c, &x, c->dt, rank, dims, r, c->row->domain, 1))
        goto done;
    char lx[128];
    snprintf(c->sub, sizeof c->sub, "%s -> %s x=%s", wk_dtype_name(c->dt), wk_dtype_name(to),
             pt_layout_str(lx, sizeof lx, &x.l));
    wk_status st = wk_to_dtype(&out, x.s, &x.l, to);
    int64_t n = ref_count(&x.l);
    want = pt_alloc(c, (size_t)n * ref_dtype_size(to));
    if (!want)
        goto done;
    wk_status rst = c->probing ? WK_OK : ref_to_dtype(want, c->dt, to, x.host, &x.l);
    if (pt_check_status(c, st, rst, "to_dtype") && st == WK_OK && !c->probing)
        pt_check_output(c, out, to, want, n, c->row->tol);
    pt_tensor_unchanged(c, &x, "x");
done:
    free(want);
    wk_storage_free(out);
    pt_tensor_free(&x);
}
