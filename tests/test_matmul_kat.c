/* test_matmul_kat.c: known answers for wk_matmul on every device: a 2x3 @ 3x2 product worked by
 * hand in every float dtype, the same product through a transposed b, a batched product with a
 * broadcast (stride 0) b, k = 0 (zeros), an empty result, and "accumulate in f32, round once"
 * for f16. Where wk_device_supports() says no, the call must fail with WK_ERR_NOT_SUPPORTED.
 * Run: ctest -R test_matmul_kat */
#include "testlib.h"
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* out = a (la) @ b (lb) in dtype dt; compares with want (n values, exact). */
static void check(const char *what, wk_dtype dt, const double *a, size_t na, const wk_layout *la,
                  const double *b, size_t nb, const wk_layout *lb, const double *want, size_t n)
{
    wk_storage *sa = testlib_upload_f64(g_dev, dt, a, na), *sb = testlib_upload_f64(g_dev, dt, b, nb), *so = NULL;
    if (sa && sb) {
        wk_status st = wk_matmul(&so, sa, la, sb, lb);
        if (!wk_device_supports(g_dev, WK_OP_MATMUL, dt)) {
            TEST_CHECK(st == WK_ERR_NOT_SUPPORTED, "%s: %s %s unsupported but returned %s", g_spec,
                       what, wk_dtype_name(dt), wk_status_string(st));
        } else if (TEST_CHECK(st == WK_OK, "%s: %s %s: %s (%s)", g_spec, what, wk_dtype_name(dt),
                              wk_status_string(st), wk_last_error()) &&
                   TEST_CHECK(wk_storage_len(so) == n && wk_storage_dtype(so) == dt,
                              "%s: %s output has %zu elements", g_spec, what, wk_storage_len(so))) {
            double got[64];
            if (!testlib_download_f64(got, n, so))
                for (size_t i = 0; i < n; i++)
                    if (!TEST_NEAR(got[i], want[i], 0))
                        printf("  (%s: %s %s element %zu)\n", g_spec, what, wk_dtype_name(dt), i);
        }
    }
    wk_storage_free(so);
    wk_storage_free(sb);
    wk_storage_free(sa);
}

static void test_by_hand(void)
{
    /* [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[1*7+2*9+3*11, 1*8+2*10+3*12],
     *                                              [4*7+5*9+6*11, 4*8+5*10+6*12]] */
    const double a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12};
    const double want[] = {58, 64, 139, 154};
    const wk_layout la = testlib_layout2(2, 3), lb = testlib_layout2(3, 2);
    /* b stored transposed ([[7,9,11],[8,10,12]]) and read as 3x2 through strides (1, 3) */
    const double bt[] = {7, 9, 11, 8, 10, 12};
    wk_layout lbt = testlib_layout2(3, 2);
    lbt.strides[0] = 1, lbt.strides[1] = 3;
    const wk_dtype dts[] = {WK_DTYPE_F32, WK_DTYPE_F64, WK_DTYPE_F16, WK_DTYPE_BF16};
    for (int i = 0; i < 4; i++) {
        check("2x3 @ 3x2", dts[i], a, 6, &la, b, 6, &lb, want, 4);
        check("2x3 @ (2x3)^T", dts[i], a, 6, &la, bt, 6, &lbt, want, 4);
    }
    /* a transposed, read with an offset: storage [9, a^T] */
    const double at[] = {-99, 1, 4, 2, 5, 3, 6};
    wk_layout lat = testlib_layout2(2, 3);
    lat.strides[0] = 1, lat.strides[1] = 2, lat.offset = 1;
    check("(3x2)^T+1 @ 3x2", WK_DTYPE_F32, at, 7, &lat, b, 6, &lb, want, 4);
}

static void test_batched(void)
{
    /* batch 2: a[0] = [[1,2],[3,4]], a[1] = [[1,0],[0,1]]; b = [[5,6],[7,8]] for both (stride 0) */
    const double a[] = {1, 2, 3, 4, 1, 0, 0, 1}, b[] = {5, 6, 7, 8};
    const double want[] = {19, 22, 43, 50, 5, 6, 7, 8};
    const int64_t d[3] = {2, 2, 2};
    const wk_layout la = testlib_layout(3, d);
    wk_layout lb = testlib_layout(3, d);
    lb.strides[0] = 0;
    check("batched, broadcast b", WK_DTYPE_F32, a, 8, &la, b, 4, &lb, want, 8);
    check("batched, broadcast b", WK_DTYPE_F64, a, 8, &la, b, 4, &lb, want, 8);
}

static void test_edges(void)
{
    /* k = 0: a 2x0 @ 0x3 is a 2x3 of zeros */
    const double none[1] = {0}, zeros[6] = {0, 0, 0, 0, 0, 0};
    const wk_layout la = testlib_layout2(2, 0), lb = testlib_layout2(0, 3);
    check("k = 0", WK_DTYPE_F32, none, 1, &la, none, 1, &lb, zeros, 6);
    check("k = 0", WK_DTYPE_BF16, none, 1, &la, none, 1, &lb, zeros, 6);
    /* m = 0: an empty result */
    const double b[6] = {1, 2, 3, 4, 5, 6};
    const wk_layout le = testlib_layout2(0, 2), lb2 = testlib_layout2(2, 3);
    check("m = 0", WK_DTYPE_F32, none, 1, &le, b, 6, &lb2, zeros, 0);
    /* f16 accumulates in f32 and rounds once: 1 + 2^-11 + 2^-11 = 1 + 2^-10 exactly (rounding to
     * f16 after each add would give 1, as 1 + 2^-11 is a tie that goes to even). */
    const double a3[] = {1, 0x1p-11, 0x1p-11}, ones[] = {1, 1, 1}, want[] = {1 + 0x1p-10};
    const wk_layout l13 = testlib_layout2(1, 3), l31 = testlib_layout2(3, 1);
    check("f16 rounds once", WK_DTYPE_F16, a3, 3, &l13, ones, 3, &l31, want, 1);
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
        test_by_hand();
        test_batched();
        test_edges();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
