/* pool.cu: avg_pool2d and max_pool2d (module "pool"), Candle's pools: no padding, no dilation.
 *
 * pool_<avg|max>_<dt>_<s|u>(g, x, out): out (N, C, OH, OW) contiguous, one thread per output
 * element; x (N, C, H, W) read through its strides (g.xs), `u` the variant for a unit inner
 * stride (the contiguous case: the column offset needs no multiply). Grid: x over the OH*OW
 * positions of a plane (256 per block, adjacent threads write adjacent outputs), y over
 * channels and z over images, both grid-stride (y, z <= 65535). The host guarantees
 * OH*OW < 2^31 (32-bit division for the position).
 * Semantics = src/cpu/cpu_pool.c: avg sums the window in row-major order in the compute type
 * (f32, f64 for f64), divides by kh*kw, rounds once; max returns the first NaN of the window in
 * row-major order, else the first largest element, copied bit for bit (every dtype). */
#include "gpu.h"

/* Mirrored by pool_geom in src/gpu/gpu_pool.c (all int64). */
struct wk_pool_geom {
    int64_t n, c, oh, ow, kh, kw, sh, sw;
    int64_t xs[4];
};

WK_DEV bool wk_pool_nan(float v) { return v != v; }
WK_DEV bool wk_pool_nan(double v) { return v != v; }
WK_DEV bool wk_pool_nan(int64_t v) { return (void)v, false; }

template <int D, bool UNIT, bool AVG>
WK_DEV void wk_pool(const wk_pool_geom &g, const void *xv, void *outv)
{
    typedef typename wk_t<D>::S S;
    typedef typename wk_t<D>::C C;
    const S *__restrict__ x = (const S *)xv;
    S *__restrict__ out = (S *)outv;
    const int64_t P = g.oh * g.ow;
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P)
        return;
    const uint32_t oh = (uint32_t)p / (uint32_t)g.ow, ow = (uint32_t)p - oh * (uint32_t)g.ow;
    const int64_t s2 = g.xs[2], s3 = UNIT ? 1 : g.xs[3];
    const int64_t woff = (int64_t)oh * g.sh * s2 + (int64_t)ow * g.sw * s3;
    for (int64_t n = blockIdx.z; n < g.n; n += gridDim.z)
        for (int64_t c = blockIdx.y; c < g.c; c += gridDim.y) {
            const S *win = x + n * g.xs[0] + c * g.xs[1] + woff;
            S res;
            if (AVG) {
                C acc = 0;
                for (int64_t i = 0; i < g.kh; i++)
                    for (int64_t k = 0; k < g.kw; k++)
                        acc += wk_t<D>::ld(win[i * s2 + k * s3]);
                res = wk_t<D>::st(acc / (C)(g.kh * g.kw));
            } else {
                res = win[0];
                C bv = wk_t<D>::ld(res);
                bool nan = wk_pool_nan(bv);
                for (int64_t i = 0; i < g.kh && !nan; i++)
                    for (int64_t k = 0; k < g.kw; k++) {
                        const S t = win[i * s2 + k * s3];
                        const C v = wk_t<D>::ld(t);
                        if (wk_pool_nan(v)) {
                            res = t;
                            nan = true;
                            break;
                        }
                        if (v > bv) {
                            res = t;
                            bv = v;
                        }
                    }
            }
            out[(n * g.c + c) * P + p] = res;
        }
}

/* ---- the 2x2 window, stride 2, unit inner stride: a thread makes 4 adjacent outputs of a row
 * from 8 adjacent inputs of each of its 2 input rows, loaded in accesses of up to 16 bytes (all
 * loads issued before any use) and stored as one access (two for 8-byte types). The window is
 * reduced exactly as above: the same elements in the same row-major order. The host guarantees
 * ow % 4 == 0, x and every row start aligned to the load width (min(16, 8 * sizeof(S)) bytes),
 * out aligned to min(16, 4 * sizeof(S)) bytes. */
template <int D, bool AVG> WK_DEV void wk_pool22(const wk_pool_geom &g, const void *xv, void *outv)
{
    typedef typename wk_t<D>::S S;
    typedef typename wk_t<D>::C C;
    const S *__restrict__ x = (const S *)xv;
    S *__restrict__ out = (S *)outv;
    const int64_t cols = g.ow / 4, items = g.n * g.c * g.oh * cols;
    const bool small = items <= 0xffffffffll; /* 32-bit divisions */
    for (int64_t t = wk_tid(); t < items; t += wk_nthreads()) {
        int64_t col, oh, c, n;
        if (small) {
            const uint32_t r = (uint32_t)t / (uint32_t)cols; /* (n, c, oh) */
            const uint32_t nc = r / (uint32_t)g.oh, n32 = nc / (uint32_t)g.c;
            col = (int64_t)((uint32_t)t - r * (uint32_t)cols);
            oh = (int64_t)(r - nc * (uint32_t)g.oh);
            c = (int64_t)(nc - n32 * (uint32_t)g.c);
            n = n32;
        } else {
            const int64_t r = t / cols, nc = r / g.oh;
            col = t - r * cols;
            oh = r - nc * g.oh;
            n = nc / g.c;
            c = nc - n * g.c;
        }
        const S *win = x + n * g.xs[0] + c * g.xs[1] + 2 * oh * g.xs[2] + col * 8;
        S a[8], b[8], o[4];
        wk_ldv<S, 8>(win, a);
        wk_ldv<S, 8>(win + g.xs[2], b);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const S w[4] = {a[2 * j], a[2 * j + 1], b[2 * j], b[2 * j + 1]};
            S res;
            if (AVG) {
                C acc = 0;
#pragma unroll
                for (int k = 0; k < 4; k++)
                    acc += wk_t<D>::ld(w[k]);
                res = wk_t<D>::st(acc / (C)4);
            } else {
                res = w[0];
                C bv = wk_t<D>::ld(res);
                bool nan = wk_pool_nan(bv);
#pragma unroll
                for (int k = 1; k < 4; k++) {
                    const C v = wk_t<D>::ld(w[k]);
                    if (nan) /* the first NaN stays (no break: the loop stays unrolled) */
                        continue;
                    if (wk_pool_nan(v)) {
                        res = w[k];
                        nan = true;
                    } else if (v > bv) {
                        res = w[k];
                        bv = v;
                    }
                }
            }
            o[j] = res;
        }
        S *dst = out + ((n * g.c + c) * g.oh + oh) * g.ow + col * 4;
        const int E = 4 * (int)sizeof(S) > 16 ? 16 / (int)sizeof(S) : 4;
#pragma unroll
        for (int s = 0; s < 4 / E; s++) {
            wk_pack<S, E> p;
#pragma unroll
            for (int k = 0; k < E; k++)
                p.v[k] = o[s * E + k];
            ((wk_pack<S, E> *)dst)[s].raw = p.raw;
        }
    }
}

#define WK_POOL(kind, AVG, dn, D)                                                              \
    WK_KERNEL pool_##kind##_##dn##_s(wk_pool_geom g, const void *x, void *out)                  \
    {                                                                                          \
        wk_pool<D, false, AVG>(g, x, out);                                                     \
    }                                                                                          \
    WK_KERNEL pool_##kind##_##dn##_u(wk_pool_geom g, const void *x, void *out)                  \
    {                                                                                          \
        wk_pool<D, true, AVG>(g, x, out);                                                      \
    }                                                                                          \
    WK_KERNEL pool_##kind##_##dn##_22(wk_pool_geom g, const void *x, void *out)                 \
    {                                                                                          \
        wk_pool22<D, AVG>(g, x, out);                                                          \
    }
#define WK_POOL_FLOAT(X, kind, AVG)                                                            \
    X(kind, AVG, bf16, WK_DT_BF16) X(kind, AVG, f16, WK_DT_F16) X(kind, AVG, f32, WK_DT_F32)   \
    X(kind, AVG, f64, WK_DT_F64) X(kind, AVG, f8e4m3, WK_DT_F8E4M3)
#define WK_POOL_INT(X, kind, AVG)                                                              \
    X(kind, AVG, u8, WK_DT_U8) X(kind, AVG, u32, WK_DT_U32) X(kind, AVG, i16, WK_DT_I16)       \
    X(kind, AVG, i32, WK_DT_I32) X(kind, AVG, i64, WK_DT_I64)
WK_POOL_FLOAT(WK_POOL, avg, true)
WK_POOL_FLOAT(WK_POOL, max, false)
WK_POOL_INT(WK_POOL, max, false)
