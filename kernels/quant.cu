/* quant.cu: the quantized (GGML block) ops on the GPU (module "quant"); host side
 * src/gpu/gpu_quant.c, block decoders kernels/quant.h. Block types q = q4_0 q4_1 q5_0 q5_1 q8_0
 * q8_1 q2_k q3_k q4_k q5_k q6_k q8_k, float dtypes dt = f32 f16 bf16. Work unit: the 32-element
 * sub-block (quant.h).
 *
 *   dequant_<q>_<dt>(nitems, q, out)
 *       out[32u .. 32u+31] = sub-block u of the blocks at q; one thread per 16 bytes of output
 *       (nitems = sub-blocks * 32 * sizeof(dt) / 16), consecutive threads on consecutive
 *       16-byte chunks (out 16-byte aligned: the host checks).
 *   qembed_<q>_<dt>(nunits, spr, L, ids, idt, sentinel, w, rows, out, err)
 *       out row i (spr sub-blocks) = row ids[i] of W (rows rows of spr sub-blocks); ids of dtype
 *       idt (u8/u32/i64) through the strided layout L; the sentinel id gives zeros; any other id
 *       outside [0, rows) gives zeros and records WK_KERR_QEMBEDDING (W is never read for it).
 *       One thread per output sub-block (nunits = ids * spr).
 *   qquant_<dt>(nblk, x, xq, xd)
 *       the activations of a matrix-vector product, quantized once per call: block b of 32
 *       contiguous elements of x -> 32 int8 xq[32b..] = round(x / d) and xd[b] = d =
 *       max|x| / 127 (ggml's q8_1 rule); a block holding a NaN or infinity gets d = NaN so the
 *       outputs it feeds are NaN, as the float reference's would be (or infinite there).
 *   qmv<R>_<q>(w, xq, xd, out, dt, n, k, rows)
 *       out (rows, n) of dt = x (rows, k) @ W^T for rows <= R (R = 1, 2, 4, 8): a block of 256
 *       threads is 4 groups of 64; group g owns NC adjacent output columns (weight rows) and its
 *       64 threads walk the k/32 sub-blocks of those rows, adjacent threads on adjacent
 *       sub-blocks (coalesced weight reads), U sub-blocks per thread loaded before any is used
 *       (U = 1 for every R: U = 2 measured slower on the H200, q4_0 m=1 32% of copy bandwidth
 *       against 36%, as did a shared-memory-staged variant, 26%). Per sub-block: the NC
 *       weight sub-blocks are decoded once and each of the rows' activations (two 16-byte
 *       loads) meets all NC of them:
 *       integer dot products with WK_DP4A per 16-element half, then
 *           acc += dx * (dw0 * i0 + dw1 * i1 [+ mw0 * s0 + mw1 * s1])
 *       (s: sums of the activation bytes, for the types with a min). Reduction: warp shuffles
 *       over the whole warp (32 or 64 lanes), then shared memory over the 64 / warpSize warps
 *       of a group, one store per output.
 *
 * Accuracy of qmv against dequantize + exact matmul: the activations carry the int8 rounding
 * error (at most d/2 = max|x|/254 per element, about 6e-6 relative mean square for Gaussian
 * data), the integer dot products are exact, the float sums add f32 rounding: normalised MSE of
 * order 1e-5 or less. */
#include "quant.h"

/* ---- stores of 32 values, 16 bytes at a time (dst 16-byte aligned) */
template <int D> WK_DEV void wk_qstore32(typename wk_t<D>::S *dst, const float *y)
{
    typedef typename wk_t<D>::S S;
    const int N = 16 / (int)sizeof(S);
#pragma unroll
    for (int v = 0; v < 32 / N; v++) {
        wk_pack<S, N> p;
#pragma unroll
        for (int k = 0; k < N; k++)
            p.v[k] = wk_t<D>::st(y[v * N + k]);
        ((wk_pack<S, N> *)dst)[v].raw = p.raw;
    }
}

/* ---- dequantize */
/* Word j (0..7, a run-time value) of a sub-block's q: a chain of selects, so the array stays in
 * registers (a dynamically indexed array would go to local memory). */
WK_DEV uint32_t wk_qword(const wk_qsub &o, int j)
{
    uint32_t r = o.q[0];
#pragma unroll
    for (int i = 1; i < 8; i++)
        r = j == i ? o.q[i] : r;
    return r;
}

/* One thread per 16 bytes of output: EP = 16 / sizeof(S) consecutive elements (4 of f32, 8 of
 * f16/bf16) of one sub-block, P = 32 / EP threads per sub-block, so consecutive lanes store
 * consecutive 16-byte chunks (a warp writes 512 contiguous bytes per store instruction). Each
 * of the P threads decodes the whole sub-block (its bytes are in L1 after the first) and keeps
 * its EP values; the arithmetic per element is wk_qvals's, so the values are bit for bit the
 * same. nitems = nsub * P. */
template <int Q, int D>
WK_DEV void wk_dequant(int64_t nitems, const uint8_t *__restrict__ q,
                       typename wk_t<D>::S *__restrict__ out)
{
    typedef typename wk_t<D>::S S;
    const int SUBS = wk_q<Q>::QK / 32;
    const int EP = 16 / (int)sizeof(S), P = 32 / EP;
    for (int64_t v = wk_tid(); v < nitems; v += wk_nthreads()) {
        const int64_t u = v / P, blk = u / SUBS;
        const int e0 = (int)(v - u * P) * EP, h = e0 >> 4; /* EP divides 16: one half */
        wk_qsub o;
        wk_q<Q>::sub(q + blk * wk_q<Q>::BYTES, (int)(u - blk * SUBS), o);
        wk_pack<S, EP> pk;
#pragma unroll
        for (int i = 0; i < EP / 4; i++) {
            const uint32_t w = wk_qword(o, (e0 >> 2) + i);
#pragma unroll
            for (int b = 0; b < 4; b++) {
                const float p = o.dw[h] * (float)(int)(signed char)(uint8_t)(w >> (8 * b));
                pk.v[4 * i + b] = wk_t<D>::st(wk_q<Q>::MIN ? p + o.mw[h] : p);
            }
        }
        ((wk_pack<S, EP> *)(out + u * 32 + e0))->raw = pk.raw;
    }
}

/* ---- embedding lookup */
template <int Q, int D>
WK_DEV void wk_qembed(int64_t nunits, int64_t spr, const wk_klay<1> &L, const void *ids, int idt,
                      int64_t sentinel, const uint8_t *__restrict__ w, int64_t rows,
                      typename wk_t<D>::S *__restrict__ out, uint32_t *err)
{
    const int SUBS = wk_q<Q>::QK / 32;
    const int64_t bpr = spr / SUBS; /* blocks per row */
    for (int64_t u = wk_tid(); u < nunits; u += wk_nthreads()) {
        const int64_t i = u / spr, j = u - i * spr;
        int64_t off[1];
        wk_koff(L, i, off);
        const int64_t id = wk_ldi(ids, off[0], idt);
        float y[32];
        if (id >= 0 && id < rows) {
            const int64_t blk = id * bpr + j / SUBS;
            wk_qsub o;
            wk_q<Q>::sub(w + blk * wk_q<Q>::BYTES, (int)(j % SUBS), o);
            wk_qvals<Q>(o, y);
        } else {
#pragma unroll
            for (int e = 0; e < 32; e++)
                y[e] = 0.0f;
            if (j == 0 && id != sentinel)
                wk_kerr(err, WK_KERR_QEMBEDDING, (uint64_t)id);
        }
        wk_qstore32<D>(out + u * 32, y);
    }
}

/* ---- activations to int8 blocks of 32 */
template <int D>
WK_DEV void wk_qquant(int64_t nblk, const typename wk_t<D>::S *__restrict__ x,
                      uint32_t *__restrict__ xq, float *__restrict__ xd)
{
    for (int64_t b = wk_tid(); b < nblk; b += wk_nthreads()) {
        float v[32];
        float amax = 0.0f;
        bool finite = true;
#pragma unroll
        for (int e = 0; e < 32; e++) {
            v[e] = wk_t<D>::ld(x[b * 32 + e]);
            const float a = fabsf(v[e]);
            finite = finite && a <= 3.40282347e38f; /* false for NaN and infinities */
            amax = a > amax ? a : amax;
        }
        float d, sc, id;
        wk_q8_grid(finite ? amax : 0.0f, d, sc, id);
        if (!finite)
            d = __int_as_float(0x7fc00000);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            uint32_t word = 0;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float r = roundf(v[4 * i + k] * sc * id); /* |r| <= 127 (+ rounding), finite */
                r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
                word |= ((uint32_t)(int)r & 0xFFu) << (8 * k);
            }
            xq[b * 8 + i] = word;
        }
        xd[b] = d;
    }
}

/* ---- matrix-vector products (rows <= R) */
#define WK_QMV_T 64                     /* threads per column group (a multiple of warpSize) */
#define WK_QMV_G (WK_BLOCK / WK_QMV_T)  /* groups per block */

template <int Q, int R, int NC, int U>
WK_DEV void wk_qmv(const uint8_t *__restrict__ w, const uint32_t *__restrict__ xq,
                   const float *__restrict__ xd, void *__restrict__ out, int dt, int64_t n,
                   int64_t k, int rows)
{
    const int SUBS = wk_q<Q>::QK / 32;
    const int64_t nsub = k / 32;                              /* sub-blocks per row */
    const int64_t rowbytes = k / wk_q<Q>::QK * wk_q<Q>::BYTES; /* bytes per weight row */
    const int g = (int)threadIdx.x / WK_QMV_T, t = (int)threadIdx.x % WK_QMV_T;
    const int64_t col0 = ((int64_t)blockIdx.x * WK_QMV_G + g) * NC;

    /* Columns past n read row n - 1 instead (n >= 1): the loads need no branch, so all U * NC
     * sub-blocks of a trip are issued before any is used; those sums are never stored. */
    const uint8_t *wr[NC];
#pragma unroll
    for (int c = 0; c < NC; c++)
        wr[c] = w + (col0 + c < n ? col0 + c : n - 1) * rowbytes;

    float acc[R][NC];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            acc[r][c] = 0.0f;

    /* U sub-blocks per thread per trip (u0, u0 + T, ..): loads of all of them first, then the
     * products in the same order as one at a time. A sub-block index past nsub reads u0's
     * (valid) and contributes nothing. */
    for (int64_t u0 = t; u0 < nsub; u0 += (int64_t)U * WK_QMV_T) {
        wk_qsub ws[U][NC];
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int64_t uj = u0 + (int64_t)j * WK_QMV_T < nsub ? u0 + (int64_t)j * WK_QMV_T : u0;
            const int64_t blk = uj / SUBS;
            const int s = (int)(uj - blk * SUBS);
#pragma unroll
            for (int c = 0; c < NC; c++)
                wk_q<Q>::sub(wr[c] + blk * wk_q<Q>::BYTES, s, ws[j][c]);
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int64_t u = u0 + (int64_t)j * WK_QMV_T;
            if (u >= nsub)
                break;
#pragma unroll
            for (int r = 0; r < R; r++) {
                if (r < rows) {
                    const wk_u32x4 *xp = (const wk_u32x4 *)(xq + ((int64_t)r * nsub + u) * 8);
                    const wk_u32x4 a = xp[0], b = xp[1];
                    const uint32_t xv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
                    const float dx = xd[(int64_t)r * nsub + u];
                    int xs0 = 0, xs1 = 0;
                    if (wk_q<Q>::MIN) {
#pragma unroll
                        for (int i = 0; i < 4; i++) {
                            xs0 = WK_DP4A(xv[i], 0x01010101u, xs0);
                            xs1 = WK_DP4A(xv[4 + i], 0x01010101u, xs1);
                        }
                    }
#pragma unroll
                    for (int c = 0; c < NC; c++) {
                        int i0 = 0, i1 = 0;
#pragma unroll
                        for (int i = 0; i < 4; i++) {
                            i0 = WK_DP4A(ws[j][c].q[i], xv[i], i0);
                            i1 = WK_DP4A(ws[j][c].q[4 + i], xv[4 + i], i1);
                        }
                        float p = ws[j][c].dw[0] * (float)i0 + ws[j][c].dw[1] * (float)i1;
                        if (wk_q<Q>::MIN)
                            p += ws[j][c].mw[0] * (float)xs0 + ws[j][c].mw[1] * (float)xs1;
                        acc[r][c] += dx * p;
                    }
                }
            }
        }
    }

    /* warp sums, then the 64 / warpSize warps of each group through shared memory */
    __shared__ float red[WK_BLOCK / 32][R * NC];
    const int W = warpSize, lane = (int)threadIdx.x % W, wid = (int)threadIdx.x / W;
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NC; c++) {
            float v = acc[r][c];
#pragma unroll 1
            for (int o = W / 2; o > 0; o >>= 1)
                v += WK_SHFL_DOWN(v, o);
            if (lane == 0)
                red[wid][r * NC + c] = v;
        }
    __syncthreads();
    const int wpg = WK_QMV_T / W; /* warps per group: 2 (32 lanes) or 1 (64 lanes) */
    for (int i = (int)threadIdx.x; i < WK_QMV_G * R * NC; i += WK_BLOCK) {
        const int gg = i / (R * NC), rc = i % (R * NC), r = rc / NC, c = rc % NC;
        const int64_t col = ((int64_t)blockIdx.x * WK_QMV_G + gg) * NC + c;
        if (r < rows && col < n) {
            float v = 0.0f;
            for (int q = 0; q < wpg; q++)
                v += red[gg * wpg + q][rc];
            wk_stf(out, (int64_t)r * n + col, dt, v);
        }
    }
}

/* ---- instantiations: X(name, qtype id) over the block types, per float dtype */
#define WK_QLIST(X)                                                                            \
    X(q4_0, WK_Q4_0) X(q4_1, WK_Q4_1) X(q5_0, WK_Q5_0) X(q5_1, WK_Q5_1) X(q8_0, WK_Q8_0)       \
    X(q8_1, WK_Q8_1) X(q2_k, WK_Q2_K) X(q3_k, WK_Q3_K) X(q4_k, WK_Q4_K) X(q5_k, WK_Q5_K)       \
    X(q6_k, WK_Q6_K) X(q8_k, WK_Q8_K)

#define WK_QDT(QN, Q, DN, D)                                                                   \
    WK_KERNEL dequant_##QN##_##DN(int64_t nitems, const uint8_t *q, void *out)                 \
    {                                                                                          \
        wk_dequant<Q, D>(nitems, q, (wk_t<D>::S *)out);                                        \
    }                                                                                          \
    WK_KERNEL qembed_##QN##_##DN(int64_t nunits, int64_t spr, wk_klay<1> L, const void *ids,   \
                                 int idt, int64_t sentinel, const uint8_t *w, int64_t rows,    \
                                 void *out, uint32_t *err)                                     \
    {                                                                                          \
        wk_qembed<Q, D>(nunits, spr, L, ids, idt, sentinel, w, rows, (wk_t<D>::S *)out, err);  \
    }
#define WK_QTYPE_KERNELS(QN, Q)                                                                \
    WK_QDT(QN, Q, f32, WK_DT_F32)                                                              \
    WK_QDT(QN, Q, f16, WK_DT_F16)                                                              \
    WK_QDT(QN, Q, bf16, WK_DT_BF16)                                                            \
    WK_KERNEL qmv1_##QN(const uint8_t *w, const uint32_t *xq, const float *xd, void *out,      \
                        int dt, int64_t n, int64_t k, int rows)                                \
    {                                                                                          \
        wk_qmv<Q, 1, 2, 1>(w, xq, xd, out, dt, n, k, rows);                                    \
    }                                                                                          \
    WK_KERNEL qmv2_##QN(const uint8_t *w, const uint32_t *xq, const float *xd, void *out,      \
                        int dt, int64_t n, int64_t k, int rows)                                \
    {                                                                                          \
        wk_qmv<Q, 2, 2, 1>(w, xq, xd, out, dt, n, k, rows);                                    \
    }                                                                                          \
    WK_KERNEL qmv4_##QN(const uint8_t *w, const uint32_t *xq, const float *xd, void *out,      \
                        int dt, int64_t n, int64_t k, int rows)                                \
    {                                                                                          \
        wk_qmv<Q, 4, 2, 1>(w, xq, xd, out, dt, n, k, rows);                                    \
    }                                                                                          \
    WK_KERNEL qmv8_##QN(const uint8_t *w, const uint32_t *xq, const float *xd, void *out,      \
                        int dt, int64_t n, int64_t k, int rows)                                \
    {                                                                                          \
        wk_qmv<Q, 8, 4, 1>(w, xq, xd, out, dt, n, k, rows);                                    \
    }
WK_QLIST(WK_QTYPE_KERNELS)

#define WK_QQUANT(DN, D)                                                                       \
    WK_KERNEL qquant_##DN(int64_t nblk, const void *x, uint32_t *xq, float *xd)                \
    {                                                                                          \
        wk_qquant<D>(nblk, (const wk_t<D>::S *)x, xq, xd);                                     \
    }
WK_QQUANT(f32, WK_DT_F32)
WK_QQUANT(f16, WK_DT_F16)
WK_QQUANT(bf16, WK_DT_BF16)
