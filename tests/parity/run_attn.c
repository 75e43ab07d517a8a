/* run_attn.c: runner of the "decode_attention" row (wk_decode_attention against
 * ref_decode_attention). The row's dtype is q's; the cache is q's dtype in even families and f16
 * (f32 when q is f16) in odd ones. Families: contig (grouped-query 4:2, one query token), strided
 * (k and v narrowed views of one larger (B, H, Lmax, D) cache), transposed (q a permuted
 * (B, Lq, H, D) tensor, three query tokens, causal), broadcast (k and v with batch stride 0),
 * offset (storage offsets, not causal), empty (no query token), large (Lk 3000, D 128, GQA 8:2,
 * two query tokens: several splits on a GPU), large_t (prefill: q a permuted (1, 160, 4, 64)
 * tensor, Lk 200, GQA 4:2, causal; on a GPU the f16 and bf16 rows run kernels/flash.cu); the
 * rank families are shapes this op rejects
 * (WK_ERR_SHAPE, checked). Values: q and k in [-2, 2], v in [-1, 1]. Tolerance PT_SUM.
 * The row "decode_attention_lens" (target u32) runs the same cases through
 * wk_decode_attention_lens with per-entry key counts (entry b: Lk - 7 b, at least Lq; the
 * empty family: Lk) and compares entry b with the reference on its first L_b rows. */
#include "parity_impl.h"
#include "ref.h"
#include "ref_attn.h"
#include <stdlib.h>

typedef struct attn_geo {
    int64_t b, hq, hkv, lq, lk, d, lmax;
    int causal, qperm, bcast;
    int64_t qoff, koff;
} attn_geo;

static int fill(pt_ctx *c, pt_tensor *t, wk_dtype dt, size_t len, const wk_layout *l, pt_rng *r,
                double lo, double hi)
{
    unsigned char *h = pt_alloc(c, len * ref_dtype_size(dt));
    if (!h)
        return 0;
    for (size_t i = 0; i < len; i++)
        ref_store_f(dt, h, (int64_t)i, pt_rng_uniform(r, lo, hi));
    int ok = pt_tensor_upload(c, t, dt, len, h, l);
    free(h);
    return ok;
}

void pt_run_attn(pt_ctx *c, pt_rng *r)
{
    attn_geo g = {2, 4, 2, 1, 37, 16, 37, 1, 0, 0, 0, 0};
    switch (c->fam) {
    case PF_CONTIG: break;
    case PF_STRIDED: g.lmax = 50, g.lk = 29, g.koff = 3; break;
    case PF_TRANSPOSED: g.qperm = 1, g.lq = 3, g.lk = 20, g.d = 24; break;
    case PF_BROADCAST: g.bcast = 1; break;
    case PF_OFFSET: g.qoff = 5, g.koff = 7, g.causal = 0, g.d = 8; break;
    case PF_EMPTY: g.lq = 0; break;
    case PF_LARGE: g.b = 1, g.hq = 8, g.hkv = 2, g.lq = 2, g.lk = 3000, g.lmax = 3000, g.d = 128; break;
    case PF_LARGE_T: /* prefill: 160 query tokens (f16 and bf16 take the GPU's flash kernel) */
        g.b = 1, g.hq = 4, g.hkv = 2, g.lq = 160, g.lk = 200, g.lmax = 200, g.d = 64, g.qperm = 1;
        break;
    case PF_RANK0: case PF_RANK1: case PF_RANK2: case PF_RANK3: case PF_RANK5: case PF_RANK6: {
        /* rank != 4: WK_ERR_SHAPE on every backend */
        pt_case_begin(c);
        pt_tensor x = {0};
        const wk_layout l = {.rank = 1, .dims = {8}, .strides = {1}, .offset = 0};
        snprintf(c->sub, sizeof c->sub, "rank-1 operands");
        if (fill(c, &x, c->dt, 8, &l, r, -1, 1)) {
            wk_storage *out = NULL;
            wk_status st = wk_decode_attention(&out, x.s, &x.l, x.s, &x.l, x.s, &x.l, 1.0f, 1);
            pt_check_status(c, st, c->probing ? c->expect : WK_ERR_SHAPE, c->row->name);
            wk_storage_free(out);
        }
        pt_tensor_free(&x);
        return;
    }
    default: return;
    }
    if (g.lmax < g.lk)
        g.lmax = g.lk;
    const wk_dtype kvdt = (c->fam & 1) ? (c->dt == WK_DTYPE_F16 ? WK_DTYPE_F32 : WK_DTYPE_F16) : c->dt;
    pt_tensor q = {0}, k = {0}, v = {0}, lt = {0};
    pt_case_begin(c);
    /* q: (B, Hq, Lq, D), stored (B, Lq, Hq, D) when qperm */
    wk_layout lq = {.rank = 4, .dims = {g.b, g.hq, g.lq, g.d}, .offset = g.qoff};
    if (g.qperm) {
        lq.strides[0] = g.lq * g.hq * g.d, lq.strides[1] = g.d, lq.strides[2] = g.hq * g.d;
    } else {
        lq.strides[0] = g.hq * g.lq * g.d, lq.strides[1] = g.lq * g.d, lq.strides[2] = g.d;
    }
    lq.strides[3] = 1;
    const size_t qlen = (size_t)(g.qoff + g.b * g.hq * g.lq * g.d + 3);
    /* k, v: views (B, Hkv, Lk, D) of a (B, Hkv, Lmax, D) cache (batch stride 0: one batch) */
    const int64_t nbs = g.bcast ? 1 : g.b;
    wk_layout lk = {.rank = 4, .dims = {g.b, g.hkv, g.lk, g.d},
                    .strides = {g.bcast ? 0 : g.hkv * g.lmax * g.d, g.lmax * g.d, g.d, 1},
                    .offset = g.koff};
    const size_t klen = (size_t)(g.koff + nbs * g.hkv * g.lmax * g.d + 5);
    if (!fill(c, &q, c->dt, qlen, &lq, r, -2, 2) || !fill(c, &k, kvdt, klen, &lk, r, -2, 2) ||
        !fill(c, &v, kvdt, klen, &lk, r, -1, 1))
        goto done;
    char sq[128], sk[128];
    snprintf(c->sub, sizeof c->sub, "kv %s causal %d q=%s k,v=%s", wk_dtype_name(kvdt), g.causal,
             pt_layout_str(sq, sizeof sq, &q.l), pt_layout_str(sk, sizeof sk, &k.l));
    const float scale = 1.0f / (float)g.d;
    const int with_lens = c->row->target == WK_DTYPE_U32;
    uint32_t hl[8];
    for (int64_t b = 0; b < g.b && b < 8; b++) {
        const int64_t n = g.lk - 7 * b;
        hl[b] = (uint32_t)(n > g.lq ? n : g.lq);
    }
    const wk_layout ll = {.rank = 1, .dims = {g.b}, .strides = {1}, .offset = 0};
    wk_storage *out = NULL;
    wk_status st;
    if (with_lens) {
        st = pt_tensor_upload(c, &lt, WK_DTYPE_U32, (size_t)g.b, hl, &ll) ? WK_OK
                                                                             : WK_ERR_OUT_OF_MEMORY;
        if (st == WK_OK)
            st = wk_decode_attention_lens(&out, q.s, &q.l, k.s, &k.l, v.s, &v.l, lt.s, &lt.l,
                                          scale, g.causal);
    } else {
        st = wk_decode_attention(&out, q.s, &q.l, k.s, &k.l, v.s, &v.l, scale, g.causal);
    }
    const int64_t n = g.b * g.hq * g.lq * g.d;
    void *want = pt_alloc(c, (size_t)(n > 0 ? n : 1) * ref_dtype_size(c->dt));
    wk_status rst = WK_OK;
    /* with lens: entry b alone against its first hl[b] rows */
    for (int64_t b = 0; !c->probing && want && rst == WK_OK && b < (with_lens ? g.b : 1); b++) {
        wk_layout rq = q.l, rk = k.l, rv = v.l;
        size_t ob = 0;
        if (with_lens) {
            rq.dims[0] = rk.dims[0] = rv.dims[0] = 1;
            rq.offset += b * q.l.strides[0];
            rk.offset += b * k.l.strides[0];
            rv.offset += b * v.l.strides[0];
            rk.dims[2] = rv.dims[2] = hl[b];
            ob = (size_t)(b * g.hq * g.lq * g.d) * ref_dtype_size(c->dt);
        }
        rst = ref_decode_attention((unsigned char *)want + ob, c->dt, kvdt, q.host, &rq, k.host,
                                   &rk, v.host, &rv, (double)scale, g.causal);
    }
    if (pt_check_status(c, st, rst, c->row->name) && st == WK_OK && !c->probing)
        pt_check_output(c, out, c->dt, want, n, c->row->tol);
    pt_tensor_unchanged(c, &q, "q");
    pt_tensor_unchanged(c, &k, "k");
    pt_tensor_unchanged(c, &v, "v");
    if (with_lens)
        pt_tensor_unchanged(c, &lt, "lens");
    free(want);
    wk_storage_free(out);
done:
    pt_tensor_free(&q);
    pt_tensor_free(&k);
    pt_tensor_free(&v);
    pt_tensor_free(&lt);
}
