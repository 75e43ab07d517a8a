/* mc.h: the pieces of the cp.async matrix-unit GEMM pipeline (kernels/gemm.h gemm_pipe_*, whose
 * comment describes the scheme) that other modules' implicit GEMMs share (kernels/conv.cu):
 * the swizzled staging of 16-bit operand tiles (mc_off, mc_swz), the tile copies (mc_load,
 * mc_src), one staged k tile's fragment products (mc_tile) and the store of a warp tile's
 * accumulators (mc_store). Blocks of WK_BLOCK = 256 threads, 8 warps of 32 lanes (a 64-lane
 * wave holds two), 2 along m x 4 along n. NVIDIA sm_80+ and the simt device (gpu.h's twins).
 * At the end: the wave form of the products and the store (mw_*) for CDNA's 64-lane MFMA, and
 * the two warp tilings as policies (mc_w32, mc_w64). */
#ifndef WK_KERNELS_MC_H
#define WK_KERNELS_MC_H
#include "mma.h"

#define MC_BK 32 /* k per staged tile */
#define MC_ST 4  /* stages */

/* The offset (elements) of (row, col) in a tile staged in rows of CPR 16-byte chunks, swizzled:
 * chunk q = row CPR + col / 8 sits at slot (q & 7) ^ x of its 128-byte line, x = the row (CPR
 * >= 8) or the line's index (CPR = 4: two rows per line) mod 8. */
template <int CPR> WK_DEV int mc_off(int row, int col)
{
    const int q = row * CPR + (col >> 3);
    const int x = (CPR >= 8 ? row : (row * CPR) >> 3) & 7;
    return ((q & ~7) | ((q & 7) ^ x)) * 8 + (col & 7);
}

/* mc_off as an element-place policy of mma.h's fragment loads. */
template <int CPR> struct mc_swz {
    static __device__ __forceinline__ int at(int row, int col) { return mc_off<CPR>(row, col); }
    static __device__ __forceinline__ const uint16_t *ptr(const uint16_t *s, int row, int c0,
                                                          int c1)
    {
        return s + mc_off<CPR>(row, c0 + c1);
    }
};

/* Issues the copies of one operand tile into stage s. The operand X is E x K: element (e, k) at
 * x[e*se + k*sk], x already at the tile's first e; ne = the tile's rows inside the operand
 * (1..BE). KC = 1: sk = 1, staged [e][k]; KC = 0: se = 1, staged [k][e]. k0: the tile's k. */
template <int BE, int KC>
WK_DEV void mc_load(uint16_t *s, const uint16_t *x, int64_t se, int64_t sk, int ne, int64_t K,
                    int64_t k0)
{
    enum { CPR = KC ? MC_BK / 8 : BE / 8, CH = BE * MC_BK / 8 / WK_BLOCK };
#pragma unroll
    for (int i = 0; i < CH; i++) {
        const int c = (int)threadIdx.x + i * WK_BLOCK;
        const int row = c / CPR, col = c % CPR * 8; /* staged position */
        const int e = KC ? row : col;
        const int64_t k = k0 + (KC ? col : row);
        uint16_t *d = s + mc_off<CPR>(row, col);
        const bool in = e < ne && k < K; /* the chunk's first element */
        const bool full = KC ? k + 8 <= K : e + 8 <= ne;
        if (in && !full) { /* cut by the operand's edge: element by element, zeros past it */
            wk_pack<uint16_t, 8> q;
#pragma unroll
            for (int j = 0; j < 8; j++)
                q.v[j] = KC ? (k + j < K ? x[e * se + k + j] : (uint16_t)0)
                            : (e + j < ne ? x[e + j + k * sk] : (uint16_t)0);
            ((wk_pack<uint16_t, 8> *)d)->raw = q.raw;
        } else {
            wk_cp_async16(d, in ? x + (KC ? e * se + k : e + k * sk) : x, in);
        }
    }
}

/* One operand's tile copies with the index math done once: the thread's first chunk's global
 * address and shared offset, advanced by constants (the rows of a pass of 256 chunks, and one k
 * tile per issue); full tiles (every row inside the operand, k0 + BK <= K) take it, the others
 * mc_load. Issues must come in tile order (the pointer moves one k tile each). */
template <int BE, int KC> struct mc_src {
    enum { CPR = KC ? MC_BK / 8 : BE / 8, CH = BE * MC_BK / 8 / WK_BLOCK,
           PASS = WK_BLOCK / CPR, SSTEP = PASS * CPR * 8 };
    const uint16_t *p; /* the thread's first chunk in the current k tile */
    int64_t step, kstep;
    int so;

    __device__ __forceinline__ void init(const uint16_t *x, int64_t se, int64_t sk)
    {
        const int row = (int)threadIdx.x / CPR, col = (int)threadIdx.x % CPR * 8;
        p = KC ? x + row * se + col : x + col + row * sk;
        step = (int64_t)PASS * (KC ? se : sk);
        kstep = KC ? (int64_t)MC_BK : MC_BK * sk;
        so = mc_off<CPR>(row, col);
    }
    /* the tile t (k0 = t BK) into stage s; full: the fast path applies */
    __device__ __forceinline__ void issue(uint16_t *s, bool full, const uint16_t *x, int64_t se,
                                          int64_t sk, int ne, int64_t K, int64_t k0)
    {
        if (full) {
#pragma unroll
            for (int i = 0; i < CH; i++)
                wk_cp_async16(s + so + i * SSTEP, p + i * step, true);
        } else {
            mc_load<BE, KC>(s, x, se, sk, ne, K, k0);
        }
        p += kstep;
    }
};

/* acc += the products of one staged k tile for the warp tile at (wm, wn); BF: bf16 operands
 * (else f16). */
template <int BF, int CA, int CB, int AKC, int BKC, int FM, int FN>
WK_DEV void mc_tile(float (*acc)[FN][4], const uint16_t *As, const uint16_t *Bs, int wm, int wn)
{
    wk_mma_tile<BF, MC_BK, AKC, BKC, mc_swz<CA>, mc_swz<CB>, FM, FN>(acc, As, Bs, wm, wn);
}

/* C (M x N, row stride ldc) <- the warp tile's accumulators, the warp tile at (r0, c0); pairs
 * of neighbouring columns as one 32-bit store where C allows it. */
template <int D, int FM, int FN>
WK_DEV void mc_store(float (*acc)[FN][4], typename wk_t<D>::S *cz, int64_t ldc, int64_t M,
                     int64_t N, int64_t r0, int64_t c0)
{
    typedef typename wk_t<D>::S S;
    const bool pair = ldc % 2 == 0 && ((uintptr_t)cz & (2 * sizeof(S) - 1)) == 0;
    const int l = (int)threadIdx.x & 31, g = l >> 2, tq = l & 3;
    /* rows and columns left inside C from the warp tile's corner (at most its size) */
    const int mr = (int)(M - r0 < FM * 16 ? M - r0 : FM * 16);
    const int nc = (int)(N - c0 < FN * 8 ? N - c0 : FN * 8);
    if (mr <= 0 || nc <= 0)
        return;
    typename wk_t<D>::S *const cw = cz + r0 * ldc + c0;
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = i * 16 + g + 8 * h;
            if (r >= mr)
                continue;
            typename wk_t<D>::S *cr = cw + r * ldc;
#pragma unroll
            for (int j = 0; j < FN; j++) {
                const int col = j * 8 + 2 * tq;
                wk_pack<S, 2> q;
                if constexpr (D == WK_DT_F16 || D == WK_DT_BF16) {
                    /* one conversion instruction for the pair on NVIDIA (mma.h fl_pack2) */
                    const uint32_t w = fl_pack2<D == WK_DT_BF16>(acc[i][j][2 * h],
                                                                 acc[i][j][2 * h + 1]);
                    q.v[0] = (S)(w & 0xffffu), q.v[1] = (S)(w >> 16);
                } else {
                    q.v[0] = wk_t<D>::st(acc[i][j][2 * h]);
                    q.v[1] = wk_t<D>::st(acc[i][j][2 * h + 1]);
                }
                if (pair && col + 1 < nc) {
                    ((wk_pack<S, 2> *)(cr + col))->raw = q.raw;
                } else {
                    if (col < nc)
                        cr[col] = q.v[0];
                    if (col + 1 < nc)
                        cr[col + 1] = q.v[1];
                }
            }
        }
}


/* ---- the same pipeline on 64-lane waves (CDNA's MFMA; gpu.h wk_mfma_16x16x16): a block of
 * WK_BLOCK = 256 threads is 4 waves, 2 along m x 2 along n; a wave tile of FM x FN products of
 * 16 x 16 x 16. The staged tiles are the ones above. */

/* The 64-bit fragment word of lane l for a wave product: the values (e0 + l % 16, k0 + 4 (l / 16)
 * + 0..3) of a tile staged [e][k] (KC = 1: the four lie in one 16-byte chunk, one 8-byte read) or
 * [k][e] (KC = 0: four reads), CPR chunks a row, swizzled by mc_off. */
template <int KC, int CPR> WK_DEV uint64_t mw_frag(const uint16_t *s, int e0, int k0)
{
    const int l = (int)threadIdx.x & 63, e = e0 + (l & 15), k = k0 + 4 * (l >> 4);
    if (KC)
        return *(const uint64_t *)(s + mc_off<CPR>(e, k));
    uint64_t r = 0;
#pragma unroll
    for (int h = 0; h < 4; h++)
        r |= (uint64_t)s[mc_off<CPR>(k + h, e)] << 16 * h;
    return r;
}

/* acc += the products of one staged k tile for the wave tile at (wm, wn). */
template <int BF, int CA, int CB, int AKC, int BKC, int FM, int FN>
WK_DEV void mw_tile(float (*acc)[FN][4], const uint16_t *As, const uint16_t *Bs, int wm, int wn)
{
#pragma unroll
    for (int kk = 0; kk < MC_BK; kk += 16) {
        uint64_t af[FM], bf[FN];
#pragma unroll
        for (int i = 0; i < FM; i++)
            af[i] = mw_frag<AKC, CA>(As, wm + 16 * i, kk);
#pragma unroll
        for (int j = 0; j < FN; j++)
            bf[j] = mw_frag<BKC, CB>(Bs, wn + 16 * j, kk);
#pragma unroll
        for (int i = 0; i < FM; i++)
#pragma unroll
            for (int j = 0; j < FN; j++)
                wk_mfma_16x16x16<BF>(acc[i][j], af[i], bf[j]);
    }
}

/* C <- the wave tile's accumulators (acc[i][j][v] is C[16 i + 4 (l / 16) + v][16 j + l % 16] of
 * the wave tile at (r0, c0)); sixteen lanes store sixteen neighbouring columns. */
template <int D, int FM, int FN>
WK_DEV void mw_store(float (*acc)[FN][4], typename wk_t<D>::S *cz, int64_t ldc, int64_t M,
                     int64_t N, int64_t r0, int64_t c0)
{
    const int l = (int)threadIdx.x & 63, cl = l & 15, q = l >> 4;
    const int mr = (int)(M - r0 < FM * 16 ? M - r0 : FM * 16);
    const int nc = (int)(N - c0 < FN * 16 ? N - c0 : FN * 16);
    if (mr <= 0 || nc <= 0)
        return;
    typename wk_t<D>::S *const cw = cz + r0 * ldc + c0;
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int v = 0; v < 4; v++) {
            const int r = 16 * i + 4 * q + v;
#pragma unroll
            for (int j = 0; j < FN; j++)
                if (r < mr && 16 * j + cl < nc)
                    cw[r * ldc + 16 * j + cl] = wk_t<D>::st(acc[i][j][v]);
        }
}

/* The warp tilings of a BM x BN block tile, as policies of one pipeline (kernels/gemm.h
 * mc_body): mc_w32, 8 warps of 32 lanes (2 x 4) on 16 x 8 x 16 fragment products, MC_ST stages;
 * mc_w64, 4 waves of 64 lanes (2 x 2) on 16 x 16 x 16 wave products, MW_ST stages: AMD has no
 * asynchronous copy (gpu.h's twin loads and stores at the issue), so stages beyond two hide no
 * latency there, and two (32 KiB for 128 x 128) leave room for two blocks in a CU's 64 KiB. */
#define MW_ST 2
template <int BM, int BN> struct mc_w32 {
    enum { WM = BM / 2, WN = BN / 4, FM = WM / 16, FN = WN / 8, ST = MC_ST };
    static __device__ __forceinline__ int wm() { return ((int)threadIdx.x >> 7) * WM; }
    static __device__ __forceinline__ int wn() { return ((int)threadIdx.x >> 5 & 3) * WN; }
    template <int BF, int CA, int CB, int AKC, int BKC>
    static __device__ __forceinline__ void tile(float (*acc)[FN][4], const uint16_t *As,
                                                const uint16_t *Bs, int m, int n)
    {
        mc_tile<BF, CA, CB, AKC, BKC, FM, FN>(acc, As, Bs, m, n);
    }
    template <int D>
    static __device__ __forceinline__ void store(float (*acc)[FN][4], typename wk_t<D>::S *cz,
                                                 int64_t ldc, int64_t M, int64_t N, int64_t r0,
                                                 int64_t c0)
    {
        mc_store<D, FM, FN>(acc, cz, ldc, M, N, r0, c0);
    }
};
template <int BM, int BN> struct mc_w64 {
    enum { WM = BM / 2, WN = BN / 2, FM = WM / 16, FN = WN / 16, ST = MW_ST };
    static __device__ __forceinline__ int wm() { return ((int)threadIdx.x >> 7) * WM; }
    static __device__ __forceinline__ int wn() { return ((int)threadIdx.x >> 6 & 1) * WN; }
    template <int BF, int CA, int CB, int AKC, int BKC>
    static __device__ __forceinline__ void tile(float (*acc)[FN][4], const uint16_t *As,
                                                const uint16_t *Bs, int m, int n)
    {
        mw_tile<BF, CA, CB, AKC, BKC, FM, FN>(acc, As, Bs, m, n);
    }
    template <int D>
    static __device__ __forceinline__ void store(float (*acc)[FN][4], typename wk_t<D>::S *cz,
                                                 int64_t ldc, int64_t M, int64_t N, int64_t r0,
                                                 int64_t c0)
    {
        mw_store<D, FM, FN>(acc, cz, ldc, M, N, r0, c0);
    }
};

#endif
