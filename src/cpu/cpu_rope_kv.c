/* cpu_rope_kv.c: wk_rope_kv_append on the CPU (rules: docs/semantics.md, "Rope and the KV
 * cache"). Per row (b, h, t) of D elements, with p = p_b + t and for each pair i < D/2 (halves:
 * (i, i + D/2), interleaved: (2i, 2i + 1)), c = cos[p, i], s = sin[p, i]:
 *   q and k rows: (x0 c - x1 s, x0 s + x1 c), computed as wk_cpu_rope does (the dtype's compute
 *            type, no FMA, one rounding to the dtype; f32 tables are widened to that compute
 *            type, as the dtype's own are), then converted to the cache's dtype as
 *            wk_to_dtype converts (through double; f32 first for the reduced types): q's into
 *            out, k's into the cache;
 *   v rows:  converted the same way.
 * Every position is checked before anything is written. Rows run in parallel above
 * WK_CPU_PAR_THRESHOLD elements. */
#include "cpu_elem.h"
#include <stdlib.h>

/* Element i of a float dtype, as double (exact). */
static inline double rkv_ld(wk_dtype dt, const void *p, int64_t i)
{
    switch (dt) {
    case WK_DTYPE_BF16: return wk_cpu_ld_bf16(((const uint16_t *)p)[i]);
    case WK_DTYPE_F16: return wk_cpu_ld_f16(((const uint16_t *)p)[i]);
    case WK_DTYPE_F32: return ((const float *)p)[i];
    case WK_DTYPE_F64: return ((const double *)p)[i];
    default: return wk_cpu_ld_f8e4m3(((const uint8_t *)p)[i]);
    }
}

/* Element i of a float dtype from an exact double, as wk_to_dtype rounds it. */
static inline void rkv_st(wk_dtype dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case WK_DTYPE_BF16: ((uint16_t *)p)[i] = wk_cpu_st_bf16((float)v); break;
    case WK_DTYPE_F16: ((uint16_t *)p)[i] = wk_cpu_st_f16((float)v); break;
    case WK_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case WK_DTYPE_F64: ((double *)p)[i] = v; break;
    default: ((uint8_t *)p)[i] = wk_cpu_st_f8e4m3((float)v); break;
    }
}

typedef struct rkv_geom {
    const wk_rope_kv_args *a;
    int64_t hq, hkv, t, h2;
    const int64_t *p; /* p_b per entry */
} rkv_geom;

/* The rotated pair (i, i + o) of one row into y (two elements of T, rounded once). */
#define DEF_ROT(E, s, T, CT)                                                                    \
    static void rot_##s(const void *xv, const wk_layout *lx, int64_t b, int64_t h, int64_t t,    \
                        const rkv_geom *g, int64_t p, T *y)                                     \
    {                                                                                           \
        const wk_rope_kv_args *a = g->a;                                                        \
        const wk_layout *lc = a->lc, *ls = a->ls;                                               \
        const int cr = lc->rank;                                                                \
        const T *x = (const T *)xv + lx->offset + b * lx->strides[0] + h * lx->strides[1] +     \
                     t * lx->strides[2];                                                        \
        const int64_t co = lc->offset + p * lc->strides[cr - 2] +                               \
                           (cr == 3 ? b * lc->strides[0] : 0);                                  \
        const int64_t so = ls->offset + p * ls->strides[cr - 2] +                               \
                           (cr == 3 ? b * ls->strides[0] : 0);                                  \
        const int tf = a->tdt == WK_DTYPE_F32; /* f32 tables for any q */                      \
        const T *c = (const T *)a->cos + co, *sn = (const T *)a->sin + so;                      \
        const float *cf = (const float *)a->cos + co, *sf = (const float *)a->sin + so;         \
        const int64_t sx = lx->strides[3], h2 = g->h2;                                          \
        const int64_t step = a->interleaved ? 2 : 1, other = a->interleaved ? 1 : h2;           \
        for (int64_t i = 0; i < h2; i++) {                                                      \
            const int64_t q = i * step;                                                         \
            const CT x0 = wk_cpu_ld_##s(x[q * sx]), x1 = wk_cpu_ld_##s(x[(q + other) * sx]);    \
            const int64_t ci = i * lc->strides[cr - 1], si = i * ls->strides[cr - 1];           \
            const CT cc = tf ? (CT)cf[ci] : wk_cpu_ld_##s(c[ci]);                               \
            const CT ss = tf ? (CT)sf[si] : wk_cpu_ld_##s(sn[si]);                              \
            y[q] = wk_cpu_st_##s(x0 * cc - x1 * ss);                                            \
            y[q + other] = wk_cpu_st_##s(x0 * ss + x1 * cc);                                    \
        }                                                                                       \
    }
WK_CPU_FLOAT_TYPES(DEF_ROT)

/* Row r of the work: q rows first (B * Hq * T), then the cache rows (B * Hkv * T), each writing
 * its rotated k row and its v row. tmp: D elements of the widest dtype. */
static void rkv_row(const rkv_geom *g, int64_t r, double *tmp)
{
    const wk_rope_kv_args *a = g->a;
    const int64_t t = r % g->t, d = 2 * g->h2;
    const int64_t nq = a->lq->dims[0] * g->hq * g->t;
    const int is_q = r < nq;
    const int64_t rr = is_q ? r : r - nq, hn = is_q ? g->hq : g->hkv;
    const int64_t h = (rr / g->t) % hn, b = rr / g->t / hn, p = g->p[b] + t;
    const void *x = is_q ? a->q : a->k;
    const wk_layout *lx = is_q ? a->lq : a->lk;
    switch (a->dt) {
#define ROT_CASE(E, s, T, CT)                                                                   \
    case WK_DTYPE_##E: rot_##s(x, lx, b, h, t, g, p, (T *)tmp); break;
        WK_CPU_FLOAT_TYPES(ROT_CASE)
#undef ROT_CASE
    default: return;
    }
    if (is_q) {
        for (int64_t e = 0; e < d; e++)
            rkv_st(a->cdt, a->out, r * d + e, rkv_ld(a->dt, tmp, e));
        return;
    }
    const wk_layout *lkc = a->lkc, *lvc = a->lvc, *lv = a->lv;
    const int64_t ko = lkc->offset + b * lkc->strides[0] + h * lkc->strides[1] + p * lkc->strides[2];
    const int64_t vco = lvc->offset + b * lvc->strides[0] + h * lvc->strides[1] + p * lvc->strides[2];
    const int64_t vo = lv->offset + b * lv->strides[0] + h * lv->strides[1] + t * lv->strides[2];
    for (int64_t e = 0; e < d; e++) {
        rkv_st(a->cdt, a->kc, ko + e * lkc->strides[3], rkv_ld(a->dt, tmp, e));
        rkv_st(a->cdt, a->vc, vco + e * lvc->strides[3], rkv_ld(a->dt, a->v, vo + e * lv->strides[3]));
    }
}

wk_status wk_cpu_rope_kv(wk_device *dev, const wk_rope_kv_args *a)
{
    (void)dev;
    const int64_t nb = a->lq->dims[0], t = a->lq->dims[2], d = a->lq->dims[3];
    const int64_t np = a->lc->dims[a->lc->rank - 2], nl = a->lkc->dims[2];
    int64_t *p = malloc((size_t)(nb > 0 ? nb : 1) * sizeof *p);
    if (!p)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "rope_kv_append: %lld positions", (long long)nb);
    for (int64_t b = 0; b < nb; b++) {
        p[b] = a->pos ? (int64_t)((const uint32_t *)a->pos)[a->lp->offset + b * a->lp->strides[0]]
                      : a->start;
        const int64_t pb = p[b];
        if (pb + t > np || pb + t > nl) {
            free(p);
            return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "rope_kv_append: entry %lld: positions "
                          "%lld..%lld are outside the tables (%lld rows) or the cache (%lld rows)",
                          (long long)b, (long long)pb, (long long)(pb + t - 1), (long long)np,
                          (long long)nl);
        }
    }
    const rkv_geom g = {.a = a, .hq = a->lq->dims[1], .hkv = a->lk->dims[1], .t = t, .h2 = d / 2,
                        .p = p};
    const int64_t rows = nb * (g.hq + g.hkv) * t;
    const int par = rows > 1 && rows * d >= WK_CPU_PAR_THRESHOLD;
    const int nt = par ? omp_get_max_threads() : 1;
    double *tmp = malloc((size_t)nt * (size_t)(d > 0 ? d : 1) * sizeof *tmp); /* D per thread */
    if (!tmp) {
        free(p);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "rope_kv_append: row buffers of %lld elements",
                      (long long)d);
    }
#pragma omp parallel for schedule(static) if (par) num_threads(nt)
    for (int64_t r = 0; r < rows; r++)
        rkv_row(&g, r, tmp + (size_t)omp_get_thread_num() * (size_t)(d > 0 ? d : 1));
    free(tmp);
    free(p);
    return WK_OK;
}
