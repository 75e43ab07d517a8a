/* gpu_rope.c: the GPU rope, rope_i and rope_thd (candle-nn's rotary embeddings) and
 * rope_kv_append (rope with the KV-cache write), through kernels/rope.cu: one thread per rotated
 * pair, every operand read through its own layout. */
#include "gpu_ops.h"
#include <stdio.h>

/* Mirrors struct rope_geom of kernels/rope.cu field for field (all int64: no padding). */
typedef struct rope_geom {
    int64_t d1, d2, h2;
    int64_t sx[4];
    int64_t cb, ct, ci;
    int64_t sb, st, si;
    int64_t interleaved, thd, small;
} rope_geom;
_Static_assert(sizeof(rope_geom) == 16 * 8, "rope_geom layout");

/* out (contiguous, dims of lx) = the rotary embedding op of x; shapes checked by the front end
 * (x rank 4 (B, d1, d2, D), D even; cos/sin rank 2 (Tc, D/2) or 3 (B, Tc, D/2), equal dims). */
wk_status wk_gpu_rope(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *cos, const wk_layout *lc, const void *sin,
                      const wk_layout *ls)
{
    if (lx->rank != 4 || lc->rank < 2 || lc->rank > 3 || ls->rank != lc->rank ||
        (op != WK_OP_ROPE && op != WK_OP_ROPE_I && op != WK_OP_ROPE_THD))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu rope: bad call (%s, %s)", wk_op_name(op),
                      wk_dtype_name(dt));
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    const int cr = lc->rank;
    int64_t npairs = n / 2;
    rope_geom g = {
        .d1 = lx->dims[1], .d2 = lx->dims[2], .h2 = lx->dims[3] / 2,
        .sx = {lx->strides[0], lx->strides[1], lx->strides[2], lx->strides[3]},
        .cb = cr == 3 ? lc->strides[0] : 0, .ct = lc->strides[cr - 2], .ci = lc->strides[cr - 1],
        .sb = cr == 3 ? ls->strides[0] : 0, .st = ls->strides[cr - 2], .si = ls->strides[cr - 1],
        .interleaved = op == WK_OP_ROPE_I, .thd = op == WK_OP_ROPE_THD,
        .small = n <= INT32_MAX, /* pair indices and every dim fit in 32 bits */
    };
    const size_t esz = wk_dtype_size(dt);
    const void *xp = wk_gpu_at(x, lx->offset, esz);
    const void *cp = wk_gpu_at(cos, lc->offset, esz);
    const void *sp = wk_gpu_at(sin, ls->offset, esz);
    char name[32];
    snprintf(name, sizeof name, "rope_%s", wk_gpu_dtype_kname(dt));
    void *args[] = {&xp, &cp, &sp, &out, &npairs, &g};
    return wk_gpu_run_early(dev, "rope", name, wk_gpu_blocks(dev, npairs), 1, 1, args); /* it waits */
}

/* Mirrors struct rkv_geom of kernels/rope.cu field for field (all int64: no padding). */
typedef struct rkv_geom {
    int64_t hq, hkv, t, h2;
    int64_t sq[4], sk[4], sv[4], skc[4], svc[4];
    int64_t cb, cp, ci, sb, sp, si;
    int64_t np, nl, ps, start, interleaved, tf32;
} rkv_geom;
_Static_assert(sizeof(rkv_geom) == 36 * 8, "rkv_geom layout");

static void strides4(int64_t *dst, const wk_layout *l)
{
    for (int i = 0; i < 4; i++)
        dst[i] = l->strides[i];
}

/* wk_rope_kv_append (checked by api_rope_kv.c): one launch over the pairs of q, then of k (with
 * v's two elements of each pair). */
wk_status wk_gpu_rope_kv(wk_device *dev, const wk_rope_kv_args *a)
{
    const wk_layout *lq = a->lq, *lk = a->lk, *lc = a->lc, *ls = a->ls;
    const int cr = lc->rank;
    rkv_geom g = {
        .hq = lq->dims[1], .hkv = lk->dims[1], .t = lq->dims[2], .h2 = lq->dims[3] / 2,
        .cb = cr == 3 ? lc->strides[0] : 0, .cp = lc->strides[cr - 2], .ci = lc->strides[cr - 1],
        .sb = cr == 3 ? ls->strides[0] : 0, .sp = ls->strides[cr - 2], .si = ls->strides[cr - 1],
        .np = lc->dims[cr - 2], .nl = a->lkc->dims[2], .ps = a->lp ? a->lp->strides[0] : 0,
        .start = a->start, .interleaved = a->interleaved != 0, .tf32 = a->tdt == WK_DTYPE_F32,
    };
    strides4(g.sq, lq), strides4(g.sk, lk), strides4(g.sv, a->lv);
    strides4(g.skc, a->lkc), strides4(g.svc, a->lvc);
    const int64_t nb = lq->dims[0];
    int64_t nqp = nb * g.hq * g.t * g.h2, npairs = nqp + nb * g.hkv * g.t * g.h2;
    if (npairs == 0)
        return WK_OK;
    const size_t es = wk_dtype_size(a->dt), ces = wk_dtype_size(a->cdt);
    const void *q = wk_gpu_at(a->q, lq->offset, es), *k = wk_gpu_at(a->k, lk->offset, es);
    const void *v = wk_gpu_at(a->v, a->lv->offset, es);
    const size_t tes = wk_dtype_size(a->tdt); /* the tables: q's dtype or f32 */
    const void *cs = wk_gpu_at(a->cos, lc->offset, tes), *sn = wk_gpu_at(a->sin, ls->offset, tes);
    void *kc = wk_gpu_at(a->kc, a->lkc->offset, ces), *vc = wk_gpu_at(a->vc, a->lvc->offset, ces);
    const uint32_t *pos = a->pos ? wk_gpu_at(a->pos, a->lp->offset, sizeof(uint32_t)) : NULL;
    uint32_t *word = NULL;
    wk_status st = wk_gpu_error_word(dev, &word);
    if (st != WK_OK)
        return st;
    void *out = a->out;
    char name[48];
    snprintf(name, sizeof name, "rope_kv_%s_%s", wk_gpu_dtype_kname(a->dt),
             wk_gpu_dtype_kname(a->cdt));
    void *args[] = {&q, &k, &v, &cs, &sn, &pos, &word, &out, &kc, &vc, &npairs, &nqp, &g};
    return wk_gpu_run_early(dev, "rope", name, wk_gpu_blocks(dev, npairs), 1, 1, args);
}
