/* run_image.c: runners of the pooling and upsampling rows. The input x (N, C, H, W), or (N, C, L)
 * for nearest1d, takes the family's layout (strided, transposed, broadcast, offset, empty N or C,
 * rank4 / rank3 only, large); each case runs a few parameter sets: square and non-square
 * kernels and strides, a whole-input window; up-, down- and non-integer resampling, align_corners
 * both ways, user scale factors. Compared with ref_image.c; x must stay untouched. */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>

/* dims of x for the family (rank 4, or 3 when one_d); 0 when the family does not apply. */
static int image_dims(int64_t *d, int fam, int one_d, pt_rng *r)
{
    const int rank = one_d ? 3 : 4;
    if (fam >= PF_RANK0 && fam <= PF_RANK6 && fam - PF_RANK0 != rank)
        return 0;
    d[0] = pt_rng_range(r, 1, 3);
    d[1] = pt_rng_range(r, 1, 4);
    d[2] = pt_rng_range(r, 5, 14);
    d[3] = pt_rng_range(r, 5, 16);
    if (fam == PF_EMPTY)
        d[pt_rng_range(r, 0, 1)] = 0;
    if (fam == PF_LARGE || fam == PF_LARGE_T) { /* > 32768 elements in and out */
        d[0] = 2;
        d[1] = 8;
        d[2] = pt_rng_range(r, 60, 70);
        d[3] = pt_rng_range(r, 60, 70);
    }
    if (one_d) {
        d[2] = d[3] * (fam == PF_LARGE || fam == PF_LARGE_T ? 40 : 1);
    }
    return rank;
}

static void pool_case(pt_ctx *c, const pt_tensor *x, const int64_t *d, wk_pool_params p)
{
    wk_op op = c->row->op;
    wk_storage *out = NULL;
    void *want = NULL;
    pt_case_begin(c);
    char lx[128];
    snprintf(c->sub, sizeof c->sub, "kernel (%d,%d) stride (%d,%d) x=%s", (int)p.kernel[0],
             (int)p.kernel[1], (int)p.stride[0], (int)p.stride[1], pt_layout_str(lx, sizeof lx, &x->l));
    const int64_t n = d[0] * d[1] * ((d[2] - p.kernel[0]) / p.stride[0] + 1) *
                      ((d[3] - p.kernel[1]) / p.stride[1] + 1);
    wk_status st = op == WK_OP_AVG_POOL2D ? wk_avg_pool2d(&out, x->s, &x->l, &p)
                                          : wk_max_pool2d(&out, x->s, &x->l, &p);
    want = pt_alloc(c, (size_t)n * ref_dtype_size(c->dt));
    if (want) {
        wk_status rst = c->probing ? WK_OK : ref_pool2d(want, op, c->dt, x->host, &x->l, &p);
        if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
            pt_check_output(c, out, c->dt, want, n, c->row->tol);
        pt_tensor_unchanged(c, x, "x");
    }
    free(want);
    wk_storage_free(out);
}

void pt_run_pool(pt_ctx *c, pt_rng *r)
{
    int64_t d[4];
    if (!image_dims(d, c->fam, 0, r))
        return;
    pt_tensor x = {0};
    pt_case_begin(c);
    if (!pt_tensor_make(c, &x, c->dt, 4, d, r, c->row->domain, c->row->specials && (c->fam & 1)))
        return;
    c->out->ncases--; /* the tensor is not a case of its own */
    const wk_pool_params ps[] = {
        {{2, 2}, {2, 2}},
        {{3, 2}, {1, 2}},
        {{1, 3}, {2, 1}},
        {{(int32_t)d[2], (int32_t)d[3]}, {1, 1}}, /* one window over the whole plane */
    };
    const int np = c->probing ? 1 : c->fam == PF_LARGE || c->fam == PF_LARGE_T ? 2 : 4;
    for (int k = 0; k < np; k++)
        pool_case(c, &x, d, ps[k]);
    pt_tensor_free(&x);
}

typedef struct up_params {
    int64_t oh, ow; /* output spatial dims (ow only for 1-D) */
    int ac;
    double sh, sw;
} up_params;

static void up_case(pt_ctx *c, const pt_tensor *x, const int64_t *d, int one_d, up_params p)
{
    wk_op op = c->row->op;
    wk_storage *out = NULL;
    pt_case_begin(c);
    char lx[128];
    snprintf(c->sub, sizeof c->sub, "out (%lld,%lld) align_corners=%d scale (%g,%g) x=%s",
             (long long)p.oh, (long long)p.ow, p.ac, p.sh, p.sw, pt_layout_str(lx, sizeof lx, &x->l));
    const int64_t n = d[0] * d[1] * (one_d ? 1 : p.oh) * p.ow;
    const int64_t od[2] = {one_d ? p.ow : p.oh, p.ow};
    wk_status st;
    if (op == WK_OP_UPSAMPLE_NEAREST1D)
        st = wk_upsample_nearest1d(&out, x->s, &x->l, p.ow);
    else if (op == WK_OP_UPSAMPLE_NEAREST2D)
        st = wk_upsample_nearest2d(&out, x->s, &x->l, p.oh, p.ow);
    else
        st = wk_upsample_bilinear2d(&out, x->s, &x->l, p.oh, p.ow, p.ac, p.sh, p.sw);
    void *want = pt_alloc(c, (size_t)n * ref_dtype_size(c->dt));
    if (want) {
        wk_status rst = c->probing ? WK_OK : ref_upsample(want, op, c->dt, x->host, &x->l, od, p.ac, p.sh, p.sw);
        if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
            pt_check_output(c, out, c->dt, want, n, c->row->tol);
        pt_tensor_unchanged(c, x, "x");
    }
    free(want);
    wk_storage_free(out);
}

void pt_run_upsample(pt_ctx *c, pt_rng *r)
{
    const int one_d = c->row->op == WK_OP_UPSAMPLE_NEAREST1D;
    const int bil = c->row->op == WK_OP_UPSAMPLE_BILINEAR2D;
    int64_t d4[4];
    const int rank = image_dims(d4, c->fam, one_d, r);
    if (!rank)
        return;
    int64_t d[4] = {d4[0], d4[1], d4[2], d4[3]};
    if (one_d)
        d[2] = d4[2]; /* (N, C, L) */
    pt_tensor x = {0};
    pt_case_begin(c);
    if (!pt_tensor_make(c, &x, c->dt, rank, d, r, c->row->domain, 0))
        return;
    c->out->ncases--;
    const int64_t H = one_d ? 1 : d[2], W = d[rank - 1];
    const int large = c->fam == PF_LARGE || c->fam == PF_LARGE_T;
    up_params ps[10];
    int np = 0;
    ps[np++] = (up_params){2 * H, 2 * W, 1, 0, 0};                       /* x2 (align_corners) */
    ps[np++] = (up_params){2 * H, 2 * W, 0, 0, 0};                       /* x2 (half-pixel) */
    if (!large) {
        ps[np++] = (up_params){(2 * H) / 3 + 1, (3 * W) / 2 + 1, 0, 0, 0}; /* down x up, non-integer */
        ps[np++] = (up_params){(2 * H) / 3 + 1, (3 * W) / 2 + 1, 1, 0, 0};
        ps[np++] = (up_params){H, 1, 1, 0, 0};                           /* same H, one column */
        if (bil) {                                                        /* user scale factors */
            ps[np++] = (up_params){(int64_t)((double)H * 1.5), (int64_t)((double)W * 2.5), 0, 1.5, 2.5};
            ps[np++] = (up_params){(int64_t)((double)H * 0.6) + 1, (int64_t)((double)W * 0.75), 0, 0.6, 0.75};
            ps[np++] = (up_params){H, 2 * W, 0, 1.7, 2.0}; /* out = in on H: copied, scale ignored */
        }
    }
    if (one_d) /* the 1-D op only reads ow */
        for (int k = 0; k < np; k++)
            ps[k].oh = 1;
    if (c->probing)
        np = 1;
    for (int k = 0; k < np; k++)
        up_case(c, &x, d, one_d, ps[k]);
    pt_tensor_free(&x);
}
