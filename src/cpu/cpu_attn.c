/* cpu_attn.c: attention on the CPU (wk_decode_attention and wk_decode_attention_lens, for any
 * number of query tokens: decode and prefill; arguments checked by src/core/api_attn.c).
 *
 * Work items: (batch entry, kv head, a block of query positions), every query head of the kv
 * head's group at once, so each key and value row is read once for G * positions query rows.
 * Keys go in tiles of ATT_TILE (tile t holds keys [64 t, 64 t + 64), whatever the queries), never
 * past the last key some row of the item sees (causal rows see a prefix; with lens, rows L_b..
 * are never read). Per tile (the keys transposed once into KT, D x 64), for each row that sees
 * a key of the tile:
 *   s_k = scale * (fmaf chain over e = 0..D-1 of q_e k_ke, from +0)      (f32, per key)
 *   m' = max(m, the tile's visible s);  c = exp(m - m');  p_k = exp(s_k - m') (0 for a key the
 *   row does not see);  l = l * c + tree(p);  o_e = o_e * c, then o_e = fmaf(p_k, v_ke, o_e) for
 *   the visible k in order
 * (tree(p): the 64 weights summed as 16 lanes, ((p[0:16] + p[16:32]) + (p[32:48] + p[48:64])),
 * then t_l = v_l + v_{l+8}, u_l = t_l + t_{l+4}, (u_0 + u_2) + (u_1 + u_3)), with m = -inf, l = 0,
 * o = 0 at the start, and out = o / l rounded once to q's dtype; exp is the backend's vector exp
 * (cpu_vmath.h: a value's bits depend only on the value). So a query row's result depends only
 * on its own q and visible keys: the same bits for any thread count, any number of queries in
 * the call, and any item shape. A NaN score, or a row whose scores are all -inf, gives NaN. The
 * steps run on AVX-512 (cpu_attn_avx512.c) where the CPU has it, else in plain C (below, compiled
 * also for AVX2): the same operations, so the same bits (cpu_attn.h). Scratch per thread
 * through the storage cache. */
#include "cpu_attn.h"
#include "cpu_elem.h"
#include "cpu_vmath.h"
#include <math.h>
#include <string.h>

#define ATT_TILE 64  /* keys per tile */
#define ATT_ROWS 64  /* query rows per item (G heads x positions), at least G */
#define ATT_MAX_D 256

/* ---- loads */
static float ld(const void *p, int64_t i, wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_F16: return wk_cpu_ld_f16(((const uint16_t *)p)[i]);
    case WK_DTYPE_BF16: return wk_cpu_ld_bf16(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void st(void *p, int64_t i, wk_dtype dt, float v)
{
    switch (dt) {
    case WK_DTYPE_F16: ((uint16_t *)p)[i] = wk_cpu_st_f16(v); break;
    case WK_DTYPE_BF16: ((uint16_t *)p)[i] = wk_cpu_st_bf16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* ---- the two products in plain C (the definition; cpu_attn_avx512.c does the same) */

/* S[r][k] = fmaf chain over e of Q[r][e] KT[e][k], from +0 (r < R, k < ATT_TILE) */
WK_CPU_CLONES void wk_cpu_attn_scores_c(float *S, const float *Q, const float *KT, int R, int D)
{
    for (int r = 0; r < R; r++) {
        float *s = S + r * ATT_TILE;
        for (int k = 0; k < ATT_TILE; k++)
            s[k] = 0.0f;
        for (int e = 0; e < D; e++) {
            const float q = Q[r * D + e];
            const float *kt = KT + e * ATT_TILE;
            for (int k = 0; k < ATT_TILE; k++)
                s[k] = fmaf(q, kt[k], s[k]);
        }
    }
}

/* O[r][e] = fmaf(P[r][k], V_k[e], O[r][e]) for k = 0..nk[r]-1 in order (r < R, e < D) */
WK_CPU_CLONES void wk_cpu_attn_pv_c(float *O, const float *P, const float *const *V, const int *nk,
                                    int R, int D)
{
    for (int r = 0; r < R; r++) {
        float *o = O + r * D;
        for (int k = 0; k < nk[r]; k++) {
            const float p = P[r * ATT_TILE + k];
            const float *v = V[k];
            for (int e = 0; e < D; e++)
                o[e] = fmaf(p, v[e], o[e]);
        }
    }
}

/* The tile's softmax step for rows r < R (nk[r] visible keys of the tile): scores scaled, the
 * running maximum m updated, S[r][k] <- s_k - m' (-inf past nk[r]), dm[r] <- m - m' (0 for a row
 * with no key here: it keeps its state). */
void wk_cpu_attn_softmax_c(float *S, int R, const int *nk, float scale, float *m, float *dm)
{
    for (int r = 0; r < R; r++) {
        float *s = S + r * ATT_TILE, mt = m[r];
        for (int k = 0; k < nk[r]; k++) {
            s[k] *= scale;
            mt = s[k] > mt ? s[k] : mt;
        }
        dm[r] = nk[r] ? m[r] - mt : 0.0f;
        for (int k = 0; k < ATT_TILE; k++)
            s[k] = k < nk[r] ? s[k] - mt : -INFINITY;
        m[r] = mt;
    }
}

/* tree(p) of the header */
static float tree64(const float *p)
{
    float v[16], t[8], u[4];
    for (int l = 0; l < 16; l++)
        v[l] = (p[l] + p[16 + l]) + (p[32 + l] + p[48 + l]);
    for (int l = 0; l < 8; l++)
        t[l] = v[l] + v[l + 8];
    for (int l = 0; l < 4; l++)
        u[l] = t[l] + t[l + 4];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* l = l * c + tree(P row) and O row *= c, for the rows with a visible key in the tile */
WK_CPU_CLONES void wk_cpu_attn_rescale_c(float *O, float *l, const float *P, const float *c,
                                         const int *nk, int R, int D)
{
    for (int r = 0; r < R; r++) {
        if (!nk[r])
            continue;
        l[r] = l[r] * c[r] + tree64(P + r * ATT_TILE);
        for (int e = 0; e < D; e++)
            O[r * D + e] *= c[r];
    }
}

/* KT[e][k] = K row k, element e, as f32, for k < nt (rows 0..63 of the tile: row k at
 * K + k * stride elements of dt), zero for nt <= k < 64 */
void wk_cpu_attn_keys_c(float *KT, const void *K, int64_t stride, wk_dtype dt, int nt, int D)
{
    for (int k = 0; k < ATT_TILE; k++)
        for (int e = 0; e < D; e++)
            KT[e * ATT_TILE + k] = k < nt ? ld(K, k * stride + e, dt) : 0.0f;
}

static int use_avx512(void)
{
    return wk_cpu_attn_avx512_built && !strcmp(wk_vm_isa(), "avx512f");
}

/* The key count of batch entry b: lens[b] through ll, or Lk without lens. */
static int64_t attn_len(const wk_attn_args *a, int64_t b)
{
    if (!a->lens)
        return a->lk->dims[2];
    return (int64_t)((const uint32_t *)a->lens)[a->ll->offset + b * a->ll->strides[0]];
}

/* A thread's scratch (floats): Q (R x D), KT (D x 64), a converted V tile (64 x D), S (R x 64),
 * O (R x D), and m, l, c, dm (R each). */
static size_t scratch_floats(int64_t D)
{
    return (size_t)(2 * ATT_ROWS * D + 2 * ATT_TILE * D + ATT_ROWS * ATT_TILE + 4 * ATT_ROWS + 64);
}

/* One item: query positions [i0, i1) of batch entry b, kv head hk, every head of its group. */
static void item(const wk_attn_args *a, int64_t b, int64_t hk, int64_t i0, int64_t i1, float *w)
{
    const wk_layout *lq = a->lq, *lk = a->lk, *lv = a->lv;
    const int64_t nq = lq->dims[2], D = lq->dims[3];
    const int64_t G = lq->dims[1] / lk->dims[1], nk = attn_len(a, b);
    const int R = (int)(G * (i1 - i0)); /* row r: position i0 + r / G, head hk G + r % G */
    float *Q = w, *KT = Q + ATT_ROWS * D, *VT = KT + ATT_TILE * D, *S = VT + ATT_TILE * D;
    float *O = S + ATT_ROWS * ATT_TILE, *m = O + ATT_ROWS * D, *l = m + ATT_ROWS, *c = l + ATT_ROWS;
    float *dm = c + ATT_ROWS;
    int vis[ATT_ROWS], nkr[ATT_ROWS];
    int64_t maxvis = 0;
    for (int r = 0; r < R; r++) {
        const int64_t i = i0 + r / G, h = hk * G + r % G;
        const int64_t qo = lq->offset + b * lq->strides[0] + h * lq->strides[1] + i * lq->strides[2];
        for (int64_t e = 0; e < D; e++)
            Q[r * D + e] = ld(a->q, qo + e, a->qdt);
        vis[r] = (int)(a->causal ? nk - nq + i + 1 : nk);
        maxvis = vis[r] > maxvis ? vis[r] : maxvis;
        m[r] = -INFINITY, l[r] = 0.0f;
    }
    memset(O, 0, (size_t)(R * D) * sizeof *O);
    const int64_t kb = lk->offset + b * lk->strides[0] + hk * lk->strides[1];
    const int64_t vb = lv->offset + b * lv->strides[0] + hk * lv->strides[1];
    const int avx = use_avx512();
    const float *vrow[ATT_TILE];
    for (int64_t j0 = 0; j0 < maxvis; j0 += ATT_TILE) {
        const int nt = (int)(maxvis - j0 < ATT_TILE ? maxvis - j0 : ATT_TILE);
        /* the tile's keys transposed (unused columns zero), its values as f32 rows */
        const char *k0 = (const char *)a->k + (size_t)(kb + j0 * lk->strides[2]) * wk_dtype_size(a->kvdt);
        if (avx)
            wk_cpu_attn_keys_avx512(KT, k0, lk->strides[2], a->kvdt, nt, (int)D);
        else
            wk_cpu_attn_keys_c(KT, k0, lk->strides[2], a->kvdt, nt, (int)D);
        for (int k = 0; k < nt; k++) {
            const int64_t vo = vb + (j0 + k) * lv->strides[2];
            if (a->kvdt == WK_DTYPE_F32) {
                vrow[k] = (const float *)a->v + vo;
            } else {
                for (int64_t e = 0; e < D; e++)
                    VT[k * D + e] = ld(a->v, vo + e, a->kvdt);
                vrow[k] = VT + k * D;
            }
        }
        if (avx)
            wk_cpu_attn_scores_avx512(S, Q, KT, R, (int)D);
        else
            wk_cpu_attn_scores_c(S, Q, KT, R, (int)D);
        /* the running maximum, the weights' exponents, the rescale factors */
        for (int r = 0; r < R; r++) {
            const int64_t left = vis[r] - j0;
            nkr[r] = (int)(left <= 0 ? 0 : left < nt ? left : nt);
        }
        if (avx)
            wk_cpu_attn_softmax_avx512(S, R, nkr, a->scale, m, dm);
        else
            wk_cpu_attn_softmax_c(S, R, nkr, a->scale, m, dm);
        wk_vm_f32(WK_VM_EXP, S, S, (int64_t)R * ATT_TILE, 0.0f);
        wk_vm_f32(WK_VM_EXP, c, dm, R, 0.0f);
        if (avx)
            wk_cpu_attn_rescale_avx512(O, l, S, c, nkr, R, (int)D);
        else
            wk_cpu_attn_rescale_c(O, l, S, c, nkr, R, (int)D);
        if (avx)
            wk_cpu_attn_pv_avx512(O, S, vrow, nkr, R, (int)D);
        else
            wk_cpu_attn_pv_c(O, S, vrow, nkr, R, (int)D);
    }
    for (int r = 0; r < R; r++) {
        const int64_t i = i0 + r / G, h = hk * G + r % G;
        const int64_t o0 = ((b * lq->dims[1] + h) * nq + i) * D;
        for (int64_t e = 0; e < D; e++)
            st(a->out, o0 + e, a->qdt, O[r * D + e] / l[r]);
    }
}

wk_status wk_cpu_attention(wk_device *dev, const wk_attn_args *a)
{
    (void)dev;
    const wk_layout *lq = a->lq;
    const int64_t B = lq->dims[0], nq = lq->dims[2], D = lq->dims[3];
    const int64_t hkv = a->lk->dims[1], G = lq->dims[1] / hkv, lk = a->lk->dims[2];
    /* every count in [Lq, Lk] before anything is computed: no row past Lk is ever read */
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = attn_len(a, b);
        if (n < nq || n > lk)
            return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "decode_attention_lens: lens[%lld] = %lld "
                          "outside [Lq, Lk] = [%lld, %lld]", (long long)b, (long long)n,
                          (long long)nq, (long long)lk);
    }
    if (B * lq->dims[1] * nq == 0)
        return WK_OK;
    if (D > ATT_MAX_D || G > ATT_ROWS)
        return wk_err(WK_ERR_NOT_SUPPORTED, "decode_attention: D %lld or %lld query heads per kv "
                      "head past the CPU's %d / %d", (long long)D, (long long)G, ATT_MAX_D, ATT_ROWS);
    const int64_t pos = ATT_ROWS / G; /* query positions per item */
    const int64_t nqb = (nq + pos - 1) / pos, items = B * hkv * nqb;
    const int par = items > 1 && B * lq->dims[1] * nq * lk * D >= WK_CPU_PAR_THRESHOLD;
    const int nt = par ? omp_get_max_threads() : 1;
    const size_t per = scratch_floats(D);
    float *scratch = wk_host_alloc((size_t)nt * per * sizeof(float));
    if (!scratch)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "decode_attention: cannot allocate %d x %zu floats of "
                      "scratch", nt, per);
#pragma omp parallel num_threads(nt) if (par)
    {
        float *w = scratch + (size_t)omp_get_thread_num() * per;
        w = (float *)(((uintptr_t)w + 63) & ~(uintptr_t)63);
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++) {
            const int64_t qb = it % nqb, hk = it / nqb % hkv, b = it / nqb / hkv;
            const int64_t i0 = qb * pos, i1 = i0 + pos < nq ? i0 + pos : nq;
            item(a, b, hk, i0, i1, w);
        }
    }
    wk_host_free(scratch);
    return WK_OK;
}
