/* cpu_fdot.c: the product with float weights for a few rows of x (contract: cpu_fdot.h): the
 * scalar path (the definition) and the choice of path. */
#include "cpu_fdot.h"
#include "cpu_ops.h"
#include "cpu_qdot.h"
#include "wk_core.h"
#include <math.h>
#include <omp.h>

static float wval(int qt, const void *w, int64_t i)
{
    switch (qt) {
    case WK_QTYPE_F16: return wk_fp_f16_to_f32(((const uint16_t *)w)[i]);
    case WK_QTYPE_BF16: return wk_fp_bf16_to_f32(((const uint16_t *)w)[i]);
    default: return ((const float *)w)[i];
    }
}

static float tree(const float p[16])
{
    float t[8], u[4];
    for (int l = 0; l < 8; l++)
        t[l] = p[l] + p[l + 8];
    for (int l = 0; l < 4; l++)
        u[l] = t[l] + t[l + 4];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

void wk_fdot_rows_scalar(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                         int64_t k, int64_t j0, int64_t j1)
{
    for (int64_t j = j0; j < j1; j++)
        for (int r = 0; r < rows; r++) {
            float p[16] = {0};
            for (int64_t i = 0; i < k; i++)
                p[i % 16] = fmaf(x[r * k + i], wval(qt, w, j * k + i), p[i % 16]);
            out[r * n + j] = tree(p);
        }
}

wk_fdot_rows_fn wk_fdot_rows_best(void)
{
    const int p = wk_cpu_qdot_path(); /* the CPU's ISA level (and WICK_CPU_QDOT) */
    if (p >= WK_QDOT_AVX512 && wk_fdot_avx512_built)
        return wk_fdot_rows_avx512;
    if (p >= WK_QDOT_AVX2 && wk_fdot_avx2_built)
        return wk_fdot_rows_avx2;
    return wk_fdot_rows_scalar;
}

/* ---- the op: wk_qmatmul with float weights (cpu_quant.c calls it unless WICK_CPU_QDOT=exact) */

/* Weight rows per panel of the many-row product: W converted to f32 a panel at a time (never all
 * of it), at most PANEL_FLOATS floats. */
#define PANEL_FLOATS (4 << 20)

wk_status wk_cpu_fmatmul(wk_qtype qt, wk_dtype dt, void *out, const void *x, int64_t rows,
                         const void *w, int64_t n, int64_t k)
{
    const int par = (double)rows * (double)n * (double)k >= (double)WK_CPU_PAR_THRESHOLD;
    const int many = rows > 8;
    int64_t pan = many ? PANEL_FLOATS / (k > 0 ? k : 1) : 0;
    pan = pan < 64 ? 64 : pan;
    pan = pan > n ? n : pan;
    const size_t xb = dt == WK_DTYPE_F32 ? 0 : (size_t)(rows * k);
    const size_t ob = dt == WK_DTYPE_F32 ? 0 : (size_t)(rows * n);
    /* F16/BF16 W on wick's own products (AMX-BF16 tiles or AVX-512 FMAs), else OpenBLAS */
    const int own16 = qt != WK_QTYPE_F32 && wk_fgemm_avx512_built &&
                      wk_cpu_qdot_path() >= WK_QDOT_AVX512;
    const size_t wb = many && qt != WK_QTYPE_F32 && !own16 ? (size_t)(pan * k) : 0; /* widened panel */
    float *buf = wk_host_alloc((xb + ob + wb + 1) * sizeof(float));
    if (!buf)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate %zu f32 of scratch",
                      xb + ob + wb);
    float *xf = dt == WK_DTYPE_F32 ? (float *)x : buf, *of = dt == WK_DTYPE_F32 ? out : buf + xb;
    float *wf = buf + xb + ob;
    if (dt != WK_DTYPE_F32) {
        const uint16_t *h = x;
#pragma omp parallel for schedule(static) if (par && rows * k >= WK_CPU_PAR_THRESHOLD)
        for (int64_t i = 0; i < rows * k; i++)
            xf[i] = dt == WK_DTYPE_F16 ? wk_fp_f16_to_f32(h[i]) : wk_fp_bf16_to_f32(h[i]);
    }
    wk_status st = WK_OK;
    if (!many) { /* decode: cpu_fdot.h's order, weight rows over threads */
        const wk_fdot_rows_fn fn = wk_fdot_rows_best();
        const int64_t nch = (n + 15) / 16;
#pragma omp parallel for schedule(guided) if (par && nch > 1)
        for (int64_t c = 0; c < nch; c++)
            fn((int)qt, of, xf, (int)rows, w, n, k, c * 16, c * 16 + 16 < n ? c * 16 + 16 : n);
    } else if (own16 && rows >= 16 && wk_cpu_qdot_path() == WK_QDOT_AMX &&
               wk_fgemm_amx_ready()) { /* bf16 tiles on split terms */
        st = wk_fgemm_amx((int)qt, of, xf, rows, w, n, k, par);
    } else if (own16) { /* f32 FMAs on W widened a panel at a time */
        st = wk_fgemm_avx512((int)qt, of, xf, rows, w, n, k, par);
    } else if (qt == WK_QTYPE_F32) { /* the CPU's gemm (OpenBLAS), W read in place */
        wk_cpu_gemm(WK_DTYPE_F32, 0, 1, rows, n, k, xf, k, w, k, of, n);
    } else { /* F16 / BF16: a panel of W rows widened to f32, then the gemm on it */
        for (int64_t j0 = 0; j0 < n; j0 += pan) {
            const int64_t np = n - j0 < pan ? n - j0 : pan;
            const uint16_t *h = (const uint16_t *)w + j0 * k;
#pragma omp parallel for schedule(static) if (par)
            for (int64_t i = 0; i < np * k; i++)
                wf[i] = qt == WK_QTYPE_F16 ? wk_fp_f16_to_f32(h[i]) : wk_fp_bf16_to_f32(h[i]);
            wk_cpu_gemm(WK_DTYPE_F32, 0, 1, rows, np, k, xf, k, wf, k, of + j0, n);
        }
    }
    if (!st && dt != WK_DTYPE_F32) {
#pragma omp parallel for schedule(static) if (par && rows * n >= WK_CPU_PAR_THRESHOLD)
        for (int64_t i = 0; i < rows * n; i++)
            ((uint16_t *)out)[i] =
                dt == WK_DTYPE_F16 ? wk_fp_f32_to_f16(of[i]) : wk_fp_f32_to_bf16(of[i]);
    }
    wk_host_free(buf);
    return st;
}
