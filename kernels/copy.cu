/* copy.cu: const_set, copy_strided_src and copy2d (module "copy"). They move raw bits, so
 * kernels depend on a byte size B only. The host widens B (up to 16) when sizes, strides,
 * offsets and pointers allow, so contiguous runs move as 16-byte accesses.
 *
 * Kernels (host side: src/gpu/gpu_copy.c):
 *   const_set_c<B>(n, y, v)                  y[i] = v, i < n, contiguous (B in 1 2 4 8)
 *   const_set_s<B>(n, L, y, v)               y[offset of i in L] = v
 *   copy_u<B>(n, x, y)                       y[i] = x[i] (B in 1 2 4 8 16)
 *   copy_s<B>(n, L, x, y)                    y[i] = x[offset of i in L] (B in 1 2 4 8)
 *   copy_t<B>(nb, na, nc, sb, sc, x, y)      transposed: y[(b*na + a)*nc + c] = x[b*sb + a + c*sc]
 *                                            through 64x64 shared-memory tiles (B in 1 2 4 8)
 *   copy2d_u<B>(d1, d2, ss, ds, x, y)        y[r*ds + c] = x[r*ss + c], r < d1, c < d2 (units
 *                                            of B bytes, B in 1 2 4 8 16)
 * Pointers already include offsets; the value v holds the element's bits in its low B bytes. */
#include "gpu.h"

template <int B> WK_DEV void wk_const_set_c(int64_t n, void *y, uint64_t v)
{
    typedef typename wk_bits<B>::T T;
    const int N = 16 / B;
    const T val = (T)v;
    T *ys = (T *)y;
    const int64_t t0 = wk_tid(), nt = wk_nthreads();
    int64_t done = 0;
    if ((uintptr_t)y % 16 == 0) {
        wk_pack<T, N> p;
#pragma unroll
        for (int k = 0; k < N; k++)
            p.v[k] = val;
        const int64_t nv = n / N;
        for (int64_t i = t0; i < nv; i += nt)
            ((wk_pack<T, N> *)ys)[i].raw = p.raw;
        done = nv * N;
    }
    for (int64_t i = done + t0; i < n; i += nt)
        ys[i] = val;
}

template <int B> WK_DEV void wk_const_set_s(int64_t n, const wk_klay<1> &L, void *y, uint64_t v)
{
    typedef typename wk_bits<B>::T T;
    const T val = (T)v;
    for (int64_t i = wk_tid(); i < n; i += wk_nthreads()) {
        int64_t off;
        wk_koff(L, i, &off);
        ((T *)y)[off] = val;
    }
}

template <int B> WK_DEV void wk_copy_u(int64_t n, const void *x, void *y)
{
    typedef typename wk_bits<B>::T T;
    const T *xs = (const T *)x;
    T *ys = (T *)y;
    for (int64_t i = wk_tid(); i < n; i += wk_nthreads())
        ys[i] = xs[i];
}

template <int B> WK_DEV void wk_copy_s(int64_t n, const wk_klay<1> &L, const void *x, void *y)
{
    typedef typename wk_bits<B>::T T;
    const T *xs = (const T *)x;
    T *ys = (T *)y;
    for (int64_t i = wk_tid(); i < n; i += wk_nthreads()) {
        int64_t off;
        wk_koff(L, i, &off);
        ys[i] = xs[off];
    }
}

/* A batch of transposes: source dim a is contiguous, dim c has stride sc; the output is
 * row-major (b, a, c). A 64x64 tile is read along a and written along c, so every row of the
 * tile is one 256-byte run (for 4-byte elements) in both memories; the +1 column keeps the
 * column reads of shared memory free of bank conflicts. Blocks are 256 threads seen as 32x8,
 * each thread moving 16 elements of the tile, all 16 loads issued before the first store. */
#define WK_TILE 64
template <int B>
WK_DEV void wk_copy_t(int64_t nb, int64_t na, int64_t nc, int64_t sb, int64_t sc, const void *x,
                      void *y)
{
    typedef typename wk_bits<B>::T T;
    __shared__ T tile[WK_TILE][WK_TILE + 1];
    const T *xs = (const T *)x;
    T *ys = (T *)y;
    const int TX = 32, rows = WK_BLOCK / 32; /* 32 x 8 threads: a layout, not the warp size */
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
    const int64_t nta = (na + WK_TILE - 1) / WK_TILE, ntc = (nc + WK_TILE - 1) / WK_TILE;
    for (int64_t b = blockIdx.z; b < nb; b += gridDim.z)
        for (int64_t ta = blockIdx.y; ta < nta; ta += gridDim.y)
            for (int64_t tc = blockIdx.x; tc < ntc; tc += gridDim.x) {
                const int64_t a0 = ta * WK_TILE, c0 = tc * WK_TILE;
                const T *src = xs + b * sb;
                T *dst = ys + b * na * nc;
                if (a0 + WK_TILE <= na && c0 + WK_TILE <= nc) { /* a full tile */
                    T v[2][WK_TILE / rows];
#pragma unroll
                    for (int j = 0; j < WK_TILE / rows; j++)
#pragma unroll
                        for (int h = 0; h < 2; h++)
                            v[h][j] = src[a0 + tx + h * TX + (c0 + ty + j * rows) * sc];
#pragma unroll
                    for (int j = 0; j < WK_TILE / rows; j++)
#pragma unroll
                        for (int h = 0; h < 2; h++)
                            tile[ty + j * rows][tx + h * TX] = v[h][j];
                    __syncthreads();
#pragma unroll
                    for (int j = 0; j < WK_TILE / rows; j++)
#pragma unroll
                        for (int h = 0; h < 2; h++)
                            dst[(a0 + ty + j * rows) * nc + c0 + tx + h * TX] =
                                tile[tx + h * TX][ty + j * rows];
                } else {
#pragma unroll
                    for (int j = 0; j < WK_TILE / rows; j++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            const int k = ty + j * rows;
                            const int64_t a = a0 + tx + h * TX, c = c0 + k;
                            if (a < na && c < nc)
                                tile[k][tx + h * TX] = src[a + c * sc];
                        }
                    __syncthreads();
#pragma unroll
                    for (int j = 0; j < WK_TILE / rows; j++)
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            const int k = ty + j * rows;
                            const int64_t a = a0 + k, c = c0 + tx + h * TX;
                            if (a < na && c < nc)
                                dst[a * nc + c] = tile[tx + h * TX][k];
                        }
                }
                __syncthreads();
            }
}

template <int B>
WK_DEV void wk_copy2d(int64_t d1, int64_t d2, int64_t ss, int64_t ds, const void *x, void *y)
{
    typedef typename wk_bits<B>::T T;
    const T *xs = (const T *)x;
    T *ys = (T *)y;
    const int64_t n = d1 * d2;
    if (n <= 0xffffffffll) { /* 32-bit division: several times cheaper */
        const uint32_t w = (uint32_t)d2;
        for (int64_t i = wk_tid(); i < n; i += wk_nthreads()) {
            const uint32_t r = (uint32_t)i / w, c = (uint32_t)i - r * w;
            ys[(int64_t)r * ds + c] = xs[(int64_t)r * ss + c];
        }
    } else {
        for (int64_t i = wk_tid(); i < n; i += wk_nthreads()) {
            const int64_t r = i / d2, c = i - r * d2;
            ys[r * ds + c] = xs[r * ss + c];
        }
    }
}

#define WK_COPY_ELEM(B)                                                                        \
    WK_KERNEL const_set_c##B(int64_t n, void *y, uint64_t v) { wk_const_set_c<B>(n, y, v); }   \
    WK_KERNEL const_set_s##B(int64_t n, wk_klay<1> L, void *y, uint64_t v)                     \
    {                                                                                          \
        wk_const_set_s<B>(n, L, y, v);                                                         \
    }                                                                                          \
    WK_KERNEL copy_s##B(int64_t n, wk_klay<1> L, const void *x, void *y)                       \
    {                                                                                          \
        wk_copy_s<B>(n, L, x, y);                                                              \
    }                                                                                          \
    WK_KERNEL copy_t##B(int64_t nb, int64_t na, int64_t nc, int64_t sb, int64_t sc,            \
                        const void *x, void *y)                                                \
    {                                                                                          \
        wk_copy_t<B>(nb, na, nc, sb, sc, x, y);                                                \
    }
#define WK_COPY_UNIT(B)                                                                        \
    WK_KERNEL copy_u##B(int64_t n, const void *x, void *y) { wk_copy_u<B>(n, x, y); }          \
    WK_KERNEL copy2d_u##B(int64_t d1, int64_t d2, int64_t ss, int64_t ds, const void *x,       \
                          void *y)                                                             \
    {                                                                                          \
        wk_copy2d<B>(d1, d2, ss, ds, x, y);                                                    \
    }
WK_COPY_ELEM(1)
WK_COPY_ELEM(2)
WK_COPY_ELEM(4)
WK_COPY_ELEM(8)
WK_COPY_UNIT(1)
WK_COPY_UNIT(2)
WK_COPY_UNIT(4)
WK_COPY_UNIT(8)
WK_COPY_UNIT(16)
