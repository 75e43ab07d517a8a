/* rows.h: the block-wide reductions that the row kernels (softmax.cu, norm.cu) share: a plain
 * one (sums, maxima) and the merge of mean/variance partials (Chan, Golub and LeVeque) that
 * layer_norm uses instead of sum(x) then sum((x - mean)^2): each thread's partial from sums
 * shifted by one of its values, merged across threads, exact for constant rows. */
#ifndef WK_ROWS_H
#define WK_ROWS_H

#include "gpu.h"

struct wk_sum_op {
    template <class C> __device__ __forceinline__ C operator()(C a, C b) const { return a + b; }
};

/* v combined over the G threads of each aligned group (G a power of two <= 256), returned to
 * every thread of the group. Every thread of the block calls it (it synchronises once). Shuffles
 * within gw = min(G, warpSize) lanes leave each gw-lane part's total in its first lane, which
 * writes it to buf; after the one __syncthreads every thread adds its group's G/gw parts in
 * index order: correct for 32 and 64 lanes, and the order is fixed, so the result does not
 * depend on timing (and is the one of a tree over the warps, then the warps in order).
 * buf: WK_BLOCK shared values that no thread may read or write between the previous call's
 * __syncthreads and this one's; callers alternate two buffers (a thread that writes buf[.] in
 * call c has passed call c-1's barrier, which every reader of call c-2 reached after reading). */
template <class C, class F> WK_DEV C wk_row_allreduce(C v, int G, const F &f, C *buf)
{
    const int W = warpSize, tid = threadIdx.x;
    const int gw = G < W ? G : W;
#pragma unroll 1
    for (int s = gw / 2; s > 0; s >>= 1)
        v = f(v, WK_SHFL_DOWN(v, s));
    if (tid % gw == 0)
        buf[tid / gw] = v;
    __syncthreads();
    const int np = G / gw, p0 = (tid / G) * np; /* the group's parts: buf[p0 .. p0 + np) */
    v = buf[p0];
#pragma unroll 1
    for (int k = 1; k < np; k++)
        v = f(v, buf[p0 + k]);
    return v;
}

/* A partial mean/variance: n values with mean m and sum of squared deviations q (M2). */
template <class C> struct wk_mv {
    C n, m, q;
};

/* a then b merged (b's values follow a's): n = na + nb, d = mb - ma, m = ma + d * nb / n,
 * q = qa + qb + d^2 * na * nb / n. No cancellation (q is a sum of non-negative terms), and a
 * constant row merges exactly: d = 0, so m stays the row's value and q stays 0. An empty side
 * (n = 0) gives the other one unchanged. */
template <class C> WK_DEV wk_mv<C> wk_mv_merge(const wk_mv<C> &a, const wk_mv<C> &b)
{
    if (b.n == 0)
        return a;
    if (a.n == 0)
        return b;
    wk_mv<C> r;
    const C d = b.m - a.m, f = b.n / (a.n + b.n);
    r.n = a.n + b.n;
    r.m = a.m + d * f;
    r.q = (a.q + b.q) + d * d * a.n * f;
    return r;
}

/* A thread's partial from sums shifted by one of its own values K: s = sum(x - K), q =
 * sum((x - K)^2) over n values gives m = K + s/n, q = q - s * (s/n) (clamped at 0; NaN kept).
 * The shift is a value of the data, so |m - K| is at most about sqrt(n) standard deviations and
 * the subtraction loses at most log2(n) bits (n <= 32 in registers), where E[x^2] - m^2 loses
 * all of them for |m| >> std; and a constant row has x - K = 0: m = K exactly, q = 0. Two
 * independent sums per value (no division, no dependent chain through m as in Welford's update),
 * the cheap part of a memory-bound kernel. */
template <class C> WK_DEV wk_mv<C> wk_mv_shifted(C n, C K, C s, C q)
{
    wk_mv<C> r = {0, 0, 0};
    if (n == 0)
        return r;
    const C a = s / n;
    r.n = n;
    r.m = K + a;
    r.q = q - s * a;
    if (r.q < 0)
        r.q = 0;
    return r;
}

/* wk_row_allreduce for wk_mv partials: the same groups, shuffles, barrier and fixed order (the
 * parts of a group merged in index order, so lower lanes come first). buf: WK_BLOCK partials,
 * alternated between calls as wk_row_allreduce's. */
template <class C> WK_DEV wk_mv<C> wk_row_allreduce_mv(wk_mv<C> v, int G, wk_mv<C> *buf)
{
    const int W = warpSize, tid = threadIdx.x;
    const int gw = G < W ? G : W;
#pragma unroll 1
    for (int s = gw / 2; s > 0; s >>= 1) {
        wk_mv<C> o;
        o.n = WK_SHFL_DOWN(v.n, s);
        o.m = WK_SHFL_DOWN(v.m, s);
        o.q = WK_SHFL_DOWN(v.q, s);
        v = wk_mv_merge(v, o);
    }
    if (tid % gw == 0)
        buf[tid / gw] = v;
    __syncthreads();
    const int np = G / gw, p0 = (tid / G) * np;
    v = buf[p0];
#pragma unroll 1
    for (int k = 1; k < np; k++)
        v = wk_mv_merge(v, buf[p0 + k]);
    return v;
}

#endif
