/* cpu_fgemm_amx.c: the product with F16 or BF16 weights for many rows of x on Intel's AMX-BF16
 * tiles (tdpbf16ps: 16 x 32 bf16 times 32 x 16 bf16, products exact, summed into f32):
 *
 *   out (rows, n) f32 = x (rows, k) f32 @ W^T, W (n, k) of F16 or BF16 (contract: cpu_fdot.h)
 *
 * Each value is split into bf16 terms: x = x_hi + x_lo (x_hi = x rounded to bf16, x_lo = the
 * rest rounded to bf16: 16 significant bits kept), w = w_hi + w_lo exactly (an f16 has 11
 * significant bits, a bf16 8; a BF16 weight is its own w_hi, w_lo = 0). Per 32-element chunk of k,
 * in order, the tile accumulates x_hi w_hi, then x_lo w_hi, then (F16 only) x_hi w_lo, in f32 as
 * tdpbf16ps rounds (nearest even; bf16 subnormal inputs read as zero and f32 subnormal results
 * flushed, the instruction's rule). The missing x_lo w_lo and the part of x past 16 bits are each
 * at most 2^-16 of |x w| (a bf16 rounding is within 2^-8), so every product is within 2^-15 of
 * exact: 16 times closer than the f16 activations llama.cpp multiplies F16 weights with. Any
 * non-finite input gives NaN (x - x_hi is inf - inf, and inf meets the zero lo terms). Each output
 * is one tile lane's chain over k, so the bits do not depend on the thread count or on the other
 * rows.
 *
 * W is packed per call, 32 weight rows (two tiles of 16) by 4096 elements of k at a time, into
 * the layout tdpbf16ps reads (tile row q = elements 2q, 2q + 1 of the 16 weight rows), the f32
 * sums kept between the chunks of k (stored and loaded exactly); x is split once per
 * call into two row-major bf16 arrays (rows padded to a multiple of 16, k to one of 32, with
 * zeros). Compiled with -mamx-tile -mamx-bf16 -mavx512f -mavx512bw -mavx512vl -mavx512bf16
 * -mf16c (cmake/cpu.cmake); used only where the CPU has AMX-BF16 and AVX512-BF16 and the OS
 * granted the tile data (cpu_amx.c). */
#include "cpu_fdot.h"
#include "cpu_qdot.h"
#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_BF16__) && \
    defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512BF16__)
#include "cpu_t16.h"
#include "wk_core.h"
#include <immintrin.h>
#include <omp.h>
#include <string.h>

const int wk_fgemm_amx_built = 1;

#define ITEM 32     /* weight rows per work item: two panels of 16 */
#define KCHUNK 4096 /* elements of k per packed chunk: 2 x 2 x 4096 x 16 x 2 B = 512 KiB */

int wk_fgemm_amx_ready(void)
{
    return wk_cpu_amx_tiles() && __builtin_cpu_supports("amx-bf16") &&
           __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
}

typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

/* every tile 16 rows of 64 bytes: C0, C1 (f32 sums of the two panels), A hi, A lo (x), B hi
 * and B lo of panel 0 and of panel 1 */
static void config(void)
{
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; t++)
        c.rows[t] = 16, c.colsb[t] = 64;
    _tile_loadconfig(&c);
}

/* v (f32) -> hi, lo (bf16 terms: hi = v rounded, lo = v - hi rounded) */
static inline __attribute__((always_inline)) void split(__m512 v, __m256i *hi, __m256i *lo)
{
    const __m256bh h = _mm512_cvtneps_pbh(v);
    const __m512 back = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)h), 16));
    *hi = (__m256i)h;
    *lo = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, back));
}

/* x rows [r0, r1) -> xh, xl (row stride kp bf16; columns past k zero) */
static void split_x(const float *x, int64_t k, int64_t kp, int64_t r0, int64_t r1, uint16_t *xh,
                    uint16_t *xl)
{
    for (int64_t r = r0; r < r1; r++)
        for (int64_t i = 0; i < kp; i += 16) {
            const __mmask16 m = (__mmask16)(k - i >= 16 ? 0xFFFF : k - i <= 0 ? 0 : (1u << (k - i)) - 1u);
            __m256i h, l;
            split(_mm512_maskz_loadu_ps(m, x + r * k + i), &h, &l);
            _mm256_storeu_si256((__m256i *)(xh + r * kp + i), h);
            _mm256_storeu_si256((__m256i *)(xl + r * kp + i), l);
        }
}

/* weight rows [j0, j0 + 16) (rows >= j1 zero), elements [k0, k0 + kc) -> the chunks' hi and lo
 * tiles at bh, bl (each 32-element chunk 16 rows of 64 bytes, chunk c at 512 c elements); lo
 * not written for BF16 */
static void pack(int qt, const void *w, int64_t k, int64_t k0, int64_t kc, int64_t j0, int64_t j1,
                 uint16_t *bh, uint16_t *bl)
{
    for (int64_t c = 0; c < kc / 32; c++) {
        __m512i H[16], L[16];
        for (int i = 0; i < 16; i++) {
            const int64_t j = j0 + i, e = k0 + 32 * c;
            const int64_t cnt = j < j1 ? (k - e < 32 ? k - e : 32) : 0;
            const __mmask32 m = (__mmask32)(cnt >= 32 ? 0xFFFFFFFFu : (1u << cnt) - 1u);
            const __m512i raw = _mm512_maskz_loadu_epi16(m, (const uint16_t *)w + (j < j1 ? j : j0) * k + e);
            if (qt == WK_QTYPE_BF16) {
                H[i] = raw;
                continue;
            }
            __m256i h0, l0, h1, l1;
            split(_mm512_cvtph_ps(_mm512_castsi512_si256(raw)), &h0, &l0);
            split(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(raw, 1)), &h1, &l1);
            H[i] = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
            L[i] = _mm512_inserti64x4(_mm512_castsi256_si512(l0), l1, 1);
        }
        wk_t16_epi32(H); /* row i's pair q -> tile row q, dword i */
        for (int q = 0; q < 16; q++)
            _mm512_storeu_si512(bh + 512 * c + 32 * q, H[q]);
        if (qt == WK_QTYPE_BF16)
            continue;
        wk_t16_epi32(L);
        for (int q = 0; q < 16; q++)
            _mm512_storeu_si512(bl + 512 * c + 32 * q, L[q]);
    }
}

/* out rows [0, rows) x weight rows [j0, j1) (at most 32), k in chunks of KCHUNK: each chunk's
 * tiles packed (bh, bl) and run for every 16 rows of x, the f32 sums kept in acc (prow x 32,
 * tile rows of 128 bytes) between the chunks, exactly (a tile stores and loads f32 as it is) */
static void item(int qt, float *out, int64_t rows, int64_t n, const void *w, int64_t k, int64_t kp,
                 const uint16_t *xh, const uint16_t *xl, int64_t j0, int64_t j1, uint16_t *bh,
                 uint16_t *bl, float *acc)
{
    const int lo = qt == WK_QTYPE_F16;
    const int two = j1 - j0 > 16;
    const int64_t lda = kp * 2; /* bytes */
    for (int64_t k0 = 0; k0 < kp; k0 += KCHUNK) {
        const int64_t kc = kp - k0 < KCHUNK ? kp - k0 : KCHUNK, nc = kc / 32;
        const int64_t chunk = 512 * nc; /* bf16 elements of a panel's packed tiles */
        for (int64_t p = j0; p < j1; p += 16)
            pack(qt, w, k, k0, kc, p, p + 16 < j1 ? p + 16 : j1, bh + (p - j0) * kc,
                 bl + (p - j0) * kc);
        for (int64_t r0 = 0; r0 < rows; r0 += 16) {
            float *a = acc + r0 * ITEM;
            if (k0 == 0) {
                _tile_zero(0);
                _tile_zero(1);
            } else {
                _tile_loadd(0, a, ITEM * 4);
                _tile_loadd(1, a + 16, ITEM * 4);
            }
            const uint16_t *ah = xh + r0 * kp + k0, *al = xl + r0 * kp + k0;
            for (int64_t c = 0; c < nc; c++) {
                _tile_loadd(2, ah + 32 * c, lda);
                _tile_loadd(3, al + 32 * c, lda);
                _tile_loadd(4, bh + 512 * c, 64);
                _tile_dpbf16ps(0, 2, 4); /* x_hi w_hi */
                _tile_dpbf16ps(0, 3, 4); /* x_lo w_hi */
                if (lo) {
                    _tile_loadd(5, bl + 512 * c, 64);
                    _tile_dpbf16ps(0, 2, 5); /* x_hi w_lo */
                }
                if (two) {
                    _tile_loadd(6, bh + chunk + 512 * c, 64);
                    _tile_dpbf16ps(1, 2, 6);
                    _tile_dpbf16ps(1, 3, 6);
                    if (lo) {
                        _tile_loadd(7, bl + chunk + 512 * c, 64);
                        _tile_dpbf16ps(1, 2, 7);
                    }
                }
            }
            _tile_stored(0, a, ITEM * 4);
            _tile_stored(1, a + 16, ITEM * 4);
        }
    }
    for (int p = 0; p < 1 + two; p++) {
        const int64_t pj = j0 + 16 * p;
        const int64_t wd = j1 - pj < 16 ? j1 - pj : 16;
        const __mmask16 m = (__mmask16)(wd >= 16 ? 0xFFFF : (1u << wd) - 1u);
        for (int64_t i = 0; i < rows; i++)
            _mm512_mask_storeu_ps(out + i * n + pj, m, _mm512_loadu_ps(acc + i * ITEM + 16 * p));
    }
}

wk_status wk_fgemm_amx(int qt, float *out, const float *x, int64_t rows, const void *w, int64_t n,
                       int64_t k, int par)
{
    const int64_t kp = (k + 31) / 32 * 32, prow = (rows + 15) / 16 * 16;
    const int64_t kcmax = kp < KCHUNK ? kp : KCHUNK;
    const int nt = par ? omp_get_max_threads() : 1;
    /* per thread (in bf16 units): the chunk's hi and lo tiles of 32 rows, the f32 sums */
    const size_t per = (size_t)(2 * kcmax * ITEM) + (size_t)(prow * ITEM) * 2 + 64;
    const size_t xb = (size_t)(prow * kp);
    uint16_t *buf = wk_host_alloc((2 * xb + (size_t)nt * per) * sizeof(uint16_t) + 128);
    if (!buf)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate the bf16 terms of x and W "
                      "(%lld x %lld)", (long long)rows, (long long)k);
    uint16_t *xh = (uint16_t *)(((uintptr_t)buf + 63) & ~(uintptr_t)63), *xl = xh + xb;
    uint16_t *scratch = xl + xb;
#pragma omp parallel for schedule(static) num_threads(nt) if (par && rows > 1)
    for (int64_t r = 0; r < rows; r++)
        split_x(x, k, kp, r, r + 1, xh, xl);
    memset(xh + rows * kp, 0, (size_t)((prow - rows) * kp) * sizeof(uint16_t));
    memset(xl + rows * kp, 0, (size_t)((prow - rows) * kp) * sizeof(uint16_t));
    const int64_t nit = (n + ITEM - 1) / ITEM;
#pragma omp parallel num_threads(nt) if (par && nit > 1)
    {
        uint16_t *b = (uint16_t *)(((uintptr_t)(scratch + (size_t)omp_get_thread_num() * per) + 63) &
                                   ~(uintptr_t)63);
        uint16_t *bh = b, *bl = b + kcmax * ITEM;
        float *acc = (float *)(bl + kcmax * ITEM);
        config();
#pragma omp for schedule(guided)
        for (int64_t it = 0; it < nit; it++) {
            const int64_t j0 = it * ITEM, j1 = j0 + ITEM < n ? j0 + ITEM : n;
            item(qt, out, rows, n, w, k, kp, xh, xl, j0, j1, bh, bl, acc);
        }
        _tile_release();
    }
    wk_host_free(buf);
    return WK_OK;
}
#else
const int wk_fgemm_amx_built = 0;
int wk_fgemm_amx_ready(void) { return 0; }
wk_status wk_fgemm_amx(int qt, float *out, const float *x, int64_t rows, const void *w, int64_t n,
                       int64_t k, int par)
{
    (void)qt, (void)out, (void)x, (void)rows, (void)w, (void)n, (void)k, (void)par;
    return WK_ERR_NOT_SUPPORTED;
}
#endif
