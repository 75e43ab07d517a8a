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
 *
 * The decode matrix-vector products (rows of x <= 8) are in qmv.cu. */
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
    WK_QDT(QN, Q, bf16, WK_DT_BF16)
WK_QLIST(WK_QTYPE_KERNELS)
