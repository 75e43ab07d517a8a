/* norm.cu: rms_norm and layer_norm over the last dim (candle-nn's fused norms), and wick's
 * add_rms_norm / add_layer_norm (the residual add in front), module "norm".
 *
 *   rms_norm:   out = x / sqrt(sum(x^2) / D + eps) * alpha
 *   layer_norm: mean = K + sum(x - K) / D with K the row's first element, var =
 *               sum((x - mean)^2) / D (two passes over the values, not E[x^2] - mean^2),
 *               out = (x - mean) / sqrt(var + eps) * alpha + beta
 * in that order of operations (docs/semantics.md); bf16/f16/f8e4m3 compute in f32, f32 in f32,
 * f64 in f64 (eps widened); one rounding on store. The shift K makes a constant row's mean its
 * value exactly (every x - K is 0), so x - mean = 0 and out = beta exactly; it also keeps the
 * sum small when |mean| >> std (a shift taken from the data costs at most log2(D) bits).
 *
 * Rows as in softmax.cu: the host hands over rows whose last dim has stride 1, row r starting at
 * element koff(R, r) of x; alpha and beta are contiguous (D elements; the host copies a strided
 * or broadcast one first). A group of G threads (a power of two, 1..256) takes one row; blocks
 * loop over row groups uniformly, so every thread reaches every __syncthreads.
 *   norm_<rms|layer>_<dt>_reg<KV>(x, alpha, beta, out, M, D, G, R, eps)  vector path, the row
 *       cached in registers (x read once, out written once): D a multiple of N = 16/sizeof(S),
 *       row starts, out, alpha and beta 16-byte aligned, D/N <= G*KV. layer_norm takes mean
 *       and variance in one reduction: each thread its own mean of x - K and centred sum of
 *       squares over its registers, merged across the group with Chan's pairwise formula
 *       (nm_chan_op); mean = K + the merged mean, var = M2 / D. The same values as the two
 *       passes up to rounding (a constant row still gives its value as the mean exactly);
 *   norm_<rms|layer>_<dt>_stream(..., vec)  long or unaligned rows: re-reads x per pass (2
 *       passes for rms, 3 for layer; the row is in L2 by then), 16-byte units when vec, else
 *       scalar;
 *   norm_add_<rms|layer>_<dt>_reg<KV>(x, r, alpha, beta, out, sum, M, D, G, R, eps)  f32, f16,
 *       bf16: the "_reg" kernel on sum = x + r (x and r contiguous), each element rounded to
 *       the dtype once and stored to sum, the norm then taken of the rounded values with the
 *       same plan and reductions as norm_*_reg<KV> on sum: out is that kernel's result bit for
 *       bit (the host falls back to the binary add plus the norm kernel elsewhere);
 *   norm_add_rms_f32_<rdt>_reg<KV>(...)  the same for f32 x with r of rdt (f16, bf16), each r
 *       element widened exactly (the host converts r to f32 first where this does not apply);
 *   norm_add_rms_act_f32_reg<KV>(x, r, alpha, out, sum, act, M, D, G, R, eps)  that f32 kernel
 *       also writing out's int8 activations to act (wk_add_rms_norm_act; qact.h's team rule on
 *       the rounded outputs, so act is qmvq_f32's bits on out); G >= 8, D a multiple of 32.
 * beta is ignored (may be NULL) by rms_norm. */
#include "qact.h"
#include "rows.h"

WK_DEV float nm_sqrt(float v) { return sqrtf(v); }
WK_DEV double nm_sqrt(double v) { return sqrt(v); }

/* The per-row constants: rms_norm: sc = sqrt(sum(x^2)/D + eps); layer_norm: mean m and
 * sc = sqrt(var + eps). out_j = LAYER ? (x_j - m) / sc * a_j + b_j : x_j / sc * a_j. */
template <bool LAYER, class C> WK_DEV C nm_apply(C v, C m, C sc, C a, C b)
{
    return LAYER ? (v - m) / sc * a + b : v / sc * a;
}

/* Chan's pairwise merge of layer_norm partials {n, mu, M2}: n values whose mean (of x - K) is
 * mu and whose centred sum of squares is M2. With d = mu_b - mu_a and w = n_b / n:
 * mu = mu_a + d w, M2 = M2_a + M2_b + d^2 n_a w (Chan, Golub, LeVeque 1979); an empty side
 * (n = 0, mu = M2 = 0) leaves the other unchanged, and equal means (a constant row: all 0)
 * give mu exactly. d is a difference of means, so nothing overflows before sum((x - mean)^2)
 * would. */
struct nm_chan_op {
    template <class C> __device__ __forceinline__ void operator()(C (&a)[3], const C (&b)[3]) const
    {
        const C n = a[0] + b[0];
        const C w = n > 0 ? b[0] / n : (C)0;
        const C d = b[1] - a[1];
        a[2] = a[2] + b[2] + d * d * a[0] * w;
        a[1] = a[1] + d * w;
        a[0] = n;
    }
};

/* A plain sum as a wk_row_allmerge merge (rms_norm's sum of squares). */
struct nm_sum1_op {
    template <class C> __device__ __forceinline__ void operator()(C (&a)[1], const C (&b)[1]) const
    {
        a[0] = a[0] + b[0];
    }
};

/* A thread's KV vectors of the row in compute type: widened once and kept (f32, f64, f16,
 * f8e4m3), or, for bf16 (KEEP = 0), kept as loaded and widened at each use: that is one shift,
 * and it halves the registers a row takes, so that more rows are in flight per SM. */
template <int DT, int KV, bool KEEP = DT != WK_DT_BF16> struct nm_vals {
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    enum { N = 16 / sizeof(S) };
    C v[KV][N];
    __device__ __forceinline__ void keep(const wk_pack<S, N> *q, int k, int e, bool in)
    {
        v[k][e] = 0;
        if (in)
            v[k][e] = wk_t<DT>::ld(q[k].v[e]);
    }
    __device__ __forceinline__ C at(const wk_pack<S, N> *, int k, int e) const { return v[k][e]; }
};
template <int DT, int KV> struct nm_vals<DT, KV, false> {
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    enum { N = 16 / sizeof(S) };
    __device__ __forceinline__ void keep(const wk_pack<S, N> *, int, int, bool) {}
    __device__ __forceinline__ C at(const wk_pack<S, N> *q, int k, int e) const
    {
        return wk_t<DT>::ld(q[k].v[e]);
    }
};

/* Register-cached rows: KV vectors of N elements per thread. layer_norm's mean and variance in
 * one reduction (nm_chan_op over per-thread partials, each thread's own two passes over its
 * registers first; the two-reduction kernels before it lost on the H200: 1.23x PyTorch against
 * 0.98x, docs/performance.md "Memory-bound ops"), rms_norm's one sum through wk_row_allmerge. */
template <int DT, bool LAYER, int KV, bool RES = false, bool ACT = false, int RDT = DT>
WK_DEV void nm_rows_reg(const void *x, const void *alpha, const void *beta, void *out, int64_t M,
                        int64_t D, int32_t G, const wk_klay<1> &R, float epsf,
                        const void *res = nullptr, void *sum = nullptr, uint8_t *act = nullptr)
{
    /* alpha and beta (the op's weights) into L2 before the grid wait, by the first block (one
     * 128-byte line a thread): a hint, nothing is read early */
    if (blockIdx.x == 0)
        for (int64_t i = (int64_t)threadIdx.x * 128; i < D * (int64_t)sizeof(typename wk_t<DT>::S);
             i += (int64_t)WK_BLOCK * 128) {
            WK_PREFETCH_L2((const uint8_t *)alpha + i);
            if (LAYER)
                WK_PREFETCH_L2((const uint8_t *)beta + i);
        }
    WK_GRID_WAIT(); /* launched early (gpu_norm.c) */
    WK_GRID_LAUNCH_DEPENDENTS(); /* the next early kernel may start: its weight prefetch */
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    const int N = 16 / (int)sizeof(S);
    const int gpb = WK_BLOCK / G, g = threadIdx.x / G, lane = threadIdx.x % G;
    /* the reductions' buffers, used alternately (layer_norm: 3 values per partial) */
    __shared__ C red[2][LAYER ? 3 : 1][WK_BLOCK];
    int ph = 0;
    const int64_t nv = D / N;
    const C n = (C)D, eps = (C)epsf;
    const wk_pack<S, N> *av = (const wk_pack<S, N> *)alpha;
    const wk_pack<S, N> *bv = (const wk_pack<S, N> *)beta;
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
        /* alpha and beta: loaded with x when a thread holds at most 4 vectors (one row per
         * block, the decode norms: their loads then overlap x's instead of following the
         * reduction), else after it (registers for more rows in flight) */
        enum { AEARLY = KV <= 4 };
        wk_pack<S, N> a[AEARLY ? KV : 1], b[AEARLY && LAYER ? KV : 1];
        if (AEARLY)
#pragma unroll
            for (int k = 0; k < KV; k++)
                if (k < kv) {
                    a[k].raw = av[lane + k * G].raw;
                    if (LAYER)
                        b[k].raw = bv[lane + k * G].raw;
                }
        /* K: the row's first element (layer_norm's shift; every thread of the group reads it) */
        C K = LAYER && live ? wk_t<DT>::ld(((const S *)x + base)[0]) : (C)0;
        if (RES) { /* q <- x + r rounded to the dtype (binary ADD's value), stored to sum; the
                    * norm below reads the rounded sum, as the norm kernel would from sum */
            const int64_t at = (live ? row : 0) * D; /* r and sum: contiguous rows */
            typedef typename wk_t<RDT>::S RS; /* r's elements: x's, or 16-bit under f32 x */
            const wk_pack<RS, N> *rv = (const wk_pack<RS, N> *)((const RS *)res + at);
            wk_pack<S, N> *sv = (wk_pack<S, N> *)((S *)sum + at);
            wk_pack<RS, N> p[KV];
#pragma unroll
            for (int k = 0; k < KV; k++)
                if (k < kv)
                    p[k].raw = rv[lane + k * G].raw;
#pragma unroll
            for (int k = 0; k < KV; k++)
                if (k < kv) {
#pragma unroll
                    for (int e = 0; e < N; e++)
                        q[k].v[e] = wk_t<DT>::st(wk_t<DT>::ld(q[k].v[e]) +
                                                 (typename wk_t<DT>::C)wk_t<RDT>::ld(p[k].v[e]));
                    sv[lane + k * G].raw = q[k].raw;
                }
            if (LAYER && live) /* the shift from the sum's first element */
                K = wk_t<DT>::ld(wk_t<DT>::st(K + (C)wk_t<RDT>::ld(((const RS *)res + at)[0])));
        }
        nm_vals<DT, KV> v;
        C s = 0;
#pragma unroll
        for (int k = 0; k < KV; k++)
#pragma unroll
            for (int e = 0; e < N; e++) {
                v.keep(q, k, e, k < kv);
                if (k < kv) {
                    const C x = v.at(q, k, e);
                    s = s + (LAYER ? x - K : x * x);
                }
            }
        C m = 0, sc;
        if (LAYER) {
            const C cnt = (C)(kv * N);
            C p[3] = {cnt, kv > 0 ? s / cnt : (C)0, 0};
#pragma unroll
            for (int k = 0; k < KV; k++)
#pragma unroll
                for (int e = 0; e < N; e++)
                    if (k < kv) {
                        const C c = v.at(q, k, e) - K - p[1];
                        p[2] = p[2] + c * c;
                    }
            wk_row_allmerge(p, G, nm_chan_op(), red[ph]);
            ph ^= 1;
            m = K + p[1];
            sc = nm_sqrt(p[2] / n + eps);
        } else { /* rms_norm's one sum through the unrolled wk_row_allmerge */
            C p[1] = {s};
            wk_row_allmerge(p, G, nm_sum1_op(), red[ph]);
            ph ^= 1;
            sc = nm_sqrt(p[0] / n + eps);
        }
        wk_pack<S, N> o[KV];
#pragma unroll
        for (int k = 0; k < KV; k++)
            if (k < kv) {
                const int ka = AEARLY ? k : 0, kb = AEARLY && LAYER ? k : 0;
                if (!AEARLY) {
                    a[0].raw = av[lane + k * G].raw;
                    if (LAYER)
                        b[0].raw = bv[lane + k * G].raw;
                }
#pragma unroll
                for (int e = 0; e < N; e++)
                    o[k].v[e] = wk_t<DT>::st(nm_apply<LAYER, C>(
                        v.at(q, k, e), m, sc, wk_t<DT>::ld(a[ka].v[e]),
                        LAYER ? wk_t<DT>::ld(b[kb].v[e]) : (C)0));
                yv[lane + k * G].raw = o[k].raw;
            }
        /* out's activations (qact.h: f32, N = 4, G >= 8: vectors u .. u + 7 of a 32-element
         * block are 8 aligned lanes), after all of alpha's loads and the stores, the KV blocks'
         * team rules at once (one at a time, each waiting on its own shuffles, took the norm from
         * 5.0 to 6.7 us on the H200); every lane takes part, zeros where no vector lies */
        if (ACT) {
            float f[KV][4];
            uint32_t word[KV], hs[KV];
            float d[KV];
#pragma unroll
            for (int k = 0; k < KV; k++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    f[k][e] = k < kv ? (float)wk_t<DT>::ld(o[k].v[e]) : 0.0f;
            wk_qmvq_teams<KV>(f, word, d, hs);
#pragma unroll
            for (int k = 0; k < KV; k++) {
                const int64_t u = row * nv + lane + k * G; /* its code word; block u / 8 */
                if (k < kv) {
                    ((uint32_t *)act)[u] = word[k];
                    if ((u & 7) == 0) {
                        ((float *)(act + M * D))[u >> 3] = d[k];
                        ((uint32_t *)(act + M * D + M * D / 8))[u >> 3] = hs[k];
                    }
                }
            }
        }
    }
}

/* Calls f(u, c[N]) for the units u = lane, lane + G, ... < nu of the row at xs (unit = N
 * elements, loaded as one access), four loads in flight per thread. */
template <int DT, int N, class F>
WK_DEV void nm_each(const typename wk_t<DT>::S *xs, int64_t nu, int lane, int G, F &f)
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

/* Streaming rows; N = 16/sizeof(S) (vector units) or 1 (scalar). */
template <int DT, bool LAYER, int N>
WK_DEV void nm_rows_stream(const void *x, const void *alpha, const void *beta, void *out,
                           int64_t M, int64_t D, int32_t G, const wk_klay<1> &R, float epsf)
{
    WK_GRID_WAIT(); /* launched early (gpu_norm.c) */
    WK_GRID_LAUNCH_DEPENDENTS(); /* the next early kernel may start: its weight prefetch */
    typedef typename wk_t<DT>::S S;
    typedef typename wk_t<DT>::C C;
    const int gpb = WK_BLOCK / G, g = threadIdx.x / G, lane = threadIdx.x % G;
    __shared__ C red[2][WK_BLOCK]; /* the reductions' buffers, used alternately */
    int ph = 0;
    const int64_t nu = D / N;
    const C n = (C)D, eps = (C)epsf;
    const wk_pack<S, N> *av = (const wk_pack<S, N> *)alpha;
    const wk_pack<S, N> *bv = (const wk_pack<S, N> *)beta;
#pragma unroll 1
    for (int64_t rb = blockIdx.x; rb * gpb < M; rb += gridDim.x) {
        const int64_t row = rb * gpb + g;
        const bool live = row < M;
        int64_t base = 0;
        if (live)
            wk_koff(R, row, &base);
        const S *xs = (const S *)x + base;
        wk_pack<S, N> *yv = (wk_pack<S, N> *)((S *)out + (live ? row : 0) * D);
        const C K = LAYER && live ? wk_t<DT>::ld(xs[0]) : (C)0; /* layer_norm's shift */
        C s = 0;
        auto fsum = [&](int64_t, const C *c) {
#pragma unroll
            for (int e = 0; e < N; e++)
                s = s + (LAYER ? c[e] - K : c[e] * c[e]);
        };
        if (live)
            nm_each<DT, N>(xs, nu, lane, G, fsum);
        s = wk_row_allreduce(s, G, wk_sum_op(), red[ph]);
        ph ^= 1;
        C m = 0, sc;
        if (LAYER) {
            m = K + s / n;
            C s2 = 0;
            auto fvar = [&](int64_t, const C *c) {
#pragma unroll
                for (int e = 0; e < N; e++) {
                    const C d = c[e] - m;
                    s2 = s2 + d * d;
                }
            };
            if (live)
                nm_each<DT, N>(xs, nu, lane, G, fvar);
            s2 = wk_row_allreduce(s2, G, wk_sum_op(), red[ph]);
            ph ^= 1;
            sc = nm_sqrt(s2 / n + eps);
        } else {
            sc = nm_sqrt(s / n + eps);
        }
        auto fout = [&](int64_t u, const C *c) {
            wk_pack<S, N> a, b, o;
            a.raw = av[u].raw;
            if (LAYER)
                b.raw = bv[u].raw;
#pragma unroll
            for (int e = 0; e < N; e++)
                o.v[e] = wk_t<DT>::st(nm_apply<LAYER, C>(
                    c[e], m, sc, wk_t<DT>::ld(a.v[e]), LAYER ? wk_t<DT>::ld(b.v[e]) : (C)0));
            yv[u].raw = o.raw;
        };
        if (live)
            nm_each<DT, N>(xs, nu, lane, G, fout);
    }
}

/* The register kernels keep at most 32 compute values per thread (KV * N <= 32; f64: 16
 * doubles): KV 2, 4, 8 for f32 and f64, 2 and 4 for f16, 2 for f8e4m3; bf16 2, 4 and 8, its
 * values kept as loaded (nm_vals: 64 values in 32 registers at KV 8). Asked (B = 4) to fit 4
 * blocks per SM (64 registers on NVIDIA) where a thread's values take 64 bytes or less (ptxas,
 * sm_90: no spills), f32 KV 8 3 blocks (80 registers, no spills); bf16 rms_norm at KV 4 and 8
 * as f32 at the same KV, its layer_norm 2 blocks (no spills); else B = 1 (no request). */
#define WK_NORM_REG1(on, L, dtn, DT, KV, B)                                                    \
    WK_KERNEL_MINB(B) norm_##on##_##dtn##_reg##KV(const void *x, const void *alpha,             \
                                                  const void *beta, void *out, int64_t M,      \
                                                  int64_t D, int32_t G, wk_klay<1> R,          \
                                                  float eps)                                   \
    {                                                                                          \
        nm_rows_reg<DT, L, KV>(x, alpha, beta, out, M, D, G, R, eps);                          \
    }
#define WK_NORM_S1(on, L, dtn, DT)                                                             \
    WK_KERNEL norm_##on##_##dtn##_stream(const void *x, const void *alpha, const void *beta,    \
                                    void *out, int64_t M, int64_t D, int32_t G, wk_klay<1> R,  \
                                    float eps, int32_t vec)                                    \
    {                                                                                          \
        if (vec)                                                                               \
            nm_rows_stream<DT, L, 16 / sizeof(typename wk_t<DT>::S)>(x, alpha, beta, out, M, D, \
                                                                    G, R, eps);                \
        else                                                                                   \
            nm_rows_stream<DT, L, 1>(x, alpha, beta, out, M, D, G, R, eps);                    \
    }
/* add_rms_norm / add_layer_norm: the "_reg" kernels with the residual add in front (RES): x
 * and r contiguous, sum written; no occupancy request (the r loads add KV vectors in flight). */
#define WK_NORM_A1(on, L, dtn, DT, KV)                                                         \
    WK_KERNEL norm_add_##on##_##dtn##_reg##KV(const void *x, const void *r, const void *alpha,  \
                                              const void *beta, void *out, void *sum,          \
                                              int64_t M, int64_t D, int32_t G, wk_klay<1> R,   \
                                              float eps)                                       \
    {                                                                                          \
        nm_rows_reg<DT, L, KV, true>(x, alpha, beta, out, M, D, G, R, eps, r, sum);            \
    }
#define WK_NORM_A(dtn, DT, KV) WK_NORM_A1(rms, false, dtn, DT, KV) WK_NORM_A1(layer, true, dtn, DT, KV)
/* add_rms_norm of f32 x with a 16-bit r (rdn: r's dtype), each r element widened exactly: a
 * prefill's 16-bit product output added to the f32 residual stream without a conversion pass. */
#define WK_NORM_AR(rdn, RDT, KV)                                                               \
    WK_KERNEL norm_add_rms_f32_##rdn##_reg##KV(const void *x, const void *r, const void *alpha, \
                                              const void *beta, void *out, void *sum,          \
                                              int64_t M, int64_t D, int32_t G, wk_klay<1> R,   \
                                              float eps)                                       \
    {                                                                                          \
        nm_rows_reg<WK_DT_F32, false, KV, true, false, RDT>(x, alpha, beta, out, M, D, G, R,   \
                                                            eps, r, sum);                      \
    }
WK_NORM_AR(f16, WK_DT_F16, 2) WK_NORM_AR(f16, WK_DT_F16, 4) WK_NORM_AR(f16, WK_DT_F16, 8)
WK_NORM_AR(bf16, WK_DT_BF16, 2) WK_NORM_AR(bf16, WK_DT_BF16, 4) WK_NORM_AR(bf16, WK_DT_BF16, 8)
/* add_rms_norm_act: the f32 "_reg" add_rms_norm writing the activations of out too (qact.h's
 * rule, the bits of qmvq_f32 on out; wick.h's layout in act); the host asks for G >= 8. */
#define WK_NORM_ACT(KV)                                                                        \
    WK_KERNEL norm_add_rms_act_f32_reg##KV(const void *x, const void *r, const void *alpha,    \
                                           void *out, void *sum, uint8_t *act, int64_t M,      \
                                           int64_t D, int32_t G, wk_klay<1> R, float eps)      \
    {                                                                                          \
        nm_rows_reg<WK_DT_F32, false, KV, true, true>(x, alpha, nullptr, out, M, D, G, R, eps, \
                                                      r, sum, act);                            \
    }
WK_NORM_ACT(2) WK_NORM_ACT(4) WK_NORM_ACT(8)
WK_NORM_A(f32, WK_DT_F32, 2) WK_NORM_A(f32, WK_DT_F32, 4) WK_NORM_A(f32, WK_DT_F32, 8)
WK_NORM_A(bf16, WK_DT_BF16, 2) WK_NORM_A(bf16, WK_DT_BF16, 4) WK_NORM_A(bf16, WK_DT_BF16, 8)
WK_NORM_A(f16, WK_DT_F16, 2) WK_NORM_A(f16, WK_DT_F16, 4)
#define WK_NORM_R(dtn, DT, KV, B) WK_NORM_R2(dtn, DT, KV, B, B)
#define WK_NORM_R2(dtn, DT, KV, B, BL)                                                         \
    WK_NORM_REG1(rms, false, dtn, DT, KV, B) WK_NORM_REG1(layer, true, dtn, DT, KV, BL)
#define WK_NORM_S(dtn, DT) WK_NORM_S1(rms, false, dtn, DT) WK_NORM_S1(layer, true, dtn, DT)
WK_NORM_R(f32, WK_DT_F32, 2, 4) WK_NORM_R(f32, WK_DT_F32, 4, 4) WK_NORM_R(f32, WK_DT_F32, 8, 3)
WK_NORM_R(f64, WK_DT_F64, 2, 4) WK_NORM_R(f64, WK_DT_F64, 4, 4) WK_NORM_R(f64, WK_DT_F64, 8, 1)
WK_NORM_R(bf16, WK_DT_BF16, 2, 4) WK_NORM_R2(bf16, WK_DT_BF16, 4, 4, 2)
WK_NORM_R2(bf16, WK_DT_BF16, 8, 3, 2)
WK_NORM_R(f16, WK_DT_F16, 2, 4) WK_NORM_R(f16, WK_DT_F16, 4, 1)
WK_NORM_R(f8e4m3, WK_DT_F8E4M3, 2, 1)
WK_NORM_S(bf16, WK_DT_BF16)
WK_NORM_S(f16, WK_DT_F16)
WK_NORM_S(f32, WK_DT_F32)
WK_NORM_S(f64, WK_DT_F64)
WK_NORM_S(f8e4m3, WK_DT_F8E4M3)
