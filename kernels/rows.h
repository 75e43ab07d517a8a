/* rows.h: the block-wide reduction that the row kernels (softmax.cu, norm.cu) share. */
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
    /* both loops unrolled to their bounds with uniform predicates, as wk_row_allmerge's below:
     * the parts' shared-memory reads issue together (the same order, the same result) */
#pragma unroll
    for (int s = 32; s > 0; s >>= 1)
        if (s < gw)
            v = f(v, WK_SHFL_DOWN(v, s));
    if (tid % gw == 0)
        buf[tid / gw] = v;
    __syncthreads();
    const int np = G / gw, p0 = (tid / G) * np; /* the group's parts: buf[p0 .. p0 + np) */
    v = buf[p0];
#pragma unroll
    for (int k = 1; k < WK_BLOCK / 32; k++)
        if (k < np)
            v = f(v, buf[p0 + k]);
    return v;
}

/* As wk_row_allreduce for a partial of NP values p[0..NP) (e.g. layer_norm's count, mean and
 * centred sum of squares; softmax's max and scaled sum), merged by f(a, b): a = a (+) b, a
 * merge that need not be a plain sum. Same shape and order: shuffles within gw = min(G,
 * warpSize) lanes, one __syncthreads, then each thread merges its group's G/gw parts in index
 * order (fixed on 32 and 64 lanes). Both loops are unrolled to their bounds (gw <= 64, so
 * shuffle distances <= 32; G/gw <= WK_BLOCK/32 = 8, since G/gw > 1 only when gw = warpSize >=
 * 32) with uniform predicates, so the shared-memory reads of the parts are issued together
 * rather than one loop trip each (the row's latency chain between the barrier and the stores).
 * buf: NP x WK_BLOCK shared values, alternated between calls as wk_row_allreduce's. */
template <int NP, class C, class F> WK_DEV void wk_row_allmerge(C (&p)[NP], int G, const F &f,
                                                                C (*buf)[WK_BLOCK])
{
    const int W = warpSize, tid = threadIdx.x;
    const int gw = G < W ? G : W;
#pragma unroll
    for (int s = 32; s > 0; s >>= 1)
        if (s < gw) { /* uniform: every lane of the warp shuffles */
            C q[NP];
#pragma unroll
            for (int i = 0; i < NP; i++)
                q[i] = WK_SHFL_DOWN(p[i], s);
            f(p, q);
        }
    if (tid % gw == 0)
#pragma unroll
        for (int i = 0; i < NP; i++)
            buf[i][tid / gw] = p[i];
    __syncthreads();
    const int np = G / gw, p0 = (tid / G) * np;
#pragma unroll
    for (int i = 0; i < NP; i++)
        p[i] = buf[i][p0];
#pragma unroll
    for (int k = 1; k < WK_BLOCK / 32; k++)
        if (k < np) {
            C q[NP];
#pragma unroll
            for (int i = 0; i < NP; i++)
                q[i] = buf[i][p0 + k];
            f(p, q);
        }
}

#endif
