/* test_bad_linalg.c: every error path of wk_matmul and the four convolutions (docs/semantics.md
 * "Matmul" and "Convolutions"), on every device: each bad call must return the exact status,
 * leave a message naming the op in wk_last_error(), and leave *out NULL. Shape and parameter
 * checks come before the capability check, so the statuses are the same on every backend.
 * Run: ctest -R test_bad_linalg */
#include "testlib.h"
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;
static wk_storage *g_f32, *g_f64, *g_i32; /* 64 elements each */

/* Checks one bad call: status, message naming `op`, *out left NULL. */
static void expect(wk_status got, wk_status want, wk_storage *out, const char *op, const char *what)
{
    if (!TEST_CHECK(got == want, "%s: %s: %s returned %s, want %s (%s)", g_spec, op, what,
                    wk_status_string(got), wk_status_string(want), wk_last_error()))
        return;
    TEST_CHECK(strstr(wk_last_error(), op) != NULL, "%s: %s: message '%s' does not name the op",
               g_spec, what, wk_last_error());
    TEST_CHECK(out == NULL, "%s: %s: *out was set on failure", g_spec, what);
}

static wk_layout lay(int32_t rank, int64_t a, int64_t b, int64_t c, int64_t d)
{
    const int64_t dims[4] = {a, b, c, d};
    return testlib_layout(rank, dims);
}

static void test_matmul(void)
{
    wk_storage *o = NULL;
    const wk_layout a23 = lay(2, 2, 3, 0, 0), b32 = lay(2, 3, 2, 0, 0), b42 = lay(2, 4, 2, 0, 0);
    const wk_layout v3 = lay(1, 3, 0, 0, 0);
    const wk_layout ba = lay(3, 2, 2, 3, 0), bb = lay(3, 3, 3, 2, 0);
    expect(wk_matmul(NULL, g_f32, &a23, g_f32, &b32), WK_ERR_INVALID_ARGUMENT, o, "matmul", "NULL out");
    expect(wk_matmul(&o, NULL, &a23, g_f32, &b32), WK_ERR_INVALID_ARGUMENT, o, "matmul", "NULL a");
    expect(wk_matmul(&o, g_f32, &a23, g_f32, NULL), WK_ERR_INVALID_ARGUMENT, o, "matmul", "NULL layout");
    expect(wk_matmul(&o, g_f32, &a23, g_f64, &b32), WK_ERR_DTYPE, o, "matmul", "f32 @ f64");
    expect(wk_matmul(&o, g_i32, &a23, g_i32, &b32), WK_ERR_DTYPE, o, "matmul", "i32");
    expect(wk_matmul(&o, g_f32, &v3, g_f32, &b32), WK_ERR_SHAPE, o, "matmul", "rank 1");
    expect(wk_matmul(&o, g_f32, &a23, g_f32, &b42), WK_ERR_SHAPE, o, "matmul", "k mismatch");
    expect(wk_matmul(&o, g_f32, &ba, g_f32, &b32), WK_ERR_SHAPE, o, "matmul", "ranks differ");
    expect(wk_matmul(&o, g_f32, &ba, g_f32, &bb), WK_ERR_SHAPE, o, "matmul", "batch dims differ");
    const wk_layout big = lay(2, 9, 9, 0, 0); /* 81 elements > 64 */
    expect(wk_matmul(&o, g_f32, &big, g_f32, &big), WK_ERR_LAYOUT, o, "matmul", "outside storage");
}

typedef wk_status (*conv_fn)(wk_storage **, const wk_storage *, const wk_layout *,
                             const wk_storage *, const wk_layout *, const wk_conv_params *);

static wk_conv_params ok_params(void)
{
    return (wk_conv_params){.stride = {1, 1}, .padding = {0, 0}, .dilation = {1, 1},
                            .output_padding = {0, 0}, .groups = 1};
}

/* The checks shared by the four ops: x and w are valid for ok_params(). */
static void conv_common(conv_fn f, const char *op, int transposed, const wk_layout *lx,
                        const wk_layout *lw, const wk_layout *lbad_rank)
{
    wk_storage *o = NULL;
    wk_conv_params p = ok_params();
    expect(f(NULL, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "NULL out");
    expect(f(&o, g_f32, lx, g_f32, lw, NULL), WK_ERR_INVALID_ARGUMENT, o, op, "NULL params");
    expect(f(&o, NULL, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "NULL input");
    expect(f(&o, g_f32, lx, g_f64, lw, &p), WK_ERR_DTYPE, o, op, "f32 * f64");
    expect(f(&o, g_i32, lx, g_i32, lw, &p), WK_ERR_DTYPE, o, op, "i32");
    p.stride[0] = 0;
    expect(f(&o, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "stride 0");
    p = ok_params();
    p.dilation[0] = 0;
    expect(f(&o, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "dilation 0");
    p = ok_params();
    p.padding[0] = -1;
    expect(f(&o, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "padding -1");
    p = ok_params();
    p.groups = 0;
    expect(f(&o, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "groups 0");
    p = ok_params();
    p.groups = 3; /* C_in = 2 */
    expect(f(&o, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "groups not dividing C_in");
    if (transposed) {
        p = ok_params();
        p.output_padding[0] = 1; /* must be < max(stride, dilation) = 1 */
        expect(f(&o, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "output_padding 1");
        p.output_padding[0] = -1;
        expect(f(&o, g_f32, lx, g_f32, lw, &p), WK_ERR_INVALID_ARGUMENT, o, op, "output_padding -1");
    }
    p = ok_params();
    expect(f(&o, g_f32, lbad_rank, g_f32, lw, &p), WK_ERR_SHAPE, o, op, "input rank");
    expect(f(&o, g_f32, lx, g_f32, lbad_rank, &p), WK_ERR_SHAPE, o, op, "kernel rank");
}

static void test_conv(void)
{
    wk_storage *o = NULL;
    wk_conv_params p = ok_params();
    /* 1-D: x (1, 2, 5); conv w (4, 2, 3); transposed w (2, 3, 3) */
    const wk_layout x1 = lay(3, 1, 2, 5, 0), w1 = lay(3, 4, 2, 3, 0), wt1 = lay(3, 2, 3, 3, 0);
    const wk_layout r2 = lay(2, 2, 5, 0, 0), r4 = lay(4, 1, 2, 3, 3);
    conv_common(wk_conv1d, "conv1d", 0, &x1, &w1, &r4);
    conv_common(wk_conv_transpose1d, "conv_transpose1d", 1, &x1, &wt1, &r2);
    const wk_layout wbadc = lay(3, 4, 3, 3, 0); /* 3 channels per group, input has 2 */
    expect(wk_conv1d(&o, g_f32, &x1, g_f32, &wbadc, &p), WK_ERR_SHAPE, o, "conv1d", "kernel channels");
    const wk_layout wbig = lay(3, 4, 2, 6, 0); /* k = 6 > L = 5 */
    expect(wk_conv1d(&o, g_f32, &x1, g_f32, &wbig, &p), WK_ERR_SHAPE, o, "conv1d", "kernel > input");
    p.dilation[0] = 3; /* extent 3*(3-1)+1 = 7 > 5 */
    expect(wk_conv1d(&o, g_f32, &x1, g_f32, &w1, &p), WK_ERR_SHAPE, o, "conv1d", "dilated kernel > input");
    p = ok_params();
    p.padding[0] = 1; /* padded input 7 >= 7: fits */
    p.dilation[0] = 3;
    wk_status st = wk_conv1d(&o, g_f32, &x1, g_f32, &w1, &p);
    TEST_CHECK(st == WK_OK || st == WK_ERR_NOT_SUPPORTED, "%s: conv1d padded dilated: %s", g_spec,
               wk_status_string(st));
    wk_storage_free(o);
    o = NULL;
    p = ok_params();
    p.groups = 2; /* C_in 2 divisible, C_out 3 not */
    const wk_layout w3 = lay(3, 3, 1, 3, 0);
    expect(wk_conv1d(&o, g_f32, &x1, g_f32, &w3, &p), WK_ERR_INVALID_ARGUMENT, o, "conv1d",
           "groups not dividing C_out");
    p = ok_params();
    const wk_layout wt_badc = lay(3, 3, 3, 3, 0); /* transposed kernel dim 0 must be C_in = 2 */
    expect(wk_conv_transpose1d(&o, g_f32, &x1, g_f32, &wt_badc, &p), WK_ERR_SHAPE, o,
           "conv_transpose1d", "kernel C_in");
    p.padding[0] = 4; /* (5-1)*1 - 8 + 2 + 1 = -1 */
    expect(wk_conv_transpose1d(&o, g_f32, &x1, g_f32, &wt1, &p), WK_ERR_SHAPE, o,
           "conv_transpose1d", "output size <= 0");

    /* 2-D: x (1, 2, 3, 3); conv w (2, 2, 2, 2); transposed w (2, 1, 2, 2) */
    const wk_layout x2 = lay(4, 1, 2, 3, 3), w2 = lay(4, 2, 2, 2, 2), wt2 = lay(4, 2, 1, 2, 2);
    const wk_layout r3 = lay(3, 2, 3, 3, 0);
    conv_common(wk_conv2d, "conv2d", 0, &x2, &w2, &r3);
    conv_common(wk_conv_transpose2d, "conv_transpose2d", 1, &x2, &wt2, &r3);
    p = ok_params();
    p.stride[1] = 0; /* the W parameters are checked too */
    expect(wk_conv2d(&o, g_f32, &x2, g_f32, &w2, &p), WK_ERR_INVALID_ARGUMENT, o, "conv2d", "stride W 0");
    p = ok_params();
    const wk_layout w2big = lay(4, 2, 2, 2, 4); /* KW 4 > W 3 */
    expect(wk_conv2d(&o, g_f32, &x2, g_f32, &w2big, &p), WK_ERR_SHAPE, o, "conv2d", "kernel W > input W");
    p.stride[1] = 2, p.output_padding[1] = 2; /* must be < max(2, 1) */
    expect(wk_conv_transpose2d(&o, g_f32, &x2, g_f32, &wt2, &p), WK_ERR_INVALID_ARGUMENT, o,
           "conv_transpose2d", "output_padding W 2");
    const wk_layout x2big = lay(4, 1, 2, 6, 6); /* 72 elements > 64 */
    p = ok_params();
    expect(wk_conv2d(&o, g_f32, &x2big, g_f32, &w2, &p), WK_ERR_LAYOUT, o, "conv2d", "outside storage");
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
        float f[64] = {0};
        double d[64] = {0};
        int32_t k[64] = {0};
        g_f32 = testlib_upload(g_dev, WK_DTYPE_F32, f, 64);
        g_f64 = testlib_upload(g_dev, WK_DTYPE_F64, d, 64);
        g_i32 = testlib_upload(g_dev, WK_DTYPE_I32, k, 64);
        if (g_f32 && g_f64 && g_i32) {
            test_matmul();
            test_conv();
        }
        wk_storage_free(g_f32);
        wk_storage_free(g_f64);
        wk_storage_free(g_i32);
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
