/* reduce.cu: sum, min, max, argmin, argmax over any set of dims (module "reduce").
 *
 * The host splits the input into a kept layout K (M outputs, row-major) and a reduced layout R
 * (L elements per output, row-major: the index argmin/argmax report), both collapsed; output o
 * reduces x[K(o) + R(j)], j < L. Three kernels per (op, dtype):
 *   reduce_rows_<op>_<dt>(x, out, pv, pi, M, L, S, G, K, R)
 *       a group of G threads (a power of two <= 256) reduces one output, or one of S slices of
 *       it; 16-byte loads when R is contiguous (reductions over the last dims, or everything);
 *   reduce_cols_<op>_<dt>(x, out, pv, pi, M, L, S, BX, K, R)
 *       a block of BX x (256/BX) threads: adjacent threads take adjacent outputs (coalesced when
 *       K's inner stride is 1, e.g. reducing dim 0 of a row-major matrix), the 256/BX rows of
 *       threads and the S slices (grid.y) split L;
 *   reduce_colv_sum_<dt>(x, out, pv, M, L, S, st)
 *       sums only, kept layout contiguous and rows 16-byte aligned (st: the reduced stride):
 *       reduce_cols with BX = 32 threads of 16/sizeof(dt) adjacent outputs each, 16-byte loads;
 *   reduce_fin_<op>_<dt>(pv, pi, out, M, S, G)
 *       second pass when S > 1: combines the S partials of each output (pv/pi: [M][S], scratch).
 *
 * Semantics (docs/semantics.md, equal to src/cpu/cpu_reduce.c): float sums accumulate in f32
 * (f64 for f64) in a tree order and round once; integer sums wrap (uint64 accumulator,
 * truncated). min/max/argmin/argmax choose one element: the first NaN, else the first extreme,
 * so min/max return that element's value and ties resolve to the lowest index in any order of
 * combination. Compute happens in f32 for bf16/f16/f8e4m3 (exact: the values are not
 * changed), int64 for integers. */
#include "gpu.h"

template <bool B, class T, class F> struct wk_if { typedef T type; };
template <class T, class F> struct wk_if<false, T, F> { typedef F type; };

template <class V> struct wk_lim;
template <> struct wk_lim<float> {
    WK_DEV float hi(void) { return wk_inf_f32(); }
    WK_DEV float lo(void) { return -wk_inf_f32(); }
};
template <> struct wk_lim<double> {
    WK_DEV double hi(void) { return wk_inf_f64(); }
    WK_DEV double lo(void) { return -wk_inf_f64(); }
};
template <> struct wk_lim<int64_t> {
    WK_DEV int64_t hi(void) { return (int64_t)0x7fffffffffffffffll; }
    WK_DEV int64_t lo(void) { return -(int64_t)0x7fffffffffffffffll - 1; }
};
template <> struct wk_lim<uint64_t> { /* sums only: no extremes needed */
    WK_DEV uint64_t hi(void) { return 0; }
    WK_DEV uint64_t lo(void) { return 0; }
};

WK_DEV bool wk_isnan(float v) { return v != v; }
WK_DEV bool wk_isnan(double v) { return v != v; }
WK_DEV bool wk_isnan(int64_t v) { return (void)v, false; }
WK_DEV bool wk_isnan(uint64_t v) { return (void)v, false; }

#define WK_NO_INDEX ((int64_t)0x7fffffffffffffffll)

/* Facts of one (dtype, kind): kind SUM, or EXT (min max argmin argmax, the op chosen at run
 * time: one code body for the four). V is the value type the reduction carries. */
template <int DT, bool SUM> struct wk_red {
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    typedef typename wk_if<wk_t<DT>::is_int != 0, typename wk_if<SUM, uint64_t, int64_t>::type,
                           C>::type V;
    enum { idx = !SUM };
    bool is_min, is_arg; /* uniform over the grid */

    __device__ __forceinline__ explicit wk_red(int op)
        : is_min(op == WK_K_MIN || op == WK_K_ARGMIN),
          is_arg(op == WK_K_ARGMIN || op == WK_K_ARGMAX)
    {
    }
    WK_DEV V ld(S s) { return (V)wk_t<DT>::ld(s); }
    __device__ __forceinline__ V identity(void) const
    {
        return SUM ? (V)0 : is_min ? wk_lim<V>::hi() : wk_lim<V>::lo();
    }
    /* (av, ai) <- the combination of (av, ai) and (bv, bi). The first NaN wins, else the
     * extreme, ties to the lower index: order-independent, so any tree gives the CPU's pick. */
    __device__ __forceinline__ void comb(V &av, int64_t &ai, V bv, int64_t bi) const
    {
        if (SUM) {
            av = av + bv;
            return;
        }
        const bool an = wk_isnan(av), bn = wk_isnan(bv);
        bool take;
        if (an || bn)
            take = !an || (bn && bi < ai);
        else
            take = (is_min ? bv < av : bv > av) || (bv == av && bi < ai);
        if (take) {
            av = bv;
            ai = bi;
        }
    }
    /* The same when bi is known to exceed every index already folded into (av, ai) (one
     * thread's elements, in order): no tie test. MIN is is_min, fixed at compile time. The
     * identity (ai = WK_NO_INDEX) yields to any element, as a tie with it would in comb. */
    template <bool MIN>
    __device__ __forceinline__ void seq(V &av, int64_t &ai, V bv, int64_t bi) const
    {
        if (SUM) {
            av = av + bv;
            return;
        }
        /* !(bv <= av): bv > av or bv is NaN; a NaN in av stays (the first NaN) */
        const bool take =
            !wk_isnan(av) && ((MIN ? !(bv >= av) : !(bv <= av)) || ai == WK_NO_INDEX);
        if (take) {
            av = bv;
            ai = bi;
        }
    }
    __device__ __forceinline__ void store(void *out, int64_t o, V v, int64_t i) const
    {
        if (!SUM && is_arg)
            ((uint32_t *)out)[o] = (uint32_t)i;
        else
            ((S *)out)[o] = wk_t<DT>::st((C)v);
    }
};

/* Reduces (v, i) over each aligned group of G threads (G a power of two <= 256, uniform in the
 * block; every thread of the block calls it). The result is valid in the group's first thread.
 * Warp shuffles within min(G, warpSize) lanes, then shared memory across the warps of a group:
 * correct for 32 and 64 lanes. */
template <class RD>
WK_DEV void wk_group_reduce(const RD &rd, typename RD::V &v, int64_t &i, int G)
{
    typedef typename RD::V V;
    const int W = warpSize;
    const int gw = G < W ? G : W;
#pragma unroll 1
    for (int s = gw / 2; s > 0; s >>= 1) {
        const V ov = WK_SHFL_DOWN(v, s);
        const int64_t oi = RD::idx ? WK_SHFL_DOWN(i, s) : 0;
        rd.comb(v, i, ov, oi);
    }
    if (G <= W)
        return;
    __shared__ V sv[WK_BLOCK / 32];
    __shared__ int64_t si[WK_BLOCK / 32];
    const int wid = threadIdx.x / W;
    if (threadIdx.x % W == 0) {
        sv[wid] = v;
        si[wid] = i;
    }
    __syncthreads();
    if (threadIdx.x % G == 0) {
#pragma unroll 1
        for (int k = 1; k < G / W; k++)
            rd.comb(v, i, sv[wid + k], si[wid + k]);
    }
}

/* One thread's part of x[p + j], j0 <= j < j1, contiguous: every G-th element (scalar head up
 * to 16-byte alignment, then 16-byte vectors, 4 loads issued before use, then a scalar tail),
 * folded in increasing j. */
template <class RD, bool MIN>
WK_DEV void wk_rows_contig(const RD &rd, const typename RD::S *p, int64_t j0, int64_t j1,
                           int lane, int G, typename RD::V &v, int64_t &vi)
{
    typedef typename RD::S ST;
    const int N = 16 / (int)sizeof(ST);
    int64_t h = (int64_t)((16 - (uintptr_t)(p + j0) % 16) % 16 / sizeof(ST));
    if (h > j1 - j0)
        h = j1 - j0;
#pragma unroll 1
    for (int64_t j = j0 + lane; j < j0 + h; j += G)
        rd.template seq<MIN>(v, vi, RD::ld(p[j]), j);
    const int64_t jv = j0 + h, nv = (j1 - jv) / N;
    const wk_pack<ST, N> *pp = (const wk_pack<ST, N> *)(p + jv);
    int64_t t = lane;
#pragma unroll 1
    for (; t + 3 * G < nv; t += 4 * G) {
        wk_pack<ST, N> q[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            q[u].raw = pp[t + u * G].raw;
        if (RD::idx && 4 * N * sizeof(typename RD::V) <= 128) {
            /* extremes (when the 4N values fit in 32 registers): an ordered tree over the 4N loaded elements (left halves hold the lower
             * indices, so the right one wins only when strictly better or the first NaN), with
             * small local indices; then one fold into (v, vi). Short dependency chains. */
            typename RD::V e[4 * N];
            int l[4 * N];
#pragma unroll
            for (int u = 0; u < 4; u++)
#pragma unroll
                for (int k = 0; k < N; k++) {
                    e[u * N + k] = RD::ld(q[u].v[k]);
                    l[u * N + k] = u * N + k;
                }
#pragma unroll
            for (int w = 1; w < 4 * N; w *= 2)
#pragma unroll
                for (int a = 0; a + w < 4 * N; a += 2 * w) {
                    const typename RD::V x = e[a], y = e[a + w];
                    if (!wk_isnan(x) && (MIN ? !(y >= x) : !(y <= x))) {
                        e[a] = y;
                        l[a] = l[a + w];
                    }
                }
            const int u0 = l[0] / N, k0 = l[0] % N;
            rd.template seq<MIN>(v, vi, e[0], jv + (t + u0 * G) * N + k0);
        } else {
#pragma unroll
            for (int u = 0; u < 4; u++)
#pragma unroll
                for (int k = 0; k < N; k++)
                    rd.template seq<MIN>(v, vi, RD::ld(q[u].v[k]), jv + (t + u * G) * N + k);
        }
    }
#pragma unroll 1
    for (; t < nv; t += G) {
        wk_pack<ST, N> q;
        q.raw = pp[t].raw;
#pragma unroll
        for (int k = 0; k < N; k++)
            rd.template seq<MIN>(v, vi, RD::ld(q.v[k]), jv + t * N + k);
    }
#pragma unroll 1
    for (int64_t j = jv + nv * N + lane; j < j1; j += G)
        rd.template seq<MIN>(v, vi, RD::ld(p[j]), j);
}

template <int DT, bool SUM>
WK_DEV void wk_reduce_rows(int op, const void *x, void *out, void *pv, void *pi, int64_t M,
                           int64_t L, int32_t S, int32_t G, const wk_klay<1> &K,
                           const wk_klay<1> &R)
{
    typedef wk_red<DT, SUM> RD;
    const RD rd(op);
    typedef typename RD::V V;
    typedef typename RD::S ST;
    const ST *xs = (const ST *)x;
    const int g = threadIdx.x / G, lane = threadIdx.x % G;
    const int64_t w = (int64_t)blockIdx.x * (WK_BLOCK / G) + g; /* (output, slice) */
    const bool valid = w < M * S;
    V v = rd.identity();
    int64_t vi = WK_NO_INDEX;
    if (valid) {
        const int64_t o = w / S, s = w - o * S;
        const int64_t chunk = (L + S - 1) / S;
        const int64_t j0 = s * chunk;
        int64_t j1 = j0 + chunk < L ? j0 + chunk : L;
        if (j1 < j0)
            j1 = j0;
        int64_t base;
        wk_koff(K, o, &base);
        if (R.rank == 1 && R.st[0][0] == 1) {
            if (SUM || !rd.is_min)
                wk_rows_contig<RD, false>(rd, xs + base, j0, j1, lane, G, v, vi);
            else
                wk_rows_contig<RD, true>(rd, xs + base, j0, j1, lane, G, v, vi);
        } else {
#pragma unroll 1
            for (int64_t j = j0 + lane; j < j1; j += G) {
                int64_t off;
                wk_koff(R, j, &off);
                rd.comb(v, vi, RD::ld(xs[base + off]), j);
            }
        }
    }
    wk_group_reduce(rd, v, vi, G);
    if (valid && lane == 0) {
        if (S == 1) {
            rd.store(out, w, v, vi);
        } else {
            ((V *)pv)[w] = v;
            if (RD::idx)
                ((int64_t *)pi)[w] = vi;
        }
    }
}

template <int DT, bool SUM>
WK_DEV void wk_reduce_cols(int op, const void *x, void *out, void *pv, void *pi, int64_t M,
                           int64_t L, int32_t S, int32_t BX, const wk_klay<1> &K,
                           const wk_klay<1> &R)
{
    typedef wk_red<DT, SUM> RD;
    const RD rd(op);
    typedef typename RD::V V;
    typedef typename RD::S ST;
    __shared__ V sv[WK_BLOCK];
    __shared__ int64_t si[WK_BLOCK];
    const ST *xs = (const ST *)x;
    const int BY = WK_BLOCK / BX;
    const int tx = threadIdx.x % BX, ty = threadIdx.x / BX;
    const int64_t o = (int64_t)blockIdx.x * BX + tx;
    const int64_t s = blockIdx.y;
    V v = rd.identity();
    int64_t vi = WK_NO_INDEX;
    if (o < M) {
        const int64_t chunk = (L + S - 1) / S;
        const int64_t j0 = s * chunk;
        const int64_t j1 = j0 + chunk < L ? j0 + chunk : L;
        int64_t base;
        wk_koff(K, o, &base);
        if (R.rank == 1) {
            const int64_t st = R.st[0][0];
#pragma unroll 4
            for (int64_t j = j0 + ty; j < j1; j += BY)
                rd.comb(v, vi, RD::ld(xs[base + j * st]), j);
        } else {
#pragma unroll 1
            for (int64_t j = j0 + ty; j < j1; j += BY) {
                int64_t off;
                wk_koff(R, j, &off);
                rd.comb(v, vi, RD::ld(xs[base + off]), j);
            }
        }
    }
    sv[threadIdx.x] = v;
    si[threadIdx.x] = vi;
    __syncthreads();
    if (ty == 0 && o < M) {
#pragma unroll 1
        for (int k = 1; k < BY; k++)
            rd.comb(v, vi, sv[k * BX + tx], si[k * BX + tx]);
        if (S == 1) {
            rd.store(out, o, v, vi);
        } else {
            ((V *)pv)[o * S + s] = v;
            if (RD::idx)
                ((int64_t *)pi)[o * S + s] = vi;
        }
    }
}

/* Sums down columns of a row-major block with 16-byte loads: the kept layout is contiguous
 * (output o at x[o], element j at x[o + j*st]), each thread adds N adjacent outputs, a block
 * is 32 such threads across by 8 down (8 rows at a time), grid.y the S slices of L. Per output,
 * the order of the additions is that of reduce_cols with 8 rows of threads. */
template <int DT>
WK_DEV void wk_reduce_colv(const void *x, void *out, void *pv, int64_t M, int64_t L, int32_t S,
                           int64_t st)
{
    typedef wk_red<DT, true> RD;
    typedef typename RD::V V;
    typedef typename RD::S ST;
    const int N = 16 / (int)sizeof(ST), BX = 32, BY = WK_BLOCK / 32;
    __shared__ V sv[WK_BLOCK];
    const int tx = threadIdx.x % BX, ty = threadIdx.x / BX;
    const int64_t o0 = ((int64_t)blockIdx.x * BX + tx) * N;
    const int64_t s = blockIdx.y;
    V v[N];
#pragma unroll
    for (int k = 0; k < N; k++)
        v[k] = 0;
    if (o0 < M) {
        const int64_t chunk = (L + S - 1) / S;
        const int64_t j0 = s * chunk;
        const int64_t j1 = j0 + chunk < L ? j0 + chunk : L;
        const ST *p = (const ST *)x + o0;
        int64_t j = j0 + ty;
#pragma unroll 1
        for (; j + 3 * BY < j1; j += 4 * BY) {
            wk_pack<ST, N> q[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                q[u].raw = ((const wk_pack<ST, N> *)(p + (j + u * BY) * st))->raw;
#pragma unroll
            for (int u = 0; u < 4; u++)
#pragma unroll
                for (int k = 0; k < N; k++)
                    v[k] = v[k] + RD::ld(q[u].v[k]);
        }
#pragma unroll 1
        for (; j < j1; j += BY) {
            wk_pack<ST, N> q;
            q.raw = ((const wk_pack<ST, N> *)(p + j * st))->raw;
#pragma unroll
            for (int k = 0; k < N; k++)
                v[k] = v[k] + RD::ld(q.v[k]);
        }
    }
    const RD rd(WK_K_SUM);
#pragma unroll 1
    for (int k = 0; k < N; k++) {
        sv[threadIdx.x] = v[k];
        __syncthreads();
        if (ty == 0 && o0 < M) {
            V a = v[k];
#pragma unroll 1
            for (int r = 1; r < BY; r++)
                a = a + sv[r * BX + tx];
            if (S == 1)
                rd.store(out, o0 + k, a, 0);
            else
                ((V *)pv)[(o0 + k) * S + s] = a;
        }
        __syncthreads();
    }
}

template <int DT, bool SUM>
WK_DEV void wk_reduce_fin(int op, const void *pv, const void *pi, void *out, int64_t M, int32_t S,
                          int32_t G)
{
    typedef wk_red<DT, SUM> RD;
    const RD rd(op);
    typedef typename RD::V V;
    const int g = threadIdx.x / G, lane = threadIdx.x % G;
    const int64_t o = (int64_t)blockIdx.x * (WK_BLOCK / G) + g;
    V v = rd.identity();
    int64_t vi = WK_NO_INDEX;
    if (o < M) {
#pragma unroll 1
        for (int64_t t = lane; t < S; t += G)
            rd.comb(v, vi, ((const V *)pv)[o * S + t],
                    RD::idx ? ((const int64_t *)pi)[o * S + t] : 0);
    }
    wk_group_reduce(rd, v, vi, G);
    if (o < M && lane == 0)
        rd.store(out, o, v, vi);
}

#define WK_REDUCE(kn, SUM, dtn, DT)                                                            \
    WK_KERNEL reduce_rows_##kn##_##dtn(int op, const void *x, void *out, void *pv, void *pi,   \
                                       int64_t M, int64_t L, int32_t S, int32_t G,             \
                                       wk_klay<1> K, wk_klay<1> R)                             \
    {                                                                                          \
        wk_reduce_rows<DT, SUM>(op, x, out, pv, pi, M, L, S, G, K, R);                         \
    }                                                                                          \
    WK_KERNEL reduce_cols_##kn##_##dtn(int op, const void *x, void *out, void *pv, void *pi,   \
                                       int64_t M, int64_t L, int32_t S, int32_t BX,            \
                                       wk_klay<1> K, wk_klay<1> R)                             \
    {                                                                                          \
        wk_reduce_cols<DT, SUM>(op, x, out, pv, pi, M, L, S, BX, K, R);                        \
    }                                                                                          \
    WK_KERNEL reduce_fin_##kn##_##dtn(int op, const void *pv, const void *pi, void *out,       \
                                      int64_t M, int32_t S, int32_t G)                         \
    {                                                                                          \
        wk_reduce_fin<DT, SUM>(op, pv, pi, out, M, S, G);                                      \
    }
#define WK_REDUCE_KINDS(X, dtn, DT)                                                            \
    X(sum, true, dtn, DT) X(ext, false, dtn, DT)                                               \
    WK_KERNEL reduce_colv_sum_##dtn(const void *x, void *out, void *pv, int64_t M, int64_t L,  \
                                    int32_t S, int64_t st)                                     \
    {                                                                                          \
        wk_reduce_colv<DT>(x, out, pv, M, L, S, st);                                           \
    }
WK_REDUCE_KINDS(WK_REDUCE, u8, WK_DT_U8)
WK_REDUCE_KINDS(WK_REDUCE, u32, WK_DT_U32)
WK_REDUCE_KINDS(WK_REDUCE, i16, WK_DT_I16)
WK_REDUCE_KINDS(WK_REDUCE, i32, WK_DT_I32)
WK_REDUCE_KINDS(WK_REDUCE, i64, WK_DT_I64)
WK_REDUCE_KINDS(WK_REDUCE, bf16, WK_DT_BF16)
WK_REDUCE_KINDS(WK_REDUCE, f16, WK_DT_F16)
WK_REDUCE_KINDS(WK_REDUCE, f32, WK_DT_F32)
WK_REDUCE_KINDS(WK_REDUCE, f64, WK_DT_F64)
WK_REDUCE_KINDS(WK_REDUCE, f8e4m3, WK_DT_F8E4M3)
