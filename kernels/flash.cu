/* flash.cu: attention over many query tokens (prefill) on the matrix units, module "flash";
 * host side src/gpu/gpu_flash.c, which takes wk_decode_attention / _lens calls whose q, k and v
 * are all f16 or all bf16, D 64 or 128, Lq >= 64, rows aligned for 16-byte loads.
 *
 *   flash_<dt>_<D>(q, k, v, out, g, scale), flash_<dt>_64_2buf (the same with two shared buffers
 *   each for K and V, two blocks per SM: below)
 *       grid (Hq, ceil(Lq / BR), B), blocks of 256 threads = 8 groups of 32 lanes ("warps";
 *       a 64-lane wave holds two, gpu.h's matrix-unit note), BR = 128 MI query rows per block.
 *       Warp w owns the MI groups of 16 query rows from r0 = BR (gridDim.y - 1 - blockIdx.y) +
 *       16 MI w (the query blocks in reverse: under a causal mask the longest start first) of
 *       head h = blockIdx.x, batch b; kv head h / (Hq / Hkv). Its q rows stay in registers as
 *       A fragments (D / 16 per group).
 *       The keys the block can see (causal: up to the position of its last row, Lk - Lq + row;
 *       else all Lk) pass in tiles of BC (64): K and V rows copied to shared memory by cp.async
 *       (gpu.h; rows of D + 8 16-bit values: the 8 rows of an 8 x 8 fragment matrix in distinct
 *       banks), in FlashAttention-2's order: V of a tile copied while S = q K^T and the softmax
 *       run, K of the next tile while O += P V runs (one buffer each). Per group and tile:
 *         S = q K^T (16 x BC, f32, the 16 x 8 x 16 products of gpu.h: mma.sync on NVIDIA sm_80+,
 *           the shuffle twin elsewhere; K fragments by ldmatrix / plain reads, each feeding the
 *           warp's MI groups);
 *         scores x |scale| x log2(e) (scale < 0: q negated beforehand, exactly), masked (key >=
 *           Lk, or causal and key > Lk - Lq + row) to -inf only in a tile that has such keys
 *           (elsewhere the tile maximum comes from the raw scores and p by one fma); online
 *           softmax per row in base 2: the tile maximum over the row's 4 lanes (xor shuffles
 *           1, 2), m' = max(m, tile max), the row's sum l (f32 p) and accumulators O rescaled by
 *           2^(m - m'), p = 2^(s - m');
 *         O += P V with P as A fragments straight from the S accumulators (the C layout of two
 *           adjacent 16 x 8 tiles is the A layout of one 16 x 16): P rounded once to the dtype,
 *           as FlashAttention does (docs/semantics.md derives the bound; P in two 16-bit terms
 *           kept the f32 path's bound and cost 13-17% of the time on the H200: removed).
 *       Finally O / l, rounded once to the dtype, rows < Lq stored. Every group runs the same
 *       trip count and reaches every shuffle and barrier; the shuffles stay inside a 32-lane
 *       group; tiles past a wave's last row skip the arithmetic, not the copies and barriers.
 * A NaN score gives p = NaN and a NaN row (as the other paths). */
#include "mma.h"

/* All int64 so that the host mirror (gpu_flash.c) has no padding. */
struct flash_geom {
    int64_t nb, hq, hkv, lq, lk;
    int64_t qs[3], ks[3], vs[3]; /* strides of dims B, H, L (the last dim has stride 1) */
    int64_t causal;
};

#define FL_BR 128 /* query rows per block: 8 groups of 16 */
#define FL_BC 64  /* keys per tile (the default; BC of flash_body) */
#define FL_PAD 8

/* Issues the 16-byte copies of one tile of 64 rows (keys k0 ..) of K or V into s (rows of LD):
 * thread x copies chunk (x mod D / 8) of rows x / (D / 8) + i (2048 / D), i < D / 32; rows past
 * Lk are zero-filled (src: the operand's base, valid but not read). */
template <int D, int BC>
WK_DEV void flash_stage(uint16_t *s, const uint16_t *base, int64_t stride, int64_t k0, int64_t lk)
{
    enum { LD = D + FL_PAD, CPR = D / 8, RSTEP = WK_BLOCK / CPR };
    const int r = (int)threadIdx.x / CPR, col = (int)threadIdx.x % CPR * 8;
#pragma unroll
    for (int i = 0; i < BC / RSTEP; i++) {
        const int row = r + i * RSTEP;
        const bool full = k0 + row < lk;
        wk_cp_async16(s + row * LD + col, full ? base + (k0 + row) * stride + col : base, full);
    }
}

/* ST: shared buffers for each of K and V (1 or 2). MI: row groups of 16 per warp (each K or V
 * fragment read from shared memory feeds MI products) and BC: keys per tile are fixed at 1 and
 * 64, the values measured fastest (32 rows per warp and tiles of 128 keys lost on the H200 and
 * were removed: docs/performance.md, "Prefill"). */
template <int DT, int D, int ST>
WK_DEV void flash_body(const uint16_t *__restrict__ q, const uint16_t *__restrict__ k,
                       const uint16_t *__restrict__ v, uint16_t *__restrict__ out,
                       const flash_geom &g, float scale)
{
    enum { MI = 1, BC = FL_BC };
    enum { BF = DT == WK_DT_BF16, LD = D + FL_PAD, KC = D / 16, DN = D / 8, BR = FL_BR * MI };
    __shared__ uint16_t Ks[ST][BC * LD] __attribute__((aligned(16)));
    __shared__ uint16_t Vs[ST][BC * LD] __attribute__((aligned(16)));
    const int w = (int)threadIdx.x / 32, l = (int)threadIdx.x & 31, gr = l >> 2, t = l & 3;
    /* the blocks with the most keys (causal: the last rows) first, across all heads: the short
     * ones fill the tail */
    const int64_t qblk = (int64_t)gridDim.y - 1 - blockIdx.y;
    const int64_t h = blockIdx.x, b = blockIdx.z, hk = h / (g.hq / g.hkv);
    const int64_t r0 = qblk * BR + w * 16 * MI; /* row group mi: r0 + 16 mi .. + 15 */
    const uint16_t *qb = q + b * g.qs[0] + h * g.qs[1];
    const uint16_t *kb = k + b * g.ks[0] + hk * g.ks[1], *vb = v + b * g.vs[0] + hk * g.vs[1];
    const int64_t shift = g.lk - g.lq; /* query row i sits at position shift + i */
    const int64_t last = qblk * BR + BR - 1;
    const int64_t kend = g.causal && shift + last + 1 < g.lk ? shift + last + 1 : g.lk;
    const int64_t wlast =
        qblk * BR + ((int)threadIdx.x / warpSize + 1) * (warpSize / 32) * 16 * MI - 1;

    /* the first K tile on its way while q is read */
    flash_stage<D, BC>(Ks[0], kb, g.ks[2], 0, g.lk);
    if (ST == 2)
        flash_stage<D, BC>(Vs[0], vb, g.vs[2], 0, g.lk);
    wk_cp_async_commit();

    /* the warp's q rows as A fragments (zeros past Lq) */
    uint32_t qf[MI][KC][4];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int c = 0; c < KC; c++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int64_t row = r0 + mi * 16 + gr + (i & 1) * 8;
                const int col = c * 16 + (i >> 1) * 8 + 2 * t;
                const uint16_t *p = qb + row * g.qs[2] + col;
                qf[mi][c][i] = row < g.lq ? (uint32_t)p[0] | (uint32_t)p[1] << 16 : 0u;
            }

    float o[MI][DN][4], m[MI][2], lsum[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        m[mi][0] = m[mi][1] = -wk_inf_f32();
        lsum[mi][0] = lsum[mi][1] = 0.f;
#pragma unroll
        for (int j = 0; j < DN; j++)
            o[mi][j][0] = o[mi][j][1] = o[mi][j][2] = o[mi][j][3] = 0.f;
    }
    /* scale < 0: q negated (sign bits flipped: exact), so that the score order is the scaled
     * one and a tile's maximum can be taken before scaling */
    const float sl2 = fabsf(scale) * 1.4426950408889634f;
    if (scale < 0.f)
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int c = 0; c < KC; c++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    qf[mi][c][i] ^= 0x80008000u;

    /* The pipeline (FlashAttention-2's order, one shared buffer each for K and V): V of tile
     * k0 is copied while S = q K^T and the softmax run, K of the next tile while O += P V runs.
     * Each barrier follows the wait for the tile about to be read and separates the last reads
     * of the buffer about to be refilled from its new copies. ST = 2: two buffers each, one
     * barrier per tile, the next tile's K and V copied while this one is used. */
    int cb = ST == 2 ? 1 : 0; /* the buffer of tile k0 (ST = 2: toggled at each tile's start) */
    for (int64_t k0 = 0; k0 < kend; k0 += BC) {
        cb ^= ST == 2;
        wk_cp_async_wait<0>();
        __syncthreads(); /* K(k0) (ST = 2: and V) in place; every warp is past the previous tile */
        if (ST == 1) {
            flash_stage<D, BC>(Vs[0], vb, g.vs[2], k0, g.lk);
        } else if (k0 + BC < kend) {
            flash_stage<D, BC>(Ks[cb ^ 1], kb, g.ks[2], k0 + BC, g.lk);
            flash_stage<D, BC>(Vs[cb ^ 1], vb, g.vs[2], k0 + BC, g.lk);
        }
        wk_cp_async_commit();

        /* no row of the wave sees this tile (causal: past its last row): nothing to add. Per
         * wave, not per group: a 64-lane wave holds two groups, and the shuffles below need
         * all its lanes */
        const bool skip = g.causal && k0 > shift + wlast;
        float s[MI][BC / 8][4];
        if (!skip) {
            /* S = q K^T for the 8 key tiles of 8 */
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int j = 0; j < BC / 8; j++)
                    s[mi][j][0] = s[mi][j][1] = s[mi][j][2] = s[mi][j][3] = 0.f;
#pragma unroll
            for (int c = 0; c < KC; c++)
#pragma unroll
                for (int j = 0; j < BC / 8; j += 2) {
                    uint32_t r[4];
                    wk_mma_frag<1, LD, 0>(r, Ks[cb], j * 8, c * 16);
                    const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
#pragma unroll
                    for (int mi = 0; mi < MI; mi++) {
                        wk_mma_16816<BF>(s[mi][j], qf[mi][c], b0);
                        wk_mma_16816<BF>(s[mi][j + 1], qf[mi][c], b1);
                    }
                }

#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                const int64_t rg = r0 + mi * 16;
                /* mask, online softmax in scaled units (rows gr: e = 0, 1; gr + 8: e = 2, 3) */
                float mx[2] = {-wk_inf_f32(), -wk_inf_f32()};
                /* every key of the tile visible to every row of the group: no mask (uniform) */
                const bool whole = k0 + BC <= g.lk && (!g.causal || k0 + BC - 1 <= shift + rg);
                if (whole) { /* the maximum of the raw scores, scaled (sl2 >= 0) */
#pragma unroll
                    for (int j = 0; j < BC / 8; j++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            mx[e >> 1] = fmaxf(mx[e >> 1], s[mi][j][e]);
                    mx[0] *= sl2, mx[1] *= sl2;
                } else { /* scores scaled, masked to -inf (sl2 = 0 would make -inf x 0 NaN) */
                    /* key - k0 at or past lim[e >> 1] is masked (row gr, gr + 8) */
                    int lim[2];
#pragma unroll
                    for (int i = 0; i < 2; i++) {
                        int64_t vl = g.lk - k0;
                        if (g.causal && shift + rg + gr + i * 8 + 1 - k0 < vl)
                            vl = shift + rg + gr + i * 8 + 1 - k0;
                        lim[i] = vl > BC ? BC : vl < 0 ? 0 : (int)vl;
                    }
#pragma unroll
                    for (int j = 0; j < BC / 8; j++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            const int key = j * 8 + 2 * t + (e & 1);
                            s[mi][j][e] = key < lim[e >> 1] ? s[mi][j][e] * sl2 : -wk_inf_f32();
                            mx[e >> 1] = fmaxf(mx[e >> 1], s[mi][j][e]);
                        }
                }
                float alpha[2], mn[2];
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    mx[i] = fmaxf(mx[i], WK_SHFL_XOR(mx[i], 1));
                    mx[i] = fmaxf(mx[i], WK_SHFL_XOR(mx[i], 2));
                    const float mnew = fmaxf(m[mi][i], mx[i]);
                    mn[i] = mnew == -wk_inf_f32() ? 0.f : mnew; /* no visible key yet */
                    alpha[i] = fl_exp2(m[mi][i] - mn[i]);
                    m[mi][i] = mnew;
                    lsum[mi][i] *= alpha[i];
                }
                /* (once the maximum settles, alpha = 1 in most tiles: no rescale; lanes branch
                 * alone, no shuffle inside) */
                if (alpha[0] != 1.f || alpha[1] != 1.f)
#pragma unroll
                    for (int j = 0; j < DN; j++) {
                        o[mi][j][0] *= alpha[0], o[mi][j][1] *= alpha[0];
                        o[mi][j][2] *= alpha[1], o[mi][j][3] *= alpha[1];
                    }
                /* p = 2^(s sl2 - m): one fma for the unmasked tiles, the scores raw there */
                if (whole) {
#pragma unroll
                    for (int j = 0; j < BC / 8; j++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            s[mi][j][e] = fl_exp2(fmaf(s[mi][j][e], sl2, -mn[e >> 1]));
                } else {
#pragma unroll
                    for (int j = 0; j < BC / 8; j++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            s[mi][j][e] = fl_exp2(s[mi][j][e] - mn[e >> 1]);
                }
#pragma unroll
                for (int j = 0; j < BC / 8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        lsum[mi][e >> 1] += s[mi][j][e];
            }
        }

        if (ST == 1) {
            wk_cp_async_wait<0>();
            __syncthreads(); /* V(k0) in place; every warp is past q K^T of this tile */
            if (k0 + BC < kend)
                flash_stage<D, BC>(Ks[0], kb, g.ks[2], k0 + BC, g.lk);
            wk_cp_async_commit();
        }
        if (skip)
            continue;

        /* O += P V, 16 keys per product; P rounded to the dtype */
#pragma unroll
        for (int kk = 0; kk < BC / 16; kk++) {
            uint32_t ph[MI][4];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                ph[mi][0] = fl_pack2<BF>(s[mi][2 * kk][0], s[mi][2 * kk][1]);
                ph[mi][1] = fl_pack2<BF>(s[mi][2 * kk][2], s[mi][2 * kk][3]);
                ph[mi][2] = fl_pack2<BF>(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
                ph[mi][3] = fl_pack2<BF>(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
            }
#pragma unroll
            for (int j = 0; j < DN; j += 2) {
                uint32_t r[4];
                wk_mma_frag<0, LD, 0>(r, Vs[cb], j * 8, kk * 16);
                const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    wk_mma_16816<BF>(o[mi][j], ph[mi], b0);
                    wk_mma_16816<BF>(o[mi][j + 1], ph[mi], b1);
                }
            }
        }
    }
    wk_cp_async_wait<0>(); /* nothing left in flight at exit (the last commit is empty) */

    /* the row sums over their 4 lanes, then O / l, rounded once, stored in pairs */
    uint16_t *ob = out + ((b * g.hq + h) * g.lq) * D;
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            lsum[mi][i] += WK_SHFL_XOR(lsum[mi][i], 1);
            lsum[mi][i] += WK_SHFL_XOR(lsum[mi][i], 2);
        }
#pragma unroll
        for (int j = 0; j < DN; j++)
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const int64_t row = r0 + mi * 16 + gr + i * 8;
                if (row < g.lq)
                    *(uint32_t *)(ob + row * D + j * 8 + 2 * t) =
                        (uint32_t)fl_t<BF>::st(o[mi][j][2 * i] / lsum[mi][i]) |
                        (uint32_t)fl_t<BF>::st(o[mi][j][2 * i + 1] / lsum[mi][i]) << 16;
            }
    }
}

#define FLASH(DN_, DT, D, SUF, KERNEL, ST)                                                     \
    KERNEL flash_##DN_##_##D##SUF(const void *q, const void *k, const void *v, void *out,       \
                                  flash_geom g, float scale)                                    \
    {                                                                                           \
        flash_body<DT, D, ST>((const uint16_t *)q, (const uint16_t *)k, (const uint16_t *)v,    \
                              (uint16_t *)out, g, scale);                                       \
    }
FLASH(f16, WK_DT_F16, 64, , WK_KERNEL, 1)
FLASH(f16, WK_DT_F16, 128, , WK_KERNEL, 1)
FLASH(bf16, WK_DT_BF16, 64, , WK_KERNEL, 1)
FLASH(bf16, WK_DT_BF16, 128, , WK_KERNEL, 1)
/* D 64's default on NVIDIA and the simt device (gpu_flash.c flash_pick): two buffers each for K
 * and V (one barrier per tile) in two blocks per SM. On the H200 it ran at 0.77-0.97x PyTorch's
 * flash backend where the one-buffer D 64 kernel above ran at 0.58-0.77x (which stays for AMD
 * and for WICK_ATTN_FLASH=1buf); at D 128 two blocks per SM would spill. Not compiled for AMD,
 * to keep CI's six gfx builds short. */
#if !defined(WK_HIP)
FLASH(f16, WK_DT_F16, 64, _2buf, WK_KERNEL_MINB(2), 2)
FLASH(bf16, WK_DT_BF16, 64, _2buf, WK_KERNEL_MINB(2), 2)
#endif
