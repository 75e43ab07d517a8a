/* test_conv_kat.c: known answers for the convolutions on every device, worked by hand: a 1-D
 * difference kernel with and without padding, stride with dilation, groups, a transposed 1-D
 * conv (stride, padding, output_padding), a 2-D box filter, a transposed 2-D conv, a
 * non-contiguous input, and the reduced dtypes. Where wk_device_supports() says no, the call
 * must fail with WK_ERR_NOT_SUPPORTED.
 * Run: ctest -R test_conv_kat */
#include "testlib.h"
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* Runs op on x (lx) and w (lw) in dtype dt; compares the output with want (n values, exact). */
static void check(const char *what, wk_op op, wk_dtype dt, const double *x, size_t nx,
                  const wk_layout *lx, const double *w, size_t nw, const wk_layout *lw,
                  const wk_conv_params *p, const double *want, size_t n)
{
    wk_storage *sx = testlib_upload_f64(g_dev, dt, x, nx), *sw = testlib_upload_f64(g_dev, dt, w, nw), *so = NULL;
    if (sx && sw) {
        wk_status st;
        switch (op) {
        case WK_OP_CONV1D: st = wk_conv1d(&so, sx, lx, sw, lw, p); break;
        case WK_OP_CONV_TRANSPOSE1D: st = wk_conv_transpose1d(&so, sx, lx, sw, lw, p); break;
        case WK_OP_CONV2D: st = wk_conv2d(&so, sx, lx, sw, lw, p); break;
        default: st = wk_conv_transpose2d(&so, sx, lx, sw, lw, p); break;
        }
        if (!wk_device_supports(g_dev, op, dt)) {
            TEST_CHECK(st == WK_ERR_NOT_SUPPORTED, "%s: %s %s unsupported but returned %s", g_spec,
                       what, wk_dtype_name(dt), wk_status_string(st));
        } else if (TEST_CHECK(st == WK_OK, "%s: %s %s: %s (%s)", g_spec, what, wk_dtype_name(dt),
                              wk_status_string(st), wk_last_error()) &&
                   TEST_CHECK(wk_storage_len(so) == n, "%s: %s output has %zu elements, want %zu",
                              g_spec, what, wk_storage_len(so), n)) {
            double got[128];
            if (!testlib_download_f64(got, n, so))
                for (size_t i = 0; i < n; i++)
                    if (!TEST_NEAR(got[i], want[i], 0))
                        printf("  (%s: %s %s element %zu)\n", g_spec, what, wk_dtype_name(dt), i);
        }
    }
    wk_storage_free(so);
    wk_storage_free(sw);
    wk_storage_free(sx);
}

static wk_layout lay3(int64_t a, int64_t b, int64_t c)
{
    const int64_t d[3] = {a, b, c};
    return testlib_layout(3, d);
}

static wk_layout lay4(int64_t a, int64_t b, int64_t c, int64_t e)
{
    const int64_t d[4] = {a, b, c, e};
    return testlib_layout(4, d);
}

static wk_conv_params params(int32_t s, int32_t p, int32_t d, int32_t op, int32_t g)
{
    return (wk_conv_params){.stride = {s, s}, .padding = {p, p}, .dilation = {d, d},
                            .output_padding = {op, op}, .groups = g};
}

static void test_conv1d(void)
{
    /* x = [1 2 3 4 5], w = [1 0 -1]: out[i] = x[i] - x[i+2] */
    const double x[] = {1, 2, 3, 4, 5}, w[] = {1, 0, -1};
    const wk_layout lx = lay3(1, 1, 5), lw = lay3(1, 1, 3);
    wk_conv_params p = params(1, 0, 1, 0, 1);
    const double want[] = {-2, -2, -2};
    const wk_dtype dts[] = {WK_DTYPE_F32, WK_DTYPE_F64, WK_DTYPE_F16, WK_DTYPE_BF16};
    for (int i = 0; i < 4; i++)
        check("conv1d", WK_OP_CONV1D, dts[i], x, 5, &lx, w, 3, &lw, &p, want, 3);
    /* padding 1: zeros at both ends: [0-2, 1-3, 2-4, 3-5, 4-0] */
    p = params(1, 1, 1, 0, 1);
    const double want_p[] = {-2, -2, -2, -2, 4};
    check("conv1d padding 1", WK_OP_CONV1D, WK_DTYPE_F32, x, 5, &lx, w, 3, &lw, &p, want_p, 5);
    /* x = 1..7, w = [1 1 1], stride 2, dilation 2: taps at i, i+2, i+4 for i = 0, 2 */
    const double x7[] = {1, 2, 3, 4, 5, 6, 7}, w1[] = {1, 1, 1};
    const wk_layout lx7 = lay3(1, 1, 7);
    p = params(2, 0, 2, 0, 1);
    const double want_sd[] = {1 + 3 + 5, 3 + 5 + 7};
    check("conv1d stride 2 dilation 2", WK_OP_CONV1D, WK_DTYPE_F32, x7, 7, &lx7, w1, 3, &lw, &p,
          want_sd, 2);
    /* groups 2: channel 0 = [1 2 3] * [1 1], channel 1 = [4 5 6] * [1 -1] */
    const double xg[] = {1, 2, 3, 4, 5, 6}, wg[] = {1, 1, 1, -1};
    const wk_layout lxg = lay3(1, 2, 3), lwg = lay3(2, 1, 2);
    p = params(1, 0, 1, 0, 2);
    const double want_g[] = {3, 5, -1, -1};
    check("conv1d groups 2", WK_OP_CONV1D, WK_DTYPE_F32, xg, 6, &lxg, wg, 4, &lwg, &p, want_g, 4);
    /* the same input read through a non-contiguous layout: storage is [channel][time]
     * transposed to [time][channel] = [1 4 2 5 3 6], read with strides (6, 1, 2) */
    const double xt[] = {1, 4, 2, 5, 3, 6};
    wk_layout lxt = lay3(1, 2, 3);
    lxt.strides[1] = 1, lxt.strides[2] = 2;
    check("conv1d groups 2, strided input", WK_OP_CONV1D, WK_DTYPE_F32, xt, 6, &lxt, wg, 4, &lwg,
          &p, want_g, 4);
}

static void test_conv_transpose1d(void)
{
    /* x = [1 2], w = [1 2 3], stride 2: x0*w lands at 0..2, x1*w at 2..4:
     * [1 2 3 0 0] + [0 0 2 4 6] = [1 2 5 4 6] (length (2-1)*2 + 2 + 1 = 5) */
    const double x[] = {1, 2}, w[] = {1, 2, 3};
    const wk_layout lx = lay3(1, 1, 2), lw = lay3(1, 1, 3);
    wk_conv_params p = params(2, 0, 1, 0, 1);
    const double want[] = {1, 2, 5, 4, 6};
    check("conv_transpose1d stride 2", WK_OP_CONV_TRANSPOSE1D, WK_DTYPE_F32, x, 2, &lx, w, 3, &lw,
          &p, want, 5);
    check("conv_transpose1d stride 2", WK_OP_CONV_TRANSPOSE1D, WK_DTYPE_BF16, x, 2, &lx, w, 3, &lw,
          &p, want, 5);
    /* padding 1 crops one element at each end */
    p = params(2, 1, 1, 0, 1);
    const double want_p[] = {2, 5, 4};
    check("conv_transpose1d padding 1", WK_OP_CONV_TRANSPOSE1D, WK_DTYPE_F64, x, 2, &lx, w, 3, &lw,
          &p, want_p, 3);
    /* output_padding 1 adds one element at the end (nothing lands there) */
    p = params(2, 0, 1, 1, 1);
    const double want_op[] = {1, 2, 5, 4, 6, 0};
    check("conv_transpose1d output_padding 1", WK_OP_CONV_TRANSPOSE1D, WK_DTYPE_F32, x, 2, &lx, w,
          3, &lw, &p, want_op, 6);
    /* groups 2, w (C_in = 2, C_out/groups = 1, 1): each channel scaled by its own weight */
    const double xg[] = {1, 2, 3, 4}, wg[] = {10, -1};
    const wk_layout lxg = lay3(1, 2, 2), lwg = lay3(2, 1, 1);
    p = params(1, 0, 1, 0, 2);
    const double want_g[] = {10, 20, -3, -4};
    check("conv_transpose1d groups 2", WK_OP_CONV_TRANSPOSE1D, WK_DTYPE_F32, xg, 4, &lxg, wg, 2,
          &lwg, &p, want_g, 4);
}

static void test_conv2d(void)
{
    /* 3x3 image 1..9, 2x2 box of ones: each output is the sum of a 2x2 window */
    const double x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[] = {1, 1, 1, 1};
    const wk_layout lx = lay4(1, 1, 3, 3), lw = lay4(1, 1, 2, 2);
    wk_conv_params p = params(1, 0, 1, 0, 1);
    const double want[] = {12, 16, 24, 28};
    check("conv2d box", WK_OP_CONV2D, WK_DTYPE_F32, x, 9, &lx, w, 4, &lw, &p, want, 4);
    check("conv2d box", WK_OP_CONV2D, WK_DTYPE_F16, x, 9, &lx, w, 4, &lw, &p, want, 4);
    /* two input channels summed by a 1x1 kernel [1, 10]; stride 2 keeps the corners */
    const double x2[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1}, w2[] = {1, 10};
    const wk_layout lx2 = lay4(1, 2, 3, 3), lw2 = lay4(1, 2, 1, 1);
    p = params(2, 0, 1, 0, 1);
    const double want2[] = {11, 13, 17, 19};
    check("conv2d 1x1 stride 2", WK_OP_CONV2D, WK_DTYPE_F32, x2, 18, &lx2, w2, 2, &lw2, &p, want2, 4);
    /* padding 1 with the box kernel on a 2x2 image of ones: every 2x2 window of the padded 4x4
     * covers 1, 2 or 4 ones */
    const double ones[] = {1, 1, 1, 1};
    const wk_layout l22 = lay4(1, 1, 2, 2);
    p = params(1, 1, 1, 0, 1);
    const double want_p[] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    check("conv2d padding 1", WK_OP_CONV2D, WK_DTYPE_F32, ones, 4, &l22, w, 4, &lw, &p, want_p, 9);
}

static void test_conv_transpose2d(void)
{
    /* x = [[1 2] [3 4]], w = 2x2 ones, stride 1: each input pixel spreads over a 2x2 block */
    const double x[] = {1, 2, 3, 4}, w[] = {1, 1, 1, 1};
    const wk_layout lx = lay4(1, 1, 2, 2), lw = lay4(1, 1, 2, 2);
    wk_conv_params p = params(1, 0, 1, 0, 1);
    const double want[] = {1, 3, 2, 4, 10, 6, 3, 7, 4};
    check("conv_transpose2d", WK_OP_CONV_TRANSPOSE2D, WK_DTYPE_F32, x, 4, &lx, w, 4, &lw, &p, want, 9);
    check("conv_transpose2d", WK_OP_CONV_TRANSPOSE2D, WK_DTYPE_F64, x, 4, &lx, w, 4, &lw, &p, want, 9);
    /* stride 2: the blocks do not overlap */
    p = params(2, 0, 1, 0, 1);
    const double want_s[] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    check("conv_transpose2d stride 2", WK_OP_CONV_TRANSPOSE2D, WK_DTYPE_F32, x, 4, &lx, w, 4, &lw,
          &p, want_s, 16);
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
        test_conv1d();
        test_conv_transpose1d();
        test_conv2d();
        test_conv_transpose2d();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
