/* test_bad_index.c: every error path of the indexing ops (docs/semantics.md, "Indexing"), each
 * with its exact status, *out left NULL and every storage untouched (the in-place destination
 * included), on every device. Out-of-range ids on each ids dtype along a dim of size 10:
 * u8 200 fails where u8 255 is the "none" sentinel; u32 10 fails where 4294967295 is the
 * sentinel; i64 -1 and 10 fail where INT64_MAX is the sentinel. The bad id is the second one, so
 * an implementation that writes before it checks is caught. The message names the id.
 * A device that lacks an op may answer WK_ERR_NOT_SUPPORTED only past the argument checks.
 * Run: ctest -R test_bad_index */
#include "testlib.h"
#include <stdio.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

enum { N_VALS = 20 };
static wk_storage *g_src, *g_dst, *g_src_i32; /* f32 (10, 2), f32 (10, 2), i32 (10, 2) */
static float g_dst_host[N_VALS];

static int dst_untouched(void)
{
    float now[N_VALS];
    if (testlib_download(now, N_VALS, g_dst))
        return 0;
    return memcmp(now, g_dst_host, sizeof now) == 0;
}

static void expect(wk_status got, wk_status want, wk_storage *out, wk_op op, wk_dtype dt, int late,
                   const char *what)
{
    int ok = got == want;
    if (!ok && late && got == WK_ERR_NOT_SUPPORTED && !wk_device_supports(g_dev, op, dt))
        ok = 1;
    TEST_CHECK(ok, "%s: %s %s: got %s, want %s (%s)", g_spec, wk_op_name(op), what,
               wk_status_string(got), wk_status_string(want), wk_last_error());
    TEST_CHECK(out == NULL, "%s: %s %s: a failed call returned an output", g_spec, wk_op_name(op), what);
    TEST_CHECK(dst_untouched(), "%s: %s %s: the destination was modified", g_spec, wk_op_name(op), what);
    wk_storage_free(out);
}

static const wk_op all_ops[5] = {WK_OP_INDEX_SELECT, WK_OP_GATHER, WK_OP_SCATTER_SET,
                                 WK_OP_SCATTER_ADD_SET, WK_OP_INDEX_ADD};

/* Runs op along dim 0 of the (10, 2) values with two ids of dtype idt (raw host values):
 * select (ids [2]) -> (2, 2); gather (ids [2, 1]) -> (2, 1); scatter* (ids, src [2, 1]) into
 * g_dst; index_add (ids [2], src [2, 2]) -> (10, 2). */
static wk_status run(wk_storage **out, wk_op op, wk_dtype idt, const void *ids_host, int32_t dim)
{
    wk_storage *ids = testlib_upload(g_dev, idt, ids_host, 2);
    if (!ids)
        return WK_ERR_OUT_OF_MEMORY;
    const wk_layout lv = testlib_layout2(10, 2), l1 = testlib_layout1(2), l21 = testlib_layout2(2, 1);
    const wk_layout l22 = testlib_layout2(2, 2);
    wk_status st;
    switch (op) {
    case WK_OP_INDEX_SELECT: st = wk_index_select(out, g_src, &lv, ids, &l1, dim); break;
    case WK_OP_GATHER: st = wk_gather(out, g_src, &lv, ids, &l21, dim); break;
    case WK_OP_SCATTER_SET: st = wk_scatter_set(g_dst, &lv, ids, &l21, g_src, &l21, dim); break;
    case WK_OP_SCATTER_ADD_SET: st = wk_scatter_add_set(g_dst, &lv, ids, &l21, g_src, &l21, dim); break;
    default: st = wk_index_add(out, g_dst, &lv, ids, &l1, g_src, &l22, dim); break;
    }
    wk_storage_free(ids);
    return st;
}

static void test_ids(void)
{
    const uint8_t u8_bad[2] = {3, 200}, u8_none[2] = {3, 255};
    const uint32_t u32_bad[2] = {3, 10}, u32_none[2] = {3, 4294967295u};
    const int64_t i64_neg[2] = {3, -1}, i64_big[2] = {3, 10}, i64_none[2] = {3, INT64_MAX};
    const struct {
        wk_dtype idt;
        const void *ids;
        const char *value;  /* must appear in the message */
        const char *low32;  /* ... or this, when a GPU reports it later (the id's low 32 bits) */
        int bad;
    } cases[] = {
        {WK_DTYPE_U8, u8_bad, "200", "200", 1},    {WK_DTYPE_U8, u8_none, NULL, NULL, 0},
        {WK_DTYPE_U32, u32_bad, "10", "10", 1},    {WK_DTYPE_U32, u32_none, NULL, NULL, 0},
        {WK_DTYPE_I64, i64_neg, "-1", "4294967295", 1}, {WK_DTYPE_I64, i64_big, "10", "10", 1},
        {WK_DTYPE_I64, i64_none, NULL, NULL, 0},
    };
    for (int k = 0; k < 5; k++) {
        const wk_op op = all_ops[k];
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            char what[64];
            snprintf(what, sizeof what, "%s ids {3, %s}", wk_dtype_name(cases[c].idt),
                     cases[c].value ? cases[c].value : "sentinel");
            wk_storage *o = NULL;
            const int scatter = op == WK_OP_SCATTER_SET || op == WK_OP_SCATTER_ADD_SET;
            wk_status st = run(scatter ? NULL : &o, op, cases[c].idt, cases[c].ids, 0);
            if (cases[c].bad && st == WK_OK && wk_device_backend(g_dev) != WK_BACKEND_CPU) {
                /* a GPU finds the id in the kernel: the error comes with the next synchronize,
                 * the op's output (all of g_dst here) is undefined */
                wk_storage_free(o);
                st = wk_device_synchronize(g_dev);
                TEST_CHECK(st == WK_ERR_INDEX_OUT_OF_RANGE, "%s: %s %s: synchronize after the op: %s",
                           g_spec, wk_op_name(op), what, wk_status_string(st));
                if (st == WK_ERR_INDEX_OUT_OF_RANGE)
                    TEST_CHECK(strstr(wk_last_error(), cases[c].low32) != NULL,
                               "%s: %s %s: message '%s' does not name the id", g_spec, wk_op_name(op),
                               what, wk_last_error());
                TEST_CHECK(wk_device_synchronize(g_dev) == WK_OK, "%s: the error was not cleared", g_spec);
                if (scatter)
                    testlib_download(g_dst_host, N_VALS, g_dst);
                continue;
            }
            if (cases[c].bad) {
                expect(st, WK_ERR_INDEX_OUT_OF_RANGE, o, op, WK_DTYPE_F32, 1, what);
                if (st == WK_ERR_INDEX_OUT_OF_RANGE)
                    TEST_CHECK(strstr(wk_last_error(), cases[c].value) != NULL,
                               "%s: %s %s: message '%s' does not name the id", g_spec, wk_op_name(op),
                               what, wk_last_error());
                continue;
            }
            /* the sentinel is valid: the call succeeds (or the device lacks the op) */
            const int sup = wk_device_supports(g_dev, op, WK_DTYPE_F32);
            TEST_CHECK(st == (sup ? WK_OK : WK_ERR_NOT_SUPPORTED), "%s: %s %s: %s (%s)", g_spec,
                       wk_op_name(op), what, wk_status_string(st), wk_last_error());
            wk_storage_free(o);
            if (scatter && st == WK_OK) /* refresh the snapshot of the destination */
                testlib_download(g_dst_host, N_VALS, g_dst);
        }
    }
}

static void test_args(void)
{
    const uint32_t ok_ids[6] = {1, 2, 0, 1, 0, 1};
    const float fids[2] = {1, 2};
    const int32_t iids[2] = {1, 2};
    wk_storage *u32 = testlib_upload(g_dev, WK_DTYPE_U32, ok_ids, 2);
    wk_storage *u32_6 = testlib_upload(g_dev, WK_DTYPE_U32, ok_ids, 6);
    wk_storage *f32 = testlib_upload(g_dev, WK_DTYPE_F32, fids, 2);
    wk_storage *i32 = testlib_upload(g_dev, WK_DTYPE_I32, iids, 2);
    const wk_layout lv = testlib_layout2(10, 2), l1 = testlib_layout1(2), l21 = testlib_layout2(2, 1);
    const wk_layout l22 = testlib_layout2(2, 2), l3 = testlib_layout1(3), l12 = testlib_layout2(1, 2);
    const wk_layout l23 = testlib_layout2(2, 3);
    const wk_dtype f = WK_DTYPE_F32;
    const wk_op sel = WK_OP_INDEX_SELECT, gat = WK_OP_GATHER, sc = WK_OP_SCATTER_SET,
                sa = WK_OP_SCATTER_ADD_SET, ia = WK_OP_INDEX_ADD;
    wk_storage *o = NULL;
    if (!u32 || !u32_6 || !f32 || !i32)
        goto done;

    /* NULL handles */
    expect(wk_index_select(NULL, g_src, &lv, u32, &l1, 0), WK_ERR_INVALID_ARGUMENT, NULL, sel, f, 0, "NULL out");
    expect(wk_index_select(&o, NULL, &lv, u32, &l1, 0), WK_ERR_INVALID_ARGUMENT, o, sel, f, 0, "NULL src");
    o = NULL;
    expect(wk_gather(&o, g_src, &lv, NULL, &l21, 0), WK_ERR_INVALID_ARGUMENT, o, gat, f, 0, "NULL ids");
    o = NULL;
    expect(wk_gather(&o, g_src, &lv, u32, NULL, 0), WK_ERR_INVALID_ARGUMENT, o, gat, f, 0, "NULL ids layout");
    o = NULL;
    expect(wk_scatter_set(NULL, &lv, u32, &l21, g_src, &l21, 0), WK_ERR_INVALID_ARGUMENT, NULL, sc, f, 0, "NULL dst");
    expect(wk_scatter_add_set(g_dst, NULL, u32, &l21, g_src, &l21, 0), WK_ERR_INVALID_ARGUMENT, NULL, sa, f, 0,
           "NULL dst layout");
    expect(wk_index_add(NULL, g_dst, &lv, u32, &l1, g_src, &l22, 0), WK_ERR_INVALID_ARGUMENT, NULL, ia, f, 0, "NULL out");
    expect(wk_index_add(&o, NULL, &lv, u32, &l1, g_src, &l22, 0), WK_ERR_INVALID_ARGUMENT, o, ia, f, 0, "NULL dst");
    o = NULL;

    /* ids dtypes other than u8/u32/i64; values of different dtypes */
    expect(wk_index_select(&o, g_src, &lv, f32, &l1, 0), WK_ERR_DTYPE, o, sel, f, 0, "f32 ids");
    o = NULL;
    expect(wk_gather(&o, g_src, &lv, i32, &l21, 0), WK_ERR_DTYPE, o, gat, f, 0, "i32 ids");
    o = NULL;
    expect(wk_scatter_set(g_dst, &lv, i32, &l21, g_src, &l21, 0), WK_ERR_DTYPE, NULL, sc, f, 0, "i32 ids");
    expect(wk_scatter_add_set(g_dst, &lv, u32, &l21, g_src_i32, &l21, 0), WK_ERR_DTYPE, NULL, sa, f, 0,
           "i32 src into f32 dst");
    expect(wk_index_add(&o, g_dst, &lv, u32, &l1, g_src_i32, &l22, 0), WK_ERR_DTYPE, o, ia, f, 0,
           "i32 src into f32 dst");
    o = NULL;

    /* dims out of range */
    expect(wk_index_select(&o, g_src, &lv, u32, &l1, 2), WK_ERR_INDEX_OUT_OF_RANGE, o, sel, f, 0, "dim 2");
    o = NULL;
    expect(wk_gather(&o, g_src, &lv, u32, &l21, -1), WK_ERR_INDEX_OUT_OF_RANGE, o, gat, f, 0, "dim -1");
    o = NULL;
    expect(wk_scatter_set(g_dst, &lv, u32, &l21, g_src, &l21, 5), WK_ERR_INDEX_OUT_OF_RANGE, NULL, sc, f, 0, "dim 5");
    expect(wk_index_add(&o, g_dst, &lv, u32, &l1, g_src, &l22, -3), WK_ERR_INDEX_OUT_OF_RANGE, o, ia, f, 0, "dim -3");
    o = NULL;

    /* shapes */
    expect(wk_index_select(&o, g_src, &lv, u32, &l12, 0), WK_ERR_SHAPE, o, sel, f, 0, "rank-2 ids");
    o = NULL;
    expect(wk_gather(&o, g_src, &lv, u32, &l1, 0), WK_ERR_SHAPE, o, gat, f, 0, "ids of another rank");
    o = NULL;
    expect(wk_gather(&o, g_src, &lv, u32_6, &l23, 0), WK_ERR_SHAPE, o, gat, f, 0, "ids wider than src");
    o = NULL;
    expect(wk_scatter_set(g_dst, &lv, u32, &l21, g_src, &l12, 0), WK_ERR_SHAPE, NULL, sc, f, 0, "src dims != ids dims");
    expect(wk_scatter_add_set(g_dst, &lv, u32_6, &l23, g_src, &l23, 0), WK_ERR_SHAPE, NULL, sa, f, 0,
           "ids wider than dst");
    expect(wk_index_add(&o, g_dst, &lv, u32, &l1, g_src, &l21, 0), WK_ERR_SHAPE, o, ia, f, 0, "src (2,1) for dst (10,2)");
    o = NULL;
    expect(wk_index_add(&o, g_dst, &lv, u32_6, &l3, g_src, &l22, 0), WK_ERR_SHAPE, o, ia, f, 0, "3 ids for 2 src rows");
    o = NULL;

    /* layouts outside their storage */
    wk_layout big = testlib_layout2(11, 2);
    expect(wk_index_select(&o, g_src, &big, u32, &l1, 0), WK_ERR_LAYOUT, o, sel, f, 0, "src past its storage");
    o = NULL;
    expect(wk_scatter_set(g_dst, &big, u32, &l21, g_src, &l21, 0), WK_ERR_LAYOUT, NULL, sc, f, 0, "dst past its storage");
    expect(wk_gather(&o, g_src, &lv, u32, &l3, 0), WK_ERR_LAYOUT, o, gat, f, 0, "ids past their storage");
    o = NULL;
done:
    wk_storage_free(u32);
    wk_storage_free(u32_6);
    wk_storage_free(f32);
    wk_storage_free(i32);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    float src[N_VALS];
    int32_t srci[N_VALS];
    for (int i = 0; i < N_VALS; i++) {
        src[i] = (float)(i + 1);
        srci[i] = i + 1;
        g_dst_host[i] = (float)(100 + i);
    }
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        for (int k = 0; k < N_VALS; k++)
            g_dst_host[k] = (float)(100 + k);
        g_src = testlib_upload(g_dev, WK_DTYPE_F32, src, N_VALS);
        g_src_i32 = testlib_upload(g_dev, WK_DTYPE_I32, srci, N_VALS);
        g_dst = testlib_upload(g_dev, WK_DTYPE_F32, g_dst_host, N_VALS);
        if (g_src && g_dst && g_src_i32) {
            test_ids();
            test_args();
        }
        wk_storage_free(g_src);
        wk_storage_free(g_src_i32);
        wk_storage_free(g_dst);
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
