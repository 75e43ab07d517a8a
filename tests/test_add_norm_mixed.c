/* test_add_norm_mixed.c: wk_add_rms_norm, wk_add_layer_norm and wk_add_rms_norm_act with f32 x
 * and a 16-bit r (f16, bf16), on every device, against the same op on r converted to f32 first
 * (wk_to_dtype, exact): sum, out and the activations must be the same bytes. Shapes cover the GPU's
 * fused kernel (contiguous rows, D a multiple of 4, every register plan: D 256 to 8192, 1 to 512
 * rows) and its fallbacks (D not a multiple of 4; r a strided view; layer_norm; the activations).
 * Bad dtypes: r f16 under f64 x, r f32 under bf16 x and r i32 under f32 x fail with WK_ERR_DTYPE
 * and no output. Run: ctest -R test_add_norm_mixed */
#include "testlib.h"
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* Deterministic values in [-2, 2). */
static void fill(double *v, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 7u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = ((s >> 8) & 0xFFFF) / 16384.0 - 2.0;
    }
}

/* Whether storages a and b (n elements of dt) hold the same bytes. */
static int same(const wk_storage *a, const wk_storage *b, size_t n, size_t es)
{
    unsigned char *x = malloc(n * es + 1), *y = malloc(n * es + 1);
    const int ok = x && y && !testlib_download(x, n, a) && !testlib_download(y, n, b) &&
                   !memcmp(x, y, n * es);
    free(x), free(y);
    return ok;
}

/* op 0: add_rms_norm, 1: add_layer_norm, 2: add_rms_norm_act. r: (rows, d) of rdt, read with
 * row stride rs >= d (a strided view when rs > d). */
static void check_case(int op, wk_dtype rdt, int64_t rows, int64_t d, int64_t rs)
{
    const size_t n = (size_t)(rows * d), nr = (size_t)(rows * rs);
    double *xv = malloc(n * sizeof *xv), *rv = malloc(nr * sizeof *rv);
    double *av = malloc(2 * (size_t)d * sizeof *av);
    if (!xv || !rv || !av) {
        free(xv), free(rv), free(av);
        TEST_CHECK(0, "out of memory");
        return;
    }
    fill(xv, n, 1), fill(rv, nr, 2), fill(av, (size_t)(2 * d), 3);
    wk_storage *x = testlib_upload_f64(g_dev, WK_DTYPE_F32, xv, n);
    wk_storage *r = testlib_upload_f64(g_dev, rdt, rv, nr);
    wk_storage *a = testlib_upload_f64(g_dev, WK_DTYPE_F32, av, (size_t)d);
    wk_storage *b = testlib_upload_f64(g_dev, WK_DTYPE_F32, av + d, (size_t)d);
    free(xv), free(rv), free(av);
    const wk_layout lx = testlib_layout2(rows, d), la = testlib_layout1(d);
    wk_layout lr = lx;
    lr.strides[0] = rs;
    wk_storage *r32 = NULL, *s1 = NULL, *o1 = NULL, *q1 = NULL, *s2 = NULL, *o2 = NULL, *q2 = NULL;
    const float eps = 1e-5f;
    int good = x && r && a && b && TEST_EQ_STATUS(wk_to_dtype(&r32, r, &lr, WK_DTYPE_F32), WK_OK);
    if (good && op == 0)
        good = TEST_EQ_STATUS(wk_add_rms_norm(&s1, &o1, x, &lx, r, &lr, a, &la, eps), WK_OK) &&
               TEST_EQ_STATUS(wk_add_rms_norm(&s2, &o2, x, &lx, r32, &lx, a, &la, eps), WK_OK);
    else if (good && op == 1)
        good = TEST_EQ_STATUS(wk_add_layer_norm(&s1, &o1, x, &lx, r, &lr, a, &la, b, &la, eps),
                              WK_OK) &&
               TEST_EQ_STATUS(wk_add_layer_norm(&s2, &o2, x, &lx, r32, &lx, a, &la, b, &la, eps),
                              WK_OK);
    else if (good)
        good = TEST_EQ_STATUS(wk_add_rms_norm_act(&s1, &o1, &q1, x, &lx, r, &lr, a, &la, eps),
                              WK_OK) &&
               TEST_EQ_STATUS(wk_add_rms_norm_act(&s2, &o2, &q2, x, &lx, r32, &lx, a, &la, eps),
                              WK_OK);
    static const char *const names[3] = {"add_rms_norm", "add_layer_norm", "add_rms_norm_act"};
    if (good) {
        TEST_CHECK(same(s1, s2, n, 4), "%s: %s r %s (%lld, %lld), row stride %lld: sum differs "
                   "from r widened first", g_spec, names[op], wk_dtype_name(rdt), (long long)rows,
                   (long long)d, (long long)rs);
        TEST_CHECK(same(o1, o2, n, 4), "%s: %s r %s (%lld, %lld), row stride %lld: out differs "
                   "from r widened first", g_spec, names[op], wk_dtype_name(rdt), (long long)rows,
                   (long long)d, (long long)rs);
        if (op == 2) {
            const size_t an = wk_storage_len(q1);
            TEST_CHECK(an == wk_storage_len(q2) && same(q1, q2, an, 1),
                       "%s: %s r %s (%lld, %lld): activations differ from r widened first", g_spec,
                       names[op], wk_dtype_name(rdt), (long long)rows, (long long)d);
        }
    }
    wk_storage *all[11] = {x, r, a, b, r32, s1, o1, q1, s2, o2, q2};
    for (int i = 0; i < 11; i++)
        wk_storage_free(all[i]);
}

/* Dtypes the op rejects: no output, WK_ERR_DTYPE. */
static void check_bad_dtypes(void)
{
    const double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const wk_layout l = testlib_layout2(2, 4), la = testlib_layout1(4);
    wk_storage *x64 = testlib_upload_f64(g_dev, WK_DTYPE_F64, v, 8);
    wk_storage *xb = testlib_upload_f64(g_dev, WK_DTYPE_BF16, v, 8);
    wk_storage *x32 = testlib_upload_f64(g_dev, WK_DTYPE_F32, v, 8);
    wk_storage *r16 = testlib_upload_f64(g_dev, WK_DTYPE_F16, v, 8);
    const int32_t iv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    wk_storage *ri = testlib_upload(g_dev, WK_DTYPE_I32, iv, 8);
    wk_storage *s = NULL, *o = NULL;
    if (x64 && xb && x32 && r16 && ri) {
        TEST_EQ_STATUS(wk_add_rms_norm(&s, &o, x64, &l, r16, &l, x64, &la, 1e-5f), WK_ERR_DTYPE);
        TEST_EQ_STATUS(wk_add_rms_norm(&s, &o, xb, &l, x32, &l, xb, &la, 1e-5f), WK_ERR_DTYPE);
        TEST_EQ_STATUS(wk_add_rms_norm(&s, &o, x32, &l, ri, &l, x32, &la, 1e-5f), WK_ERR_DTYPE);
        TEST_CHECK(!s && !o, "%s: an output after a failed call", g_spec);
    } else {
        TEST_CHECK(0, "%s: uploads", g_spec);
    }
    wk_storage_free(x64), wk_storage_free(xb), wk_storage_free(x32), wk_storage_free(r16);
    wk_storage_free(ri), wk_storage_free(s), wk_storage_free(o);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    static const int64_t shapes[][3] = {
        {1, 4096, 4096}, {3, 4096, 4096}, {64, 4096, 4096}, {512, 1024, 1024}, {5, 256, 256},
        {2, 8192, 8192}, {4, 2048, 2048}, {7, 100, 100},  {3, 1022, 1022},   {6, 512, 520}};
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        for (int r = 0; r < 2; r++)
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
                for (int op = 0; op < 3; op++)
                    if (op == 0 || (shapes[k][0] <= 64 && (op == 1 || shapes[k][1] % 32 == 0)))
                        check_case(op, r ? WK_DTYPE_BF16 : WK_DTYPE_F16, shapes[k][0],
                                   shapes[k][1], shapes[k][2]);
        check_bad_dtypes();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
