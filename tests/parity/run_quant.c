/* run_quant.c: runner of the quantized rows ("dequantize_<qt>", "qmatmul_<qt>",
 * "qembedding_<qt>") against the f64 reference decoder (tests/reference/ref_quant.c).
 * Quantized inputs are random bytes (every code, every packed scale and high-bit pattern) with
 * the f16/f32 super-block scales overwritten by finite values in [-0.25, 0.25], so no NaN or
 * infinity comes from the scales; the one-element types hold random finite values.
 * Each layout family maps to a few cases of the op's own families:
 *   dequantize: 3 blocks (contiguous), 1 block with slack bytes after it (offset), n = 0
 *     (empty), 5 blocks (rank1), > 32768 elements (large: the threaded path).
 *   qmatmul (and qmatmul_act: x's activations by wk_quantize_act, then wk_qmatmul_act; the same
 *     reference): m = 1 and m = 9 (contiguous), m = 8 with a strided x (strided), m = 33 with a
 *     transposed x (transposed), batched (2,3,4,k) with stride-0 dims (broadcast), batched
 *     (2,8,k) = 16 rows at an offset (offset), m = 0 and k = 0 (empty), x of rank 1 (rank1),
 *     m = 33, 64 and 512 with a longer k (large: the prefill shapes).
 *   qembedding: ids u32 / i64 / u8 in contiguous, strided, transposed, broadcast, offset
 *     layouts with ~10% "none" sentinels, an out-of-range id (strided: a negative i64,
 *     offset: u8 = rows) that must fail with WK_ERR_INDEX_OUT_OF_RANGE, no ids (empty), and a
 *     large case.
 * Tolerance: dequantize and qembedding exact (one rounding of an exactly computed value);
 * qmatmul PT_SUM (f32 sums within a block). Inputs must stay untouched. */
#include "parity_impl.h"
#include "ref_quant.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Block types by row-name suffix, and where their floating-point scales sit in a block. */
typedef struct qinfo {
    const char *name;
    wk_qtype qt;
    int f16_off[2], nf16; /* f16 scale fields */
    int f32_scale;        /* q8_k: an f32 scale at byte 0 */
    wk_dtype elem;        /* one-element types: the element's dtype (else U8: random bytes) */
} qinfo;

static const qinfo qinfos[] = {
    {"q4_0", WK_QTYPE_Q4_0, {0, 0}, 1, 0, WK_DTYPE_U8},
    {"q4_1", WK_QTYPE_Q4_1, {0, 2}, 2, 0, WK_DTYPE_U8},
    {"q5_0", WK_QTYPE_Q5_0, {0, 0}, 1, 0, WK_DTYPE_U8},
    {"q5_1", WK_QTYPE_Q5_1, {0, 2}, 2, 0, WK_DTYPE_U8},
    {"q8_0", WK_QTYPE_Q8_0, {0, 0}, 1, 0, WK_DTYPE_U8},
    {"q8_1", WK_QTYPE_Q8_1, {0, 2}, 2, 0, WK_DTYPE_U8},
    {"q2_k", WK_QTYPE_Q2_K, {80, 82}, 2, 0, WK_DTYPE_U8},
    {"q3_k", WK_QTYPE_Q3_K, {108, 0}, 1, 0, WK_DTYPE_U8},
    {"q4_k", WK_QTYPE_Q4_K, {0, 2}, 2, 0, WK_DTYPE_U8},
    {"q5_k", WK_QTYPE_Q5_K, {0, 2}, 2, 0, WK_DTYPE_U8},
    {"q6_k", WK_QTYPE_Q6_K, {208, 0}, 1, 0, WK_DTYPE_U8},
    {"q8_k", WK_QTYPE_Q8_K, {0, 0}, 0, 1, WK_DTYPE_U8},
    {"f32", WK_QTYPE_F32, {0, 0}, 0, 0, WK_DTYPE_F32},
    {"f16", WK_QTYPE_F16, {0, 0}, 0, 0, WK_DTYPE_F16},
    {"bf16", WK_QTYPE_BF16, {0, 0}, 0, 0, WK_DTYPE_BF16},
};
#define NQINFO ((int)(sizeof qinfos / sizeof qinfos[0]))

static const qinfo *row_qinfo(const pt_row *row)
{
    const size_t n = strlen(row->name);
    for (int i = 0; i < NQINFO; i++) { /* the name ends with "_<qtype>" */
        const size_t q = strlen(qinfos[i].name);
        if (n > q && row->name[n - q - 1] == '_' && strcmp(row->name + n - q, qinfos[i].name) == 0)
            return &qinfos[i];
    }
    return &qinfos[0];
}

wk_qtype pt_row_qtype(const pt_row *row) { return row_qinfo(row)->qt; }

/* t <- a u8 storage holding rows x k elements of the row's block type (random, see above) and
 * `slack` bytes more. */
static int make_w(pt_ctx *c, pt_tensor *t, const qinfo *qi, int64_t rows, int64_t k,
                  int64_t slack, pt_rng *r)
{
    const int64_t be = ref_qblock_elems(qi->qt), bb = ref_qblock_bytes(qi->qt);
    const int64_t nb = rows * (k / be), len = nb * bb + slack;
    unsigned char *host = pt_alloc(c, (size_t)len);
    if (!host) {
        *t = (pt_tensor){0};
        return 0;
    }
    if (qi->elem != WK_DTYPE_U8) {
        pt_fill(host, qi->elem, (size_t)nb, r, PD_ANY, 0);
        for (int64_t i = nb * bb; i < len; i++)
            host[i] = (unsigned char)pt_rng_next(r);
    } else {
        for (int64_t i = 0; i < len; i++)
            host[i] = (unsigned char)(pt_rng_next(r) >> 24);
        for (int64_t b = 0; b < nb; b++) {
            unsigned char *blk = host + b * bb;
            for (int f = 0; f < qi->nf16; f++)
                ref_store_f(WK_DTYPE_F16, blk + qi->f16_off[f], 0, pt_rng_uniform(r, -0.25, 0.25));
            if (qi->f32_scale)
                ref_store_f(WK_DTYPE_F32, blk, 0, pt_rng_uniform(r, -0.25, 0.25));
        }
    }
    int ok = pt_tensor_upload(c, t, WK_DTYPE_U8, (size_t)len, host, NULL);
    free(host);
    return ok;
}

/* Checks status, output and untouched inputs of one call; frees out. */
static void finish(pt_ctx *c, wk_status st, wk_status rst, wk_storage *out, const void *want,
                   int64_t n, pt_tensor *a, pt_tensor *b)
{
    if (pt_check_status(c, st, rst, wk_op_name(c->row->op)) && st == WK_OK && !c->probing)
        pt_check_output(c, out, c->dt, want, n, c->row->tol);
    if (st != WK_OK && out)
        pt_fail(c, "a failed call returned an output");
    pt_tensor_unchanged(c, a, "a");
    pt_tensor_unchanged(c, b, "b");
    wk_storage_free(out);
}

static void dequant_case(pt_ctx *c, pt_rng *r, const qinfo *qi, int64_t nblocks, int64_t slack)
{
    const int64_t n = nblocks * ref_qblock_elems(qi->qt);
    pt_tensor w = {0}, none = {0};
    wk_storage *out = NULL;
    void *want = NULL;
    pt_case_begin(c);
    snprintf(c->sub, sizeof c->sub, "n=%lld slack=%lld", (long long)n, (long long)slack);
    if (make_w(c, &w, qi, 1, n, slack, r) &&
        (want = pt_alloc(c, (size_t)(n > 0 ? n : 1) * ref_dtype_size(c->dt)))) {
        wk_status st = wk_dequantize(&out, c->dt, w.s, qi->qt, n);
        wk_status rst = c->probing ? WK_OK : ref_dequantize(want, c->dt, qi->qt, w.host, n);
        finish(c, st, rst, out, want, n, &w, &none);
    }
    free(want);
    pt_tensor_free(&w);
}

/* x's int8 activations (wk_quantize_act), then wk_qmatmul_act on them: *out (m, n). */
static wk_status qmatmul_act(wk_storage **out, pt_ctx *c, const pt_tensor *x, const pt_tensor *w,
                             wk_qtype qt, int64_t n, int64_t k)
{
    wk_storage *a = NULL;
    int64_t m = 1; /* the other dims' count (k may be 0) */
    for (int32_t d = 0; d < x->l.rank - 1; d++)
        m *= x->l.dims[d];
    wk_status st = wk_quantize_act(&a, x->s, &x->l);
    if (st == WK_OK)
        st = wk_qmatmul_act(out, c->dt, a, m, w->s, qt, n, k);
    wk_storage_free(a);
    return st;
}

static void qmatmul_case(pt_ctx *c, pt_rng *r, const qinfo *qi, int32_t rank, const int64_t *xd,
                         int64_t n)
{
    const int64_t k = xd[rank - 1];
    pt_tensor x = {0}, w = {0};
    wk_storage *out = NULL;
    void *want = NULL;
    pt_case_begin(c);
    if (pt_tensor_make(c, &x, c->dt, rank, xd, r, PD_ANY, 0) && make_w(c, &w, qi, n, k, 0, r)) {
        int64_t cnt = n; /* (..., m, n) */
        for (int32_t d = 0; d < rank - 1; d++)
            cnt *= xd[d];
        char sx[96];
        snprintf(c->sub, sizeof c->sub, "x=%s n=%lld", pt_layout_str(sx, sizeof sx, &x.l),
                 (long long)n);
        if ((want = pt_alloc(c, (size_t)(cnt > 0 ? cnt : 1) * ref_dtype_size(c->dt)))) {
            wk_status st = c->row->op == WK_OP_QMATMUL_ACT
                               ? qmatmul_act(&out, c, &x, &w, qi->qt, n, k)
                               : wk_qmatmul(&out, x.s, &x.l, w.s, qi->qt, n, k);
            wk_status rst = c->probing ? WK_OK
                                       : ref_qmatmul(want, c->dt, x.host, &x.l, qi->qt, w.host, n, k);
            finish(c, st, rst, out, want, cnt, &x, &w);
        }
    }
    free(want);
    pt_tensor_free(&x);
    pt_tensor_free(&w);
}

/* ids of dims (rank) in the family's layout, values in [0, rows) or the sentinel; bad >= 0:
 * that row-major element is out of range (u8/u32: rows, i64: negative). */
static void qembedding_case(pt_ctx *c, pt_rng *r, const qinfo *qi, wk_dtype idt, int32_t rank,
                            const int64_t *dims, int64_t rows, int64_t k, int bad)
{
    pt_tensor ids = {0}, w = {0};
    wk_storage *out = NULL;
    void *want = NULL;
    unsigned char *host = NULL;
    wk_layout l;
    size_t len;
    pt_case_begin(c);
    pt_layout_for(&l, &len, c->fam, rank, dims, r);
    const int64_t nids = ref_count(&l);
    if (!(host = pt_alloc(c, len * ref_dtype_size(idt))))
        goto done;
    for (size_t i = 0; i < len; i++)
        ref_store_i(idt, host, (int64_t)i,
                    pt_rng_unif(r) < 0.1 ? ref_int_max(idt) : pt_rng_range(r, 0, rows - 1));
    if (bad && nids > 0)
        ref_store_i(idt, host, ref_offset(&l, pt_rng_range(r, 0, nids - 1)),
                    idt == WK_DTYPE_I64 ? -1 - pt_rng_range(r, 0, 3) : rows);
    if (!pt_tensor_upload(c, &ids, idt, len, host, &l) || !make_w(c, &w, qi, rows, k, 0, r))
        goto done;
    char si[96];
    snprintf(c->sub, sizeof c->sub, "ids %s %s rows=%lld k=%lld%s", wk_dtype_name(idt),
             pt_layout_str(si, sizeof si, &l), (long long)rows, (long long)k,
             bad ? " (one id out of range)" : "");
    if ((want = pt_alloc(c, (size_t)(nids * k > 0 ? nids * k : 1) * ref_dtype_size(c->dt)))) {
        int deferred;
        wk_status st = wk_qembedding(&out, c->dt, ids.s, &ids.l, w.s, qi->qt, rows, k);
        st = pt_settle(c, st, &out, &deferred);
        wk_status rst = c->probing ? WK_OK
                                   : ref_qembedding(want, c->dt, idt, ids.host, &ids.l, qi->qt,
                                                    w.host, rows, k);
        finish(c, st, rst, out, want, nids * k, &ids, &w);
    }
done:
    free(host);
    free(want);
    pt_tensor_free(&ids);
    pt_tensor_free(&w);
}

static void run_dequant(pt_ctx *c, pt_rng *r, const qinfo *qi)
{
    const int64_t be = ref_qblock_elems(qi->qt);
    switch (c->fam) {
    case PF_CONTIG: dequant_case(c, r, qi, 3, 0); break;
    case PF_OFFSET: dequant_case(c, r, qi, 1, 7); break;
    case PF_EMPTY: dequant_case(c, r, qi, 0, 0); break;
    case PF_RANK1: dequant_case(c, r, qi, 5, 0); break;
    case PF_LARGE: dequant_case(c, r, qi, (40000 + be - 1) / be, 0); break;
    default: break;
    }
}

static void run_qmatmul(pt_ctx *c, pt_rng *r, const qinfo *qi)
{
    const int64_t be = ref_qblock_elems(qi->qt);
    /* k: 40 for the one-element types (64 for qmatmul_act: a multiple of 32) */
    const int64_t k = be == 1 ? (c->row->op == WK_OP_QMATMUL_ACT ? 64 : 40) : be == 32 ? 96 : 512;
    switch (c->fam) {
    case PF_CONTIG:
        qmatmul_case(c, r, qi, 2, (const int64_t[]){1, k}, 7);
        qmatmul_case(c, r, qi, 2, (const int64_t[]){9, k}, 7);
        break;
    case PF_STRIDED: qmatmul_case(c, r, qi, 2, (const int64_t[]){8, k}, 5); break;
    case PF_TRANSPOSED: qmatmul_case(c, r, qi, 2, (const int64_t[]){33, k}, 6); break;
    case PF_BROADCAST: qmatmul_case(c, r, qi, 4, (const int64_t[]){2, 3, 4, k}, 5); break;
    case PF_OFFSET: qmatmul_case(c, r, qi, 3, (const int64_t[]){2, 8, k}, 9); break;
    case PF_EMPTY:
        qmatmul_case(c, r, qi, 2, (const int64_t[]){0, k}, 4);
        qmatmul_case(c, r, qi, 2, (const int64_t[]){3, 0}, 4);
        break;
    case PF_RANK1: qmatmul_case(c, r, qi, 1, (const int64_t[]){k}, 11); break;
    case PF_LARGE: {
        const int64_t kl = be == 256 ? 4 * be : 4 * k;
        qmatmul_case(c, r, qi, 2, (const int64_t[]){33, kl}, 64);
        qmatmul_case(c, r, qi, 2, (const int64_t[]){64, kl}, 40);
        if (c->row->op == WK_OP_QMATMUL) /* (qmatmul_act: the paths of 512 rows are qmatmul's) */
            qmatmul_case(c, r, qi, 2, (const int64_t[]){512, kl}, 16);
        break;
    }
    default: break;
    }
}

static void run_qembedding(pt_ctx *c, pt_rng *r, const qinfo *qi)
{
    const int64_t be = ref_qblock_elems(qi->qt);
    const int64_t k = be == 1 ? 24 : be == 32 ? 64 : 256;
    switch (c->fam) {
    case PF_CONTIG: qembedding_case(c, r, qi, WK_DTYPE_U32, 1, (const int64_t[]){6}, 9, k, 0); break;
    case PF_STRIDED:
        qembedding_case(c, r, qi, WK_DTYPE_I64, 2, (const int64_t[]){3, 4}, 5, k, 0);
        qembedding_case(c, r, qi, WK_DTYPE_I64, 2, (const int64_t[]){3, 4}, 5, k, 1);
        break;
    case PF_TRANSPOSED: qembedding_case(c, r, qi, WK_DTYPE_U8, 2, (const int64_t[]){4, 3}, 7, k, 0); break;
    case PF_BROADCAST: qembedding_case(c, r, qi, WK_DTYPE_U32, 2, (const int64_t[]){3, 5}, 4, k, 0); break;
    case PF_OFFSET:
        qembedding_case(c, r, qi, WK_DTYPE_U8, 2, (const int64_t[]){2, 5}, 6, k, 0);
        qembedding_case(c, r, qi, WK_DTYPE_U8, 2, (const int64_t[]){2, 5}, 6, k, 1);
        break;
    case PF_EMPTY: qembedding_case(c, r, qi, WK_DTYPE_U32, 1, (const int64_t[]){0}, 3, k, 0); break;
    case PF_LARGE: qembedding_case(c, r, qi, WK_DTYPE_U32, 1, (const int64_t[]){200}, 50, 2 * k, 0); break;
    default: break;
    }
}

void pt_run_quant(pt_ctx *c, pt_rng *r)
{
    const qinfo *qi = row_qinfo(c->row);
    switch (c->row->op) {
    case WK_OP_DEQUANTIZE: run_dequant(c, r, qi); break;
    case WK_OP_QMATMUL:
    case WK_OP_QMATMUL_ACT: run_qmatmul(c, r, qi); break;
    case WK_OP_QEMBEDDING: run_qembedding(c, r, qi); break;
    default: pt_fail(c, "not a quantized op"); break;
    }
}
