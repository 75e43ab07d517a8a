/* test_reduce_kat.c: known answers for sum/min/max/argmin/argmax on every device, over a (2,3)
 * literal matrix along dim 0, dim 1 and both; ties and NaN go to the first index; integer sums
 * wrap; reduced float types accumulate in (at least) f32 and round once; several dims, given in
 * any order, index row-major within the reduced dims (docs/semantics.md, "Reductions").
 * Run: ctest -R test_reduce_kat */
#include "testlib.h"
#include <math.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* out (host) = reduce op over dims of x (dtype dt, layout lx); checks the output dims (keepdim)
 * and dtype. Returns 0 on success. */
static int run(void *out, wk_op op, wk_dtype dt, const void *x, size_t xlen, const wk_layout *lx,
               const int32_t *dims, int32_t ndims)
{
    wk_storage *sx = testlib_upload(g_dev, dt, x, xlen), *so = NULL;
    if (!sx)
        return 1;
    const wk_status st = wk_reduce(&so, op, sx, lx, dims, ndims);
    int bad = !TEST_CHECK(st == WK_OK, "%s: %s on %s: %s (%s)", g_spec, wk_op_name(op),
                          wk_dtype_name(dt), wk_status_string(st), wk_last_error());
    if (!bad) {
        int64_t n = 1;
        for (int k = 0; k < lx->rank; k++) {
            int reduced = 0;
            for (int j = 0; j < ndims; j++)
                reduced |= dims[j] == k;
            n *= reduced ? 1 : lx->dims[k];
        }
        const wk_dtype want = (op == WK_OP_ARGMIN || op == WK_OP_ARGMAX) ? WK_DTYPE_U32 : dt;
        bad = !TEST_CHECK(wk_storage_dtype(so) == want && wk_storage_len(so) == (size_t)n,
                          "%s: %s output %s x %zu, expected %s x %lld", g_spec, wk_op_name(op),
                          wk_dtype_name(wk_storage_dtype(so)), wk_storage_len(so),
                          wk_dtype_name(want), (long long)n);
        if (!bad)
            bad = testlib_download(out, (size_t)n, so);
    }
    wk_storage_free(so);
    wk_storage_free(sx);
    return bad;
}

/* The (2,3) f32 matrix  [[1, 5, -2],
 *                        [4, 5,  3]]   (5 appears twice: a tie) */
static const float M[6] = {1, 5, -2, 4, 5, 3};

static void check_f32(wk_op op, const int32_t *dims, int32_t nd, const float *want, int n)
{
    const wk_layout l = testlib_layout2(2, 3);
    float out[6];
    if (run(out, op, WK_DTYPE_F32, M, 6, &l, dims, nd))
        return;
    for (int i = 0; i < n; i++)
        if (!TEST_NEAR(out[i], want[i], 0))
            printf("  (%s: %s over %d dims, element %d)\n", g_spec, wk_op_name(op), nd, i);
}

static void check_u32(wk_op op, wk_dtype dt, const void *x, size_t xlen, const wk_layout *l,
                      const int32_t *dims, int32_t nd, const uint32_t *want, int n)
{
    uint32_t out[8];
    if (run(out, op, dt, x, xlen, l, dims, nd))
        return;
    for (int i = 0; i < n; i++)
        if (!TEST_EQ_INT(out[i], want[i]))
            printf("  (%s: %s %s over %d dims, element %d)\n", g_spec, wk_dtype_name(dt),
                   wk_op_name(op), nd, i);
}

static void test_matrix(void)
{
    const int32_t d0[1] = {0}, d1[1] = {1}, both[2] = {0, 1};
    const wk_layout l = testlib_layout2(2, 3);
    /* sum: columns 1+4, 5+5, -2+3; rows 1+5-2, 4+5+3; all 16. */
    check_f32(WK_OP_SUM, d0, 1, (const float[]){5, 10, 1}, 3);
    check_f32(WK_OP_SUM, d1, 1, (const float[]){4, 12}, 2);
    check_f32(WK_OP_SUM, both, 2, (const float[]){16}, 1);
    check_f32(WK_OP_MAX, d0, 1, (const float[]){4, 5, 3}, 3);
    check_f32(WK_OP_MAX, d1, 1, (const float[]){5, 5}, 2);
    check_f32(WK_OP_MAX, both, 2, (const float[]){5}, 1);
    check_f32(WK_OP_MIN, d0, 1, (const float[]){1, 5, -2}, 3);
    check_f32(WK_OP_MIN, d1, 1, (const float[]){-2, 3}, 2);
    check_f32(WK_OP_MIN, both, 2, (const float[]){-2}, 1);
    /* argmax: column 1 is a tie (5, 5): the first, 0; over both dims the first 5 is at (0,1),
     * row-major index 1. argmin over both: -2 at (0,2) = 2. */
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, M, 6, &l, d0, 1, (const uint32_t[]){1, 0, 1}, 3);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, M, 6, &l, d1, 1, (const uint32_t[]){1, 1}, 2);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, M, 6, &l, both, 2, (const uint32_t[]){1}, 1);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_F32, M, 6, &l, d0, 1, (const uint32_t[]){0, 0, 0}, 3);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_F32, M, 6, &l, d1, 1, (const uint32_t[]){2, 2}, 2);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_F32, M, 6, &l, both, 2, (const uint32_t[]){2}, 1);
    /* No dims: a copy. */
    check_f32(WK_OP_SUM, NULL, 0, M, 6);
    check_f32(WK_OP_MAX, NULL, 0, M, 6);
    /* Transposed input (3,2) = [[1,4],[5,5],[-2,3]]: argmax over dim 1 -> [1, 0, 1]; sum over
     * dim 0 -> [4, 12]. */
    wk_layout t;
    TEST_EQ_STATUS(wk_layout_transpose(&t, &l, 0, 1), WK_OK);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, M, 6, &t, d1, 1, (const uint32_t[]){1, 0, 1}, 3);
    float out[3];
    if (!run(out, WK_OP_SUM, WK_DTYPE_F32, M, 6, &t, d0, 1)) {
        TEST_NEAR(out[0], 4, 0);
        TEST_NEAR(out[1], 12, 0);
    }
}

static void test_nan(void)
{
    /* [[1, NaN, 3], [NaN, 2, NaN]]: NaN propagates through min/max; arg* give the first NaN. */
    const float x[6] = {1, NAN, 3, NAN, 2, NAN};
    const wk_layout l = testlib_layout2(2, 3);
    const int32_t d0[1] = {0}, d1[1] = {1}, both[2] = {0, 1};
    float out[3];
    if (!run(out, WK_OP_MAX, WK_DTYPE_F32, x, 6, &l, d1, 1)) {
        TEST_CHECK(isnan(out[0]) && isnan(out[1]), "%s: max with NaN rows: %g %g", g_spec, out[0], out[1]);
    }
    if (!run(out, WK_OP_MIN, WK_DTYPE_F32, x, 6, &l, d0, 1))
        TEST_CHECK(isnan(out[0]) && isnan(out[1]) && isnan(out[2]), "%s: min with NaN columns: %g %g %g",
                   g_spec, out[0], out[1], out[2]);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, x, 6, &l, d1, 1, (const uint32_t[]){1, 0}, 2);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_F32, x, 6, &l, d1, 1, (const uint32_t[]){1, 0}, 2);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_F32, x, 6, &l, d0, 1, (const uint32_t[]){1, 0, 1}, 3);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, x, 6, &l, both, 2, (const uint32_t[]){1}, 1);
    /* NaN after the max: argmax still reports the NaN. f64 [5, 9, NaN] -> 2. */
    const double y[3] = {5, 9, NAN};
    const wk_layout l3 = testlib_layout1(3);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F64, y, 3, &l3, d0, 1, (const uint32_t[]){2}, 1);
    /* -inf is an ordinary value: min [inf, -inf] = -inf at 1. */
    const float z[2] = {INFINITY, -INFINITY};
    const wk_layout l2 = testlib_layout1(2);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_F32, z, 2, &l2, d0, 1, (const uint32_t[]){1}, 1);
}

static void test_int(void)
{
    const int32_t d0[1] = {0};
    const wk_layout l2 = testlib_layout1(2), l3 = testlib_layout1(3);
    /* u8 sum wraps: 200 + 100 = 300 - 256 = 44. */
    const uint8_t u8v[2] = {200, 100};
    uint8_t u8o[1];
    if (!run(u8o, WK_OP_SUM, WK_DTYPE_U8, u8v, 2, &l2, d0, 1))
        TEST_EQ_INT(u8o[0], 44);
    /* i32 sum wraps: INT32_MAX + 1 = INT32_MIN. */
    const int32_t i32v[2] = {INT32_MAX, 1};
    int32_t i32o[1];
    if (!run(i32o, WK_OP_SUM, WK_DTYPE_I32, i32v, 2, &l2, d0, 1))
        TEST_EQ_INT(i32o[0], INT32_MIN);
    /* i64 sum is exact beyond 2^53: 2^53 + 1 + 1. */
    const int64_t i64v[3] = {INT64_C(9007199254740992), 1, 1};
    int64_t i64o[1];
    if (!run(i64o, WK_OP_SUM, WK_DTYPE_I64, i64v, 3, &l3, d0, 1))
        TEST_EQ_INT(i64o[0], INT64_C(9007199254740994));
    /* u32 max/argmax compare unsigned: 2^32 - 1 is the largest. */
    const uint32_t u32v[3] = {1, 4294967295u, 2147483648u};
    uint32_t u32o[1];
    if (!run(u32o, WK_OP_MAX, WK_DTYPE_U32, u32v, 3, &l3, d0, 1))
        TEST_EQ_INT(u32o[0], 4294967295u);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_U32, u32v, 3, &l3, d0, 1, (const uint32_t[]){1}, 1);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_U32, u32v, 3, &l3, d0, 1, (const uint32_t[]){0}, 1);
    /* i64 compares exactly: [2^53, 2^53 + 1, MIN] -> argmax 1 (through double the first two
     * would tie and give 0), argmin 2. */
    const int64_t big[3] = {INT64_C(9007199254740992), INT64_C(9007199254740993), INT64_MIN};
    check_u32(WK_OP_ARGMAX, WK_DTYPE_I64, big, 3, &l3, d0, 1, (const uint32_t[]){1}, 1);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_I64, big, 3, &l3, d0, 1, (const uint32_t[]){2}, 1);
    /* i16 min. */
    const int16_t i16v[3] = {5, -32768, 32767};
    int16_t i16o[1];
    if (!run(i16o, WK_OP_MIN, WK_DTYPE_I16, i16v, 3, &l3, d0, 1))
        TEST_EQ_INT(i16o[0], -32768);
}

static void test_reduced_and_shapes(void)
{
    const int32_t d0[1] = {0};
    const wk_layout l3 = testlib_layout1(3);
    /* f16 [2048, 1, 1]: accumulated in f32 the sum is 2050, which f16 holds (spacing 2 in
     * [2048, 4096)): 0x6801. Adding in f16 one at a time would give 2048 (each +1 ties to even). */
    const uint16_t h[3] = {0x6800, 0x3C00, 0x3C00};
    uint16_t ho[1];
    if (!run(ho, WK_OP_SUM, WK_DTYPE_F16, h, 3, &l3, d0, 1))
        TEST_CHECK(ho[0] == 0x6801, "%s: f16 sum 2048+1+1 = 0x%04x, expected 0x6801", g_spec, ho[0]);
    /* bf16 [256, 1, 1] -> 258 (spacing 2 in [256, 512)): 0x4381. */
    const uint16_t b[3] = {0x4380, 0x3F80, 0x3F80};
    if (!run(ho, WK_OP_SUM, WK_DTYPE_BF16, b, 3, &l3, d0, 1))
        TEST_CHECK(ho[0] == 0x4381, "%s: bf16 sum 256+1+1 = 0x%04x, expected 0x4381", g_spec, ho[0]);
    /* f8e4m3 [448, 448] sums to 896, saturating to 448 (0x7E); max of [1, NaN] is NaN. */
    const uint8_t f8[2] = {0x7E, 0x7E}, f8n[2] = {0x38, 0x7F};
    const wk_layout l2 = testlib_layout1(2);
    uint8_t fo[1];
    if (!run(fo, WK_OP_SUM, WK_DTYPE_F8E4M3, f8, 2, &l2, d0, 1))
        TEST_CHECK(fo[0] == 0x7E, "%s: f8e4m3 sum 448+448 = 0x%02x, expected 0x7E", g_spec, fo[0]);
    if (!run(fo, WK_OP_MAX, WK_DTYPE_F8E4M3, f8n, 2, &l2, d0, 1))
        TEST_CHECK((fo[0] & 0x7F) == 0x7F, "%s: f8e4m3 max(1, NaN) = 0x%02x", g_spec, fo[0]);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_BF16, b, 3, &l3, d0, 1, (const uint32_t[]){0}, 1);

    /* Rank 3 (2,2,2) holding 0..7, dims {0, 2} (and {2, 0}: order does not matter): for j = 0
     * the elements (i,0,k) are 0,1,4,5 (sum 10); for j = 1: 2,3,6,7 (sum 18). argmax: the last
     * of each, at (1,j,1): row-major index within dims (0, 2) = 1*2 + 1 = 3. */
    const float c[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const int64_t d222[3] = {2, 2, 2};
    const wk_layout l222 = testlib_layout(3, d222);
    const int32_t d02[2] = {0, 2}, d20[2] = {2, 0};
    float co[2];
    if (!run(co, WK_OP_SUM, WK_DTYPE_F32, c, 8, &l222, d02, 2)) {
        TEST_NEAR(co[0], 10, 0);
        TEST_NEAR(co[1], 18, 0);
    }
    if (!run(co, WK_OP_SUM, WK_DTYPE_F32, c, 8, &l222, d20, 2)) {
        TEST_NEAR(co[0], 10, 0);
        TEST_NEAR(co[1], 18, 0);
    }
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, c, 8, &l222, d20, 2, (const uint32_t[]){3, 3}, 2);
    check_u32(WK_OP_ARGMIN, WK_DTYPE_F32, c, 8, &l222, d02, 2, (const uint32_t[]){0, 0}, 2);

    /* Empty sum: (2,0) summed over dim 1 is [0, 0] (keepdim (2,1)). */
    const wk_layout e = testlib_layout2(2, 0);
    const int32_t d1[1] = {1};
    float eo[2] = {-1, -1};
    if (!run(eo, WK_OP_SUM, WK_DTYPE_F32, c, 8, &e, d1, 1)) {
        TEST_NEAR(eo[0], 0, 0);
        TEST_NEAR(eo[1], 0, 0);
    }
    /* Broadcast input (stride 0): 4 copies of 2.5 sum to 10; argmax is the first, 0. */
    const float v[1] = {2.5f};
    wk_layout bc = testlib_layout1(4);
    bc.strides[0] = 0;
    float so[1];
    if (!run(so, WK_OP_SUM, WK_DTYPE_F32, v, 1, &bc, d0, 1))
        TEST_NEAR(so[0], 10, 0);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, v, 1, &bc, d0, 1, (const uint32_t[]){0}, 1);
    /* A long f32 row of ones (sum exact in any order) crossing the parallel threshold. */
    enum { N = 100000 };
    static float ones[N];
    for (int i = 0; i < N; i++)
        ones[i] = 1.0f;
    ones[77777] = 2.0f; /* the max, once */
    const wk_layout ln = testlib_layout1(N);
    if (!run(so, WK_OP_SUM, WK_DTYPE_F32, ones, N, &ln, d0, 1))
        TEST_NEAR(so[0], N + 1, 0);
    check_u32(WK_OP_ARGMAX, WK_DTYPE_F32, ones, N, &ln, d0, 1, (const uint32_t[]){77777}, 1);
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
        test_matrix();
        test_nan();
        test_int();
        test_reduced_and_shapes();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
