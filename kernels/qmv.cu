/* qmv.cu: the quantized matrix-vector products of decode (x with rows <= 8 against a GGML
 * block-quantized W (n, k)), module "qmv"; host side src/gpu/gpu_quant.c, whose qmv_pick says
 * which kernel runs where and cites the measurements (docs/performance.md, "Quantized matvec").
 * Every kernel is named for how it walks W; each is the default somewhere on the GPUs measured.
 *
 *   qmvq_<dt>(nblk, x, xq, xd, xs)   (also wk_quantize_act: xq, xd, xs are then the parts of
 *       the activations' storage, wick.h's layout)
 *       activations quantized once per call, ggml's q8_1 rule: block b of 32 contiguous
 *       elements of x (f32/f16/bf16) -> xq[8b..8b+7] = 32 int8 round(x / d), d = max|x| / 127,
 *       xd[b] = d, xs[b] = the sums of the two halves' int8 values (int16 each, low half first);
 *       a block holding a NaN or infinity gets d = NaN (its outputs become NaN, as the float
 *       reference's would be NaN or infinite). A team of 8 lanes per block, 4 elements each:
 *       coalesced loads, one 32-bit store per lane, maximum and sums by xor shuffles inside the
 *       team (aligned groups of 8 lanes: the same on waves of 32 and 64).
 *   Then one of these, all with the arguments (w, xq, xd, xs, out, dt, n, k, rows) (chunks:
 *   (w, x, xa, out, dt, n, k): it quantizes x itself, no qmvq before it, or copies the given
 *   activations xa when not NULL) and the result out (rows,
 *   n) of dt = x (rows, k) @ W^T for rows <= R (the R in the name):
 *   qmv<R>_<lanes>_<q>   lanes = warp (R = 1), warp2 (R = 1, 8), warp4 (R = 1, 8), split (R = 1):
 *       wk_qmv_lanes below, one group of G = 32, 64 or 128 lanes per NC adjacent weight rows
 *       (warp, warp2, warp4: a whole 32-element sub-block per lane; split: 64 lanes per two rows,
 *       two lanes per sub-block reading disjoint bytes of it);
 *   qmv1_words_<q>, qmv1_words4_<q>   Q4_0 and Q8_0 with k a multiple of 64: GGML's blocks read
 *       as aligned 32-bit words, one block per lane, 32 or 128 lanes per weight row
 *       (wk_qmv_words);
 *   qmv1_stream_<q>   one warp per weight row, the row streamed through shared memory in
 *       16-byte loads (wk_qmv_stream);
 *   qmv1_chunks_<q>, qmv1_chunks2_<q>   whole 256-element chunks copied coalesced through shared
 *       memory by cp.async and decoded from registers, one or two weight rows per 32-lane
 *       round, the activations quantized by each block into shared memory (wk_qmv_chunks);
 *   qmv8_mma_<q>   the integer products on the matrix units, 16 weight rows per block, rows of x
 *       1..8 (wk_qmv_mma);
 *   qmv<R>_rowpair_<q>   R = 2, 4: 64 threads per pair of weight rows, a whole sub-block per
 *       thread, the half sums recomputed from xq (wk_qmv_rowpair; xs unused).
 *
 * Accuracy against dequantize + exact matmul: the activations carry the int8 rounding error (at
 * most d/2 = max|x|/254 per element), the integer dot products are exact, the float sums add
 * f32 rounding (see docs/parity.md). */
#include "qact.h"
#include "qmv.h"

/* ---- activations to int8 blocks of 32, with half sums (the team rule: qact.h) */
template <int D>
WK_DEV void wk_qmvq(int64_t nblk, const typename wk_t<D>::S *__restrict__ x,
                    uint32_t *__restrict__ xq, float *__restrict__ xd, uint32_t *__restrict__ xs)
{
    /* Every lane runs the same number of trips (the bound rounded up to the grid's size), so
     * the team shuffles always see all lanes of the warp. */
    const int64_t total = nblk * 8, step = wk_nthreads();
    const int64_t lim = (total + step - 1) / step * step;
    for (int64_t i = wk_tid(); i < lim; i += step) {
        const bool ok = i < total;
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            v[e] = ok ? wk_t<D>::ld(x[i * 4 + e]) : 0.0f;
        uint32_t word, hs;
        float d;
        wk_qmvq_team(v, word, d, hs);
        if (ok) {
            xq[i] = word;
            if ((i & 7) == 0) {
                xd[i >> 3] = d;
                xs[i >> 3] = hs;
            }
        }
    }
}

/* V words of activation at p (V * 4 bytes, aligned to that: xq is 16-byte aligned and each
 * thread's part starts at a multiple of V words). */
template <int V> WK_DEV void wk_qmv_ldx(const uint32_t *p, uint32_t *xv)
{
    if (V == 8) {
        const wk_u32x4 a = ((const wk_u32x4 *)p)[0], c = ((const wk_u32x4 *)p)[1];
        xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w;
        xv[4 % V] = c.x, xv[5 % V] = c.y, xv[6 % V] = c.z, xv[7 % V] = c.w;
    } else if (V == 4) {
        const wk_u32x4 a = *(const wk_u32x4 *)p;
        xv[0] = a.x, xv[1 % V] = a.y, xv[2 % V] = a.z, xv[3 % V] = a.w;
    } else if (V == 2) {
        const wk_u32x2 a = *(const wk_u32x2 *)p;
        xv[0] = a.x, xv[1 % V] = a.y;
    } else {
        xv[0] = p[0];
    }
}

/* acc[r][c] summed over aligned groups of W (<= 32) lanes by xor shuffles: the same on waves of
 * 32 and 64; every lane ends with its group's sums. */
template <int R, int NC, int W> WK_DEV void wk_qmv_group_sum(float (&acc)[R][NC])
{
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NC; c++) {
            float v = acc[r][c];
#pragma unroll
            for (int o = W / 2; o > 0; o >>= 1)
                v += WK_SHFL_XOR(v, o);
            acc[r][c] = v;
        }
}

/* out[r, col0 + c] = acc[r][c] (dtype dt) for the rows and columns that exist */
template <int R, int NC>
WK_DEV void wk_qmv_store(void *out, const float (&acc)[R][NC], int dt, int64_t n, int64_t col0,
                         int rows)
{
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            if (r < rows && col0 + c < n)
                wk_stf(out, (int64_t)r * n + col0 + c, dt, acc[r][c]);
}

/* The sums of a block's groups of G lanes (a power of two; the block's groups side by side, NC
 * weight rows from col0 each) stored: xor shuffles inside 32-lane groups (wave64-correct), then
 * for G > 32 the 32-lane parts added in their order through shared memory. Every thread of the
 * block calls it (the barrier). */
template <int R, int NC, int G>
WK_DEV void wk_qmv_group_store(float (&acc)[R][NC], void *out, int dt, int64_t n, int64_t col0,
                               int rows)
{
    wk_qmv_group_sum<R, NC, (G < 32 ? G : 32)>(acc);
    if (G <= 32) {
        if ((int)threadIdx.x % G == 0)
            wk_qmv_store<R, NC>(out, acc, dt, n, col0, rows);
        return;
    }
    __shared__ float red[WK_BLOCK / 32][R * NC];
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int c = 0; c < NC; c++)
                red[threadIdx.x / 32][r * NC + c] = acc[r][c];
    }
    __syncthreads();
    const int per = G / 32; /* 32-lane parts per group */
    for (int i = (int)threadIdx.x; i < (WK_BLOCK / G) * R * NC; i += WK_BLOCK) {
        const int gg = i / (R * NC), rc = i % (R * NC), r = rc / NC, c = rc % NC;
        const int64_t col = ((int64_t)blockIdx.x * (WK_BLOCK / G) + gg) * NC + c;
        if (r < rows && col < n) {
            float v = 0.0f;
            for (int q = 0; q < per; q++)
                v += red[gg * per + q][rc];
            wk_stf(out, (int64_t)r * n + col, dt, v);
        }
    }
}

/* The lane-group kernels (warp, warp2, warp4, split): one group of G threads per NC adjacent
 * weight rows, L threads per 32-element sub-block, each multiplying V = 8 / L words of it,
 * consecutive or, with P, V/2 of each half; U sub-blocks per thread loaded before any is used.
 * Adjacent threads read adjacent parts of a row, so a group streams its rows' bytes
 * contiguously. Per sub-block part and activation row: V dp4a per weight row against one
 * V*4-byte activation load (16 bytes for V = 4), then
 *     acc += dx * sum over halves h of (dw[h] * isum[h] + mw[h] * xsum[h] * share)
 * with xsum the precomputed half sum of the activation bytes and share the fraction of that
 * half this thread covers (1 or 1/2: exact). Reduction: xor shuffles over offsets
 * min(G, 32) / 2 .. 1 (inside aligned 32-lane groups, so wave64-correct), then for G > 32 the
 * 32-lane partial sums through shared memory. */
template <int Q, int R, int NC, int G, int L, int U, bool P>
WK_DEV void wk_qmv_lanes(const uint8_t *__restrict__ w, const uint32_t *__restrict__ xq,
                         const float *__restrict__ xd, const uint32_t *__restrict__ xs,
                         void *__restrict__ out, int dt, int64_t n, int64_t k, int rows)
{
    /* P (paired): a part is H2 words of each half (words base.. and base + 4..), so the
     * lanes of a sub-block read disjoint bytes of the 4-bit types, whose word i and i + 4 are
     * the two nibbles of the same bytes; else a part is V consecutive words. */
    const int SUBS = wk_q<Q>::QK / 32, V = 8 / L, H2 = V / 2 > 0 ? V / 2 : 1, S = G / L;
    const int NH = P || V == 8 ? 2 : 1;
    const int64_t nsub = k / 32;
    const int64_t rowbytes = k / wk_q<Q>::QK * wk_q<Q>::BYTES;
    const int g = (int)threadIdx.x / G, t = (int)threadIdx.x % G;
    const int i0 = (t % L) * V, h0 = P ? 0 : i0 >> 2, base = (t % L) * H2;
    /* the share of a half's activation sum this thread's part carries */
    const float share = P ? (float)H2 / 4.0f : L <= 2 ? 1.0f : 2.0f / (float)L;
    const int64_t col0 = ((int64_t)blockIdx.x * (WK_BLOCK / G) + g) * NC;

    /* Columns past n read row n - 1 instead: no branch around the loads; never stored. */
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

    for (int64_t u0 = t / L; u0 < nsub; u0 += (int64_t)U * S) {
        uint32_t wq[U][NC][V];
        float wd[U][NC][NH], wm[U][NC][NH];
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int64_t uj = u0 + (int64_t)j * S < nsub ? u0 + (int64_t)j * S : u0;
            const int64_t blk = uj / SUBS;
            const int s = (int)(uj - blk * SUBS);
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const uint8_t *b = wr[c] + blk * wk_q<Q>::BYTES;
#pragma unroll
                for (int v = 0; v < V; v++)
                    wq[j][c][v] = wk_qp<Q>::qi(b, s, P ? base + v % H2 + (v / H2) * 4 : i0 + v);
#pragma unroll
                for (int hh = 0; hh < NH; hh++)
                    wk_qp<Q>::sc(b, s, h0 + hh, wd[j][c][hh], wm[j][c][hh]);
            }
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int64_t u = u0 + (int64_t)j * S;
            if (u >= nsub)
                break;
#pragma unroll
            for (int r = 0; r < R; r++) {
                if (r < rows) {
                    const int64_t xi = (int64_t)r * nsub + u;
                    uint32_t xv[V];
                    if (P) {
                        wk_qmv_ldx<H2>(xq + xi * 8 + base, xv);
                        wk_qmv_ldx<H2>(xq + xi * 8 + base + 4, xv + (V - H2));
                    } else {
                        wk_qmv_ldx<V>(xq + xi * 8 + i0, xv);
                    }
                    const float dx = xd[xi];
                    float sx[NH];
                    if (wk_q<Q>::MIN) {
                        const uint32_t sw = xs[xi];
                        const float s0 = (float)(int)(short)(sw & 0xFFFFu);
                        const float s1 = (float)(int)(short)(sw >> 16);
                        if (NH == 2) {
                            sx[0] = s0 * share;
                            sx[NH - 1] = s1 * share;
                        } else {
                            sx[0] = (h0 ? s1 : s0) * share;
                        }
                    }
#pragma unroll
                    for (int c = 0; c < NC; c++) {
                        int is[NH];
#pragma unroll
                        for (int hh = 0; hh < NH; hh++)
                            is[hh] = 0;
#pragma unroll
                        for (int v = 0; v < V; v++)
                        {
                            const int hv = P ? v / H2 : NH == 2 ? v >> 2 : 0;
                            is[hv] = WK_DP4A(wq[j][c][v], xv[v], is[hv]);
                        }
                        float p = 0.0f;
#pragma unroll
                        for (int hh = 0; hh < NH; hh++) {
                            p += wd[j][c][hh] * (float)is[hh];
                            if (wk_q<Q>::MIN)
                                p += wm[j][c][hh] * sx[hh];
                        }
                        acc[r][c] += dx * p;
                    }
                }
            }
        }
    }

    wk_qmv_group_store<R, NC, G>(acc, out, dt, n, col0, rows);
}

/* stream: one warp per weight row, the row streamed through shared memory. Tiles of 64
 * sub-blocks (TB bytes: a multiple of 16 for every block type) are loaded with 16-byte loads,
 * adjacent lanes reading adjacent 16 bytes, so a warp's load instruction covers 512 contiguous
 * bytes; the next tile is loaded into registers while the current one is multiplied. Each lane
 * then decodes whole sub-blocks from shared memory with the same wk_qp<Q> accessors (the tile
 * starts at a multiple of 16 bytes of a row, so a block keeps its global alignment); the
 * activations are read as in wk_qmv_lanes (loading them with the next tile was slower: H200,
 * tenth session). Fastest for Q3_K and Q6_K at one row (docs/performance.md). Needs
 * rows of a multiple of 16 bytes and W 16-byte aligned (the host checks, else warp2 runs). All
 * warps of a block run the same tiles (k is shared; columns past n repeat row n - 1), so the
 * block-wide barriers are reached by every thread. */
template <int Q, int R>
WK_DEV void wk_qmv_stream(const uint8_t *__restrict__ w, const uint32_t *__restrict__ xq,
                          const float *__restrict__ xd, const uint32_t *__restrict__ xs,
                          void *__restrict__ out, int dt, int64_t n, int64_t k, int rows)
{
    const int SUBS = wk_q<Q>::QK / 32, TS = 64, TB = TS / SUBS * wk_q<Q>::BYTES;
    const int TV = TB / 16, NV = (TV + 31) / 32; /* 16-byte words per tile, per lane */
    const int64_t nsub = k / 32, ntile = (nsub + TS - 1) / TS;
    const int64_t rowbytes = k / wk_q<Q>::QK * wk_q<Q>::BYTES;
    const int g = (int)threadIdx.x / 32, t = (int)threadIdx.x % 32;
    const int64_t col = (int64_t)blockIdx.x * (WK_BLOCK / 32) + g;
    const wk_u32x4 *wr = (const wk_u32x4 *)(w + (col < n ? col : n - 1) * rowbytes);
    __shared__ wk_u32x4 sm[WK_BLOCK / 32][TV];

    float acc[R][1];
#pragma unroll
    for (int r = 0; r < R; r++)
        acc[r][0] = 0.0f;
    wk_u32x4 v[NV];
    int64_t left = rowbytes / 16; /* 16-byte words of the row from the next tile on */
#pragma unroll
    for (int j = 0; j < NV; j++)
        if (t + 32 * j < TV && t + 32 * j < left)
            v[j] = wr[t + 32 * j];
    for (int64_t it = 0; it < ntile; it++) {
        const int64_t have = left < TV ? left : TV;
        __syncthreads(); /* the last tile's reads are done */
#pragma unroll
        for (int j = 0; j < NV; j++)
            if (t + 32 * j < TV && t + 32 * j < have)
                sm[g][t + 32 * j] = v[j];
        __syncthreads();
        wr += TV;
        left -= have;
#pragma unroll
        for (int j = 0; j < NV; j++) /* the next tile, in flight during this one's products */
            if (t + 32 * j < TV && t + 32 * j < left)
                v[j] = wr[t + 32 * j];
        const uint8_t *tile = (const uint8_t *)sm[g];
#pragma unroll
        for (int j = 0; j < TS / 32; j++) {
            const int ul = t + 32 * j;
            const int64_t u = it * TS + ul;
            if (u >= nsub)
                break;
            const uint8_t *b = tile + ul / SUBS * wk_q<Q>::BYTES;
            const int s = ul % SUBS;
            uint32_t wq[8];
            float wd[2], wm[2];
#pragma unroll
            for (int i = 0; i < 8; i++)
                wq[i] = wk_qp<Q>::qi(b, s, i);
#pragma unroll
            for (int h = 0; h < 2; h++)
                wk_qp<Q>::sc(b, s, h, wd[h], wm[h]);
#pragma unroll
            for (int r = 0; r < R; r++) {
                if (r < rows) {
                    const int64_t xi = (int64_t)r * nsub + u;
                    uint32_t xv[8];
                    wk_qmv_ldx<8>(xq + xi * 8, xv);
                    int is[2] = {0, 0};
#pragma unroll
                    for (int i = 0; i < 8; i++)
                        is[i >> 2] = WK_DP4A(wq[i], xv[i], is[i >> 2]);
                    float p = wd[0] * (float)is[0] + wd[1] * (float)is[1];
                    if (wk_q<Q>::MIN) {
                        const uint32_t sw = xs[xi];
                        p += wm[0] * (float)(int)(short)(sw & 0xFFFFu);
                        p += wm[1] * (float)(int)(short)(sw >> 16);
                    }
                    acc[r][0] += xd[xi] * p;
                }
            }
        }
    }
    wk_qmv_group_sum<R, 1, 32>(acc);
    if (t == 0 && col < n)
        wk_qmv_store<R, 1>(out, acc, dt, n, col, rows);
}

/* Weight rows r0 .. r0 + nr - 1 (those below n) into L2, the block's threads 128 bytes apart. */
WK_DEV void wk_qmv_prefetch_rows(const uint8_t *w, int64_t r0, int64_t nr, int64_t n,
                                 int64_t rowbytes)
{
    const int64_t r1 = r0 + nr < n ? r0 + nr : n;
    const uint8_t *p0 = w + r0 * rowbytes;
    const int64_t len = (r1 - r0) * rowbytes;
    for (int64_t o = (int64_t)threadIdx.x * 128; o < len; o += (int64_t)WK_BLOCK * 128)
        WK_PREFETCH_L2(p0 + o);
}

/* WK_QMV_EARLY_W: which reads may come before a matvec's grid wait. Every matvec kernel is
 * launched right after qmvq (src/gpu/gpu_quant.c qmv()), and qmvq lets its dependents start
 * only after its own grid wait: when a matvec starts, all the work before qmvq is complete and
 * its writes performed, and qmvq, still running, writes only xq, xd and xs (chunks follows the
 * kernel that wrote x, and reads x only after its own wait). So W may be read
 * before the wait (chunks and mma copy their first W tile then, through L2 with cp.async.cg;
 * the others prefetch their first rows into L2); the activations only after it. (Reading W only after
 * the wait cost a one-row chunks call 0.5-0.9 us on the H200: docs/performance.md.) rowpair is
 * not launched early. */

/* chunks (one row of x): coalesced weight loads into shared memory, each lane decoding
 * whole blocks from registers. A chunk is 256 elements of a weight row (8 blocks of a 32-element
 * type, one Q4_K / Q5_K super-block: CB = 144..288 bytes, CV = CB / 16 words of 16 bytes).
 * Each 32-lane group takes a unit of P weight rows at a time (a template parameter: the host
 * takes P = 2 when a row has at most 16 chunks, k <= 4096, so no lane idles; else 1), units
 * gx * 8 apart (the grid is sized to the GPU, so each block quantizes the activations once),
 * in rounds of 32 chunks, 32 / P of each row. A round's 32 CV words are copied by adjacent
 * lanes (wk_cp_async16: one warp instruction covers 512 contiguous bytes of a row) into one of
 * the group's 2 stages in the same order, so lane l's chunk lands at words l CV .. (l + 1) CV
 * - 1, which lane l reads back (CV odd: no bank conflicts; even: two-way) and decodes from
 * registers with the wk_qp<Q> accessors over a wk_qr (quant.h). The next round is in flight
 * while one is multiplied; one barrier per round (the GEMM's pipeline, kernels/mc.h). Launched
 * early: the first round is copied before the grid wait (WK_QMV_EARLY_W). Two stages, not more:
 * the H200 ran Q4_0 and Q4_K fastest with two (16 warps per SM; with 3 or 4 stages the shared
 * memory allows 8: docs/performance.md). The row of x (f32, f16 or bf16: dt) is quantized by the
 * block after the wait, by wk_qmvq's rule (the same bits as the qmvq kernel), into shared
 * memory: WK_QMV_VX words per chunk (an odd stride: lane l reads chunk l's words without bank
 * conflicts); no separate quantization kernel, no scratch. Shared memory: 16 (nch WK_QMV_VX + 2 256 CV) bytes (the host's
 * qmv_v_shmem). Every group of a block runs the same number of rounds (the barriers): those
 * past the last unit copy zeros and store nothing. */
#define WK_QMV_VX 21 /* 16 words of xq, 2 of xd, 2 of xs, 1 unused */
#define WK_QMV_VS 2  /* stages per group */
#define WK_QMV_XT 4  /* activation tasks per thread loaded together */
template <int Q> struct wk_qmv_chunk {
    enum {
        NB = 256 / wk_q<Q>::QK,     /* blocks per chunk */
        CB = NB * wk_q<Q>::BYTES,   /* bytes per chunk */
        CV = CB / 16                /* 16-byte words per chunk */
    };
};

WK_SHARED_DYN(wk_u32x4, qv_dyn);

/* Where a group's round ri is: unit u0 + (ri / nr) nw, chunks from (ri % nr) (32 / P). */
struct wk_qmv_round {
    int64_t unit, cb;
};
template <int P> WK_DEV wk_qmv_round wk_qmv_chunks_round(int64_t ri, int nr, int64_t u0, int64_t nw)
{
    return wk_qmv_round{u0 + ri / nr * nw, ri % nr * (32 / P)};
}

/* Copies round ri of a group into the stage st: word q = lane + 32 v of the round (row p = q /
 * (32 / P CV) of the unit, word q - p 32 / P CV of its part) to st[q], zeros past a row, past n
 * and past the last round. */
template <int CV, int P>
WK_DEV void wk_qmv_chunks_copy(wk_u32x4 *st, const wk_u32x4 *wv, int64_t ri, int64_t rounds, int nr,
                          int64_t u0, int64_t nw, int64_t n, int64_t nch, int lane)
{
    const wk_qmv_round r = wk_qmv_chunks_round<P>(ri, nr, u0, nw);
    const int span = 32 / P * CV; /* words of one row per round */
#pragma unroll
    for (int v = 0; v < CV; v++) {
        const int q = lane + 32 * v, p = q >= span ? 1 : 0, o = q - p * span;
        const int64_t row = r.unit * P + p;
        const bool in = ri < rounds && row < n && r.cb + o / CV < nch;
        wk_cp_async16(st + q, in ? wv + (row * nch + r.cb) * CV + o : wv, in);
    }
    wk_cp_async_commit();
}

template <int Q, int P>
WK_DEV void wk_qmv_chunks(const uint8_t *__restrict__ w, const void *__restrict__ x,
                          const uint32_t *__restrict__ xa, void *__restrict__ out, int dt,
                          int64_t n, int64_t k)
{
    typedef wk_qmv_chunk<Q> C;
    const int CV = C::CV, S = WK_QMV_VS, SUBS = wk_q<Q>::QK / 32, NWB = WK_BLOCK / 32;
    const int64_t nch = k / 256;
    const int L = 32 / P;                        /* lanes per row */
    const int nr = (int)((nch + L - 1) / L);     /* rounds per unit */
    const int64_t units = (n + P - 1) / P;
    const int grp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const int64_t nw = (int64_t)gridDim.x * NWB, first = (int64_t)blockIdx.x * NWB;
    const int64_t u0 = first + grp;
    /* the rounds of the block's first group (the most any of its groups has) */
    const int64_t rounds = first < units ? (units - first + nw - 1) / nw * nr : 0;
    wk_u32x4 *sx = qv_dyn, *sw = qv_dyn + nch * WK_QMV_VX + grp * 32 * CV;
    const int SSTEP = NWB * 32 * CV; /* words between a group's stages */
    const wk_u32x4 *wv = (const wk_u32x4 *)w;

#pragma unroll
    for (int r = 0; r < S - 1; r++) /* before the wait: W (WK_QMV_EARLY_W) */
        wk_qmv_chunks_copy<CV, P>(sw + r * SSTEP, wv, r, rounds, nr, u0, nw, n, nch, lane);
    WK_GRID_WAIT();
    if (xa) { /* the activations given (wick.h's layout: k / 4 code words, k / 32 scales, k / 32
               * half-sum words): copied into the layout below */
        uint32_t *s32 = (uint32_t *)sx;
        const uint32_t *ad = xa + k / 4, *as = ad + k / 32;
        for (int64_t i = threadIdx.x; i < k / 4; i += WK_BLOCK)
            s32[(i >> 6) * WK_QMV_VX * 4 + (i & 63)] = xa[i];
        for (int64_t b = threadIdx.x; b < k / 32; b += WK_BLOCK) {
            uint32_t *xc = s32 + (b >> 3) * WK_QMV_VX * 4;
            xc[64 + (b & 7)] = ad[b];
            xc[72 + (b & 7)] = as[b];
        }
    } else {
    /* The activations, quantized here (wk_qmvq's rule, bit for bit): task i of k / 4 is lane i % 8
     * of the team of sub-block i / 8 (elements 4 i .. 4 i + 3). A trip takes WK_QMV_XT tasks per
     * thread, WK_BLOCK apart, all loaded before the first is quantized (k = 14336 in 4 trips
     * instead of 14 load latencies); every thread runs the same trips (the team shuffles). */
        uint32_t *s32 = (uint32_t *)sx;
        const int XT = WK_QMV_XT;
        const bool v4 = dt == WK_DT_F32 && ((uintptr_t)x & 15) == 0; /* one 16-byte load */
        const int64_t total = k / 4, tripn = (int64_t)XT * WK_BLOCK;
        for (int64_t i0 = threadIdx.x; i0 < (total + tripn - 1) / tripn * tripn; i0 += tripn) {
            float v[XT][4];
#pragma unroll
            for (int j = 0; j < XT; j++) {
                const int64_t i = i0 + (int64_t)j * WK_BLOCK;
                v[j][0] = v[j][1] = v[j][2] = v[j][3] = 0.0f;
                if (i < total && v4) {
                    const wk_u32x4 q = ((const wk_u32x4 *)x)[i];
                    v[j][0] = __uint_as_float(q.x), v[j][1] = __uint_as_float(q.y);
                    v[j][2] = __uint_as_float(q.z), v[j][3] = __uint_as_float(q.w);
                } else if (i < total) {
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        v[j][e] = wk_ldf(x, i * 4 + e, dt);
                }
            }
#pragma unroll
            for (int j = 0; j < XT; j++) {
                const int64_t i = i0 + (int64_t)j * WK_BLOCK;
                uint32_t word, hs;
                float d;
                wk_qmvq_team(v[j], word, d, hs);
                if (i < total) {
                    const int64_t b = i >> 3;
                    const int sb = (int)(b & 7), l = (int)(i & 7);
                    uint32_t *xc = s32 + (b >> 3) * WK_QMV_VX * 4;
                    xc[8 * sb + l] = word;
                    if (l == 0) {
                        xc[64 + sb] = __float_as_uint(d);
                        xc[72 + sb] = hs;
                    }
                }
            }
        }
    }

    float acc = 0.0f;
    for (int64_t ri = 0; ri < rounds; ri++) {
        wk_cp_async_wait<S - 2>(); /* this group's copies of round ri are done */
        __syncthreads(); /* everyone's (and the activations); round ri - 1's stage is free */
        wk_qmv_chunks_copy<CV, P>(sw + (int)((ri + S - 1) % S) * SSTEP, wv, ri + S - 1, rounds, nr,
                             u0, nw, n, nch, lane);
        const wk_qmv_round rr = wk_qmv_chunks_round<P>(ri, nr, u0, nw);
        const int64_t row = rr.unit * P + lane / L, ch = rr.cb + lane % L;
        if (row < n && ch < nch) {
            const wk_u32x4 *st = sw + (int)(ri % S) * SSTEP;
            uint32_t cw[CV * 4];
#pragma unroll
            for (int v = 0; v < CV; v++) {
                const wk_u32x4 a = st[lane * CV + v];
                cw[4 * v] = a.x, cw[4 * v + 1] = a.y, cw[4 * v + 2] = a.z, cw[4 * v + 3] = a.w;
            }
            const wk_u32x4 *xc = sx + ch * WK_QMV_VX;
            const wk_u32x4 d0 = xc[16], d1 = xc[17];
            const float dx[8] = {__uint_as_float(d0.x), __uint_as_float(d0.y),
                                 __uint_as_float(d0.z), __uint_as_float(d0.w),
                                 __uint_as_float(d1.x), __uint_as_float(d1.y),
                                 __uint_as_float(d1.z), __uint_as_float(d1.w)};
            uint32_t sxw[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (wk_q<Q>::MIN) {
                const wk_u32x4 s0 = xc[18], s1 = xc[19];
                sxw[0] = s0.x, sxw[1] = s0.y, sxw[2] = s0.z, sxw[3] = s0.w;
                sxw[4] = s1.x, sxw[5] = s1.y, sxw[6] = s1.z, sxw[7] = s1.w;
            }
#pragma unroll
            for (int sb = 0; sb < 8; sb++) {
                const wk_qr b = {cw, sb / SUBS * wk_q<Q>::BYTES};
                const int s = sb % SUBS;
                const wk_u32x4 x0 = xc[2 * sb], x1 = xc[2 * sb + 1];
                const uint32_t xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
                int is[2] = {0, 0};
#pragma unroll
                for (int i = 0; i < 8; i++)
                    is[i >> 2] = WK_DP4A(wk_qp<Q>::qi(b, s, i), xv[i], is[i >> 2]);
                float wd[2], wm[2];
#pragma unroll
                for (int h = 0; h < 2; h++)
                    wk_qp<Q>::sc(b, s, h, wd[h], wm[h]);
                float p = wd[0] * (float)is[0] + wd[1] * (float)is[1];
                if (wk_q<Q>::MIN) {
                    p += wm[0] * (float)(int)(short)(sxw[sb] & 0xFFFFu);
                    p += wm[1] * (float)(int)(short)(sxw[sb] >> 16);
                }
                acc += dx[sb] * p;
            }
        }
        if (ri % nr == nr - 1) { /* the unit's last round: each row's sum (uniform branch) */
#pragma unroll
            for (int o = L / 2; o > 0; o >>= 1)
                acc += WK_SHFL_XOR(acc, o);
            if (lane % L == 0 && row < n)
                wk_stf(out, row, dt, acc);
            acc = 0.0f;
        }
    }
    wk_cp_async_wait<0>(); /* the zero copies past the last round, before the block ends */
    WK_GRID_LAUNCH_DEPENDENTS();
}

/* qmv1_chunks<P>_<q> (P = 1: "qmv1_chunks_<q>"), P rows per unit (the host takes P = 2 for
 * k <= 4096); launched early. Built for the types where it was the fastest kernel on the H200
 * (Q4_0, Q8_0, Q4_K, Q5_K; for Q4_1, Q5_0 and Q5_1 it was slower than warp2 or warp:
 * docs/performance.md), and not
 * for AMD: its 74 KiB or more of shared memory exceed the 64 KiB of LDS a workgroup has, so the
 * host never launches it there (the kernels would only cost compile time). */
#define WK_QMV_VP(QN, Q, PN, P)                                                                \
    WK_KERNEL qmv1_chunks##PN##_##QN(const uint8_t *w, const void *x, const uint32_t *xa,      \
                                     void *out, int dt, int64_t n, int64_t k)                  \
    {                                                                                          \
        wk_qmv_chunks<Q, P>(w, x, xa, out, dt, n, k);                                          \
    }
#define WK_QMV_CHUNKS(QN, Q) WK_QMV_VP(QN, Q, , 1) WK_QMV_VP(QN, Q, 2, 2)
#if !defined(WK_HIP)
WK_QMV_CHUNKS(q4_0, WK_Q4_0)
WK_QMV_CHUNKS(q8_0, WK_Q8_0)
WK_QMV_CHUNKS(q4_k, WK_Q4_K)
WK_QMV_CHUNKS(q5_k, WK_Q5_K)
#endif

/* mma (up to 8 rows of x; the 32-element block types with one scale per block: Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0; k a multiple of 256): the integer products on the matrix units (gpu.h
 * wk_imma_16832, int8 x int8 -> int32, exact). A block of 8 warps takes 16 weight rows; warp w
 * takes the chunks (256 elements: 8 blocks) w, w + 8, ... of k. Each chunk goes through
 * shared memory first (two stages per warp, the next chunk copied during this one's products,
 * as chunks): the 16 rows' bytes (16-byte cp.async, adjacent lanes on adjacent bytes of a row) at
 * an odd stride of 16-byte words, the 8 rows of int8 activations at a stride of 17 words, their
 * scales and (MIN) half sums; zeros for rows of x past rows. Per block of 32 elements: A = the
 * 16 rows' quants (lane (g, t): words t and t + 4 of rows g and g + 8, wk_qp<Q>::qi), B = the
 * activations (column g: row g of x), C = the 16 x 8 exact dots, then in f32 as the other
 * kernels: acc += dx * (dw * dot + mw * xsum), xsum the block's activation sum (both halves of
 * xs). The strides put the lanes of a read on 32 different banks. Lane (g, t) ends with rows
 * g, g + 8 of W times rows 2t, 2t + 1 of x; the 8 warps' sums are added through shared memory
 * in warp order. Every warp runs the same trips (block barriers, and on a 64-lane wave the
 * twin's shuffles need both 32-lane groups): chunks past the last are copied as zeros, not
 * summed. Launched early: the block's rows are prefetched into L2 and the first chunk of W
 * copied before the grid wait (WK_QMV_EARLY_W), x after it.
 * Shared memory: 16 * 8 warps * 2 stages * ST bytes (the host's qmv_t_shmem). */
#define WK_QMV_TB 16 /* weight rows per block */
template <int Q> struct wk_qmv_mma_geom {
    enum {
        CV = 8 * wk_q<Q>::BYTES / 16, /* 16-byte words of a row's chunk */
        CS = CV | 1,                  /* their stride in the stage: odd */
        WS = WK_QMV_TB * CS,          /* the weight tile */
        XS = 8 * 17,                  /* 8 rows of x, 16 words each, stride 17 */
        DS = 8 * 2,                   /* their 8 block scales per row */
        SS = wk_q<Q>::MIN ? 8 * 2 : 0, /* their half sums per block */
        ST = WS + XS + DS + SS        /* words per stage */
    };
};

/* Copies chunk c (c >= nch: zeros) of the block's weight rows into stage st. */
template <int Q>
WK_DEV void wk_qmv_mma_copy_w(wk_u32x4 *st, const uint8_t *w, int64_t c, int64_t nch, int64_t r0,
                            int64_t n, int lane)
{
    typedef wk_qmv_mma_geom<Q> C;
    const int64_t rowbytes = nch * 8 * wk_q<Q>::BYTES;
    const bool cin = c < nch;
#pragma unroll
    for (int v = 0; v < (WK_QMV_TB * C::CV + 31) / 32; v++) {
        const int q = lane + 32 * v, row = q / C::CV, o = q - row * C::CV;
        if (row < WK_QMV_TB) {
            const bool in = cin && r0 + row < n;
            const uint8_t *src = w + (r0 + row) * rowbytes + c * 8 * wk_q<Q>::BYTES + o * 16;
            wk_cp_async16(st + row * C::CS + o, in ? (const void *)src : (const void *)w, in);
        }
    }
}

/* Copies chunk c (c >= nch: zeros) of x (quants, scales, half sums) into stage st and closes
 * the stage's group of copies. */
template <int Q>
WK_DEV void wk_qmv_mma_copy_x(wk_u32x4 *st, const uint32_t *xq, const float *xd,
                            const uint32_t *xs, int64_t c, int64_t nch, int rows, int lane)
{
    typedef wk_qmv_mma_geom<Q> C;
    const int64_t nsub = nch * 8;
    const bool cin = c < nch;
#pragma unroll
    for (int v = 0; v < 4; v++) { /* 8 rows x 16 words of xq */
        const int q = lane + 32 * v, row = q >> 4, o = q & 15;
        const bool in = cin && row < rows;
        const uint32_t *src = xq + ((int64_t)row * nsub + c * 8) * 8 + o * 4;
        wk_cp_async16(st + C::WS + row * 17 + o, in ? (const void *)src : (const void *)xq, in);
    }
    if (lane < 16) { /* 8 rows x 8 scales (and half sums) */
        const int row = lane >> 1, o = lane & 1;
        const bool in = cin && row < rows;
        const int64_t e = ((int64_t)row * nsub + c * 8) + o * 4;
        wk_cp_async16(st + C::WS + C::XS + lane, in ? (const void *)(xd + e) : (const void *)xd,
                      in);
        if (wk_q<Q>::MIN)
            wk_cp_async16(st + C::WS + C::XS + C::DS + lane,
                          in ? (const void *)(xs + e) : (const void *)xs, in);
    }
    wk_cp_async_commit();
}

template <int Q>
WK_DEV void wk_qmv_mma(const uint8_t *__restrict__ w, const uint32_t *__restrict__ xq,
                       const float *__restrict__ xd, const uint32_t *__restrict__ xs,
                       void *__restrict__ out, int dt, int64_t n, int64_t k, int rows)
{
    typedef wk_qmv_mma_geom<Q> C;
    const int NW = WK_BLOCK / 32, BY = wk_q<Q>::BYTES;
    const int64_t nch = k / 256, rowbytes = nch * 8 * BY;
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, g = lane >> 2,
              t = lane & 3;
    const int64_t r0 = (int64_t)blockIdx.x * WK_QMV_TB;
    wk_u32x4 *stg = qv_dyn + warp * 2 * C::ST;

    /* before the grid wait: the block's rows into L2, the first chunk into shared memory
     * (WK_QMV_EARLY_W); x only after it */
    wk_qmv_prefetch_rows(w, r0, WK_QMV_TB, n, rowbytes);
    wk_qmv_mma_copy_w<Q>(stg, w, warp, nch, r0, n, lane);
    WK_GRID_WAIT();
    wk_qmv_mma_copy_x<Q>(stg, xq, xd, xs, warp, nch, rows, lane);

    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int64_t trips = (nch + NW - 1) / NW;
    for (int64_t it = 0; it < trips; it++) {
        wk_cp_async_wait<0>(); /* this trip's copies */
        __syncthreads();       /* everyone's; the other stage's reads (trip it - 1) are done */
        const int64_t c = it * NW + warp;
        wk_u32x4 *nx = stg + ((it + 1) & 1) * C::ST;
        wk_qmv_mma_copy_w<Q>(nx, w, c + NW, nch, r0, n, lane);
        wk_qmv_mma_copy_x<Q>(nx, xq, xd, xs, c + NW, nch, rows, lane);
        const wk_u32x4 *st = stg + (it & 1) * C::ST;
        const uint8_t *sa = (const uint8_t *)(st + g * C::CS);
        const uint8_t *sb = (const uint8_t *)(st + (g + 8) * C::CS);
        const uint32_t *sxr = (const uint32_t *)(st + C::WS + g * 17);
        const float *sd = (const float *)(st + C::WS + C::XS);
        const uint32_t *ss = (const uint32_t *)(st + C::WS + C::XS + C::DS);
#pragma unroll
        for (int bb = 0; bb < 8; bb++) {
            const uint8_t *pa = sa + bb * BY, *pb = sb + bb * BY;
            uint32_t a[4], bx[2];
            a[0] = wk_qp<Q>::qi(pa, 0, t);
            a[1] = wk_qp<Q>::qi(pb, 0, t);
            a[2] = wk_qp<Q>::qi(pa, 0, t + 4);
            a[3] = wk_qp<Q>::qi(pb, 0, t + 4);
            bx[0] = sxr[bb * 8 + t];
            bx[1] = sxr[bb * 8 + t + 4];
            int cc[4] = {0, 0, 0, 0};
            wk_imma_16832(cc, a, bx);
            if (c >= nch) /* the same for the whole warp */
                continue;
            /* the block's scale (and min) from its first word, converted by gpu.h's cvt */
            const uint32_t ha = wk_qw<BY % 4 == 0>(pa, 0), hb = wk_qw<BY % 4 == 0>(pb, 0);
            float dw[2], mw[2];
            wk_qp<Q>::sc(wk_qr{&ha, 0}, 0, 0, dw[0], mw[0]);
            wk_qp<Q>::sc(wk_qr{&hb, 0}, 0, 0, dw[1], mw[1]);
            const float dx[2] = {sd[2 * t * 8 + bb], sd[(2 * t + 1) * 8 + bb]};
            float sx[2] = {0.0f, 0.0f};
            if (wk_q<Q>::MIN) {
#pragma unroll
                for (int x = 0; x < 2; x++) {
                    const uint32_t sw = ss[(2 * t + x) * 8 + bb];
                    sx[x] = (float)((int)(short)(sw & 0xFFFFu) + (int)(short)(sw >> 16));
                }
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int r = i >> 1, x = i & 1; /* weight row g + 8 r, x row 2t + x */
                float p = dw[r] * (float)cc[i];
                if (wk_q<Q>::MIN)
                    p += mw[r] * sx[x];
                acc[i] += dx[x] * p;
            }
        }
    }
    wk_cp_async_wait<0>(); /* the zero copies past the last trip, before the block ends */

    __shared__ float red[WK_BLOCK / 32][4][32];
#pragma unroll
    for (int i = 0; i < 4; i++)
        red[warp][i][lane] = acc[i];
    __syncthreads();
    if (threadIdx.x < 128) { /* one output per thread: accumulator i of lane l */
        const int l = (int)threadIdx.x & 31, i = (int)threadIdx.x >> 5;
        float v = 0.0f;
#pragma unroll
        for (int q = 0; q < NW; q++)
            v += red[q][i][l];
        const int64_t row = r0 + (l >> 2) + 8 * (i >> 1);
        const int xrow = 2 * (l & 3) + (i & 1);
        if (row < n && xrow < rows)
            wk_stf(out, (int64_t)xrow * n + row, dt, v);
    }
    WK_GRID_LAUNCH_DEPENDENTS();
}

/* qmv8_mma_<q>, rows 1..8; launched early. On NVIDIA sm_80+ (the matrix units) and the simt
 * device; not built for AMD, where the twin's shuffles would run (the host takes warp2 or
 * rowpair there). */
#define WK_QMV_MMA(QN, Q)                                                                      \
    WK_KERNEL qmv8_mma_##QN(const uint8_t *w, const uint32_t *xq, const float *xd,             \
                            const uint32_t *xs, void *out, int dt, int64_t n, int64_t k,       \
                            int rows)                                                          \
    {                                                                                          \
        wk_qmv_mma<Q>(w, xq, xd, xs, out, dt, n, k, rows);                                     \
    }
#if !defined(WK_HIP)
WK_QMV_MMA(q4_0, WK_Q4_0)
WK_QMV_MMA(q4_1, WK_Q4_1)
WK_QMV_MMA(q5_0, WK_Q5_0)
WK_QMV_MMA(q5_1, WK_Q5_1)
WK_QMV_MMA(q8_0, WK_Q8_0)
#endif

/* ---- words: one row of x against Q4_0 or Q8_0 W whose rows hold an even number of blocks (k a
 * multiple of 64) and whose start is 4-byte aligned (the host checks: src/gpu/gpu_quant.c
 * qmv_runs). Then every row starts 4-byte aligned and block u of a row starts on a 4-byte
 * boundary when u is even, 2 bytes past one when odd, so the BYTES / 4 + 1 aligned 32-bit words
 * from the boundary at or before it hold the block whole and never reach past the row (an even
 * block's last word is the first of block u + 1, which exists): 5 loads per Q4_0 block, 9 per
 * Q8_0, where wk_qp<Q>'s 16-bit reads (a 2-byte aligned block) take 9 and 17. One block per
 * lane, G lanes per weight row (32: "words", 128: "words4"), adjacent lanes on adjacent blocks;
 * per block BYTES / 4 dp4a against two 16-byte activation loads, then
 *     acc += dx * (dw * isum)
 * and the group's sum stored by wk_qmv_group_store. Launched early through wk_qmv_early (L < 0
 * there) as the lane-group kernels. On the H100 (cold W)
 * it took 5-13% off the time of the kernels qmv_pick took before for Q4_0 and 3-6% for Q8_0,
 * the 8B-shaped model's decode 8.6% and 5.7% (docs/performance.md "Quantized matvec"). */
template <int Q, int G>
WK_DEV void wk_qmv_words(const uint8_t *__restrict__ w, const uint32_t *__restrict__ xq,
                         const float *__restrict__ xd, void *__restrict__ out, int dt, int64_t n,
                         int64_t k)
{
    static_assert(Q == WK_Q4_0 || Q == WK_Q8_0, "words: Q4_0 and Q8_0 only");
    const int BY = wk_q<Q>::BYTES, NW = BY / 4 + 1, NQ = NW - 1;
    const int nsub = (int)(k / 32), g = (int)threadIdx.x / G, t = (int)threadIdx.x % G;
    const int64_t row = (int64_t)blockIdx.x * (WK_BLOCK / G) + g;
    /* rows past n read row n - 1 instead (never stored) */
    const uint32_t *wr = (const uint32_t *)(w + (row < n ? row : n - 1) * (int64_t)nsub * BY);
    float acc[1][1] = {{0.0f}};
    for (int u = t; u < nsub; u += G) {
        const uint32_t *p = wr + (BY * u - (u & 1) * 2) / 4;
        uint32_t v[NW];
#pragma unroll
        for (int i = 0; i < NW; i++)
            v[i] = p[i];
        const bool odd = u & 1;
        const uint32_t d = odd ? v[0] >> 16 : v[0] & 0xFFFFu;
        uint32_t q[NQ];
#pragma unroll
        for (int i = 0; i < NQ; i++)
            q[i] = odd ? v[i + 1] : (v[i] >> 16) | (v[i + 1] << 16);
        uint32_t xv[8];
        wk_qmv_ldx<8>(xq + (int64_t)u * 8, xv);
        int is = 0;
#pragma unroll
        for (int i = 0; i < NQ; i++) {
            if (Q == WK_Q4_0) {
                is = WK_DP4A(wk_qsubb(q[i] & 0x0F0F0F0Fu, 0x08080808u), xv[i], is);
                is = WK_DP4A(wk_qsubb((q[i] >> 4) & 0x0F0F0F0Fu, 0x08080808u), xv[4 + i], is);
            } else {
                is = WK_DP4A(q[i], xv[i], is);
            }
        }
        acc[0][0] += xd[u] * (wk_cvt_f16_f32(d) * (float)is);
    }
    wk_qmv_group_store<1, 1, G>(acc, out, dt, n, (int64_t)blockIdx.x * (WK_BLOCK / G) + g, 1);
}

/* ---- the lane-group kernels: X(name, R, G, NC, L, U, P). The host (src/gpu/gpu_quant.c,
 * QMV_KERNELS) holds the same geometry: a block of WK_BLOCK threads covers (WK_BLOCK / G) * NC
 * weight rows. Only the row counts where each is a default are built (gpu_quant.c qmv_pick).
 *   warp:  a 32-lane group per weight row, a whole sub-block per lane
 *   warp2: as warp with 64 lanes (two warps) per row group, summed through shared memory: twice
 *          warp's warps, for W with few rows (one row per group at R = 1, two at R = 8)
 *   warp4: as warp with 128 lanes (four warps) per row group
 *   split: 64 lanes per two rows, two lanes per sub-block on its two halves' disjoint bytes
 *   stream: wk_qmv_stream (L = 0 marks it), one warp per row, staged through shared memory */
#define WK_QMV_VARIANTS(X)                                                                     \
    X(warp, 1, 32, 1, 1, 2, 0)                                                                  \
    X(warp2, 1, 64, 1, 1, 1, 0) X(warp2, 8, 64, 2, 1, 1, 0)                                     \
    X(warp4, 1, 128, 1, 1, 1, 0) X(warp4, 8, 128, 2, 1, 1, 0)                                   \
    X(split, 1, 64, 2, 2, 1, 1)                                                                 \
    X(stream, 1, 32, 1, 0, 1, 0)

/* Launched early (the host's WK_LAUNCH_EARLY): before the wait, only the block's first weight
 * row is prefetched into L2, so it streams in while the kernel before it (the norm or gate that
 * wrote the activations) runs. One row, not the block's whole rows (2 for warp4, 8 for warp):
 * the 8B-shaped Q8_0 model (warp4 for every product) decoded 237 -> 245 tok/s on the H100, tg128
 * alternated in one run; Q4_0 the same within the runs' noise. No prefetch (244), half the rows
 * (245) or all rows only for the blocks in the first 4 MiB of W (245) did as well or a little
 * worse; 16 or 32 MiB of W's head prefetched by the first 128 blocks lost 2-6% on every type
 * (2026-12-06, docs/performance.md "Decode step"). */
template <int Q, int R, int NC, int G, int L, int U, bool P>
WK_DEV void wk_qmv_early(const uint8_t *w, const uint32_t *xq, const float *xd,
                         const uint32_t *xs, void *out, int dt, int64_t n, int64_t k, int rows)
{
    wk_qmv_prefetch_rows(w, (int64_t)blockIdx.x * (WK_BLOCK / G) * NC, 1, n,
                         k / wk_q<Q>::QK * wk_q<Q>::BYTES);
    WK_GRID_WAIT();
    if constexpr (L == 0)
        wk_qmv_stream<Q, R>(w, xq, xd, xs, out, dt, n, k, rows);
    else if constexpr (L < 0)
        wk_qmv_words<Q, G>(w, xq, xd, out, dt, n, k);
    else
        wk_qmv_lanes<Q, R, NC, G, L, U, P>(w, xq, xd, xs, out, dt, n, k, rows);
    WK_GRID_LAUNCH_DEPENDENTS();
}

#define WK_QMV_ONE(QN, Q, V, R, G, NC, L, U, P)                                                   \
    WK_KERNEL qmv##R##_##V##_##QN(const uint8_t *w, const uint32_t *xq, const float *xd,       \
                                  const uint32_t *xs, void *out, int dt, int64_t n, int64_t k, \
                                  int rows)                                                    \
    {                                                                                          \
        wk_qmv_early<Q, R, NC, G, L, U, P>(w, xq, xd, xs, out, dt, n, k, rows);                   \
    }
/* the block type list, expanded once per row of the table */
#define WK_QMV_Q4_0(V, R, G, NC, L, U, P) WK_QMV_ONE(q4_0, WK_Q4_0, V, R, G, NC, L, U, P)
#define WK_QMV_Q4_1(V, R, G, NC, L, U, P) WK_QMV_ONE(q4_1, WK_Q4_1, V, R, G, NC, L, U, P)
#define WK_QMV_Q5_0(V, R, G, NC, L, U, P) WK_QMV_ONE(q5_0, WK_Q5_0, V, R, G, NC, L, U, P)
#define WK_QMV_Q5_1(V, R, G, NC, L, U, P) WK_QMV_ONE(q5_1, WK_Q5_1, V, R, G, NC, L, U, P)
#define WK_QMV_Q8_0(V, R, G, NC, L, U, P) WK_QMV_ONE(q8_0, WK_Q8_0, V, R, G, NC, L, U, P)
#define WK_QMV_Q8_1(V, R, G, NC, L, U, P) WK_QMV_ONE(q8_1, WK_Q8_1, V, R, G, NC, L, U, P)
#define WK_QMV_Q2_K(V, R, G, NC, L, U, P) WK_QMV_ONE(q2_k, WK_Q2_K, V, R, G, NC, L, U, P)
#define WK_QMV_Q3_K(V, R, G, NC, L, U, P) WK_QMV_ONE(q3_k, WK_Q3_K, V, R, G, NC, L, U, P)
#define WK_QMV_Q4_K(V, R, G, NC, L, U, P) WK_QMV_ONE(q4_k, WK_Q4_K, V, R, G, NC, L, U, P)
#define WK_QMV_Q5_K(V, R, G, NC, L, U, P) WK_QMV_ONE(q5_k, WK_Q5_K, V, R, G, NC, L, U, P)
#define WK_QMV_Q6_K(V, R, G, NC, L, U, P) WK_QMV_ONE(q6_k, WK_Q6_K, V, R, G, NC, L, U, P)
#define WK_QMV_Q8_K(V, R, G, NC, L, U, P) WK_QMV_ONE(q8_k, WK_Q8_K, V, R, G, NC, L, U, P)
#define WK_QMV_ALL(V, R, G, NC, L, U, P)                                                          \
    WK_QMV_Q4_0(V, R, G, NC, L, U, P) WK_QMV_Q4_1(V, R, G, NC, L, U, P)                              \
    WK_QMV_Q5_0(V, R, G, NC, L, U, P) WK_QMV_Q5_1(V, R, G, NC, L, U, P)                              \
    WK_QMV_Q8_0(V, R, G, NC, L, U, P) WK_QMV_Q8_1(V, R, G, NC, L, U, P)                              \
    WK_QMV_Q2_K(V, R, G, NC, L, U, P) WK_QMV_Q3_K(V, R, G, NC, L, U, P)                              \
    WK_QMV_Q4_K(V, R, G, NC, L, U, P) WK_QMV_Q5_K(V, R, G, NC, L, U, P)                              \
    WK_QMV_Q6_K(V, R, G, NC, L, U, P) WK_QMV_Q8_K(V, R, G, NC, L, U, P)
WK_QMV_VARIANTS(WK_QMV_ALL)
/* words (L = -1 marks it), one row of Q4_0 and Q8_0: 32 or 128 lanes per weight row */
WK_QMV_Q4_0(words, 1, 32, 1, -1, 1, 0) WK_QMV_Q4_0(words4, 1, 128, 1, -1, 1, 0)
WK_QMV_Q8_0(words, 1, 32, 1, -1, 1, 0) WK_QMV_Q8_0(words4, 1, 128, 1, -1, 1, 0)


#define WK_QMVQ(DN, D)                                                                         \
    WK_KERNEL qmvq_##DN(int64_t nblk, const void *x, uint32_t *xq, float *xd, uint32_t *xs)     \
    {                                                                                          \
        WK_GRID_WAIT(); /* launched early */                                                   \
        WK_GRID_LAUNCH_DEPENDENTS(); /* the matvec may start: it prefetches its weights */      \
        wk_qmvq<D>(nblk, (const wk_t<D>::S *)x, xq, xd, xs);                                   \
    }
WK_QMVQ(f32, WK_DT_F32)
WK_QMVQ(f16, WK_DT_F16)
WK_QMVQ(bf16, WK_DT_BF16)

/* act_decode_<dt>(n, act, x): x[i] = code i x its block's scale (f32), rounded to dt once: the
 * activations (wick.h's layout, n = m k elements) as floats, for the products that do not read
 * int8 activations (float weights, more than 8 rows). */
#define WK_ACT_DECODE(DN, D)                                                                   \
    WK_KERNEL act_decode_##DN(int64_t n, const uint8_t *act, void *x)                          \
    {                                                                                          \
        const float *d = (const float *)(act + n);                                             \
        for (int64_t i = wk_tid(); i < n; i += wk_nthreads())                                  \
            ((wk_t<D>::S *)x)[i] = wk_t<D>::st((float)(int8_t)act[i] * d[i >> 5]);             \
    }
WK_ACT_DECODE(f32, WK_DT_F32)
WK_ACT_DECODE(f16, WK_DT_F16)
WK_ACT_DECODE(bf16, WK_DT_BF16)

/* ---- rowpair: rows of x <= R (2 or 4), a block of 256 threads is 4 groups of 64; group g owns
 * NC adjacent output columns (weight rows) and its 64 threads walk the k/32 sub-blocks of those
 * rows, adjacent threads on adjacent sub-blocks (coalesced weight reads), U sub-blocks per thread
 * loaded before any is used (U = 1: U = 2 measured slower on the H200). Per sub-block: the NC
 * weight sub-blocks are decoded once (wk_q<Q>::sub) and each of the rows' activations (two
 * 16-byte loads) meets all NC of them: integer dot products with WK_DP4A per 16-element half,
 * then acc += dx * (dw0 * i0 + dw1 * i1 [+ mw0 * s0 + mw1 * s1]) with s the sums of the
 * activation bytes (recomputed here; xs is not read). Reduction: warp shuffles over the whole
 * warp (32 or 64 lanes), then shared memory over the 64 / warpSize warps of a group, one store
 * per output. Not launched early (no grid wait). */
#define WK_QMV_RP_T 64                       /* threads per column group (a multiple of warpSize) */
#define WK_QMV_RP_G (WK_BLOCK / WK_QMV_RP_T) /* groups per block */

template <int Q, int R, int NC, int U>
WK_DEV void wk_qmv_rowpair(const uint8_t *__restrict__ w, const uint32_t *__restrict__ xq,
                           const float *__restrict__ xd, void *__restrict__ out, int dt,
                           int64_t n, int64_t k, int rows)
{
    const int SUBS = wk_q<Q>::QK / 32;
    const int64_t nsub = k / 32;                              /* sub-blocks per row */
    const int64_t rowbytes = k / wk_q<Q>::QK * wk_q<Q>::BYTES; /* bytes per weight row */
    const int g = (int)threadIdx.x / WK_QMV_RP_T, t = (int)threadIdx.x % WK_QMV_RP_T;
    const int64_t col0 = ((int64_t)blockIdx.x * WK_QMV_RP_G + g) * NC;

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
    for (int64_t u0 = t; u0 < nsub; u0 += (int64_t)U * WK_QMV_RP_T) {
        wk_qsub ws[U][NC];
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int64_t uj = u0 + (int64_t)j * WK_QMV_RP_T < nsub ? u0 + (int64_t)j * WK_QMV_RP_T : u0;
            const int64_t blk = uj / SUBS;
            const int s = (int)(uj - blk * SUBS);
#pragma unroll
            for (int c = 0; c < NC; c++)
                wk_q<Q>::sub(wr[c] + blk * wk_q<Q>::BYTES, s, ws[j][c]);
        }
#pragma unroll
        for (int j = 0; j < U; j++) {
            const int64_t u = u0 + (int64_t)j * WK_QMV_RP_T;
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
    const int wpg = WK_QMV_RP_T / W; /* warps per group: 2 (32 lanes) or 1 (64 lanes) */
    for (int i = (int)threadIdx.x; i < WK_QMV_RP_G * R * NC; i += WK_BLOCK) {
        const int gg = i / (R * NC), rc = i % (R * NC), r = rc / NC, c = rc % NC;
        const int64_t col = ((int64_t)blockIdx.x * WK_QMV_RP_G + gg) * NC + c;
        if (r < rows && col < n) {
            float v = 0.0f;
            for (int q = 0; q < wpg; q++)
                v += red[gg * wpg + q][rc];
            wk_stf(out, (int64_t)r * n + col, dt, v);
        }
    }
}

#define WK_QMV_ROWPAIR(QN, Q)                                                                  \
    WK_KERNEL qmv2_rowpair_##QN(const uint8_t *w, const uint32_t *xq, const float *xd,         \
                                const uint32_t *xs, void *out, int dt, int64_t n, int64_t k,   \
                                int rows)                                                      \
    {                                                                                          \
        (void)xs;                                                                              \
        wk_qmv_rowpair<Q, 2, 2, 1>(w, xq, xd, out, dt, n, k, rows);                            \
    }                                                                                          \
    WK_KERNEL qmv4_rowpair_##QN(const uint8_t *w, const uint32_t *xq, const float *xd,         \
                                const uint32_t *xs, void *out, int dt, int64_t n, int64_t k,   \
                                int rows)                                                      \
    {                                                                                          \
        (void)xs;                                                                              \
        wk_qmv_rowpair<Q, 4, 2, 1>(w, xq, xd, out, dt, n, k, rows);                            \
    }
WK_QMV_ROWPAIR(q4_0, WK_Q4_0) WK_QMV_ROWPAIR(q4_1, WK_Q4_1) WK_QMV_ROWPAIR(q5_0, WK_Q5_0)
WK_QMV_ROWPAIR(q5_1, WK_Q5_1) WK_QMV_ROWPAIR(q8_0, WK_Q8_0) WK_QMV_ROWPAIR(q8_1, WK_Q8_1)
WK_QMV_ROWPAIR(q2_k, WK_Q2_K) WK_QMV_ROWPAIR(q3_k, WK_Q3_K) WK_QMV_ROWPAIR(q4_k, WK_Q4_K)
WK_QMV_ROWPAIR(q5_k, WK_Q5_K) WK_QMV_ROWPAIR(q6_k, WK_Q6_K) WK_QMV_ROWPAIR(q8_k, WK_Q8_K)

/* ---- float weights: pmv<R>_<w>_<x>(w, x, out, n, k, rows, vec)
 * out (rows, n) of x's dtype = x (rows, k) @ W^T for rows <= R, W (n, k) of f32/f16/bf16 and x
 * of f32/f16/bf16 in any pairing, products and sums in f32 (the same value as converting W to
 * x's dtype first only where that conversion is exact; it is never rounded here). A group of G
 * lanes (32, or 64 / 128 for the k2 / k4 kernels below) per PMV_NC adjacent weight rows; with
 * vec (host-checked: W, x and both row strides 16-byte aligned) each lane loads PMV_U chunks of
 * 16 bytes of each weight row per trip (all in flight before the first product) and the
 * matching activations in one or two vector loads, else one element per lane per trip.
 * Reduction by xor shuffles inside aligned 32-lane groups (wave64-correct), then shared memory
 * for G > 32 (wk_qmv_group_store). Decode's f16/bf16 weights with f32 activations read W once
 * instead of converting all of it to f32 first. */
#define PMV_NC 2
#define PMV_U 4 /* 16-byte chunks per weight row in flight per lane */
/* the elements of NW words of dtype D (f32, f16, bf16) as f32: f16 by the GPU's conversion
 * instruction (gpu.h wk_cvt_f16x2_f32: a NaN stays a NaN, all a product needs), bf16 by a
 * shift */
template <int D, int NW> WK_DEV void wk_pmv_widen(const uint32_t *wv, float *o)
{
#pragma unroll
    for (int j = 0; j < NW; j++) {
        if constexpr (D == WK_DT_F32) {
            o[j] = __int_as_float((int)wv[j]);
        } else if constexpr (D == WK_DT_F16) {
            wk_cvt_f16x2_f32(wv[j], o[2 * j], o[2 * j + 1]);
        } else {
            o[2 * j] = __int_as_float((int)(wv[j] << 16));
            o[2 * j + 1] = __int_as_float((int)(wv[j] & 0xFFFF0000u));
        }
    }
}

/* U 16-byte chunks of each of a lane's NC weight rows at element e0 + u G E (u < U): loaded
 * together (U NC loads in flight per lane before the first product), then converted and
 * multiplied against x's matching chunks. */
template <int W, int D, int R, int U, int NC, int G>
WK_DEV void wk_pmv_chunks(const typename wk_t<W>::S *(&wr)[NC],
                          const typename wk_t<D>::S *xs, int64_t e0, int64_t k, int rows,
                          float (&acc)[R][NC])
{
    typedef typename wk_t<W>::S WS;
    typedef typename wk_t<D>::S XS;
    const int E = 16 / (int)sizeof(WS), XV = E * (int)sizeof(XS) / 4;
    uint32_t wv[U][NC][4];
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            wk_qmv_ldx<4>((const uint32_t *)(wr[c] + e0 + (int64_t)u * G * E), wv[u][c]);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int64_t eu = e0 + (int64_t)u * G * E;
        float wf[NC][E]; /* converted once, used by every row of x */
#pragma unroll
        for (int c = 0; c < NC; c++)
            wk_pmv_widen<W, 4>(wv[u][c], wf[c]);
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (r < rows) {
                uint32_t xv[XV];
                wk_qmv_ldx<XV>((const uint32_t *)(xs + (int64_t)r * k + eu), xv);
                float xf[E];
                wk_pmv_widen<D, XV>(xv, xf);
#pragma unroll
                for (int i = 0; i < E; i++)
#pragma unroll
                    for (int c = 0; c < NC; c++)
                        acc[r][c] += wf[c][i] * xf[i];
            }
        }
    }
}

/* Launched early (the host's WK_LAUNCH_EARLY): before the grid wait the block prefetches the
 * first PMV_U chunks of its first weight row into L2, nothing else (of all its rows: the
 * 8B-shaped F16 model decoded 147 tok/s on the H100, none 150, the first row 152, alternated in
 * one run, 2026-12-06; as wk_qmv_early's rows: a prefetch queued before the wait seems to delay
 * the block's own loads after it more than it saves). Then
 * trips of PMV_U chunks per row and lane while a whole trip fits in k, single chunks after, and
 * without vec one element per lane per trip. */
template <int W, int D, int R, int G>
WK_DEV void wk_pmv(const void *__restrict__ w, const void *__restrict__ x, void *__restrict__ out,
                   int64_t n, int64_t k, int rows, int vec)
{
    typedef typename wk_t<W>::S WS;
    typedef typename wk_t<D>::S XS;
    const int E = 16 / (int)sizeof(WS);       /* elements per 16-byte weight load */
    const int NC = PMV_NC, U = PMV_U;
    const int g = (int)threadIdx.x / G, t = (int)threadIdx.x % G;
    const int64_t row0 = (int64_t)blockIdx.x * (WK_BLOCK / G) * NC;
    const int64_t col0 = row0 + (int64_t)g * NC;
    {
        const int64_t rowbytes = k * (int64_t)sizeof(WS), lines = (int64_t)U * G * E * (int64_t)sizeof(WS) / 128;
        const int64_t nl = rowbytes / 128 < lines ? (rowbytes + 127) / 128 : lines;
        for (int64_t i = threadIdx.x; i < nl; i += WK_BLOCK) /* row0 < n: the grid's size */
            WK_PREFETCH_L2((const uint8_t *)w + row0 * rowbytes + i * 128);
    }
    WK_GRID_WAIT();
    const WS *wr[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) /* past n: row n - 1, never stored */
        wr[c] = (const WS *)w + (col0 + c < n ? col0 + c : n - 1) * k;
    const XS *xs = (const XS *)x;
    float acc[R][NC];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            acc[r][c] = 0.0f;
    const int64_t kv = vec ? k / E * E : 0, span = (int64_t)G * E;
    const int64_t ku = kv / (span * U) * (span * U);
    int64_t e0 = (int64_t)t * E;
    for (; e0 < ku; e0 += span * U)
        wk_pmv_chunks<W, D, R, U, NC, G>(wr, xs, e0, k, rows, acc);
    for (; e0 < kv; e0 += span)
        wk_pmv_chunks<W, D, R, 1, NC, G>(wr, xs, e0, k, rows, acc);
    for (int64_t e = kv + t; e < k; e += G) {
        float wf[NC];
#pragma unroll
        for (int c = 0; c < NC; c++)
            wf[c] = wk_t<W>::ld(wr[c][e]);
#pragma unroll
        for (int r = 0; r < R; r++)
            if (r < rows) {
                const float xf = wk_t<D>::ld(xs[(int64_t)r * k + e]);
#pragma unroll
                for (int c = 0; c < NC; c++)
                    acc[r][c] += wf[c] * xf;
            }
    }
    wk_qmv_group_store<R, NC, G>(acc, out, D, n, col0, rows);
    WK_GRID_LAUNCH_DEPENDENTS();
}

/* pmv<R>_<w>_<x>: a 32-lane group per PMV_NC weight rows; pmv<R>_k<P>_<w>_<x> (one row of x):
 * a group of 32 P lanes per PMV_NC rows, so warp j of it reads the 512-byte slices j, j + P, ..
 * of each row (k split over the warps, their sums added in order through shared memory): P
 * times the blocks, for W with few rows (n = 4096: 256 blocks of 8 warps, 16 warps on a
 * multiprocessor that holds 64). */
#define WK_PMV(R, P, SUF, WN, W, XN, X)                                                         \
    WK_KERNEL pmv##R##SUF##_##WN##_##XN(const void *w, const void *x, void *out, int64_t n,    \
                                        int64_t k, int rows, int vec)                          \
    {                                                                                          \
        wk_pmv<W, X, R, 32 * P>(w, x, out, n, k, rows, vec);                                   \
    }
#define WK_PMV_X(R, P, SUF, WN, W)                                                              \
    WK_PMV(R, P, SUF, WN, W, f32, WK_DT_F32) WK_PMV(R, P, SUF, WN, W, f16, WK_DT_F16)          \
    WK_PMV(R, P, SUF, WN, W, bf16, WK_DT_BF16)
#define WK_PMV_R(R, P, SUF)                                                                     \
    WK_PMV_X(R, P, SUF, f32, WK_DT_F32) WK_PMV_X(R, P, SUF, f16, WK_DT_F16)                    \
    WK_PMV_X(R, P, SUF, bf16, WK_DT_BF16)
WK_PMV_R(1, 1, )
WK_PMV_R(2, 1, )
WK_PMV_R(4, 1, )
WK_PMV_R(8, 1, )
WK_PMV_R(1, 2, _k2)
WK_PMV_R(1, 4, _k4)
