/* cpu_conv_avx512.c: conv1d / conv2d in f32 on CPUs with AVX-512F, as a gemm over cache-sized
 * blocks of output pixels with no im2col of whole images. Compiled with -mavx512f
 * (cmake/cpu.cmake); cpu_conv.c calls it only when the CPU has AVX-512F. Empty elsewhere.
 *
 * Each image is first copied with its zero padding into xp [ci, hp, wp] (hp = h + 2*ph,
 * wp = w + 2*pw; planes ps >= hp*wp floats apart). Then, for tap k = (c, kh, kw) of the
 * K = ci/g*KH*KW taps of a group:
 *   stride 1:  the input under tap k of output pixel (oh, ow) is xp[off[k] + q] with
 *              off[k] = c*ps + kh*dh*wp + kw*dw and q = oh*wp + ow. The columns of im2col are
 *              the padded image itself, shifted: the gemm runs over q on the wp-wide grid and the
 *              wp - wo pixels at the end of each row are computed and dropped.
 *   stride >1: a panel of np output pixels of the batch is gathered from xp into [K][np] per
 *              work item, off[k] = k*np (np = 192, less where K is large, so that the panel
 *              stays in L2). Stride-1 convs of small images take this path too.
 * The micro-kernel computes an 8 x 48 tile (8 output channels x 48 pixels, 24 zmm accumulators)
 * from the weights packed [k][8] (broadcast) and the 48 values of each tap (3 loads), summing
 * k = 0, 1, ..., K-1 in that order with FMA: every output element has one fixed summation order
 * whatever the thread count. Work items are (image, group, block of NB tiles of grid pixels) or,
 * packed, (group, block of np pixels of the batch), handed to OpenMP threads dynamically. */
#include "cpu_conv.h"
#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define MR 8              /* output channels per tile */
#define NR 48             /* pixels per tile: 3 vectors of 16 */
#define PF 16             /* taps ahead that the micro-kernel prefetches (4, 8, 16 measured) */
#define NB 4              /* tiles of pixels per work item (at most, packed) */
#define PANEL_BYTES (512 << 10) /* a packed panel at most (half an L2), where one tile allows */

/* t [MR][NR] = sum over k of a[k*MR + r] * b[off[k] + j], k in order, FMA. */
static void conv_tile(float *restrict t, const float *restrict a, const float *restrict b,
                      const int64_t *restrict off, int64_t nk)
{
    __m512 c0[MR], c1[MR], c2[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        c0[r] = c1[r] = c2[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < nk; k++) {
        const float *bk = b + off[k];
        if (k + PF < nk) {
            const char *pf = (const char *)(b + off[k + PF]);
            _mm_prefetch(pf, _MM_HINT_T0);
            _mm_prefetch(pf + 64, _MM_HINT_T0);
            _mm_prefetch(pf + 128, _MM_HINT_T0);
            _mm_prefetch(pf + 191, _MM_HINT_T0);
        }
        const __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16),
                     b2 = _mm512_loadu_ps(bk + 32);
        const float *ak = a + k * MR;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m512 av = _mm512_set1_ps(ak[r]);
            c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
            c2[r] = _mm512_fmadd_ps(av, b2, c2[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        _mm512_storeu_ps(t + r * NR, c0[r]);
        _mm512_storeu_ps(t + r * NR + 16, c1[r]);
        _mm512_storeu_ps(t + r * NR + 32, c2[r]);
    }
}

/* Rows [0, mr) of tile t, pixels q0 .. q0+NR-1 of the wp-wide grid, into o [mr][ho*wo]
 * (o points at the tile's first channel): the pixels with ow < wo and oh < ho. */
static void store_grid(float *o, const float *t, int mr, int64_t q0, const wk_conv_geom *q,
                       int64_t wp)
{
    const int64_t ohw = q->ho * q->wo;
    int64_t oh = q0 / wp, ow = q0 % wp;
    for (int64_t j = 0; j < NR && oh < q->ho; oh++, ow = 0) {
        const int64_t run = NR - j < wp - ow ? NR - j : wp - ow;
        const int64_t valid = ow >= q->wo ? 0 : q->wo - ow < run ? q->wo - ow : run;
        for (int r = 0; r < mr && valid > 0; r++)
            memcpy(o + r * ohw + oh * q->wo + ow, t + r * NR + j, (size_t)valid * sizeof(float));
        j += run;
    }
}

/* Rows [0, mr) of tile t, pixels p0 .. p0+NR-1 of the batch (p = b*ho*wo + oh*wo + ow, those
 * below npix), into o [n][co][ho*wo] (o points at the tile's first channel of image 0). */
static void store_flat(float *o, const float *t, int mr, int64_t p0, int64_t npix,
                       const wk_conv_geom *q)
{
    const int64_t ohw = q->ho * q->wo;
    for (int64_t j = 0, p = p0; j < NR && p < npix;) {
        const int64_t b = p / ohw, pix = p % ohw;
        int64_t len = ohw - pix < NR - j ? ohw - pix : NR - j;
        len = npix - p < len ? npix - p : len;
        for (int r = 0; r < mr; r++)
            memcpy(o + (b * q->co + r) * ohw + pix, t + r * NR + j, (size_t)len * sizeof(float));
        j += len, p += len;
    }
}

/* The distance between the planes of xp: hp*wp rounded up to a whole number of 64-byte lines,
 * an odd number, so that the same pixel of consecutive channels falls in different L1 sets (a
 * plane of 1026 floats, 8 bytes past 4 KiB, put 256 channels' rows in a few sets of the L1). */
static int64_t plane_stride(int64_t hp, int64_t wp)
{
    const int64_t lines = (hp * wp + 15) / 16;
    return (lines | 1) * 16;
}

/* xp [n*ci][ps] = the planes [hp][wp] of x with their zero padding, the ps - hp*wp floats after
 * each and the slack after the last zeroed. */
static void pad_input(float *xp, const float *x, const wk_conv_geom *q, int64_t hp, int64_t wp,
                      int64_t ps, int64_t slack)
{
    const int64_t planes = q->n * q->ci;
#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        float *d = xp + pl * ps;
        const float *s = x + pl * q->h * q->w;
        memset(d, 0, (size_t)(q->ph * wp) * sizeof(float));
        for (int64_t ih = 0; ih < q->h; ih++) {
            float *row = d + (q->ph + ih) * wp;
            memset(row, 0, (size_t)q->pw * sizeof(float));
            memcpy(row + q->pw, s + ih * q->w, (size_t)q->w * sizeof(float));
            memset(row + q->pw + q->w, 0, (size_t)q->pw * sizeof(float));
        }
        memset(d + (q->ph + q->h) * wp, 0, (size_t)(ps - (q->ph + q->h) * wp) * sizeof(float));
    }
    memset(xp + planes * ps, 0, (size_t)slack * sizeof(float));
}

/* wk [g][cb][k][MR] = w [g*cog + cb*MR + r][k], rows past cog zero. */
void wk_cpu_conv_pack_weights(float *wk, const float *w, int64_t g, int64_t cog, int64_t ncb,
                              int64_t nk)
{
#pragma omp parallel for schedule(static) if (g * ncb * nk > 16384)
    for (int64_t gc = 0; gc < g * ncb; gc++) {
        const int64_t gi = gc / ncb, cb = gc % ncb;
        float *d = wk + gc * nk * MR;
        for (int64_t k = 0; k < nk; k++)
            for (int r = 0; r < MR; r++) {
                const int64_t co = cb * MR + r;
                d[k * MR + r] = co < cog ? w[(gi * cog + co) * nk + k] : 0.0f;
            }
    }
}

/* One run of a panel: len output pixels of one output row, from xp + src (stepping by sw) to
 * panel column dst. */
typedef struct conv_run {
    int64_t src, dst, len;
} conv_run;

/* The runs of the panel of batch pixels p0 .. p0+np-1 (below npix); returns their count. */
static int64_t panel_runs(conv_run *run, int64_t p0, int64_t np, int64_t npix,
                          const wk_conv_geom *q, int64_t wp, int64_t img)
{
    const int64_t ohw = q->ho * q->wo;
    int64_t nr = 0;
    for (int64_t j = 0, p = p0; j < np && p < npix; nr++) {
        const int64_t b = p / ohw, oh = p % ohw / q->wo, ow = p % q->wo;
        int64_t len = q->wo - ow < np - j ? q->wo - ow : np - j;
        len = npix - p < len ? npix - p : len;
        run[nr] = (conv_run){b * img + oh * q->sh * wp + ow * q->sw, j, len};
        j += len, p += len;
    }
    return nr;
}

/* panel [nk][np] = the input under tap k (at xg + off[k]) of each pixel of the runs; the
 * columns past the last run are zeroed. */
static void pack_panel(float *panel, int64_t np, const float *xg, const int64_t *off, int64_t nk,
                       const conv_run *run, int64_t nr, int64_t sw)
{
    const int64_t used = run[nr - 1].dst + run[nr - 1].len;
    for (int64_t k = 0; k < nk; k++) {
        float *d = panel + k * np;
        for (int64_t r = 0; r < nr; r++) {
            const float *s = xg + off[k] + run[r].src;
            float *dr = d + run[r].dst;
            const int64_t len = run[r].len;
            if (sw == 1)
                memcpy(dr, s, (size_t)len * sizeof(float));
            else if (sw == 2)
                for (int64_t i = 0; i < len; i++)
                    dr[i] = s[2 * i];
            else
                for (int64_t i = 0; i < len; i++)
                    dr[i] = s[i * sw];
        }
        memset(d + used, 0, (size_t)(np - used) * sizeof(float));
    }
}

/* out [n, co, ho*wo] = conv(x, w): see the top of the file. */
wk_status wk_cpu_conv_avx512(float *out, const float *x, const float *w, const wk_conv_geom *q)
{
    const char *want = getenv("WICK_CPU_CONV");
    if (wk_cpu_conv_direct_fits(q) && !(want && !strcmp(want, "padded")))
        return wk_cpu_conv_avx512_direct(out, x, w, q);
    const int64_t cig = q->ci / q->g, cog = q->co / q->g, nk = cig * q->kh * q->kw;
    const int64_t hp = q->h + 2 * q->ph, wp = q->w + 2 * q->pw, ohw = q->ho * q->wo;
    const int64_t ncb = (cog + MR - 1) / MR;
    const int64_t ps = plane_stride(hp, wp), img = q->ci * ps, slack = 2 * NR + 64;
    /* stride 1 runs on the wp-wide grid of each image unless that wastes over 15% of the tiles
     * (small images: 7x7 fills 49 of 96 pixels); then, as with a stride, on packed panels of
     * the pixels of the whole batch */
    const int64_t ngrid = (q->ho - 1) * wp + q->wo, gtiles = (ngrid + NR - 1) / NR;
    const int packed = q->sh != 1 || q->sw != 1 || ohw < 0.85 * (double)(gtiles * NR);
    const int64_t npix = packed ? q->n * ohw : ngrid;
    /* tiles per work item: NB, fewer where a packed panel of NB tiles would not fit in L2 */
    int64_t tpb = packed ? PANEL_BYTES / (nk * NR * (int64_t)sizeof(float)) : NB;
    tpb = tpb < 1 ? 1 : tpb > NB ? NB : tpb;
    const int64_t np = tpb * NR;
    const int64_t nblk = (npix + np - 1) / np, items = (packed ? 1 : q->n) * q->g * nblk;
    int nt = omp_get_max_threads();
    if (nt > items)
        nt = (int)items;
    float *xp = wk_host_alloc((size_t)(q->n * img + slack) * sizeof(float));
    float *wk = wk_host_alloc((size_t)(q->g * ncb * nk * MR) * sizeof(float));
    int64_t *off = wk_host_alloc((size_t)nk * sizeof(int64_t) * (packed ? 2 : 1));
    float *panels = packed ? wk_host_alloc((size_t)(nt * nk * np) * sizeof(float)) : NULL;
    conv_run *runs = packed ? wk_host_alloc((size_t)(nt * np) * sizeof(conv_run)) : NULL;
    if (!xp || !wk || !off || (packed && (!panels || !runs))) {
        wk_host_free(runs), wk_host_free(panels), wk_host_free(off), wk_host_free(wk);
        wk_host_free(xp);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "conv: cannot allocate the padded input and packed weights");
    }
    pad_input(xp, x, q, hp, wp, ps, slack);
    wk_cpu_conv_pack_weights(wk, w, q->g, cog, ncb, nk);
    for (int64_t k = 0; k < nk; k++) { /* k = (c, kh, kw) as the weights order it */
        const int64_t c = k / (q->kh * q->kw), kh = k / q->kw % q->kh, kw = k % q->kw;
        off[k] = c * ps + kh * q->dh * wp + kw * q->dw;
    }
    /* the tile's tap offsets: off in xp, or (packed) k*np in the panel, after off */
    int64_t *kofs = packed ? off + nk : off;
    for (int64_t k = 0; packed && k < nk; k++)
        kofs[k] = k * np;
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; it++) {
        /* packed: the items are (group, block of batch pixels) and b is 0 */
        const int64_t b = it / (q->g * nblk), gi = it / nblk % q->g, blk = it % nblk;
        const float *xg = xp + b * img + gi * cig * ps;
        float *og = out + (b * q->co + gi * cog) * ohw;
        const int tid = nt > 1 ? omp_get_thread_num() : 0;
        float *panel = packed ? panels + (int64_t)tid * nk * np : NULL;
        const int64_t p0 = blk * np;
        const int64_t ntile = (npix - p0 + NR - 1) / NR < tpb ? (npix - p0 + NR - 1) / NR : tpb;
        if (packed) {
            conv_run *run = runs + (int64_t)tid * np;
            pack_panel(panel, np, xg, off, nk, run, panel_runs(run, p0, np, npix, q, wp, img), q->sw);
        }
        float t[MR * NR];
        for (int64_t cb = 0; cb < ncb; cb++) {
            const float *a = wk + (gi * ncb + cb) * nk * MR;
            const int mr = cog - cb * MR < MR ? (int)(cog - cb * MR) : MR;
            float *o = og + cb * MR * ohw;
            for (int64_t s = 0; s < ntile; s++) {
                const int64_t p = p0 + s * NR;
                if (packed) {
                    conv_tile(t, a, panel + s * NR, kofs, nk);
                    store_flat(o, t, mr, p, npix, q);
                } else {
                    conv_tile(t, a, xg + p, kofs, nk);
                    store_grid(o, t, mr, p, q, wp);
                }
            }
        }
    }
    wk_host_free(runs);
    wk_host_free(panels);
    wk_host_free(off);
    wk_host_free(wk);
    wk_host_free(xp);
    return WK_OK;
}
#endif
