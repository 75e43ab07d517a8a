/* test_index_kat.c: known answers for the indexing ops on every device, worked out by hand:
 * index_select of rows (u32 ids, repeats) and with the u8 sentinel 255 (a zero row), gather
 * along dim 1 (i64 ids) and through transposed ids, scatter_set with duplicate ids (the last
 * write in row-major order wins), scatter_add_set with duplicates (f32 and wrapping i32),
 * index_add out of place with duplicates and a skipped sentinel, f16 adds rounding at each add,
 * and u8 wrap-around. Ops a device does not support must say WK_ERR_NOT_SUPPORTED.
 * Run: ctest -R test_index_kat */
#include "testlib.h"
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

static int op_ok(wk_status st, wk_op op, wk_dtype dt)
{
    if (st == WK_ERR_NOT_SUPPORTED && !wk_device_supports(g_dev, op, dt))
        return 0;
    TEST_CHECK(st == WK_OK, "%s: %s %s: %s (%s)", g_spec, wk_op_name(op), wk_dtype_name(dt),
               wk_status_string(st), wk_last_error());
    return st == WK_OK;
}

/* Downloads n f32 values of s and compares them exactly with want. */
static void check_f32(const wk_storage *s, const float *want, size_t n, const char *what)
{
    float got[32];
    if (!TEST_CHECK(s && wk_storage_len(s) == n, "%s: %s: %zu elements, want %zu", g_spec, what,
                    s ? wk_storage_len(s) : 0, n) ||
        testlib_download(got, n, s))
        return;
    for (size_t i = 0; i < n; i++)
        if (!TEST_NEAR(got[i], want[i], 0))
            printf("  (%s: %s element %zu)\n", g_spec, what, i);
}

static const float src32[6] = {1, 2, 3, 4, 5, 6}; /* [[1,2],[3,4],[5,6]] or [[1,2,3],[4,5,6]] */

/* gather along the last dim on long rows (the contiguous fast path: vector gathers when every id
 * of a row is in range), every element size and id dtype, against a loop written here: src
 * [3, 37] of distinct values, ids [3, 1001] (a tail for every vector width); u8 ids with the
 * sentinel 255 in one row (zeros there), and an id of 37 (out of range) must fail. */
/* n values v in dtype dt (u8, u32, i64, f16, f32, f64) as a storage, and back */
static wk_storage *upload_any(wk_dtype dt, const double *v, size_t n)
{
    if (dt == WK_DTYPE_F16 || dt == WK_DTYPE_F32 || dt == WK_DTYPE_F64)
        return testlib_upload_f64(g_dev, dt, v, n);
    char *buf = malloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        if (dt == WK_DTYPE_U8)
            ((uint8_t *)buf)[i] = (uint8_t)v[i];
        else if (dt == WK_DTYPE_U32)
            ((uint32_t *)buf)[i] = (uint32_t)v[i];
        else
            ((int64_t *)buf)[i] = (int64_t)v[i];
    }
    wk_storage *s = testlib_upload(g_dev, dt, buf, n);
    free(buf);
    return s;
}

static int download_any(double *v, size_t n, const wk_storage *s)
{
    const wk_dtype dt = wk_storage_dtype(s);
    if (dt != WK_DTYPE_U8)
        return testlib_download_f64(v, n, s);
    uint8_t *buf = malloc(n);
    const int rc = testlib_download(buf, n, s);
    for (size_t i = 0; !rc && i < n; i++)
        v[i] = buf[i];
    free(buf);
    return rc;
}

static void test_gather_rows(void)
{
    enum { R = 3, DS = 37, DI = 1001 };
    static double sv[R * DS], want[R * DI], got[R * DI];
    static int64_t idv[R * DI];
    for (int i = 0; i < R * DS; i++)
        sv[i] = (double)(i % 100) - 40.0; /* exact in every dtype used, u8 aside */
    for (int i = 0; i < R * DI; i++)
        idv[i] = (i * 7 + i / 13) % DS;
    const wk_dtype dts[] = {WK_DTYPE_U8, WK_DTYPE_F16, WK_DTYPE_F32, WK_DTYPE_F64};
    const wk_dtype its[] = {WK_DTYPE_U8, WK_DTYPE_U32, WK_DTYPE_I64};
    const wk_layout ls = testlib_layout2(R, DS), li = testlib_layout2(R, DI);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t t = 0; t < sizeof its / sizeof its[0]; t++)
            for (int variant = 0; variant < 3; variant++) {
                if (variant == 1 && its[t] != WK_DTYPE_U8)
                    continue; /* the sentinel: u8 ids only (u32's is 2^32 - 1, also handled) */
                double iv[R * DI], sval[R * DS];
                for (int i = 0; i < R * DI; i++)
                    iv[i] = (double)idv[i];
                if (variant == 1)
                    iv[DI + 500] = 255; /* row 1: one missing element */
                if (variant == 2)
                    iv[2 * DI + 1000] = DS; /* row 2, last element: out of range */
                for (int i = 0; i < R * DS; i++)
                    sval[i] = dts[d] == WK_DTYPE_U8 ? (double)(i % 100) : sv[i];
                for (int r = 0; r < R; r++)
                    for (int i = 0; i < DI; i++) {
                        const double id = iv[r * DI + i];
                        want[r * DI + i] = id < DS ? sval[r * DS + (int)id] : 0.0;
                    }
                wk_storage *src = upload_any(dts[d], sval, R * DS);
                wk_storage *ids = upload_any(its[t], iv, R * DI), *o = NULL;
                wk_status st = wk_gather(&o, src, &ls, ids, &li, 1);
                if (variant == 2 && st == WK_OK && wk_device_backend(g_dev) != WK_BACKEND_CPU)
                    st = wk_device_synchronize(g_dev); /* a GPU reports the id at the next sync */
                const int skip = st == WK_ERR_NOT_SUPPORTED && !wk_device_supports(g_dev, WK_OP_GATHER, dts[d]);
                if (variant == 2 && !skip) {
                    TEST_CHECK(st == WK_ERR_INDEX_OUT_OF_RANGE, "%s: gather %s by %s, id %d: %s", g_spec,
                               wk_dtype_name(dts[d]), wk_dtype_name(its[t]), DS, wk_status_string(st));
                } else if (variant != 2 && op_ok(st, WK_OP_GATHER, dts[d]) && !download_any(got, R * DI, o)) {
                    int bad = 0;
                    for (int i = 0; i < R * DI && !bad; i++)
                        bad = got[i] != want[i];
                    TEST_CHECK(!bad, "%s: gather %s by %s (variant %d): rows differ from the loop",
                               g_spec, wk_dtype_name(dts[d]), wk_dtype_name(its[t]), variant);
                }
                wk_storage_free(o);
                wk_storage_free(ids);
                wk_storage_free(src);
            }
}

static void test_select_gather(void)
{
    wk_storage *src = testlib_upload(g_dev, WK_DTYPE_F32, src32, 6), *o = NULL;
    const wk_layout l32 = testlib_layout2(3, 2), l23 = testlib_layout2(2, 3);
    /* rows 2, 0, 2 of [[1,2],[3,4],[5,6]] */
    const uint32_t iu[3] = {2, 0, 2};
    wk_storage *ids = testlib_upload(g_dev, WK_DTYPE_U32, iu, 3);
    wk_layout li = testlib_layout1(3);
    if (op_ok(wk_index_select(&o, src, &l32, ids, &li, 0), WK_OP_INDEX_SELECT, WK_DTYPE_F32)) {
        const float want[6] = {5, 6, 1, 2, 5, 6};
        check_f32(o, want, 6, "index_select rows 2 0 2");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);
    /* u8 ids {1, 255}: row 1, then the sentinel's zero row */
    const uint8_t i8[2] = {1, 255};
    ids = testlib_upload(g_dev, WK_DTYPE_U8, i8, 2);
    li = testlib_layout1(2);
    if (op_ok(wk_index_select(&o, src, &l32, ids, &li, 0), WK_OP_INDEX_SELECT, WK_DTYPE_F32)) {
        const float want[4] = {3, 4, 0, 0};
        check_f32(o, want, 4, "index_select with the u8 sentinel");
    }
    wk_storage_free(o), o = NULL;
    /* columns {1, none} of [[1,2,3],[4,5,6]] along dim 1 */
    if (op_ok(wk_index_select(&o, src, &l23, ids, &li, 1), WK_OP_INDEX_SELECT, WK_DTYPE_F32)) {
        const float want[4] = {2, 0, 5, 0};
        check_f32(o, want, 4, "index_select along dim 1");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);

    /* gather dim 1: [[1,2,3],[4,5,6]] with ids [[2,0],[1,1]] -> [[3,1],[5,5]] */
    const int64_t ig[4] = {2, 0, 1, 1};
    ids = testlib_upload(g_dev, WK_DTYPE_I64, ig, 4);
    wk_layout lg = testlib_layout2(2, 2);
    if (op_ok(wk_gather(&o, src, &l23, ids, &lg, 1), WK_OP_GATHER, WK_DTYPE_F32)) {
        const float want[4] = {3, 1, 5, 5};
        check_f32(o, want, 4, "gather dim 1");
    }
    wk_storage_free(o), o = NULL;
    /* the same ids read transposed: [[2,1],[0,1]] -> [[3,2],[4,5]] */
    lg.strides[0] = 1;
    lg.strides[1] = 2;
    if (op_ok(wk_gather(&o, src, &l23, ids, &lg, 1), WK_OP_GATHER, WK_DTYPE_F32)) {
        const float want[4] = {3, 2, 4, 5};
        check_f32(o, want, 4, "gather with transposed ids");
    }
    wk_storage_free(o), o = NULL;
    /* ids smaller than src outside dim: ids (1, 2) of [[2,0]] on dim 1 -> [[3,1]] */
    lg = testlib_layout2(1, 2);
    if (op_ok(wk_gather(&o, src, &l23, ids, &lg, 1), WK_OP_GATHER, WK_DTYPE_F32)) {
        const float want[2] = {3, 1};
        check_f32(o, want, 2, "gather with fewer rows than src");
    }
    wk_storage_free(o);
    wk_storage_free(ids);
    wk_storage_free(src);
}

static void test_scatter(void)
{
    /* dst 2x3 zeros, ids [[0,0,2],[1,1,1]] along dim 1, src [[1,2,3],[4,5,6]] */
    const uint32_t is[6] = {0, 0, 2, 1, 1, 1};
    const float zeros[6] = {0};
    const wk_layout l23 = testlib_layout2(2, 3);
    wk_storage *ids = testlib_upload(g_dev, WK_DTYPE_U32, is, 6);
    wk_storage *src = testlib_upload(g_dev, WK_DTYPE_F32, src32, 6);
    wk_storage *dst = testlib_upload(g_dev, WK_DTYPE_F32, zeros, 6);
    if (op_ok(wk_scatter_set(dst, &l23, ids, &l23, src, &l23, 1), WK_OP_SCATTER_SET, WK_DTYPE_F32)) {
        const float want[6] = {2, 0, 3, 0, 6, 0}; /* last write wins */
        check_f32(dst, want, 6, "scatter_set with duplicates");
    }
    wk_storage_free(dst);
    dst = testlib_upload(g_dev, WK_DTYPE_F32, zeros, 6);
    if (op_ok(wk_scatter_add_set(dst, &l23, ids, &l23, src, &l23, 1), WK_OP_SCATTER_ADD_SET, WK_DTYPE_F32)) {
        const float want[6] = {3, 0, 3, 0, 15, 0};
        check_f32(dst, want, 6, "scatter_add_set with duplicates");
    }
    wk_storage_free(dst);
    wk_storage_free(src);

    /* i32 adds wrap: INT32_MAX + 1 = INT32_MIN */
    const int32_t di[6] = {2147483647, 0, 0, 0, 0, 0}, si[6] = {1, 0, 0, 0, 0, 0};
    dst = testlib_upload(g_dev, WK_DTYPE_I32, di, 6);
    src = testlib_upload(g_dev, WK_DTYPE_I32, si, 6);
    if (op_ok(wk_scatter_add_set(dst, &l23, ids, &l23, src, &l23, 1), WK_OP_SCATTER_ADD_SET, WK_DTYPE_I32)) {
        int32_t got[6];
        if (!testlib_download(got, 6, dst))
            TEST_EQ_INT(got[0], -2147483647 - 1);
    }
    wk_storage_free(dst);
    wk_storage_free(src);
    wk_storage_free(ids);

    /* f16 rounds at each add: 2048 + 1 = 2049 -> 2048 (ties to even), twice: 2048 (0x6800),
     * where one rounding of 2048 + 2 would give 2050 */
    const uint16_t dh[1] = {0x6800}, sh[2] = {0x3C00, 0x3C00};
    const int64_t ih[2] = {0, 0};
    const wk_layout l1 = testlib_layout1(1), l2 = testlib_layout1(2);
    dst = testlib_upload(g_dev, WK_DTYPE_F16, dh, 1);
    src = testlib_upload(g_dev, WK_DTYPE_F16, sh, 2);
    ids = testlib_upload(g_dev, WK_DTYPE_I64, ih, 2);
    if (op_ok(wk_scatter_add_set(dst, &l1, ids, &l2, src, &l2, 0), WK_OP_SCATTER_ADD_SET, WK_DTYPE_F16)) {
        uint16_t got;
        if (!testlib_download(&got, 1, dst))
            TEST_EQ_INT(got, 0x6800);
    }
    wk_storage_free(dst);
    wk_storage_free(src);
    wk_storage_free(ids);
}

static void test_index_add(void)
{
    /* dst 3x2 ones; ids {0, 2, 0, none}; src [[1,1],[2,2],[3,3],[9,9]] -> [[5,5],[1,1],[3,3]] */
    const float ones[6] = {1, 1, 1, 1, 1, 1}, s[8] = {1, 1, 2, 2, 3, 3, 9, 9};
    const uint32_t iu[4] = {0, 2, 0, 4294967295u};
    wk_storage *dst = testlib_upload(g_dev, WK_DTYPE_F32, ones, 6);
    wk_storage *src = testlib_upload(g_dev, WK_DTYPE_F32, s, 8);
    wk_storage *ids = testlib_upload(g_dev, WK_DTYPE_U32, iu, 4), *o = NULL;
    const wk_layout ld = testlib_layout2(3, 2), ls = testlib_layout2(4, 2), li = testlib_layout1(4);
    if (op_ok(wk_index_add(&o, dst, &ld, ids, &li, src, &ls, 0), WK_OP_INDEX_ADD, WK_DTYPE_F32)) {
        const float want[6] = {5, 5, 1, 1, 3, 3};
        check_f32(o, want, 6, "index_add with duplicates and a sentinel");
        check_f32(dst, ones, 6, "index_add leaves dst alone");
    }
    wk_storage_free(o), o = NULL;
    wk_storage_free(dst);
    wk_storage_free(src);
    wk_storage_free(ids);

    /* u8 wraps: 250 + 10 = 4; along dim 1 of a 1x2 dst read with stride 2 from {250, 99, 7} */
    const uint8_t d8[3] = {250, 99, 7}, s8[1] = {10}, i8[1] = {0};
    dst = testlib_upload(g_dev, WK_DTYPE_U8, d8, 3);
    src = testlib_upload(g_dev, WK_DTYPE_U8, s8, 1);
    ids = testlib_upload(g_dev, WK_DTYPE_U8, i8, 1);
    wk_layout ldt = testlib_layout2(1, 2);
    ldt.strides[1] = 2;
    const wk_layout ls8 = testlib_layout2(1, 1), li8 = testlib_layout1(1);
    if (op_ok(wk_index_add(&o, dst, &ldt, ids, &li8, src, &ls8, 1), WK_OP_INDEX_ADD, WK_DTYPE_U8)) {
        uint8_t got[2];
        if (!testlib_download(got, 2, o)) {
            TEST_EQ_INT(got[0], 4);
            TEST_EQ_INT(got[1], 7);
        }
    }
    wk_storage_free(o);
    wk_storage_free(dst);
    wk_storage_free(src);
    wk_storage_free(ids);
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
        test_select_gather();
        test_gather_rows();
        test_scatter();
        test_index_add();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
