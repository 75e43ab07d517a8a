/* test_image_kat.c: known answers for the pools and the upsampling ops on every device, values
 * worked out by hand: 2x2 max/avg pool of a 4x4, NaN in a max window, integer max pool,
 * non-square kernels and strides, a transposed (non-contiguous) input, nearest x2 and Candle's
 * floor(dst * in / out) rule for 1-D up- and downsampling, bilinear 2x2 -> 4x4 with
 * align_corners 1 and 0 (the second is PyTorch's documented result), a user scale factor, and
 * the reduced types. Ops a device does not support must say WK_ERR_NOT_SUPPORTED.
 * Run: ctest -R test_image_kat */
#include "testlib.h"
#include <math.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* 1 if st is fine to go on with; a device that lacks the op may answer NOT_SUPPORTED. */
static int op_ok(wk_status st, wk_op op, wk_dtype dt)
{
    if (st == WK_ERR_NOT_SUPPORTED && !wk_device_supports(g_dev, op, dt))
        return 0;
    TEST_CHECK(st == WK_OK, "%s: %s %s: %s (%s)", g_spec, wk_op_name(op), wk_dtype_name(dt),
               wk_status_string(st), wk_last_error());
    return st == WK_OK;
}

/* Downloads o (n f32 values) and compares with want within tol. */
static void check_f32(const wk_storage *o, const float *want, size_t n, double tol, const char *what)
{
    float got[64];
    if (!TEST_CHECK(o && wk_storage_len(o) == n, "%s: %s: output of %zu elements, want %zu", g_spec,
                    what, o ? wk_storage_len(o) : 0, n) ||
        testlib_download(got, n, o))
        return;
    for (size_t i = 0; i < n; i++)
        if (!TEST_NEAR(got[i], want[i], tol))
            printf("  (%s: %s element %zu)\n", g_spec, what, i);
}

static const float x44[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void test_pools(void)
{
    const int64_t d[4] = {1, 1, 4, 4};
    const wk_layout l = testlib_layout(4, d);
    wk_storage *x = testlib_upload(g_dev, WK_DTYPE_F32, x44, 16), *o = NULL;
    const wk_pool_params p22 = {{2, 2}, {2, 2}};
    if (op_ok(wk_max_pool2d(&o, x, &l, &p22), WK_OP_MAX_POOL2D, WK_DTYPE_F32)) {
        const float want[4] = {6, 8, 14, 16};
        check_f32(o, want, 4, 0, "max_pool2d 2x2/2");
    }
    wk_storage_free(o), o = NULL;
    if (op_ok(wk_avg_pool2d(&o, x, &l, &p22), WK_OP_AVG_POOL2D, WK_DTYPE_F32)) {
        const float want[4] = {3.5f, 5.5f, 11.5f, 13.5f};
        check_f32(o, want, 4, 0, "avg_pool2d 2x2/2");
    }
    wk_storage_free(o), o = NULL;
    /* kernel (3, 2), stride (1, 2): out 2x2; windows rows 0-2 / 1-3, cols 0-1 / 2-3 */
    const wk_pool_params p32 = {{3, 2}, {1, 2}};
    if (op_ok(wk_avg_pool2d(&o, x, &l, &p32), WK_OP_AVG_POOL2D, WK_DTYPE_F32)) {
        const float want[4] = {5.5f, 7.5f, 9.5f, 11.5f};
        check_f32(o, want, 4, 0, "avg_pool2d 3x2/(1,2)");
    }
    wk_storage_free(o), o = NULL;
    /* the same data read transposed (strides [.., 1, 4]): max of 2x2 windows of x^T */
    wk_layout t = l;
    t.strides[2] = 1;
    t.strides[3] = 4;
    if (op_ok(wk_max_pool2d(&o, x, &t, &p22), WK_OP_MAX_POOL2D, WK_DTYPE_F32)) {
        const float want[4] = {6, 14, 8, 16};
        check_f32(o, want, 4, 0, "max_pool2d of a transposed input");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(x);

    /* NaN propagates through max; -inf is an ordinary value */
    const float xn[8] = {1, NAN, 3, 4, -INFINITY, -INFINITY, 0, -1};
    const int64_t dn[4] = {1, 1, 2, 4};
    const wk_layout ln = testlib_layout(4, dn);
    x = testlib_upload(g_dev, WK_DTYPE_F32, xn, 8);
    if (op_ok(wk_max_pool2d(&o, x, &ln, &p22), WK_OP_MAX_POOL2D, WK_DTYPE_F32)) {
        const float want[2] = {NAN, 4};
        check_f32(o, want, 2, 0, "max_pool2d with NaN");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(x);

    /* integers: i32 max pool with negatives, exact */
    const int32_t xi[8] = {-5, -7, 100, -100, -9, -6, 2147483647, 0};
    x = testlib_upload(g_dev, WK_DTYPE_I32, xi, 8);
    if (op_ok(wk_max_pool2d(&o, x, &ln, &p22), WK_OP_MAX_POOL2D, WK_DTYPE_I32)) {
        int32_t got[2];
        if (!testlib_download(got, 2, o)) {
            TEST_EQ_INT(got[0], -5);
            TEST_EQ_INT(got[1], 2147483647);
        }
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(x);

    /* f16: avg of {1, 2, 3, 5} = 2.75 exactly (0x4180) */
    const uint16_t xh[4] = {0x3C00, 0x4000, 0x4200, 0x4500};
    const int64_t dh[4] = {1, 1, 2, 2};
    const wk_layout lh = testlib_layout(4, dh);
    x = testlib_upload(g_dev, WK_DTYPE_F16, xh, 4);
    if (op_ok(wk_avg_pool2d(&o, x, &lh, &p22), WK_OP_AVG_POOL2D, WK_DTYPE_F16)) {
        uint16_t got;
        if (!testlib_download(&got, 1, o))
            TEST_EQ_INT(got, 0x4180);
    }
    wk_storage_free(o);
    wk_storage_free(x);
}

static void test_nearest(void)
{
    const float x22[4] = {1, 2, 3, 4};
    const int64_t d[4] = {1, 1, 2, 2};
    const wk_layout l = testlib_layout(4, d);
    wk_storage *x = testlib_upload(g_dev, WK_DTYPE_F32, x22, 4), *o = NULL;
    if (op_ok(wk_upsample_nearest2d(&o, x, &l, 4, 4), WK_OP_UPSAMPLE_NEAREST2D, WK_DTYPE_F32)) {
        const float want[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
        check_f32(o, want, 16, 0, "upsample_nearest2d x2");
    }
    wk_storage_free(o), o = NULL;
    /* 2x2 -> 3x1: rows floor(d * 2/3) = 0, 0, 1; cols floor(0 * 2) = 0 */
    if (op_ok(wk_upsample_nearest2d(&o, x, &l, 3, 1), WK_OP_UPSAMPLE_NEAREST2D, WK_DTYPE_F32)) {
        const float want[3] = {1, 1, 3};
        check_f32(o, want, 3, 0, "upsample_nearest2d 2x2 -> 3x1");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(x);

    /* 1-D, u8, two channels: L = 3 -> 5: floor(d * 0.6) = 0 0 1 1 2; L = 5 -> 2: floor(d * 2.5) = 0 2 */
    const uint8_t xu[10] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
    x = testlib_upload(g_dev, WK_DTYPE_U8, xu, 10);
    const int64_t d3[3] = {1, 2, 3}, d5[3] = {1, 2, 5};
    const wk_layout l3 = testlib_layout(3, d3), l5 = testlib_layout(3, d5);
    if (op_ok(wk_upsample_nearest1d(&o, x, &l3, 5), WK_OP_UPSAMPLE_NEAREST1D, WK_DTYPE_U8)) {
        const uint8_t want[10] = {10, 10, 20, 20, 30, 40, 40, 50, 50, 60};
        uint8_t got[10];
        if (!testlib_download(got, 10, o))
            for (int i = 0; i < 10; i++)
                TEST_EQ_INT(got[i], want[i]);
    }
    wk_storage_free(o), o = NULL;
    if (op_ok(wk_upsample_nearest1d(&o, x, &l5, 2), WK_OP_UPSAMPLE_NEAREST1D, WK_DTYPE_U8)) {
        const uint8_t want[4] = {10, 30, 60, 80};
        uint8_t got[4];
        if (!testlib_download(got, 4, o))
            for (int i = 0; i < 4; i++)
                TEST_EQ_INT(got[i], want[i]);
    }
    wk_storage_free(o);
    wk_storage_free(x);
}

static void test_bilinear(void)
{
    const float x22[4] = {1, 2, 3, 4};
    const int64_t d[4] = {1, 1, 2, 2};
    const wk_layout l = testlib_layout(4, d);
    wk_storage *x = testlib_upload(g_dev, WK_DTYPE_F32, x22, 4), *o = NULL;
    const wk_op op = WK_OP_UPSAMPLE_BILINEAR2D;
    /* align_corners: source = dst / 3 on both axes; the surface is 1 + w + 2h */
    if (op_ok(wk_upsample_bilinear2d(&o, x, &l, 4, 4, 1, 0, 0), op, WK_DTYPE_F32)) {
        float want[16];
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < 4; w++)
                want[h * 4 + w] = (float)(1 + w / 3.0 + 2 * h / 3.0);
        check_f32(o, want, 16, 1e-6, "bilinear 2x2 -> 4x4 align_corners=1");
    }
    wk_storage_free(o), o = NULL;
    /* half-pixel: source = (dst + 0.5) / 2 - 0.5 = 0 (clamped), 0.25, 0.75, 1 (clamped) */
    if (op_ok(wk_upsample_bilinear2d(&o, x, &l, 4, 4, 0, 0, 0), op, WK_DTYPE_F32)) {
        const float want[16] = {1.0f, 1.25f, 1.75f, 2.0f, 1.5f, 1.75f, 2.25f, 2.5f,
                                2.5f, 2.75f, 3.25f, 3.5f, 3.0f, 3.25f, 3.75f, 4.0f};
        check_f32(o, want, 16, 1e-6, "bilinear 2x2 -> 4x4 align_corners=0");
    }
    wk_storage_free(o), o = NULL;
    /* 2x2 -> 1x1 with align_corners: out = 1 gives ratio 0, source 0 */
    if (op_ok(wk_upsample_bilinear2d(&o, x, &l, 1, 1, 1, 0, 0), op, WK_DTYPE_F32)) {
        const float want[1] = {1};
        check_f32(o, want, 1, 0, "bilinear 2x2 -> 1x1 align_corners=1");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(x);

    /* a linear row 0 3 6 (value = 3 * source), W 3 -> 4. No scale: ratio 3/4, sources 0 (clamped),
     * 0.625, 1.375, 2.125 -> 2 (last). Scale 1.5: ratio 1/1.5, sources 0, 0.5, 7/6, 11/6. */
    const float xr[3] = {0, 3, 6};
    const int64_t dr[4] = {1, 1, 1, 3};
    const wk_layout lr = testlib_layout(4, dr);
    x = testlib_upload(g_dev, WK_DTYPE_F32, xr, 3);
    if (op_ok(wk_upsample_bilinear2d(&o, x, &lr, 1, 4, 0, 0, 0), op, WK_DTYPE_F32)) {
        const float want[4] = {0, 1.875f, 4.125f, 6};
        check_f32(o, want, 4, 1e-6, "bilinear W 3 -> 4");
    }
    wk_storage_free(o), o = NULL;
    if (op_ok(wk_upsample_bilinear2d(&o, x, &lr, 1, 4, 0, 1.0, 1.5), op, WK_DTYPE_F32)) {
        const float want[4] = {0, 1.5f, 3.5f, 5.5f};
        check_f32(o, want, 4, 1e-5, "bilinear W 3 -> 4, scale 1.5");
    }
    wk_storage_free(o), o = NULL;
    /* W 3 -> 3 with scale 2: a dim with out = in is copied whatever the scale (PyTorch's CPU
     * shortcut; the formula would give sources 0, 0.25, 0.75) */
    if (op_ok(wk_upsample_bilinear2d(&o, x, &lr, 1, 3, 0, 0, 2.0), op, WK_DTYPE_F32)) {
        const float want[3] = {0, 3, 6};
        check_f32(o, want, 3, 0, "bilinear W 3 -> 3, scale 2");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(x);

    /* bf16: 2x2 {1, 2, 3, 4} -> 3x3 align_corners: the centre is 2.5 (0x4020) */
    const uint16_t xb[4] = {0x3F80, 0x4000, 0x4040, 0x4080};
    x = testlib_upload(g_dev, WK_DTYPE_BF16, xb, 4);
    if (op_ok(wk_upsample_bilinear2d(&o, x, &l, 3, 3, 1, 0, 0), op, WK_DTYPE_BF16)) {
        uint16_t got[9];
        if (!testlib_download(got, 9, o))
            TEST_EQ_INT(got[4], 0x4020);
    }
    wk_storage_free(o);
    wk_storage_free(x);
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
        test_pools();
        test_nearest();
        test_bilinear();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
