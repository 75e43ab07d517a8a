/* mma.h: fragments of the 16 x 8 x 16 matrix-unit products (gpu.h, wk_mma_16816) from tiles
 * staged in shared memory as 16-bit values; kernels/gemm.h and kernels/flash.cu. A tile is
 * staged [e][k] (KC = 1: rows along the reduction index k) or [k][e] (KC = 0), rows of LD
 * elements; on NVIDIA sm_80+ the fragments come by ldmatrix (plain for [e][k], .trans for
 * [k][e]), elsewhere by plain 16-bit reads: both give the registers of gpu.h's layout. */
#ifndef WK_MMA_H
#define WK_MMA_H

#include "gpu.h"

/* Where element (row, col) of a staged tile lies (in elements): T::at(row, col), and
 * T::ptr(s, row, c0, c1) the address of (row, c0 + c1). wk_tile_rows<LD>:
 * plain rows of LD elements (padded tiles); kernels/gemm.h's cp.async tiles are swizzled. */
template <int LD> struct wk_tile_rows {
    static __device__ __forceinline__ int at(int row, int col) { return row * LD + col; }
    /* the place of (row, c0 + c1) as a pointer (the sum in this order, as the kernels had it) */
    static __device__ __forceinline__ const uint16_t *ptr(const uint16_t *s, int row, int c0,
                                                          int c1)
    {
        return s + row * LD + c0 + c1;
    }
};

/* r[0..3] <- four 8 x 8 matrices of a staged tile s (element places by T) in fragment layout:
 * matrix i at e0 + eo_i, k0 + ko_i, with (eo, ko) = (8 (i & 1), 8 (i >> 1)) for an A fragment
 * (AO = 1: a[0..3] of m16 x k16) and (8 (i >> 1), 8 (i & 1)) for two B fragments (AO = 0:
 * b[0..1] of columns e0..e0+7, then of e0+8..e0+15). */
template <int KC, class T, int AO>
WK_DEV void wk_mma_frag_at(uint32_t *r, const uint16_t *s, int e0, int k0)
{
    const int l = (int)threadIdx.x & 31;
#if WK_MMA_NATIVE
    const int i = l >> 3;
    const int eo = AO ? (i & 1) * 8 : (i >> 1) * 8, ko = AO ? (i >> 1) * 8 : (i & 1) * 8;
    if (KC)
        wk_ldsm_x4(r, T::ptr(s, e0 + eo + (l & 7), k0, ko));
    else
        wk_ldsm_x4_t(r, T::ptr(s, k0 + ko + (l & 7), e0, eo));
#else
    const int g = l >> 2, t = l & 3;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int eo = AO ? (i & 1) * 8 : (i >> 1) * 8, ko = AO ? (i >> 1) * 8 : (i & 1) * 8;
        const int e = e0 + eo + g, k = k0 + ko + 2 * t;
        const uint32_t lo = KC ? s[T::at(e, k)] : s[T::at(k, e)];
        const uint32_t hi = KC ? s[T::at(e, k + 1)] : s[T::at(k + 1, e)];
        r[i] = lo | hi << 16;
    }
#endif
}

/* The same for plain rows of LD elements. */
template <int KC, int LD, int AO>
WK_DEV void wk_mma_frag(uint32_t *r, const uint16_t *s, int e0, int k0)
{
    wk_mma_frag_at<KC, wk_tile_rows<LD>, AO>(r, s, e0, k0);
}

/* Accumulators of FM x FN fragment products to zero. */
template <int FM, int FN> WK_DEV void wk_mma_zero(float (&acc)[FM][FN][4])
{
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
#pragma unroll
            for (int q = 0; q < 4; q++)
                acc[i][j][q] = 0.0f;
}

/* acc += the products of one staged k tile of BK (a multiple of 16) for the warp tile at (wm,
 * wn): BK / 16 steps of FM x FN fragment products. As, Bs: the A and B tiles, staged [e][k]
 * (AKC / BKC = 1) or [k][e], element places by TA / TB; BF: bf16 (1) or f16 (0) operands. */
template <int BF, int BK, int AKC, int BKC, class TA, class TB, int FM, int FN>
WK_DEV void wk_mma_tile(float (*acc)[FN][4], const uint16_t *As, const uint16_t *Bs, int wm,
                        int wn)
{
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
        uint32_t af[FM][4], bf[FN][2];
#pragma unroll
        for (int i = 0; i < FM; i++)
            wk_mma_frag_at<AKC, TA, 1>(af[i], As, wm + i * 16, kk);
#pragma unroll
        for (int j = 0; j < FN; j += 2) {
            uint32_t r[4];
            wk_mma_frag_at<BKC, TB, 0>(r, Bs, wn + j * 8, kk);
            bf[j][0] = r[0], bf[j][1] = r[1], bf[j + 1][0] = r[2], bf[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < FM; i++)
#pragma unroll
            for (int j = 0; j < FN; j++)
                wk_mma_16816<BF>(acc[i][j], af[i], bf[j]);
    }
}

/* ---- softmax pieces of the attention kernels on the matrix units (kernels/flash.cu and the
 * decode kernel of kernels/attn.h) */

/* The 16-bit storage type of a matrix-unit operand (BF: bf16, else f16), for its conversions. */
template <int BF> struct fl_t : wk_t<BF ? WK_DT_BF16 : WK_DT_F16> {};

/* lo and hi rounded to the dtype (to nearest even), packed (lo in the low half). NVIDIA sm_80+:
 * one cvt instruction (IEEE rounding, subnormals kept, as gpu.h's conversion; a NaN may carry
 * another payload, which changes nothing here: a NaN p makes its row NaN either way, and a
 * NaN accumulator of the matrix units (mc.h mc_store) has the canonical payload already).
 * Elsewhere gpu.h's integer conversion. For f16 that conversion is long: in the GEMM's store
 * it cost gemm_pipe_128x256_f16 a quarter of its time at 4096^3 (H200: 233 TFLOP/s, 305 with this). */
template <int BF> WK_DEV uint32_t fl_pack2(float lo, float hi)
{
#if WK_MMA_NATIVE
    uint32_t r;
    if (BF)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return (uint32_t)fl_t<BF>::st(lo) | (uint32_t)fl_t<BF>::st(hi) << 16;
#endif
}

/* 2^x with results below the normal range flushed to zero: ex2.approx.ftz on NVIDIA sm_80+
 * (one instruction; exp2f's non-flushing form takes four), exp2f and the same flush elsewhere.
 * The flushed weights (p < 2^-126) are within the bound of docs/semantics.md. */
WK_DEV float fl_exp2(float x)
{
#if WK_MMA_NATIVE
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    const float r = exp2f(x);
    return r < 1.17549435e-38f ? 0.f : r;
#endif
}

#endif
