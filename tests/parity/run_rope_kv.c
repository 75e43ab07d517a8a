/* run_rope_kv.c: runner of the "rope_kv_append" (halves, as wk_rope) and "rope_kv_append_i"
 * (interleaved pairs, as wk_rope_i) rows: wk_rope_kv_append against ref_rope_kv_append. The row's
 * dtype is q's (and k's, v's); the caches are q's dtype in even families and f16
 * (f32 when q is f16) in odd ones, and out has the caches' dtype.
 * Each family runs two cases: tables (P, D/2) and (B, P, D/2), positions from the host (start) in
 * one and from device memory (a u32 pos, a different position per batch entry) in the other,
 * swapped between even and odd families. Families: contig (q, k, v separate contiguous tensors),
 * strided (q, k, v column views of one (B, T, (Hq + 2 Hkv) D) buffer, the stacked-projection
 * layout; the caches views of a padded larger cache), transposed (q stored with its dims reversed,
 * k and v as (B, T, H, D), kc as (B, L, Hkv, D), vc contiguous, the tables stored transposed),
 * broadcast (q, k, v with batch stride 0; batched tables with batch stride 0), offset (storage
 * offsets everywhere, a pos of stride 2; a third case with start past the cache:
 * WK_ERR_INDEX_OUT_OF_RANGE, nothing written), empty (T = 0, at position L: valid), large (a decode
 * step: Hq 32, Hkv 8, D 128, T 1, stacked), large_t (a prefill: B 2, Hq 8, Hkv 2, D 128, T 64,
 * stacked: the CPU's multi-threaded path, a position per entry); the rank families
 * are shapes this op rejects (WK_ERR_SHAPE, checked): q of that rank, then the caches of that
 * rank (rank4: an odd head size, then batched tables of the wrong batch).
 * The tables are f32 (for any q dtype) in the strided, offset and large_t families (the example's
 * prefill: 16-bit projections rotated by its f32 tables), q's dtype elsewhere.
 * Values: q, k, v in [-4, 4], cos and sin in [-1, 1], the caches' old rows in [-2, 2].
 * Checks: the status; out under PT_TRANSC; after the call the whole caches: the T written rows of
 * each entry against the reference (kc under PT_TRANSC, vc exact: a conversion), every other
 * element bit for bit unchanged; every input unchanged. The NMSE bound of out and kc is the
 * larger of q's and the cache's dtype's: the value is rounded to q's dtype, then converted. */
#include "parity_impl.h"
#include "ref.h"
#include "ref_rope_kv.h"
#include <stdlib.h>
#include <string.h>

/* Storage orders of a (B, H, T, D) tensor, outermost first. */
static const int ORD_BHTD[4] = {0, 1, 2, 3}, ORD_BTHD[4] = {0, 2, 1, 3}, ORD_REV[4] = {3, 2, 1, 0};

typedef struct rkv_geo {
    int64_t b, hq, hkv, t, d;       /* batch, query and kv heads, new tokens, head size */
    int64_t l, p;                   /* cache rows, table rows */
    int stacked;                    /* q, k, v column views of one (B, T, (Hq + 2 Hkv) D) buffer */
    const int *qord, *kord;         /* storage orders of q and of k, v (not stacked) */
    const int *kcord, *vcord;       /* of kc and vc */
    int64_t cpad;                   /* caches: views of a cache padded by cpad in every dim */
    int bcast;                      /* q, k, v with batch stride 0; batched tables too */
    int ttab;                       /* tables stored transposed */
    int offsets;                    /* storage offsets 1..13 everywhere, pos of stride 2 */
    int at_end;                     /* positions at the last valid one (entry b: that - b) */
    int64_t tb;                     /* the batch dim of batched tables (b unless rank4's error) */
    int rank_q, rank_c;             /* > -1: q (or kc and vc) replaced by a layout of this rank */
} rkv_geo;

/* The tensors of one case. q, k and v share x when stacked. */
typedef struct rkv_case {
    pt_tensor q, k, v, cs, sn, kc, vc, pos;
    wk_layout lq, lk, lv; /* views into q.s, k.s, v.s (all into q.s when stacked) */
} rkv_case;

/* Storage elements a view needs: offset + the last element + 1 (offset alone when empty). */
static size_t span(const wk_layout *l)
{
    int64_t last = 0;
    for (int k = 0; k < l->rank; k++) {
        if (l->dims[k] == 0)
            return (size_t)l->offset;
        last += (l->dims[k] - 1) * l->strides[k];
    }
    return (size_t)(l->offset + last + 1);
}

/* l <- a view of the dims of a buffer storing them in the order ord (outermost first), each dim
 * padded by pad, dims in the mask zero with stride 0 (stored once), starting at off. */
static void view_of(wk_layout *l, int32_t rank, const int64_t *dims, const int *ord, int64_t pad,
                    unsigned zero, int64_t off)
{
    *l = (wk_layout){.rank = rank, .offset = off};
    int64_t m = 1;
    for (int k = rank - 1; k >= 0; k--) {
        const int a = ord[k];
        l->dims[a] = dims[a];
        l->strides[a] = (zero >> a) & 1 ? 0 : m;
        m *= (zero >> a) & 1 ? 1 : dims[a] + pad;
    }
}

/* t <- a storage of dt covering l (plus slack) with values uniform in [lo, hi). */
static int fill(pt_ctx *c, pt_tensor *t, wk_dtype dt, const wk_layout *l, size_t slack, pt_rng *r,
                double lo, double hi)
{
    const size_t len = span(l) + slack;
    unsigned char *h = pt_alloc(c, len * ref_dtype_size(dt));
    if (!h)
        return 0;
    for (size_t i = 0; i < len; i++)
        ref_store_f(dt, h, (int64_t)i, pt_rng_uniform(r, lo, hi));
    const int ok = pt_tensor_upload(c, t, dt, len, h, l);
    free(h);
    return ok;
}

/* A rank-n layout of 2 contiguous elements (rank 0: one) at the start of a storage. */
static wk_layout bad_rank(int32_t n)
{
    wk_layout l = {.rank = n};
    for (int k = 0; k < n; k++)
        l.dims[k] = k == n - 1 ? 2 : 1, l.strides[k] = k == n - 1 ? 1 : 2;
    return l;
}

static int64_t draw_off(const rkv_geo *g, pt_rng *r)
{
    return g->offsets ? pt_rng_range(r, 1, 13) : 0;
}

/* The inputs q, k, v: separate tensors or column views of one stacked buffer. */
static int make_qkv(pt_ctx *c, rkv_case *k, const rkv_geo *g, pt_rng *r)
{
    const int64_t dq[4] = {g->b, g->hq, g->t, g->d}, dk[4] = {g->b, g->hkv, g->t, g->d};
    if (g->stacked) { /* x (B, T, W), W = (Hq + 2 Hkv) D; q, k, v at columns 0, Hq D, (Hq+Hkv) D */
        const int64_t w = (g->hq + 2 * g->hkv) * g->d, off = draw_off(g, r);
        const wk_layout lx = {.rank = 3, .dims = {g->b, g->t, w}, .strides = {g->t * w, w, 1},
                              .offset = off};
        if (!fill(c, &k->q, c->dt, &lx, 3, r, -4, 4))
            return 0;
        k->lq = (wk_layout){.rank = 4, .dims = {g->b, g->hq, g->t, g->d},
                            .strides = {g->t * w, g->d, w, 1}, .offset = off};
        k->lk = k->lq, k->lk.dims[1] = g->hkv, k->lk.offset = off + g->hq * g->d;
        k->lv = k->lk, k->lv.offset = off + (g->hq + g->hkv) * g->d;
        return 1;
    }
    const unsigned zero = g->bcast ? 1u : 0u;
    view_of(&k->lq, 4, dq, g->qord, 0, zero, draw_off(g, r));
    view_of(&k->lk, 4, dk, g->kord, 0, zero, draw_off(g, r));
    view_of(&k->lv, 4, dk, g->kord, 0, zero, draw_off(g, r));
    return fill(c, &k->q, c->dt, &k->lq, 3, r, -4, 4) &&
           fill(c, &k->k, c->dt, &k->lk, 3, r, -4, 4) && fill(c, &k->v, c->dt, &k->lv, 3, r, -4, 4);
}

/* The tables' dtype of this family: f32 or q's. */
static wk_dtype table_dtype(const pt_ctx *c)
{
    return c->fam == PF_STRIDED || c->fam == PF_OFFSET || c->fam == PF_LARGE_T ? WK_DTYPE_F32
                                                                              : c->dt;
}

/* cos and sin: (P, D/2), or batched (TB, P, D/2). */
static int make_tables(pt_ctx *c, rkv_case *k, const rkv_geo *g, int batched, pt_rng *r)
{
    const int64_t h2 = g->d / 2, d3[3] = {g->tb, g->p, h2}, d2[2] = {g->p, h2};
    static const int O3[3] = {0, 1, 2}, O3R[3] = {2, 1, 0}, O2[2] = {0, 1}, O2R[2] = {1, 0};
    wk_layout lc, ls;
    if (batched) {
        view_of(&lc, 3, d3, g->ttab ? O3R : O3, 0, g->bcast ? 1u : 0u, draw_off(g, r));
        view_of(&ls, 3, d3, g->ttab ? O3R : O3, 0, g->bcast ? 1u : 0u, draw_off(g, r));
    } else {
        view_of(&lc, 2, d2, g->ttab ? O2R : O2, 0, 0, draw_off(g, r));
        view_of(&ls, 2, d2, g->ttab ? O2R : O2, 0, 0, draw_off(g, r));
    }
    const wk_dtype tdt = table_dtype(c);
    return fill(c, &k->cs, tdt, &lc, 2, r, -1, 1) && fill(c, &k->sn, tdt, &ls, 2, r, -1, 1);
}

/* kc and vc (B, Hkv, L, D) of cdt: views of a cache padded by cpad, in their storage orders. */
static int make_caches(pt_ctx *c, rkv_case *k, const rkv_geo *g, wk_dtype cdt, pt_rng *r)
{
    const int64_t dc[4] = {g->b, g->hkv, g->l, g->d};
    wk_layout lkc, lvc;
    view_of(&lkc, 4, dc, g->kcord, g->cpad, 0, draw_off(g, r));
    view_of(&lvc, 4, dc, g->vcord, g->cpad, 0, draw_off(g, r));
    if (g->cpad) /* start inside the pad: one row and one column in */
        lkc.offset += lkc.strides[2] + 1, lvc.offset += lvc.strides[2] + 1;
    return fill(c, &k->kc, cdt, &lkc, 4, r, -2, 2) && fill(c, &k->vc, cdt, &lvc, 4, r, -2, 2);
}

/* Checks a whole cache t after a valid call: the nt rows p[b].. of every (b, h) of its view against
 * want (the reference's copy of the whole storage) under bound (gathered in (B, Hkv, nt, D)
 * order), every other element of the storage bit for bit as before the call. */
static int check_cache(pt_ctx *c, const pt_tensor *t, const unsigned char *want, const int64_t *p,
                       int64_t nt, pt_tol tol, double bound, const char *what)
{
    const size_t es = ref_dtype_size(t->dtype);
    const wk_layout *l = &t->l;
    const int64_t nb = l->dims[0], nh = l->dims[1], d = l->dims[3], n = nb * nh * nt * d;
    unsigned char *got = pt_alloc(c, t->len * es), *mask = pt_alloc(c, t->len);
    unsigned char *g = pt_alloc(c, (size_t)n * es), *w = pt_alloc(c, (size_t)n * es);
    int ok = got && mask && g && w;
    wk_status st = ok ? wk_storage_to_host(got, t->len, t->s) : WK_OK;
    if (ok && st != WK_OK)
        ok = pt_fail(c, "wk_storage_to_host(%s) failed: %s: %s", what, wk_status_string(st),
                     wk_last_error());
    for (int64_t i = 0; ok && i < n; i++) {
        const int64_t e = i % d, tt = (i / d) % nt, h = (i / d / nt) % nh, b = i / d / nt / nh;
        const int64_t o = l->offset + b * l->strides[0] + h * l->strides[1] +
                          (p[b] + tt) * l->strides[2] + e * l->strides[3];
        mask[o] = 1;
        memcpy(g + (size_t)i * es, got + (size_t)o * es, es);
        memcpy(w + (size_t)i * es, want + (size_t)o * es, es);
    }
    if (ok && n > 0) {
        char msg[320];
        double nmse = 0;
        if (bound > c->out->bound)
            c->out->bound = bound;
        if (!pt_compare_bound(msg, sizeof msg, &nmse, t->dtype, g, w, n, tol, bound))
            ok = pt_fail(c, "%s, the written rows in (B, Hkv, T, D) order: %s", what, msg);
        if (nmse > c->out->worst_nmse)
            c->out->worst_nmse = nmse;
    }
    for (size_t i = 0; ok && i < t->len; i++)
        if (!mask[i] && memcmp(got + i * es, t->host + i * es, es) != 0)
            ok = pt_fail(c, "%s storage element %zu, outside the written rows, was modified", what,
                         i);
    free(got);
    free(mask);
    free(g);
    free(w);
    return ok;
}

static void case_free(rkv_case *k)
{
    pt_tensor *all[8] = {&k->q, &k->k, &k->v, &k->cs, &k->sn, &k->kc, &k->vc, &k->pos};
    for (int i = 0; i < 8; i++)
        pt_tensor_free(all[i]);
}

/* One case: batched tables or not, positions from pos or from start; start_bad: a start one
 * past the last valid one. */
static void run_case(pt_ctx *c, const rkv_geo *g, int batched, int use_pos, int start_bad,
                     pt_rng *r)
{
    const wk_dtype cdt = (c->fam & 1) ? (c->dt == WK_DTYPE_F16 ? WK_DTYPE_F32 : WK_DTYPE_F16)
                                      : c->dt;
    const int interleaved = strcmp(c->row->name, "rope_kv_append_i") == 0;
    const int64_t lim = (g->p < g->l ? g->p : g->l) - g->t; /* the last valid p_b */
    rkv_case k = {0};
    pt_case_begin(c);
    if (!make_qkv(c, &k, g, r) || !make_tables(c, &k, g, batched, r) ||
        !make_caches(c, &k, g, cdt, r))
        goto done;
    if (g->rank_q >= 0)
        k.lq = bad_rank(g->rank_q);
    if (g->rank_c >= 0)
        k.kc.l = bad_rank(g->rank_c), k.vc.l = k.kc.l;
    /* positions: p[b] distinct from p[b - 1] where the range allows */
    int64_t p[8] = {0};
    uint32_t hp[16] = {0};
    const int64_t start = start_bad ? lim + 1 : g->at_end ? lim : pt_rng_range(r, 0, lim);
    for (int64_t b = 0; b < g->b && b < 8; b++) {
        p[b] = !use_pos ? start : g->at_end ? lim - b : pt_rng_range(r, 0, lim);
        if (use_pos && !g->at_end && b > 0 && lim > 0 && p[b] == p[b - 1])
            p[b] = (p[b] + 1) % (lim + 1);
        hp[(g->offsets ? 1 : 0) + (g->offsets ? 2 : 1) * b] = (uint32_t)p[b];
    }
    if (use_pos) {
        const wk_layout lp = {.rank = 1, .dims = {g->b}, .strides = {g->offsets ? 2 : 1},
                              .offset = g->offsets ? 1 : 0};
        if (!pt_tensor_upload(c, &k.pos, WK_DTYPE_U32, span(&lp) + 1, hp, &lp))
            goto done;
    }
    char sq[96], sk[96], skc[96];
    snprintf(c->sub, sizeof c->sub, "kv %s, tables %s %s, %s; q=%s k=%s kc=%s", wk_dtype_name(cdt),
             wk_dtype_name(table_dtype(c)), batched ? "(B,P,D/2)" : "(P,D/2)",
             use_pos ? "pos" : "start",
             pt_layout_str(sq, sizeof sq, &k.lq), pt_layout_str(sk, sizeof sk, &k.lk),
             pt_layout_str(skc, sizeof skc, &k.kc.l));
    wk_storage *out = NULL;
    const wk_storage *x = k.q.s, *kx = g->stacked ? k.q.s : k.k.s, *vx = g->stacked ? k.q.s : k.v.s;
    const wk_status st = wk_rope_kv_append(&out, interleaved, x, &k.lq, kx, &k.lk, vx, &k.lv,
                                           k.cs.s, &k.cs.l, k.sn.s, &k.sn.l, k.kc.s, &k.kc.l,
                                           k.vc.s, &k.vc.l, use_pos ? k.pos.s : NULL, &k.pos.l,
                                           start);
    const int64_t n = g->b * g->hq * g->t * g->d;
    const size_t ces = ref_dtype_size(cdt);
    void *want = pt_alloc(c, (size_t)(n > 0 ? n : 1) * ces);
    unsigned char *wkc = pt_alloc(c, k.kc.len * ces), *wvc = pt_alloc(c, k.vc.len * ces);
    wk_status rst = WK_OK;
    if (!c->probing && want && wkc && wvc) {
        memcpy(wkc, k.kc.host, k.kc.len * ces);
        memcpy(wvc, k.vc.host, k.vc.len * ces);
        const unsigned char *xh = k.q.host;
        const ref_rope_kv_in in = {
            .dt = c->dt, .cdt = cdt, .tdt = table_dtype(c), .interleaved = interleaved, .q = xh,
            .k = g->stacked ? xh : k.k.host, .v = g->stacked ? xh : k.v.host, .cos = k.cs.host,
            .sin = k.sn.host, .lq = &k.lq, .lk = &k.lk, .lv = &k.lv, .lc = &k.cs.l, .ls = &k.sn.l,
            .pos = use_pos ? (const uint32_t *)k.pos.host : NULL, .lp = &k.pos.l, .start = start};
        rst = ref_rope_kv_append(want, wkc, &k.kc.l, wvc, &k.vc.l, &in);
    }
    const double bound = pt_bound(c->row->tol, c->dt) > pt_bound(c->row->tol, cdt)
                             ? pt_bound(c->row->tol, c->dt) : pt_bound(c->row->tol, cdt);
    if (pt_check_status(c, st, rst, c->row->name) && st == WK_OK && !c->probing)
        pt_check_output_bound(c, out, cdt, want, n, c->row->tol, bound);
    if (!c->probing && rst == WK_OK && want && wkc && wvc) {
        check_cache(c, &k.kc, wkc, p, g->t, c->row->tol, bound, "kc");
        check_cache(c, &k.vc, wvc, p, g->t, PT_EXACT, 0, "vc");
    } else { /* nothing written */
        pt_tensor_unchanged(c, &k.kc, "kc");
        pt_tensor_unchanged(c, &k.vc, "vc");
    }
    pt_tensor_unchanged(c, &k.q, g->stacked ? "q|k|v" : "q");
    pt_tensor_unchanged(c, &k.k, "k");
    pt_tensor_unchanged(c, &k.v, "v");
    pt_tensor_unchanged(c, &k.cs, "cos");
    pt_tensor_unchanged(c, &k.sn, "sin");
    pt_tensor_unchanged(c, &k.pos, "pos");
    free(want);
    free(wkc);
    free(wvc);
    wk_storage_free(out);
done:
    case_free(&k);
}

void pt_run_rope_kv(pt_ctx *c, pt_rng *r)
{
    rkv_geo g = {.b = 2, .hq = 4, .hkv = 2, .t = 3, .d = 16, .l = 12, .p = 16, .qord = ORD_BHTD,
                 .kord = ORD_BHTD, .kcord = ORD_BHTD, .vcord = ORD_BHTD, .rank_q = -1,
                 .rank_c = -1};
    int bad_start = 0;
    switch (c->fam) {
    case PF_CONTIG: break;
    case PF_STRIDED: g.stacked = 1, g.t = 2, g.d = 8, g.l = 10, g.p = 12, g.cpad = 2; break;
    case PF_TRANSPOSED:
        g.b = 3, g.hq = 3, g.hkv = 1, g.d = 12, g.qord = ORD_REV, g.kord = ORD_BTHD;
        g.kcord = ORD_BTHD, g.ttab = 1;
        break;
    case PF_BROADCAST: g.bcast = 1, g.t = 2, g.p = 10; break;
    case PF_OFFSET: g.offsets = 1, g.hq = 2, g.hkv = 1, g.d = 6, g.t = 2, bad_start = 1; break;
    case PF_EMPTY: g.t = 0, g.hq = 3, g.hkv = 1, g.d = 6, g.l = 5, g.p = 7, g.at_end = 1; break;
    case PF_LARGE: /* a decode step */
        g.b = 1, g.hq = 32, g.hkv = 8, g.d = 128, g.t = 1, g.l = 64, g.p = 80, g.stacked = 1;
        break;
    case PF_LARGE_T: /* a prefill */
        g.b = 2, g.hq = 8, g.hkv = 2, g.d = 128, g.t = 64, g.l = 100, g.p = 96, g.stacked = 1;
        break;
    default: { /* the rank families: shapes this op rejects */
        const int32_t rank = c->fam - PF_RANK0;
        g.b = 2, g.hq = 2, g.hkv = 1, g.t = 1, g.d = 4, g.l = 4, g.p = 4;
        for (int sc = 0; sc < 2; sc++) {
            rkv_geo e = g;
            if (rank == 4 && sc == 0)
                e.d = 5; /* odd head size */
            else if (rank == 4)
                e.tb = g.b + 1; /* batched tables of another batch */
            else if (sc == 0)
                e.rank_q = rank;
            else
                e.rank_c = rank;
            if (e.tb == 0)
                e.tb = e.b;
            run_case(c, &e, rank == 4 && sc == 1, 0, 0, r);
        }
        return;
    }
    }
    g.tb = g.b;
    for (int sc = 0; sc < 2; sc++)
        run_case(c, &g, sc, sc ^ (c->fam & 1), 0, r);
    if (bad_start) /* a host start past the cache: WK_ERR_INDEX_OUT_OF_RANGE, nothing written */
        run_case(c, &g, 0, 0, 1, r);
}
