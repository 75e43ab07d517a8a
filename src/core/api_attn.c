/* api_attn.c: front end of wk_decode_attention and wk_decode_attention_lens (include/wick.h;
 * rules in docs/semantics.md, "Decode attention"). Checks every argument once, allocates the
 * contiguous output and calls the backend's attention entry. Order of the checks: NULL output,
 * operands (NULL, layout), devices, ranks and shapes, strides, dtypes, scale, then whether the op
 * is defined and implemented. The values of lens are the backend's to check (they may live in
 * device memory and change between graph replays). */
#include "api.h"
#include <math.h>

#define ATTN_MAX_D 256

static wk_status attn_shapes(const wk_layout *lq, const wk_layout *lk, const wk_layout *lv,
                             const char *name)
{
    if (lq->rank != 4 || lk->rank != 4 || lv->rank != 4)
        return wk_err(WK_ERR_SHAPE, "%s: q, k, v must have rank 4 (B, H, L, D); got ranks %d, "
                      "%d, %d", name, (int)lq->rank, (int)lk->rank, (int)lv->rank);
    for (int i = 0; i < 4; i++)
        if (lk->dims[i] != lv->dims[i])
            return wk_err(WK_ERR_SHAPE, "%s: k and v differ in dim %d (%lld vs %lld)", name, i,
                          (long long)lk->dims[i], (long long)lv->dims[i]);
    const int64_t b = lq->dims[0], hq = lq->dims[1], lqn = lq->dims[2], d = lq->dims[3];
    const int64_t hkv = lk->dims[1], lkn = lk->dims[2];
    if (lk->dims[0] != b || lk->dims[3] != d)
        return wk_err(WK_ERR_SHAPE, "%s: q (%lld, %lld, %lld, %lld) and k (%lld, %lld, %lld, "
                      "%lld) differ in batch or head size", name, (long long)b, (long long)hq,
                      (long long)lqn, (long long)d, (long long)lk->dims[0], (long long)hkv,
                      (long long)lkn, (long long)lk->dims[3]);
    if (hkv < 1 || hq % hkv != 0)
        return wk_err(WK_ERR_SHAPE, "%s: %lld query heads are not a multiple of %lld kv heads",
                      name, (long long)hq, (long long)hkv);
    if (d < 1 || d > ATTN_MAX_D)
        return wk_err(WK_ERR_SHAPE, "%s: head size %lld outside 1..%d", name, (long long)d,
                      ATTN_MAX_D);
    if (lqn > lkn)
        return wk_err(WK_ERR_SHAPE, "%s: %lld query tokens but only %lld keys", name,
                      (long long)lqn, (long long)lkn);
    if (lkn < 1 && b * hq * lqn > 0)
        return wk_err(WK_ERR_SHAPE, "%s: no keys (softmax over nothing)", name);
    const wk_layout *ls[3] = {lq, lk, lv};
    static const char *const what[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++)
        if (ls[i]->dims[3] > 1 && ls[i]->strides[3] != 1)
            return wk_err(WK_ERR_LAYOUT, "%s: the last dim of %s must have stride 1 (got %lld)",
                          name, what[i], (long long)ls[i]->strides[3]);
    return WK_OK;
}

/* lens: rank 1 of B elements of u32 (its storage and device checked by the caller). */
static wk_status attn_lens(const wk_storage *lens, const wk_layout *ll, const wk_layout *lq,
                           const char *name)
{
    if (ll->rank != 1 || ll->dims[0] != lq->dims[0])
        return wk_err(WK_ERR_SHAPE, "%s: lens must have rank 1 of B = %lld elements; got rank %d "
                      "(first dim %lld)", name, (long long)lq->dims[0], (int)ll->rank,
                      ll->rank > 0 ? (long long)ll->dims[0] : -1LL);
    if (lens->dtype != WK_DTYPE_U32)
        return wk_err(WK_ERR_DTYPE, "%s: lens is %s (u32 expected)", name,
                      wk_dtype_name(lens->dtype));
    return WK_OK;
}

/* Both entry points: lens and ll NULL for wk_decode_attention. */
static wk_status attn_run(wk_storage **out, const wk_storage *q, const wk_layout *lq,
                          const wk_storage *k, const wk_layout *lk, const wk_storage *v,
                          const wk_layout *lv, const wk_storage *lens, const wk_layout *ll,
                          bool with_lens, float scale, int causal, const char *name)
{
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    if ((st = wk_check_operand(q, lq, name, "q")) || (st = wk_check_operand(k, lk, name, "k")) ||
        (st = wk_check_operand(v, lv, name, "v")))
        return st;
    if (with_lens && (st = wk_check_operand(lens, ll, name, "lens")))
        return st;
    if ((st = wk_check_same_device(q, k, name)) || (st = wk_check_same_device(q, v, name)))
        return st;
    if (with_lens && (st = wk_check_same_device(q, lens, name)))
        return st;
    if ((st = attn_shapes(lq, lk, lv, name)))
        return st;
    if (with_lens && (st = attn_lens(lens, ll, lq, name)))
        return st;
    if (k->dtype != v->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: k is %s, v is %s (one cache dtype expected)", name,
                      wk_dtype_name(k->dtype), wk_dtype_name(v->dtype));
    if (!isfinite(scale))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: scale %g is not finite", name, (double)scale);
    if ((st = wk_check_op(q->dev, WK_OP_DECODE_ATTENTION, q->dtype)) ||
        (st = wk_check_op(q->dev, WK_OP_DECODE_ATTENTION, k->dtype)))
        return st;
    const int64_t n = wk_layout_elem_count(lq);
    wk_storage *o;
    if ((st = wk_storage_new(&o, q->dev, q->dtype, (size_t)n, name)))
        return st;
    if (n > 0) {
        const wk_attn_args a = {.qdt = q->dtype, .kvdt = k->dtype, .out = o->data,
                                .q = q->data, .k = k->data, .v = v->data, .lq = lq, .lk = lk,
                                .lv = lv, .scale = scale, .causal = causal != 0,
                                .lens = with_lens ? lens->data : NULL,
                                .ll = with_lens ? ll : NULL};
        st = q->dev->be->attention(q->dev, &a);
    }
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_decode_attention(wk_storage **out, const wk_storage *q, const wk_layout *lq,
                              const wk_storage *k, const wk_layout *lk, const wk_storage *v,
                              const wk_layout *lv, float scale, int causal)
{
    return attn_run(out, q, lq, k, lk, v, lv, NULL, NULL, false, scale, causal,
                    "decode_attention");
}

wk_status wk_decode_attention_lens(wk_storage **out, const wk_storage *q, const wk_layout *lq,
                                   const wk_storage *k, const wk_layout *lk, const wk_storage *v,
                                   const wk_layout *lv, const wk_storage *lens,
                                   const wk_layout *ll, float scale, int causal)
{
    return attn_run(out, q, lq, k, lk, v, lv, lens, ll, true, scale, causal,
                    "decode_attention_lens");
}
