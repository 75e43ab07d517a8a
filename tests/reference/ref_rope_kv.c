/* ref_rope_kv.c: the float64 reference of wk_rope_kv_append (docs/semantics.md, "Rope and the KV
 * cache"). For each row (b, h, t) of q and of k, with p = p_b + t, c = cos[p, i], s = sin[p, i]
 * and the pair (x0, x1) = (x[2i], x[2i + 1]) (interleaved) or (x[i], x[i + D/2]) (halves):
 *   y0 = x0 c - x1 s, y1 = x0 s + x1 c in f64 (the tables in their dtype, q's or f32), rounded to
 *   q's dtype (the op rounds once to it), then converted to the cache's dtype (as to_dtype
 *   converts): q's into out, k's into kc at row p; v's values converted the same way into vc at
 *   row p.
 * Every shape and position is checked before anything is written. Naive loops over the layouts,
 * nothing shared with the library. */
#include "ref_rope_kv.h"
#include "ref.h"

static int same_dims(const wk_layout *a, const wk_layout *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

/* q (B, Hq, T, D); k, v (B, Hkv, T, D); D even; kc, vc (B, Hkv, L, D); cos, sin (P, D/2) or
 * (B, P, D/2); pos rank 1 of B. */
static wk_status rkv_shapes(const wk_layout *lkc, const wk_layout *lvc, const ref_rope_kv_in *in)
{
    const wk_layout *lq = in->lq, *lk = in->lk, *lc = in->lc;
    if (lq->rank != 4 || lk->rank != 4 || in->lv->rank != 4 || lkc->rank != 4 || lvc->rank != 4)
        return WK_ERR_SHAPE;
    if (!same_dims(lk, in->lv) || !same_dims(lkc, lvc) || !same_dims(lc, in->ls))
        return WK_ERR_SHAPE;
    const int64_t b = lq->dims[0], t = lq->dims[2], d = lq->dims[3];
    if (lk->dims[0] != b || lk->dims[2] != t || lk->dims[3] != d || d % 2 != 0)
        return WK_ERR_SHAPE;
    if (lkc->dims[0] != b || lkc->dims[1] != lk->dims[1] || lkc->dims[3] != d)
        return WK_ERR_SHAPE;
    const int cr = lc->rank;
    if ((cr != 2 && cr != 3) || lc->dims[cr - 1] != d / 2 || (cr == 3 && lc->dims[0] != b))
        return WK_ERR_SHAPE;
    if (in->pos && (in->lp->rank != 1 || in->lp->dims[0] != b))
        return WK_ERR_SHAPE;
    return WK_OK;
}

/* p_b of entry b. */
static int64_t rkv_p(const ref_rope_kv_in *in, int64_t b)
{
    return in->pos ? (int64_t)in->pos[ref_offset(in->lp, b)] : in->start;
}

/* The rotated row (b, h, t) of x (dims (B, H, T, D)) at table row p, rounded to in->dt, stored
 * as cdt through (o, ls): element e at storage offset o + e * ls. */
static void rkv_row(void *dst, int64_t o, int64_t ls, const ref_rope_kv_in *in, const void *x,
                    const wk_layout *lx, int64_t b, int64_t h, int64_t t, int64_t p)
{
    const int64_t d = lx->dims[3], h2 = d / 2, H = lx->dims[1], T = lx->dims[2];
    const int64_t row = ((b * H + h) * T + t) * d; /* row-major index of element 0 of the row */
    const int cr = in->lc->rank;
    const int64_t crow = ((cr == 3 ? b * in->lc->dims[1] : 0) + p) * h2;
    for (int64_t i = 0; i < h2; i++) {
        const int64_t e0 = in->interleaved ? 2 * i : i, e1 = in->interleaved ? 2 * i + 1 : i + h2;
        const double x0 = ref_load_f(in->dt, x, ref_offset(lx, row + e0));
        const double x1 = ref_load_f(in->dt, x, ref_offset(lx, row + e1));
        const double c = ref_load_f(in->tdt, in->cos, ref_offset(in->lc, crow + i));
        const double s = ref_load_f(in->tdt, in->sin, ref_offset(in->ls, crow + i));
        ref_store_f(in->cdt, dst, o + e0 * ls, ref_round(in->dt, x0 * c - x1 * s));
        ref_store_f(in->cdt, dst, o + e1 * ls, ref_round(in->dt, x0 * s + x1 * c));
    }
}

wk_status ref_rope_kv_append(void *out, void *kc, const wk_layout *lkc, void *vc,
                             const wk_layout *lvc, const ref_rope_kv_in *in)
{
    wk_status st = rkv_shapes(lkc, lvc, in);
    if (st != WK_OK)
        return st;
    const wk_layout *lq = in->lq, *lk = in->lk, *lv = in->lv;
    const int64_t B = lq->dims[0], hq = lq->dims[1], T = lq->dims[2], D = lq->dims[3];
    const int64_t hkv = lk->dims[1], L = lkc->dims[2], P = in->lc->dims[in->lc->rank - 2];
    for (int64_t b = 0; b < B; b++) {
        const int64_t p = rkv_p(in, b);
        if (p < 0 || p + T > P || p + T > L)
            return WK_ERR_INDEX_OUT_OF_RANGE;
    }
    for (int64_t b = 0; b < B; b++) {
        const int64_t p = rkv_p(in, b);
        for (int64_t t = 0; t < T; t++) {
            for (int64_t h = 0; h < hq; h++)
                rkv_row(out, ((b * hq + h) * T + t) * D, 1, in, in->q, lq, b, h, t, p + t);
            for (int64_t h = 0; h < hkv; h++) {
                const int64_t ko = lkc->offset + b * lkc->strides[0] + h * lkc->strides[1] +
                                   (p + t) * lkc->strides[2];
                rkv_row(kc, ko, lkc->strides[3], in, in->k, lk, b, h, t, p + t);
                const int64_t vo = lvc->offset + b * lvc->strides[0] + h * lvc->strides[1] +
                                   (p + t) * lvc->strides[2];
                const int64_t row = ((b * hkv + h) * T + t) * D;
                for (int64_t e = 0; e < D; e++)
                    ref_store_f(in->cdt, vc, vo + e * lvc->strides[3],
                                ref_load_f(in->dt, in->v, ref_offset(lv, row + e)));
            }
        }
    }
    return WK_OK;
}
