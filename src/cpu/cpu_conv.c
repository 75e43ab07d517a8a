/* cpu_conv.c: the CPU convolutions (conv1d, conv_transpose1d, conv2d, conv_transpose2d) as
 * im2col / col2im around the shared gemm (cpu_matmul.c).
 *
 * The 1-D ops are the 2-D ones with a height of 1. Inputs and kernels of any layout are first
 * made contiguous in the compute type (f32 for f32/f16/bf16, f64 for f64); f16/bf16 results are
 * accumulated in f32 and rounded once at the end.
 *   conv:            per image, col [C_in*KH*KW, Ho*Wo] = the input patches (zero padding), then
 *                    per group out[g] (C_out/G x Ho*Wo) = w[g] (C_out/G x C_in/G*KH*KW) @ col[g].
 *   conv_transpose:  per image and group, col[g] (C_out/G*KH*KW x H*W) = w[g]^T @ x[g], then
 *                    col2im adds every column entry into the output pixel it lands on.
 * Images run one after the other (each gemm threaded by wk_cpu_gemm) unless wk_cpu_gemm_spread says,
 * then OpenMP spreads the images over threads, each with its own column buffer.
 * On a CPU with AVX-512F, f32 compute (f32, f16, bf16) of a forward conv goes to
 * cpu_conv_avx512.c instead (no whole-image im2col), except 1x1 kernels; its stride-1 convs read
 * the input in place (cpu_conv_avx512_direct.c) where that fits.
 * WICK_CPU_CONV=gemm keeps the im2col path; WICK_CPU_CONV=padded the AVX-512F conv on a padded
 * copy of the input. */
#include "cpu_conv.h"
#include "cpu_ops.h"
#include "wk_core.h"
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef wk_conv_geom conv_geom;

/* The first ow in [0, wo] with ow*s + base >= 0. */
static int64_t conv_lo(int64_t base, int64_t s, int64_t wo)
{
    const int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
    return lo < wo ? lo : wo;
}

/* One past the last ow in [lo, wo] with ow*s + base < w. */
static int64_t conv_hi(int64_t base, int64_t s, int64_t w, int64_t wo, int64_t lo)
{
    if (w - 1 - base < 0)
        return lo;
    const int64_t hi = (w - 1 - base) / s + 1;
    return hi < lo ? lo : hi < wo ? hi : wo;
}

/* ---- im2col / col2im for the compute types. */
#define DEF_COLS(T, s)                                                                            \
    /* col [ci*kh*kw, ho*wo] <- the patches of one image x [ci, h, w]. */                        \
    static void im2col_##s(T *col, const T *x, const conv_geom *q, int par)                     \
    {                                                                                             \
        const int64_t rows = q->ci * q->kh * q->kw, hw = q->ho * q->wo;                         \
        _Pragma("omp parallel for schedule(static) if (par)")                                     \
        for (int64_t r = 0; r < rows; r++) {                                                      \
            const int64_t c = r / (q->kh * q->kw), kh = r / q->kw % q->kh, kw = r % q->kw;       \
            T *dst = col + r * hw;                                                                \
            const T *src = x + c * q->h * q->w;                                                   \
            for (int64_t oh = 0; oh < q->ho; oh++) {                                              \
                const int64_t ih = oh * q->sh - q->ph + kh * q->dh;                               \
                T *d = dst + oh * q->wo;                                                          \
                if (ih < 0 || ih >= q->h) {                                                       \
                    for (int64_t ow = 0; ow < q->wo; ow++)                                        \
                        d[ow] = 0;                                                                \
                    continue;                                                                     \
                }                                                                                 \
                /* iw = ow*sw + base is inside [0, w) for ow in [lo, hi): zeros around a copy */ \
                const int64_t base = kw * q->dw - q->pw;                                          \
                const T *srow = src + ih * q->w;                                                  \
                const int64_t lo = conv_lo(base, q->sw, q->wo);                                   \
                const int64_t hi = conv_hi(base, q->sw, q->w, q->wo, lo);                         \
                for (int64_t ow = 0; ow < lo; ow++)                                               \
                    d[ow] = 0;                                                                    \
                if (q->sw == 1)                                                                   \
                    for (int64_t ow = lo; ow < hi; ow++)                                          \
                        d[ow] = srow[base + ow];                                                  \
                else                                                                              \
                    for (int64_t ow = lo; ow < hi; ow++)                                          \
                        d[ow] = srow[base + ow * q->sw];                                          \
                for (int64_t ow = hi; ow < q->wo; ow++)                                           \
                    d[ow] = 0;                                                                    \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* out [co, ho, wo] (zeroed) += col [co*kh*kw, h*w] scattered to the pixels it lands on.     \
     * Each output channel is one thread's, so there are no races and the order is fixed. */     \
    static void col2im_##s(T *out, const T *col, const conv_geom *q, int par)                   \
    {                                                                                             \
        const int64_t hw = q->h * q->w;                                                           \
        _Pragma("omp parallel for schedule(static) if (par)")                                     \
        for (int64_t c = 0; c < q->co; c++) {                                                     \
            T *o = out + c * q->ho * q->wo;                                                       \
            for (int64_t kh = 0; kh < q->kh; kh++)                                                \
                for (int64_t kw = 0; kw < q->kw; kw++) {                                          \
                    const T *src = col + ((c * q->kh + kh) * q->kw + kw) * hw;                    \
                    for (int64_t ih = 0; ih < q->h; ih++) {                                       \
                        const int64_t oh = ih * q->sh - q->ph + kh * q->dh;                       \
                        if (oh < 0 || oh >= q->ho)                                                \
                            continue;                                                             \
                        T *orow = o + oh * q->wo;                                                 \
                        const T *srow = src + ih * q->w;                                          \
                        for (int64_t iw = 0; iw < q->w; iw++) {                                   \
                            const int64_t ow = iw * q->sw - q->pw + kw * q->dw;                   \
                            if (ow >= 0 && ow < q->wo)                                            \
                                orow[ow] += srow[iw];                                             \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
        }                                                                                         \
    }
DEF_COLS(float, f32)
DEF_COLS(double, f64)
#undef DEF_COLS

static void im2col(wk_dtype ct, void *col, const void *x, const conv_geom *q, int par)
{
    if (ct == WK_DTYPE_F64)
        im2col_f64(col, x, q, par);
    else
        im2col_f32(col, x, q, par);
}

static void col2im(wk_dtype ct, void *out, const void *col, const conv_geom *q, int par)
{
    if (ct == WK_DTYPE_F64)
        col2im_f64(out, col, q, par);
    else
        col2im_f32(out, col, q, par);
}

/* One image of conv: out [co, ho*wo] from x [ci, h*w]; col is this thread's buffer. */
static void conv_image(wk_dtype ct, char *out, const char *x, const char *w, char *col,
                       const conv_geom *q, int par)
{
    const size_t csz = wk_dtype_size(ct);
    const int64_t cig = q->ci / q->g, cog = q->co / q->g, kk = cig * q->kh * q->kw;
    const int64_t ohw = q->ho * q->wo;
    /* a 1x1 kernel with stride 1 and no padding reads the image as it is */
    const int direct = q->kh == 1 && q->kw == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 &&
                       q->pw == 0;
    if (!direct)
        im2col(ct, col, x, q, par);
    const char *b = direct ? x : col;
    for (int64_t g = 0; g < q->g; g++)
        wk_cpu_gemm(ct, 0, 0, cog, ohw, kk, w + (size_t)(g * cog * kk) * csz, kk,
                    b + (size_t)(g * kk * ohw) * csz, ohw, out + (size_t)(g * cog * ohw) * csz,
                    ohw);
}

/* One image of conv_transpose: out [co, ho*wo] (zeroed here) from x [ci, h*w]. */
static void convt_image(wk_dtype ct, char *out, const char *x, const char *w, char *col,
                        const conv_geom *q, int par)
{
    const size_t csz = wk_dtype_size(ct);
    const int64_t cig = q->ci / q->g, cog = q->co / q->g, kk = cog * q->kh * q->kw;
    const int64_t hw = q->h * q->w;
    for (int64_t g = 0; g < q->g; g++) /* col[g] = w[g]^T @ x[g]; w[g] is [cig, kk] */
        wk_cpu_gemm(ct, 1, 0, kk, hw, cig, w + (size_t)(g * cig * kk) * csz, kk,
                    x + (size_t)(g * cig * hw) * csz, hw, col + (size_t)(g * kk * hw) * csz, hw);
    memset(out, 0, (size_t)(q->co * q->ho * q->wo) * csz);
    col2im(ct, out, col, q, par);
}

/* The geometry of op for 2-D-shaped x (N, C, H, W) and w; the 1-D ops pass H = KH = 1. */
static void conv_geometry(conv_geom *q, int transposed, const int64_t *xd, const int64_t *wd,
                          const int64_t *s, const int64_t *p, const int64_t *d, const int64_t *op,
                          int64_t groups)
{
    *q = (conv_geom){.n = xd[0], .ci = xd[1], .h = xd[2], .w = xd[3], .kh = wd[2], .kw = wd[3],
                     .g = groups, .sh = s[0], .sw = s[1], .ph = p[0], .pw = p[1], .dh = d[0],
                     .dw = d[1]};
    if (transposed) {
        q->co = wd[1] * groups;
        q->ho = (q->h - 1) * q->sh - 2 * q->ph + q->dh * (q->kh - 1) + op[0] + 1;
        q->wo = (q->w - 1) * q->sw - 2 * q->pw + q->dw * (q->kw - 1) + op[1] + 1;
    } else {
        q->co = wd[0];
        q->ho = (q->h + 2 * q->ph - q->dh * (q->kh - 1) - 1) / q->sh + 1;
        q->wo = (q->w + 2 * q->pw - q->dw * (q->kw - 1) - 1) / q->sw + 1;
    }
}

/* x (dtype dt, any layout) -> a contiguous buffer of compute type ct: the input itself when it
 * already is one, else a scratch (*own) the caller frees. */
static wk_status to_compute(const void **res, void **own, wk_device *dev, wk_dtype dt,
                            wk_dtype ct, const void *x, const wk_layout *lx)
{
    *own = NULL;
    if (dt == ct && wk_layout_is_contiguous(lx)) {
        *res = (const char *)x + (size_t)lx->offset * wk_dtype_size(ct);
        return WK_OK;
    }
    const int64_t n = wk_layout_elem_count(lx);
    if (!(*own = wk_host_alloc((size_t)n * wk_dtype_size(ct))))
        return wk_err(WK_ERR_OUT_OF_MEMORY, "conv: cannot allocate a %lld-element scratch",
                      (long long)n);
    *res = *own;
    return wk_cpu_to_dtype(dev, dt, ct, *own, x, lx);
}

/* 1 when the AVX-512F direct conv (cpu_conv_avx512.c) takes q: a forward conv in f32 on a
 * CPU that has AVX-512F, with more than one tap per input channel. 1x1 kernels, whose taps
 * share no input, measured faster through the gemm (CPU time, one thread: 8x256x56x56 -> 64
 * 77 vs 62 GFLOP/s, 8x64x56x56 stride 2 -> 256 80 vs 64; 8x512x7x7 -> 512 87 vs 93). */
static int use_avx512(const conv_geom *q, int transposed, wk_dtype ct)
{
#if defined(WK_CONV_X86)
    const char *want = getenv("WICK_CPU_CONV");
    const int cap = __builtin_cpu_supports("avx512f") && !(want && !strcmp(want, "gemm"));
    return cap && !transposed && ct == WK_DTYPE_F32 && q->kh * q->kw > 1;
#else
    (void)q, (void)transposed, (void)ct;
    return 0;
#endif
}

wk_status wk_cpu_conv(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *w, const wk_layout *lw,
                      const wk_conv_params *p)
{
    const int one_d = op == WK_OP_CONV1D || op == WK_OP_CONV_TRANSPOSE1D;
    const int transposed = op == WK_OP_CONV_TRANSPOSE1D || op == WK_OP_CONV_TRANSPOSE2D;
    wk_layout x4, w4;
    wk_layout_as_2d(&x4, lx);
    wk_layout_as_2d(&w4, lw);
    const int i = one_d ? 0 : 1; /* where the W parameters are */
    const int64_t s[2] = {one_d ? 1 : p->stride[0], p->stride[i]};
    const int64_t pad[2] = {one_d ? 0 : p->padding[0], p->padding[i]};
    const int64_t dil[2] = {one_d ? 1 : p->dilation[0], p->dilation[i]};
    const int64_t opad[2] = {one_d ? 0 : p->output_padding[0], p->output_padding[i]};
    conv_geom q;
    conv_geometry(&q, transposed, x4.dims, w4.dims, s, pad, dil, opad, p->groups);

    const wk_dtype ct = dt == WK_DTYPE_F64 ? WK_DTYPE_F64 : WK_DTYPE_F32;
    const size_t csz = wk_dtype_size(ct);
    const int64_t cig = q.ci / q.g, cog = q.co / q.g;
    /* gemm extents: conv m=cog n=ho*wo k=cig*kh*kw; transposed m=cog*kh*kw n=h*w k=cig */
    const int64_t gm = transposed ? cog * q.kh * q.kw : cog;
    const int64_t gn = transposed ? q.h * q.w : q.ho * q.wo;
    const int64_t gk = transposed ? cig : cig * q.kh * q.kw;
    if (gm > INT_MAX || gn > INT_MAX || gk > INT_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: gemm extents %lld x %lld x %lld exceed the BLAS index range",
                      wk_op_name(op), (long long)gm, (long long)gn, (long long)gk);
    const int64_t out_img = q.co * q.ho * q.wo, in_img = q.ci * q.h * q.w;
    const int64_t col_len = transposed ? q.co * q.kh * q.kw * q.h * q.w
                                       : q.ci * q.kh * q.kw * q.ho * q.wo;
    const int spread = wk_cpu_gemm_spread(q.n, gm, gn, gk);
    int nt = spread ? omp_get_max_threads() : 1;
    if (nt > q.n)
        nt = (int)q.n;
    if (nt > 32)
        nt = 32;

    const void *xc = NULL, *wc = NULL;
    void *xown = NULL, *wown = NULL, *col = NULL, *obuf = NULL;
    wk_status st = to_compute(&xc, &xown, dev, dt, ct, x, lx);
    if (!st)
        st = to_compute(&wc, &wown, dev, dt, ct, w, lw);
    const int fast = use_avx512(&q, transposed, ct);
    if (!st && !fast &&
        !(col = wk_host_alloc((size_t)(col_len > 0 ? col_len : 1) * csz * (size_t)nt)))
        st = wk_err(WK_ERR_OUT_OF_MEMORY, "%s: cannot allocate the column buffer", wk_op_name(op));
    if (!st && dt != ct && !(obuf = wk_host_alloc((size_t)(q.n * out_img) * csz)))
        st = wk_err(WK_ERR_OUT_OF_MEMORY, "%s: cannot allocate the f32 result", wk_op_name(op));
    if (!st) {
        char *o = dt == ct ? out : obuf;
        if (gk == 0 || gn == 0) { /* no input channels or pixels: every sum is empty */
            memset(o, 0, (size_t)(q.n * out_img) * csz);
        } else if (fast) {
            st = wk_cpu_conv_avx512((float *)o, xc, wc, &q);
        } else {
            const int par = !spread && col_len > WK_CPU_PAR_THRESHOLD;
#define CONV_IMAGE(b, mycol)                                                                     \
    (transposed ? convt_image : conv_image)(ct, o + (size_t)((b) * out_img) * csz,               \
                                            (const char *)xc + (size_t)((b) * in_img) * csz, wc, \
                                            (mycol), &q, par)
            /* images over threads, or one after the other with their im2col and gemm threaded
             * (outside any parallel region: libgomp does not thread a region nested in one) */
            if (nt > 1) {
#pragma omp parallel for schedule(static) num_threads(nt)
                for (int64_t b = 0; b < q.n; b++)
                    CONV_IMAGE(b, (char *)col + (size_t)omp_get_thread_num() * (size_t)col_len * csz);
            } else {
                for (int64_t b = 0; b < q.n; b++)
                    CONV_IMAGE(b, (char *)col);
            }
#undef CONV_IMAGE
        }
        if (!st && dt != ct) {
            wk_layout lo;
            const int64_t cnt = q.n * out_img;
            wk_layout_contiguous(&lo, 1, &cnt);
            st = wk_cpu_to_dtype(dev, ct, dt, out, obuf, &lo);
        }
    }
    wk_host_free(obuf);
    wk_host_free(col);
    wk_host_free(wown);
    wk_host_free(xown);
    return st;
}
