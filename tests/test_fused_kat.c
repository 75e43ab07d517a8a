/* test_fused_kat.c: known answers for candle-nn's fused ops on every device: softmax_last_dim
 * (the max subtraction, -inf masks, strided rows), rms_norm and layer_norm (hand-computed rows,
 * the two-pass variance), rope / rope_i / rope_thd on D = 4 with chosen angles (cos/sin 2-D and
 * batched 3-D), rows of 4096 (softmax rows masked with -inf over whole threads, constant
 * layer_norm rows), arg_sort_last_dim (ties stay in index order, NaN last ascending and first
 * descending, exact i64 keys, a long row), add_rms_norm / add_layer_norm (hand-computed rows; out
 * and sum equal to add then the norm bit for bit, on the fused kernels' shapes and others). A
 * device whose wk_device_supports() says no must
 * answer WK_ERR_NOT_SUPPORTED. Run: ctest -R test_fused_kat */
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* 1 if the op should run here; otherwise checks that st is WK_ERR_NOT_SUPPORTED. */
static int ran(wk_status st, wk_op op, wk_dtype dt)
{
    if (!wk_device_supports(g_dev, op, dt)) {
        TEST_CHECK(st == WK_ERR_NOT_SUPPORTED, "%s: %s %s unsupported, got %s", g_spec,
                   wk_op_name(op), wk_dtype_name(dt), wk_status_string(st));
        return 0;
    }
    return TEST_CHECK(st == WK_OK, "%s: %s %s: %s (%s)", g_spec, wk_op_name(op), wk_dtype_name(dt),
                      wk_status_string(st), wk_last_error());
}

/* Downloads n f32 values of s and compares them with want (tolerance tol). */
static void expect_f32(const wk_storage *s, const double *want, size_t n, double tol, const char *what)
{
    float got[64];
    if (testlib_download(got, n, s))
        return;
    for (size_t i = 0; i < n; i++)
        if (!TEST_NEAR(got[i], want[i], tol))
            printf("  (%s: %s element %zu)\n", g_spec, what, i);
}

static void expect_u32(const wk_storage *s, const uint32_t *want, size_t n, const char *what)
{
    uint32_t got[64];
    if (testlib_download(got, n, s))
        return;
    for (size_t i = 0; i < n; i++)
        if (!TEST_EQ_INT(got[i], want[i]))
            printf("  (%s: %s element %zu)\n", g_spec, what, i);
}

static void test_softmax(void)
{
    /* softmax([1, 2, 3]) = [e^-2, e^-1, 1] / (e^-2 + e^-1 + 1) */
    const double w123[3] = {0.09003057317038046, 0.24472847105479764, 0.6652409557748218};
    const float x[3] = {1, 2, 3};
    const wk_layout l3 = testlib_layout1(3);
    wk_storage *s = testlib_upload(g_dev, WK_DTYPE_F32, x, 3), *o = NULL;
    if (s && ran(wk_softmax_last_dim(&o, s, &l3), WK_OP_SOFTMAX_LAST_DIM, WK_DTYPE_F32))
        expect_f32(o, w123, 3, 1e-7, "softmax [1,2,3] f32");
    wk_storage_free(o), o = NULL;
    wk_storage_free(s);

    const double xd[3] = {1, 2, 3};
    s = testlib_upload(g_dev, WK_DTYPE_F64, xd, 3);
    if (s && ran(wk_softmax_last_dim(&o, s, &l3), WK_OP_SOFTMAX_LAST_DIM, WK_DTYPE_F64)) {
        double got[3];
        if (!testlib_download(got, 3, o))
            for (int i = 0; i < 3; i++)
                TEST_NEAR(got[i], w123[i], 1e-15);
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(s);

    /* bf16 [1, 2, 3]: computed in f32, rounded once: within half a bf16 ulp (2^-9 relative) */
    const uint16_t xb[3] = {wk_f32_to_bf16(1), wk_f32_to_bf16(2), wk_f32_to_bf16(3)};
    s = testlib_upload(g_dev, WK_DTYPE_BF16, xb, 3);
    if (s && ran(wk_softmax_last_dim(&o, s, &l3), WK_OP_SOFTMAX_LAST_DIM, WK_DTYPE_BF16)) {
        uint16_t got[3];
        if (!testlib_download(got, 3, o))
            for (int i = 0; i < 3; i++)
                TEST_EQ_INT(got[i], wk_f32_to_bf16((float)w123[i]));
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(s);

    /* a -inf mask gives exactly 0; 1000 would overflow exp without the max subtraction;
     * rows of [[1, -inf, 3], [1000, 1000, 1000]] */
    const float xm[6] = {1, -INFINITY, 3, 1000, 1000, 1000};
    const double wm[6] = {0.11920292202211755, 0, 0.8807970779778823, 1.0 / 3, 1.0 / 3, 1.0 / 3};
    const wk_layout l23 = testlib_layout2(2, 3);
    s = testlib_upload(g_dev, WK_DTYPE_F32, xm, 6);
    if (s && ran(wk_softmax_last_dim(&o, s, &l23), WK_OP_SOFTMAX_LAST_DIM, WK_DTYPE_F32))
        expect_f32(o, wm, 6, 1e-7, "softmax mask/large f32");
    wk_storage_free(o), o = NULL;

    /* transposed: storage [[1, -inf, 3], [1000, 1000, 1000]] read as (3, 2): rows [1, 1000],
     * [-inf, 1000], [3, 1000] */
    wk_layout lt;
    const double wt[6] = {0, 1, 0, 1, 0, 1};
    if (s && TEST_EQ_STATUS(wk_layout_transpose(&lt, &l23, 0, 1), WK_OK) &&
        ran(wk_softmax_last_dim(&o, s, &lt), WK_OP_SOFTMAX_LAST_DIM, WK_DTYPE_F32))
        expect_f32(o, wt, 6, 1e-30, "softmax transposed f32");
    wk_storage_free(o);
    wk_storage_free(s);
}

static void test_norms(void)
{
    /* rms_norm of [2, -2, 2, -2], eps 5: sqrt(mean(x^2) + eps) = sqrt(4 + 5) = 3;
     * alpha [1, 2, 3, 0.5] -> [2/3, -4/3, 2, -1/3] */
    const float x[4] = {2, -2, 2, -2}, a[4] = {1, 2, 3, 0.5f};
    const double w[4] = {2.0 / 3, -4.0 / 3, 2, -1.0 / 3};
    const wk_layout l4 = testlib_layout1(4);
    wk_storage *sx = testlib_upload(g_dev, WK_DTYPE_F32, x, 4);
    wk_storage *sa = testlib_upload(g_dev, WK_DTYPE_F32, a, 4), *o = NULL;
    if (sx && sa && ran(wk_rms_norm(&o, sx, &l4, sa, &l4, 5.0f), WK_OP_RMS_NORM, WK_DTYPE_F32))
        expect_f32(o, w, 4, 2e-7, "rms_norm f32");
    wk_storage_free(o), o = NULL;
    wk_storage_free(sx);
    wk_storage_free(sa);

    /* layer_norm of [1, 2, 3, 4] and of [1001, 1002, 1003, 1004] (rows of x (2, 4)):
     * mean 2.5 (1002.5), biased var 1.25, eps 2.75: sqrt(4) = 2, so (x - mean) / 2 =
     * [-0.75, -0.25, 0.25, 0.75]; alpha 2, beta [1, 0, 0, -1] -> [-0.5, -0.5, 0.5, 0.5].
     * Exact in f32 with two passes (a one-pass E[x^2] - mean^2 loses the second row). */
    const float xl[8] = {1, 2, 3, 4, 1001, 1002, 1003, 1004}, al[4] = {2, 2, 2, 2},
                bl[4] = {1, 0, 0, -1};
    const double wl[8] = {-0.5, -0.5, 0.5, 0.5, -0.5, -0.5, 0.5, 0.5};
    const wk_layout l24 = testlib_layout2(2, 4);
    sx = testlib_upload(g_dev, WK_DTYPE_F32, xl, 8);
    sa = testlib_upload(g_dev, WK_DTYPE_F32, al, 4);
    wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_F32, bl, 4);
    if (sx && sa && sb &&
        ran(wk_layer_norm(&o, sx, &l24, sa, &l4, sb, &l4, 2.75f), WK_OP_LAYER_NORM, WK_DTYPE_F32))
        expect_f32(o, wl, 8, 0, "layer_norm f32");
    wk_storage_free(o), o = NULL;
    /* alpha broadcast from one element (stride 0) */
    wk_layout lb0 = l4;
    lb0.strides[0] = 0;
    if (sx && sa && sb &&
        ran(wk_layer_norm(&o, sx, &l24, sa, &lb0, sb, &l4, 2.75f), WK_OP_LAYER_NORM, WK_DTYPE_F32))
        expect_f32(o, wl, 8, 0, "layer_norm f32 alpha stride 0");
    wk_storage_free(o);
    wk_storage_free(sx);
    wk_storage_free(sa);
    wk_storage_free(sb);
}

/* Rows of 4096 f32 (16 values per GPU thread, 256 threads per row): the per-thread partials of
 * the one-reduction softmax and layer_norm meet threads whose values are all -inf, a NaN in one
 * thread, equal maxima in two threads, constant rows. Every expected value is exact. */
static void test_long_rows(void)
{
    enum { D = 4096 };
    float *x = malloc(sizeof(float) * 3 * D), *got = malloc(sizeof(float) * 3 * D);
    float *a = malloc(sizeof(float) * D), *b = malloc(sizeof(float) * D);
    if (!TEST_CHECK(x && got && a && b, "malloc")) {
        free(x), free(got), free(a), free(b);
        return;
    }
    /* softmax: row 0 all -inf but x[1234] = -7 -> one 1, zeros; row 1 all -inf but -3 at 5 and
     * 4000 (two threads) -> 0.5 twice; row 2 finite with a NaN at 77 -> all NaN */
    for (int j = 0; j < 3 * D; j++)
        x[j] = j < 2 * D ? -INFINITY : (float)(j % 5) - 2;
    x[1234] = -7, x[D + 5] = -3, x[D + 4000] = -3, x[2 * D + 77] = NAN;
    const wk_layout l3 = testlib_layout2(3, D), l2 = testlib_layout2(2, D), lv = testlib_layout1(D);
    wk_storage *s = testlib_upload(g_dev, WK_DTYPE_F32, x, 3 * D), *o = NULL;
    if (s && ran(wk_softmax_last_dim(&o, s, &l3), WK_OP_SOFTMAX_LAST_DIM, WK_DTYPE_F32) &&
        !testlib_download(got, 3 * D, o)) {
        int bad = 0;
        for (int j = 0; j < 3 * D; j++) {
            const float want = j == 1234 ? 1.0f : j == D + 5 || j == D + 4000 ? 0.5f : 0.0f;
            bad += j < 2 * D ? got[j] != want : !isnan(got[j]);
        }
        TEST_CHECK(bad == 0, "%s: softmax long masked rows: %d wrong elements", g_spec, bad);
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(s);

    /* layer_norm: constant rows (0.1 and -3700) give beta exactly; row [2, -2, 2, -2, ...] with
     * eps 5: mean 0, var 4, sqrt(9) = 3, so out = +-(2/3) * 3 + beta */
    for (int j = 0; j < D; j++) {
        x[j] = 0.1f, x[D + j] = -3700.0f, x[2 * D + j] = j % 2 ? -2.0f : 2.0f;
        a[j] = 3.0f, b[j] = (float)(j % 16) * 0.25f - 2.0f;
    }
    wk_storage *sa = testlib_upload(g_dev, WK_DTYPE_F32, a, D);
    wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_F32, b, D);
    s = testlib_upload(g_dev, WK_DTYPE_F32, x, 3 * D);
    if (s && sa && sb &&
        ran(wk_layer_norm(&o, s, &l3, sa, &lv, sb, &lv, 5.0f), WK_OP_LAYER_NORM, WK_DTYPE_F32) &&
        !testlib_download(got, 3 * D, o)) {
        int bad = 0;
        for (int j = 0; j < 2 * D; j++)
            bad += got[j] != b[j % D];
        TEST_CHECK(bad == 0, "%s: layer_norm constant rows of %d: %d elements not beta", g_spec,
                   D, bad);
        for (int j = 0; j < D; j++)
            TEST_NEAR(got[2 * D + j], (j % 2 ? -2.0 : 2.0) + b[j], 1e-6);
    }
    wk_storage_free(o), o = NULL;
    /* rms_norm of the constant rows: x / sqrt(x^2 + eps) * 3 with eps 0 -> 3 * sign(x) */
    if (s && sa &&
        ran(wk_rms_norm(&o, s, &l2, sa, &lv, 0.0f), WK_OP_RMS_NORM, WK_DTYPE_F32) &&
        !testlib_download(got, 2 * D, o))
        for (int j = 0; j < 2 * D; j += 97)
            TEST_NEAR(got[j], j < D ? 3.0 : -3.0, 1e-5); /* sum of squares rounded */
    wk_storage_free(o);
    wk_storage_free(s);
    wk_storage_free(sa);
    wk_storage_free(sb);
    free(x), free(got), free(a), free(b);
}

/* bf16 rows of 4096 and 8192 (64 values per GPU thread in the norms' widest plan, 64 or 128
 * threads per row, several rows per block), exact answers: layer_norm of constant rows (0.1
 * and -3700 as bf16) is beta; of [2, -2, ...] with eps 5 is +-2 + beta (mean 0, var 4,
 * sqrt(9) = 3, times alpha 3); rms_norm of a constant row with eps 0 is 3 * sign(x) (the
 * f32 quotient within 1e-7 of +-1, far inside half a bf16 ulp). */
static void test_long_rows_bf16(void)
{
    for (int D = 4096; D <= 8192; D *= 2) {
        const size_t n = (size_t)3 * D;
        uint16_t *x = malloc(2 * n), *got = malloc(2 * n), *a = malloc(2 * (size_t)D),
                 *b = malloc(2 * (size_t)D);
        if (!TEST_CHECK(x && got && a && b, "malloc")) {
            free(x), free(got), free(a), free(b);
            return;
        }
        for (int j = 0; j < D; j++) {
            x[j] = wk_f32_to_bf16(0.1f), x[D + j] = wk_f32_to_bf16(-3700.0f);
            x[2 * D + j] = wk_f32_to_bf16(j % 2 ? -2.0f : 2.0f);
            a[j] = wk_f32_to_bf16(3.0f), b[j] = wk_f32_to_bf16((float)(j % 16) * 0.25f - 2.0f);
        }
        const wk_layout l3 = testlib_layout2(3, D), l2 = testlib_layout2(2, D);
        const wk_layout lv = testlib_layout1(D);
        wk_storage *s = testlib_upload(g_dev, WK_DTYPE_BF16, x, n), *o = NULL;
        wk_storage *sa = testlib_upload(g_dev, WK_DTYPE_BF16, a, (size_t)D);
        wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_BF16, b, (size_t)D);
        if (s && sa && sb &&
            ran(wk_layer_norm(&o, s, &l3, sa, &lv, sb, &lv, 5.0f), WK_OP_LAYER_NORM,
                WK_DTYPE_BF16) &&
            !testlib_download(got, n, o)) {
            int bad = 0;
            for (int j = 0; j < 3 * D; j++) {
                const float bj = (float)(j % 16) * 0.25f - 2.0f;
                const float want = j < 2 * D ? bj : (j % 2 ? -2.0f : 2.0f) + bj;
                bad += got[j] != wk_f32_to_bf16(want);
            }
            TEST_CHECK(bad == 0, "%s: layer_norm bf16 rows of %d: %d wrong elements", g_spec, D,
                       bad);
        }
        wk_storage_free(o), o = NULL;
        if (s && sa && ran(wk_rms_norm(&o, s, &l2, sa, &lv, 0.0f), WK_OP_RMS_NORM, WK_DTYPE_BF16) &&
            !testlib_download(got, 2 * (size_t)D, o)) {
            int bad = 0;
            for (int j = 0; j < 2 * D; j++)
                bad += got[j] != wk_f32_to_bf16(j < D ? 3.0f : -3.0f);
            TEST_CHECK(bad == 0, "%s: rms_norm bf16 rows of %d: %d wrong elements", g_spec, D,
                       bad);
        }
        wk_storage_free(o);
        wk_storage_free(s);
        wk_storage_free(sa);
        wk_storage_free(sb);
        free(x), free(got), free(a), free(b);
    }
}

/* One rope call on f32 data. */
static void rope_case(wk_op op, const float *x, const int64_t *xd, const float *c, const float *s,
                      int32_t cr, const int64_t *cd, const double *want, const char *what)
{
    const wk_layout lx = testlib_layout(4, xd), lc = testlib_layout(cr, cd);
    const size_t n = (size_t)(xd[0] * xd[1] * xd[2] * xd[3]);
    const size_t nc = (size_t)(cr == 3 ? cd[0] * cd[1] * cd[2] : cd[0] * cd[1]);
    wk_storage *sx = testlib_upload(g_dev, WK_DTYPE_F32, x, n);
    wk_storage *sc = testlib_upload(g_dev, WK_DTYPE_F32, c, nc);
    wk_storage *ss = testlib_upload(g_dev, WK_DTYPE_F32, s, nc), *o = NULL;
    if (sx && sc && ss) {
        wk_status st = op == WK_OP_ROPE     ? wk_rope(&o, sx, &lx, sc, &lc, ss, &lc)
                       : op == WK_OP_ROPE_I ? wk_rope_i(&o, sx, &lx, sc, &lc, ss, &lc)
                                            : wk_rope_thd(&o, sx, &lx, sc, &lc, ss, &lc);
        if (ran(st, op, WK_DTYPE_F32))
            expect_f32(o, want, n, 1e-6, what);
    }
    wk_storage_free(o);
    wk_storage_free(sx);
    wk_storage_free(sc);
    wk_storage_free(ss);
}

static void test_rope(void)
{
    /* D = 4, two positions. Position 0: pair 0 turned by the angle with cos 0.6, sin 0.8, pair 1
     * by 90 degrees (cos 0, sin 1); position 1: the identity (cos 1, sin 0).
     * rope (halves) pairs (x0, x2), (x1, x3):  [1, 2, 3, 4] ->
     *   out0 = 1*0.6 - 3*0.8 = -1.8, out2 = 1*0.8 + 3*0.6 = 2.6, out1 = -4, out3 = 2.
     * rope_i pairs (x0, x1), (x2, x3):        [1, 2, 3, 4] ->
     *   out0 = 1*0.6 - 2*0.8 = -1, out1 = 1*0.8 + 2*0.6 = 2, out2 = -4, out3 = 3. */
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const float c[4] = {0.6f, 0, 1, 1}, s[4] = {0.8f, 1, 0, 0};
    const double w_half[8] = {-1.8, -4, 2.6, 2, 5, 6, 7, 8};
    const double w_inter[8] = {-1, 2, -4, 3, 5, 6, 7, 8};
    const int64_t cd[2] = {2, 2};
    const int64_t bhtd[4] = {1, 1, 2, 4}; /* B, H, T = 2, D */
    rope_case(WK_OP_ROPE, x, bhtd, c, s, 2, cd, w_half, "rope (1,1,2,4)");
    rope_case(WK_OP_ROPE_I, x, bhtd, c, s, 2, cd, w_inter, "rope_i (1,1,2,4)");
    const int64_t bthd[4] = {1, 2, 1, 4}; /* B, T = 2, H, D */
    rope_case(WK_OP_ROPE_THD, x, bthd, c, s, 2, cd, w_half, "rope_thd (1,2,1,4)");
    /* rope_thd (1, 1, 2, 4): two heads at position 0, both turned */
    const int64_t b1h2[4] = {1, 1, 2, 4};
    const double w_heads[8] = {-1.8, -4, 2.6, 2, 5 * 0.6 - 7 * 0.8, -8, 5 * 0.8 + 7 * 0.6, 6};
    rope_case(WK_OP_ROPE_THD, x, b1h2, c, s, 2, cd, w_heads, "rope_thd (1,1,2,4)");
    /* batched cos/sin (B = 2, T = 1, D/2): batch 0 turned, batch 1 the identity */
    const int64_t b2[4] = {2, 1, 1, 4}, cd3[3] = {2, 1, 2};
    const float c3[4] = {0.6f, 0, 1, 1}, s3[4] = {0.8f, 1, 0, 0};
    rope_case(WK_OP_ROPE, x, b2, c3, s3, 3, cd3, w_half, "rope batched cos");
    rope_case(WK_OP_ROPE_I, x, b2, c3, s3, 3, cd3, w_inter, "rope_i batched cos");
}

static void test_arg_sort(void)
{
    /* [3, 1, NaN, 1, -0, 0, 2]: -0 == 0 and 1 == 1 are ties (index order kept) */
    const float x[7] = {3, 1, NAN, 1, -0.0f, 0, 2};
    const uint32_t asc[7] = {4, 5, 1, 3, 6, 0, 2}, desc[7] = {2, 0, 6, 1, 3, 4, 5};
    const wk_layout l7 = testlib_layout1(7);
    wk_storage *s = testlib_upload(g_dev, WK_DTYPE_F32, x, 7), *o = NULL;
    if (s && ran(wk_arg_sort_last_dim(&o, s, &l7, 1), WK_OP_ARG_SORT_LAST_DIM, WK_DTYPE_F32))
        expect_u32(o, asc, 7, "arg_sort ascending f32");
    wk_storage_free(o), o = NULL;
    if (s && ran(wk_arg_sort_last_dim(&o, s, &l7, 0), WK_OP_ARG_SORT_LAST_DIM, WK_DTYPE_F32))
        expect_u32(o, desc, 7, "arg_sort descending f32");
    wk_storage_free(o), o = NULL;
    wk_storage_free(s);

    /* i64 keys beyond 2^53 compare exactly */
    const int64_t xi[4] = {INT64_MAX, INT64_MAX - 1, -5, INT64_MIN};
    const uint32_t wi[4] = {3, 2, 1, 0};
    const wk_layout l4 = testlib_layout1(4);
    s = testlib_upload(g_dev, WK_DTYPE_I64, xi, 4);
    if (s && ran(wk_arg_sort_last_dim(&o, s, &l4, 1), WK_OP_ARG_SORT_LAST_DIM, WK_DTYPE_I64))
        expect_u32(o, wi, 4, "arg_sort i64");
    wk_storage_free(o), o = NULL;
    wk_storage_free(s);

    /* u8 rows of x (2, 3) read transposed (3, 2): rows [5, 5], [7, 1], [0, 9] */
    const uint8_t xu[6] = {5, 7, 0, 5, 1, 9};
    const uint32_t wu[6] = {0, 1, 0, 1, 1, 0}; /* descending; the tie keeps 0, 1 */
    const wk_layout l23 = testlib_layout2(2, 3);
    wk_layout lt;
    s = testlib_upload(g_dev, WK_DTYPE_U8, xu, 6);
    if (s && TEST_EQ_STATUS(wk_layout_transpose(&lt, &l23, 0, 1), WK_OK) &&
        ran(wk_arg_sort_last_dim(&o, s, &lt, 0), WK_OP_ARG_SORT_LAST_DIM, WK_DTYPE_U8))
        expect_u32(o, wu, 6, "arg_sort u8 transposed");
    wk_storage_free(o), o = NULL;
    wk_storage_free(s);

    /* a long row (the merge passes): x[j] = (j * 37) mod 1000 is a permutation of 0..999, so
     * ascending, position v holds the j with j * 37 = v (mod 1000), i.e. j = v * 973 mod 1000
     * (37 * 973 = 36001 = 1 mod 1000) */
    enum { N = 1000 };
    static int32_t xl[N];
    static uint32_t got[N];
    for (int j = 0; j < N; j++)
        xl[j] = (j * 37) % N;
    const wk_layout ln = testlib_layout1(N);
    s = testlib_upload(g_dev, WK_DTYPE_I32, xl, N);
    if (s && ran(wk_arg_sort_last_dim(&o, s, &ln, 1), WK_OP_ARG_SORT_LAST_DIM, WK_DTYPE_I32) &&
        !testlib_download(got, N, o)) {
        int bad = 0;
        for (int v = 0; v < N; v++)
            bad += got[v] != (uint32_t)((v * 973) % N);
        TEST_CHECK(bad == 0, "%s: arg_sort of a 1000-element permutation: %d wrong", g_spec, bad);
    }
    wk_storage_free(o);
    wk_storage_free(s);
}

/* got (rows x d) is, per row, a permutation that puts x (f32) in stable order: each step goes to
 * a later key, or to an equal key at a higher index (NaN largest ascending, first descending). */
static int sorted_stably(const uint32_t *got, const float *x, int64_t rows, int64_t d, int asc,
                         unsigned char *seen)
{
    for (int64_t r = 0; r < rows; r++) {
        const uint32_t *g = got + r * d;
        const float *xr = x + r * d;
        memset(seen, 0, (size_t)d);
        for (int64_t p = 0; p < d; p++) {
            if (g[p] >= d || seen[g[p]])
                return 0;
            seen[g[p]] = 1;
            if (p == 0)
                continue;
            const float a = xr[g[p - 1]], b = xr[g[p]];
            const int an = isnan(a), bn = isnan(b);
            /* rank: ascending NaN is last, descending NaN is first */
            int order; /* -1: a before b strictly, 0: tie, 1: out of order */
            if (an || bn)
                order = an && bn ? 0 : (asc ? (bn ? -1 : 1) : (an ? -1 : 1));
            else
                order = a == b ? 0 : ((asc ? a < b : a > b) ? -1 : 1);
            if (order > 0 || (order == 0 && g[p - 1] > g[p]))
                return 0;
        }
    }
    return 1;
}

/* Long rows (the CPU sorts a few long rows with every thread): 1 x 100000 and 3 x 40000 f32
 * rows of values from a small set (many ties) with NaN, -0 and +0, both directions. */
static void test_arg_sort_long(void)
{
    enum { N = 120000 };
    static float x[N];
    static uint32_t got[N];
    static unsigned char seen[N];
    static const float set[8] = {0.0f, -0.0f, 1.5f, -2.0f, NAN, 3.0f, 1.5f, -INFINITY};
    uint32_t st = 12345;
    for (int i = 0; i < N; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = set[(st >> 24) & 7];
    }
    const int64_t shapes[2][2] = {{1, 100000}, {3, 40000}};
    wk_storage *s = testlib_upload(g_dev, WK_DTYPE_F32, x, N);
    for (int k = 0; s && k < 2; k++)
        for (int asc = 0; asc < 2; asc++) {
            const wk_layout l = testlib_layout2(shapes[k][0], shapes[k][1]);
            const size_t n = (size_t)(shapes[k][0] * shapes[k][1]);
            wk_storage *o = NULL;
            if (ran(wk_arg_sort_last_dim(&o, s, &l, asc), WK_OP_ARG_SORT_LAST_DIM, WK_DTYPE_F32) &&
                !testlib_download(got, n, o))
                TEST_CHECK(sorted_stably(got, x, shapes[k][0], shapes[k][1], asc, seen),
                           "%s: arg_sort of %lld x %lld (%s) is not a stable sort", g_spec,
                           (long long)shapes[k][0], (long long)shapes[k][1], asc ? "asc" : "desc");
            wk_storage_free(o);
        }
    wk_storage_free(s);
}

/* Bits of n elements of dt in s (n * size bytes into buf). */
static int bits_of(void *buf, const wk_storage *s, size_t bytes)
{
    return wk_storage_to_host(buf, bytes / wk_dtype_size(wk_storage_dtype(s)), s) != WK_OK;
}

/* add_rms_norm / add_layer_norm of (M, D) rows of dt against wk_binary ADD then the norm: sum and
 * out must be the same bits (docs/semantics.md). tr: x read transposed from a (D, M) storage
 * (the general path). Values (i * 37 mod 101) / 16 - 3 and their like for r, alpha, beta. */
static void add_norm_same_bits(wk_dtype dt, int64_t M, int64_t D, int layer, int tr)
{
    const size_t n = (size_t)(M * D), esz = wk_dtype_size(dt);
    float *xf = malloc(n * 4), *rf = malloc(n * 4), *af = malloc((size_t)D * 4),
          *bf = malloc((size_t)D * 4);
    unsigned char *g1 = malloc(n * esz), *g2 = malloc(n * esz),
                  *g3 = malloc(n * esz), *g4 = malloc(n * esz);
    wk_storage *sx = NULL, *sr = NULL, *sa = NULL, *sb = NULL, *xf32 = NULL, *rf32 = NULL;
    wk_storage *sum = NULL, *out = NULL, *csum = NULL, *cout = NULL, *t = NULL;
    if (!xf || !rf || !af || !bf || !g1 || !g2 || !g3 || !g4)
        goto done;
    for (size_t i = 0; i < n; i++) {
        xf[i] = (float)((i * 37) % 101) / 16.0f - 3.0f;
        rf[i] = (float)((i * 53) % 97) / 32.0f - 1.5f;
    }
    for (int64_t j = 0; j < D; j++) {
        af[j] = (float)((j * 11) % 13) / 8.0f - 0.5f;
        bf[j] = (float)((j * 7) % 5) / 4.0f - 0.5f;
    }
    const wk_layout lf = testlib_layout1((int64_t)n), lv = testlib_layout1(D);
    const wk_layout lm = testlib_layout2(M, D);
    xf32 = testlib_upload(g_dev, WK_DTYPE_F32, xf, n);
    rf32 = testlib_upload(g_dev, WK_DTYPE_F32, rf, n);
    /* the operands in dt (converted by wick: the same values on every device) */
    if (!xf32 || !rf32 || wk_to_dtype(&sx, xf32, &lf, dt) || wk_to_dtype(&sr, rf32, &lf, dt))
        goto done;
    wk_storage_free(xf32), xf32 = testlib_upload(g_dev, WK_DTYPE_F32, af, (size_t)D);
    wk_storage_free(rf32), rf32 = testlib_upload(g_dev, WK_DTYPE_F32, bf, (size_t)D);
    if (!xf32 || !rf32 || wk_to_dtype(&sa, xf32, &lv, dt) || wk_to_dtype(&sb, rf32, &lv, dt))
        goto done;
    wk_layout lx = lm;
    if (tr) { /* x (M, D) read from a (D, M) contiguous buffer */
        lx.strides[0] = 1;
        lx.strides[1] = M;
    }
    const char *what = layer ? "add_layer_norm" : "add_rms_norm";
    const wk_op op = layer ? WK_OP_ADD_LAYER_NORM : WK_OP_ADD_RMS_NORM;
    const float eps = 1e-5f;
    wk_status st = layer ? wk_add_layer_norm(&sum, &out, sx, &lx, sr, &lm, sa, &lv, sb, &lv, eps)
                         : wk_add_rms_norm(&sum, &out, sx, &lx, sr, &lm, sa, &lv, eps);
    if (!ran(st, op, dt))
        goto done;
    if (!TEST_EQ_STATUS(wk_binary(&csum, WK_OP_ADD, sx, &lx, sr, &lm), WK_OK) ||
        !TEST_EQ_STATUS(layer ? wk_layer_norm(&cout, csum, &lm, sa, &lv, sb, &lv, eps)
                              : wk_rms_norm(&cout, csum, &lm, sa, &lv, eps), WK_OK))
        goto done;
    if (bits_of(g1, sum, n * esz) || bits_of(g2, csum, n * esz) || bits_of(g3, out, n * esz) ||
        bits_of(g4, cout, n * esz))
        goto done;
    TEST_CHECK(memcmp(g1, g2, n * esz) == 0, "%s: %s %s (%lld, %lld)%s: sum differs from add",
               g_spec, what, wk_dtype_name(dt), (long long)M, (long long)D, tr ? " x^T" : "");
    TEST_CHECK(memcmp(g3, g4, n * esz) == 0, "%s: %s %s (%lld, %lld)%s: out differs from the norm "
               "of add", g_spec, what, wk_dtype_name(dt), (long long)M, (long long)D,
               tr ? " x^T" : "");
    /* sum may be NULL: out alone, the same bits */
    if (TEST_EQ_STATUS(layer ? wk_add_layer_norm(NULL, &t, sx, &lx, sr, &lm, sa, &lv, sb, &lv, eps)
                             : wk_add_rms_norm(NULL, &t, sx, &lx, sr, &lm, sa, &lv, eps), WK_OK) &&
        !bits_of(g1, t, n * esz))
        TEST_CHECK(memcmp(g1, g4, n * esz) == 0, "%s: %s %s without sum differs", g_spec, what,
                   wk_dtype_name(dt));
done:
    wk_storage_free(t);
    wk_storage_free(sx), wk_storage_free(sr), wk_storage_free(sa), wk_storage_free(sb);
    wk_storage_free(xf32), wk_storage_free(rf32), wk_storage_free(sum), wk_storage_free(out);
    wk_storage_free(csum), wk_storage_free(cout);
    free(xf), free(rf), free(af), free(bf), free(g1), free(g2), free(g3), free(g4);
}

static void test_add_norm(void)
{
    /* x + r = [2, -2, 2, -2], then test_norms's rms_norm row: [2/3, -4/3, 2, -1/3] */
    const float x[8] = {1, -3, 1, -3, 0, 1, 2, 3}, r[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const float a[4] = {1, 2, 3, 0.5f}, a2[4] = {2, 2, 2, 2}, b2[4] = {1, 0, 0, -1};
    const double ws[4] = {2, -2, 2, -2}, w[4] = {2.0 / 3, -4.0 / 3, 2, -1.0 / 3};
    const wk_layout l4 = testlib_layout1(4);
    wk_storage *sx = testlib_upload(g_dev, WK_DTYPE_F32, x, 8);
    wk_storage *sr = testlib_upload(g_dev, WK_DTYPE_F32, r, 8);
    wk_storage *sa = testlib_upload(g_dev, WK_DTYPE_F32, a, 4), *sum = NULL, *o = NULL;
    if (sx && sr && sa &&
        ran(wk_add_rms_norm(&sum, &o, sx, &l4, sr, &l4, sa, &l4, 5.0f), WK_OP_ADD_RMS_NORM,
            WK_DTYPE_F32)) {
        expect_f32(sum, ws, 4, 0, "add_rms_norm sum");
        expect_f32(o, w, 4, 2e-7, "add_rms_norm f32");
    }
    wk_storage_free(sum), sum = NULL;
    wk_storage_free(o), o = NULL;
    wk_storage_free(sa);
    /* x + r = [1, 2, 3, 4] (a view of x from element 4): test_norms's layer_norm row with
     * mean 2.5, var 1.25, eps 2.75 -> [-0.5, -0.5, 0.5, 0.5] */
    wk_layout lo = l4;
    lo.offset = 4;
    const double wl[4] = {-0.5, -0.5, 0.5, 0.5}, wsl[4] = {1, 2, 3, 4};
    sa = testlib_upload(g_dev, WK_DTYPE_F32, a2, 4);
    wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_F32, b2, 4);
    if (sx && sr && sa && sb &&
        ran(wk_add_layer_norm(&sum, &o, sx, &lo, sr, &l4, sa, &l4, sb, &l4, 2.75f),
            WK_OP_ADD_LAYER_NORM, WK_DTYPE_F32)) {
        expect_f32(sum, wsl, 4, 0, "add_layer_norm sum");
        expect_f32(o, wl, 4, 0, "add_layer_norm f32");
    }
    wk_storage_free(sum);
    wk_storage_free(o);
    wk_storage_free(sx), wk_storage_free(sr), wk_storage_free(sa), wk_storage_free(sb);

    /* the same bits as add then the norm: GPU register-plan shapes (the fused kernel), a row
     * the 16-bit types cannot take in 16-byte units, a transposed x (the general path) */
    static const wk_dtype dts[3] = {WK_DTYPE_F32, WK_DTYPE_BF16, WK_DTYPE_F16};
    for (int layer = 0; layer < 2; layer++)
        for (int k = 0; k < 3; k++) {
            add_norm_same_bits(dts[k], 3, 4096, layer, 0);
            add_norm_same_bits(dts[k], 5, 768, layer, 0);
            add_norm_same_bits(dts[k], 2, 100, layer, 0);
            add_norm_same_bits(dts[k], 4, 64, layer, 1);
        }
    add_norm_same_bits(WK_DTYPE_F64, 3, 256, 0, 0);
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
        test_softmax();
        test_norms();
        test_long_rows();
        test_long_rows_bf16();
        test_add_norm();
        test_rope();
        test_arg_sort();
        test_arg_sort_long();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
