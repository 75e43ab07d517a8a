/* cpu_fgemm_avx512.c: the product with F16 or BF16 weights for many rows of x with AVX-512F
 * FMAs, on CPUs without AMX-BF16 (AMD Zen 4 and later, Intel before Sapphire Rapids):
 *
 *   out (rows, n) f32 = x (rows, k) f32 @ W^T, W (n, k) of F16 or BF16 (contract: cpu_fdot.h)
 *
 *   out[r][j] = fmaf chain over i = 0, 1, .., k - 1 of x[r][i] * w[j][i] (W's value converted
 *               exactly to f32), from +0
 *
 * W is converted per call, a panel of NP = 32 weight rows by KC elements of k at a time, into
 * f32 laid out as the micro-tile reads it (element i of the 32 rows in two zmm: cpu_t16.h's
 * 16 x 16 transpose in registers); x is copied a block of rows by KC at a time into groups of XR = 12
 * rows (element i of the 12 rows side by side, padded with zeros), one copy that the threads
 * make together and share. A micro-tile keeps 12 x rows
 * by the panel's 32 weight rows in 24 zmm sums over the KC elements: per element two loads of W
 * and 12 broadcasts of x against them. The sums are stored to out between chunks of k and taken
 * up again (exactly), so each output is the one chain above whatever the tiles and threads:
 * the same bits on every thread count. Threads take contiguous runs of panels (each reads its
 * part of W from memory once per block of x rows). No copy of W outlives the call.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mf16c -O3 (cmake/cpu.cmake); called only where
 * the CPU has AVX-512F (wk_cpu_fmatmul). Empty elsewhere (wk_fgemm_avx512_built is 0). */
#include "cpu_fdot.h"
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__)
#include "cpu_t16.h"
#include "wk_core.h"
#include <immintrin.h>
#include <omp.h>
#include <string.h>

const int wk_fgemm_avx512_built = 1;

/* Sizes measured on the AMD EPYC (Zen 4) of docs/performance.md, F16 W 14336 x 4096, 512 rows,
 * 2 threads (its f32 FMA peak: 115.7 GMAC/s, bench/cpu_fma_peak.c): KC 256 / XMAX 384 ran 87
 * GMAC/s, KC 1024 / XMAX 384 103, KC 1024 / XMAX 528 107 (fewer passes over W: each block of x
 * rows converts W again; fewer stores and loads of the sums: one per chunk of k). */
#define NP 32    /* weight rows per panel: two zmm of f32 sums per x row */
#define KC 1024  /* elements of k per chunk: a packed panel is 128 KiB of f32 (L2) */
#define XR 12    /* x rows per micro-tile: 24 sums + 2 of W + a broadcast in 32 registers */
#define XMAX 528 /* x rows per block at most (a 512-token prompt in one): 2.1 MiB, shared */

/* 16 values of W (F16 or BF16) at p as f32, exactly */
static inline __m512 widen16(int qt, const uint16_t *p)
{
    const __m256i h = _mm256_loadu_si256((const __m256i *)p);
    return wk_widen16_ps(h, qt == WK_QTYPE_F16);
}

/* wp[i][c] (kc x NP f32) = W row j0 + c, element k0 + i, for c < nw; 0 for the rows past nw */
static void pack_w(float *wp, int qt, const uint16_t *w, int64_t k, int64_t j0, int nw,
                   int64_t k0, int kc)
{
    for (int h = 0; h < NP / 16; h++) {
        const int c0 = 16 * h, cn = nw - c0 < 16 ? (nw - c0 > 0 ? nw - c0 : 0) : 16;
        int i = 0;
        if (cn == 16)
            for (; i + 16 <= kc; i += 16) {
                __m512i r[16]; /* rows in, then element e of the 16 rows in r[e] */
                for (int c = 0; c < 16; c++)
                    r[c] = _mm512_castps_si512(widen16(qt, w + (j0 + c0 + c) * k + k0 + i));
                wk_t16_epi32(r);
                for (int e = 0; e < 16; e++)
                    _mm512_storeu_ps(wp + (int64_t)(i + e) * NP + c0, _mm512_castsi512_ps(r[e]));
            }
        for (; i < kc; i++) /* the tail of the chunk, and a panel's last rows */
            for (int c = 0; c < 16; c++) {
                float v = 0.0f;
                if (c < cn) {
                    const uint16_t b = w[(j0 + c0 + c) * k + k0 + i];
                    v = qt == WK_QTYPE_F16 ? wk_fp_f16_to_f32(b) : wk_fp_bf16_to_f32(b);
                }
                wp[(int64_t)i * NP + c0 + c] = v;
            }
    }
}

/* xp[g][i][r] (groups of XR rows, kc elements each) = x row r0 + XR g + r, element k0 + i; rows
 * past nx are 0; the groups [g0, g1) */
static void pack_x(float *xp, const float *x, int64_t k, int64_t r0, int nx, int64_t k0, int kc,
                   int g0, int g1)
{
    for (int g = g0; g < g1; g++) {
        float *d = xp + (int64_t)g * kc * XR;
        for (int r = 0; r < XR; r++) {
            const int row = g * XR + r;
            if (row < nx) {
                const float *s = x + (r0 + row) * k + k0;
                for (int i = 0; i < kc; i++)
                    d[i * XR + r] = s[i];
            } else {
                for (int i = 0; i < kc; i++)
                    d[i * XR + r] = 0.0f;
            }
        }
    }
}

/* rows [0, nr) of out (row stride ldo) x the panel's columns (masks m0, m1) += xp group . wp
 * over kc elements (first: from +0 instead of out) */
static inline __attribute__((always_inline)) void tile(const float *xp, const float *wp, int kc,
                                                       float *o, int64_t ldo, int nr,
                                                       __mmask16 m0, __mmask16 m1, int first)
{
    __m512 a0[XR], a1[XR];
    for (int r = 0; r < XR; r++) {
        if (first || r >= nr) {
            a0[r] = _mm512_setzero_ps();
            a1[r] = _mm512_setzero_ps();
        } else {
            a0[r] = _mm512_maskz_loadu_ps(m0, o + r * ldo);
            a1[r] = _mm512_maskz_loadu_ps(m1, o + r * ldo + 16);
        }
    }
    for (int i = 0; i < kc; i++) {
        const __m512 w0 = _mm512_loadu_ps(wp + (int64_t)i * NP);
        const __m512 w1 = _mm512_loadu_ps(wp + (int64_t)i * NP + 16);
        const float *xi = xp + (int64_t)i * XR;
#pragma GCC unroll 12
        for (int r = 0; r < XR; r++) {
            const __m512 b = _mm512_set1_ps(xi[r]);
            a0[r] = _mm512_fmadd_ps(b, w0, a0[r]);
            a1[r] = _mm512_fmadd_ps(b, w1, a1[r]);
        }
    }
    for (int r = 0; r < XR; r++)
        if (r < nr) {
            _mm512_mask_storeu_ps(o + r * ldo, m0, a0[r]);
            _mm512_mask_storeu_ps(o + r * ldo + 16, m1, a1[r]);
        }
}

wk_status wk_fgemm_avx512(int qt, float *out, const float *x, int64_t rows, const void *w,
                          int64_t n, int64_t k, int par)
{
    const int64_t npan = (n + NP - 1) / NP;
    const int64_t nblk = (rows + XMAX - 1) / XMAX; /* blocks of x rows, as even as XR allows */
    int64_t xb = (rows + nblk - 1) / nblk;
    xb = (xb + XR - 1) / XR * XR;
    const int64_t kcm = k < KC ? k : KC;
    /* x's block, packed by all the threads together (each a share of its groups) and read by
     * all: packing it per thread cost each thread the whole copy (16 threads, n = 4096: a
     * fifth of the time) */
    float *xp = wk_host_alloc((size_t)(xb * kcm) * sizeof(float));
    if (!xp)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate %lld f32 of scratch",
                      (long long)(xb * kcm));
    int fail = 0;
#pragma omp parallel if (par && npan > 1)
    {
        const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t p0 = npan * t / nt, p1 = npan * (t + 1) / nt;
        float *wp = p1 > p0 ? wk_host_alloc((size_t)(kcm * NP) * sizeof(float)) : NULL;
        if (p1 > p0 && !wp) {
#pragma omp atomic write
            fail = 1;
        }
        /* every thread runs the same loops (the barriers), computing only with its panels */
        for (int64_t r0 = 0; r0 < rows; r0 += xb) {
            const int nx = (int)(rows - r0 < xb ? rows - r0 : xb), ng = (nx + XR - 1) / XR;
            for (int64_t k0 = 0; k0 < k; k0 += KC) {
                const int kc = (int)(k - k0 < KC ? k - k0 : KC);
#pragma omp barrier
                pack_x(xp, (const float *)x, k, r0, nx, k0, kc, (int)(ng * t / nt),
                       (int)(ng * (t + 1) / nt));
#pragma omp barrier
                for (int64_t p = p0; wp && p < p1; p++) {
                    const int64_t j0 = p * NP;
                    const int nw = (int)(n - j0 < NP ? n - j0 : NP);
                    pack_w(wp, qt, w, k, j0, nw, k0, kc);
                    const __mmask16 m0 = (__mmask16)(nw >= 16 ? 0xffff : (1u << nw) - 1);
                    const __mmask16 m1 = (__mmask16)(nw >= 32 ? 0xffff : nw > 16 ? (1u << (nw - 16)) - 1 : 0);
                    for (int g = 0; g < ng; g++) {
                        const int nr = nx - g * XR < XR ? nx - g * XR : XR;
                        tile(xp + (int64_t)g * kc * XR, wp, kc, out + (r0 + g * XR) * n + j0, n,
                             nr, m0, m1, k0 == 0);
                    }
                }
            }
        }
        wk_host_free(wp);
    }
    wk_host_free(xp);
    if (fail)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate %d f32 of scratch",
                      (int)(KC * NP));
    return WK_OK;
}

#else
const int wk_fgemm_avx512_built = 0;

wk_status wk_fgemm_avx512(int qt, float *out, const float *x, int64_t rows, const void *w,
                          int64_t n, int64_t k, int par)
{
    (void)qt, (void)out, (void)x, (void)rows, (void)w, (void)n, (void)k, (void)par;
    return wk_err(WK_ERR_NOT_SUPPORTED, "qmatmul: the AVX-512 float product is not built");
}
#endif
