/* cpu_fdot_avx512.c: the product with float weights (cpu_fdot.h) on AVX-512F: one zmm of 16 lane
 * sums per (x row, weight row), W converted 16 elements at a time (vcvtph2ps for F16, a shift for
 * BF16), the tail of k masked, then the tree of cpu_fdot.h on the 16 lanes. Two weight rows at a
 * time (four for one row of x) share each x load. Compiled with -mavx512f (cmake/cpu.cmake). */
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

/* G consecutive weight rows from w (the rows past `left` repeat the last one; only the first
 * `left` are stored) against R rows of x: R and G constants, so that the G R accumulators stay in
 * registers. (With R a run-time count they lived on the stack, each fma's sum stored under a
 * mask and loaded back the next iteration: about 30 cycles an iteration on Zen 4, whose masked
 * stores do not forward to loads, W read at 7 GB/s a core.) Each lane's sum is one chain of
 * FMAs (the order of cpu_fdot.h), so one weight row at a time waits on the FMA latency: G rows
 * give G independent chains. */
static inline __attribute__((always_inline)) void group_t(const int qt, const int R, const int G,
                                                           float *out, const float *x,
                                                           const char *w, int left, int64_t n,
                                                           int64_t k, int64_t j)
{
    const size_t es = qt == WK_QTYPE_F32 ? 4 : 2;
    const char *wr[4];
    for (int g = 0; g < G; g++)
        wr[g] = w + (size_t)(g < left ? g : left - 1) * (size_t)k * es;
    __m512 a[4][8];
    for (int g = 0; g < G; g++)
        for (int r = 0; r < R; r++)
            a[g][r] = _mm512_setzero_ps();
    const int64_t kf = k / 16 * 16;
    for (int64_t i = 0; i < kf; i += 16) {
        /* every row 8 lines ahead, once per line (the hardware prefetchers alone run short
         * of it: f16 128256 x 4096, m = 1, 2 threads, 44 -> 41 ms) */
        if ((i * (int64_t)es) % 64 == 0)
            for (int g = 0; g < G; g++)
                _mm_prefetch(wr[g] + (i * (int64_t)es + 512), _MM_HINT_T0);
        __m512 v[4];
        for (int g = 0; g < G; g++)
            v[g] = wload(qt, wr[g], i, 0xFFFF);
        for (int r = 0; r < R; r++) {
            const __m512 xv = _mm512_loadu_ps(x + r * k + i);
            for (int g = 0; g < G; g++)
                a[g][r] = _mm512_fmadd_ps(xv, v[g], a[g][r]);
        }
    }
    if (kf < k) { /* the tail of k, masked (lanes past it keep their sums) */
        const __mmask16 m = (__mmask16)((1u << (k - kf)) - 1u);
        __m512 v[4];
        for (int g = 0; g < G; g++)
            v[g] = wload(qt, wr[g], kf, m);
        for (int r = 0; r < R; r++) {
            const __m512 xv = _mm512_maskz_loadu_ps(m, x + r * k + kf);
            for (int g = 0; g < G; g++)
                a[g][r] = _mm512_mask3_fmadd_ps(xv, v[g], a[g][r], m);
        }
    }
    for (int r = 0; r < R; r++)
        for (int g = 0; g < G && g < left; g++)
            out[r * n + j + g] = tree(a[g][r]);
}

/* Decode (one row of x): 4 weight rows at a time. Measured on a 2-core Intel Xeon (AVX-512,
 * no AMX), f16 128256 x 4096, 2 threads, from memory: one row at a time 19 GB/s (its one FMA
 * chain bounds it), 2 rows 24-26, 4 rows 28; the 2-block F16 model's decode step 88.8 -> 69-73
 * ms (docs/performance.md, XE). An earlier session measured one row at a time at 53-56 GB/s on
 * the 2 cores of an AMD EPYC (Zen 4) against 34 for pairs of rows with the prefetch; four rows
 * have not run there. More rows of x: pairs of weight rows (2 R accumulators). */
static inline __attribute__((always_inline)) void rows_t(const int qt, float *out, const float *x,
                                                          int rows, const void *w, int64_t n,
                                                          int64_t k, int64_t j0, int64_t j1)
{
    const size_t es = qt == WK_QTYPE_F32 ? 4 : 2;
    const int G = rows == 1 ? 4 : 2;
    for (int64_t j = j0; j < j1; j += G) {
        const int left = j1 - j < G ? (int)(j1 - j) : G;
        const char *w0 = (const char *)w + (size_t)(j * k) * es;
        if (G == 4) {
            group_t(qt, 1, 4, out, x, w0, left, n, k, j);
            continue;
        }
        switch (rows) {
#define WK_FDOT_PAIR(R)                                                                            \
    case R: group_t(qt, R, 2, out, x, w0, left, n, k, j); break;
            WK_FDOT_PAIR(2) WK_FDOT_PAIR(3) WK_FDOT_PAIR(4) WK_FDOT_PAIR(5) WK_FDOT_PAIR(6)
            WK_FDOT_PAIR(7) default: group_t(qt, 8, 2, out, x, w0, left, n, k, j);
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
