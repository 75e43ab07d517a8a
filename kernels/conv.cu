/* conv.cu: the data movement of the GPU convolutions (module "conv"); the products are the
 * shared GEMM's (src/gpu/gpu_conv.c drives both).
 *
 * Every op is seen in 2-D terms (1-D: H = KH = Ho = 1). g (wk_conv_geom, mirrored by conv_geom
 * in src/gpu/gpu_conv.c) holds the geometry and x's element strides.
 *   conv_im2col_<x>_<col>(g, x, col)
 *       col [nimg][C_in*KH*KW][Ho*Wo] <- the patches of the images x points at (x read through
 *       its strides, zero where a tap falls in the padding), converted from dtype <x> to <col>
 *       (a raw copy when they are equal). Grid: x over output positions (256 per block: adjacent
 *       threads write adjacent positions, coalesced), y over input channels (grid-stride),
 *       z = image of the chunk. Each thread walks the KH*KW taps of its channel with counters
 *       (no division per element), 4 loads in flight before their stores.
 *   conv_col2im_<ct>_<out>(g, col, out)
 *       out [nimg][C_out][Ho*Wo] (dtype <out>) = for each output pixel, the sum over the taps
 *       (kh, kw) in row-major order of col [nimg][C_out*KH*KW][H*W] at the input pixel that
 *       lands on it (ih*sh - ph + kh*dh = oh, the same along w): the gather form of col2im,
 *       in the compute type <ct> (f32, or f64 for f64), rounded once. The order of the adds is
 *       the CPU's (src/cpu/cpu_conv.c adds the taps in the same order into a zeroed buffer), no
 *       atomics. Grid: x over output positions, y over output channels, z = image.
 *   conv_zero(nbytes, p): p[0 .. nbytes) = 0 (an empty sum: no input channels or pixels). */
#include "gpu.h"

/* All fields int64 so host and device agree on the layout without padding questions. */
struct wk_conv_geom {
    int64_t ci, h, w;   /* input channels and spatial dims */
    int64_t co, kh, kw; /* output channels, kernel */
    int64_t ho, wo;     /* output spatial dims */
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t xs[4];      /* x's strides (N, C, H, W) in elements; im2col only */
};

/* Element conversion for im2col: raw bits when the types are equal, else through the compute
 * type (f8e4m3 -> f32, exact). */
template <int DI, int DC> struct wk_cvt {
    WK_DEV typename wk_t<DC>::S f(typename wk_t<DI>::S v) { return wk_t<DC>::st(wk_t<DI>::ld(v)); }
};
template <int D> struct wk_cvt<D, D> {
    WK_DEV typename wk_t<D>::S f(typename wk_t<D>::S v) { return v; }
};

#define WK_IM2COL_U 4 /* taps per batch: loads issued before the stores */

template <int DI, int DC>
WK_DEV void wk_im2col(const wk_conv_geom &g, const void *xv, void *colv)
{
    typedef typename wk_t<DI>::S SI;
    typedef typename wk_t<DC>::S SC;
    const SI *__restrict__ x = (const SI *)xv;
    SC *__restrict__ col = (SC *)colv;
    const int64_t P = g.ho * g.wo;
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P)
        return;
    const int64_t oh = p / g.wo, ow = p - oh * g.wo;
    const int64_t ih0 = oh * g.sh - g.ph, iw0 = ow * g.sw - g.pw;
    const int64_t n = blockIdx.z;
    const int64_t KK = g.kh * g.kw;
    for (int64_t c = blockIdx.y; c < g.ci; c += gridDim.y) {
        const SI *xc = x + n * g.xs[0] + c * g.xs[1];
        SC *dst = col + (n * g.ci + c) * KK * P + p;
        int64_t kh = 0, kw = 0; /* the tap t0 + u below, advanced by counters */
        for (int64_t t0 = 0; t0 < KK; t0 += WK_IM2COL_U) {
            SC v[WK_IM2COL_U];
#pragma unroll
            for (int u = 0; u < WK_IM2COL_U; u++) {
                v[u] = (SC)0;
                if (t0 + u < KK) {
                    const int64_t ih = ih0 + kh * g.dh, iw = iw0 + kw * g.dw;
                    if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                        v[u] = wk_cvt<DI, DC>::f(xc[ih * g.xs[2] + iw * g.xs[3]]);
                    if (++kw == g.kw) {
                        kw = 0;
                        kh++;
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < WK_IM2COL_U; u++)
                if (t0 + u < KK)
                    dst[(t0 + u) * P] = v[u];
        }
    }
}

template <int DC, int DO>
WK_DEV void wk_col2im(const wk_conv_geom &g, const void *colv, void *outv)
{
    typedef typename wk_t<DC>::S SC; /* f32 or f64: storage = compute type */
    typedef typename wk_t<DO>::S SO;
    const SC *__restrict__ col = (const SC *)colv;
    SO *__restrict__ out = (SO *)outv;
    const int64_t P = g.ho * g.wo, HW = g.h * g.w, KK = g.kh * g.kw;
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P)
        return;
    const int64_t oh = p / g.wo, ow = p - oh * g.wo;
    const int64_t n = blockIdx.z;
    for (int64_t co = blockIdx.y; co < g.co; co += gridDim.y) {
        const SC *cb = col + (n * g.co + co) * KK * HW;
        SC acc = 0;
        for (int64_t kh = 0; kh < g.kh; kh++) {
            const int64_t th = oh + g.ph - kh * g.dh; /* = ih * sh */
            if (th < 0)
                break; /* th only decreases with kh */
            const int64_t ih = th / g.sh;
            if (ih * g.sh != th || ih >= g.h)
                continue;
            for (int64_t kw = 0; kw < g.kw; kw++) {
                const int64_t tw = ow + g.pw - kw * g.dw;
                if (tw < 0)
                    break;
                const int64_t iw = tw / g.sw;
                if (iw * g.sw != tw || iw >= g.w)
                    continue;
                acc += cb[(kh * g.kw + kw) * HW + ih * g.w + iw];
            }
        }
        out[(n * g.co + co) * P + p] = wk_t<DO>::st((typename wk_t<DO>::C)acc);
    }
}

/* im2col pairs (input dtype -> column dtype): the float types into themselves, f8e4m3 into
 * f32 (the GEMM has no f8 type). */
#define WK_IM2COL(xn, DI, cn, DC)                                                              \
    WK_KERNEL conv_im2col_##xn##_##cn(wk_conv_geom g, const void *x, void *col)                 \
    {                                                                                          \
        wk_im2col<DI, DC>(g, x, col);                                                          \
    }
WK_IM2COL(f32, WK_DT_F32, f32, WK_DT_F32)
WK_IM2COL(f64, WK_DT_F64, f64, WK_DT_F64)
WK_IM2COL(f16, WK_DT_F16, f16, WK_DT_F16)
WK_IM2COL(bf16, WK_DT_BF16, bf16, WK_DT_BF16)
WK_IM2COL(f8e4m3, WK_DT_F8E4M3, f32, WK_DT_F32)

/* col2im: columns in the compute type, output in any float dtype of that class. */
#define WK_COL2IM(cn, DC, on, DO)                                                              \
    WK_KERNEL conv_col2im_##cn##_##on(wk_conv_geom g, const void *col, void *out)               \
    {                                                                                          \
        wk_col2im<DC, DO>(g, col, out);                                                        \
    }
WK_COL2IM(f32, WK_DT_F32, f32, WK_DT_F32)
WK_COL2IM(f32, WK_DT_F32, f16, WK_DT_F16)
WK_COL2IM(f32, WK_DT_F32, bf16, WK_DT_BF16)
WK_COL2IM(f32, WK_DT_F32, f8e4m3, WK_DT_F8E4M3)
WK_COL2IM(f64, WK_DT_F64, f64, WK_DT_F64)

WK_KERNEL conv_zero(int64_t nbytes, void *p)
{
    uint8_t *b = (uint8_t *)p;
    for (int64_t i = wk_tid(); i < nbytes; i += wk_nthreads())
        b[i] = 0;
}
