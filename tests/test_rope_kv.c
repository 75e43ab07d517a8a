/* test_rope_kv.c: wk_rope_kv_append on every device, against two independent answers:
 *   - the composition it replaces, on the same device: wk_rope / wk_rope_i of q and of k with the
 *     tables' rows p_b.. (one call per batch entry), wk_to_dtype to the cache's dtype: out and
 *     the written cache rows must equal it bit for bit, every (dtype, cache dtype) pair of the
 *     float types, both pair orders, positions from the host and from device memory; with f32
 *     tables under another q dtype, the same composition on q widened to its compute type (f32,
 *     f64 for f64) and the result rounded back to q's dtype before the cache's;
 *   - a float64 evaluation of the rope formula for f32 q and cache (tolerance 8 f32 ulps of 1);
 * and the cache rows it must not touch keep their bytes. Bad positions: a host start past the
 * tables or the cache fails with WK_ERR_INDEX_OUT_OF_RANGE and writes nothing; a device position
 * past them fails (at the call on the CPU, at the next synchronize on a GPU) and that entry's cache
 * rows keep their bytes. Bad arguments (NULLs, ranks, dims, odd D, dtypes of the caches and the
 * tables, pos) each get their status, no output and an untouched cache. The q/k/v operands are
 * column views of one (B, T, (Hq + 2 Hkv) D) row block, as a stacked Wq|Wk|Wv product gives
 * them. Run: ctest -R test_rope_kv */
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, T = 3, D = 8, H2 = D / 2, P = 16, L = 12, W = (HQ + 2 * HKV) * D };

static wk_device *g_dev;
static const char *g_spec;

static const wk_dtype FLOATS[5] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16, WK_DTYPE_F64,
                                   WK_DTYPE_F8E4M3};

static wk_layout view4(const int64_t *dims, const int64_t *strides, int64_t off)
{
    wk_layout l = testlib_layout(4, dims);
    memcpy(l.strides, strides, 4 * sizeof *strides);
    l.offset = off;
    return l;
}

/* Deterministic values in [-1, 1). */
static void fill(double *v, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = ((s >> 8) & 0xFFFF) / 32768.0 - 1.0;
    }
}

typedef struct fixture {
    wk_dtype dt, cdt, tdt; /* q, k, v; the caches; the tables */
    wk_storage *x, *cs, *sn, *kc, *vc;
    wk_layout lq, lk, lv, lc, lcache;
    unsigned char *kc0, *vc0; /* the caches' bytes before the call */
} fixture;

static int fx_make(fixture *f, wk_dtype dt, wk_dtype cdt, wk_dtype tdt)
{
    static double xv[B * T * W], tab[2][P * H2], cache[2][B * HKV * L * D];
    memset(f, 0, sizeof *f);
    f->dt = dt, f->cdt = cdt, f->tdt = tdt;
    fill(xv, B * T * W, 1);
    fill(tab[0], P * H2, 2);
    fill(tab[1], P * H2, 3);
    fill(cache[0], B * HKV * L * D, 4);
    fill(cache[1], B * HKV * L * D, 5);
    f->x = testlib_upload_f64(g_dev, dt, xv, B * T * W);
    f->cs = testlib_upload_f64(g_dev, tdt, tab[0], P * H2);
    f->sn = testlib_upload_f64(g_dev, tdt, tab[1], P * H2);
    f->kc = testlib_upload_f64(g_dev, cdt, cache[0], B * HKV * L * D);
    f->vc = testlib_upload_f64(g_dev, cdt, cache[1], B * HKV * L * D);
    const int64_t qd[4] = {B, HQ, T, D}, kd[4] = {B, HKV, T, D}, cd[4] = {B, HKV, L, D};
    const int64_t xs[4] = {T * W, D, W, 1};
    f->lq = view4(qd, xs, 0);
    f->lk = view4(kd, xs, HQ * D);
    f->lv = view4(kd, xs, (HQ + HKV) * D);
    f->lc = testlib_layout2(P, H2);
    f->lcache = testlib_layout(4, cd);
    const size_t cb = (size_t)B * HKV * L * D * wk_dtype_size(cdt);
    f->kc0 = malloc(cb), f->vc0 = malloc(cb);
    if (!f->x || !f->cs || !f->sn || !f->kc || !f->vc || !f->kc0 || !f->vc0)
        return 0;
    return !testlib_download(f->kc0, cb / wk_dtype_size(cdt), f->kc) &&
           !testlib_download(f->vc0, cb / wk_dtype_size(cdt), f->vc);
}

static void fx_free(fixture *f)
{
    wk_storage_free(f->x), wk_storage_free(f->cs), wk_storage_free(f->sn);
    wk_storage_free(f->kc), wk_storage_free(f->vc);
    free(f->kc0), free(f->vc0);
}

/* 1 if the op should run here; otherwise checks that st is WK_ERR_NOT_SUPPORTED. */
static int ran(wk_status st, const fixture *f)
{
    if (!wk_device_supports(g_dev, WK_OP_ROPE_KV_APPEND, f->dt) ||
        !wk_device_supports(g_dev, WK_OP_ROPE_KV_APPEND, f->cdt))
        return TEST_CHECK(st == WK_ERR_NOT_SUPPORTED, "%s: unsupported pair, got %s", g_spec,
                          wk_status_string(st)) && 0;
    return TEST_CHECK(st == WK_OK, "%s: rope_kv_append %s -> %s cache: %s (%s)", g_spec,
                      wk_dtype_name(f->dt), wk_dtype_name(f->cdt), wk_status_string(st),
                      wk_last_error());
}

/* wk_to_dtype of a whole contiguous storage of n elements; *owned gets the result. */
static int widen(wk_storage **owned, const wk_storage *s, int64_t n, wk_dtype dt)
{
    const wk_layout l = testlib_layout1(n);
    return TEST_EQ_STATUS(wk_to_dtype(owned, s, &l, dt), WK_OK);
}

/* *s <- wk_to_dtype(*s, dt) of the (1, H, T, D) rope output (freed). */
static int narrow_to(wk_storage **s, int64_t h, wk_dtype dt)
{
    const int64_t d[4] = {1, h, T, D};
    const wk_layout l = testlib_layout(4, d);
    wk_storage *o = NULL;
    const int good = TEST_EQ_STATUS(wk_to_dtype(&o, *s, &l, dt), WK_OK);
    wk_storage_free(*s);
    *s = o;
    return good;
}

/* The composition for entry b: rope of q (and of k, converted to the cache dtype) with the
 * tables' rows p.., as wk_rope / wk_rope_i and wk_to_dtype give them; raw bytes into oq, ok.
 * f32 tables under another q dtype: q and k widened to the compute type ct (f32; f64 for f64)
 * and the tables to ct, the rope there, the result rounded to q's dtype, then to the cache's. */
static int compose(const fixture *f, int interleaved, int64_t b, int64_t p, unsigned char *oq,
                   unsigned char *ok)
{
    const int mixed = f->tdt != f->dt;
    const wk_dtype ct = f->dt == WK_DTYPE_F64 ? WK_DTYPE_F64 : WK_DTYPE_F32;
    wk_storage *wx = NULL, *wc = NULL, *ws = NULL;
    const int tables = !mixed || ct == f->tdt ||
                       (widen(&wc, f->cs, P * H2, ct) && widen(&ws, f->sn, P * H2, ct));
    if (mixed && !(widen(&wx, f->x, B * T * W, ct) && tables)) {
        wk_storage_free(wx), wk_storage_free(wc), wk_storage_free(ws);
        return 0;
    }
    const wk_storage *x = wx ? wx : f->x, *cs = wc ? wc : f->cs, *sn = ws ? ws : f->sn;
    const int64_t ts[2] = {H2, 1}, td[2] = {T, H2};
    wk_layout lt = testlib_layout(2, td);
    memcpy(lt.strides, ts, sizeof ts);
    lt.offset = p * H2;
    wk_layout lq = f->lq, lk = f->lk;
    lq.dims[0] = lk.dims[0] = 1;
    lq.offset += b * T * W, lk.offset += b * T * W;
    wk_storage *rq = NULL, *rk = NULL, *ck = NULL;
    wk_status (*rope)(wk_storage **, const wk_storage *, const wk_layout *, const wk_storage *,
                      const wk_layout *, const wk_storage *, const wk_layout *) =
        interleaved ? wk_rope_i : wk_rope;
    const int64_t kd[4] = {1, HKV, T, D};
    const wk_layout lkc = testlib_layout(4, kd);
    const int64_t qd[4] = {1, HQ, T, D};
    const wk_layout lqc = testlib_layout(4, qd);
    wk_storage *cq = NULL;
    int good = TEST_EQ_STATUS(rope(&rq, x, &lq, cs, &lt, sn, &lt), WK_OK) &&
               TEST_EQ_STATUS(rope(&rk, x, &lk, cs, &lt, sn, &lt), WK_OK) &&
               (!mixed || (narrow_to(&rq, HQ, f->dt) && narrow_to(&rk, HKV, f->dt))) &&
               TEST_EQ_STATUS(wk_to_dtype(&cq, rq, &lqc, f->cdt), WK_OK) &&
               TEST_EQ_STATUS(wk_to_dtype(&ck, rk, &lkc, f->cdt), WK_OK) &&
               !testlib_download(oq, HQ * T * D, cq) && !testlib_download(ok, HKV * T * D, ck);
    wk_storage_free(rq), wk_storage_free(rk), wk_storage_free(ck), wk_storage_free(cq);
    wk_storage_free(wx), wk_storage_free(wc), wk_storage_free(ws);
    return good;
}

/* v converted to the cache dtype, entry b: raw bytes into ov. */
static int convert_v(const fixture *f, int64_t b, unsigned char *ov)
{
    wk_layout lv = f->lv;
    lv.dims[0] = 1;
    lv.offset += b * T * W;
    wk_storage *cv = NULL;
    const int good = TEST_EQ_STATUS(wk_to_dtype(&cv, f->x, &lv, f->cdt), WK_OK) &&
                     !testlib_download(ov, HKV * T * D, cv);
    wk_storage_free(cv);
    return good;
}

/* The cache after the call: rows p_b.. of entry b hold want (k or v, (HKV, T, D) bytes), every
 * other row its old bytes (written[b] = 0: entry b not written at all). */
static void expect_cache(const fixture *f, const wk_storage *c, const unsigned char *old,
                         unsigned char *const want[B], const int64_t *p, const int *written,
                         const char *what)
{
    const size_t es = wk_dtype_size(f->cdt), n = (size_t)B * HKV * L * D;
    unsigned char *got = malloc(n * es);
    if (!got || testlib_download(got, n, c)) {
        free(got);
        TEST_CHECK(0, "%s: download %s", g_spec, what);
        return;
    }
    int bad = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HKV; h++)
            for (int64_t l = 0; l < L; l++) {
                const size_t at = (size_t)(((b * HKV + h) * L + l) * D) * es;
                const int64_t t = l - p[b];
                const unsigned char *ref = written[b] && t >= 0 && t < T
                                               ? want[b] + (size_t)((h * T + t) * D) * es
                                               : old + at;
                bad += memcmp(got + at, ref, D * es) != 0;
            }
    TEST_CHECK(!bad, "%s: %s cache %s -> %s: %d rows differ", g_spec, what, wk_dtype_name(f->dt),
               wk_dtype_name(f->cdt), bad);
    free(got);
}

/* One call with positions p (device memory when use_pos, else start = p[0] = p[1]). */
static void test_pair(wk_dtype dt, wk_dtype cdt, wk_dtype tdt, int interleaved, int use_pos)
{
    fixture f;
    if (!fx_make(&f, dt, cdt, tdt)) {
        TEST_CHECK(0, "%s: fixture %s/%s", g_spec, wk_dtype_name(dt), wk_dtype_name(cdt));
        fx_free(&f);
        return;
    }
    const int64_t p[B] = {use_pos ? 5 : 4, use_pos ? 9 : 4};
    const uint32_t pu[B] = {(uint32_t)p[0], (uint32_t)p[1]};
    wk_storage *pos = use_pos ? testlib_upload(g_dev, WK_DTYPE_U32, pu, B) : NULL, *out = NULL;
    const wk_layout lp = testlib_layout1(B);
    const wk_status st = wk_rope_kv_append(&out, interleaved, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv,
                                           f.cs, &f.lc, f.sn, &f.lc, f.kc, &f.lcache, f.vc,
                                           &f.lcache, pos, use_pos ? &lp : NULL, use_pos ? 0 : 4);
    const size_t es = wk_dtype_size(cdt), ces = es; /* out is in the cache's dtype */
    if (ran(st, &f)) {
        unsigned char *q = malloc((size_t)B * HQ * T * D * es), *oq = malloc((size_t)HQ * T * D * es);
        unsigned char *wk[B], *wv[B];
        int good = q && oq && !testlib_download(q, (size_t)B * HQ * T * D, out);
        for (int b = 0; b < B; b++) {
            wk[b] = malloc((size_t)HKV * T * D * ces), wv[b] = malloc((size_t)HKV * T * D * ces);
            good = good && wk[b] && wv[b] && compose(&f, interleaved, b, p[b], oq, wk[b]) &&
                   convert_v(&f, b, wv[b]);
            if (good)
                TEST_CHECK(!memcmp(q + (size_t)b * HQ * T * D * es, oq, (size_t)HQ * T * D * es),
                           "%s: out of entry %d (%s, %s tables, %s pairs) differs from wk_rope%s",
                           g_spec, b, wk_dtype_name(dt), wk_dtype_name(tdt),
                           interleaved ? "adjacent" : "halves", interleaved ? "_i" : "");
        }
        if (good) {
            const int all[B] = {1, 1};
            expect_cache(&f, f.kc, f.kc0, wk, p, all, "k");
            expect_cache(&f, f.vc, f.vc0, wv, p, all, "v");
        }
        if (good && dt == WK_DTYPE_F32 && cdt == WK_DTYPE_F32) { /* the formula in float64 */
            const float *qf = (const float *)q;
            double xv[B * T * W], c[P * H2], s[P * H2];
            fill(xv, B * T * W, 1), fill(c, P * H2, 2), fill(s, P * H2, 3);
            for (int64_t b = 0; b < B; b++)
                for (int64_t h = 0; h < HQ; h++)
                    for (int64_t t = 0; t < T; t++)
                        for (int64_t i = 0; i < H2; i++) {
                            const int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? i0 + 1 : i + H2;
                            const double *x = xv + (b * T + t) * W + h * D;
                            /* x rounded to f32 as uploaded */
                            const double x0 = (float)x[i0], x1 = (float)x[i1];
                            const double cc = (float)c[(p[b] + t) * H2 + i], ss = (float)s[(p[b] + t) * H2 + i];
                            const float *o = qf + ((b * HQ + h) * T + t) * D;
                            TEST_NEAR(o[i0], x0 * cc - x1 * ss, 4 * 0x1p-23 * 2);
                            TEST_NEAR(o[i1], x0 * ss + x1 * cc, 4 * 0x1p-23 * 2);
                        }
        }
        free(q), free(oq);
        for (int b = 0; b < B; b++)
            free(wk[b]), free(wv[b]);
    }
    wk_storage_free(out), wk_storage_free(pos);
    fx_free(&f);
}

/* Positions past the tables or the cache. */
static void test_bad_positions(void)
{
    fixture f;
    if (!fx_make(&f, WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_F32)) {
        TEST_CHECK(0, "%s: fixture", g_spec);
        fx_free(&f);
        return;
    }
    if (!wk_device_supports(g_dev, WK_OP_ROPE_KV_APPEND, WK_DTYPE_F32)) {
        fx_free(&f);
        return;
    }
    wk_storage *out = NULL;
    const int none[B] = {0, 0};
    unsigned char *nowant[B] = {NULL, NULL};
    const int64_t p0[B] = {0, 0};
    /* host start: L - T + 1 runs past the cache, and a negative start */
    const int64_t starts[2] = {L - T + 1, -1};
    for (int i = 0; i < 2; i++) {
        TEST_EQ_STATUS(wk_rope_kv_append(&out, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc,
                                         f.sn, &f.lc, f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL,
                                         starts[i]),
                       WK_ERR_INDEX_OUT_OF_RANGE);
        TEST_CHECK(out == NULL, "%s: no output on failure", g_spec);
    }
    expect_cache(&f, f.kc, f.kc0, nowant, p0, none, "bad start: k");
    /* device positions: entry 1 at L - 1 (its 3 rows run past the cache) */
    const uint32_t pu[B] = {2, L - 1};
    wk_storage *pos = testlib_upload(g_dev, WK_DTYPE_U32, pu, B);
    const wk_layout lp = testlib_layout1(B);
    wk_status st = wk_rope_kv_append(&out, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc,
                                     f.sn, &f.lc, f.kc, &f.lcache, f.vc, &f.lcache, pos, &lp, 0);
    if (st == WK_OK) /* a GPU: the error record, at the next synchronize */
        st = wk_device_synchronize(g_dev);
    TEST_EQ_STATUS(st, WK_ERR_INDEX_OUT_OF_RANGE);
    wk_storage_free(out), out = NULL;
    /* entry 1 is not written (entry 0 may be, on a GPU) */
    const size_t es = wk_dtype_size(f.cdt), row = (size_t)HKV * L * D;
    unsigned char *got = malloc((size_t)B * row * es);
    if (got && !testlib_download(got, (size_t)B * row, f.kc))
        TEST_CHECK(!memcmp(got + row * es, f.kc0 + row * es, row * es),
                   "%s: entry 1's cache rows changed after a bad position", g_spec);
    free(got);
    wk_storage_free(pos);
    fx_free(&f);
}

/* Each bad argument: its status, no output, the caches untouched. */
static void test_bad_arguments(void)
{
    fixture f;
    if (!fx_make(&f, WK_DTYPE_F32, WK_DTYPE_F32, WK_DTYPE_F32)) {
        TEST_CHECK(0, "%s: fixture", g_spec);
        fx_free(&f);
        return;
    }
    wk_storage *f16 = NULL, *pos_u8 = NULL, *pos = NULL;
    double z[B * T * W] = {0};
    const uint32_t pu[3] = {0, 0, 0};
    f16 = testlib_upload_f64(g_dev, WK_DTYPE_F16, z, B * HKV * L * D);
    pos_u8 = testlib_upload(g_dev, WK_DTYPE_U8, pu, B);
    pos = testlib_upload(g_dev, WK_DTYPE_U32, pu, 3);
    const wk_layout lp = testlib_layout1(B), lp3 = testlib_layout1(3);
    wk_layout lq3 = f.lq, lk_d = f.lk, lodd = f.lq, lkc_h = f.lcache, lt_bad = f.lc;
    lq3.rank = 3;
    lk_d.dims[2] = T - 1;               /* k with fewer tokens than q */
    lodd.dims[3] = D - 1;               /* odd head size (q) */
    lkc_h.dims[1] = HKV + 1;            /* cache with another head count */
    lt_bad.dims[1] = H2 + 1;            /* tables not D/2 wide */
    lkc_h.dims[2] = 8;                  /* (B, HKV + 1, 8, D): inside the storage */
    lkc_h.strides[0] = (HKV + 1) * 8 * D, lkc_h.strides[1] = 8 * D;
    wk_storage *o = NULL;
    struct { const char *what; wk_status want; wk_status got; } cases[] = {
        {"NULL out", WK_ERR_INVALID_ARGUMENT,
         wk_rope_kv_append(NULL, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"NULL q", WK_ERR_INVALID_ARGUMENT,
         wk_rope_kv_append(&o, 1, NULL, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"NULL kc layout", WK_ERR_INVALID_ARGUMENT,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, NULL, f.vc, &f.lcache, NULL, NULL, 0)},
        {"q rank 3", WK_ERR_SHAPE,
         wk_rope_kv_append(&o, 1, f.x, &lq3, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"k and v dims differ", WK_ERR_SHAPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &lk_d, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"odd head size", WK_ERR_SHAPE,
         wk_rope_kv_append(&o, 1, f.x, &lodd, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"cache heads", WK_ERR_SHAPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f16, &lkc_h, f16, &lkc_h, NULL, NULL, 0)},
        {"tables width", WK_ERR_SHAPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.x, &lt_bad, f.x, &lt_bad,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"kc f16, vc f32", WK_ERR_DTYPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f16, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"tables f16 under f32 q", WK_ERR_DTYPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f16, &f.lc, f16, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"cos f32, sin f16", WK_ERR_DTYPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f16, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, NULL, NULL, 0)},
        {"pos u8", WK_ERR_DTYPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, pos_u8, &lp, 0)},
        {"pos of 3 entries", WK_ERR_SHAPE,
         wk_rope_kv_append(&o, 1, f.x, &f.lq, f.x, &f.lk, f.x, &f.lv, f.cs, &f.lc, f.sn, &f.lc,
                           f.kc, &f.lcache, f.vc, &f.lcache, pos, &lp3, 0)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        TEST_CHECK(cases[i].got == cases[i].want, "%s: %s: got %s, want %s", g_spec, cases[i].what,
                   wk_status_string(cases[i].got), wk_status_string(cases[i].want));
    TEST_CHECK(o == NULL, "%s: an output after a failed call", g_spec);
    wk_storage_free(o);
    const int none[B] = {0, 0};
    unsigned char *nowant[B] = {NULL, NULL};
    const int64_t p0[B] = {0, 0};
    expect_cache(&f, f.kc, f.kc0, nowant, p0, none, "bad arguments: k");
    expect_cache(&f, f.vc, f.vc0, nowant, p0, none, "bad arguments: v");
    wk_storage_free(f16), wk_storage_free(pos_u8), wk_storage_free(pos);
    fx_free(&f);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        for (int a = 0; a < 5; a++)
            for (int c = 0; c < 5; c++)
                for (int mode = 0; mode < 8; mode++) /* pairs, positions, f32 tables */
                    if (!(mode & 4) || FLOATS[a] != WK_DTYPE_F32)
                        test_pair(FLOATS[a], FLOATS[c], mode & 4 ? WK_DTYPE_F32 : FLOATS[a],
                                  mode & 1, (mode >> 1) & 1);
        test_bad_positions();
        test_bad_arguments();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
