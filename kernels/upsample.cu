/* upsample.cu: upsample_nearest1d/2d and upsample_bilinear2d (module "upsample").
 *
 * x (N, C, IH, IW) read through its strides (the 1-D op is (N, C, 1, L)) -> out (N, C, OH, OW)
 * contiguous, one thread per output element. Grid: x over the OH*OW positions of a plane (256
 * per block, adjacent threads write adjacent outputs), y over channels and z over images, both
 * grid-stride. The host guarantees OH*OW < 2^31 (32-bit division for the position).
 *   up_nearest_b<B>(g, x, out): elements of B bytes copied. Source index per dim (Candle's CPU
 *       rule, src/cpu/cpu_upsample.c): min(in - 1, (int64)((double)dst * r)), r = in/out computed
 *       in f64 by the host exactly as the CPU does.
 *   up_bilinear_<dt>(g, x, out): PyTorch's upsample_bilinear2d in the compute type CT (f32, f64
 *       for f64), the CPU's formulas and operation order (no contraction): the ratio per dim
 *       comes from the host already rounded to CT (g.rh, g.rw), then
 *       src = align_corners ? r*d : max(0, r*(d + 0.5) - 0.5), i0 = min(floor(src), in - 1),
 *       i1 = i0 + (i0 < in - 1), l1 = clamp(src - i0, 0, 1), l0 = 1 - l1; a dim with out == in
 *       is copied; out = lh0*(lw0*x00 + lw1*x01) + lh1*(lw0*x10 + lw1*x11), rounded once. */
#include "gpu.h"

/* Mirrored by up_geom in src/gpu/gpu_upsample.c (8-byte fields only). */
struct wk_up_geom {
    int64_t n, c, ih, iw, oh, ow;
    int64_t xs[4];
    int64_t ac;    /* align_corners (bilinear) */
    double rh, rw; /* nearest: in/out in f64; bilinear: the ratio, a CT value */
};

WK_DEV int64_t wk_near_src(int64_t d, int64_t in, double r)
{
    const int64_t s = (int64_t)((double)d * r); /* >= 0 and < in + 1 */
    return s < in - 1 ? s : in - 1;
}

template <int B> WK_DEV void wk_up_nearest(const wk_up_geom &g, const void *xv, void *outv)
{
    typedef typename wk_bits<B>::T T;
    const T *__restrict__ x = (const T *)xv;
    T *__restrict__ out = (T *)outv;
    const int64_t P = g.oh * g.ow;
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P)
        return;
    const uint32_t oh = (uint32_t)p / (uint32_t)g.ow, ow = (uint32_t)p - oh * (uint32_t)g.ow;
    const int64_t off = wk_near_src(oh, g.ih, g.rh) * g.xs[2] + wk_near_src(ow, g.iw, g.rw) * g.xs[3];
    for (int64_t n = blockIdx.z; n < g.n; n += gridDim.z)
        for (int64_t c = blockIdx.y; c < g.c; c += gridDim.y)
            out[(n * g.c + c) * P + p] = x[n * g.xs[0] + c * g.xs[1] + off];
}

/* Source indices and weights of output index d along one dim (src/cpu/cpu_upsample.c,
 * lin_table). */
template <class CT>
WK_DEV void wk_lin(int64_t d, int64_t in, int64_t out, bool ac, CT ratio, int64_t &i0,
                   int64_t &i1, CT &l0, CT &l1)
{
    if (out == in) { /* PyTorch's per-dim shortcut: a copy, whatever the scale */
        i0 = i1 = d;
        l0 = 1;
        l1 = 0;
        return;
    }
    CT src = ac ? ratio * (CT)d : ratio * ((CT)d + (CT)0.5) - (CT)0.5;
    if (src < 0)
        src = 0;
    const int64_t k = src < (CT)(in - 1) ? (int64_t)src : in - 1; /* compare before the cast */
    CT lam = src - (CT)k;
    lam = lam < 0 ? (CT)0 : lam > 1 ? (CT)1 : lam;
    i0 = k;
    i1 = k + (k < in - 1 ? 1 : 0);
    l1 = lam;
    l0 = (CT)1 - lam;
}

template <int D> WK_DEV void wk_up_bilinear(const wk_up_geom &g, const void *xv, void *outv)
{
    typedef typename wk_t<D>::S S;
    typedef typename wk_t<D>::C CT;
    const S *__restrict__ x = (const S *)xv;
    S *__restrict__ out = (S *)outv;
    const int64_t P = g.oh * g.ow;
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P)
        return;
    const uint32_t oh = (uint32_t)p / (uint32_t)g.ow, ow = (uint32_t)p - oh * (uint32_t)g.ow;
    int64_t h0, h1, w0, w1;
    CT hl0, hl1, wl0, wl1;
    wk_lin<CT>(oh, g.ih, g.oh, g.ac != 0, (CT)g.rh, h0, h1, hl0, hl1);
    wk_lin<CT>(ow, g.iw, g.ow, g.ac != 0, (CT)g.rw, w0, w1, wl0, wl1);
    const int64_t r0 = h0 * g.xs[2], r1 = h1 * g.xs[2], a = w0 * g.xs[3], b = w1 * g.xs[3];
    for (int64_t n = blockIdx.z; n < g.n; n += gridDim.z)
        for (int64_t c = blockIdx.y; c < g.c; c += gridDim.y) {
            const S *base = x + n * g.xs[0] + c * g.xs[1];
            const CT top = wl0 * wk_t<D>::ld(base[r0 + a]) + wl1 * wk_t<D>::ld(base[r0 + b]);
            const CT bot = wl0 * wk_t<D>::ld(base[r1 + a]) + wl1 * wk_t<D>::ld(base[r1 + b]);
            out[(n * g.c + c) * P + p] = wk_t<D>::st(hl0 * top + hl1 * bot);
        }
}

/* ---- nearest, exact x2 along W (and x1 or x2 along H): the fast path of the contiguous-row
 * case. With out = 2 * in the CPU's ratio in/out is exactly 0.5 in f64, d * 0.5 is exact and its
 * truncation is d >> 1 (<= in - 1): source column ow >> 1, source row oh / fh (fh = oh / ih is 1
 * or 2; with fh = 1 the ratio is exactly 1). So one input element feeds 2 adjacent outputs in each
 * of fh rows: a thread loads V adjacent inputs as one access (16 bytes when the host found the
 * rows aligned, else V = 1) and stores them doubled, in accesses of up to 16 bytes, to fh rows.
 * The host guarantees ow == 2 * iw, oh == fh * ih, iw % V == 0, xs[3] == 1 (or iw == 1), x and
 * every row start aligned to V * B bytes, out aligned to 16 bytes or 2 * V * B if smaller. */
template <class T, int N> WK_DEV void wk_up_ldv(const T *p, T *v)
{
    const int E = N * (int)sizeof(T) > 16 ? 16 / (int)sizeof(T) : N; /* elements per access */
#pragma unroll
    for (int s = 0; s < N / E; s++) {
        wk_pack<T, E> a;
        a.raw = ((const wk_pack<T, E> *)p)[s].raw;
#pragma unroll
        for (int k = 0; k < E; k++)
            v[s * E + k] = a.v[k];
    }
}
template <class T, int N> WK_DEV void wk_up_stv(T *p, const T *v)
{
    const int E = N * (int)sizeof(T) > 16 ? 16 / (int)sizeof(T) : N;
#pragma unroll
    for (int s = 0; s < N / E; s++) {
        wk_pack<T, E> a;
#pragma unroll
        for (int k = 0; k < E; k++)
            a.v[k] = v[s * E + k];
        ((wk_pack<T, E> *)p)[s].raw = a.raw;
    }
}

template <int B, int V> WK_DEV void wk_up_near2(const wk_up_geom &g, const void *xv, void *outv)
{
    typedef typename wk_bits<B>::T T;
    const T *__restrict__ x = (const T *)xv;
    T *__restrict__ out = (T *)outv;
    const int64_t cols = g.iw / V, items = g.n * g.c * g.ih * cols;
    const int64_t fh = g.oh / g.ih; /* 1 or 2 */
    const bool small = items <= 0xffffffffll; /* 32-bit divisions */
    for (int64_t t = wk_tid(); t < items; t += wk_nthreads()) {
        int64_t col, ih, c, n;
        if (small) {
            const uint32_t r = (uint32_t)t / (uint32_t)cols; /* (n, c, ih) */
            const uint32_t nc = r / (uint32_t)g.ih, n32 = nc / (uint32_t)g.c;
            col = (int64_t)((uint32_t)t - r * (uint32_t)cols);
            ih = (int64_t)(r - nc * (uint32_t)g.ih);
            c = (int64_t)(nc - n32 * (uint32_t)g.c);
            n = n32;
        } else {
            const int64_t r = t / cols, nc = r / g.ih;
            col = t - r * cols;
            ih = r - nc * g.ih;
            n = nc / g.c;
            c = nc - n * g.c;
        }
        T a[V], d[2 * V];
        wk_up_ldv<T, V>(x + n * g.xs[0] + c * g.xs[1] + ih * g.xs[2] + col * V, a);
#pragma unroll
        for (int k = 0; k < 2 * V; k++)
            d[k] = a[k >> 1];
        T *o = out + ((n * g.c + c) * g.oh + ih * fh) * g.ow + col * (2 * V);
        wk_up_stv<T, 2 * V>(o, d);
        if (fh == 2)
            wk_up_stv<T, 2 * V>(o + g.ow, d);
    }
}

#define WK_UP_NEAR2(B, V)                                                                      \
    WK_KERNEL up_near2_b##B##_v##V(wk_up_geom g, const void *x, void *out)                     \
    {                                                                                          \
        wk_up_near2<B, V>(g, x, out);                                                          \
    }
WK_UP_NEAR2(1, 1)
WK_UP_NEAR2(1, 16)
WK_UP_NEAR2(2, 1)
WK_UP_NEAR2(2, 8)
WK_UP_NEAR2(4, 1)
WK_UP_NEAR2(4, 4)
WK_UP_NEAR2(8, 1)
WK_UP_NEAR2(8, 2)

#define WK_UP_NEAREST(B)                                                                       \
    WK_KERNEL up_nearest_b##B(wk_up_geom g, const void *x, void *out)                          \
    {                                                                                          \
        wk_up_nearest<B>(g, x, out);                                                           \
    }
WK_UP_NEAREST(1)
WK_UP_NEAREST(2)
WK_UP_NEAREST(4)
WK_UP_NEAREST(8)

#define WK_UP_BILINEAR(dn, D)                                                                  \
    WK_KERNEL up_bilinear_##dn(wk_up_geom g, const void *x, void *out)                         \
    {                                                                                          \
        wk_up_bilinear<D>(g, x, out);                                                          \
    }
WK_UP_BILINEAR(bf16, WK_DT_BF16)
WK_UP_BILINEAR(f16, WK_DT_F16)
WK_UP_BILINEAR(f32, WK_DT_F32)
WK_UP_BILINEAR(f64, WK_DT_F64)
WK_UP_BILINEAR(f8e4m3, WK_DT_F8E4M3)
