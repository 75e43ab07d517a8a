/* api_rope_kv.c: front end of wk_rope_kv_append (include/wick.h; rules in docs/semantics.md,
 * "Rope and the KV cache"). Checks every argument once, allocates the contiguous output and calls
 * the backend's rope_kv entry. Order of the checks: NULL output, operands (NULL, layout), devices,
 * writable caches, ranks and shapes, dtypes, positions, then whether the op is defined and
 * implemented. The values of pos are the backend's to check (device memory, changed between graph
 * replays). */
#include "api.h"

static const char *const NAME = "rope_kv_append";

/* q (B, Hq, T, D); k, v (B, Hkv, T, D); cos, sin (P, D/2) or (B, P, D/2); kc, vc (B, Hkv, L, D). */
static wk_status rkv_shapes(const wk_layout *lq, const wk_layout *lk, const wk_layout *lv,
                            const wk_layout *lc, const wk_layout *ls, const wk_layout *lkc,
                            const wk_layout *lvc)
{
    char sq[256], sk[256], sc[256], skc[256];
    wk_layout_str(sq, sizeof sq, lq);
    wk_layout_str(sk, sizeof sk, lk);
    wk_layout_str(sc, sizeof sc, lc);
    wk_layout_str(skc, sizeof skc, lkc);
    if (lq->rank != 4 || lk->rank != 4 || lv->rank != 4 || lkc->rank != 4 || lvc->rank != 4)
        return wk_err(WK_ERR_SHAPE, "%s: q, k, v, kc and vc must have rank 4 (B, H, T or L, D); "
                      "got ranks %d, %d, %d, %d, %d", NAME, (int)lq->rank, (int)lk->rank,
                      (int)lv->rank, (int)lkc->rank, (int)lvc->rank);
    if (!wk_layout_same_dims(lk, lv))
        return wk_err(WK_ERR_SHAPE, "%s: k %s and v must have the same dims", NAME, sk);
    if (!wk_layout_same_dims(lkc, lvc))
        return wk_err(WK_ERR_SHAPE, "%s: kc %s and vc must have the same dims", NAME, skc);
    const int64_t b = lq->dims[0], t = lq->dims[2], d = lq->dims[3];
    if (lk->dims[0] != b || lk->dims[2] != t || lk->dims[3] != d)
        return wk_err(WK_ERR_SHAPE, "%s: q %s and k %s differ in batch, tokens or head size",
                      NAME, sq, sk);
    if (d % 2 != 0)
        return wk_err(WK_ERR_SHAPE, "%s: the head size must be even, got q %s", NAME, sq);
    if (lkc->dims[0] != b || lkc->dims[1] != lk->dims[1] || lkc->dims[3] != d)
        return wk_err(WK_ERR_SHAPE, "%s: the cache kc %s must be (B, Hkv, L, D) = (%lld, %lld, L, "
                      "%lld)", NAME, skc, (long long)b, (long long)lk->dims[1], (long long)d);
    if (!wk_layout_same_dims(lc, ls))
        return wk_err(WK_ERR_SHAPE, "%s: cos %s and sin must have the same dims", NAME, sc);
    const int r = lc->rank;
    if ((r != 2 && r != 3) || lc->dims[r - 1] != d / 2 || (r == 3 && lc->dims[0] != b))
        return wk_err(WK_ERR_SHAPE, "%s: cos/sin must be (P, D/2) or (B, P, D/2) with D/2 = %lld, "
                      "B = %lld; got cos %s", NAME, (long long)(d / 2), (long long)b, sc);
    return WK_OK;
}

static wk_status rkv_pos(const wk_storage *pos, const wk_layout *lp, const wk_layout *lq)
{
    if (lp->rank != 1 || lp->dims[0] != lq->dims[0])
        return wk_err(WK_ERR_SHAPE, "%s: pos must have rank 1 of B = %lld elements; got rank %d "
                      "(first dim %lld)", NAME, (long long)lq->dims[0], (int)lp->rank,
                      lp->rank > 0 ? (long long)lp->dims[0] : -1LL);
    if (pos->dtype != WK_DTYPE_U32)
        return wk_err(WK_ERR_DTYPE, "%s: pos is %s (u32 expected)", NAME, wk_dtype_name(pos->dtype));
    return WK_OK;
}

wk_status wk_rope_kv_append(wk_storage **out, int interleaved, const wk_storage *q,
                            const wk_layout *lq, const wk_storage *k, const wk_layout *lk,
                            const wk_storage *v, const wk_layout *lv, const wk_storage *cos,
                            const wk_layout *lc, const wk_storage *sin, const wk_layout *ls,
                            wk_storage *kc, const wk_layout *lkc, wk_storage *vc,
                            const wk_layout *lvc, const wk_storage *pos, const wk_layout *lp,
                            int64_t start)
{
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", NAME);
    if ((st = wk_check_operand(q, lq, NAME, "q")) || (st = wk_check_operand(k, lk, NAME, "k")) ||
        (st = wk_check_operand(v, lv, NAME, "v")) ||
        (st = wk_check_operand(cos, lc, NAME, "cos")) ||
        (st = wk_check_operand(sin, ls, NAME, "sin")) ||
        (st = wk_check_operand(kc, lkc, NAME, "kc")) ||
        (st = wk_check_operand(vc, lvc, NAME, "vc")))
        return st;
    if (pos && (st = wk_check_operand(pos, lp, NAME, "pos")))
        return st;
    const wk_storage *others[7] = {k, v, cos, sin, kc, vc, pos};
    for (int i = 0; i < 7; i++)
        if (others[i] && (st = wk_check_same_device(q, others[i], NAME)))
            return st;
    if ((st = wk_check_writable(kc, NAME)) || (st = wk_check_writable(vc, NAME)))
        return st;
    if ((st = rkv_shapes(lq, lk, lv, lc, ls, lkc, lvc)))
        return st;
    if (pos && (st = rkv_pos(pos, lp, lq)))
        return st;
    const wk_storage *same[2] = {k, v};
    static const char *const what[2] = {"k", "v"};
    for (int i = 0; i < 2; i++)
        if (same[i]->dtype != q->dtype)
            return wk_err(WK_ERR_DTYPE, "%s: q is %s but %s is %s (one dtype expected)", NAME,
                          wk_dtype_name(q->dtype), what[i], wk_dtype_name(same[i]->dtype));
    if (cos->dtype != sin->dtype || (cos->dtype != q->dtype && cos->dtype != WK_DTYPE_F32))
        return wk_err(WK_ERR_DTYPE, "%s: cos is %s and sin %s; both must be q's dtype (%s) or f32",
                      NAME, wk_dtype_name(cos->dtype), wk_dtype_name(sin->dtype),
                      wk_dtype_name(q->dtype));
    if (kc->dtype != vc->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: kc is %s, vc is %s (one cache dtype expected)", NAME,
                      wk_dtype_name(kc->dtype), wk_dtype_name(vc->dtype));
    const int64_t t = lq->dims[2];
    const int64_t p = lc->dims[lc->rank - 2], l = lkc->dims[2];
    if (!pos && (start < 0 || start > p - t || start > l - t))
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "%s: positions %lld..%lld are outside the tables "
                      "(%lld rows) or the cache (%lld rows)", NAME, (long long)start,
                      (long long)start + t - 1, (long long)p, (long long)l);
    if ((st = wk_check_op(q->dev, WK_OP_ROPE_KV_APPEND, q->dtype)) ||
        (st = wk_check_op(q->dev, WK_OP_ROPE_KV_APPEND, kc->dtype)))
        return st;
    const int64_t n = wk_layout_elem_count(lq);
    wk_storage *o; /* the rotated q in the cache's dtype */
    if ((st = wk_storage_new(&o, q->dev, kc->dtype, (size_t)n, NAME)))
        return st;
    if (n > 0 || wk_layout_elem_count(lk) > 0) {
        const wk_rope_kv_args a = {.dt = q->dtype, .cdt = kc->dtype, .tdt = cos->dtype,
                                   .interleaved = interleaved != 0,
                                   .out = o->data, .kc = kc->data, .vc = vc->data, .q = q->data,
                                   .k = k->data, .v = v->data, .cos = cos->data, .sin = sin->data,
                                   .pos = pos ? pos->data : NULL, .lq = lq, .lk = lk, .lv = lv,
                                   .lc = lc, .ls = ls, .lkc = lkc, .lvc = lvc,
                                   .lp = pos ? lp : NULL, .start = start};
        st = q->dev->be->rope_kv(q->dev, &a);
    }
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}
