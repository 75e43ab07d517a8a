/* rope.cu: the rotary embeddings of candle-nn (rope, rope_i, rope_thd), module "rope".
 *
 * x is (B, d1, d2, D): (B, H, T, D) for rope and rope_i, (B, T, H, D) for rope_thd; cos and sin
 * are (Tc, D/2) or (B, Tc, D/2), read at row t < T (and batch b). One thread per rotated pair
 * (grid-stride): pair q = r * D/2 + i of output row r = (b, i1, i2), with c = cos[t, i],
 * s = sin[t, i], t = thd ? i1 : i2 and the pair (p, p + o) = halves: (i, i + D/2), interleaved:
 * (2i, 2i + 1):
 *     out[p] = x[p]*c - x[p+o]*s,   out[p+o] = x[p]*s + x[p+o]*c
 * bf16/f16/f8e4m3 compute in f32 and round once, f32 in f32, f64 in f64, no FMA (the build's
 * flags). Any layouts: every operand is read through its own strides (offsets folded into the
 * pointers by the host); out is contiguous.
 *   rope_<dt>(x, cs, sn, out, npairs, G)   G: geometry, mirrored by rope_geom in gpu_rope.c.
 *
 * wk_rope_kv_append (docs/semantics.md, "Rope and the KV cache"): q (B, Hq, T, D), k and v (B, Hkv,
 * T, D) of dt, the tables (P, D/2) or (B, P, D/2) of dt or f32 (G.tf32) read at position
 * p = p_b + t, the caches (B, Hkv, L, D) of cdt. One thread per pair (grid-stride), the q pairs
 * first: a pair rotates as rope_pair does, rounds to dt and converts to cdt as to_dtype does
 * (through double; f32 first for the reduced types): a q pair into out (contiguous, cdt), a k
 * pair into kc at row p, with the same two elements of v converted into vc. p_b = pos[b] (device
 * memory) or start; an entry whose rows run past the tables or the cache is recorded in the
 * error record (word, WK_KERR_ROPE_KV_APPEND, detail p_b) and none of its elements is written.
 *   rope_kv_<dt>_<cdt>(q, k, v, cs, sn, pos, word, out, kc, vc, npairs, G)   G: rkv_geom, mirrored
 *   in gpu_rope.c. */
#include "gpu.h"
#include "cast.h" /* wk_to: a value of dt (exact in double) into cdt, as to_dtype converts it */

/* All int64 so the host mirror has no padding. cb/sb: the batch stride of cos/sin (0 when the
 * table is shared by every batch). small != 0: pair indices and dims fit in 32 bits. */
struct rope_geom {
    int64_t d1, d2, h2;
    int64_t sx[4];
    int64_t cb, ct, ci;
    int64_t sb, st, si;
    int64_t interleaved, thd, small;
};

template <int DT, class I>
WK_DEV void rope_pair(const typename wk_t<DT>::S *x, const typename wk_t<DT>::S *cs,
                      const typename wk_t<DT>::S *sn, typename wk_t<DT>::S *out, int64_t q,
                      const rope_geom &g)
{
    typedef typename wk_t<DT>::C C;
    const I h2 = (I)g.h2, d1 = (I)g.d1, d2 = (I)g.d2;
    const I r = (I)q / h2, i = (I)q - r * h2;
    const I r1 = r / d2, i2 = r - r1 * d2;
    const I b = r1 / d1, i1 = r1 - b * d1;
    const int64_t t = g.thd ? (int64_t)i1 : (int64_t)i2;
    const int64_t p = g.interleaved ? 2 * (int64_t)i : (int64_t)i;
    const int64_t o = g.interleaved ? 1 : g.h2;
    const int64_t xo = (int64_t)b * g.sx[0] + (int64_t)i1 * g.sx[1] + (int64_t)i2 * g.sx[2];
    const C x0 = wk_t<DT>::ld(x[xo + p * g.sx[3]]);
    const C x1 = wk_t<DT>::ld(x[xo + (p + o) * g.sx[3]]);
    const C c = wk_t<DT>::ld(cs[(int64_t)b * g.cb + t * g.ct + (int64_t)i * g.ci]);
    const C s = wk_t<DT>::ld(sn[(int64_t)b * g.sb + t * g.st + (int64_t)i * g.si]);
    const int64_t ro = (int64_t)r * 2 * g.h2; /* the output row, D = 2 * h2 elements */
    out[ro + p] = wk_t<DT>::st(x0 * c - x1 * s);
    out[ro + p + o] = wk_t<DT>::st(x0 * s + x1 * c);
}

template <int DT>
WK_DEV void rope_run(const void *x, const void *cs, const void *sn, void *out, int64_t npairs,
                     const rope_geom &g)
{
    typedef typename wk_t<DT>::S S;
    const S *xs = (const S *)x, *cp = (const S *)cs, *sp = (const S *)sn;
    S *os = (S *)out;
    if (g.small) {
        for (int64_t q = wk_tid(); q < npairs; q += wk_nthreads())
            rope_pair<DT, uint32_t>(xs, cp, sp, os, q, g);
    } else {
        for (int64_t q = wk_tid(); q < npairs; q += wk_nthreads())
            rope_pair<DT, int64_t>(xs, cp, sp, os, q, g);
    }
}

#define WK_ROPE(dtn, DT)                                                                       \
    WK_KERNEL rope_##dtn(const void *x, const void *cs, const void *sn, void *out,             \
                         int64_t npairs, rope_geom g)                                          \
    {                                                                                          \
        WK_GRID_WAIT(); /* launched early (gpu_rope.c) */                                      \
        rope_run<DT>(x, cs, sn, out, npairs, g);                                               \
    }
WK_ROPE(bf16, WK_DT_BF16)
WK_ROPE(f16, WK_DT_F16)
WK_ROPE(f32, WK_DT_F32)
WK_ROPE(f64, WK_DT_F64)
WK_ROPE(f8e4m3, WK_DT_F8E4M3)

/* All int64 (no padding in the host mirror). Strides in elements; cb / sb: the tables' batch
 * stride (0 when shared); np, nl: the tables' and the cache's rows; ps: between entries of pos;
 * tf32: the tables are f32 (else dt), widened to dt's compute type as dt's own are. */
struct rkv_geom {
    int64_t hq, hkv, t, h2;
    int64_t sq[4], sk[4], sv[4], skc[4], svc[4];
    int64_t cb, cp, ci, sb, sp, si;
    int64_t np, nl, ps, start, interleaved, tf32;
};

template <int DT, int CDT>
WK_DEV void rkv_pair(const typename wk_t<DT>::S *q, const typename wk_t<DT>::S *k,
                     const typename wk_t<DT>::S *v, const void *cs, const void *sn,
                     const uint32_t *pos, uint32_t *word,
                     typename wk_t<CDT>::S *out, typename wk_t<CDT>::S *kc,
                     typename wk_t<CDT>::S *vc, int64_t e, int64_t nqp, const rkv_geom &g)
{
    typedef typename wk_t<DT>::C C;
    typedef typename wk_t<DT>::S S;
    const int is_q = e < nqp;
    const int64_t ee = is_q ? e : e - nqp, hn = is_q ? g.hq : g.hkv;
    const int64_t r = ee / g.h2, i = ee - r * g.h2;
    const int64_t t = r % g.t, bh = r / g.t, h = bh % hn, b = bh / hn;
    const int64_t pb = pos ? (int64_t)pos[b * g.ps] : g.start;
    if (pb + g.t > g.np || pb + g.t > g.nl) {
        if (t == 0 && i == 0 && h == 0)
            wk_kerr(word, WK_KERR_ROPE_KV_APPEND, (uint64_t)pb);
        return;
    }
    const int64_t p = pb + t;
    const int64_t i0 = g.interleaved ? 2 * i : i, i1 = g.interleaved ? i0 + 1 : i + g.h2;
    const int64_t *sx = is_q ? g.sq : g.sk;
    const S *x = (is_q ? q : k) + b * sx[0] + h * sx[1] + t * sx[2];
    const C x0 = wk_t<DT>::ld(x[i0 * sx[3]]), x1 = wk_t<DT>::ld(x[i1 * sx[3]]);
    const int64_t co = b * g.cb + p * g.cp + i * g.ci, so = b * g.sb + p * g.sp + i * g.si;
    const C c = g.tf32 ? (C)((const float *)cs)[co] : wk_t<DT>::ld(((const S *)cs)[co]);
    const C s = g.tf32 ? (C)((const float *)sn)[so] : wk_t<DT>::ld(((const S *)sn)[so]);
    const S y0 = wk_t<DT>::st(x0 * c - x1 * s), y1 = wk_t<DT>::st(x0 * s + x1 * c);
    if (is_q) {
        typename wk_t<CDT>::S *o = out + r * 2 * g.h2;
        o[i0] = wk_to<CDT>::from_d((double)wk_t<DT>::ld(y0));
        o[i1] = wk_to<CDT>::from_d((double)wk_t<DT>::ld(y1));
        return;
    }
    typename wk_t<CDT>::S *kr = kc + b * g.skc[0] + h * g.skc[1] + p * g.skc[2];
    typename wk_t<CDT>::S *vr = vc + b * g.svc[0] + h * g.svc[1] + p * g.svc[2];
    const S *vx = v + b * g.sv[0] + h * g.sv[1] + t * g.sv[2];
    kr[i0 * g.skc[3]] = wk_to<CDT>::from_d((double)wk_t<DT>::ld(y0));
    kr[i1 * g.skc[3]] = wk_to<CDT>::from_d((double)wk_t<DT>::ld(y1));
    vr[i0 * g.svc[3]] = wk_to<CDT>::from_d((double)wk_t<DT>::ld(vx[i0 * g.sv[3]]));
    vr[i1 * g.svc[3]] = wk_to<CDT>::from_d((double)wk_t<DT>::ld(vx[i1 * g.sv[3]]));
}

#define WK_ROPE_KV(dtn, DT, cdtn, CDT)                                                         \
    WK_KERNEL rope_kv_##dtn##_##cdtn(const void *q, const void *k, const void *v,             \
                                     const void *cs, const void *sn, const uint32_t *pos,      \
                                     uint32_t *word, void *out, void *kc, void *vc,            \
                                     int64_t npairs, int64_t nqp, rkv_geom g)                  \
    {                                                                                          \
        WK_GRID_WAIT(); /* launched early (gpu_rope.c) */                                      \
        WK_GRID_LAUNCH_DEPENDENTS(); /* the attention after it may start (it waits) */         \
        typedef wk_t<DT>::S S;                                                                 \
        typedef wk_t<CDT>::S CS;                                                               \
        for (int64_t e = wk_tid(); e < npairs; e += wk_nthreads())                             \
            rkv_pair<DT, CDT>((const S *)q, (const S *)k, (const S *)v, cs, sn, pos, word,     \
                              (CS *)out, (CS *)kc, (CS *)vc, e, nqp, g);                       \
    }
#define WK_ROPE_KV_ALL(dtn, DT)                                                                \
    WK_ROPE_KV(dtn, DT, bf16, WK_DT_BF16)                                                      \
    WK_ROPE_KV(dtn, DT, f16, WK_DT_F16)                                                        \
    WK_ROPE_KV(dtn, DT, f32, WK_DT_F32)                                                        \
    WK_ROPE_KV(dtn, DT, f64, WK_DT_F64)                                                        \
    WK_ROPE_KV(dtn, DT, f8e4m3, WK_DT_F8E4M3)
WK_ROPE_KV_ALL(bf16, WK_DT_BF16)
WK_ROPE_KV_ALL(f16, WK_DT_F16)
WK_ROPE_KV_ALL(f32, WK_DT_F32)
WK_ROPE_KV_ALL(f64, WK_DT_F64)
WK_ROPE_KV_ALL(f8e4m3, WK_DT_F8E4M3)
