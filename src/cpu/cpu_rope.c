/* cpu_rope.c: the CPU rotary embeddings of candle-nn, float dtypes, any layouts.
 *   rope (halves), x (B, H, T, D):   for i < D/2, with c = cos[t, i], s = sin[t, i]:
 *       out[i] = x[i]*c - x[i + D/2]*s,   out[i + D/2] = x[i]*s + x[i + D/2]*c
 *   rope_i (interleaved pairs), x (B, H, T, D):
 *       out[2i] = x[2i]*c - x[2i+1]*s,    out[2i+1] = x[2i]*s + x[2i+1]*c
 *   rope_thd: as rope with x (B, T, H, D).
 * cos and sin are (Tc >= T, D/2) or (B, Tc >= T, D/2), the same dims (checked by the front end);
 * row t < T of batch b is used. bf16/f16/f8e4m3 compute in f32 and round once, f32 in f32, f64
 * in f64, no FMA. Every (b, h, t) row of D elements is one task; rows run in parallel above
 * WK_CPU_PAR_THRESHOLD elements. */
#include "cpu_elem.h"

typedef struct rope_geom {
    int interleaved;
    int thd;             /* x is (B, T, H, D) */
    int64_t d1, d2, d;   /* x's dims 1, 2, 3 */
    const wk_layout *lx, *lc, *ls;
} rope_geom;

/* The row loop: parallel above WK_CPU_PAR_THRESHOLD elements (rows and d in scope). */
#define ROPE_PAR_ROWS \
    _Pragma("omp parallel for schedule(static) if (rows > 1 && rows * d >= WK_CPU_PAR_THRESHOLD)")

#define DEF_ROPE(E, s, T, CT)                                                                  \
    static void rope_##s(void *out, const void *xv, const void *cv, const void *sv,             \
                         const rope_geom *g, int64_t rows)                                      \
    {                                                                                           \
        const wk_layout *lx = g->lx, *lc = g->lc, *ls = g->ls;                                  \
        const int64_t d = g->d, h2 = d / 2;                                                     \
        const int64_t sx = lx->strides[3];                                                      \
        const int cr = lc->rank; /* 2 or 3 */                                                   \
        const int64_t cj = lc->strides[cr - 1], sj = ls->strides[cr - 1];                       \
        ROPE_PAR_ROWS                                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            const int64_t i2 = r % g->d2, i1 = (r / g->d2) % g->d1, b = r / g->d2 / g->d1;      \
            const int64_t t = g->thd ? i1 : i2;                                                 \
            const T *x = (const T *)xv + lx->offset + b * lx->strides[0] +                      \
                         i1 * lx->strides[1] + i2 * lx->strides[2];                             \
            const T *c = (const T *)cv + lc->offset + t * lc->strides[cr - 2] +                 \
                         (cr == 3 ? b * lc->strides[0] : 0);                                    \
            const T *sn = (const T *)sv + ls->offset + t * ls->strides[cr - 2] +                \
                          (cr == 3 ? b * ls->strides[0] : 0);                                   \
            T *o = (T *)out + r * d;                                                            \
            /* halves: the pair (i, i + D/2); interleaved: (2i, 2i + 1) */                      \
            const int64_t step = g->interleaved ? 2 : 1, other = g->interleaved ? 1 : h2;       \
            for (int64_t i = 0; i < h2; i++) {                                                  \
                const int64_t p = i * step;                                                     \
                const CT x0 = wk_cpu_ld_##s(x[p * sx]), x1 = wk_cpu_ld_##s(x[(p + other) * sx]); \
                const CT cc = wk_cpu_ld_##s(c[i * cj]), ss = wk_cpu_ld_##s(sn[i * sj]);         \
                o[p] = wk_cpu_st_##s(x0 * cc - x1 * ss);                                        \
                o[p + other] = wk_cpu_st_##s(x0 * ss + x1 * cc);                                \
            }                                                                                   \
        }                                                                                       \
    }
WK_CPU_FLOAT_TYPES(DEF_ROPE)

typedef void (*rope_fn)(void *out, const void *x, const void *c, const void *s,
                        const rope_geom *g, int64_t rows);
#define ROPE_ENTRY(E, s, T, CT) [WK_DTYPE_##E] = rope_##s,
static const rope_fn rope_fns[WK_DTYPE_COUNT] = {WK_CPU_FLOAT_TYPES(ROPE_ENTRY)};

/* out (contiguous, dims of lx) = the rotary embedding op of x; shapes checked by the front end
 * (x rank 4, D even, cos/sin rank 2 or 3 with equal dims). */
wk_status wk_cpu_rope(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *cos, const wk_layout *lc, const void *sin,
                      const wk_layout *ls)
{
    (void)dev;
    if (!wk_dtype_valid(dt) || !rope_fns[dt] || lx->rank != 4 || lc->rank < 2 || lc->rank > 3 ||
        ls->rank != lc->rank || (op != WK_OP_ROPE && op != WK_OP_ROPE_I && op != WK_OP_ROPE_THD))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "cpu rope: bad call (%s, %s)", wk_op_name(op),
                      wk_dtype_name(dt));
    const rope_geom g = {.interleaved = op == WK_OP_ROPE_I, .thd = op == WK_OP_ROPE_THD,
                         .d1 = lx->dims[1], .d2 = lx->dims[2], .d = lx->dims[3],
                         .lx = lx, .lc = lc, .ls = ls};
    const int64_t n = wk_layout_elem_count(lx);
    if (n > 0)
        rope_fns[dt](out, x, cos, sin, &g, n / g.d);
    return WK_OK;
}
