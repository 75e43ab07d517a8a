/* softmax.cu: softmax over the last dim (candle-nn's softmax_last_dim), module "softmax".
 *
 * Per row of D elements: m = max(x) (NaN skipped, as the CPU's `v > m`), e = exp(x - m),
 * out = e / sum(e) (a division, docs/semantics.md). bf16/f16/f8e4m3 compute in f32, f32 in f32,
 * f64 in f64; one rounding on store.
 *
 * The host (src/gpu/gpu_softmax.c) hands over rows whose last dim has stride 1 (others are made
 * contiguous first); row r starts at element koff(R, r) of x, R the collapsed outer dims. A group
 * of G threads (a power of two, 1..256, uniform) takes one row; a block holds 256/G groups and
 * loops over row groups, so every thread of a block reaches every __syncthreads.
 *   softmax_<dt>_online<KV>(x, out, M, D, G, R)   bf16, f16, f8e4m3: vector path, row cached in
 *       registers: thread `lane` holds the 16-byte vectors lane + k*G (k < KV) of its row; x is
 *       read once and out written once (the near-copy-bandwidth case). Needs: D a multiple of
 *       N = 16/sizeof(S), every row start 16-byte aligned, D/N <= G*KV. One reduction (online
 *       softmax): each thread its max m_t and sum of exp(x - m_t), merged across the group
 *       (sm_merge_op); out = exp(x - m_t) * exp(m_t - m) / s (one more rounding than
 *       exp(x - m) where m_t < m);
 *   softmax_<dt>_maxsum<KV>  f32, f64: the same with two reductions (max, then sum of
 *       exp(x - m)). The host takes each where it was the faster on the H200
 *       (docs/performance.md, "Memory-bound ops": f32 3215 GB/s with two reductions against 3001 with
 *       one; bf16 1749 with one), and only those are built;
 *   softmax_<dt>_stream(x, out, M, D, G, R, vec)  long or unaligned rows: three passes over the row
 *       (max, sum, write), re-reading x (a row being re-read by its block is in L2); 16-byte
 *       loads when vec (same conditions as above, without the length limit), scalar otherwise. */
#include "rows.h"

WK_DEV float sm_exp(float v) { return expf(v); }
WK_DEV double sm_exp(double v) { return exp(v); }
template <class C> WK_DEV C sm_ninf(void);
template <> __device__ __forceinline__ float sm_ninf<float>(void) { return -wk_inf_f32(); }
template <> __device__ __forceinline__ double sm_ninf<double>(void) { return -wk_inf_f64(); }

/* out = v / s for the values v of one row and its sum s, rounded once as the division (the
 * CPU's, docs/semantics.md), without a division per element: y = 1 / s once per row (rounded),
 * then per element q = v y and one correction q += (v - q s) y, both FMAs (Markstein's: with y
 * the rounded reciprocal and q within an ulp of v / s, the residual is exact and the corrected
 * q is v / s rounded to nearest; nvcc's own division runs the same correction after a
 * reciprocal per element). It needs q and the residual in the normal range, so it is taken
 * where v >= 2^-100 s (and where v is 0: then 0) in a row whose s is in [1, 2^64] (every row
 * with a finite maximum: its term is exp(0) = 1); other values (NaN, below that) and rows (all
 * -inf: s = 0; NaN) divide. The arithmetic is checked on the host against IEEE division
 * (every third v of a binade and the low edge, against 48 sums): tests/test_softmax_quot.c.
 * f64 divides. */
template <class C> struct sm_quot {
    C s;
    __device__ __forceinline__ explicit sm_quot(C s_) : s(s_) {}
    __device__ __forceinline__ C operator()(C v) const { return v / s; }
};
template <> struct sm_quot<float> {
    float s, y, lo;
    bool ok;
    __device__ __forceinline__ explicit sm_quot(float s_)
        : s(s_), y(1.0f / s_), lo(0x1p-100f * s_), ok(s_ >= 1.0f && s_ <= 0x1p64f)
    {
    }
    __device__ __forceinline__ float operator()(float v) const
    {
        if (ok && (v >= lo || v == 0.0f)) {
            const float q = v * y;
            return fmaf(fmaf(-q, s, v), y, q);
        }
        return v / s;
    }
};

struct sm_max_op { /* NaN never wins: the CPU's `if (v > m) m = v` */
    template <class C> __device__ __forceinline__ C operator()(C a, C b) const
    {
        return b > a ? b : a;
    }
};
/* The merge of softmax partials {m, s}: values whose max is m and whose sum of exp(x - m) is s
 * (online softmax): the larger max stays, the other side's sum is scaled by exp(lo - hi). Equal
 * maxima (-inf included: sides of only -inf, s = 0) add without a scale, so no inf - inf
 * appears here; a NaN sum (a NaN in the row, or a +inf max) stays NaN. */
struct sm_merge_op {
    template <class C> __device__ __forceinline__ void operator()(C (&a)[2], const C (&b)[2]) const
    {
        const bool bw = b[0] > a[0];
        const C hi = bw ? b[0] : a[0], lo = bw ? a[0] : b[0];
        const C shi = bw ? b[1] : a[1], slo = bw ? a[1] : b[1];
        a[0] = hi;
        a[1] = shi + (lo == hi ? slo : slo * sm_exp(lo - hi));
    }
};

/* Register-cached rows: KV vectors of N elements per thread. ONE: one reduction (sm_merge_op
 * over per-thread {m_t, sum exp(x - m_t)}; e = exp(x - m_t) exp(m_t - m): the "online"
 * kernels), else two (max, then sum of exp(x - m): the "maxsum" kernels). */
template <int DT, int KV, bool ONE>
WK_DEV void sm_rows_reg(const void *x, void *out, int64_t M, int64_t D, int32_t G,
                        const wk_klay<1> &R)
{
    WK_GRID_WAIT(); /* launched early (gpu_norm.c) */
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    const int N = 16 / (int)sizeof(S);
    const int gpb = WK_BLOCK / G, g = threadIdx.x / G, lane = threadIdx.x % G;
    __shared__ C red[2][ONE ? 2 : 1][WK_BLOCK]; /* the reductions' buffers, used alternately */
    int ph = 0;
    const int64_t nv = D / N;
#pragma unroll 1
    for (int64_t rb = blockIdx.x; rb * gpb < M; rb += gridDim.x) { /* uniform in the block */
        const int64_t row = rb * gpb + g;
        const bool live = row < M;
        int64_t base = 0;
        if (live)
            wk_koff(R, row, &base);
        const wk_pack<S, N> *xv = (const wk_pack<S, N> *)((const S *)x + base);
        wk_pack<S, N> *yv = (wk_pack<S, N> *)((S *)out + (live ? row : 0) * D);
        /* kv: how many of this thread's KV vectors lie in the row (lane < G, nv >= 1); a 32-bit
         * division, not a 64-bit one (a subroutine): the host's plan has nv <= G * KV <= 2048 */
        const int kv = live ? ((int)nv - lane + G - 1) / G : 0;
        wk_pack<S, N> q[KV];
#pragma unroll
        for (int k = 0; k < KV; k++) /* all loads issued before any use */
            if (k < kv)
                q[k].raw = xv[lane + k * G].raw;
        C v[KV][N];
        C m = sm_ninf<C>();
#pragma unroll
        for (int k = 0; k < KV; k++)
#pragma unroll
            for (int e = 0; e < N; e++) {
                v[k][e] = sm_ninf<C>();
                if (k < kv) {
                    v[k][e] = wk_t<DT>::ld(q[k].v[e]);
                    m = sm_max_op()(m, v[k][e]);
                }
            }
        C s = 0, f = 1; /* ONE: f = exp(m_t - m), the scale of this thread's exps */
        if (ONE) {
            /* a thread of only -inf (and NaN) values: exps taken against 0, so -inf gives 0
             * (and NaN stays NaN) instead of exp(-inf - -inf) */
            const C mt = m == sm_ninf<C>() ? (C)0 : m;
#pragma unroll
            for (int k = 0; k < KV; k++)
#pragma unroll
                for (int e = 0; e < N; e++)
                    if (k < kv) {
                        v[k][e] = sm_exp(v[k][e] - mt);
                        s = s + v[k][e];
                    }
            C p[2] = {m, s};
            wk_row_allmerge(p, G, sm_merge_op(), red[ph]);
            ph ^= 1;
            /* m == p[0] (-inf included) leaves the exps as they are */
            f = m == p[0] ? (C)1 : sm_exp(m - p[0]);
            s = p[1];
        } else {
            m = wk_row_allreduce(m, G, sm_max_op(), red[ph][0]);
            ph ^= 1;
#pragma unroll
            for (int k = 0; k < KV; k++)
#pragma unroll
                for (int e = 0; e < N; e++)
                    if (k < kv) {
                        v[k][e] = sm_exp(v[k][e] - m);
                        s = s + v[k][e];
                    }
            s = wk_row_allreduce(s, G, wk_sum_op(), red[ph][0]);
            ph ^= 1;
        }
        const sm_quot<C> quot(s);
#pragma unroll
        for (int k = 0; k < KV; k++)
            if (k < kv) {
                wk_pack<S, N> o;
#pragma unroll
                for (int e = 0; e < N; e++)
                    o.v[e] = wk_t<DT>::st(quot(ONE ? v[k][e] * f : v[k][e]));
                yv[lane + k * G].raw = o.raw;
            }
    }
}

/* Calls f(u, c[N]) for the units u = lane, lane + G, ... < nu of the row at xs (unit = N
 * elements, loaded as one access), four loads in flight per thread. */
template <int DT, int N, class F>
WK_DEV void sm_each(const typename wk_t<DT>::S *xs, int64_t nu, int lane, int G, F &f)
{
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    const wk_pack<S, N> *xv = (const wk_pack<S, N> *)xs;
#pragma unroll 1
    for (int64_t u0 = lane; u0 < nu; u0 += 4 * (int64_t)G) {
        wk_pack<S, N> q[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (u0 + (int64_t)k * G < nu)
                q[k].raw = xv[u0 + k * G].raw;
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (u0 + (int64_t)k * G < nu) {
                C c[N];
#pragma unroll
                for (int e = 0; e < N; e++)
                    c[e] = wk_t<DT>::ld(q[k].v[e]);
                f(u0 + k * G, c);
            }
    }
}

/* Streaming rows (three passes); N = 16/sizeof(S) (vector units) or 1 (scalar). */
template <int DT, int N>
WK_DEV void sm_rows_stream(const void *x, void *out, int64_t M, int64_t D, int32_t G,
                           const wk_klay<1> &R)
{
    WK_GRID_WAIT(); /* launched early (gpu_norm.c) */
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    const int gpb = WK_BLOCK / G, g = threadIdx.x / G, lane = threadIdx.x % G;
    __shared__ C red[2][WK_BLOCK]; /* the reductions' buffers, used alternately */
    int ph = 0;
    const int64_t nu = D / N;
#pragma unroll 1
    for (int64_t rb = blockIdx.x; rb * gpb < M; rb += gridDim.x) {
        const int64_t row = rb * gpb + g;
        const bool live = row < M;
        int64_t base = 0;
        if (live)
            wk_koff(R, row, &base);
        const S *xs = (const S *)x + base;
        wk_pack<S, N> *yv = (wk_pack<S, N> *)((S *)out + (live ? row : 0) * D);
        C m = sm_ninf<C>();
        auto fmax = [&](int64_t, const C *c) {
#pragma unroll
            for (int e = 0; e < N; e++)
                m = sm_max_op()(m, c[e]);
        };
        if (live)
            sm_each<DT, N>(xs, nu, lane, G, fmax);
        m = wk_row_allreduce(m, G, sm_max_op(), red[ph]);
        ph ^= 1;
        C s = 0;
        auto fsum = [&](int64_t, const C *c) {
#pragma unroll
            for (int e = 0; e < N; e++)
                s = s + sm_exp(c[e] - m);
        };
        if (live)
            sm_each<DT, N>(xs, nu, lane, G, fsum);
        s = wk_row_allreduce(s, G, wk_sum_op(), red[ph]);
        ph ^= 1;
        const sm_quot<C> quot(s);
        auto fout = [&](int64_t u, const C *c) {
            wk_pack<S, N> o;
#pragma unroll
            for (int e = 0; e < N; e++)
                o.v[e] = wk_t<DT>::st(quot(sm_exp(c[e] - m)));
            yv[u].raw = o.raw;
        };
        if (live)
            sm_each<DT, N>(xs, nu, lane, G, fout);
    }
}

/* The register kernels keep at most 32 compute values per thread (KV * N <= 32; f64: 16
 * doubles): KV 2, 4, 8 for f32 and f64, 2 and 4 for bf16/f16, 2 for f8e4m3 (the host's
 * kv_max). The online ones are asked (B = 4) to fit 4 blocks per SM where a thread's values take
 * 64 bytes or less and ptxas (sm_90) fits them without spills, bf16 KV 4 3 blocks (80
 * registers, no spills), else B = 1. */
#define WK_SOFTMAX_MAXSUM(dtn, DT, KV)                                                         \
    WK_KERNEL softmax_##dtn##_maxsum##KV(const void *x, void *out, int64_t M, int64_t D,        \
                                         int32_t G, wk_klay<1> R)                              \
    {                                                                                          \
        sm_rows_reg<DT, KV, false>(x, out, M, D, G, R);                                        \
    }
#define WK_SOFTMAX_ONLINE(dtn, DT, KV, B)                                                      \
    WK_KERNEL_MINB(B) softmax_##dtn##_online##KV(const void *x, void *out, int64_t M,           \
                                                 int64_t D, int32_t G, wk_klay<1> R)           \
    {                                                                                          \
        sm_rows_reg<DT, KV, true>(x, out, M, D, G, R);                                         \
    }
#define WK_SOFTMAX_S(dtn, DT)                                                                  \
    WK_KERNEL softmax_##dtn##_stream(const void *x, void *out, int64_t M, int64_t D, int32_t G, \
                                     wk_klay<1> R, int32_t vec)                                \
    {                                                                                          \
        if (vec)                                                                               \
            sm_rows_stream<DT, 16 / sizeof(typename wk_t<DT>::S)>(x, out, M, D, G, R);          \
        else                                                                                   \
            sm_rows_stream<DT, 1>(x, out, M, D, G, R);                                         \
    }
WK_SOFTMAX_MAXSUM(f32, WK_DT_F32, 2) WK_SOFTMAX_MAXSUM(f32, WK_DT_F32, 4)
WK_SOFTMAX_MAXSUM(f32, WK_DT_F32, 8)
WK_SOFTMAX_MAXSUM(f64, WK_DT_F64, 2) WK_SOFTMAX_MAXSUM(f64, WK_DT_F64, 4)
WK_SOFTMAX_MAXSUM(f64, WK_DT_F64, 8)
WK_SOFTMAX_ONLINE(bf16, WK_DT_BF16, 2, 4) WK_SOFTMAX_ONLINE(bf16, WK_DT_BF16, 4, 3)
WK_SOFTMAX_ONLINE(f16, WK_DT_F16, 2, 4) WK_SOFTMAX_ONLINE(f16, WK_DT_F16, 4, 1)
WK_SOFTMAX_ONLINE(f8e4m3, WK_DT_F8E4M3, 2, 1)
WK_SOFTMAX_S(bf16, WK_DT_BF16)
WK_SOFTMAX_S(f16, WK_DT_F16)
WK_SOFTMAX_S(f32, WK_DT_F32)
WK_SOFTMAX_S(f64, WK_DT_F64)
WK_SOFTMAX_S(f8e4m3, WK_DT_F8E4M3)
