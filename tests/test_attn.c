/* test_attn.c: wk_decode_attention on every device.
 *   - known answers: one query, two keys, D = 2 (out = sum_j e^(s_j) v_j / sum_j e^(s_j), the
 *     formula evaluated here in double), and the causal rule (the first of two query tokens sees
 *     only the first key, so its output is v_0 exactly), and an f16 cache holding subnormals,
 *     65504, inf and NaN averaged exactly (the widening of f16 keeps every value);
 *   - against the float64 reference (tests/reference/ref_attn.c): q f32/f16/bf16 x cache
 *     f32/f16/bf16, causal or not, grouped-query (8 query heads on 2 kv heads, 8 on 1) and plain
 *     (4 on 4), Lq 1..5, Lk from 1 to 5000 (many splits on a GPU), D 64, 128, 80, 256, 200, 16 and 7
 *     (no 16-byte loads; on a GPU 1 to 64 16-byte chunks per row: one or two per lane), K and V as views of a larger preallocated cache (B, H, Lmax, D) and q as a
 *     permuted (B, Lq, Hq, D) tensor. Bound: normalised MSE <= u^2 + 1e-8, u the unit roundoff
 *     of the output dtype (2^-24 f32, 2^-11 f16, 2^-8 bf16): the one rounding of each output
 *     (|err| <= u |x|, so at most u^2 in normalised MSE) plus the f32 arithmetic: scores of at
 *     most 128 products and sums of at most 5000 weights, each a sum of terms of both signs
 *     rounded at 2^-24, whose errors grow like sqrt(D + Lk) 2^-24 ~ 4e-6 relative (1.6e-11
 *     squared), bounded with a wide margin by 1e-8 (worst case, all errors aligned:
 *     (D + Lk) 2^-24 ~ 3e-4, 1e-7 squared: the margin is not that);
 *   - prefill shapes (Lq 64 .. 300, Lk up to 1000, D 64 and 128, GQA, causal or not): on a GPU
 *     the f16/f16 and bf16/bf16 ones run the matrix-unit kernel (kernels/flash.cu), which rounds
 *     the softmax weights P once to the dtype before P V (as FlashAttention): the bound adds the
 *     derived term of p_round_bound (its comment), computed per case from the reference run on
 *     |v|;
 *   - a NaN in q gives NaN in its row only; prefill shapes and one decode shape with a negative
 *     scale;
 *   - wk_decode_attention_lens: B = 2 entries with different key counts L_b (several pairs per
 *     shape, L_b = Lq and L_b = Lk among them), causal and not, Lq 1 and 4, the counts read
 *     through a strided offset layout; each entry compared with the float64 reference on its
 *     first L_b rows (a (1, Hkv, L_b, D) view), same bound. Rows L_b .. Lk - 1 of k and v hold
 *     NaN, so reading any of them would make the output NaN.
 * WICK_TEST_QUICK=1 runs the 3 pairs of one dtype (f32 and, for 16-bit caches, the matrix-unit
 * kernels) and fewer lens pairs (for compute-sanitizer);
 * WICK_TEST_PREFILL=1 the prefill cases alone. */
#include "ref_attn.h"
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rs = 777u;
static int scale_sign = 1; /* -1: the cases run with a negative scale */
static double urand(void)
{
    rs = rs * 1664525u + 1013904223u;
    return ((double)(rs >> 8) / 16777216.0) * 2.0 - 1.0;
}

static double unit_roundoff(wk_dtype dt)
{
    return dt == WK_DTYPE_BF16 ? 1.0 / 256 : dt == WK_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 16777216;
}

static void known_answers(wk_device *dev)
{
    /* q (1,1,1,2) = [1, 0]; k (1,1,2,2) = [[1,0],[0,1]]; v = [[1,2],[3,4]]; scale 1 */
    const double qv[2] = {1, 0}, kv[4] = {1, 0, 0, 1}, vv[4] = {1, 2, 3, 4};
    wk_storage *q = testlib_upload_f64(dev, WK_DTYPE_F32, qv, 2);
    wk_storage *k = testlib_upload_f64(dev, WK_DTYPE_F32, kv, 4);
    wk_storage *v = testlib_upload_f64(dev, WK_DTYPE_F32, vv, 4);
    wk_storage *o = NULL;
    const wk_layout lq = testlib_layout(4, (const int64_t[]){1, 1, 1, 2});
    const wk_layout lk = testlib_layout(4, (const int64_t[]){1, 1, 2, 2});
    double got[4];
    if (q && k && v && TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, k, &lk, v, &lk, 1.0f, 0), WK_OK) &&
        !testlib_download_f64(got, 2, o)) {
        const double e = exp(1.0);
        TEST_NEAR(got[0], (e * 1 + 3) / (e + 1), 1e-6);
        TEST_NEAR(got[1], (e * 2 + 4) / (e + 1), 1e-6);
    }
    wk_storage_free(o);
    o = NULL;
    /* two query tokens, causal: token 0 sees key 0 only -> v_0 exactly; token 1 sees both */
    const double q2[4] = {1, 0, 0, 1};
    wk_storage *qq = testlib_upload_f64(dev, WK_DTYPE_F32, q2, 4);
    const wk_layout lq2 = testlib_layout(4, (const int64_t[]){1, 1, 2, 2});
    if (qq && TEST_EQ_STATUS(wk_decode_attention(&o, qq, &lq2, k, &lk, v, &lk, 1.0f, 1), WK_OK) &&
        !testlib_download_f64(got, 4, o)) {
        const double e = exp(1.0);
        TEST_NEAR(got[0], 1.0, 0);
        TEST_NEAR(got[1], 2.0, 0);
        TEST_NEAR(got[2], (1 + 3 * e) / (e + 1), 1e-6);
        TEST_NEAR(got[3], (2 + 4 * e) / (e + 1), 1e-6);
    }
    wk_storage_free(o);
    o = NULL;
    /* an f16 cache with subnormals, the largest finite, inf and NaN: every score 0 (q = 0), so
     * out = the mean of the two v rows: [(3 + 5) / 2 * 2^-24, (65504 + inf) / 2, NaN], exact
     * (catches a widening that flushes subnormals or maps inf/NaN to finite values) */
    const double s24 = ldexp(1.0, -24), z3[3] = {0, 0, 0}, k6[6] = {0, 0, 0, 0, 0, 0};
    const double v6[6] = {3 * s24, 65504, 1, 5 * s24, INFINITY, NAN};
    wk_storage *q3 = testlib_upload_f64(dev, WK_DTYPE_F32, z3, 3);
    wk_storage *k3 = testlib_upload_f64(dev, WK_DTYPE_F16, k6, 6);
    wk_storage *v3 = testlib_upload_f64(dev, WK_DTYPE_F16, v6, 6);
    const wk_layout lq3 = testlib_layout(4, (const int64_t[]){1, 1, 1, 3});
    const wk_layout lk3 = testlib_layout(4, (const int64_t[]){1, 1, 2, 3});
    if (q3 && k3 && v3 &&
        TEST_EQ_STATUS(wk_decode_attention(&o, q3, &lq3, k3, &lk3, v3, &lk3, 1.0f, 0), WK_OK) &&
        !testlib_download_f64(got, 3, o)) {
        TEST_NEAR(got[0], 4 * s24, 0);
        TEST_CHECK(isinf(got[1]) && got[1] > 0, "%s: f16 inf in v gave %g", wk_device_name(dev),
                   got[1]);
        TEST_CHECK(isnan(got[2]), "%s: f16 NaN in v gave %g", wk_device_name(dev), got[2]);
    }
    wk_storage_free(o);
    wk_storage_free(q3);
    wk_storage_free(k3);
    wk_storage_free(v3);
    wk_storage_free(qq);
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
}

typedef struct acase {
    int64_t b, hq, hkv, lq, lk, d;
    int causal;
} acase;

/* Whether a GPU kernel on the matrix units runs this case with P rounded once to the dtype
 * (the layouts of ref_case_lens are aligned): the prefill kernel (src/gpu/gpu_flash.c: f16 or
 * bf16 q, k, v of one dtype, D 64 or 128, Lq >= 64, no lens; WICK_ATTN_FLASH=0 selects the
 * decode kernels there), else the decode kernel attn_mma_* (src/gpu/gpu_attn.c: one 16-bit
 * dtype, D a multiple of 32 up to 128, on CUDA (sm_80+; older GPUs run the f32 kernels, within
 * the looser bound too) and the simt device; WICK_ATTN_MMA=0 turns it off). */
static int takes_p1(wk_device *dev, wk_dtype qdt, wk_dtype kvdt, const acase *c,
                    const uint32_t *lens)
{
    const wk_backend_kind be = wk_device_backend(dev);
    if (be == WK_BACKEND_CPU || qdt != kvdt || (qdt != WK_DTYPE_F16 && qdt != WK_DTYPE_BF16))
        return 0;
    const char *e = getenv("WICK_ATTN_FLASH");
    const int flash_on = !(e && !strcmp(e, "0"));
    if ((c->d == 64 || c->d == 128) && c->lq >= 64 && !lens && flash_on)
        return 1; /* the prefill kernel */
    const char *m = getenv("WICK_ATTN_MMA");
    return !(m && !strcmp(m, "0")) && be != WK_BACKEND_ROCM && c->d % 32 == 0 && c->d <= 128;
}

/* The part of the error bound that rounding each weight p_j (in [0, 1], relative to the running
 * maximum) once to the dtype adds, as a root of a normalised MSE: the rounding changes p_j by at
 * most u p_j + s (u the dtype's unit roundoff, 2^-8 bf16 / 2^-11 f16; s: f16 half its smallest
 * subnormal, 2^-25, where p_j is below f16's normal range; bf16 2^-126, the kernel's exp2
 * flushing results below f32's normal range to zero); a later rescale by
 * 2^(m - m') <= 1 keeps that bound relative to the final weights, and the row sum l (of the
 * unrounded p, in f32) is at least 1 (the maximum's own weight). So output element i moves by
 * at most E_i = u A_i + s Lk max|v| / 1, A_i = sum_j p_j |v_j| / l (the attention of |v|,
 * computed here by the float64 reference), and the normalised error by sqrt(sum E_i^2 /
 * sum w_i^2) (triangle inequality: this adds to the root of the f32 path's bound). A NaN row
 * (nan_row) is left out, as in the comparison. Returns -1 on failure. */
static double p_round_bound(wk_dtype dt, const acase *c, const double *hq, const wk_layout *lq,
                            const double *hk, const wk_layout *lk, const double *hv,
                            const wk_layout *lv, float scale, const double *want, int nan_row,
                            const uint32_t *lens)
{
    const size_t nce = (size_t)(c->b * c->hkv * (c->lk + 3) * c->d) + (size_t)c->d;
    const size_t no = (size_t)(c->b * c->lq * c->hq * c->d);
    double *av = malloc(nce * sizeof(double)), *a = malloc(no * sizeof(double));
    double res = -1;
    if (!av || !a)
        goto out;
    double vmax = 0;
    for (size_t i = 0; i < nce; i++) { /* the NaN rows past a count are never read: 0 */
        av[i] = isnan(hv[i]) ? 0 : fabs(hv[i]);
        vmax = av[i] > vmax ? av[i] : vmax;
    }
    for (int64_t b = 0; b < (lens ? c->b : 1); b++) { /* with lens: entry b on its rows */
        wk_layout rq = *lq, rk = *lk, rv = *lv;
        if (lens) {
            rq.dims[0] = rk.dims[0] = rv.dims[0] = 1;
            rq.offset += b * lq->strides[0];
            rk.offset += b * lk->strides[0];
            rv.offset += b * lv->strides[0];
            rk.dims[2] = rv.dims[2] = lens[b];
        }
        const size_t ob = lens ? (size_t)(b * c->hq * c->lq * c->d) : 0;
        if (ref_decode_attention(a + ob, WK_DTYPE_F64, WK_DTYPE_F64, hq, &rq, hk, &rk, av, &rv,
                                 (double)scale, c->causal) != WK_OK)
            goto out;
    }
    const double u = unit_roundoff(dt), sub = ldexp(1.0, dt == WK_DTYPE_F16 ? -25 : -126);
    double num = 0, den = 0;
    for (size_t i = 0; i < no; i++) {
        if (nan_row && i < (size_t)c->d)
            continue;
        const double ei = u * a[i] + sub * (double)c->lk * vmax;
        num += ei * ei;
        den += want[i] * want[i];
    }
    res = sqrt(den > 0 ? num / den : num);
out:
    free(av);
    free(a);
    return res;
}

/* q: a permuted (B, Lq, Hq, D) tensor viewed as (B, Hq, Lq, D); k, v: (B, Hkv, Lmax, D) caches
 * (Lmax = lk + 3, k at offset 0, v at offset D) viewed as (B, Hkv, Lk, D). lens (B counts, or
 * NULL): through wk_decode_attention_lens, rows lens[b] .. Lk - 1 of k and v set to NaN, the
 * reference run per entry on its first lens[b] rows. */
static void ref_case_lens(wk_device *dev, wk_dtype qdt, wk_dtype kvdt, const acase *c,
                          int nan_row, const uint32_t *lens)
{
    const int64_t lmax = c->lk + 3;
    const size_t nqe = (size_t)(c->b * c->lq * c->hq * c->d);
    const size_t nce = (size_t)(c->b * c->hkv * lmax * c->d) + (size_t)c->d;
    const size_t no = nqe;
    double *hq = malloc(nqe * sizeof(double)), *hk = malloc(nce * sizeof(double));
    double *hv = malloc(nce * sizeof(double)), *got = malloc(no * sizeof(double));
    double *want = malloc(no * sizeof(double));
    wk_storage *q = NULL, *k = NULL, *v = NULL, *o = NULL, *ls = NULL;
    if (!TEST_CHECK(hq && hk && hv && got && want, "out of host memory"))
        goto out;
    for (size_t i = 0; i < nqe; i++)
        hq[i] = urand() * 2;
    for (size_t i = 0; i < nce; i++) {
        hk[i] = urand() * 2;
        hv[i] = urand();
    }
    if (nan_row)
        hq[3] = NAN; /* element 3 of (b 0, token 0, head 0) */
    for (int64_t b = 0; lens && b < c->b; b++) /* rows past the count: never to be read */
        for (int64_t h = 0; h < c->hkv; h++)
            for (int64_t j = lens[b]; j < c->lk; j++)
                for (int64_t e = 0; e < c->d; e++) {
                    const int64_t o0 = ((b * c->hkv + h) * lmax + j) * c->d + e;
                    hk[o0] = NAN;
                    hv[o0 + c->d] = NAN;
                }
    q = testlib_upload_f64(dev, qdt, hq, nqe);
    k = testlib_upload_f64(dev, kvdt, hk, nce);
    v = testlib_upload_f64(dev, kvdt, hv, nce);
    if (!q || !k || !v)
        goto out;
    /* the stored (rounded) values are what the reference reads */
    if (testlib_download_f64(hq, nqe, q) || testlib_download_f64(hk, nce, k) ||
        testlib_download_f64(hv, nce, v))
        goto out;
    wk_layout lq = {.rank = 4, .dims = {c->b, c->hq, c->lq, c->d},
                    .strides = {c->lq * c->hq * c->d, c->d, c->hq * c->d, 1}, .offset = 0};
    wk_layout lk = {.rank = 4, .dims = {c->b, c->hkv, c->lk, c->d},
                    .strides = {c->hkv * lmax * c->d, lmax * c->d, c->d, 1}, .offset = 0};
    wk_layout lv = lk;
    lv.offset = c->d;
    const float scale = (float)scale_sign / sqrtf((float)c->d);
    wk_status st;
    if (lens) {
        /* counts at elements 1, 3, .. of a u32 array: a strided, offset layout */
        uint32_t hl[2 * 8 + 1] = {0};
        for (int64_t b = 0; b < c->b; b++)
            hl[1 + 2 * b] = lens[b];
        const wk_layout ll = {.rank = 1, .dims = {c->b}, .strides = {2}, .offset = 1};
        ls = testlib_upload(dev, WK_DTYPE_U32, hl, (size_t)(2 * c->b + 1));
        if (!ls)
            goto out;
        st = wk_decode_attention_lens(&o, q, &lq, k, &lk, v, &lv, ls, &ll, scale, c->causal);
    } else {
        st = wk_decode_attention(&o, q, &lq, k, &lk, v, &lv, scale, c->causal);
    }
    if (!TEST_EQ_STATUS(st, WK_OK) || testlib_download_f64(got, no, o))
        goto out;
    /* the reference reads f64 copies of the stored values through the same layouts (with lens:
     * entry b alone, its first lens[b] rows) */
    for (int64_t b = 0; b < (lens ? c->b : 1); b++) {
        wk_layout rq = lq, rk = lk, rv = lv;
        if (lens) {
            rq.dims[0] = rk.dims[0] = rv.dims[0] = 1;
            rq.offset += b * lq.strides[0];
            rk.offset += b * lk.strides[0];
            rv.offset += b * lv.strides[0];
            rk.dims[2] = rv.dims[2] = lens[b];
        }
        const size_t ob = lens ? (size_t)(b * c->hq * c->lq * c->d) : 0;
        if (!TEST_EQ_STATUS(ref_decode_attention(want + ob, WK_DTYPE_F64, WK_DTYPE_F64, hq, &rq,
                                                 hk, &rk, hv, &rv, (double)scale, c->causal),
                            WK_OK))
            goto out;
    }
    double num = 0, den = 0;
    int nan_bad = 0;
    for (size_t i = 0; i < no; i++) {
        const int64_t row = (int64_t)(i / (size_t)c->d);
        const int in_nan_row = nan_row && row == 0;
        if (in_nan_row) {
            nan_bad |= !isnan(got[i]);
            continue;
        }
        const double w = want[i];
        num += (got[i] - w) * (got[i] - w);
        den += w * w;
        nan_bad |= isnan(got[i]);
    }
    const double u = unit_roundoff(qdt);
    double bound = u * u + 1e-8;
    if (takes_p1(dev, qdt, kvdt, c, lens)) {
        /* P rounded once to the dtype (docs/semantics.md): + (sqrt(sum E_i^2 / sum w_i^2))
         * on the root of the bound, E_i from A_i = sum_j p_j |v_j| / l, the reference run on |v| */
        const double pb =
            p_round_bound(qdt, c, hq, &lq, hk, &lk, hv, &lv, scale, want, nan_row, lens);
        if (!TEST_CHECK(pb >= 0, "p_round_bound failed"))
            goto out;
        bound = (sqrt(bound) + pb) * (sqrt(bound) + pb);
    }
    const double e = den > 0 ? num / den : num;
    TEST_CHECK(e <= bound && !nan_bad,
               "%s: q %s kv %s B=%lld Hq=%lld Hkv=%lld Lq=%lld Lk=%lld D=%lld causal=%d%s "
               "lens %lld,%lld: nmse %.3g (bound %.3g)%s", wk_device_name(dev), wk_dtype_name(qdt),
               wk_dtype_name(kvdt), (long long)c->b, (long long)c->hq, (long long)c->hkv,
               (long long)c->lq, (long long)c->lk, (long long)c->d, c->causal,
               nan_row ? " nan row" : "", lens ? (long long)lens[0] : -1LL,
               lens && c->b > 1 ? (long long)lens[1] : -1LL, e, bound,
               nan_bad ? " (NaN misplaced)" : "");
out:
    wk_storage_free(ls);
    wk_storage_free(o);
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
    free(hq);
    free(hk);
    free(hv);
    free(got);
    free(want);
}

static void ref_case(wk_device *dev, wk_dtype qdt, wk_dtype kvdt, const acase *c, int nan_row)
{
    ref_case_lens(dev, qdt, kvdt, c, nan_row, NULL);
}

/* wk_decode_attention_lens: B = 2, each shape with several pairs of counts */
static void lens_cases(wk_device *dev, wk_dtype qdt, wk_dtype kvdt)
{
    static const struct {
        acase c;
        uint32_t lens[3][2];
    } lc[] = {
        {{2, 8, 2, 1, 700, 128, 1}, {{1, 700}, {257, 300}, {700, 699}}},
        {{2, 8, 2, 4, 600, 64, 1}, {{4, 600}, {333, 5}, {600, 4}}},
        {{2, 4, 4, 4, 300, 80, 0}, {{4, 299}, {150, 300}, {37, 38}}},
        {{2, 8, 2, 1, 40, 7, 0}, {{1, 40}, {39, 2}, {20, 20}}},
    };
    for (size_t i = 0; i < sizeof lc / sizeof lc[0]; i++)
        for (int j = 0; j < 3; j++)
            ref_case_lens(dev, qdt, kvdt, &lc[i].c, 0, lc[i].lens[j]);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    /* WICK_TEST_QUICK=1 (the sanitizer runs of tools/device/attn.sh): fewer dtype pairs */
    const char *qe = getenv("WICK_TEST_QUICK");
    const int quick = qe && *qe && *qe != '0';
    /* WICK_TEST_PREFILL=1: the prefill cases alone (sanitizer runs of the flash variants) */
    const char *pe = getenv("WICK_TEST_PREFILL");
    const int prefill_only = pe && *pe && *pe != '0';
    static const wk_dtype dts[3] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16};
    static const acase cases[] = {
        {2, 8, 2, 1, 300, 128, 1}, {1, 8, 2, 3, 1100, 64, 1}, {2, 4, 4, 1, 5, 80, 0},
        {1, 8, 2, 5, 5, 7, 1},     {1, 2, 1, 1, 1, 128, 1},   {1, 8, 2, 2, 5000, 64, 1},
        {1, 4, 1, 1, 777, 128, 0},  {1, 4, 2, 2, 600, 256, 1},  {1, 2, 1, 1, 300, 200, 0},
        {2, 4, 2, 1, 100, 16, 1},
        /* 8 query heads on one kv head (8 queries per block, or 4 where a row has more than 32
         * chunks: f32 D 256), keys one past a tile and fewer than a tile */
        {1, 8, 1, 1, 1000, 128, 1}, {1, 8, 1, 1, 33, 256, 0},   {2, 16, 2, 1, 65, 64, 1},
        {1, 8, 1, 1, 3, 64, 0},
    };
    for (int di = 0; di < nd; di++) {
        wk_device *dev;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[di]), WK_OK))
            continue;
        if (!prefill_only)
            known_answers(dev);
        for (int a = 0; a < (prefill_only ? 0 : 3); a++)
            for (int b = 0; b < 3; b++)
                for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
                    if (!quick || a == b) /* quick: the 3 pairs of one dtype */
                        ref_case(dev, dts[a], dts[b], &cases[c], 0);
        if (!prefill_only) {
            ref_case(dev, WK_DTYPE_F32, WK_DTYPE_F16, &cases[0], 1);
            ref_case(dev, WK_DTYPE_F16, WK_DTYPE_F16, &cases[0], 1); /* the decode mma kernel */
        }
        /* prefill: many query tokens (f16/f16 and bf16/bf16 with D 64 or 128 take the GPU's
         * matrix-unit kernel, kernels/flash.cu: partial blocks of 128 rows, Lk > Lq, GQA) */
        static const acase pre[] = {
            {1, 4, 2, 64, 64, 64, 1},   {2, 4, 2, 200, 237, 128, 1}, {1, 2, 2, 130, 130, 64, 0},
            {1, 8, 2, 300, 300, 128, 1}, {1, 2, 1, 100, 1000, 64, 1},
        };
        static const wk_dtype pq[4] = {WK_DTYPE_F16, WK_DTYPE_BF16, WK_DTYPE_F32, WK_DTYPE_F16};
        static const wk_dtype pk[4] = {WK_DTYPE_F16, WK_DTYPE_BF16, WK_DTYPE_F32, WK_DTYPE_BF16};
        for (int a = 0; a < (quick ? 2 : 4); a++)
            for (size_t c = 0; c < sizeof pre / sizeof pre[0]; c++)
                ref_case(dev, pq[a], pk[a], &pre[c], 0);
        ref_case(dev, WK_DTYPE_BF16, WK_DTYPE_BF16, &pre[1], 1); /* a NaN row */
        scale_sign = -1; /* a negative scale (the matrix-unit kernel negates q instead) */
        ref_case(dev, WK_DTYPE_F16, WK_DTYPE_F16, &pre[1], 0);
        ref_case(dev, WK_DTYPE_BF16, WK_DTYPE_BF16, &pre[3], 0);
        if (!prefill_only) /* the decode kernels (attn_mma_* for bf16 D 128) */
            ref_case(dev, WK_DTYPE_BF16, WK_DTYPE_BF16, &cases[0], 0);
        scale_sign = 1;
        for (int a = 0; a < (prefill_only ? 0 : 3); a++)
            if (!quick || a != 1) /* quick: f32 and bf16 */
                lens_cases(dev, dts[a], dts[a]);
        if (!prefill_only)
            lens_cases(dev, WK_DTYPE_F32, WK_DTYPE_BF16);
        if (!quick && !prefill_only)
            lens_cases(dev, WK_DTYPE_F16, WK_DTYPE_F32);
        wk_device_close(dev);
    }
    return testlib_summary();
}
