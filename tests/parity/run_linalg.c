/* run_linalg.c: runners of the matmul row and the four convolution rows. Each layout family is
 * mapped to a few cases of the op's own layout and parameter families:
 *   matmul: contiguous (2-D, batched), strided (narrowed views; a column step that BLAS cannot
 *   read, so the copy path), transposed a / b / both, broadcast batch dims (stride 0, mixed),
 *   offset views, k = 0 (zeros) and empty results, row/column vectors, ranks 2..6, and large
 *   cases (batched gemms threaded by OpenBLAS, many small gemms threaded by OpenMP).
 *   conv*: stride, padding, dilation, output_padding, groups (grouped, depthwise), 1x1 kernels,
 *   non-contiguous (narrowed, permuted, broadcast, offset) inputs and kernels, N = 0, C_in = 0,
 *   and a large case per op.
 * Values are uniform in [-4, 4] (no specials: how NaN travels through a BLAS is the BLAS's).
 * Tolerance PT_SUM: gemm accumulation order differs from the reference's f64 sum in k order. */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>

/* ---- views: a layout over a fresh storage, built by hand */
typedef struct vspec {
    int perm;      /* 0: row-major storage; 1: last two dims swapped in storage; 2: all reversed */
    int64_t step;  /* stride of the innermost storage dim (>= 1; 2 skips every other element) */
    int64_t pad;   /* extra extent per storage dim (a narrowed view) */
    int64_t off;   /* start offset */
    uint32_t bc;   /* dims with stride 0 (bit k = dim k) */
} vspec;

static const vspec V_C = {0, 1, 0, 0, 0};

static int make_view(pt_ctx *c, pt_tensor *t, int32_t rank, const int64_t *dims, vspec v,
                     pt_rng *r)
{
    int ord[WK_MAX_RANK]; /* storage order, outermost first */
    for (int k = 0; k < rank; k++)
        ord[k] = v.perm == 2 ? rank - 1 - k : k;
    if (v.perm == 1 && rank >= 2) {
        ord[rank - 2] = rank - 1;
        ord[rank - 1] = rank - 2;
    }
    wk_layout l = {.rank = rank, .offset = v.off};
    int64_t m = v.step;
    for (int j = rank - 1; j >= 0; j--) {
        const int d = ord[j];
        if ((v.bc >> d) & 1u) {
            l.strides[d] = 0;
        } else {
            l.strides[d] = m;
            m *= (dims[d] > 1 ? dims[d] : 1) + v.pad;
        }
        l.dims[d] = dims[d];
    }
    const size_t len = (size_t)(v.off + m);
    unsigned char *host = pt_alloc(c, len * ref_dtype_size(c->dt));
    if (!host) {
        *t = (pt_tensor){0};
        return 0;
    }
    pt_fill(host, c->dt, len, r, PD_ANY, 0);
    int ok = pt_tensor_upload(c, t, c->dt, len, host, &l);
    free(host);
    return ok;
}

/* ---------------------------------------------------------------- matmul */
static void mm_case(pt_ctx *c, pt_rng *r, int32_t rank, const int64_t *batch, int64_t m,
                    int64_t k, int64_t n, vspec va, vspec vb)
{
    int64_t da[WK_MAX_RANK], db[WK_MAX_RANK], cnt = m * n;
    for (int i = 0; i < rank - 2; i++) {
        da[i] = db[i] = batch[i];
        cnt *= batch[i];
    }
    da[rank - 2] = m, da[rank - 1] = k;
    db[rank - 2] = k, db[rank - 1] = n;
    pt_tensor a = {0}, b = {0};
    wk_storage *out = NULL;
    void *want = NULL;
    pt_case_begin(c);
    if (make_view(c, &a, rank, da, va, r) && make_view(c, &b, rank, db, vb, r)) {
        char sa[128], sb[128];
        snprintf(c->sub, sizeof c->sub, "a=%s b=%s", pt_layout_str(sa, sizeof sa, &a.l),
                 pt_layout_str(sb, sizeof sb, &b.l));
        wk_status st = wk_matmul(&out, a.s, &a.l, b.s, &b.l);
        if ((want = pt_alloc(c, (size_t)cnt * ref_dtype_size(c->dt)))) {
            wk_status rst = c->probing ? WK_OK : ref_matmul(want, c->dt, a.host, &a.l, b.host, &b.l);
            if (pt_check_status(c, st, rst, "matmul") && st == WK_OK && !c->probing)
                pt_check_output(c, out, c->dt, want, cnt, c->row->tol);
            pt_tensor_unchanged(c, &a, "a");
            pt_tensor_unchanged(c, &b, "b");
        }
    }
    free(want);
    wk_storage_free(out);
    pt_tensor_free(&a);
    pt_tensor_free(&b);
}

#define RND(lo, hi) pt_rng_range(r, lo, hi)

void pt_run_matmul(pt_ctx *c, pt_rng *r)
{
    const vspec T = {1, 1, 0, 0, 0};
    int64_t bt[WK_MAX_RANK] = {0};
    switch (c->fam) {
    case PF_CONTIG:
        mm_case(c, r, 2, bt, RND(1, 40), RND(1, 40), RND(1, 40), V_C, V_C);
        bt[0] = RND(2, 4);
        mm_case(c, r, 3, bt, RND(5, 20), RND(5, 30), RND(5, 20), V_C, V_C);
        break;
    case PF_STRIDED: {
        bt[0] = 3;
        const vspec na = {0, 1, RND(1, 3), RND(0, 5), 0}, nb = {1, 1, RND(1, 3), RND(0, 5), 0};
        mm_case(c, r, 3, bt, RND(5, 20), RND(5, 30), RND(5, 20), na, nb);
        const vspec skip = {0, 2, 1, 1, 0}; /* every other column: BLAS cannot read it */
        mm_case(c, r, 3, bt, RND(5, 20), RND(5, 30), RND(5, 20), skip, skip);
        const vspec skipt = {1, 3, 0, 2, 0};
        mm_case(c, r, 2, bt, RND(5, 20), RND(5, 30), RND(5, 20), skipt, V_C);
        break;
    }
    case PF_TRANSPOSED:
        bt[0] = 2;
        mm_case(c, r, 3, bt, RND(5, 20), RND(5, 30), RND(5, 20), T, V_C);
        mm_case(c, r, 3, bt, RND(5, 20), RND(5, 30), RND(5, 20), V_C, T);
        mm_case(c, r, 3, bt, RND(5, 20), RND(5, 30), RND(5, 20), T, T);
        break;
    case PF_BROADCAST: {
        bt[0] = 2, bt[1] = 3;
        const vspec b01 = {0, 1, 0, 0, 3u}, b0 = {1, 1, 0, 0, 1u}, b1 = {0, 1, 0, 0, 2u};
        mm_case(c, r, 4, bt, RND(3, 12), RND(3, 12), RND(3, 12), V_C, b01); /* a broadcast b */
        mm_case(c, r, 4, bt, RND(3, 12), RND(3, 12), RND(3, 12), b0, b1);   /* mixed strides */
        break;
    }
    case PF_OFFSET: {
        bt[0] = RND(2, 3);
        const vspec oa = {0, 1, 0, RND(1, 13), 0}, ob = {1, 1, 0, RND(1, 13), 0};
        mm_case(c, r, 3, bt, RND(5, 20), RND(5, 30), RND(5, 20), oa, ob);
        break;
    }
    case PF_EMPTY:
        bt[0] = 2;
        mm_case(c, r, 3, bt, RND(2, 9), 0, RND(2, 9), V_C, V_C); /* k = 0: zeros */
        mm_case(c, r, 3, bt, 0, RND(2, 9), RND(2, 9), V_C, V_C);
        mm_case(c, r, 2, bt, RND(2, 9), RND(2, 9), 0, V_C, T);
        bt[0] = 0;
        mm_case(c, r, 3, bt, RND(2, 9), RND(2, 9), RND(2, 9), V_C, V_C);
        break;
    case PF_RANK0: { /* vectors: 1 x k @ k x n and m x k @ k x 1, with odd strides */
        const vspec s3 = {0, 3, 0, 1, 0}, s3t = {1, 3, 0, 1, 0};
        mm_case(c, r, 2, bt, 1, RND(5, 40), RND(5, 40), s3, V_C);
        mm_case(c, r, 2, bt, RND(5, 40), RND(5, 40), 1, V_C, s3);
        mm_case(c, r, 2, bt, 1, RND(5, 40), RND(5, 40), s3t, s3t);
        break;
    }
    case PF_RANK1: /* 1 x 1 results and k = 1 */
        mm_case(c, r, 2, bt, RND(5, 20), 1, RND(5, 20), T, T);
        mm_case(c, r, 2, bt, 1, 1, 1, V_C, V_C);
        break;
    case PF_LARGE: {
        bt[0] = 3; /* m*n*k above OpenBLAS's single-thread limit: gemms one after the other */
        mm_case(c, r, 3, bt, RND(60, 80), RND(60, 80), RND(60, 80), V_C, V_C);
        bt[0] = 40; /* many small gemms: OpenMP over batches */
        mm_case(c, r, 3, bt, RND(20, 30), RND(20, 30), RND(20, 30), V_C, T);
        break;
    }
    case PF_LARGE_T: {
        const vspec skip = {0, 2, 0, 0, 0};
        mm_case(c, r, 2, bt, RND(150, 200), RND(100, 150), RND(150, 200), T, skip);
        break;
    }
    default: { /* rank2 .. rank6: small batched cases, operands in random orientations */
        const int32_t rank = c->fam - PF_RANK0;
        for (int i = 0; i < rank - 2; i++)
            bt[i] = RND(1, 3);
        const vspec va = {(int)RND(0, 1), 1, RND(0, 1), RND(0, 3), 0};
        const vspec vb = {(int)RND(0, 1), 1, RND(0, 1), RND(0, 3), 0};
        mm_case(c, r, rank, bt, RND(2, 12), RND(2, 12), RND(2, 12), va, vb);
        break;
    }
    }
}

/* ---------------------------------------------------------------- convolutions */
/* A parameter set in 2-D terms: [0] = H, [1] = W. The 1-D ops get the W values in [0]. */
typedef struct cv_set {
    int64_t n, ci, co, in[2], k[2];
    int32_t s[2], p[2], d[2], op[2], g;
    vspec vx, vw;
} cv_set;

static void cv_case(pt_ctx *c, pt_rng *r, const cv_set *q)
{
    const wk_op op = c->row->op;
    const int one = op == WK_OP_CONV1D || op == WK_OP_CONV_TRANSPOSE1D;
    const int tr = op == WK_OP_CONV_TRANSPOSE1D || op == WK_OP_CONV_TRANSPOSE2D;
    const int32_t rank = one ? 3 : 4;
    wk_conv_params p = {.groups = q->g};
    for (int i = 0; i < 2; i++) {
        const int j = one ? 1 : i; /* source of parameter [i] */
        p.stride[i] = q->s[j], p.padding[i] = q->p[j], p.dilation[i] = q->d[j];
        p.output_padding[i] = tr ? q->op[j] : 0;
    }
    int64_t dx[4] = {q->n, q->ci, q->in[0], q->in[1]};
    int64_t dw[4] = {tr ? q->ci : q->co, tr ? q->co / q->g : q->ci / q->g, q->k[0], q->k[1]};
    if (one)
        dx[2] = q->in[1], dw[2] = q->k[1];
    pt_tensor x = {0}, w = {0};
    wk_storage *out = NULL;
    void *want = NULL;
    pt_case_begin(c);
    if (make_view(c, &x, rank, dx, q->vx, r) && make_view(c, &w, rank, dw, q->vw, r)) {
        char sx[128], sw[128];
        snprintf(c->sub, sizeof c->sub, "x=%s w=%s s=%d,%d p=%d,%d d=%d,%d op=%d,%d g=%d",
                 pt_layout_str(sx, sizeof sx, &x.l), pt_layout_str(sw, sizeof sw, &w.l),
                 p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0],
                 p.dilation[1], p.output_padding[0], p.output_padding[1], p.groups);
        wk_status st;
        switch (op) {
        case WK_OP_CONV1D: st = wk_conv1d(&out, x.s, &x.l, w.s, &w.l, &p); break;
        case WK_OP_CONV_TRANSPOSE1D: st = wk_conv_transpose1d(&out, x.s, &x.l, w.s, &w.l, &p); break;
        case WK_OP_CONV2D: st = wk_conv2d(&out, x.s, &x.l, w.s, &w.l, &p); break;
        default: st = wk_conv_transpose2d(&out, x.s, &x.l, w.s, &w.l, &p); break;
        }
        int64_t cnt = 0;
        wk_status rst = ref_conv_count(&cnt, op, &x.l, &w.l, &p);
        if ((want = pt_alloc(c, (size_t)cnt * ref_dtype_size(c->dt)))) {
            if (!c->probing && !rst)
                rst = ref_conv(want, op, c->dt, x.host, &x.l, w.host, &w.l, &p);
            if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
                pt_check_output(c, out, c->dt, want, cnt, c->row->tol);
            pt_tensor_unchanged(c, &x, "x");
            pt_tensor_unchanged(c, &w, "w");
        }
    }
    free(want);
    wk_storage_free(out);
    pt_tensor_free(&x);
    pt_tensor_free(&w);
}

/* A set with everything 1 / 0 and sizes drawn around the given input size. */
static cv_set cv_base(pt_rng *r, int64_t in, int64_t k)
{
    cv_set q = {.n = RND(1, 3), .ci = RND(2, 5), .co = RND(2, 5), .in = {RND(in, in + 4), RND(in, in + 4)},
                .k = {k, k}, .s = {1, 1}, .p = {0, 0}, .d = {1, 1}, .op = {0, 0}, .g = 1,
                .vx = V_C, .vw = V_C};
    return q;
}

void pt_run_conv(pt_ctx *c, pt_rng *r)
{
    cv_set q = cv_base(r, 6, 3);
    switch (c->fam) {
    case PF_CONTIG:
        cv_case(c, r, &q);
        break;
    case PF_STRIDED:
        q.s[0] = q.s[1] = 2, q.p[0] = q.p[1] = 1, q.op[0] = 1, q.op[1] = 0;
        q.vx = (vspec){0, 1, 1, 2, 0};
        q.vw = (vspec){0, 2, 1, 1, 0};
        cv_case(c, r, &q);
        break;
    case PF_TRANSPOSED:
        q.p[0] = q.p[1] = 1;
        q.vx = (vspec){2, 1, 0, 0, 0};
        q.vw = (vspec){2, 1, 0, 0, 0};
        cv_case(c, r, &q);
        q.vx = (vspec){1, 1, 0, 0, 0};
        cv_case(c, r, &q);
        break;
    case PF_BROADCAST: /* groups 2, dilation 2; input broadcast over N, kernel over its width */
        q.ci = 4, q.co = 6, q.g = 2, q.d[0] = q.d[1] = 2, q.n = 3;
        q.vx = (vspec){0, 1, 0, 0, 1u};
        q.vw = (vspec){0, 1, 0, 0, 1u << 3 | 1u << 2};
        cv_case(c, r, &q);
        break;
    case PF_OFFSET:
        q.in[0] += 6, q.in[1] += 6;
        q.s[0] = q.s[1] = 3, q.p[0] = q.p[1] = 2, q.d[0] = q.d[1] = 2, q.op[0] = 2, q.op[1] = 1;
        q.vx = (vspec){0, 1, 0, RND(1, 9), 0};
        q.vw = (vspec){1, 1, 0, RND(1, 9), 0};
        cv_case(c, r, &q);
        break;
    case PF_EMPTY:
        q.n = 0; /* an empty output */
        cv_case(c, r, &q);
        q.n = 2, q.ci = 0; /* no input channels: zeros */
        cv_case(c, r, &q);
        break;
    case PF_RANK0: /* a 1x1 kernel (the image is the gemm's operand), grouped */
        q.k[0] = q.k[1] = 1, q.ci = 4, q.co = 6, q.g = 2;
        cv_case(c, r, &q);
        break;
    case PF_RANK1: /* depthwise: groups = channels */
        q.ci = q.co = q.g = 4, q.p[0] = q.p[1] = 1;
        cv_case(c, r, &q);
        break;
    case PF_RANK2: /* stride 2 with output_padding (transposed) and asymmetric parameters */
        q.s[0] = 2, q.s[1] = 3, q.op[0] = 1, q.op[1] = 2, q.p[0] = 1, q.k[1] = 2;
        cv_case(c, r, &q);
        break;
    case PF_RANK3: /* output_padding < dilation, groups 3 */
        q.in[0] += 6, q.in[1] += 6;
        q.ci = 3, q.co = 6, q.g = 3, q.s[0] = q.s[1] = 2, q.d[0] = q.d[1] = 3, q.op[0] = q.op[1] = 2;
        cv_case(c, r, &q);
        break;
    case PF_LARGE: /* above the parallel thresholds */
        q = cv_base(r, 22, 3);
        q.n = 2, q.ci = 8, q.co = 8, q.p[0] = q.p[1] = 1;
        if (c->row->op == WK_OP_CONV1D || c->row->op == WK_OP_CONV_TRANSPOSE1D)
            q.in[1] = RND(500, 600), q.ci = 16, q.co = 16;
        cv_case(c, r, &q);
        break;
    case PF_LARGE_T: /* many small images: OpenMP over images, groups 2, permuted input */
        q.n = 24, q.ci = 4, q.co = 4, q.g = 2, q.p[0] = q.p[1] = 1;
        q.vx = (vspec){2, 1, 0, 0, 0};
        cv_case(c, r, &q);
        break;
    default: /* rank4 .. rank6: random parameters */
        for (int i = 0; i < 2; i++) {
            q.s[i] = (int32_t)RND(1, 3), q.p[i] = (int32_t)RND(0, 2), q.d[i] = (int32_t)RND(1, 2);
            const int32_t lim = q.s[i] > q.d[i] ? q.s[i] : q.d[i];
            q.op[i] = (int32_t)RND(0, lim - 1);
            q.in[i] += 4;
        }
        q.g = (int32_t)RND(1, 2);
        q.ci = q.g * RND(1, 3), q.co = q.g * RND(1, 3);
        q.vx = (vspec){(int)RND(0, 1), 1, RND(0, 1), RND(0, 3), 0};
        q.vw = (vspec){(int)RND(0, 2), 1, RND(0, 1), RND(0, 3), 0};
        cv_case(c, r, &q);
        break;
    }
}
