/* cpu_attn.c: decode attention on the CPU (wk_decode_attention; arguments checked by
 * src/core/api_attn.c). One query row (b, h, i) at a time, in parallel over rows: the row of q in
 * f32, then one pass over its visible keys with an online softmax (running maximum m, running sum
 * l, running weighted sum acc of the v rows, rescaled by exp(m_old - m_new) when the maximum
 * grows), and out = acc / l rounded once to q's dtype. All arithmetic in f32. With lens
 * (wk_decode_attention_lens) batch entry b has lens[b] keys instead of Lk, all checked first. */
#include "cpu_ops.h"
#include "cpu_elem.h"
#include <math.h>

#define ATTN_MAX_D 256

static float attn_ld(const void *p, int64_t i, wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_F16: return wk_cpu_ld_f16(((const uint16_t *)p)[i]);
    case WK_DTYPE_BF16: return wk_cpu_ld_bf16(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void attn_st(void *p, int64_t i, wk_dtype dt, float v)
{
    switch (dt) {
    case WK_DTYPE_F16: ((uint16_t *)p)[i] = wk_cpu_st_f16(v); break;
    case WK_DTYPE_BF16: ((uint16_t *)p)[i] = wk_cpu_st_bf16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* One query row: out[o0 .. o0 + d) from q at element qo, keys/values 0 .. nvis - 1 of kv head
 * (b, hk). */
static void attn_row(const wk_attn_args *a, int64_t b, int64_t hk, int64_t qo, int64_t nvis,
                     int64_t o0)
{
    const wk_layout *lk = a->lk, *lv = a->lv;
    const int64_t d = a->lq->dims[3];
    float qv[ATTN_MAX_D], acc[ATTN_MAX_D];
    for (int64_t e = 0; e < d; e++) {
        qv[e] = attn_ld(a->q, qo + e, a->qdt);
        acc[e] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    const int64_t kb = lk->offset + b * lk->strides[0] + hk * lk->strides[1];
    const int64_t vb = lv->offset + b * lv->strides[0] + hk * lv->strides[1];
    for (int64_t j = 0; j < nvis; j++) {
        const int64_t ko = kb + j * lk->strides[2], vo = vb + j * lv->strides[2];
        float s = 0.0f;
        for (int64_t e = 0; e < d; e++)
            s += qv[e] * attn_ld(a->k, ko + e, a->kvdt);
        s *= a->scale;
        if (s > m) {
            /* a larger maximum: rescale what has been summed so far (0 terms at the start) */
            const float c = expf(m - s);
            l *= c;
            for (int64_t e = 0; e < d; e++)
                acc[e] *= c;
            m = s;
        }
        const float p = expf(s - m); /* NaN (a NaN score, or all scores -inf) propagates */
        l += p;
        for (int64_t e = 0; e < d; e++)
            acc[e] += p * attn_ld(a->v, vo + e, a->kvdt);
    }
    for (int64_t e = 0; e < d; e++)
        attn_st(a->out, o0 + e, a->qdt, acc[e] / l);
}

/* The key count of batch entry b: lens[b] through ll, or Lk without lens. */
static int64_t attn_len(const wk_attn_args *a, int64_t b)
{
    if (!a->lens)
        return a->lk->dims[2];
    return (int64_t)((const uint32_t *)a->lens)[a->ll->offset + b * a->ll->strides[0]];
}

wk_status wk_cpu_attention(wk_device *dev, const wk_attn_args *a)
{
    (void)dev;
    const wk_layout *lq = a->lq;
    const int64_t B = lq->dims[0], hq = lq->dims[1], nq = lq->dims[2], d = lq->dims[3];
    const int64_t grp = hq / a->lk->dims[1], lk = a->lk->dims[2];
    /* every count in [Lq, Lk] before anything is computed: no row past Lk is ever read */
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = attn_len(a, b);
        if (n < nq || n > lk)
            return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "decode_attention_lens: lens[%lld] = %lld "
                          "outside [Lq, Lk] = [%lld, %lld]", (long long)b, (long long)n,
                          (long long)nq, (long long)lk);
    }
    const int64_t rows = B * hq * nq;
    _Pragma("omp parallel for schedule(dynamic, 1) if (rows > 1 && rows * lk * d >= WK_CPU_PAR_THRESHOLD)")
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = r % nq, h = r / nq % hq, b = r / nq / hq, nk = attn_len(a, b);
        const int64_t qo = lq->offset + b * lq->strides[0] + h * lq->strides[1] + i * lq->strides[2];
        const int64_t nvis = a->causal ? nk - nq + i + 1 : nk;
        attn_row(a, b, h / grp, qo, nvis, r * d);
    }
    return WK_OK;
}
