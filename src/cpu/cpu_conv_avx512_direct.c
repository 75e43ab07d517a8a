/* cpu_conv_avx512_direct.c: stride-1 conv1d / conv2d in f32 on CPUs with AVX-512F that read the
 * input where it is: no padded copy, the zero padding made by lane masks. Compiled with
 * -mavx512f (cmake/cpu.cmake); cpu_conv_avx512.c calls it for the convs it takes. Empty elsewhere.
 *
 * The output pixels of an image are walked on the input's own w-wide grid: pixel (oh, ow) is
 * q = oh*w + ow, and the input under tap k = (c, kh, kw) of pixel q is x[c][q + off] with
 * off = (kh*dh - ph)*w + kw*dw - pw, whenever ih = oh + kh*dh - ph is in [0, h) and
 * iw = ow + kw*dw - pw in [0, w). Each tile of 48 consecutive q (a narrower one, 16 or 32, at the
 * end of an image) computes its lane masks once (rows of kh times columns of kw), and every tap
 * loads its three vectors with the mask of its (kh, kw): a masked-off lane reads nothing (AVX-512
 * masked loads suppress faults) and contributes an exact 0. This takes the convs with wo <= w
 * (when wo < w the w - wo lanes at the end of each row are computed and dropped; the caller takes
 * this path only where few are). Against the padded copy (cpu_conv_avx512.c) there is no copy
 * pass and no padding column computed and dropped (8x64x56x56 k3 p1: 4.1% of its lanes).
 *
 * The micro-kernel is the 8 x 48 tile of cpu_conv_avx512.c (8 output channels, 24 zmm
 * accumulators, weights packed [k][8] broadcast), summing k = 0, 1, ..., K-1 in order with FMA:
 * each output element has one fixed summation order whatever the thread count, and the same
 * bits as the padded copy gives (the padding there is +0.0 too). Work items are (image, group,
 * block of NB tiles), handed to OpenMP threads dynamically. */
#include "cpu_conv.h"
#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>
#include <omp.h>
#include <string.h>

#define MR 8  /* output channels per tile */
#define NR 48 /* pixels per tile: 3 vectors of 16 */
#define PF 16 /* taps ahead that the micro-kernel prefetches */
#define NB 4  /* tiles per work item */

/* t [MR][16*nv] (rows ldt floats apart) = sum over k of a[k*MR + r] * (x under tap k of pixel
 * j), k in order, FMA: tap k = c*nt + i reads b + off[k] + j where lane j of mask m[i] is set,
 * else 0. */
static inline __attribute__((always_inline)) void
tile_nv(int nv, float *restrict t, int64_t ldt, const float *restrict a, const float *restrict b,
        const int64_t *restrict off, const uint64_t *restrict m, int64_t ncig, int64_t nt)
{
    __m512 c0[MR], c1[MR], c2[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        c0[r] = c1[r] = c2[r] = _mm512_setzero_ps();
    const int64_t nk = ncig * nt;
    const uint64_t full = ((uint64_t)1 << (16 * nv)) - 1;
    for (int64_t c = 0, k = 0; c < ncig; c++)
        for (int64_t i = 0; i < nt; i++, k++) {
            const float *bk = b + off[k];
            if (k + PF < nk) {
                const char *pf = (const char *)(b + off[k + PF]);
                _mm_prefetch(pf, _MM_HINT_T0);
                if (nv > 1)
                    _mm_prefetch(pf + 64, _MM_HINT_T0);
                if (nv > 2)
                    _mm_prefetch(pf + 128, _MM_HINT_T0);
                _mm_prefetch(pf + 64 * nv - 1, _MM_HINT_T0);
            }
            /* every lane inside the input (most taps): plain loads, no mask work */
            const uint64_t mk = m[i];
            __m512 b0, b1 = _mm512_setzero_ps(), b2 = _mm512_setzero_ps();
            if (mk == full) {
                b0 = _mm512_loadu_ps(bk);
                if (nv > 1)
                    b1 = _mm512_loadu_ps(bk + 16);
                if (nv > 2)
                    b2 = _mm512_loadu_ps(bk + 32);
            } else {
                b0 = _mm512_maskz_loadu_ps((__mmask16)mk, bk);
                if (nv > 1)
                    b1 = _mm512_maskz_loadu_ps((__mmask16)(mk >> 16), bk + 16);
                if (nv > 2)
                    b2 = _mm512_maskz_loadu_ps((__mmask16)(mk >> 32), bk + 32);
            }
            const float *ak = a + k * MR;
#pragma GCC unroll 8
            for (int r = 0; r < MR; r++) {
                const __m512 av = _mm512_set1_ps(ak[r]);
                c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
                if (nv > 1)
                    c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
                if (nv > 2)
                    c2[r] = _mm512_fmadd_ps(av, b2, c2[r]);
            }
        }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        _mm512_storeu_ps(t + r * ldt, c0[r]);
        if (nv > 1)
            _mm512_storeu_ps(t + r * ldt + 16, c1[r]);
        if (nv > 2)
            _mm512_storeu_ps(t + r * ldt + 32, c2[r]);
    }
}

static __attribute__((noinline)) void tile1(float *t, int64_t ldt, const float *a,
                                              const float *b, const int64_t *off,
                                              const uint64_t *m, int64_t ncig, int64_t nt)
{
    tile_nv(1, t, ldt, a, b, off, m, ncig, nt);
}
static __attribute__((noinline)) void tile2(float *t, int64_t ldt, const float *a,
                                              const float *b, const int64_t *off,
                                              const uint64_t *m, int64_t ncig, int64_t nt)
{
    tile_nv(2, t, ldt, a, b, off, m, ncig, nt);
}
static __attribute__((noinline)) void tile3(float *t, int64_t ldt, const float *a,
                                              const float *b, const int64_t *off,
                                              const uint64_t *m, int64_t ncig, int64_t nt)
{
    tile_nv(3, t, ldt, a, b, off, m, ncig, nt);
}

/* m [kh*kw + kw] (q->kh * q->kw masks) for the len <= NR pixels from q0 of an image: bit j set
 * when pixel q0 + j is an output pixel (ow < wo) and its tap (kh, kw) lies inside the input.
 * rowm and colm are scratch of q->kh and q->kw words. */
static void tile_masks(uint64_t *m, uint64_t *rowm, uint64_t *colm, int64_t q0, int64_t len,
                       const wk_conv_geom *q)
{
    memset(rowm, 0, (size_t)q->kh * sizeof(uint64_t));
    memset(colm, 0, (size_t)q->kw * sizeof(uint64_t));
    int64_t oh = q0 / q->w, ow = q0 % q->w;
    for (int64_t j = 0; j < len; j++) {
        if (ow < q->wo) {
            for (int64_t kh = 0; kh < q->kh; kh++) {
                const int64_t ih = oh + kh * q->dh - q->ph;
                rowm[kh] |= (uint64_t)(ih >= 0 && ih < q->h) << j;
            }
            for (int64_t kw = 0; kw < q->kw; kw++) {
                const int64_t iw = ow + kw * q->dw - q->pw;
                colm[kw] |= (uint64_t)(iw >= 0 && iw < q->w) << j;
            }
        }
        if (++ow == q->w)
            ow = 0, oh++;
    }
    for (int64_t kh = 0; kh < q->kh; kh++)
        for (int64_t kw = 0; kw < q->kw; kw++)
            m[kh * q->kw + kw] = rowm[kh] & colm[kw];
}

/* Rows [0, mr) of tile t, the len pixels from q0 of the w-wide grid, into o [mr][ho*wo]: those
 * with ow < wo. */
static void store_tile(float *o, const float *t, int mr, int64_t q0, int64_t len,
                       const wk_conv_geom *q)
{
    const int64_t ohw = q->ho * q->wo;
    int64_t oh = q0 / q->w, ow = q0 % q->w;
    for (int64_t j = 0; j < len; oh++, ow = 0) {
        const int64_t run = len - j < q->w - ow ? len - j : q->w - ow;
        const int64_t valid = ow >= q->wo ? 0 : q->wo - ow < run ? q->wo - ow : run;
        for (int r = 0; r < mr && valid > 0; r++)
            memcpy(o + r * ohw + oh * q->wo + ow, t + r * NR + j, (size_t)valid * sizeof(float));
        j += run;
    }
}

int wk_cpu_conv_direct_fits(const wk_conv_geom *q)
{
    if (q->sh != 1 || q->sw != 1 || q->wo > q->w || q->kh * q->kw < 2)
        return 0;
    /* lanes computed per image: the (ho-1)*w + wo grid pixels rounded up to whole vectors */
    const int64_t nq = (q->ho - 1) * q->w + q->wo, lanes = (nq + 15) / 16 * 16;
    return (double)(q->ho * q->wo) >= 0.85 * (double)lanes;
}

/* out [n, co, ho*wo] = conv(x, w), when wk_cpu_conv_direct_fits(q): see the top of the file. */
wk_status wk_cpu_conv_avx512_direct(float *out, const float *x, const float *w,
                                    const wk_conv_geom *q)
{
    const int64_t cig = q->ci / q->g, cog = q->co / q->g, ntap = q->kh * q->kw, nk = cig * ntap;
    const int64_t hw = q->h * q->w, ohw = q->ho * q->wo, ncb = (cog + MR - 1) / MR;
    const int64_t nq = (q->ho - 1) * q->w + q->wo, ntile = (nq + NR - 1) / NR;
    const int64_t nblk = (ntile + NB - 1) / NB, items = q->n * q->g * nblk;
    int nt = omp_get_max_threads();
    if (nt > items)
        nt = (int)items;
    /* per thread: the masks of NB tiles, then the row and column scratch */
    const int64_t mwords = NB * ntap + q->kh + q->kw;
    float *wk = wk_host_alloc((size_t)(q->g * ncb * nk * MR) * sizeof(float));
    int64_t *off = wk_host_alloc((size_t)nk * sizeof(int64_t));
    uint64_t *masks = wk_host_alloc((size_t)(nt * mwords) * sizeof(uint64_t));
    if (!wk || !off || !masks) {
        wk_host_free(masks), wk_host_free(off), wk_host_free(wk);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "conv: cannot allocate the packed weights");
    }
    wk_cpu_conv_pack_weights(wk, w, q->g, cog, ncb, nk);
    for (int64_t k = 0; k < nk; k++) { /* k = (c, kh, kw) as the weights order it */
        const int64_t c = k / ntap, kh = k / q->kw % q->kh, kw = k % q->kw;
        off[k] = c * hw + (kh * q->dh - q->ph) * q->w + kw * q->dw - q->pw;
    }
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; it++) {
        const int64_t b = it / (q->g * nblk), gi = it / nblk % q->g, blk = it % nblk;
        const float *xg = x + (b * q->ci + gi * cig) * hw;
        float *og = out + (b * q->co + gi * cog) * ohw;
        uint64_t *m = masks + (int64_t)(nt > 1 ? omp_get_thread_num() : 0) * mwords;
        const int64_t t0 = blk * NB, tn = ntile - t0 < NB ? ntile - t0 : NB;
        for (int64_t s = 0; s < tn; s++) {
            const int64_t q0 = (t0 + s) * NR, len = nq - q0 < NR ? nq - q0 : NR;
            tile_masks(m + s * ntap, m + NB * ntap, m + NB * ntap + q->kh, q0, len, q);
        }
        float t[MR * NR];
        for (int64_t cb = 0; cb < ncb; cb++) {
            const float *a = wk + (gi * ncb + cb) * nk * MR;
            const int mr = cog - cb * MR < MR ? (int)(cog - cb * MR) : MR;
            for (int64_t s = 0; s < tn; s++) {
                const int64_t q0 = (t0 + s) * NR, len = nq - q0 < NR ? nq - q0 : NR;
                const uint64_t *ms = m + s * ntap;
                /* a whole tile of output rows as wide as the input's: the 48 lanes are 48
                 * consecutive output pixels, stored from the registers */
                float *o = og + cb * MR * ohw;
                const int inplace = mr == MR && len == NR && q->wo == q->w;
                float *dst = inplace ? o + q0 : t;
                const int64_t ld = inplace ? ohw : NR;
                if (len > 32)
                    tile3(dst, ld, a, xg + q0, off, ms, cig, ntap);
                else if (len > 16)
                    tile2(dst, ld, a, xg + q0, off, ms, cig, ntap);
                else
                    tile1(dst, ld, a, xg + q0, off, ms, cig, ntap);
                if (!inplace)
                    store_tile(o, t, mr, q0, len, q);
            }
        }
    }
    wk_host_free(masks);
    wk_host_free(off);
    wk_host_free(wk);
    return WK_OK;
}
#endif
