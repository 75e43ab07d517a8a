/* upsample.cu: upsample_nearest1d/2d and upsample_bilinear2d (module "upsample").
 *
 * x (N, C, IH, IW) read through its strides (the 1-D op is (N, C, 1, L)) -> out (N, C, OH, OW)
 * contiguous, one thread per output element. Grid: x over the OH*OW positions of a plane (256
 * per block, adjacent threads write adjacent outputs), y over channels and z over images, both
 * grid-stride. The host guarantees OH*OW < 2^31 (32-bit division for the position).
 *   up_nearest_b<B>(g, x, out): elements of B bytes copied. Source index per dim (Candle's CPU
 *       rule, src/cpu/cpu_upsample.c): min(in - 1, (int64)((double)dst * r)), r = in/out computed
 *       in f64 by the host exactly as the CPU does.
 *   up_bilinear_<dt>, up_bilinear4_<dt>(g, x, out): 1 or 4 adjacent outputs of a row per
 *       thread, the geometry computed once and reused over the planes. PyTorch's upsample_bilinear2d in the compute type CT (f32, f64
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

/* ---- nearest, exact x2 along W (and x1 or x2 along H): the fast path of the contiguous-row
 * case. With out = 2 * in the CPU's ratio in/out is exactly 0.5 in f64, d * 0.5 is exact and its
 * truncation is d >> 1 (<= in - 1): source column ow >> 1, source row oh / fh (fh = oh / ih is 1
 * or 2; with fh = 1 the ratio is exactly 1). So one input element feeds 2 adjacent outputs in each
 * of fh rows: a thread loads V adjacent inputs as one access (8 bytes when the host found the
 * rows aligned, else V = 1) and stores them doubled, one access of 2 * V * B bytes (16 when
 * vectorised), to fh rows. The host guarantees ow == 2 * iw, oh == fh * ih, iw % V == 0,
 * xs[3] == 1 (or iw == 1), x and every row start aligned to V * B bytes, out aligned to
 * 2 * V * B bytes. */
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

/* One thread per V adjacent outputs of a row (the host guarantees ow % V == 0 and out aligned
 * to V * sizeof(S), 16 at most): their source indices and weights are computed once, then reused
 * for every (n, c) plane the thread visits (grid y over channels, z over images, both
 * grid-stride; the host sizes them so that each thread covers several planes). */
template <int D, int V> WK_DEV void wk_up_bilinear(const wk_up_geom &g, const void *xv, void *outv)
{
    typedef typename wk_t<D>::S S;
    typedef typename wk_t<D>::C CT;
    const S *__restrict__ x = (const S *)xv;
    S *__restrict__ out = (S *)outv;
    const int E = V * (int)sizeof(S) > 16 ? 16 / (int)sizeof(S) : V; /* elements per store */
    const int64_t P = g.oh * g.ow, units = g.ow / V;
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= g.oh * units)
        return;
    const uint32_t oh = (uint32_t)p / (uint32_t)units, q = (uint32_t)p - oh * (uint32_t)units;
    int64_t h0, h1;
    CT hl0, hl1;
    wk_lin<CT>(oh, g.ih, g.oh, g.ac != 0, (CT)g.rh, h0, h1, hl0, hl1);
    const int64_t r0 = h0 * g.xs[2], r1 = h1 * g.xs[2];
    int64_t a[V], b[V];
    CT wl0[V], wl1[V];
#pragma unroll
    for (int k = 0; k < V; k++) {
        int64_t w0, w1;
        wk_lin<CT>((int64_t)q * V + k, g.iw, g.ow, g.ac != 0, (CT)g.rw, w0, w1, wl0[k], wl1[k]);
        a[k] = w0 * g.xs[3];
        b[k] = w1 * g.xs[3];
    }
    const int64_t po = (int64_t)oh * g.ow + (int64_t)q * V;
    for (int64_t n = blockIdx.z; n < g.n; n += gridDim.z)
        for (int64_t c = blockIdx.y; c < g.c; c += gridDim.y) {
            const S *base = x + n * g.xs[0] + c * g.xs[1];
            wk_pack<S, E> v[V / E]; /* the outputs, as the accesses that store them */
#pragma unroll
            for (int k = 0; k < V; k++) {
                const CT top = wl0[k] * wk_t<D>::ld(base[r0 + a[k]]) +
                               wl1[k] * wk_t<D>::ld(base[r0 + b[k]]);
                const CT bot = wl0[k] * wk_t<D>::ld(base[r1 + a[k]]) +
                               wl1[k] * wk_t<D>::ld(base[r1 + b[k]]);
                v[k / E].v[k % E] = wk_t<D>::st(hl0 * top + hl1 * bot);
            }
            wk_pack<S, E> *o = (wk_pack<S, E> *)(out + (n * g.c + c) * P + po);
#pragma unroll
            for (int s = 0; s < V / E; s++)
                o[s].raw = v[s].raw;
        }
}

/* Units of a thread per step (loads of all units issued before any store). */
#define WK_UP_U 4

/* (input offset, output row) of item t = (n, c, ih, col) of the x2 fast path. The output row
 * is fh * r with r = (n * C + c) * IH + ih (oh == fh * ih). The host sets n = c = 1 when x's
 * (n, c, ih) collapse into one stride (then r * xs[2] is the row): one division per item. */
WK_DEV void wk_up_near2_at(const wk_up_geom &g, int64_t t, int64_t cols, bool small, int64_t &xo,
                           int64_t &r, int64_t &col)
{
    if (small) {
        const uint32_t r32 = (uint32_t)t / (uint32_t)cols;
        col = (int64_t)((uint32_t)t - r32 * (uint32_t)cols);
        r = r32;
    } else {
        r = t / cols;
        col = t - r * cols;
    }
    if (g.n == 1 && g.c == 1) {
        xo = r * g.xs[2];
        return;
    }
    int64_t ih, c, n;
    if (small) {
        const uint32_t nc = (uint32_t)r / (uint32_t)g.ih, n32 = nc / (uint32_t)g.c;
        ih = (int64_t)((uint32_t)r - nc * (uint32_t)g.ih);
        c = (int64_t)(nc - n32 * (uint32_t)g.c);
        n = n32;
    } else {
        const int64_t nc = r / g.ih;
        ih = r - nc * g.ih;
        n = nc / g.c;
        c = nc - n * g.c;
    }
    xo = n * g.xs[0] + c * g.xs[1] + ih * g.xs[2];
}

/* A thread takes WK_UP_U items (V inputs each, 8 bytes when vectorised) nt apart: all loads
 * first, then per item 2 * V outputs (16 bytes: a warp's store covers 512 contiguous bytes of
 * an output row) to fh rows. */
template <int B, int V> WK_DEV void wk_up_near2(const wk_up_geom &g, const void *xv, void *outv)
{
    typedef typename wk_bits<B>::T T;
    const T *__restrict__ x = (const T *)xv;
    T *__restrict__ out = (T *)outv;
    const int64_t cols = g.iw / V, items = g.n * g.c * g.ih * cols;
    const int64_t fh = g.oh / g.ih; /* 1 or 2 */
    const bool small = items <= 0xffffffffll; /* 32-bit divisions */
    const int64_t nt = wk_nthreads();
    for (int64_t t0 = wk_tid(); t0 < items; t0 += WK_UP_U * nt) {
        T a[WK_UP_U][V];
        int64_t o[WK_UP_U];
#pragma unroll
        for (int u = 0; u < WK_UP_U; u++) {
            const int64_t t = t0 + u * nt;
            if (t < items) {
                int64_t xo, r, col;
                wk_up_near2_at(g, t, cols, small, xo, r, col);
                wk_ldv<T, V>(x + xo + col * V, a[u]);
                o[u] = r * fh * g.ow + col * (2 * V);
            }
        }
#pragma unroll
        for (int u = 0; u < WK_UP_U; u++) {
            if (t0 + u * nt < items) {
                T d[2 * V];
#pragma unroll
                for (int k = 0; k < 2 * V; k++)
                    d[k] = a[u][k >> 1];
                wk_up_stv<T, 2 * V>(out + o[u], d);
                if (fh == 2)
                    wk_up_stv<T, 2 * V>(out + o[u] + g.ow, d);
            }
        }
    }
}

#define WK_UP_NEAR2(B, V)                                                                      \
    WK_KERNEL up_near2_b##B##_v##V(wk_up_geom g, const void *x, void *out)                     \
    {                                                                                          \
        wk_up_near2<B, V>(g, x, out);                                                          \
    }
WK_UP_NEAR2(1, 1)
WK_UP_NEAR2(1, 8)
WK_UP_NEAR2(2, 1)
WK_UP_NEAR2(2, 4)
WK_UP_NEAR2(4, 1)
WK_UP_NEAR2(4, 2)
WK_UP_NEAR2(8, 1)

#define WK_UP_NEAREST(B)                                                                       \
    WK_KERNEL up_nearest_b##B(wk_up_geom g, const void *x, void *out)                          \
    {                                                                                          \
        wk_up_nearest<B>(g, x, out);                                                           \
    }
WK_UP_NEAREST(1)
WK_UP_NEAREST(2)
WK_UP_NEAREST(4)
WK_UP_NEAREST(8)

/* up_bilinear4_<dt> only for f32, f64, bf16: with f16 and f8e4m3 (longer conversions) ptxas
 * spills at 4 outputs per thread; those keep 1 (the host picks, gpu_upsample.c). */
#define WK_UP_BILINEAR(dn, D)                                                                  \
    WK_KERNEL up_bilinear_##dn(wk_up_geom g, const void *x, void *out)                         \
    {                                                                                          \
        wk_up_bilinear<D, 1>(g, x, out);                                                       \
    }
#define WK_UP_BILINEAR4(dn, D)                                                                 \
    WK_KERNEL up_bilinear4_##dn(wk_up_geom g, const void *x, void *out)                        \
    {                                                                                          \
        wk_up_bilinear<D, 4>(g, x, out);                                                       \
    }
WK_UP_BILINEAR(bf16, WK_DT_BF16)
WK_UP_BILINEAR(f16, WK_DT_F16)
WK_UP_BILINEAR(f32, WK_DT_F32)
WK_UP_BILINEAR(f64, WK_DT_F64)
WK_UP_BILINEAR(f8e4m3, WK_DT_F8E4M3)
WK_UP_BILINEAR4(bf16, WK_DT_BF16)
WK_UP_BILINEAR4(f32, WK_DT_F32)
WK_UP_BILINEAR4(f64, WK_DT_F64)
