/* conv.cu: the data movement of the GPU convolutions (module "conv"); the products are the
 * shared GEMM's (src/gpu/gpu_conv.c drives both).
 *
 * Every op is seen in 2-D terms (1-D: H = KH = Ho = 1). g (wk_conv_geom, mirrored by conv_geom
 * in src/gpu/gpu_conv.c) holds the geometry and x's element strides.
 *   conv_im2col_<x>_<col>(g, x, col)
 *       col <- the patches of the images x points at (x read through its strides, zero where a
 *       tap falls in the padding): row r = c*KH*KW + tap of image n starts at col + n*g.cis +
 *       r*g.crs and holds the Ho*Wo positions in order, so col is [nimg][C_in*KH*KW][Ho*Wo]
 *       (cis = C_in*KH*KW*Ho*Wo, crs = Ho*Wo) or, for one GEMM over all the images,
 *       [C_in*KH*KW][nimg][Ho*Wo] (cis = Ho*Wo, crs = nimg*Ho*Wo); converted from dtype <x> to <col>
 *       (a raw copy when they are equal). Grid: x over output positions (256 per block: adjacent
 *       threads write adjacent positions, coalesced), y over input channels (grid-stride),
 *       z = image of the chunk. Each thread walks the KH*KW taps of its channel with counters
 *       (no division per element), 4 loads in flight before their stores.
 *   conv_im2col_vec_<x>_<col>(g, x, col)
 *       the same col, bit for bit, at copy speed where the host allows it (P divisible by
 *       16 / sizeof(col element), col 16-byte aligned, offsets within int32): one thread per
 *       (channel, 16 bytes of positions), one 16-byte store per tap, 32-bit index math.
 *   conv_col2im_<ct>_<out>(g, col, out)
 *       out [nimg][C_out][Ho*Wo] (dtype <out>) = for each output pixel, the sum over the taps
 *       (kh, kw) in row-major order of col [nimg][C_out*KH*KW][H*W] at the input pixel that
 *       lands on it (ih*sh - ph + kh*dh = oh, the same along w): the gather form of col2im,
 *       in the compute type <ct> (f32, or f64 for f64), rounded once. The order of the adds is
 *       the CPU's (src/cpu/cpu_conv.c adds the taps in the same order into a zeroed buffer), no
 *       atomics. Grid: x over output positions, y over output channels, z = image.
 *   conv_zero(nbytes, p): p[0 .. nbytes) = 0 (an empty sum: no input channels or pixels).
 *   conv_nhwc_<tile>_<dt>: the forward convolution as an implicit GEMM on the matrix units over
 *   an NHWC copy of x, both operands by cp.async (below). */
#include "gpu.h"

/* All fields int64 so host and device agree on the layout without padding questions. */
struct wk_conv_geom {
    int64_t ci, h, w;   /* input channels and spatial dims */
    int64_t co, kh, kw; /* output channels, kernel */
    int64_t ho, wo;     /* output spatial dims */
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t xs[4];      /* x's strides (N, C, H, W) in elements; im2col only */
    int64_t cis, crs;   /* col's image and row strides in elements; im2col only */
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
        SC *dst = col + n * g.cis + c * KK * g.crs + p;
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
                    dst[(t0 + u) * g.crs] = v[u];
        }
    }
}

/* The fast im2col (same result as wk_im2col, element for element): one thread = one input
 * channel c and V = 16 / sizeof(SC) consecutive output positions p0 .. p0+V-1, which it writes
 * for every tap as one 16-byte store (col rows start 16-byte aligned: the host checks the
 * pointer and that V divides P and the strides). Index math is 32-bit (the host checks that
 * every offset below fits: ci*P/V and KK*crs < 2^31, and (h+2ph)*xs2 + (w+2pw)*xs3 < 2^31, which bounds every
 * |ih|*xs2 + |iw|*xs3 and kh*dh*xs2 + kw*dw*xs3 below);
 * only the image and channel bases are 64-bit, once per thread. The division by the output
 * width runs once per thread; the V positions walk (oh, ow) with a counter, so rows may split
 * a group of V. Grid: x over ci * P/V (channel-major: adjacent threads write adjacent 16-byte
 * slots of the same channel's rows), z = image of the chunk. */
template <int DI, int DC>
WK_DEV void wk_im2col_vec(const wk_conv_geom &g, const void *xv, void *colv)
{
    typedef typename wk_t<DI>::S SI;
    typedef typename wk_t<DC>::S SC;
    enum { V = 16 / (int)sizeof(SC) };
    const int P = (int)(g.ho * g.wo), PV = P / V, ci = (int)g.ci;
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (unsigned)ci * (unsigned)PV)
        return;
    const int c = (int)(i / (unsigned)PV), p0 = ((int)i - c * PV) * V;
    const int wo = (int)g.wo, h = (int)g.h, w = (int)g.w, xs2 = (int)g.xs[2], xs3 = (int)g.xs[3];
    /* a dilation of a size-1 kernel dim may be anything: only ever multiplied by kh = 0 */
    const int kh_n = (int)g.kh, kw_n = (int)g.kw;
    const int dhs = (int)(g.dh * g.xs[2]), dws = (int)(g.dw * g.xs[3]);
    const int64_t n = blockIdx.z;
    const SI *__restrict__ xc = (const SI *)xv + n * g.xs[0] + (int64_t)c * g.xs[1];
    SC *__restrict__ dst = (SC *)colv + n * g.cis + c * (g.kh * g.kw) * g.crs + p0;
    const int crs = (int)g.crs;
    int ih0[V], iw0[V], xo[V]; /* per position: top-left tap and its offset in x */
    int oh = p0 / wo, ow = p0 - oh * wo;
#pragma unroll
    for (int e = 0; e < V; e++) {
        ih0[e] = oh * (int)g.sh - (int)g.ph;
        iw0[e] = ow * (int)g.sw - (int)g.pw;
        xo[e] = ih0[e] * xs2 + iw0[e] * xs3;
        if (++ow == wo) {
            ow = 0;
            oh++;
        }
    }
    int t = 0; /* tap * crs: the tap's row in dst */
    for (int kh = 0; kh < kh_n; kh++) {
        const int dih = kh * (int)g.dh;
        for (int kw = 0; kw < kw_n; kw++, t += crs) {
            const int diw = kw * (int)g.dw, toff = kh * dhs + kw * dws;
            SI r[V]; /* all V loads issued before any conversion; the padding reads 0 bits */
#pragma unroll
            for (int e = 0; e < V; e++) {
                /* unsigned compares: a negative index (padding) wraps past the bound */
                const bool in = (unsigned)(ih0[e] + dih) < (unsigned)h &&
                                (unsigned)(iw0[e] + diw) < (unsigned)w;
                r[e] = in ? xc[xo[e] + toff] : (SI)0;
            }
            wk_pack<SC, V> pk; /* 0 bits convert to +0 in every float format: (SC)0 */
#pragma unroll
            for (int e = 0; e < V; e++)
                pk.v[e] = wk_cvt<DI, DC>::f(r[e]);
            ((wk_pack<SC, V> *)(dst + t))->raw = pk.raw;
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
    }                                                                                          \
    WK_KERNEL conv_im2col_vec_##xn##_##cn(wk_conv_geom g, const void *x, void *col)             \
    {                                                                                          \
        wk_im2col_vec<DI, DC>(g, x, col);                                                      \
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

/* ---------------------------------------------------------------- implicit GEMM, matrix units
 *   conv_nhwc_<BM>x128_<dt>(g, x, w, out, a)   (dt f16 / bf16; BM = 128, or 64 for C_out /
 *   groups <= 64: the C_out rows of a block tile, 128 positions)
 *       out[n][gr Cog + co][p] = sum over k of w'[(gr Cog + co) wrs + k] xh[n][gr][k][p]: the
 *       forward convolution without the column matrix, k = (kh, kw, c) over the group's Cig
 *       channels, p = (oh, ow); xh = the NHWC copy of x at channel gr Cig + c, row oh sh - ph +
 *       kh dh, column ow sw - pw + kw dw, zero in the padding. Grid: x over tiles of 128
 *       positions, y over (group, tiles of C_out), z = image.
 *   The pipeline is gemm_pipe's (kernels/mc.h, gemm.h). NVIDIA sm_80+ and the simt device
 *   only (as gemm.h's matrix-unit kernels; AMD takes im2col + the FMA GEMM). (An NCHW form
 *   that gathered the columns from x in registers ran at 0.34x cuDNN on the H200, half this
 *   one's speed, and was removed: docs/performance.md, "Matmul and convolutions".) */
#if !defined(WK_HIP)
#include "mc.h"

/* The launch's scalars (mirrored by cv_args in src/gpu/gpu_conv.c). */
struct wk_cv_args {
    int64_t cig, cog; /* channels per group in and out */
    int64_t wrs;      /* the weight's row stride (elements; a multiple of 8) */
    int64_t mtiles;   /* tiles of BM along C_out per group */
};

WK_SHARED_DYN(uint16_t, cv_dyn);

/* x is an [N][H][W][C] copy (g.ci = C) and w a [C_out][KH][KW][C/G] copy (row stride a.wrs =
 * KH KW C/G), both made by the host; k runs in (kh, kw, c) order and C/G is a multiple of 32,
 * so a k tile is 32 channels of one tap and each position's share of it one 64-byte run of x.
 * The column tile then arrives by cp.async as the weight tile does (four 16-byte copies per
 * position, zero-filled in the padding and past P), staged [position][k]: no gather in
 * registers, nothing on the critical path but the products. Each thread owns 2 of the tile's
 * 512 chunks (position c / 4, channels c % 4 * 8) and keeps its positions' top-left taps; only
 * the tap and channel offset move per tile. */
struct cvn_src {
    int ih0[2], iw0[2], col[2], so[2];
    int kh, kw;
    int64_t c0;

    __device__ __forceinline__ void init(const wk_conv_geom &g, int64_t P, int64_t n0)
    {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int c = (int)threadIdx.x + i * WK_BLOCK, row = c >> 2;
            col[i] = (c & 3) * 8;
            so[i] = mc_off<MC_BK / 8>(row, col[i]);
            const int64_t p = n0 + row, oh = p / g.wo, ow = p - oh * g.wo;
            ih0[i] = p < P ? (int)(oh * g.sh - g.ph) : -(1 << 30); /* past P: out of every row */
            iw0[i] = (int)(ow * g.sw - g.pw);
        }
        kh = kw = 0;
        c0 = 0;
    }
    /* the next k tile's column chunks into stage s (xz: the image's first channel of the group) */
    __device__ __forceinline__ void issue(uint16_t *s, const wk_conv_geom &g, const uint16_t *xz,
                                          int64_t cig)
    {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int ih = ih0[i] + kh * (int)g.dh, iw = iw0[i] + kw * (int)g.dw;
            const bool in = (unsigned)ih < (unsigned)g.h && (unsigned)iw < (unsigned)g.w;
            const uint16_t *src = in ? xz + ((int64_t)ih * g.w + iw) * g.ci + c0 + col[i] : xz;
            wk_cp_async16(s + so[i], src, in);
        }
        c0 += MC_BK;
        if (c0 == cig) {
            c0 = 0;
            if (++kw == (int)g.kw) {
                kw = 0;
                kh++;
            }
        }
    }
};

template <int D, int BM>
WK_DEV void cvn_body(const wk_conv_geom &g, const uint16_t *x, const uint16_t *w, uint16_t *out,
                     const wk_cv_args &a)
{
    enum { BN = 128, WM = BM / 2, WN = BN / 4, FM = WM / 16, FN = WN / 8, SA = BM * MC_BK,
           SB = BN * MC_BK, CA = MC_BK / 8, CB = MC_BK / 8 };
    const int64_t P = g.ho * g.wo, K = a.cig * g.kh * g.kw, tiles = K / MC_BK;
    const int64_t gr = blockIdx.y / a.mtiles, m0 = (int64_t)(blockIdx.y % a.mtiles) * BM;
    const int64_t n0 = (int64_t)blockIdx.x * BN, z = blockIdx.z;
    const uint16_t *const xa = w + (gr * a.cog + m0) * a.wrs;
    const uint16_t *const xz = x + z * g.h * g.w * g.ci + gr * a.cig;
    const int na = (int)(a.cog - m0 < BM ? a.cog - m0 : BM);
    const int wi = (int)threadIdx.x >> 5, wm = (wi >> 2) * WM, wn = (wi & 3) * WN;

    float acc[FM][FN][4];
    wk_mma_zero(acc);
    mc_src<BM, 1> sa;
    sa.init(xa, a.wrs, 1);
    cvn_src sb;
    sb.init(g, P, n0);
#pragma unroll
    for (int s = 0; s < MC_ST - 1; s++) {
        if (s < tiles) {
            sa.issue(cv_dyn + s * (SA + SB), na == BM, xa, a.wrs, 1, na, K, s * MC_BK);
            sb.issue(cv_dyn + s * (SA + SB) + SA, g, xz, a.cig);
        }
        wk_cp_async_commit();
    }
    int rs = 0, ws = MC_ST - 1; /* the stage to multiply, the stage to fill */
    for (int64_t t = 0; t < tiles; t++) {
        wk_cp_async_wait<MC_ST - 2>(); /* tile t has landed (this thread's copies) */
        __syncthreads();               /* everyone's copies of tile t; step t - 1's stage free */
        const int64_t tn = t + MC_ST - 1;
        if (tn < tiles) {
            sa.issue(cv_dyn + ws * (SA + SB), na == BM, xa, a.wrs, 1, na, K, tn * MC_BK);
            sb.issue(cv_dyn + ws * (SA + SB) + SA, g, xz, a.cig);
        }
        wk_cp_async_commit();
        mc_tile<D == WK_DT_BF16, CA, CB, 1, 1, FM, FN>(acc, cv_dyn + rs * (SA + SB),
                                                  cv_dyn + rs * (SA + SB) + SA, wm, wn);
        rs = rs + 1 == MC_ST ? 0 : rs + 1;
        ws = ws + 1 == MC_ST ? 0 : ws + 1;
    }
    wk_cp_async_wait<0>();

    typedef typename wk_t<D>::S S;
    S *const cz = (S *)out + z * g.co * P + gr * a.cog * P;
    mc_store<D, FM, FN>(acc, cz, P, a.cog, P, m0 + wm, n0 + wn);
}

#define CV_KERNELS(NAME, DT)                                                                   \
    WK_KERNEL_MINB(2) conv_nhwc_128x128_##NAME(wk_conv_geom g, const void *x, const void *w,   \
                                               void *out, wk_cv_args a)                        \
    {                                                                                          \
        cvn_body<DT, 128>(g, (const uint16_t *)x, (const uint16_t *)w, (uint16_t *)out, a);    \
    }                                                                                          \
    WK_KERNEL conv_nhwc_64x128_##NAME(wk_conv_geom g, const void *x, const void *w, void *out, \
                                      wk_cv_args a)                                            \
    {                                                                                          \
        cvn_body<DT, 64>(g, (const uint16_t *)x, (const uint16_t *)w, (uint16_t *)out, a);     \
    }
CV_KERNELS(f16, WK_DT_F16)
CV_KERNELS(bf16, WK_DT_BF16)
#endif /* !WK_HIP */
