/* cpu_fdot_avx512.c: the product with float weights (cpu_fdot.h) on AVX-512F: one zmm of 16 lane
 * sums per (x row, weight row), W converted 16 elements at a time (vcvtph2ps for F16, a shift for
 * BF16), the tail of k masked, then the tree of cpu_fdot.h on the 16 lanes. Two weight rows at a
 * time share each x load. Compiled with -mavx512f (cmake/cpu.cmake). */
#include "cpu_fdot.h"
#if defined(__x86_64__) && defined(__AVX512F__)
#include "cpu_t16.h"

const int wk_fdot_avx512_built = 1;

/* 16 elements of W row at p (element offset i, mask m) as f32 */
static inline __attribute__((always_inline)) __m512 wload(int qt, const void *p, int64_t i,
                                                           __mmask16 m)
{
    if (qt == WK_QTYPE_F32)
        return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    const __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    return wk_widen16_ps(h, qt == WK_QTYPE_F16);
}

/* the tree of cpu_fdot.h */
static inline __attribute__((always_inline)) float tree(__m512 v)
{
    const __m256 t = _mm256_add_ps(_mm512_castps512_ps256(v),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    const __m128 w = _mm_add_ps(u, _mm_movehl_ps(u, u)); /* u0 + u2, u1 + u3 */
    return _mm_cvtss_f32(_mm_add_ss(w, _mm_movehdup_ps(w)));
}

/* One pair of weight rows (w1 == w0 when only one weight row is left) against R rows of x: R a
 * constant, so that the 2 R accumulators stay in registers. (With R a run-time count they lived on the stack,
 * each fma's sum stored under a mask and loaded back the next iteration: about 30 cycles an
 * iteration on Zen 4, whose masked stores do not forward to loads, W read at 7 GB/s a core.) */
static inline __attribute__((always_inline)) void pair_t(const int qt, const int R, float *out,
                                                          const float *x, const char *w0,
                                                          const char *w1, int two, int64_t n,
                                                          int64_t k, int64_t j)
{
    const size_t es = qt == WK_QTYPE_F32 ? 4 : 2;
    __m512 a0[8], a1[8];
    for (int r = 0; r < R; r++)
        a0[r] = a1[r] = _mm512_setzero_ps();
    const int64_t kf = k / 16 * 16;
    for (int64_t i = 0; i < kf; i += 16) {
        /* both rows 8 lines ahead, once per line (the hardware prefetchers alone run short
         * of it: f16 128256 x 4096, m = 1, 2 threads, 44 -> 41 ms) */
        if ((i * (int64_t)es) % 64 == 0) {
            _mm_prefetch(w0 + (i * (int64_t)es + 512), _MM_HINT_T0);
            _mm_prefetch(w1 + (i * (int64_t)es + 512), _MM_HINT_T0);
        }
        const __m512 v0 = wload(qt, w0, i, 0xFFFF), v1 = wload(qt, w1, i, 0xFFFF);
        for (int r = 0; r < R; r++) {
            const __m512 xv = _mm512_loadu_ps(x + r * k + i);
            a0[r] = _mm512_fmadd_ps(xv, v0, a0[r]);
            a1[r] = _mm512_fmadd_ps(xv, v1, a1[r]);
        }
    }
    if (kf < k) { /* the tail of k, masked (lanes past it keep their sums) */
        const __mmask16 m = (__mmask16)((1u << (k - kf)) - 1u);
        const __m512 v0 = wload(qt, w0, kf, m), v1 = wload(qt, w1, kf, m);
        for (int r = 0; r < R; r++) {
            const __m512 xv = _mm512_maskz_loadu_ps(m, x + r * k + kf);
            a0[r] = _mm512_mask3_fmadd_ps(xv, v0, a0[r], m);
            a1[r] = _mm512_mask3_fmadd_ps(xv, v1, a1[r], m);
        }
    }
    for (int r = 0; r < R; r++) {
        out[r * n + j] = tree(a0[r]);
        if (two)
            out[r * n + j + 1] = tree(a1[r]);
    }
}

/* One weight row against one row of x (decode) of k <= 4096 (x in L1), no software prefetch:
 * one stream per thread, which the hardware prefetchers follow. Measured from memory on the 2
 * cores of the AMD EPYC (Zen 4), f16, quiet: 128256 x 4096, pairs with the prefetch above 34
 * GB/s, one row at a time 53-56; 4096 x 14336, pairs 32-38, one row 25-27 (each row's one
 * chain of FMAs then bounds it), so pairs stay for longer rows and for more rows of x. */
static inline __attribute__((always_inline)) void one_t(const int qt, float *out, const float *x,
                                                         const char *w0, int64_t k, int64_t j)
{
    __m512 a = _mm512_setzero_ps();
    const int64_t kf = k / 16 * 16;
    for (int64_t i = 0; i < kf; i += 16)
        a = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), wload(qt, w0, i, 0xFFFF), a);
    if (kf < k) {
        const __mmask16 m = (__mmask16)((1u << (k - kf)) - 1u);
        a = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(m, x + kf), wload(qt, w0, kf, m), a, m);
    }
    out[j] = tree(a);
}

static inline __attribute__((always_inline)) void rows_t(const int qt, float *out, const float *x,
                                                          int rows, const void *w, int64_t n,
                                                          int64_t k, int64_t j0, int64_t j1)
{
    const size_t es = qt == WK_QTYPE_F32 ? 4 : 2;
    if (rows == 1 && k <= 4096) {
        for (int64_t j = j0; j < j1; j++)
            one_t(qt, out, x, (const char *)w + (size_t)(j * k) * es, k, j);
        return;
    }
    for (int64_t j = j0; j < j1; j += 2) {
        const int two = j + 1 < j1;
        const char *w0 = (const char *)w + (size_t)(j * k) * es;
        const char *w1 = two ? w0 + (size_t)k * es : w0;
        switch (rows) {
#define WK_FDOT_PAIR(R)                                                                            \
    case R: pair_t(qt, R, out, x, w0, w1, two, n, k, j); break;
            WK_FDOT_PAIR(1) WK_FDOT_PAIR(2) WK_FDOT_PAIR(3) WK_FDOT_PAIR(4)
            WK_FDOT_PAIR(5) WK_FDOT_PAIR(6) WK_FDOT_PAIR(7) default: pair_t(qt, 8, out, x, w0, w1, two, n, k, j);
#undef WK_FDOT_PAIR
        }
    }
}

void wk_fdot_rows_avx512(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                         int64_t k, int64_t j0, int64_t j1)
{
    switch (qt) {
    case WK_QTYPE_F16: rows_t(WK_QTYPE_F16, out, x, rows, w, n, k, j0, j1); break;
    case WK_QTYPE_BF16: rows_t(WK_QTYPE_BF16, out, x, rows, w, n, k, j0, j1); break;
    default: rows_t(WK_QTYPE_F32, out, x, rows, w, n, k, j0, j1); break;
    }
}
#else
const int wk_fdot_avx512_built = 0;
void wk_fdot_rows_avx512(int qt, float *out, const float *x, int rows, const void *w, int64_t n,
                         int64_t k, int64_t j0, int64_t j1)
{
    wk_fdot_rows_scalar(qt, out, x, rows, w, n, k, j0, j1);
}
#endif
