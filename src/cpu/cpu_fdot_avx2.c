/* cpu_fdot_avx2.c: the product with float weights (cpu_fdot.h) on AVX2 with FMA and F16C: the 16
 * lane sums of cpu_fdot.h as two ymm (lanes 0-7, 8-15) per (x row, weight row), the tail of k
 * through a zero-padded copy of the last 16 elements (a masked-off lane keeps its sum), then the
 * tree. Compiled with -mavx2 -mfma -mf16c (cmake/cpu.cmake). */
#include "cpu_fdot.h"
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <string.h>

const int wk_fdot_avx2_built = 1;

/* 8 elements of W at p (element offset i) as f32 */
static inline __attribute__((always_inline)) __m256 wload(int qt, const void *p, int64_t i)
{
    if (qt == WK_QTYPE_F32)
        return _mm256_loadu_ps((const float *)p + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (qt == WK_QTYPE_F16)
        return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) float tree(__m256 lo, __m256 hi)
{
    const __m256 t = _mm256_add_ps(lo, hi);
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    const __m128 w = _mm_add_ps(u, _mm_movehl_ps(u, u));
    return _mm_cvtss_f32(_mm_add_ss(w, _mm_movehdup_ps(w)));
}

/* One row of x (decode) against weight rows j, j + 1 (k a multiple of 16; j + 1 < j1): four FMA
 * chains instead of two, as each lane's sum is one chain (cpu_fdot.h's order) and one weight row
 * at a time waits on the FMA latency (cpu_fdot_avx512.c measures the same with four rows). */
static inline __attribute__((always_inline)) void pair1_t(const int qt, float *out, const float *x,
                                                           const char *w0, int64_t k, int64_t j)
{
    const size_t es = qt == WK_QTYPE_F32 ? 4 : 2;
    const char *w1 = w0 + (size_t)k * es;
    __m256 lo0 = _mm256_setzero_ps(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
    for (int64_t i = 0; i < k; i += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        lo0 = _mm256_fmadd_ps(x0, wload(qt, w0, i), lo0);
        hi0 = _mm256_fmadd_ps(x1, wload(qt, w0, i + 8), hi0);
        lo1 = _mm256_fmadd_ps(x0, wload(qt, w1, i), lo1);
        hi1 = _mm256_fmadd_ps(x1, wload(qt, w1, i + 8), hi1);
    }
    out[j] = tree(lo0, hi0);
    out[j + 1] = tree(lo1, hi1);
}

static inline __attribute__((always_inline)) void rows_t(const int qt, float *out, const float *x,
                                                          int rows, const void *w, int64_t n,
                                                          int64_t k, int64_t j0, int64_t j1)
{
    const size_t es = qt == WK_QTYPE_F32 ? 4 : 2;
    const int64_t kb = k / 16 * 16, tail = k - kb;
    if (rows == 1 && !tail)
        for (; j0 + 1 < j1; j0 += 2)
            pair1_t(qt, out, x, (const char *)w + (size_t)(j0 * k) * es, k, j0);
    for (int64_t j = j0; j < j1; j++) {
        const char *wr = (const char *)w + (size_t)(j * k) * es;
        __m256 lo[8], hi[8];
        for (int r = 0; r < 8; r++)
            lo[r] = hi[r] = _mm256_setzero_ps();
        for (int64_t i = 0; i < kb; i += 16) {
            const __m256 v0 = wload(qt, wr, i), v1 = wload(qt, wr, i + 8);
            for (int r = 0; r < rows; r++) {
                lo[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * k + i), v0, lo[r]);
                hi[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * k + i + 8), v1, hi[r]);
            }
        }
        if (tail) { /* lanes past k keep their sums: fma with a 0 product would turn inf into NaN */
            float wt[16] = {0}, xt[16] = {0};
            memcpy(wt, wr + (size_t)kb * es, (size_t)tail * es); /* raw bits, widened below */
            __m256 v0, v1;
            if (qt == WK_QTYPE_F32) {
                v0 = _mm256_loadu_ps(wt), v1 = _mm256_loadu_ps(wt + 8);
            } else {
                v0 = wload(qt, wt, 0), v1 = wload(qt, wt, 8);
            }
            const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            const __m256 m0 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)tail), idx));
            const __m256 m1 = _mm256_castsi256_ps(
                _mm256_cmpgt_epi32(_mm256_set1_epi32((int)tail), _mm256_add_epi32(idx, _mm256_set1_epi32(8))));
            for (int r = 0; r < rows; r++) {
                memcpy(xt, x + r * k + kb, (size_t)tail * sizeof(float));
                lo[r] = _mm256_blendv_ps(lo[r], _mm256_fmadd_ps(_mm256_loadu_ps(xt), v0, lo[r]), m0);
                hi[r] = _mm256_blendv_ps(hi[r], _mm256_fmadd_ps(_mm256_loadu_ps(xt + 8), v1, hi[r]), m1);
            }
        }
        for (int r = 0; r < rows; r++)
            out[r * n + j] = tree(lo[r], hi[r]);
    }
}

void wk_fdot_rows_avx2(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                       int64_t k, int64_t j0, int64_t j1)
{
    switch (qt) {
    case WK_QTYPE_F16: rows_t(WK_QTYPE_F16, out, x, rows, w, n, k, j0, j1); break;
    case WK_QTYPE_BF16: rows_t(WK_QTYPE_BF16, out, x, rows, w, n, k, j0, j1); break;
    default: rows_t(WK_QTYPE_F32, out, x, rows, w, n, k, j0, j1); break;
    }
}
#else
const int wk_fdot_avx2_built = 0;
void wk_fdot_rows_avx2(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                       int64_t k, int64_t j0, int64_t j1)
{
    wk_fdot_rows_scalar(qt, out, x, rows, w, n, k, j0, j1);
}
#endif
