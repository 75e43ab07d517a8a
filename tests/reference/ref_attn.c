/* ref_attn.c: the float64 reference of wk_decode_attention: for each query row, every visible
 * score s_j = scale * sum_e q_e k_je in f64, the softmax in two passes (maximum, then
 * exp(s_j - max) and their sum), out = sum_j w_j v_j / sum_j w_j, stored once to the output
 * dtype. Naive loops over the layouts, nothing shared with the library's implementations. */
#include "ref_attn.h"
#include "ref.h"
#include <math.h>
#include <stdlib.h>

wk_status ref_decode_attention(void *out, wk_dtype qdt, wk_dtype kvdt, const void *q,
                               const wk_layout *lq, const void *k, const wk_layout *lk,
                               const void *v, const wk_layout *lv, double scale, int causal)
{
    const int64_t B = lq->dims[0], hq = lq->dims[1], nq = lq->dims[2], d = lq->dims[3];
    const int64_t hkv = lk->dims[1], nk = lk->dims[2];
    double *s = malloc((size_t)(nk > 0 ? nk : 1) * sizeof(double));
    if (!s)
        return WK_ERR_OUT_OF_MEMORY;
    int64_t r = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < hq; h++)
            for (int64_t i = 0; i < nq; i++, r++) {
                const int64_t hk = h / (hq / hkv);
                const int64_t nvis = causal ? nk - nq + i + 1 : nk;
                const int64_t qo = lq->offset + b * lq->strides[0] + h * lq->strides[1] +
                                   i * lq->strides[2];
                double mx = -INFINITY;
                for (int64_t j = 0; j < nvis; j++) {
                    const int64_t ko = lk->offset + b * lk->strides[0] + hk * lk->strides[1] +
                                       j * lk->strides[2];
                    double acc = 0;
                    for (int64_t e = 0; e < d; e++)
                        acc += ref_load_f(qdt, q, qo + e * lq->strides[3]) *
                               ref_load_f(kvdt, k, ko + e * lk->strides[3]);
                    s[j] = scale * acc;
                    if (s[j] > mx)
                        mx = s[j];
                }
                double den = 0;
                for (int64_t j = 0; j < nvis; j++) {
                    s[j] = exp(s[j] - mx);
                    den += s[j];
                }
                for (int64_t e = 0; e < d; e++) {
                    double num = 0;
                    for (int64_t j = 0; j < nvis; j++) {
                        const int64_t vo = lv->offset + b * lv->strides[0] +
                                           hk * lv->strides[1] + j * lv->strides[2];
                        num += s[j] * ref_load_f(kvdt, v, vo + e * lv->strides[3]);
                    }
                    ref_store_f(qdt, out, r * d + e, num / den);
                }
            }
    free(s);
    return WK_OK;
}
