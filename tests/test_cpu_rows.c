/* test_cpu_rows.c: properties of the CPU backend's fused row ops (src/cpu/cpu_softmax.c,
 * cpu_norm.c over the block kernels of cpu_rows.c) that the parity matrix's error bounds do not
 * pin down:
 *   1. layer_norm of a constant row is exactly beta (the mean is exact, x - m = 0), for row
 *      lengths below, at and above one block (WK_ROWS_BLOCK) and values that are not exact sums;
 *   2. softmax, layer_norm and rms_norm give the same bits on 1 and 2 threads;
 *   3. softmax and layer_norm of rows of 5000 (several blocks, a tail) against a float64
 *      evaluation of the formula (relative 1e-5 on f32).
 * Run: ctest -R test_cpu_rows */
#include "testlib.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;

/* y = layer_norm / rms_norm / softmax (op) of x (rows x d, f32) with alpha g and beta b. */
static int run(float *y, wk_op op, const float *x, int64_t rows, int64_t d, const float *g,
               const float *b)
{
    const int64_t dims[2] = {rows, d};
    const wk_layout lx = testlib_layout(2, dims), lv = testlib_layout1(d);
    wk_storage *sx = testlib_upload(g_dev, WK_DTYPE_F32, x, (size_t)(rows * d));
    wk_storage *sg = testlib_upload(g_dev, WK_DTYPE_F32, g, (size_t)d);
    wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_F32, b, (size_t)d);
    wk_storage *sy = NULL;
    wk_status st = WK_ERR_INVALID_ARGUMENT;
    if (sx && sg && sb) {
        if (op == WK_OP_LAYER_NORM)
            st = wk_layer_norm(&sy, sx, &lx, sg, &lv, sb, &lv, 1e-5f);
        else if (op == WK_OP_RMS_NORM)
            st = wk_rms_norm(&sy, sx, &lx, sg, &lv, 1e-5f);
        else
            st = wk_softmax_last_dim(&sy, sx, &lx);
    }
    int bad = !TEST_CHECK(st == WK_OK, "%s %lldx%lld: %s", wk_op_name(op), (long long)rows,
                          (long long)d, wk_last_error());
    if (!bad)
        bad = testlib_download(y, (size_t)(rows * d), sy);
    wk_storage_free(sx), wk_storage_free(sg), wk_storage_free(sb), wk_storage_free(sy);
    return bad;
}

static void constant_rows(void)
{
    const int64_t ds[] = {1, 17, 1024, 2048, 5000};
    const float vals[] = {0.1f, -3.7f, 10000.3f, 1e-20f};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        const int64_t d = ds[i], rows = 4;
        float *x = malloc(sizeof(float) * (size_t)(rows * d)), *y = malloc(sizeof(float) * (size_t)(rows * d));
        float *g = malloc(sizeof(float) * (size_t)d), *b = malloc(sizeof(float) * (size_t)d);
        for (int64_t j = 0; j < d; j++)
            g[j] = 0.5f + (float)(j % 7), b[j] = (float)(j % 5) * 0.25f - 0.3f;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < d; j++)
                x[r * d + j] = vals[r];
        if (!run(y, WK_OP_LAYER_NORM, x, rows, d, g, b)) {
            int bad = 0;
            for (int64_t k = 0; k < rows * d && !bad; k++)
                bad = !TEST_CHECK(y[k] == b[k % d], "layer_norm constant row %g (d %lld): out[%lld] = %.9g, want beta %.9g",
                                  (double)vals[k / d], (long long)d, (long long)(k % d), (double)y[k], (double)b[k % d]);
        }
        free(x), free(y), free(g), free(b);
    }
}

static void threads_and_values(void)
{
    const int64_t rows = 64, d = 5000;
    const size_t n = (size_t)(rows * d);
    float *x = malloc(n * sizeof *x), *y1 = malloc(n * sizeof *y1), *y2 = malloc(n * sizeof *y2);
    float g[5000], b[5000];
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(sin((double)i * 0.7) * 6.0 + (double)(i / (size_t)d));
    for (int64_t j = 0; j < d; j++)
        g[j] = 0.75f + 0.001f * (float)j, b[j] = 0.01f * (float)(j % 13);
    const wk_op ops[] = {WK_OP_SOFTMAX_LAST_DIM, WK_OP_LAYER_NORM, WK_OP_RMS_NORM};
    for (int k = 0; k < 3; k++) {
        omp_set_num_threads(1);
        int bad = run(y1, ops[k], x, rows, d, g, b);
        omp_set_num_threads(2);
        bad |= run(y2, ops[k], x, rows, d, g, b);
        if (bad)
            continue;
        TEST_CHECK(memcmp(y1, y2, n * sizeof *y1) == 0, "%s: 1 and 2 threads differ", wk_op_name(ops[k]));
        /* the formula in double for rows 0 and 37 */
        for (int r = 0; r < rows; r += 37) {
            const float *xr = x + r * d, *yr = y1 + r * d;
            double m = -INFINITY, s = 0, s2 = 0;
            for (int64_t j = 0; j < d; j++)
                m = xr[j] > m ? xr[j] : m, s += xr[j], s2 += (double)xr[j] * xr[j];
            const double mean = s / (double)d;
            double var = 0, se = 0;
            for (int64_t j = 0; j < d; j++)
                var += (xr[j] - mean) * (xr[j] - mean), se += exp(xr[j] - m);
            var /= (double)d;
            int badv = 0;
            for (int64_t j = 0; j < d && !badv; j++) {
                double want;
                if (ops[k] == WK_OP_SOFTMAX_LAST_DIM)
                    want = exp(xr[j] - m) / se;
                else if (ops[k] == WK_OP_LAYER_NORM)
                    want = (xr[j] - mean) / sqrt(var + 1e-5) * g[j] + b[j];
                else
                    want = xr[j] / sqrt(s2 / (double)d + 1e-5) * g[j];
                badv = !TEST_CHECK(fabs(yr[j] - want) <= 1e-5 * fabs(want) + 1e-6,
                                   "%s row %d [%lld] = %.9g, want %.9g", wk_op_name(ops[k]), r,
                                   (long long)j, (double)yr[j], want);
            }
        }
    }
    free(x), free(y1), free(y2);
}

int main(void)
{
    if (!TEST_EQ_STATUS(wk_device_open(&g_dev, "cpu"), WK_OK))
        return testlib_summary();
    constant_rows();
    threads_and_values();
    wk_device_close(g_dev);
    return testlib_summary();
}
