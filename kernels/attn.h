/* attn.h: decode attention (wk_decode_attention, wk_decode_attention_lens), compiled in one
 * module per query dtype (kernels/attn_f32.cu, attn_f16.cu, attn_bf16.cu: modules "attn_f32",
 * "attn_f16", "attn_bf16"; each the ATTN_* lines of its dtype, so that run-time compilation of
 * one does not wait for the others); host side src/gpu/gpu_attn.c. Split over the sequence ("flash decoding"), the splits merged by
 * the last block of each kv head (or by a second kernel). For q, k and v of one 16-bit dtype the
 * host takes attn_mma_* (further down, on the matrix units) with the same grid, partials and
 * merge; otherwise, in f32 arithmetic:
 *
 *   attn_part_<qd>_<kvd>_<QB>(q, k, v, po, pm, pl, g, scale, lens, word, out, ctr)
 *       grid (nsplit, B * Hkv, ceil(nq / QB)), nq = (Hq / Hkv) * Lq: the queries that read one kv
 *       head (all query heads of its group, all query tokens), QB of them per block, so every K
 *       and V row is read once for all of them. Block (split s, kv head (b, hk), query set z)
 *       covers keys [s * span, min((s + 1) * span, L_b)) (span a multiple of 256, of 128 for
 *       attn_mma); inside it each warp owns its own tiles of W keys (W = the warp size; tiles
 *       w, w + 256 / W, ..), so the block meets at a barrier only before its first tile (q in
 *       shared memory, scaled) and after its last (the merge of its warps). Per tile:
 *         scores: lane i takes key t0 + i, reads its K row in 16-byte loads (8 in flight per
 *           lane) and dots it with the QB queries (q from shared memory, broadcast reads);
 *           masked keys (past the block's range, past L_b, past the causal limit
 *           L_b - Lq + i of query token i) score -inf;
 *         online softmax per query, in registers: the tile maximum by xor shuffles over the
 *           warp, m_new = max(m, tile max), every lane rescales its running sum l and its
 *           accumulators by exp(m - m_new) and takes p = exp(s - m_new) for its key;
 *         values: lanes in groups of RV (RV = the 16-byte chunks of a row, rounded up to a power
 *           of two, at most 32) each take one chunk (two for f32 rows of more than 32 chunks)
 *           of W / RV rows at a time, 16-byte loads of 4 rows issued before their use; the
 *           weight p of each row comes from its key's lane by a shuffle.
 *       Then each warp sums l over its lanes and the accumulators over its row groups, the
 *       warps merge through shared memory (maximum, rescale, sum) and the block stores its
 *       partial result: po[(bh, s, gq, e)] = sum_j p_j v_j[e] (not normalised), pm[(bh, s, gq)]
 *       = its maximum score, pl = sum_j p_j with p_j = exp(score_j - pm). A block with no
 *       visible key stores pm = -inf, pl = 0, po = 0.
 *       Fused merge (ctr != NULL: the device's completion counters, src/gpu/gpu_impl.h): each
 *       block then counts itself in ctr[bh, z] (after a __threadfence); the last of the nsplit
 *       blocks sets the counter back to 0 and merges every split of its queries into out
 *       (attn_merge), so one launch does the whole op.
 *       Launched early (gpu.h): a block starts with WK_GRID_WAIT, so its launch overlaps the
 *       kernel before it (the decode step's rope + cache write); attn_mma the same.
 *   attn_combine_<qd>(po, pm, pl, out, g)   (ctr == NULL: WICK_ATTN_COMBINE=1, or more (kv head,
 *       query set) pairs than counters)
 *       one thread per output element, attn_merge: M = max_s pm, out = sum_s e^(pm_s - M) po_s /
 *       sum_s e^(pm_s - M) pl_s, rounded once to qd (splits that saw no visible key have pm = -inf
 *       and weigh 0).
 * Key counts: lens == NULL: every entry has Lk keys; else L_b = lens[b * lstride], read by every
 * block (the launch geometry covers Lk and does not depend on the counts: graph replay). A count
 * outside [Lq, Lk] is recorded once in the error record (word, code WK_KERR_DECODE_ATTENTION) and
 * the entry's blocks do no work (its output is undefined; 0 / 0 here).
 * A NaN score makes its p NaN, so the row's output is NaN (as on the CPU). All arithmetic f32;
 * f16 and bf16 are widened exactly (below). Unaligned K/V (g.vec = 0: a row not 16-byte
 * aligned, or D not a multiple of the elements per 16 bytes) take the same path with element
 * loads. Every warp operation is reached by all lanes of the warp (loops uniform per warp); the
 * shuffles use offsets below the warp size, so waves of 32 and 64 lanes run the same code. */
#ifndef WK_ATTN_H
#define WK_ATTN_H
#include "mma.h"

/* All int64 so that the host mirror (gpu_attn.c) has no padding. */
struct attn_geom {
    int64_t nb, hq, hkv, lq, lk, d;
    int64_t qs[3], ks[3], vs[3]; /* strides of dims B, H, L (the last dim has stride 1) */
    int64_t nsplit, span;        /* splits and keys per split (a multiple of 256; attn_mma 128) */
    int64_t nq;                  /* queries per kv head: (hq / hkv) * lq */
    int64_t causal, vec;
    int64_t lstride; /* elements between entries of lens */
};
#define ATTN_MAXD 256
#define ATTN_KB 4 /* K chunks (16 bytes) loaded per lane before their use */
#define ATTN_VB 4 /* V rows loaded per lane before their use */

/* 16 bytes of a K or V row from element e0 (element loads and zeros past d when !vec). */
template <class S, int VE>
WK_DEV void attn_ld(const S *row, int e0, int d, bool vec, wk_pack<S, VE> &p)
{
    if (vec) {
        p.raw = *(const typename wk_raw<16>::T *)(row + e0);
    } else {
#pragma unroll
        for (int u = 0; u < VE; u++)
            p.v[u] = e0 + u < d ? row[e0 + u] : (S)0;
    }
}

/* Chunk ch of the V rows r0 .. r0 + VB - 1 of a tile (row r: key t0 + r * NS + slot) into vp;
 * rows past RV or the block's range, and chunks past the row, are not loaded (and not used). */
template <class S, int VE, int VB>
WK_DEV void attn_ldrows(const S *vb, int64_t vstride, int64_t t0, int64_t je, int r0, int RV,
                        int NS, int slot, int ch, int C, int D, bool vec, wk_pack<S, VE> *vp)
{
#pragma unroll
    for (int u = 0; u < VB; u++) {
        const int64_t j = t0 + (int64_t)(r0 + u) * NS + slot;
        if (r0 + u < RV && j < je && ch < C)
            attn_ld<S, VE>(vb + j * vstride, ch * VE, D, vec, vp[u]);
    }
}

/* Widening to f32, exact for every value (f16 and bf16 are subsets of f32): bf16 by a shift,
 * f16 by gpu.h's wk_cvt_f16_f32 (the conversion instruction on NVIDIA and AMD). NaN stays NaN
 * (its payload bits may differ; no result depends on them). */
template <int KD> struct attn_cvt {
    WK_DEV float f(typename wk_t<KD>::S x) { return wk_t<KD>::ld(x); }
};
template <> struct attn_cvt<WK_DT_F16> {
    WK_DEV float f(uint16_t x) { return wk_cvt_f16_f32(x); }
};

/* The merge of the splits for output element e of query gq of kv head bh: M = max_s pm,
 * sum_s e^(pm_s - M) po_s / sum_s e^(pm_s - M) pl_s (splits with pm = -inf weigh 0). The
 * partials are read through volatile pointers: in the fused merge they were written by other
 * blocks of the same kernel (made visible by __threadfence), never cached here before. */
WK_DEV float attn_merge(const volatile float *po, const volatile float *pm,
                        const volatile float *pl, const attn_geom &g, int64_t bh, int64_t gq,
                        int64_t e)
{
    const int64_t base = bh * g.nsplit * g.nq + gq;
    float mx = -wk_inf_f32();
    for (int64_t s = 0; s < g.nsplit; s++) {
        const float x = pm[base + s * g.nq];
        mx = x > mx ? x : mx;
    }
    float num = 0.0f, den = 0.0f;
    for (int64_t s = 0; s < g.nsplit; s++) {
        const float x = pm[base + s * g.nq];
        const float w = x == -wk_inf_f32() ? 0.0f : expf(x - mx);
        den += w * pl[base + s * g.nq];
        num += w * po[(base + s * g.nq) * g.d + e];
    }
    return num / den;
}

/* Entry b's key count: lens[b] (outside [Lq, Lk]: recorded once, by the thread with first set,
 * and 0: no work) or Lk. */
WK_DEV int64_t attn_count(const attn_geom &g, const uint32_t *lens, uint32_t *word, int64_t b,
                          bool first)
{
    if (!lens)
        return g.lk;
    const int64_t nk = (int64_t)lens[b * g.lstride];
    if (nk >= g.lq && nk <= g.lk)
        return nk;
    if (first)
        wk_kerr(word, WK_KERR_DECODE_ATTENTION, (uint64_t)nk);
    return 0;
}

/* The fused merge of the splits (ctr: the device's completion counters): the block counts
 * itself in ctr[bh, z] once its partials are stored; the last of the nsplit blocks of this (kv
 * head, query set) sets the counter back to 0 for the next kernel and merges every split of its
 * QB queries (from gq0) into out. last: a shared int of the block. */
template <int QD, int QB>
WK_DEV void attn_fused_merge(const float *po, const float *pm, const float *pl,
                             const attn_geom &g, int64_t bh, int64_t gq0,
                             typename wk_t<QD>::S *__restrict__ out, uint32_t *ctr, int *last)
{
    const int t = (int)threadIdx.x, D = (int)g.d;
    const int64_t b = bh / g.hkv, hk = bh - b * g.hkv, grp = g.hq / g.hkv;
    __threadfence();
    __syncthreads();
    if (t == 0) {
        uint32_t *c = &ctr[bh * gridDim.z + blockIdx.z];
        *last = atomicAdd(c, 1u) == (uint32_t)(g.nsplit - 1);
        if (*last)
            *c = 0u; /* every block of the set has arrived */
    }
    __syncthreads();
    if (!*last)
        return;
    __threadfence();
    for (int idx = t; idx < QB * D; idx += WK_BLOCK) {
        const int qi = idx / D, e = idx - qi * D;
        const int64_t gq = gq0 + qi;
        if (gq >= g.nq)
            continue;
        const int64_t h = hk * grp + gq / g.lq, i = gq % g.lq;
        out[((b * g.hq + h) * g.lq + i) * g.d + e] =
            wk_t<QD>::st(attn_merge(po, pm, pl, g, bh, gq, e));
    }
}

template <int QD, int KD, int QB, bool KPF>
WK_DEV void attn_part(const typename wk_t<QD>::S *__restrict__ q,
                      const typename wk_t<KD>::S *__restrict__ k,
                      const typename wk_t<KD>::S *__restrict__ v, float *__restrict__ po,
                      float *__restrict__ pm, float *__restrict__ pl, const attn_geom &g,
                      float scale, const uint32_t *__restrict__ lens, uint32_t *word,
                      typename wk_t<QD>::S *__restrict__ out, uint32_t *ctr)
{
    typedef typename wk_t<KD>::S KS;
    const int VE = 16 / (int)sizeof(KS);      /* elements per 16 bytes */
    const int NVM = (int)sizeof(KS) == 4 ? 2 : 1; /* V chunks per lane at most */
    __shared__ float qs[QB][ATTN_MAXD];
    __shared__ float wacc[WK_BLOCK / 32][ATTN_MAXD]; /* per warp (at most 8 warps) */
    __shared__ float wml[WK_BLOCK / 32][2];
    __shared__ int last;

    const int t = (int)threadIdx.x, W = warpSize, lane = t % W, wid = t / W;
    const int NWARP = WK_BLOCK / W, D = (int)g.d, C = (D + VE - 1) / VE;
    int RV = 1; /* lanes per V row: C rounded up to a power of two, at most 32 */
    while (RV < C && RV < 32)
        RV <<= 1;
    const int NCV = (C + RV - 1) / RV; /* V chunks per lane: 1, or 2 for long f32 rows */
    const int NS = W / RV, slot = lane / RV, sub = lane % RV;
    const int64_t split = blockIdx.x, bh = blockIdx.y, b = bh / g.hkv, hk = bh - b * g.hkv;
    const int64_t gq0 = (int64_t)blockIdx.z * QB, grp = g.hq / g.hkv;
    const bool vec = g.vec != 0;

    WK_GRID_WAIT(); /* launched early (gpu_attn.c) */
    WK_GRID_LAUNCH_DEPENDENTS();
    const int64_t nk = attn_count(g, lens, word, b, t == 0 && split == 0 && hk == 0 &&
                                                        blockIdx.z == 0);
    int64_t lim[QB]; /* keys j < lim[qi] are visible to query qi */
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        const int64_t gq = gq0 + qi;
        lim[qi] = gq >= g.nq || nk == 0 ? 0 : g.causal ? nk - g.lq + gq % g.lq + 1 : nk;
    }
    for (int i = t; i < QB * ATTN_MAXD; i += WK_BLOCK) {
        const int qi = i / ATTN_MAXD, e = i - qi * ATTN_MAXD;
        const int64_t gq = gq0 + qi;
        float x = 0.0f;
        if (gq < g.nq && e < D) {
            const int64_t h = hk * grp + gq / g.lq, ti = gq % g.lq;
            x = wk_t<QD>::ld(q[b * g.qs[0] + h * g.qs[1] + ti * g.qs[2] + e]) * scale;
        }
        qs[qi][e] = x;
    }
    const int64_t js = split * g.span, je = js + g.span < nk ? js + g.span : nk;
    const KS *kb = k + b * g.ks[0] + hk * g.ks[1];
    const KS *vb = v + b * g.vs[0] + hk * g.vs[1];

    float m[QB], l[QB], acc[QB][NVM * VE];
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        m[qi] = -wk_inf_f32();
        l[qi] = 0.0f;
#pragma unroll
        for (int u = 0; u < NVM * VE; u++)
            acc[qi][u] = 0.0f;
    }
    __syncthreads(); /* qs */

    const int64_t ntile = je > js ? (je - js + W - 1) / W : 0;
    for (int64_t ti = wid; ti < ntile; ti += NWARP) {
        const int64_t t0 = js + ti * W, j = t0 + lane;
        const bool valid = j < je;
        /* the first V rows of the tile in flight while the scores are computed */
        wk_pack<KS, VE> va[ATTN_VB], vn[ATTN_VB];
        attn_ldrows<KS, VE, ATTN_VB>(vb, g.vs[2], t0, je, 0, RV, NS, slot, sub, C, D, vec, va);
        /* ---- scores: this lane's key against the QB queries */
        float s[QB];
#pragma unroll
        for (int qi = 0; qi < QB; qi++)
            s[qi] = 0.0f;
        if (valid) {
            const KS *kr = kb + j * g.ks[2];
            wk_pack<KS, VE> kp[ATTN_KB], kn[ATTN_KB];
            if (KPF) { /* the first batch; each next one is loaded before the current is used */
#pragma unroll
                for (int u = 0; u < ATTN_KB; u++)
                    if (u < C)
                        attn_ld<KS, VE>(kr, u * VE, D, vec, kn[u]);
            }
            for (int c0 = 0; c0 < C; c0 += ATTN_KB) {
#pragma unroll
                for (int u = 0; u < ATTN_KB; u++) {
                    if (KPF)
                        kp[u] = kn[u];
                    else if (c0 + u < C)
                        attn_ld<KS, VE>(kr, (c0 + u) * VE, D, vec, kp[u]);
                }
                if (KPF) {
#pragma unroll
                    for (int u = 0; u < ATTN_KB; u++)
                        if (c0 + ATTN_KB + u < C)
                            attn_ld<KS, VE>(kr, (c0 + ATTN_KB + u) * VE, D, vec, kn[u]);
                }
#pragma unroll
                for (int u = 0; u < ATTN_KB; u++) {
                    if (c0 + u < C) {
                        float kf[VE];
#pragma unroll
                        for (int e = 0; e < VE; e++)
                            kf[e] = attn_cvt<KD>::f(kp[u].v[e]);
#pragma unroll
                        for (int qi = 0; qi < QB; qi++) {
                            const float *qr = &qs[qi][(c0 + u) * VE];
#pragma unroll
                            for (int e = 0; e < VE; e++)
                                s[qi] += qr[e] * kf[e];
                        }
                    }
                }
            }
        }
        /* ---- online softmax: tile maximum over the warp, rescale, this key's weight */
        float p[QB];
#pragma unroll
        for (int qi = 0; qi < QB; qi++) {
            if (!(valid && j < lim[qi]))
                s[qi] = -wk_inf_f32();
            float x = s[qi];
            for (int o = W / 2; o > 0; o >>= 1) {
                const float y = WK_SHFL_XOR(x, o);
                x = y > x ? y : x;
            }
            const float mn = x > m[qi] ? x : m[qi];
            const float c = mn == -wk_inf_f32() ? 1.0f : expf(m[qi] - mn);
            p[qi] = s[qi] == -wk_inf_f32() ? 0.0f : expf(s[qi] - mn);
            l[qi] = l[qi] * c + p[qi];
#pragma unroll
            for (int u = 0; u < NVM * VE; u++)
                acc[qi][u] *= c;
            m[qi] = mn;
        }
        /* ---- values: rows r * NS + slot of the tile (r < RV), chunk sub + i * RV of each;
         * batches of ATTN_VB rows, the next batch loaded before the current one is used */
#pragma unroll
        for (int i = 0; i < NVM; i++) {
            if (i >= NCV) /* uniform */
                continue;
            const int ch = sub + i * RV;
            if (i > 0)
                attn_ldrows<KS, VE, ATTN_VB>(vb, g.vs[2], t0, je, 0, RV, NS, slot, ch, C, D,
                                             vec, va);
            for (int r0 = 0; r0 < RV; r0 += ATTN_VB) {
                if (r0 + ATTN_VB < RV)
                    attn_ldrows<KS, VE, ATTN_VB>(vb, g.vs[2], t0, je, r0 + ATTN_VB, RV, NS,
                                                 slot, ch, C, D, vec, vn);
#pragma unroll
                for (int u = 0; u < ATTN_VB; u++) {
                    if (r0 + u >= RV) /* uniform */
                        continue;
                    const int kk = (r0 + u) * NS + slot;
                    float pk[QB];
#pragma unroll
                    for (int qi = 0; qi < QB; qi++)
                        pk[qi] = WK_SHFL_XOR(p[qi], lane ^ kk); /* from key kk's lane */
                    if (t0 + kk < je && ch < C) {
                        float vf[VE];
#pragma unroll
                        for (int e = 0; e < VE; e++)
                            vf[e] = attn_cvt<KD>::f(va[u].v[e]);
#pragma unroll
                        for (int qi = 0; qi < QB; qi++)
#pragma unroll
                            for (int e = 0; e < VE; e++)
                                acc[qi][i * VE + e] += pk[qi] * vf[e];
                    }
                }
#pragma unroll
                for (int u = 0; u < ATTN_VB; u++)
                    va[u] = vn[u];
            }
        }
    }

    /* ---- the warp's totals: l over its lanes, the accumulators over its row groups */
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        for (int o = W / 2; o > 0; o >>= 1)
            l[qi] += WK_SHFL_XOR(l[qi], o);
        for (int o = RV; o < W; o <<= 1)
#pragma unroll
            for (int u = 0; u < NVM * VE; u++)
                acc[qi][u] += WK_SHFL_XOR(acc[qi][u], o);
    }
    /* ---- the block's warps merged per query, the partial result stored */
    const int64_t pbase = (bh * g.nsplit + split) * g.nq;
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        if (slot == 0) {
#pragma unroll
            for (int i = 0; i < NVM; i++)
#pragma unroll
                for (int e = 0; e < VE; e++) {
                    const int el = (sub + i * RV) * VE + e;
                    if (i < NCV && el < D)
                        wacc[wid][el] = acc[qi][i * VE + e];
                }
        }
        if (lane == 0) {
            wml[wid][0] = m[qi];
            wml[wid][1] = l[qi];
        }
        __syncthreads();
        const int64_t gq = gq0 + qi;
        if (gq < g.nq) {
            float mx = -wk_inf_f32();
            for (int w = 0; w < NWARP; w++)
                mx = wml[w][0] > mx ? wml[w][0] : mx;
            for (int e = t; e < D; e += WK_BLOCK) {
                float sum = 0.0f;
                for (int w = 0; w < NWARP; w++)
                    if (wml[w][0] != -wk_inf_f32())
                        sum += expf(wml[w][0] - mx) * wacc[w][e];
                po[(pbase + gq) * g.d + e] = sum;
            }
            if (t == 0) {
                float sl = 0.0f;
                for (int w = 0; w < NWARP; w++)
                    if (wml[w][0] != -wk_inf_f32())
                        sl += expf(wml[w][0] - mx) * wml[w][1];
                pm[pbase + gq] = mx;
                pl[pbase + gq] = sl;
            }
        }
        __syncthreads();
    }
    if (ctr) /* else attn_combine merges the splits */
        attn_fused_merge<QD, QB>(po, pm, pl, g, bh, gq0, out, ctr, &last);
}

template <int QD>
WK_DEV void attn_combine(const float *__restrict__ po, const float *__restrict__ pm,
                         const float *__restrict__ pl, typename wk_t<QD>::S *__restrict__ out,
                         const attn_geom &g)
{
    const int64_t total = g.nb * g.hq * g.lq * g.d;
    const int64_t grp = g.hq / g.hkv;
    for (int64_t idx = wk_tid(); idx < total; idx += wk_nthreads()) {
        const int64_t e = idx % g.d, r = idx / g.d;
        const int64_t i = r % g.lq, h = r / g.lq % g.hq, b = r / g.lq / g.hq;
        const int64_t hk = h / grp, gq = (h - hk * grp) * g.lq + i;
        out[idx] = wk_t<QD>::st(attn_merge(po, pm, pl, g, b * g.hkv + hk, gq, e));
    }
}

#if !defined(WK_HIP)
/* ---------------------------------------------------------------- on the matrix units
 *   attn_mma_<dt>_<D>(the arguments of attn_part): q, k and v all f16 or all bf16, D = 32 ND
 *   (32, 64, 96, 128), K and V rows 16-byte aligned; NVIDIA sm_80+ and the simt device (not
 *   compiled for AMD). The grid, split, masks, partials and merge are attn_part's with QB = 8
 *   queries per block; the products run on gpu.h's 16 x 8 x 16 fragments, transposed so that
 *   the queries are the fragments' 8 columns (GQA's few queries per kv head fill 8 columns,
 *   where as rows they would fill 16):
 *     S^T (16 keys x 8 queries) = K (16 x D) Q^T: K rows are A fragments straight from global
 *       memory and Q^T, built once, the B fragments. The contraction over d may take any order
 *       as long as both operands agree: lane (g, t) loads the 16-byte chunks 32 i + 8 t of keys
 *       g and g + 8 (i < ND), and the chunk's words 0, 1 are its registers a[0], a[2] (keys g)
 *       of k step 2 i, words 2, 3 those of step 2 i + 1; q's chunks the same way;
 *     scores x scale x log2(e), masked to -inf (key past the block's range or the query's
 *       limit), online softmax in base 2 per query column: the tile maximum over the column's
 *       8 lanes (xor shuffles 4, 8, 16), the running sum l (f32 p) and O rescaled by 2^(m - m');
 *     O^T (D x 8) += V^T (D x 16 keys) P^T: P^T's B fragment is the S^T accumulator rounded
 *       once to the dtype (as FlashAttention and kernels/flash.cu) and transposed by 8 x 8
 *       blocks (gpu.h wk_movm_t), V^T's A fragments are the words of V's 16-byte chunks (loaded
 *       as K's) transposed the same way, so the rows of O^T are the d values in the order
 *       d(i, h, r) = 32 i + 8 (r / 2 mod 4) + 4 h + 2 (r / 8) + r mod 2 for row r of m tile
 *       (i, h).
 *   Each warp (32 lanes; a 64-lane wave holds two) walks its own tiles of 16 keys with no block
 *   barrier, V's loads in flight during S^T and the softmax; at the end the warps' (m, l, O)
 *   meet in shared memory and the block stores attn_part's partials. Each warp loads its next
 *   tile of K and V while the current one is used (twice the registers of loading at the top of
 *   each round, 214 at D 128 on sm_90: one block per multiprocessor; on the H200 32k keys took
 *   41.7 us against 43.8, 8k the same). */
#define AM_QB 8

/* 16 bytes of row r (4 words; zeros when !in) */
WK_DEV void am_ld(uint32_t *w, const uint16_t *row, bool in)
{
    wk_pack<uint32_t, 4> p;
    if (in)
        p.raw = ((const wk_pack<uint32_t, 4> *)row)->raw;
    else
        p.v[0] = p.v[1] = p.v[2] = p.v[3] = 0u;
    w[0] = p.v[0], w[1] = p.v[1], w[2] = p.v[2], w[3] = p.v[3];
}

/* the K and V chunks of the 16-key tile whose first key is t0 (rows past je: zeros, not read) */
template <int ND>
WK_DEV void am_tile(uint32_t (&kw)[ND][2][4], uint32_t (&vw)[ND][2][4], const uint16_t *kb,
                    const uint16_t *vb, const attn_geom &g, int64_t t0, int64_t je, int gr, int tq)
{
    const int64_t j0 = t0 + gr, j1 = j0 + 8;
#pragma unroll
    for (int i = 0; i < ND; i++) {
        am_ld(kw[i][0], kb + j0 * g.ks[2] + 32 * i + 8 * tq, j0 < je);
        am_ld(kw[i][1], kb + j1 * g.ks[2] + 32 * i + 8 * tq, j1 < je);
    }
#pragma unroll
    for (int i = 0; i < ND; i++) {
        am_ld(vw[i][0], vb + j0 * g.vs[2] + 32 * i + 8 * tq, j0 < je);
        am_ld(vw[i][1], vb + j1 * g.vs[2] + 32 * i + 8 * tq, j1 < je);
    }
}

template <int BF, int ND>
WK_DEV void attn_mma(const uint16_t *__restrict__ q, const uint16_t *__restrict__ k,
                     const uint16_t *__restrict__ v, float *__restrict__ po,
                     float *__restrict__ pm, float *__restrict__ pl, const attn_geom &g,
                     float scale, const uint32_t *__restrict__ lens, uint32_t *word,
                     uint16_t *__restrict__ out, uint32_t *ctr)
{
    enum { D = 32 * ND, NWARP = WK_BLOCK / 32 };
    /* D + 1: the stores below put query columns 2 tq + c of one d in different banks */
    __shared__ float wacc[NWARP][AM_QB][D + 1];
    __shared__ float wml[NWARP][AM_QB][2];
    __shared__ float wf[NWARP][AM_QB], bm[AM_QB], bl[AM_QB]; /* the warps' weights per query */
    __shared__ int last;

    const int t = (int)threadIdx.x, lane = t & 31, wid = t >> 5, gr = lane >> 2, tq = lane & 3;
    const int64_t split = blockIdx.x, bh = blockIdx.y, b = bh / g.hkv, hk = bh - b * g.hkv;
    const int64_t gq0 = (int64_t)blockIdx.z * AM_QB, grp = g.hq / g.hkv;

    WK_GRID_WAIT(); /* launched early (gpu_attn.c) */
    WK_GRID_LAUNCH_DEPENDENTS();
    const int64_t nk = attn_count(g, lens, word, b, t == 0 && split == 0 && hk == 0 &&
                                                        blockIdx.z == 0);
    /* this lane's query columns 2 tq, 2 tq + 1: their key limits */
    int64_t lim[2];
#pragma unroll
    for (int c = 0; c < 2; c++) {
        const int64_t gq = gq0 + 2 * tq + c;
        lim[c] = gq >= g.nq || nk == 0 ? 0 : g.causal ? nk - g.lq + gq % g.lq + 1 : nk;
    }
    /* Q^T as B fragments: query gq0 + gr (zeros past nq), chunks 32 i + 8 tq (element loads:
     * q's rows need no alignment) */
    uint32_t qf[ND][4];
    {
        const int64_t gq = gq0 + gr;
        const bool in = gq < g.nq;
        const uint16_t *qr = q;
        if (in) {
            const int64_t h = hk * grp + gq / g.lq, ti = gq % g.lq;
            qr = q + b * g.qs[0] + h * g.qs[1] + ti * g.qs[2];
        }
#pragma unroll
        for (int i = 0; i < ND; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int e = 32 * i + 8 * tq + 2 * j;
                qf[i][j] = in ? (uint32_t)qr[e] | (uint32_t)qr[e + 1] << 16 : 0u;
            }
    }
    const float sl2 = scale * 1.4426950408889634f; /* scores to base 2 */
    const int64_t js = split * g.span, je = js + g.span < nk ? js + g.span : nk;
    const uint16_t *kb = k + b * g.ks[0] + hk * g.ks[1];
    const uint16_t *vb = v + b * g.vs[0] + hk * g.vs[1];

    float m[2] = {-wk_inf_f32(), -wk_inf_f32()}, l[2] = {0.f, 0.f};
    float o[2 * ND][4];
#pragma unroll
    for (int i = 0; i < 2 * ND; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;

    /* every warp runs the same number of rounds (the two 32-lane groups of a 64-lane wave must
     * meet at every shuffle): a tile past the block's last holds no visible key (p = 0) */
    const int64_t ntile = je > js ? (je - js + 15) / 16 : 0;
    const int64_t rounds = (ntile + NWARP - 1) / NWARP;
    uint32_t kc[ND][2][4], vc[ND][2][4]; /* the next tile's chunks, loaded a round early */
    if (rounds > 0)
        am_tile<ND>(kc, vc, kb, vb, g, js + wid * 16, je, gr, tq);
    for (int64_t r = 0; r < rounds; r++) {
        const int64_t t0 = js + (wid + r * NWARP) * 16, j0 = t0 + gr, j1 = j0 + 8;
        uint32_t kw[ND][2][4], vw[ND][2][4];
#pragma unroll
        for (int i = 0; i < ND; i++)
#pragma unroll
            for (int x = 0; x < 2; x++)
#pragma unroll
                for (int y = 0; y < 4; y++) {
                    kw[i][x][y] = kc[i][x][y];
                    vw[i][x][y] = vc[i][x][y];
                }
        if (r + 1 < rounds)
            am_tile<ND>(kc, vc, kb, vb, g, t0 + 16 * NWARP, je, gr, tq);
        /* ---- S^T = K Q^T: s[0..1] = keys j0 x queries 2 tq, 2 tq + 1; s[2..3] = key j1 */
        float s[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int i = 0; i < ND; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t af[4] = {kw[i][0][2 * h], kw[i][1][2 * h], kw[i][0][2 * h + 1],
                                        kw[i][1][2 * h + 1]};
                const uint32_t bf[2] = {qf[i][2 * h], qf[i][2 * h + 1]};
                wk_mma_16816<BF>(s, af, bf);
            }
        /* ---- online softmax per query column */
        float p[4];
#pragma unroll
        for (int c = 0; c < 2; c++) {
            float x0 = j0 < je && j0 < lim[c] ? s[c] * sl2 : -wk_inf_f32();
            float x1 = j1 < je && j1 < lim[c] ? s[2 + c] * sl2 : -wk_inf_f32();
            float mx = x0 > x1 ? x0 : x1;
#pragma unroll
            for (int off = 4; off < 32; off <<= 1) {
                const float y = WK_SHFL_XOR(mx, off);
                mx = y > mx ? y : mx;
            }
            const float mn = mx > m[c] ? mx : m[c];
            const float cr = mn == -wk_inf_f32() ? 1.f : fl_exp2(m[c] - mn);
            p[c] = x0 == -wk_inf_f32() ? 0.f : fl_exp2(x0 - mn);
            p[2 + c] = x1 == -wk_inf_f32() ? 0.f : fl_exp2(x1 - mn);
            l[c] = l[c] * cr + p[c] + p[2 + c];
            m[c] = mn;
#pragma unroll
            for (int r = 0; r < 2 * ND; r++) {
                o[r][c] *= cr;
                o[r][2 + c] *= cr;
            }
        }
        /* ---- O^T += V^T P^T */
        const uint32_t pb[2] = {wk_movm_t(fl_pack2<BF>(p[0], p[1])),
                                wk_movm_t(fl_pack2<BF>(p[2], p[3]))};
#pragma unroll
        for (int i = 0; i < ND; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t af[4] = {wk_movm_t(vw[i][0][2 * h]), wk_movm_t(vw[i][0][2 * h + 1]),
                                        wk_movm_t(vw[i][1][2 * h]),
                                        wk_movm_t(vw[i][1][2 * h + 1])};
                wk_mma_16816<BF>(o[2 * i + h], af, pb);
            }
    }

    /* ---- the warp's (m, l, O) to shared memory: l summed over the column's 8 lanes */
#pragma unroll
    for (int c = 0; c < 2; c++) {
#pragma unroll
        for (int off = 4; off < 32; off <<= 1)
            l[c] += WK_SHFL_XOR(l[c], off);
        if (gr == 0) {
            wml[wid][2 * tq + c][0] = m[c];
            wml[wid][2 * tq + c][1] = l[c];
        }
#pragma unroll
        for (int i = 0; i < ND; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int d0 = 32 * i + 8 * (gr >> 1) + 4 * h + (gr & 1);
                wacc[wid][2 * tq + c][d0] = o[2 * i + h][c];
                wacc[wid][2 * tq + c][d0 + 2] = o[2 * i + h][2 + c];
            }
    }
    __syncthreads();
    /* ---- the block's warps merged per query: each warp's weight 2^(m_w - M) once per query
     * (warps that saw no visible key left out), then the partials stored */
    if (t < AM_QB) {
        float mx = -wk_inf_f32();
        for (int w = 0; w < NWARP; w++)
            mx = wml[w][t][0] > mx ? wml[w][t][0] : mx;
        float sl = 0.f;
        for (int w = 0; w < NWARP; w++) {
            if (wml[w][t][0] != -wk_inf_f32()) {
                const float f = fl_exp2(wml[w][t][0] - mx);
                wf[w][t] = f;
                sl += f * wml[w][t][1];
            }
        }
        bm[t] = mx;
        bl[t] = sl;
    }
    __syncthreads();
    const int64_t pbase = (bh * g.nsplit + split) * g.nq;
    for (int idx = t; idx < AM_QB * D; idx += WK_BLOCK) {
        const int qi = idx / D, e = idx - qi * D;
        const int64_t gq = gq0 + qi;
        if (gq >= g.nq)
            continue;
        float sum = 0.f;
        for (int w = 0; w < NWARP; w++)
            if (wml[w][qi][0] != -wk_inf_f32()) /* (its accumulators may hold 0 x NaN) */
                sum += wf[w][qi] * wacc[w][qi][e];
        po[(pbase + gq) * g.d + e] = sum;
        if (e == 0) {
            pm[pbase + gq] = bm[qi] == -wk_inf_f32() ? bm[qi] : bm[qi] / 1.4426950408889634f;
            pl[pbase + gq] = bl[qi];
        }
    }
    if (ctr) /* else attn_combine merges the splits */
        attn_fused_merge<BF ? WK_DT_BF16 : WK_DT_F16, AM_QB>(po, pm, pl, g, bh, gq0, out, ctr,
                                                              &last);
}

#define ATTN_MMA(NAME, BF, ND)                                                                  \
    WK_KERNEL attn_mma_##NAME##_##ND(const void *q, const void *k, const void *v, float *po,   \
                                     float *pm, float *pl, attn_geom g, float scale,            \
                                     const uint32_t *lens, uint32_t *word, void *out,           \
                                     uint32_t *ctr)                                             \
    {                                                                                           \
        attn_mma<BF, ND>((const uint16_t *)q, (const uint16_t *)k, (const uint16_t *)v, po, pm, \
                         pl, g, scale, lens, word, (uint16_t *)out, ctr);                       \
    }
#endif /* !WK_HIP */

/* Register budgets: the block of 1 query is compiled to fit 2 blocks per multiprocessor on
 * NVIDIA (128 registers: 16 warps streaming); those of 4 and 8 keep their registers (one block
 * of 8 warps, no spills), and the 4-query one double-buffers the K row (KPF: the next ATTN_KB
 * chunks loaded before the current ones are used; the register-capped 4-query kernel it replaced
 * spilled and was slower at every length on the H200: docs/performance.md, "Decode
 * attention"). */
#define ATTN_PART(QN, QD, KN, KD, QB, KPF, SUF, KERNEL)                                         \
    KERNEL attn_part_##QN##_##KN##_##SUF(const void *q, const void *k, const void *v, float *po, \
                                         float *pm, float *pl, attn_geom g, float scale,        \
                                         const uint32_t *lens, uint32_t *word, void *out,       \
                                         uint32_t *ctr)                                         \
    {                                                                                           \
        attn_part<QD, KD, QB, KPF>((const wk_t<QD>::S *)q, (const wk_t<KD>::S *)k,              \
                                   (const wk_t<KD>::S *)v, po, pm, pl, g, scale, lens, word,    \
                                   (wk_t<QD>::S *)out, ctr);                                    \
    }
#define ATTN_QB(QN, QD, KN, KD)                                                                 \
    ATTN_PART(QN, QD, KN, KD, 1, false, 1, WK_KERNEL_MINB(2))                                   \
    ATTN_PART(QN, QD, KN, KD, 4, true, 4, WK_KERNEL)                                            \
    ATTN_PART(QN, QD, KN, KD, 8, false, 8, WK_KERNEL)
#define ATTN_KV(QN, QD)                                                                         \
    ATTN_QB(QN, QD, f32, WK_DT_F32) ATTN_QB(QN, QD, f16, WK_DT_F16)                             \
    ATTN_QB(QN, QD, bf16, WK_DT_BF16)                                                           \
    WK_KERNEL attn_combine_##QN(const float *po, const float *pm, const float *pl, void *out,   \
                                attn_geom g)                                                    \
    {                                                                                           \
        attn_combine<QD>(po, pm, pl, (wk_t<QD>::S *)out, g);                                    \
    }
#endif /* WK_ATTN_H */
