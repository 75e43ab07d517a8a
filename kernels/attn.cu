/* attn.cu: decode attention (wk_decode_attention), module "attn"; host side src/gpu/gpu_attn.c.
 * Split over the sequence ("flash decoding") in two kernels:
 *
 *   attn_part_<qd>_<kvd>_<QB>(q, k, v, po, pm, pl, g, scale)
 *       grid (nsplit, B * Hkv, ceil(nq / QB)), nq = (Hq / Hkv) * Lq: the queries that read one kv
 *       head (all query heads of its group, all query tokens), QB of them per block, so every K
 *       and V row a block loads serves QB queries. Block (split s, kv head (b, hk), query set z)
 *       walks keys [s * span, min((s + 1) * span, Lk)) in chunks of 256:
 *         scores: thread t takes key j0 + t, its row of K in 16-byte loads, against the QB
 *           queries in shared memory (pre-multiplied by scale); masked keys (past the split or
 *           the causal limit Lk - Lq + i of query token i) score -inf;
 *         online softmax: the chunk's maximum and sum per query by xor shuffles inside aligned
 *           32-lane groups (the same on waves of 32 and 64) and shared memory; the running sum
 *           and the accumulators are rescaled by exp(m_old - m_new);
 *         values: thread (dg, kl) accumulates VE = 16 / sizeof(kv) consecutive dims dg of the
 *           keys kl, kl + KL, .. (16-byte loads of V), weights from shared memory.
 *       Then the accumulators are summed over the KL key lanes (shared memory) and the split's
 *       partial result stored: po[(bh, s, gq, e)] = sum_j p_j v_j[e] (not normalised),
 *       pm[(bh, s, gq)] = its maximum score, pl = sum_j p_j with p_j = exp(score_j - pm).
 *   attn_combine_<qd>(po, pm, pl, out, g)
 *       one thread per output element: M = max_s pm, out = sum_s e^(pm_s - M) po_s /
 *       sum_s e^(pm_s - M) pl_s, rounded once to qd (splits that saw no visible key have pm = -inf
 *       and weigh 0).
 * A NaN score makes its p NaN, so the row's output is NaN (as on the CPU). All arithmetic f32.
 * Unaligned K/V (g.vec = 0: a row not 16-byte aligned, or D not a multiple of VE) take the same
 * path with element loads. */
#include "gpu.h"

/* All int64 so that the host mirror (gpu_attn.c) has no padding. */
struct attn_geom {
    int64_t nb, hq, hkv, lq, lk, d;
    int64_t qs[3], ks[3], vs[3]; /* strides of dims B, H, L (the last dim has stride 1) */
    int64_t nsplit, span;        /* splits and keys per split (a multiple of ATTN_CHUNK) */
    int64_t nq;                  /* queries per kv head: (hq / hkv) * lq */
    int64_t causal, vec;
    int64_t lstride; /* elements between entries of lens */
};

#define ATTN_CHUNK WK_BLOCK /* keys per step: one per thread */
#define ATTN_MAXD 256

/* VE elements of a K or V row from element e0 (zeros past d). */
template <int KD, int VE>
WK_DEV void attn_ldv(const typename wk_t<KD>::S *row, int e0, int d, bool vec, float *o)
{
    typedef typename wk_t<KD>::S S;
    if (vec) {
        wk_pack<S, VE> p;
        p.raw = *(const typename wk_raw<16>::T *)(row + e0);
#pragma unroll
        for (int u = 0; u < VE; u++)
            o[u] = wk_t<KD>::ld(p.v[u]);
    } else {
#pragma unroll
        for (int u = 0; u < VE; u++)
            o[u] = e0 + u < d ? wk_t<KD>::ld(row[e0 + u]) : 0.0f;
    }
}

/* Block-wide maximum (MAX) or sum of each of the QB values, the result in every thread. */
template <int QB, bool MAX> WK_DEV void attn_reduce(float *v, float (*red)[QB])
{
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        float x = v[qi];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float y = WK_SHFL_XOR(x, o);
            x = MAX ? (y > x ? y : x) : x + y;
        }
        v[qi] = x;
    }
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int qi = 0; qi < QB; qi++)
            red[threadIdx.x / 32][qi] = v[qi];
    }
    __syncthreads();
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        float x = red[0][qi];
        for (int w = 1; w < WK_BLOCK / 32; w++) {
            const float y = red[w][qi];
            x = MAX ? (y > x ? y : x) : x + y;
        }
        v[qi] = x;
    }
    __syncthreads();
}

template <int QD, int KD, int QB>
WK_DEV void attn_part(const typename wk_t<QD>::S *__restrict__ q,
                      const typename wk_t<KD>::S *__restrict__ k,
                      const typename wk_t<KD>::S *__restrict__ v, float *__restrict__ po,
                      float *__restrict__ pm, float *__restrict__ pl, const attn_geom &g,
                      float scale, const uint32_t *__restrict__ lens, uint32_t *word)
{
    typedef typename wk_t<KD>::S KS;
    const int VE = 16 / (int)sizeof(KS);
    __shared__ float qs[QB][ATTN_MAXD];
    __shared__ float ps[QB][ATTN_CHUNK];
    __shared__ float red[WK_BLOCK / 32][QB];
    __shared__ float ored[WK_BLOCK * VE];

    const int t = (int)threadIdx.x, D = (int)g.d;
    const int64_t split = blockIdx.x, bh = blockIdx.y, b = bh / g.hkv, hk = bh - b * g.hkv;
    const int64_t gq0 = (int64_t)blockIdx.z * QB, grp = g.hq / g.hkv;
    const bool vec = g.vec != 0;

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
    /* this entry's key count: lens[b] (checked: outside [Lq, Lk] it is recorded once and the
     * block does no work) or Lk */
    int64_t nk = g.lk;
    if (lens) {
        nk = (int64_t)lens[b * g.lstride];
        if (nk < g.lq || nk > g.lk) {
            if (t == 0 && split == 0 && hk == 0 && blockIdx.z == 0)
                wk_kerr(word, WK_KERR_DECODE_ATTENTION, (uint64_t)nk);
            nk = 0;
        }
    }
    int64_t lim[QB]; /* keys j < lim[qi] are visible to query qi */
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        const int64_t gq = gq0 + qi;
        lim[qi] = gq >= g.nq || nk == 0 ? 0 : g.causal ? nk - g.lq + gq % g.lq + 1 : nk;
    }
    const int64_t js = split * g.span, je = js + g.span < nk ? js + g.span : nk;
    const int DG = (D + VE - 1) / VE, KL = WK_BLOCK / DG;
    const int dg = t % DG, kl = t / DG;
    const typename wk_t<KD>::S *kb = k + b * g.ks[0] + hk * g.ks[1];
    const typename wk_t<KD>::S *vb = v + b * g.vs[0] + hk * g.vs[1];

    float m[QB], l[QB], acc[QB][VE];
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        m[qi] = -wk_inf_f32();
        l[qi] = 0.0f;
#pragma unroll
        for (int u = 0; u < VE; u++)
            acc[qi][u] = 0.0f;
    }
    __syncthreads();

    for (int64_t j0 = js; j0 < je; j0 += ATTN_CHUNK) {
        const int64_t j = j0 + t;
        float s[QB];
#pragma unroll
        for (int qi = 0; qi < QB; qi++)
            s[qi] = 0.0f;
        if (j < je) {
            const KS *kr = kb + j * g.ks[2];
            for (int e0 = 0; e0 < D; e0 += VE) {
                float kv[VE];
                attn_ldv<KD, VE>(kr, e0, D, vec, kv);
#pragma unroll
                for (int qi = 0; qi < QB; qi++)
#pragma unroll
                    for (int u = 0; u < VE; u++)
                        s[qi] += qs[qi][e0 + u] * kv[u];
            }
        }
        float cm[QB];
#pragma unroll
        for (int qi = 0; qi < QB; qi++) {
            if (!(j < je && j < lim[qi]))
                s[qi] = -wk_inf_f32();
            cm[qi] = s[qi];
        }
        attn_reduce<QB, true>(cm, red);
        float c[QB], p[QB];
#pragma unroll
        for (int qi = 0; qi < QB; qi++) {
            const float mn = cm[qi] > m[qi] ? cm[qi] : m[qi];
            c[qi] = m[qi] == -wk_inf_f32() ? 0.0f : expf(m[qi] - mn);
            p[qi] = s[qi] == -wk_inf_f32() ? 0.0f : expf(s[qi] - mn);
            ps[qi][t] = p[qi];
            m[qi] = mn;
        }
        attn_reduce<QB, false>(p, red); /* its barriers also publish ps */
#pragma unroll
        for (int qi = 0; qi < QB; qi++) {
            l[qi] = l[qi] * c[qi] + p[qi];
#pragma unroll
            for (int u = 0; u < VE; u++)
                acc[qi][u] *= c[qi];
        }
        if (kl < KL) {
            for (int jj = kl; jj < ATTN_CHUNK && j0 + jj < je; jj += KL) {
                float vv[VE];
                attn_ldv<KD, VE>(vb + (j0 + jj) * g.vs[2], dg * VE, D, vec, vv);
#pragma unroll
                for (int qi = 0; qi < QB; qi++) {
                    const float w = ps[qi][jj];
#pragma unroll
                    for (int u = 0; u < VE; u++)
                        acc[qi][u] += w * vv[u];
                }
            }
        }
        __syncthreads(); /* ps is rewritten by the next chunk */
    }

    const int64_t pbase = (bh * g.nsplit + split) * g.nq;
#pragma unroll
    for (int qi = 0; qi < QB; qi++) {
        if (kl < KL) {
#pragma unroll
            for (int u = 0; u < VE; u++)
                ored[kl * DG * VE + dg * VE + u] = acc[qi][u];
        }
        __syncthreads();
        const int64_t gq = gq0 + qi;
        if (gq < g.nq) {
            for (int e = t; e < D; e += WK_BLOCK) {
                float sum = 0.0f;
                for (int r = 0; r < KL; r++)
                    sum += ored[r * DG * VE + e];
                po[(pbase + gq) * g.d + e] = sum;
            }
            if (t == 0) {
                pm[pbase + gq] = m[qi];
                pl[pbase + gq] = l[qi];
            }
        }
        __syncthreads();
    }
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
        const int64_t base = (b * g.hkv + hk) * g.nsplit * g.nq + gq;
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
        out[idx] = wk_t<QD>::st(num / den);
    }
}

#define ATTN_PART(QN, QD, KN, KD, QB)                                                           \
    WK_KERNEL attn_part_##QN##_##KN##_##QB(const void *q, const void *k, const void *v,         \
                                           float *po, float *pm, float *pl, attn_geom g,        \
                                           float scale, const uint32_t *lens, uint32_t *word)   \
    {                                                                                           \
        attn_part<QD, KD, QB>((const wk_t<QD>::S *)q, (const wk_t<KD>::S *)k,                   \
                              (const wk_t<KD>::S *)v, po, pm, pl, g, scale, lens, word);        \
    }
#define ATTN_QB(QN, QD, KN, KD)                                                                 \
    ATTN_PART(QN, QD, KN, KD, 1) ATTN_PART(QN, QD, KN, KD, 4) ATTN_PART(QN, QD, KN, KD, 8)
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
