/* test_bad_image.c: every error path of the pooling and upsampling ops (docs/semantics.md,
 * "Pooling and upsampling"), each with its exact status, a message naming the op, *out left
 * NULL and the input untouched, on every device. A device that lacks an op may answer
 * WK_ERR_NOT_SUPPORTED only for calls that get past the argument checks.
 * Run: ctest -R test_bad_image */
#include "testlib.h"
#include <math.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;
static wk_storage *g_x, *g_xi; /* f32 (1,1,4,4) and i32 (1,1,4,4) */

/* Checks a failed call: status want (or NOT_SUPPORTED where the device lacks op/dt and the
 * check is past the argument checks: `late`), out NULL, message naming the op. */
static void expect(wk_status got, wk_status want, wk_storage *out, wk_op op, wk_dtype dt, int late,
                   const char *what)
{
    int ok = got == want;
    if (!ok && late && got == WK_ERR_NOT_SUPPORTED && !wk_device_supports(g_dev, op, dt))
        ok = 1;
    TEST_CHECK(ok, "%s: %s: got %s, want %s (%s)", g_spec, what, wk_status_string(got),
               wk_status_string(want), wk_last_error());
    TEST_CHECK(out == NULL, "%s: %s: a failed call returned an output", g_spec, what);
    if (got != WK_OK && want != WK_ERR_NOT_SUPPORTED)
        TEST_CHECK(strstr(wk_last_error(), wk_op_name(op)) != NULL, "%s: %s: message '%s' does not name %s",
                   g_spec, what, wk_last_error(), wk_op_name(op));
    wk_storage_free(out);
}

static void check_untouched(void)
{
    float x[16];
    if (!testlib_download(x, 16, g_x))
        for (int i = 0; i < 16; i++)
            TEST_NEAR(x[i], (double)i, 0);
}

static void test_pool(void)
{
    const int64_t d4[4] = {1, 1, 4, 4}, d3[3] = {1, 4, 4};
    const wk_layout l = testlib_layout(4, d4), l3 = testlib_layout(3, d3);
    const wk_pool_params ok = {{2, 2}, {2, 2}};
    wk_storage *o = NULL;
    const wk_op ops[2] = {WK_OP_AVG_POOL2D, WK_OP_MAX_POOL2D};
    for (int k = 0; k < 2; k++) {
        const wk_op op = ops[k];
#define POOL(out, x, lx, p) (op == WK_OP_AVG_POOL2D ? wk_avg_pool2d(out, x, lx, p) : wk_max_pool2d(out, x, lx, p))
        expect(POOL(NULL, g_x, &l, &ok), WK_ERR_INVALID_ARGUMENT, NULL, op, WK_DTYPE_F32, 0, "NULL out");
        o = NULL;
        expect(POOL(&o, NULL, &l, &ok), WK_ERR_INVALID_ARGUMENT, o, op, WK_DTYPE_F32, 0, "NULL x");
        o = NULL;
        expect(POOL(&o, g_x, NULL, &ok), WK_ERR_INVALID_ARGUMENT, o, op, WK_DTYPE_F32, 0, "NULL layout");
        o = NULL;
        expect(POOL(&o, g_x, &l, NULL), WK_ERR_INVALID_ARGUMENT, o, op, WK_DTYPE_F32, 0, "NULL params");
        o = NULL;
        expect(POOL(&o, g_x, &l3, &ok), WK_ERR_SHAPE, o, op, WK_DTYPE_F32, 0, "rank 3 input");
        o = NULL;
        const wk_pool_params k0 = {{0, 2}, {1, 1}}, s0 = {{2, 2}, {1, 0}}, kneg = {{2, -1}, {1, 1}};
        expect(POOL(&o, g_x, &l, &k0), WK_ERR_INVALID_ARGUMENT, o, op, WK_DTYPE_F32, 0, "kernel 0");
        o = NULL;
        expect(POOL(&o, g_x, &l, &kneg), WK_ERR_INVALID_ARGUMENT, o, op, WK_DTYPE_F32, 0, "kernel -1");
        o = NULL;
        expect(POOL(&o, g_x, &l, &s0), WK_ERR_INVALID_ARGUMENT, o, op, WK_DTYPE_F32, 0, "stride 0");
        o = NULL;
        const wk_pool_params big = {{5, 2}, {1, 1}};
        expect(POOL(&o, g_x, &l, &big), WK_ERR_SHAPE, o, op, WK_DTYPE_F32, 0, "kernel larger than H");
        o = NULL;
        wk_layout out_of = l;
        out_of.offset = 1; /* the last element is past the 16 of the storage */
        expect(POOL(&o, g_x, &out_of, &ok), WK_ERR_LAYOUT, o, op, WK_DTYPE_F32, 0, "layout outside storage");
        o = NULL;
        wk_layout neg = l;
        neg.strides[2] = -4;
        expect(POOL(&o, g_x, &neg, &ok), WK_ERR_LAYOUT, o, op, WK_DTYPE_F32, 0, "negative stride");
        o = NULL;
#undef POOL
    }
    /* avg of integers is not defined; max of integers is */
    expect(wk_avg_pool2d(&o, g_xi, &l, &ok), WK_ERR_DTYPE, o, WK_OP_AVG_POOL2D, WK_DTYPE_I32, 0, "avg_pool2d on i32");
    o = NULL;
    wk_status st = wk_max_pool2d(&o, g_xi, &l, &ok);
    const int sup = wk_device_supports(g_dev, WK_OP_MAX_POOL2D, WK_DTYPE_I32);
    TEST_CHECK(st == (sup ? WK_OK : WK_ERR_NOT_SUPPORTED), "%s: max_pool2d on i32: %s", g_spec,
               wk_status_string(st));
    wk_storage_free(o);
    check_untouched();
}

static void test_upsample(void)
{
    const int64_t d4[4] = {1, 1, 4, 4}, d3[3] = {1, 4, 4}, dz[4] = {1, 1, 0, 4};
    const wk_layout l = testlib_layout(4, d4), l3 = testlib_layout(3, d3), lz = testlib_layout(4, dz);
    const wk_op n1 = WK_OP_UPSAMPLE_NEAREST1D, n2 = WK_OP_UPSAMPLE_NEAREST2D, bl = WK_OP_UPSAMPLE_BILINEAR2D;
    const wk_dtype f = WK_DTYPE_F32;
    wk_storage *o = NULL;
    expect(wk_upsample_nearest1d(NULL, g_x, &l3, 8), WK_ERR_INVALID_ARGUMENT, NULL, n1, f, 0, "NULL out");
    expect(wk_upsample_nearest1d(&o, g_x, &l, 8), WK_ERR_SHAPE, o, n1, f, 0, "nearest1d of rank 4");
    o = NULL;
    expect(wk_upsample_nearest1d(&o, g_x, &l3, -1), WK_ERR_INVALID_ARGUMENT, o, n1, f, 0, "negative l_out");
    o = NULL;
    expect(wk_upsample_nearest2d(&o, NULL, &l, 8, 8), WK_ERR_INVALID_ARGUMENT, o, n2, f, 0, "NULL x");
    o = NULL;
    expect(wk_upsample_nearest2d(&o, g_x, &l3, 8, 8), WK_ERR_SHAPE, o, n2, f, 0, "nearest2d of rank 3");
    o = NULL;
    expect(wk_upsample_nearest2d(&o, g_x, &l, 8, -2), WK_ERR_INVALID_ARGUMENT, o, n2, f, 0, "negative w_out");
    o = NULL;
    expect(wk_upsample_nearest2d(&o, g_x, &lz, 3, 8), WK_ERR_SHAPE, o, n2, f, 0, "H = 0 to h_out 3");
    o = NULL;
    expect(wk_upsample_bilinear2d(&o, g_x, &l3, 8, 8, 0, 0, 0), WK_ERR_SHAPE, o, bl, f, 0, "bilinear of rank 3");
    o = NULL;
    expect(wk_upsample_bilinear2d(&o, g_x, &l, -8, 8, 0, 0, 0), WK_ERR_INVALID_ARGUMENT, o, bl, f, 0, "negative h_out");
    o = NULL;
    expect(wk_upsample_bilinear2d(&o, g_x, &lz, 8, 8, 1, 0, 0), WK_ERR_SHAPE, o, bl, f, 0, "H = 0 to h_out 8");
    o = NULL;
    expect(wk_upsample_bilinear2d(&o, g_x, &l, 8, 8, 2, 0, 0), WK_ERR_INVALID_ARGUMENT, o, bl, f, 0, "align_corners 2");
    o = NULL;
    expect(wk_upsample_bilinear2d(&o, g_x, &l, 8, 8, 0, NAN, 2), WK_ERR_INVALID_ARGUMENT, o, bl, f, 0, "NaN scale");
    o = NULL;
    expect(wk_upsample_bilinear2d(&o, g_x, &l, 8, 8, 0, 2, INFINITY), WK_ERR_INVALID_ARGUMENT, o, bl, f, 0, "inf scale");
    o = NULL;
    expect(wk_upsample_bilinear2d(&o, g_xi, &l, 8, 8, 0, 0, 0), WK_ERR_DTYPE, o, bl, WK_DTYPE_I32, 0, "bilinear on i32");
    o = NULL;
    wk_layout out_of = l;
    out_of.dims[3] = 5;
    expect(wk_upsample_nearest2d(&o, g_x, &out_of, 8, 8), WK_ERR_LAYOUT, o, n2, f, 0, "layout outside storage");
    o = NULL;
    /* an output element count past 2^63 */
    expect(wk_upsample_nearest2d(&o, g_x, &l, (int64_t)1 << 32, (int64_t)1 << 32), WK_ERR_OVERFLOW, o, n2, f, 1,
           "output count overflow");
    check_untouched();
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    float x[16];
    int32_t xi[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)i;
        xi[i] = i;
    }
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        g_x = testlib_upload(g_dev, WK_DTYPE_F32, x, 16);
        g_xi = testlib_upload(g_dev, WK_DTYPE_I32, xi, 16);
        if (g_x && g_xi) {
            test_pool();
            test_upsample();
        }
        wk_storage_free(g_x);
        wk_storage_free(g_xi);
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
