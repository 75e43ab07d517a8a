/* cpu_qact.c: the int8 activations on the CPU (wk_quantize_act, wk_qmatmul_act; the layout and
 * the rule: wick.h, docs/semantics.md "Int8 activations"). The codes, scales and half sums are
 * cpu_qdot.c's quantization of x (the CPU's wk_qmatmul quantizes x the same way at every row
 * count), packed; the product runs cpu_qdot.c's integer paths on them. wk_add_rms_norm_act is
 * the front end's composition (add_norm, then quantize_act). */
#include "cpu_ops.h"
#include "cpu_qdot.h"
#include "wk_core.h"
#include <omp.h>
#include <string.h>

wk_status wk_cpu_quantize_act(wk_device *dev, wk_dtype dt, void *act, const void *x, int64_t m,
                              int64_t k)
{
    (void)dev;
    const int64_t nsub = k / 32;
    int32_t *xh = wk_malloc((size_t)(m * nsub) * 2 * sizeof *xh);
    if (!xh)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "quantize_act: cannot allocate %lld half sums",
                      (long long)(m * nsub * 2));
    int8_t *xq = act;
    float *xd = (float *)((uint8_t *)act + m * k);
    uint32_t *hs = (uint32_t *)(xd + m * nsub);
    const int simd = wk_cpu_qdot_path() >= WK_QDOT_AVX512; /* the same bits, faster */
#pragma omp parallel for schedule(static) if (m > 1 && m * k >= WK_CPU_PAR_THRESHOLD)
    for (int64_t r = 0; r < m; r++)
        (simd ? wk_qdot_quant_x_avx512 : wk_qdot_quant_x)((int)dt, x, r, r + 1, nsub, xq, xd, xh);
    for (int64_t b = 0; b < m * nsub; b++) /* |half sum| <= 16 * 127: fits an int16 */
        hs[b] = ((uint32_t)xh[2 * b] & 0xFFFFu) | ((uint32_t)xh[2 * b + 1] << 16);
    wk_free(xh);
    return WK_OK;
}

/* x (m, k) of dt decoded from the activations: code x scale in f32, rounded to dt once. */
static wk_status act_decode(void **xo, wk_dtype dt, const uint8_t *act, int64_t m, int64_t k)
{
    const int64_t n = m * k;
    void *x = wk_malloc((size_t)n * wk_dtype_size(dt));
    if (!x)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul_act: cannot allocate %lld x %lld for x",
                      (long long)m, (long long)k);
    const int8_t *q = (const int8_t *)act;
    const uint8_t *dp = act + n;
    for (int64_t i = 0; i < n; i++) {
        float d;
        memcpy(&d, dp + 4 * (i / 32), 4);
        const float v = (float)q[i] * d;
        if (dt == WK_DTYPE_F32)
            ((float *)x)[i] = v;
        else
            ((uint16_t *)x)[i] = dt == WK_DTYPE_F16 ? wk_fp_f32_to_f16(v) : wk_fp_f32_to_bf16(v);
    }
    *xo = x;
    return WK_OK;
}

wk_status wk_cpu_qmatmul_act(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *act,
                             int64_t m, const void *w, int64_t n, int64_t k)
{
    const int path = wk_cpu_qdot_path();
    if (path != WK_QDOT_EXACT && wk_qtype_block_elems(qt) > 1)
        return wk_cpu_qdot_act(path, qt, dt, out, act, m, w, n, k);
    /* float weights, or the exact path (x never quantized there): the decoded activations */
    void *x = NULL;
    wk_status st = act_decode(&x, dt, act, m, k);
    if (st)
        return st;
    st = wk_cpu_qmatmul(dev, qt, dt, out, x, m, w, n, k);
    wk_free(x);
    return st;
}
