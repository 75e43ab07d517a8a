/* gemm.h: wick's portable tiled GEMM, the same source for NVIDIA and AMD. Its kernels are
 * compiled in three modules by dtype, so that no one module's run-time compile holds the others
 * up (docs/performance.md, "Run-time compilation and the kernel cache"): kernels/matmul.cu (f32,
 * f64, f8e4m3), kernels/matmul_f16.cu and kernels/matmul_bf16.cu, each a list of the GEMM_*
 * macros at the end; src/gpu/gpu_matmul.c mm_module names the module of a dtype.
 * It serves where no vendor BLAS is present, and everywhere with WICK_GEMM=portable.
 *
 *   gemm_<unit>_<tile>_<dt>(a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c, c_bs, ldc, M, N, K,
 *                           amode, bmode)
 *       for batch z = blockIdx.z: C_z (M x N, row stride ldc) = A_z (M x K) @ B_z (K x N), where
 *       element (r, k) of A_z is a[z*a_bs + r*a_rs + k*a_cs] (any strides >= 0, no copies), the
 *       same for B; C_z starts at c + z*c_bs. Accumulation in f32 (f64 for f64), one rounding on
 *       store. The host chunks the grid (grid.y <= 65535 row tiles, grid.z <= 65535 batches) by
 *       moving the pointers.
 *   Units (src/gpu/gpu_matmul.c mm_pick chooses): fma (the FMA units, every dtype, here), mma
 *   and pipe (NVIDIA's matrix units and the simt device; f16, bf16, f8e4m3: below), mfma (CDNA's
 *   matrix units and the simt device with 64-lane warps; f16, bf16: at the end).
 *   dt: f32, f64, f16, bf16, f8e4m3 (the 8-bit type reaches only these kernels).
 *
 * gemm_fma_<tile>: tile 128x128 (8 x 8 outputs per thread, large problems) or 64x64 (4 x 4,
 * small problems: more blocks). Scheme (a block of 256 threads = 16 x 16, BK = 8):
 *   - the A tile (BM x BK) and the B tile (BK x BN) are staged in shared memory, both k-major
 *     (As[k][m], Bs[k][n]) so that a thread reads its outputs' operands as short vectors;
 *   - each operand tile is read by every thread as V = BM*BK/256 consecutive elements, along
 *     k ("mode 0": the operand is contiguous along k, e.g. a row-major A) or along m/n ("mode
 *     1": contiguous along m/n, e.g. a row-major B or a transposed A), so the global reads are
 *     coalesced for row-major and transposed operands alike; with the contiguous stride 1 and
 *     an aligned base, a full tile is read as one vector access per thread ("vec", bit 1 of the
 *     mode), else element by element with bounds checks (edges, odd strides);
 *   - double buffering: the next tile is loaded into registers while the current one is
 *     multiplied, then stored to the other shared buffer; one barrier per k step;
 *   - a thread's outputs are TM x TM in groups of 4 rows (and columns) 64 apart, so that the
 *     shared reads of a warp are contiguous 16-byte vectors without bank conflicts.
 * Products use fma (fmaf / fma): IEEE fused multiply-add, exact on both vendors, allowed under
 * -fmad=false / -ffp-contract=off (which only stop the compiler from fusing on its own). */
#ifndef WK_GEMM_H
#define WK_GEMM_H
#include "mma.h"

#define MM_BK 8
#define MM_PAD 4 /* shared row padding (elements): no bank conflicts on the mode-0 stores */

WK_DEV float mm_fma(float x, float y, float acc) { return fmaf(x, y, acc); }
WK_DEV double mm_fma(double x, double y, double acc) { return fma(x, y, acc); }

/* v[0..3] <- s[0..3] (shared memory, 16-byte aligned) as 16-byte loads. */
template <class C> WK_DEV void mm_ld4(C *v, const C *s)
{
    const int P = 16 / (int)sizeof(C); /* elements per 16 bytes: 4 (float) or 2 (double) */
#pragma unroll
    for (int h = 0; h < 4 / P; h++) {
        wk_pack<C, P> q;
        q.raw = ((const wk_pack<C, P> *)s)[h].raw;
#pragma unroll
        for (int e = 0; e < P; e++)
            v[h * P + e] = q.v[e];
    }
}

/* r[0..V) <- p[0..V) (global memory, aligned to V elements) as accesses of up to 16 bytes. */
template <class S, int V> WK_DEV void mm_vload(S *r, const S *p)
{
    const int P = V * (int)sizeof(S) <= 16 ? V : 16 / (int)sizeof(S);
#pragma unroll
    for (int h = 0; h < V / P; h++) {
        wk_pack<S, P> q;
        q.raw = ((const wk_pack<S, P> *)p)[h].raw;
#pragma unroll
        for (int e = 0; e < P; e++)
            r[h * P + e] = q.v[e];
    }
}

/* One operand's tile loader. The operand X is E x K (E = M for A, N for B): element (e, k) at
 * x[e*se + k*sk]. Tile t covers e in [e0, e0+BM), k in [t*BK, t*BK+BK). */
template <int D, int BM> struct mm_loader {
    typedef typename wk_t<D>::S S;
    typedef typename wk_t<D>::C C;
    enum { V = BM * MM_BK / WK_BLOCK }; /* elements per thread and tile: 4 (l) or 2 (s) */

    const S *x;      /* the batch's operand */
    int64_t se, sk;  /* strides along e and k */
    int64_t E, K;
    int64_t e;       /* this thread's first e (absolute) */
    int kk;          /* this thread's first k within the tile */
    int es;          /* this thread's first e within the tile (shared column) */
    int mode;        /* 0: V consecutive k at one e; 1: V consecutive e at one k */
    bool vec;        /* the contiguous stride is 1 and the base aligned for V elements */
    S r[V];          /* the prefetched elements */

    __device__ __forceinline__ void init(const S *x_, int64_t se_, int64_t sk_, int64_t E_,
                                         int64_t K_, int64_t e0, int mode_)
    {
        x = x_, se = se_, sk = sk_, E = E_, K = K_;
        mode = mode_ & 1;
        vec = (mode_ & 2) != 0;
        const int t = (int)threadIdx.x;
        if (mode == 0) { /* MM_BK / V threads per e, BM rows of them */
            const int tpr = MM_BK / V;
            es = t / tpr;
            kk = (t % tpr) * V;
        } else { /* BM / V threads per k, MM_BK rows of them */
            const int tpk = BM / V;
            kk = t / tpk;
            es = (t % tpk) * V;
        }
        e = e0 + es;
    }

    /* r <- the thread's elements of the tile starting at k0 (zeros outside the operand). */
    __device__ __forceinline__ void load(int64_t k0)
    {
        const int64_t k = k0 + kk;
        if (mode == 0) {
            if (vec && e < E && k + V <= K) {
                mm_vload<S, V>(r, x + e * se + k);
            } else {
#pragma unroll
                for (int j = 0; j < V; j++)
                    r[j] = e < E && k + j < K ? x[e * se + (k + j) * sk] : (S)0;
            }
        } else {
            if (vec && k < K && e + V <= E) {
                mm_vload<S, V>(r, x + e + k * sk);
            } else {
#pragma unroll
                for (int j = 0; j < V; j++)
                    r[j] = k < K && e + j < E ? x[(e + j) * se + k * sk] : (S)0;
            }
        }
    }

    /* The tile in shared memory, k-major: s[k][e], converted to the compute type. Raw zero
     * bits are +0 in every float dtype, so the zeros of load() convert to 0. */
    __device__ __forceinline__ void store(C (*s)[BM + MM_PAD]) const
    {
        if (mode == 0) {
#pragma unroll
            for (int j = 0; j < V; j++)
                s[kk + j][es] = wk_t<D>::ld(r[j]);
        } else {
#pragma unroll
            for (int j = 0; j < V; j++)
                s[kk][es + j] = wk_t<D>::ld(r[j]);
        }
    }
};

/* The kernel body: BM x BM block tile, TM x TM outputs per thread (TM = BM / 16). */
template <int D, int BM>
WK_DEV void mm_gemm(const typename wk_t<D>::S *__restrict__ a, int64_t a_bs, int64_t a_rs,
                    int64_t a_cs, const typename wk_t<D>::S *__restrict__ b, int64_t b_bs,
                    int64_t b_rs, int64_t b_cs, typename wk_t<D>::S *__restrict__ c,
                    int64_t c_bs, int64_t ldc, int64_t M, int64_t N, int64_t K, int amode,
                    int bmode)
{
    typedef typename wk_t<D>::C C;
    enum { TM = BM / 16 };
    __shared__ C As[2][MM_BK][BM + MM_PAD] __attribute__((aligned(16)));
    __shared__ C Bs[2][MM_BK][BM + MM_PAD] __attribute__((aligned(16)));

    const int64_t z = blockIdx.z;
    const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BM;
    mm_loader<D, BM> la, lb;
    la.init(a + z * a_bs, a_rs, a_cs, M, K, m0, amode);
    lb.init(b + z * b_bs, b_cs, b_rs, N, K, n0, bmode);

    const int tx = (int)threadIdx.x % 16, ty = (int)threadIdx.x / 16;
    C acc[TM][TM];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TM; j++)
            acc[i][j] = (C)0;

    const int64_t tiles = (K + MM_BK - 1) / MM_BK;
    if (tiles > 0) {
        la.load(0);
        lb.load(0);
        la.store(As[0]);
        lb.store(Bs[0]);
    }
    __syncthreads();
    for (int64_t t = 0; t < tiles; t++) {
        const int cur = (int)(t & 1);
        const bool more = t + 1 < tiles; /* uniform over the block */
        if (more) {
            la.load((t + 1) * MM_BK);
            lb.load((t + 1) * MM_BK);
        }
#pragma unroll
        for (int k = 0; k < MM_BK; k++) {
            C ra[TM], rb[TM];
#pragma unroll
            for (int g = 0; g < TM / 4; g++) {
                mm_ld4(ra + 4 * g, &As[cur][k][g * 64 + ty * 4]);
                mm_ld4(rb + 4 * g, &Bs[cur][k][g * 64 + tx * 4]);
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TM; j++)
                    acc[i][j] = mm_fma(ra[i], rb[j], acc[i][j]);
        }
        if (more) { /* the other buffer was last read before the previous barrier */
            la.store(As[cur ^ 1]);
            lb.store(Bs[cur ^ 1]);
        }
        __syncthreads();
    }

    typename wk_t<D>::S *cz = c + z * c_bs;
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int64_t r = m0 + (i / 4) * 64 + ty * 4 + (i % 4);
        if (r >= M)
            continue;
#pragma unroll
        for (int j = 0; j < TM; j++) {
            const int64_t col = n0 + (j / 4) * 64 + tx * 4 + (j % 4);
            if (col < N)
                cz[r * ldc + col] = wk_t<D>::st(acc[i][j]);
        }
    }
}

#define MM_ARGS(DT)                                                                            \
    const typename wk_t<DT>::S *__restrict__ a, int64_t a_bs, int64_t a_rs, int64_t a_cs,       \
        const typename wk_t<DT>::S *__restrict__ b, int64_t b_bs, int64_t b_rs, int64_t b_cs,   \
        typename wk_t<DT>::S *__restrict__ c, int64_t c_bs, int64_t ldc, int64_t M, int64_t N, \
        int64_t K, int amode, int bmode
#define MM_PASS a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs, c, c_bs, ldc, M, N, K, amode, bmode
#define MM_KERNELS(NAME, DT)                                                                   \
    WK_KERNEL gemm_fma_128x128_##NAME(MM_ARGS(DT)) { mm_gemm<DT, 128>(MM_PASS); }             \
    WK_KERNEL gemm_fma_64x64_##NAME(MM_ARGS(DT)) { mm_gemm<DT, 64>(MM_PASS); }


/* The 32-lane matrix-unit kernels below (mma, pipe) are not compiled for AMD: the host
 * takes them on NVIDIA sm_80+ and the simt device with 32-lane warps (src/gpu/gpu_matmul.c
 * wk_gpu_matrix_units); on AMD the shuffle twin of the 16 x 8 x 16 product would be slower than
 * the FMA kernels above, and compiling them for the six AOT gfx targets cost ~9 minutes of a
 * 2-core build. CDNA's MFMA has its own kernels (gemm_mfma_*, at the end), compiled for the gfx
 * targets that have it and for the simt device, which runs them with 64-lane warps. */

/* The product (gpu.h wk_mma_16816's BF) of a storage dtype's 16-bit operand: f16 and bf16 as
 * they are, f8e4m3 widened to f16 as it is staged. */
template <int D> struct mt_in;
template <> struct mt_in<WK_DT_F16> {
    enum { BF = 0 };
};
template <> struct mt_in<WK_DT_BF16> {
    enum { BF = 1 };
};
template <> struct mt_in<WK_DT_F8E4M3> {
    enum { BF = 0 };
};

#if !defined(WK_HIP)

/* ---------------------------------------------------------------- on matrix units
 *   gemm_mma_<tile>_<dt>: the same arguments and result, for f16, bf16 and f8e4m3 (widened to f16
 *   as it is staged: every e4m3 value is an f16 value, so f8e4m3 runs at the f16 rate), with the
 *   16 x 8 x 16 fragment products of gpu.h (wk_mma_16816: mma.sync on NVIDIA sm_80+, the
 *   shuffle twin elsewhere). f32 accumulation, one rounding on store.
 *   tile 128x128: warp tile 64 x 32; 64x64: warp tile 32 x 16.
 * Scheme (256 threads = 8 warps of 32 lanes, 2 along m x 4 along n; BK = 32):
 *   - each operand tile is staged in shared memory as 16-bit values in the operand's own
 *     contiguous direction: [e][k] (rows of BK + 8) when it is contiguous along k (row-major A,
 *     transposed B), [k][e] (rows of BM + 8) when contiguous along m / n (transposed A,
 *     row-major B); a thread moves 8-element chunks, one vector access each where the host's
 *     mode says so (bit 1, as for the kernels above), element by element with bounds checks
 *     otherwise (zeros outside the operand);
 *   - fragments come from shared memory by ldmatrix (plain for [e][k], .trans for [k][e]) on
 *     NVIDIA sm_80+, by plain 16-bit reads elsewhere: both give the registers of gpu.h's layout.
 *     The padding of 8 elements puts the 8 rows of an 8 x 8 matrix in distinct banks (row
 *     strides of 80, 144 and 272 bytes);
 *   - double buffering as above: the next tile goes to registers during the products, then to
 *     the other shared buffer; one barrier per k step.
 * A 64-lane wave holds two of the 32-lane warps (gpu.h's matrix-unit note). */
#define MT_BK 32
#define MT_PAD 8

/* One operand tile's loader. The operand X is E x K: element (e, k) at x[e*se + k*sk]; tile t
 * covers e in [e0, e0 + BM), k in [t*BK, t*BK + BK). KC = 1: read along k, staged [e][k];
 * KC = 0: read along e, staged [k][e]. It holds only the prefetched chunks: the operand's
 * pointer, strides and sizes come with each call from the kernel's arguments (so they need not
 * occupy registers across the products), and a chunk's place in the tile from threadIdx. */
template <int D, int BM, int KC> struct mt_loader {
    typedef typename wk_t<D>::S S;
    enum { CH = BM * MT_BK / 8 / WK_BLOCK, LD = KC ? MT_BK + MT_PAD : BM + MT_PAD };
    wk_pack<S, 8> r[CH]; /* the prefetched chunks, packed (8 or 16 bytes each) */

    /* chunk i's first element within the tile: (e, k) */
    static __device__ __forceinline__ int ce(int i)
    {
        const int c = (int)threadIdx.x + i * WK_BLOCK;
        return KC ? c / (MT_BK / 8) : c % (BM / 8) * 8;
    }
    static __device__ __forceinline__ int ck(int i)
    {
        const int c = (int)threadIdx.x + i * WK_BLOCK;
        return KC ? c % (MT_BK / 8) * 8 : c / (BM / 8);
    }

    /* r <- the chunks of the tile at k0 (zeros outside the operand); vec: the contiguous
     * stride is 1 and every chunk aligned (the host's mode bit 1). */
    __device__ __forceinline__ void load(const S *x, int64_t se, int64_t sk, int64_t E, int64_t K,
                                         int64_t e0, int mode, int64_t k0)
    {
        const bool vec = (mode & 2) != 0;
#pragma unroll
        for (int i = 0; i < CH; i++) {
            const int64_t e = e0 + ce(i), k = k0 + ck(i);
            if (KC) {
                if (vec && e < E && k + 8 <= K) {
                    r[i].raw = ((const wk_pack<S, 8> *)(x + e * se + k))->raw;
                } else {
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        r[i].v[j] = e < E && k + j < K ? x[e * se + (k + j) * sk] : (S)0;
                }
            } else {
                if (vec && k < K && e + 8 <= E) {
                    r[i].raw = ((const wk_pack<S, 8> *)(x + e + k * sk))->raw;
                } else {
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        r[i].v[j] = k < K && e + j < E ? x[(e + j) * se + k * sk] : (S)0;
                }
            }
        }
    }

    /* The chunks as 16-bit values, one 16-byte store each (raw zeros are +0 in every dtype);
     * f8e4m3 widened a pair at a time (gpu.h wk_f8x2_to_f16x2: one instruction on sm_90). */
    __device__ __forceinline__ void store(uint16_t *s) const
    {
#pragma unroll
        for (int i = 0; i < CH; i++) {
            wk_pack<uint32_t, 4> q;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if constexpr (D == WK_DT_F8E4M3)
                    q.v[j] = wk_f8x2_to_f16x2((uint16_t)(r[i].v[2 * j] | r[i].v[2 * j + 1] << 8));
                else
                    q.v[j] = (uint32_t)r[i].v[2 * j] | (uint32_t)r[i].v[2 * j + 1] << 16;
            }
            uint16_t *d = KC ? s + ce(i) * LD + ck(i) : s + ck(i) * LD + ce(i);
            ((wk_pack<uint32_t, 4> *)d)->raw = q.raw;
        }
    }
};

/* acc += the products of one staged k tile (As: the A tile, Bs: the B tile, one stage) for the
 * warp tile at (wm, wn): BK / 16 steps of FM x FN fragment products. */
template <int D, int BM, int AKC, int BKC, int FM, int FN>
WK_DEV void mt_tile(float (*acc)[FN][4], const uint16_t *As, const uint16_t *Bs, int wm, int wn)
{
    enum { LDA = AKC ? MT_BK + MT_PAD : BM + MT_PAD, LDB = BKC ? MT_BK + MT_PAD : BM + MT_PAD };
    typedef wk_tile_rows<LDA> TA;
    typedef wk_tile_rows<LDB> TB;
    wk_mma_tile<mt_in<D>::BF, MT_BK, AKC, BKC, TA, TB, FM, FN>(acc, As, Bs, wm, wn);
}

/* The pipeline: two shared stages and two register sets (p, q), so that a tile's global loads
 * are issued two tile-products before it is stored to shared memory (one product of a 128 x 128
 * x 32 tile is shorter than a global load's latency on an H200). Step 2u: products of stage 0
 * (tile 2u) while tile 2u+2 loads into p; then q (tile 2u+1) to stage 1. Step 2u+1: products of
 * stage 1 while tile 2u+3 loads into q; then p to stage 0. Each stage is written only after the
 * barrier that follows its last read. */
template <int D, int BM, int AKC, int BKC>
WK_DEV void mt_body(uint16_t *smem, MM_ARGS(D))
{
    typedef mt_loader<D, BM, AKC> LA;
    typedef mt_loader<D, BM, BKC> LB;
    enum { WM = BM / 2, WN = BM / 4, FM = WM / 16, FN = WN / 8,
           SZ = BM * (MT_BK + MT_PAD) > MT_BK * (BM + MT_PAD) ? BM * (MT_BK + MT_PAD)
                                                              : MT_BK * (BM + MT_PAD) };
    uint16_t *const A0 = smem, *const A1 = smem + SZ, *const B0 = smem + 2 * SZ,
                   *const B1 = smem + 3 * SZ;

    const int64_t z = blockIdx.z;
    const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BM;
    LA pa, qa;
    LB pb, qb;
#define MT_LOAD(la, lb, t)                                                                     \
    do {                                                                                       \
        la.load(a + z * a_bs, a_rs, a_cs, M, K, m0, amode, (t) * MT_BK);                       \
        lb.load(b + z * b_bs, b_cs, b_rs, N, K, n0, bmode, (t) * MT_BK);                       \
    } while (0)
    const int w = (int)threadIdx.x >> 5, wm = (w >> 2) * WM, wn = (w & 3) * WN;

    float acc[FM][FN][4];
    wk_mma_zero(acc);

    const int64_t tiles = (K + MT_BK - 1) / MT_BK; /* every condition below is block-uniform */
    if (tiles > 0) {
        MT_LOAD(pa, pb, 0);
        pa.store(A0);
        pb.store(B0);
    }
    if (tiles > 1)
        MT_LOAD(qa, qb, 1);
    __syncthreads();
    for (int64_t t = 0; t < tiles; t += 2) {
        if (t + 2 < tiles)
            MT_LOAD(pa, pb, t + 2);
        mt_tile<D, BM, AKC, BKC, FM, FN>(acc, A0, B0, wm, wn);
        if (t + 1 < tiles) {
            qa.store(A1);
            qb.store(B1);
        }
        __syncthreads();
        if (t + 1 >= tiles)
            break;
        if (t + 3 < tiles)
            MT_LOAD(qa, qb, t + 3);
        mt_tile<D, BM, AKC, BKC, FM, FN>(acc, A1, B1, wm, wn);
        if (t + 2 < tiles) {
            pa.store(A0);
            pb.store(B0);
        }
        __syncthreads();
    }

#undef MT_LOAD
    typename wk_t<D>::S *cz = c + z * c_bs;
    const int l = (int)threadIdx.x & 31, g = l >> 2, tq = l & 3;
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t r = m0 + wm + i * 16 + g + 8 * h;
            if (r >= M)
                continue;
#pragma unroll
            for (int j = 0; j < FN; j++)
#pragma unroll
                for (int q = 0; q < 2; q++) {
                    const int64_t col = n0 + wn + j * 8 + 2 * tq + q;
                    if (col < N)
                        cz[r * ldc + col] = wk_t<D>::st(acc[i][j][2 * h + q]);
                }
        }
}

/* The shared buffers (two stages of both operands) and the choice of staging layouts. */
template <int D, int BM> WK_DEV void mt_gemm(MM_ARGS(D))
{
    enum { SZ = BM * (MT_BK + MT_PAD) > MT_BK * (BM + MT_PAD) ? BM * (MT_BK + MT_PAD)
                                                              : MT_BK * (BM + MT_PAD) };
    __shared__ uint16_t smem[4 * SZ] __attribute__((aligned(16)));
    if (amode & 1) {
        if (bmode & 1)
            mt_body<D, BM, 0, 0>(smem, MM_PASS);
        else
            mt_body<D, BM, 0, 1>(smem, MM_PASS);
    } else {
        if (bmode & 1)
            mt_body<D, BM, 1, 0>(smem, MM_PASS);
        else
            mt_body<D, BM, 1, 1>(smem, MM_PASS);
    }
}

#define MT_KERNELS(NAME, DT)                                                                   \
    WK_KERNEL gemm_mma_128x128_##NAME(MM_ARGS(DT)) { mt_gemm<DT, 128>(MM_PASS); }             \
    WK_KERNEL gemm_mma_64x64_##NAME(MM_ARGS(DT)) { mt_gemm<DT, 64>(MM_PASS); }

#endif /* !WK_HIP */

/* The cp.async pipeline below serves NVIDIA (gemm_pipe_*, 32-lane warps on mma.sync) and CDNA
 * (gemm_mfma_*, 64-lane waves on MFMA); the simt device runs both. */
#if !defined(WK_HIP) || WK_MFMA_NATIVE

/* ---------------------------------------------------------------- on matrix units, cp.async
 *   gemm_pipe_<tile>_<dt> (f16, bf16, f8e4m3): the same arguments and result as gemm_mma, for
 *   operands that both have the host's mode bit 1 for 16-byte chunks (contiguous stride 1, every
 *   chunk of 16 bytes aligned); the others (odd strides or bases) take gemm_mma_*.
 *   tile 128x128: warp tile 64 x 32; 64x64: warp tile 32 x 16; 128x256 (f16, bf16; A read along
 *   k only): warp tile 64 x 64 (twice the products per fragment read from shared memory; 240
 *   registers, one block per SM). 8 warps of 32 lanes, 2 along m x 4 along n; BK = 32; MC_ST
 *   stages of dynamic shared memory (MC_ST (BM + BN) 64 bytes: 64 KiB for 128x128, 96 KiB for
 *   128x256; src/gpu/gpu_matmul.c passes it). H200, bf16: 128x256 350 TFLOP/s at 4096^3 and 361
 *   at 8192^3 where 128x128 runs at 338 and 323, but 90 where 128x128 runs at 119 on 64 x
 *   512x128x512 (4 k tiles: the pipeline's fill is exposed at one block per SM).
 * Scheme:
 *   - tiles are copied global -> shared by wk_cp_async16 (gpu.h: cp.async on NVIDIA sm_80+, a
 *     plain copy elsewhere), 16-byte chunks, zero fill outside the operand (a chunk cut by the
 *     operand's edge is copied element by element); MC_ST - 1 tiles are in flight while one is
 *     multiplied, one commit group per tile, one barrier per k step;
 *   - staging in the operand's contiguous direction as in gemm_mma ([e][k] rows of 4 chunks or
 *     [k][e] rows of BE / 8), without padding but swizzled (mc_off): the chunk's index within its
 *     128-byte line is XORed with a function of the row, so the 8 rows of any 8 x 8 matrix that
 *     ldmatrix (or the twin's reads) takes lie in 8 distinct 16-byte bank groups;
 *   - the pipeline: step t waits for tile t (wk_cp_async_wait<MC_ST - 2>), passes the barrier
 *     (tile t visible to all, and every warp done with step t - 1's stage), issues tile
 *     t + MC_ST - 1 into that stage, then multiplies tile t. */
#include "mc.h"

WK_SHARED_DYN(uint16_t, mc_dyn); /* the stages: A tile, then B tile, per stage */

/* W: the warp tiling and the number of stages (mc.h: mc_w32 for pipe, mc_w64 for mfma) */
template <int D, int BM, int BN, int AKC, int BKC, class W> WK_DEV void mc_body(MM_ARGS(D))
{
    enum { FM = W::FM, FN = W::FN, ST = W::ST, SA = BM * MC_BK, SB = BN * MC_BK,
           CA = AKC ? MC_BK / 8 : BM / 8, CB = BKC ? MC_BK / 8 : BN / 8 };
    const int64_t z = blockIdx.z;
    const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
    const uint16_t *const xa = (const uint16_t *)a + z * a_bs + m0 * a_rs;
    const uint16_t *const xb = (const uint16_t *)b + z * b_bs + n0 * b_cs;
    const int na = (int)(M - m0 < BM ? M - m0 : BM), nb = (int)(N - n0 < BN ? N - n0 : BN);
    const int wm = W::wm(), wn = W::wn();

    float acc[FM][FN][4];
    wk_mma_zero(acc);

    const int64_t tiles = (K + MC_BK - 1) / MC_BK; /* every condition below is block-uniform */
    const int64_t kfull = K / MC_BK;                /* tiles with every k inside */
    mc_src<BM, AKC> sa;
    mc_src<BN, BKC> sb;
    sa.init(xa, a_rs, a_cs);
    sb.init(xb, b_cs, b_rs);
#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < tiles) {
            sa.issue(mc_dyn + s * (SA + SB), na == BM && s < kfull, xa, a_rs, a_cs, na, K,
                     s * MC_BK);
            sb.issue(mc_dyn + s * (SA + SB) + SA, nb == BN && s < kfull, xb, b_cs, b_rs, nb, K,
                     s * MC_BK);
        }
        wk_cp_async_commit();
    }
    int rs = 0, ws = ST - 1; /* the stage to multiply, the stage to fill */
    for (int64_t t = 0; t < tiles; t++) {
        wk_cp_async_wait<ST - 2>(); /* tile t has landed (this thread's copies) */
        __syncthreads();
        const int64_t tn = t + ST - 1;
        if (tn < tiles) {
            sa.issue(mc_dyn + ws * (SA + SB), na == BM && tn < kfull, xa, a_rs, a_cs, na, K,
                     tn * MC_BK);
            sb.issue(mc_dyn + ws * (SA + SB) + SA, nb == BN && tn < kfull, xb, b_cs, b_rs, nb,
                     K, tn * MC_BK);
        }
        wk_cp_async_commit();
        W::template tile<mt_in<D>::BF, CA, CB, AKC, BKC>(acc, mc_dyn + rs * (SA + SB),
                                                         mc_dyn + rs * (SA + SB) + SA, wm, wn);
        rs = rs + 1 == ST ? 0 : rs + 1;
        ws = ws + 1 == ST ? 0 : ws + 1;
    }
    wk_cp_async_wait<0>(); /* nothing left in flight at exit (the last groups are empty) */

    W::template store<D>(acc, c + z * c_bs, ldc, M, N, m0 + wm, n0 + wn);
}

template <int D, int BM, int BN, class W = mc_w32<BM, BN>> WK_DEV void mc_gemm(MM_ARGS(D))
{
    if (amode & 1) {
        if (bmode & 1)
            mc_body<D, BM, BN, 0, 0, W>(MM_PASS);
        else
            mc_body<D, BM, BN, 0, 1, W>(MM_PASS);
    } else {
        if (bmode & 1)
            mc_body<D, BM, BN, 1, 0, W>(MM_PASS);
        else
            mc_body<D, BM, BN, 1, 1, W>(MM_PASS);
    }
}

/* mc_gemm for an A read along k only (amode bit 0 clear: a row-major A, the common case), which
 * halves the code of a configuration; src/gpu/gpu_matmul.c takes 128x256 for no other A and
 * fails before the launch if one reaches it, so the other branch is never run. */
template <int D, int BM, int BN> WK_DEV void mc_gemm_ak(MM_ARGS(D))
{
    if (amode & 1)
        return;
    if (bmode & 1)
        mc_body<D, BM, BN, 1, 0, mc_w32<BM, BN>>(MM_PASS);
    else
        mc_body<D, BM, BN, 1, 1, mc_w32<BM, BN>>(MM_PASS);
}

#if !defined(WK_HIP)
/* f8e4m3 (gemm_pipe_<tile>_f8e4m3): the same pipeline with the operands' bytes copied by cp.async
 * into a ring of MC_ST raw stages (16-byte chunks = 16 elements, in the order of the chunks'
 * indices), then widened to f16 into one of two 16-bit stages laid out as above: at step t each
 * thread widens the chunks of tile t that it copied itself (its own copies are complete after
 * wk_cp_async_wait, no barrier needed), then the barrier makes the 16-bit tile visible; a raw
 * stage is refilled only by the thread that copied and widened it, and a 16-bit stage is
 * rewritten two steps after it was multiplied, past a barrier. Shared memory: MC_ST (BM + BN)
 * 32 bytes raw + 2 (BM + BN) 64 bytes, the same as the 16-bit kernels with MC_ST = 4. The
 * widening is gpu.h's wk_f8x2_to_f16x2, one instruction per pair on sm_90 (with the integer
 * conversion per value it ran at 83 TFLOP/s on the H200, now 263 at 4096^3). sm_90's own e4m3
 * product (mma.sync m16n8k32 .e4m3) is not used: ptxas lowers it to the same conversions
 * (per fragment, in registers) and f16 HMMA.16816, and a kernel built on it was no faster
 * (272 against 271 TFLOP/s with both operands read along k). */
template <int BE, int KC> struct mc_f8 {
    enum { CPR = KC ? MC_BK / 16 : BE / 16, /* raw chunks per staged row */
           NC = BE * MC_BK / 16,            /* raw chunks per tile */
           CH = (NC + WK_BLOCK - 1) / WK_BLOCK,
           CPR16 = KC ? MC_BK / 8 : BE / 8 };

    /* Issues the copies of one tile's bytes into raw (as mc_load; x, se, sk, ne, K alike). */
    static __device__ __forceinline__ void load(uint8_t *raw, const uint8_t *x, int64_t se,
                                                int64_t sk, int ne, int64_t K, int64_t k0)
    {
#pragma unroll
        for (int i = 0; i < CH; i++) {
            const int c = (int)threadIdx.x + i * WK_BLOCK;
            if (NC % WK_BLOCK != 0 && c >= NC)
                break;
            const int row = c / CPR, col = c % CPR * 16;
            const int e = KC ? row : col;
            const int64_t k = k0 + (KC ? col : row);
            uint8_t *d = raw + c * 16;
            const bool in = e < ne && k < K;
            const bool full = KC ? k + 16 <= K : e + 16 <= ne;
            if (in && !full) {
                wk_pack<uint8_t, 16> q;
#pragma unroll
                for (int j = 0; j < 16; j++)
                    q.v[j] = KC ? (k + j < K ? x[e * se + k + j] : (uint8_t)0)
                                : (e + j < ne ? x[e + j + k * sk] : (uint8_t)0);
                ((wk_pack<uint8_t, 16> *)d)->raw = q.raw;
            } else {
                wk_cp_async16(d, in ? x + (KC ? e * se + k : e + k * sk) : x, in);
            }
        }
    }

    /* s (a 16-bit stage) <- this thread's raw chunks, widened to f16 (raw zeros give +0). */
    static __device__ __forceinline__ void widen(uint16_t *s, const uint8_t *raw)
    {
#pragma unroll
        for (int i = 0; i < CH; i++) {
            const int c = (int)threadIdx.x + i * WK_BLOCK;
            if (NC % WK_BLOCK != 0 && c >= NC)
                break;
            const int row = c / CPR, col = c % CPR * 16;
            wk_pack<uint16_t, 8> q; /* 16 e4m3 values, two per unit */
            q.raw = ((const wk_pack<uint16_t, 8> *)(raw + c * 16))->raw;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                wk_pack<uint32_t, 4> w;
#pragma unroll
                for (int j = 0; j < 4; j++)
                    w.v[j] = wk_f8x2_to_f16x2(q.v[4 * h + j]);
                ((wk_pack<uint32_t, 4> *)(s + mc_off<CPR16>(row, col + 8 * h)))->raw = w.raw;
            }
        }
    }
};

template <int BM, int BN, int AKC, int BKC> WK_DEV void mc_body8(MM_ARGS(WK_DT_F8E4M3))
{
    enum { D = WK_DT_F8E4M3, WM = BM / 2, WN = BN / 4, FM = WM / 16, FN = WN / 8,
           SA = BM * MC_BK, SB = BN * MC_BK, CA = AKC ? MC_BK / 8 : BM / 8,
           CB = BKC ? MC_BK / 8 : BN / 8 };
    typedef mc_f8<BM, AKC> FA;
    typedef mc_f8<BN, BKC> FB;
    uint8_t *const raw = (uint8_t *)mc_dyn;       /* MC_ST stages of SA + SB bytes */
    uint16_t *const h16 = mc_dyn + MC_ST * (SA + SB) / 2; /* 2 stages of SA + SB halves */
    const int64_t z = blockIdx.z;
    const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
    const uint8_t *const xa = a + z * a_bs + m0 * a_rs;
    const uint8_t *const xb = b + z * b_bs + n0 * b_cs;
    const int na = (int)(M - m0 < BM ? M - m0 : BM), nb = (int)(N - n0 < BN ? N - n0 : BN);
    const int w = (int)threadIdx.x >> 5, wm = (w >> 2) * WM, wn = (w & 3) * WN;

    float acc[FM][FN][4];
    wk_mma_zero(acc);

    const int64_t tiles = (K + MC_BK - 1) / MC_BK; /* every condition below is block-uniform */
#pragma unroll
    for (int s = 0; s < MC_ST - 1; s++) {
        if (s < tiles) {
            FA::load(raw + s * (SA + SB), xa, a_rs, a_cs, na, K, s * MC_BK);
            FB::load(raw + s * (SA + SB) + SA, xb, b_cs, b_rs, nb, K, s * MC_BK);
        }
        wk_cp_async_commit();
    }
    int rs = 0, ws = MC_ST - 1; /* the raw stage to widen, the raw stage to fill */
    for (int64_t t = 0; t < tiles; t++) {
        wk_cp_async_wait<MC_ST - 2>(); /* tile t's bytes have landed (this thread's copies) */
        uint16_t *const hs = h16 + (int)(t & 1) * (SA + SB);
        FA::widen(hs, raw + rs * (SA + SB));
        FB::widen(hs + SA, raw + rs * (SA + SB) + SA);
        __syncthreads();
        const int64_t tn = t + MC_ST - 1;
        if (tn < tiles) {
            FA::load(raw + ws * (SA + SB), xa, a_rs, a_cs, na, K, tn * MC_BK);
            FB::load(raw + ws * (SA + SB) + SA, xb, b_cs, b_rs, nb, K, tn * MC_BK);
        }
        wk_cp_async_commit();
        mc_tile<mt_in<D>::BF, CA, CB, AKC, BKC, FM, FN>(acc, hs, hs + SA, wm, wn);
        rs = rs + 1 == MC_ST ? 0 : rs + 1;
        ws = ws + 1 == MC_ST ? 0 : ws + 1;
    }
    wk_cp_async_wait<0>();

    mc_store<D, FM, FN>(acc, c + z * c_bs, ldc, M, N, m0 + wm, n0 + wn);
}

template <int BM, int BN> WK_DEV void mc_gemm8(MM_ARGS(WK_DT_F8E4M3))
{
    if (amode & 1) {
        if (bmode & 1)
            mc_body8<BM, BN, 0, 0>(MM_PASS);
        else
            mc_body8<BM, BN, 0, 1>(MM_PASS);
    } else {
        if (bmode & 1)
            mc_body8<BM, BN, 1, 0>(MM_PASS);
        else
            mc_body8<BM, BN, 1, 1>(MM_PASS);
    }
}

#define MC_KERNELS(NAME, DT)                                                                   \
    WK_KERNEL gemm_pipe_128x256_##NAME(MM_ARGS(DT)) { mc_gemm_ak<DT, 128, 256>(MM_PASS); }    \
    WK_KERNEL_MINB(2) gemm_pipe_128x128_##NAME(MM_ARGS(DT)) { mc_gemm<DT, 128, 128>(MM_PASS); } \
    WK_KERNEL gemm_pipe_64x64_##NAME(MM_ARGS(DT)) { mc_gemm<DT, 64, 64>(MM_PASS); }

#define MC_KERNELS_F8E4M3                                                                      \
    WK_KERNEL_MINB(2) gemm_pipe_128x128_f8e4m3(MM_ARGS(WK_DT_F8E4M3))                          \
    {                                                                                          \
        mc_gemm8<128, 128>(MM_PASS);                                                           \
    }                                                                                          \
    WK_KERNEL gemm_pipe_64x64_f8e4m3(MM_ARGS(WK_DT_F8E4M3)) { mc_gemm8<64, 64>(MM_PASS); }
#endif /* !WK_HIP */

/* ---------------------------------------------------------------- on CDNA's matrix units
 *   gemm_mfma_<tile>_<dt> (f16, bf16): gemm_pipe's arguments, result and pipeline, with 64-lane
 *   waves in place of 32-lane warps: 4 waves (2 along m x 2 along n), wave tile 64 x 64
 *   (128x128) or 32 x 32 (64x64), 16 x 16 x 16 products (gpu.h wk_mfma_16x16x16: MFMA on gfx908
 *   (f16), gfx90a and gfx94x, the shuffle twin on the simt device with 64-lane warps, where the
 *   host takes these in place of gemm_pipe_*). Compiled only where they can run. Two stages
 *   (mc.h MW_ST: there cp.async is the plain copy of its twin), 2 (BM + BN) 64 bytes of shared
 *   memory. */
#if defined(WK_SIMT) || WK_MFMA_NATIVE
#define MW_KERNELS(NAME, DT)                                                                   \
    WK_KERNEL gemm_mfma_128x128_##NAME(MM_ARGS(DT))                                            \
    {                                                                                          \
        mc_gemm<DT, 128, 128, mc_w64<128, 128>>(MM_PASS);                                      \
    }                                                                                          \
    WK_KERNEL gemm_mfma_64x64_##NAME(MM_ARGS(DT)) { mc_gemm<DT, 64, 64, mc_w64<64, 64>>(MM_PASS); }

#endif
#endif /* !WK_HIP || WK_MFMA_NATIVE */

/* ---------------------------------------------------------------- the kernels of one dtype
 * Each GEMM_* expands to the kernels of its unit where the target compiles that unit (its
 * *_KERNELS macro is defined above: fma everywhere; mma and pipe on NVIDIA and the simt device;
 * mfma on gfx908/90a/94x and the simt device), else to nothing. A module's .cu lists them. */
#define GEMM_FMA(NAME, DT) MM_KERNELS(NAME, DT)
#ifdef MT_KERNELS
#define GEMM_MMA(NAME, DT) MT_KERNELS(NAME, DT)
#define GEMM_PIPE(NAME, DT) MC_KERNELS(NAME, DT)
#define GEMM_PIPE_F8E4M3 MC_KERNELS_F8E4M3
#else
#define GEMM_MMA(NAME, DT)
#define GEMM_PIPE(NAME, DT)
#define GEMM_PIPE_F8E4M3
#endif
#ifdef MW_KERNELS
#define GEMM_MFMA(NAME, DT) MW_KERNELS(NAME, DT)
#else
#define GEMM_MFMA(NAME, DT)
#endif
#endif /* WK_GEMM_H */
