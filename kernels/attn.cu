/* attn.cu: decode attention (wk_decode_attention, wk_decode_attention_lens), module "attn";
 * host side src/gpu/gpu_attn.c. Split over the sequence ("flash decoding"), each block streaming
 * its keys through shared memory, the splits merged by the last block of each kv head and query
 * set (or by a second kernel):
 *
 *   attn_part_<qd>_<kvd>_<QB>(q, k, v, po, pm, pl, g, scale, lens, word, out, ctr)
 *       grid (nsplit, B * Hkv, ceil(nq / QB)), nq = (Hq / Hkv) * Lq: the queries that read one kv
 *       head (all query heads of its group, all query tokens), QB of them per block, so every K
 *       and V row is read once for all of them. L_b keys of entry b (Lk, or its count) are cut
 *       into nsplit spans of whole tiles (computed on the device from L_b: with lens every
 *       block gets an equal share of the keys that exist); block (split s, kv head, query set)
 *       takes span s.
 *     Tiles: TK = g.tk keys, the rows of K and V held as C = ceil(D / VE) 16-byte chunks (VE
 *       elements each). Thread t owns key slot t / TPK of every tile (TPK = g.tpk = 256 / TK
 *       lanes per key, a power of two <= 32, so a key's lanes sit in one warp of 32 or 64) and
 *       chunks sub, sub + TPK (sub = t % TPK; at most NCH of them) of that key's K and V rows.
 *     Pipeline: g.nst (2..8) stages in dynamic shared memory (its size set by the host: 32 KiB,
 *       64 KiB where the GPU gives a block that much beside a second one), each the K and the
 *       V tile; the tiles are
 *       copied with wk_cp_async16 (cp.async on NVIDIA sm_80+, 16 bytes per thread and copy,
 *       consecutive threads on consecutive chunks: coalesced), nst - 1 tiles in flight while
 *       one is computed; keys past the span are zero-filled (and masked). Unaligned rows
 *       (g.vec = 0) are copied into the same stages by element loads.
 *     Per tile, per thread: the score of its key against the QB queries (its chunks dotted with
 *       q, staged once in shared memory as f32 and scaled, then summed over the key's TPK
 *       lanes by xor shuffles); an online softmax of the thread's own key sequence per query
 *       (running maximum m, sum l, accumulators of its V chunks, rescaled only when m grows, as
 *       the CPU reference does; masked keys are skipped, a score of -inf weighs 0, NaN
 *       propagates); then its V chunks weighted by p.
 *     After the last tile the key slots are merged (xor shuffles inside the warp, shared memory
 *       between warps: maximum, rescale, sum) and the block stores its partial result:
 *       po[(bh, s, gq, e)] = sum_j p_j v_j[e] (not normalised), pm[(bh, s, gq)] = its maximum
 *       score, pl = sum_j p_j with p_j = exp(score_j - pm). (Scores are kept in base 2: q is
 *       scaled by scale log2(e) and every exponential is exp2, one instruction on the GPUs.) A block with no visible key stores
 *       pm = -inf, pl = 0, po = 0.
 *     Fused merge (ctr != NULL: the device's completion counters, src/gpu/gpu_impl.h): each
 *       block then counts itself in ctr[bh, z] (after a __threadfence); the last of the nsplit
 *       blocks sets the counter back to 0 and merges every split of its queries into out
 *       (attn_merge_set), so one launch does the whole op.
 *   attn_combine_<qd>(po, pm, pl, out, g)   (ctr == NULL: WICK_ATTN_COMBINE=1, or more (kv head,
 *       query set) pairs than counters): grid (ceil(nq / g.qb), B * Hkv), attn_merge_set per
 *       block.
 *   attn_merge_set: per query, the warps compute M = max_s pm_s and the weights w_s =
 *       2^(pm_s - M) (0 for pm = -inf) in parallel over the splits (shared memory), then each
 *       output element is sum_s w_s po_s / sum_s w_s pl_s (32 loads in flight per thread),
 *       rounded once to qd.
 * Key counts: lens == NULL: every entry has Lk keys; else L_b = lens[b * lstride], read by every
 * block (the launch geometry covers Lk and does not depend on the counts: graph replay). A count
 * outside [Lq, Lk] is recorded once in the error record (word, code WK_KERR_DECODE_ATTENTION) and
 * the entry's blocks do no work (its output is undefined; 0 / 0 here).
 * All arithmetic f32; f16 and bf16 are widened exactly (below). Every warp operation is reached
 * by all lanes of the warp (loops uniform per warp); the shuffles use offsets below the warp
 * size, so waves of 32 and 64 lanes run the same code. */
#include "gpu.h"

/* All int64 so that the host mirror (gpu_attn.c) has no padding. */
struct attn_geom {
    int64_t nb, hq, hkv, lq, lk, d;
    int64_t qs[3], ks[3], vs[3]; /* strides of dims B, H, L (the last dim has stride 1) */
    int64_t nsplit;              /* splits of every entry's keys (<= ATTN_MAXSPLIT) */
    int64_t tk, tpk, nst;        /* keys per tile, lanes per key (tk * tpk = 256), stages */
    int64_t nq;                  /* queries per kv head: (hq / hkv) * lq */
    int64_t qb;                  /* queries per block (the part kernel's QB) */
    int64_t causal, vec;
    int64_t lstride; /* elements between entries of lens */
    int64_t diag;    /* benchmark diagnostics (attn_part), 0 */
};
#define ATTN_MAXD 256
#define ATTN_MAXSPLIT 256 /* the merge keeps QB x nsplit weights in shared memory */
#define ATTN_NW (WK_BLOCK / 32) /* warps per block, at most */

/* Widening to f32, exact for every value (f16 and bf16 are subsets of f32): bf16 by a shift;
 * f16 by the conversion instruction on NVIDIA (cvt.f32.f16) and AMD (a _Float16 cast), whose
 * results are the exact values, and by the integer code of fpconv.h elsewhere (the simt
 * device). NaN stays NaN (its payload bits may differ; no result depends on them). */
template <int KD> struct attn_cvt {
    WK_DEV float f(typename wk_t<KD>::S x) { return wk_t<KD>::ld(x); }
};
template <> struct attn_cvt<WK_DT_F16> {
    WK_DEV float f(uint16_t x)
    {
#if defined(__CUDA_ARCH__) && !defined(WK_HIP) && !defined(WK_SIMT)
        float r;
        asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x));
        return r;
#elif defined(WK_HIP) && (defined(__HIP_DEVICE_COMPILE__) || defined(__HIPCC_RTC__))
        return (float)__builtin_bit_cast(_Float16, x);
#else
        return wk_fp_f16_to_f32(x);
#endif
    }
};

/* The cp.async groups still allowed in flight: n (0..ATTN_MAXST - 2), a run-time value of the
 * block (uniform). */
#define ATTN_MAXST 8
WK_DEV void attn_wait(int n)
{
    switch (n) {
    case 0: wk_cp_async_wait<0>(); break;
    case 1: wk_cp_async_wait<1>(); break;
    case 2: wk_cp_async_wait<2>(); break;
    case 3: wk_cp_async_wait<3>(); break;
    case 4: wk_cp_async_wait<4>(); break;
    case 5: wk_cp_async_wait<5>(); break;
    default: wk_cp_async_wait<6>(); break;
    }
}

/* Copies tile keys [t0, t0 + tk) of K and V (rows past je zero) into stage st (K: tk * C chunks,
 * then V): chunk i = t + 256 r of each matrix is this thread's, key kl[r] = i / C (-1: none),
 * chunk cc[r] = i % C of its row (computed once per block). */
template <class S, int VE, int NCH>
WK_DEV void attn_load(wk_u32x4 *st, const S *kb, const S *vb, const attn_geom &g, int64_t t0,
                      int64_t je, int n, const int *kl, const int *cc, int t)
{
#pragma unroll
    for (int r = 0; r < NCH; r++) {
        const int i = t + r * WK_BLOCK;
        if (kl[r] >= 0) {
            const int64_t j = t0 + kl[r];
            const bool full = j < je;
            const int64_t jj = full ? j : 0;
            const int e0 = cc[r] * VE;
            if (g.vec) {
                wk_cp_async16(&st[i], kb + jj * g.ks[2] + e0, full);
                wk_cp_async16(&st[n + i], vb + jj * g.vs[2] + e0, full);
            } else {
                wk_pack<S, VE> a, b;
#pragma unroll
                for (int u = 0; u < VE; u++) {
                    const bool in = full && e0 + u < g.d;
                    a.v[u] = in ? kb[jj * g.ks[2] + e0 + u] : (S)0;
                    b.v[u] = in ? vb[jj * g.vs[2] + e0 + u] : (S)0;
                }
                st[i] = a.raw;
                st[n + i] = b.raw;
            }
        }
    }
}

/* The merge of the splits for the queries gq0 .. gq0 + qb - 1 of kv head bh into out (run by one
 * whole block): M = max_s pm_s, out = sum_s 2^(pm_s - M) po_s / sum_s 2^(pm_s - M) pl_s (splits
 * with pm = -inf weigh 0), rounded once. wts: shared memory for qb * (nsplit + 1) floats. The
 * partials are read through volatile pointers: in the fused merge they were written by other
 * blocks of the same kernel (made visible by __threadfence), never cached here before. */
template <int QD>
WK_DEV void attn_merge_set(const volatile float *po, const volatile float *pm,
                           const volatile float *pl, const attn_geom &g, int64_t bh, int64_t gq0,
                           int qb, float *wts, typename wk_t<QD>::S *__restrict__ out)
{
    const int t = (int)threadIdx.x, W = warpSize, lane = t % W, wid = t / W;
    const int NW = WK_BLOCK / W, ns = (int)g.nsplit, D = (int)g.d;
    const int nqb = (int)(g.nq - gq0 < qb ? g.nq - gq0 : qb);
    float *den = wts + qb * ns;
    for (int qi = wid; qi < nqb; qi += NW) { /* one warp per query */
        const int64_t base = bh * g.nsplit * g.nq + gq0 + qi;
        float mx = -wk_inf_f32();
        for (int s = lane; s < ns; s += W) {
            const float x = pm[base + s * g.nq];
            mx = x > mx ? x : mx;
        }
        for (int o = W / 2; o > 0; o >>= 1) {
            const float y = WK_SHFL_XOR(mx, o);
            mx = y > mx ? y : mx;
        }
        float dn = 0.0f;
        for (int s = lane; s < ns; s += W) {
            const float x = pm[base + s * g.nq];
            const float w = x == -wk_inf_f32() ? 0.0f : exp2f(x - mx);
            wts[qi * ns + s] = w;
            dn += w * pl[base + s * g.nq];
        }
        for (int o = W / 2; o > 0; o >>= 1)
            dn += WK_SHFL_XOR(dn, o);
        if (lane == 0)
            den[qi] = dn;
    }
    __syncthreads();
    const int64_t b = bh / g.hkv, hk = bh - b * g.hkv, grp = g.hq / g.hkv;
    const int64_t step = g.nq * g.d; /* between the splits of one element */
    const int n = nqb * D;
    /* two elements per thread and pass, 16 splits of each loaded before their use (32 loads in
     * flight: the pass over 33 splits is 3 round trips to L2) */
    for (int i0 = t; i0 < n; i0 += 2 * WK_BLOCK) {
        int qi[2];
        bool has[2];
        const volatile float *p[2];
        float num[2] = {0.0f, 0.0f};
#pragma unroll
        for (int h = 0; h < 2; h++) {
            has[h] = i0 + h * WK_BLOCK < n;
            const int idx = has[h] ? i0 + h * WK_BLOCK : i0;
            qi[h] = idx / D;
            p[h] = po + (bh * g.nsplit * g.nq + gq0) * g.d + idx; /* (s 0, query qi, e) */
        }
        for (int s0 = 0; s0 < ns; s0 += 16) {
            float x[2][16];
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int u = 0; u < 16; u++)
                    x[h][u] = has[h] && s0 + u < ns ? p[h][(s0 + u) * step] : 0.0f;
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int u = 0; u < 16; u++)
                    if (s0 + u < ns)
                        num[h] += wts[qi[h] * ns + s0 + u] * x[h][u];
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if (has[h]) {
                const int idx = i0 + h * WK_BLOCK;
                const int e = idx - qi[h] * D;
                const int64_t gq = gq0 + qi[h];
                const int64_t hh = hk * grp + gq / g.lq, i = gq % g.lq;
                out[((b * g.hq + hh) * g.lq + i) * g.d + e] = wk_t<QD>::st(num[h] / den[qi[h]]);
            }
        }
    }
}

template <int QD, int KD, int QB, int NCH>
WK_DEV void attn_part(const typename wk_t<QD>::S *__restrict__ q,
                      const typename wk_t<KD>::S *__restrict__ k,
                      const typename wk_t<KD>::S *__restrict__ v, float *__restrict__ po,
                      float *__restrict__ pm, float *__restrict__ pl, const attn_geom &g,
                      float scale, const uint32_t *__restrict__ lens, uint32_t *word,
                      typename wk_t<QD>::S *__restrict__ out, uint32_t *ctr)
{
    typedef typename wk_t<KD>::S KS;
    const int VE = 16 / (int)sizeof(KS); /* elements per 16-byte chunk */
    const int EPT = NCH * VE;            /* elements of a row per thread */
    /* dynamic shared memory (the launch's size, gpu_attn.c): the nst stages; after the loop
     * the warps' partial results (ATTN_NW x ATTN_MAXD floats) and the merge's weights
     * (QB x (ATTN_MAXSPLIT + 1) floats), which the host's size always covers */
    WK_SHARED_DYN(wk_u32x4, attn_dyn);
    wk_u32x4 *const kvbuf = attn_dyn;
    float *const red = (float *)attn_dyn, *const wts = (float *)attn_dyn;
    __shared__ float qs[QB][ATTN_MAXD] __attribute__((aligned(16)));
    __shared__ float wml[ATTN_NW][2];
    __shared__ int last;

    const int t = (int)threadIdx.x, W = warpSize, lane = t % W, wid = t / W;
    const int NW = WK_BLOCK / W, D = (int)g.d, C = (D + VE - 1) / VE;
    const int TK = (int)g.tk, TPK = (int)g.tpk, NST = (int)g.nst;
    const int jl = t / TPK, sub = t - jl * TPK; /* key slot, first chunk */
    const int64_t split = blockIdx.x, bh = blockIdx.y, b = bh / g.hkv, hk = bh - b * g.hkv;
    const int64_t gq0 = (int64_t)blockIdx.z * QB, grp = g.hq / g.hkv;

    /* this entry's key count: lens[b] (outside [Lq, Lk]: recorded once, no work) or Lk */
    int64_t nk = g.lk;
    if (lens) {
        nk = (int64_t)lens[b * g.lstride];
        if (nk < g.lq || nk > g.lk) {
            if (t == 0 && split == 0 && hk == 0 && blockIdx.z == 0)
                wk_kerr(word, WK_KERR_DECODE_ATTENTION, (uint64_t)nk);
            nk = 0;
        }
    }
    /* this block's keys: span s of nsplit equal spans of whole tiles over the nk keys */
    const int64_t span = ((nk + g.nsplit - 1) / g.nsplit + TK - 1) / TK * TK;
    const int64_t js = split * span < nk ? split * span : nk;
    const int64_t je = js + span < nk ? js + span : nk;
    const int ntile0 = (int)((je - js + TK - 1) / TK);
    int lim[QB]; /* keys js + r with r < lim[qi] are visible to query qi (r < je - js) */
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        const int64_t gq = gq0 + qi;
        int64_t x = gq >= g.nq || nk == 0 ? 0 : g.causal ? nk - g.lq + gq % g.lq + 1 : nk;
        x = x < je ? x - js : je - js;
        lim[qi] = x > 0 ? (int)x : 0;
    }
    const KS *kb = k + b * g.ks[0] + hk * g.ks[1];
    const KS *vb = v + b * g.vs[0] + hk * g.vs[1];
    const int stage = 2 * TK * C; /* chunks per stage */
    int lkl[NCH], lcc[NCH]; /* this thread's chunks of a tile (attn_load) */
#pragma unroll
    for (int r = 0; r < NCH; r++) {
        const int i = t + r * WK_BLOCK;
        lkl[r] = i < TK * C ? i / C : -1;
        lcc[r] = i < TK * C ? i - lkl[r] * C : 0;
    }
    /* benchmark diagnostics (g.diag, WICK_ATTN_DIAG; results then undefined): 1 no scores,
     * softmax or values (the pipeline alone), 2 no fused merge, 4 no tiles (prologue, epilogue
     * and merge alone), 8 no copies (the arithmetic on whatever the stages hold) */
    const int diag = (int)g.diag;
    const int ntile = diag & 4 ? 0 : ntile0;

    /* the first nst - 1 tiles in flight (one commit group per tile, empty ones too) */
    for (int i = 0; i < NST - 1; i++) {
        if (i < ntile && !(diag & 8))
            attn_load<KS, VE, NCH>(kvbuf + i * stage, kb, vb, g, js + (int64_t)i * TK, je,
                                   TK * C, lkl, lcc, t);
        wk_cp_async_commit();
    }
    /* q, scaled (by scale log2(e): scores in base 2, weights exp2(s - m), the same values as
     * e^(s' - m') of the unscaled scores), into shared memory while those are in flight (read
     * after the loop's first barrier) */
    const float scale2 = scale * 1.44269504088896341f;
    for (int i = t; i < QB * ATTN_MAXD; i += WK_BLOCK) {
        const int qi = i / ATTN_MAXD, e = i - qi * ATTN_MAXD;
        const int64_t gq = gq0 + qi;
        float x = 0.0f;
        if (gq < g.nq && e < D) {
            const int64_t h = hk * grp + gq / g.lq, ti = gq % g.lq;
            x = wk_t<QD>::ld(q[b * g.qs[0] + h * g.qs[1] + ti * g.qs[2] + e]) * scale2;
        }
        qs[qi][e] = x;
    }

    float m[QB], l[QB], acc[QB][EPT];
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        m[qi] = -wk_inf_f32();
        l[qi] = 0.0f;
#pragma unroll
        for (int u = 0; u < EPT; u++)
            acc[qi][u] = 0.0f;
    }

    for (int it = 0; it < ntile; it++) {
        attn_wait(NST - 2); /* this thread's copies of tile it have landed */
        __syncthreads();    /* everyone's (and qs, and the stage about to be refilled is free) */
        {
            const int nx = it + NST - 1;
            if (nx < ntile && !(diag & 8))
                attn_load<KS, VE, NCH>(kvbuf + (nx % NST) * stage, kb, vb, g,
                                       js + (int64_t)nx * TK, je, TK * C, lkl, lcc, t);
            wk_cp_async_commit();
        }
        if (diag & 1)
            continue;
        const wk_u32x4 *Ks = kvbuf + (it % NST) * stage, *Vs = Ks + TK * C;
        const int jr = it * TK + jl; /* key js + jr */
        /* ---- scores: this thread's chunks of key j against the QB queries, summed over the
         * key's TPK lanes */
        float s[QB];
#pragma unroll
        for (int qi = 0; qi < QB; qi++)
            s[qi] = 0.0f;
#pragma unroll
        for (int r = 0; r < NCH; r++) {
            const int c = sub + r * TPK;
            if (c < C) {
                wk_pack<KS, VE> kp;
                kp.raw = Ks[jl * C + c];
                float kf[VE];
#pragma unroll
                for (int e = 0; e < VE; e++)
                    kf[e] = attn_cvt<KD>::f(kp.v[e]);
#pragma unroll
                for (int qi = 0; qi < QB; qi++) {
#pragma unroll
                    for (int e4 = 0; e4 < VE; e4 += 4) {
                        wk_pack<float, 4> qv;
                        qv.raw = ((const wk_pack<float, 4> *)&qs[qi][c * VE + e4])->raw;
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            s[qi] = fmaf(qv.v[e], kf[e4 + e], s[qi]);
                    }
                }
            }
        }
        /* (the QB shuffles of a round are independent: issued together, one latency a round) */
        for (int o = TPK / 2; o > 0; o >>= 1) {
#pragma unroll
            for (int qi = 0; qi < QB; qi++)
                s[qi] += WK_SHFL_XOR(s[qi], o);
        }
        /* ---- online softmax of this thread's keys; p = 0 where the key is not visible. The
         * new maxima and the weights first (independent across queries), then the rare rescale
         * where a maximum grew (0 terms before the first visible key) */
        float p[QB], mn[QB];
        bool vis[QB];
#pragma unroll
        for (int qi = 0; qi < QB; qi++) {
            const float x = s[qi];
            vis[qi] = jr < lim[qi];
            mn[qi] = vis[qi] && x > m[qi] ? x : m[qi];
            p[qi] = !vis[qi] || x == -wk_inf_f32() ? 0.0f : exp2f(x - mn[qi]);
        }
#pragma unroll
        for (int qi = 0; qi < QB; qi++) {
            if (mn[qi] != m[qi]) {
                const float c = exp2f(m[qi] - mn[qi]);
                l[qi] *= c;
#pragma unroll
                for (int u = 0; u < EPT; u++)
                    acc[qi][u] *= c;
                m[qi] = mn[qi];
            }
            l[qi] += p[qi];
        }
        /* ---- values: this thread's chunks of row j, weighted */
#pragma unroll
        for (int r = 0; r < NCH; r++) {
            const int c = sub + r * TPK;
            if (c < C) {
                wk_pack<KS, VE> vp;
                vp.raw = Vs[jl * C + c];
                float vf[VE];
#pragma unroll
                for (int e = 0; e < VE; e++)
                    vf[e] = attn_cvt<KD>::f(vp.v[e]);
#pragma unroll
                for (int qi = 0; qi < QB; qi++)
                    if (vis[qi]) {
#pragma unroll
                        for (int e = 0; e < VE; e++)
                            acc[qi][r * VE + e] = fmaf(p[qi], vf[e], acc[qi][r * VE + e]);
                    }
            }
        }
    }
    wk_cp_async_wait<0>(); /* only empty groups can be left; nothing may land after the loop */

    /* ---- the key slots of each warp merged (lanes sub of slots jl and jl ^ o, o >= TPK) */
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        for (int o = TPK; o < W; o <<= 1) {
            const float mo = WK_SHFL_XOR(m[qi], o), lo = WK_SHFL_XOR(l[qi], o);
            const float mx = mo > m[qi] ? mo : m[qi];
            const float ca = m[qi] == -wk_inf_f32() ? 0.0f : exp2f(m[qi] - mx);
            const float cb = mo == -wk_inf_f32() ? 0.0f : exp2f(mo - mx);
            l[qi] = l[qi] * ca + lo * cb;
#pragma unroll
            for (int u = 0; u < EPT; u++) {
                const float ao = WK_SHFL_XOR(acc[qi][u], o);
                acc[qi][u] = acc[qi][u] * ca + ao * cb;
            }
            m[qi] = mx;
        }
    }
    __syncthreads(); /* the stages are free: red */
    /* ---- the block's warps merged per query, the partial result stored */
    const int64_t pbase = (bh * g.nsplit + split) * g.nq;
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        if (lane < TPK) {
#pragma unroll
            for (int r = 0; r < NCH; r++)
#pragma unroll
                for (int e = 0; e < VE; e++) {
                    const int el = (lane + r * TPK) * VE + e;
                    if (el < D)
                        red[wid * ATTN_MAXD + el] = acc[qi][r * VE + e];
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
            for (int w = 0; w < NW; w++)
                mx = wml[w][0] > mx ? wml[w][0] : mx;
            for (int e = t; e < D; e += WK_BLOCK) {
                float sum = 0.0f;
                for (int w = 0; w < NW; w++)
                    if (wml[w][0] != -wk_inf_f32())
                        sum += exp2f(wml[w][0] - mx) * red[w * ATTN_MAXD + e];
                po[(pbase + gq) * g.d + e] = sum;
            }
            if (t == 0) {
                float sl = 0.0f;
                for (int w = 0; w < NW; w++)
                    if (wml[w][0] != -wk_inf_f32())
                        sl += exp2f(wml[w][0] - mx) * wml[w][1];
                pm[pbase + gq] = mx;
                pl[pbase + gq] = sl;
            }
        }
        __syncthreads();
    }
    if (!ctr)
        return; /* attn_combine merges the splits */
    /* ---- fused merge: the last block of this (kv head, query set) to store its partial
     * merges all the splits (the counter goes back to 0 for the next kernel) */
    __threadfence();
    __syncthreads();
    if (t == 0) {
        uint32_t *c = &ctr[bh * gridDim.z + blockIdx.z];
        last = atomicAdd(c, 1u) == (uint32_t)(g.nsplit - 1);
        if (last)
            *c = 0u; /* every block of the set has arrived */
    }
    __syncthreads();
    if (!last || (diag & 2))
        return;
    __threadfence();
    attn_merge_set<QD>(po, pm, pl, g, bh, gq0, QB, wts, out);
}

template <int QD>
WK_DEV void attn_combine(const float *__restrict__ po, const float *__restrict__ pm,
                         const float *__restrict__ pl, typename wk_t<QD>::S *__restrict__ out,
                         const attn_geom &g)
{
    __shared__ float wts[8 * (ATTN_MAXSPLIT + 1)];
    attn_merge_set<QD>(po, pm, pl, g, blockIdx.y, (int64_t)blockIdx.x * g.qb, (int)g.qb, wts,
                       out);
}

/* Instances: 1, 4 and 8 queries per block; the first two with up to two chunks of a row per
 * thread and matrix (NCH 2: tiles of up to 512 chunks, 16 KiB a stage for K and V), the last
 * with one (its accumulators are 8 per query, f16: 64 registers). All ask for 2 blocks per
 * multiprocessor on NVIDIA (128 registers). */
#define ATTN_PART(QN, QD, KN, KD, QB, NCH)                                                      \
    WK_KERNEL_MINB(2) attn_part_##QN##_##KN##_##QB(const void *q, const void *k, const void *v,  \
                                                   float *po, float *pm, float *pl, attn_geom g, \
                                                   float scale, const uint32_t *lens,           \
                                                   uint32_t *word, void *out, uint32_t *ctr)    \
    {                                                                                           \
        attn_part<QD, KD, QB, NCH>((const wk_t<QD>::S *)q, (const wk_t<KD>::S *)k,              \
                                   (const wk_t<KD>::S *)v, po, pm, pl, g, scale, lens, word,    \
                                   (wk_t<QD>::S *)out, ctr);                                    \
    }
#define ATTN_QB(QN, QD, KN, KD)                                                                 \
    ATTN_PART(QN, QD, KN, KD, 1, 2)                                                             \
    ATTN_PART(QN, QD, KN, KD, 4, 2)                                                             \
    ATTN_PART(QN, QD, KN, KD, 8, 1)
#define ATTN_KV(QN, QD)                                                                         \
    ATTN_QB(QN, QD, f32, WK_DT_F32) ATTN_QB(QN, QD, f16, WK_DT_F16)                             \
    ATTN_QB(QN, QD, bf16, WK_DT_BF16)                                                           \
    WK_KERNEL attn_combine_##QN(const float *po, const float *pm, const float *pl, void *out,   \
                                attn_geom g)                                                    \
    {                                                                                           \
        attn_combine<QD>(po, pm, pl, (wk_t<QD>::S *)out, g);                                    \
    }
ATTN_KV(f32, WK_DT_F32)
ATTN_KV(f16, WK_DT_F16)
ATTN_KV(bf16, WK_DT_BF16)
