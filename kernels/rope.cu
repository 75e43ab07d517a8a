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
 *   rope_<dt>(x, cs, sn, out, npairs, G)   G: geometry, mirrored by rope_geom in gpu_rope.c. */
#include "gpu.h"

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
