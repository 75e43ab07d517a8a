/* test_gpu_index.c: the GPU indexing ops (src/gpu/gpu_index.c, kernels/index.cu) on every CUDA
 * and ROCm device; prints "skipped: no GPU" and passes where there is none.
 *   1. out-of-range ids, per op and ids dtype: the call may return WK_OK (the kernel finds the
 *      id), and then the next wk_device_synchronize returns WK_ERR_INDEX_OUT_OF_RANGE naming
 *      the op and the id (for i64, its low 32 bits); the in-place ops' destination is a view
 *      at an offset inside a larger storage whose guard elements must stay unchanged; the
 *      device then works again (a valid call gives the known answer);
 *   2. the "none" sentinel (the ids dtype's maximum): a zero element when reading, skipped
 *      when writing, as on the CPU;
 *   3. ids checked for an output with no elements;
 *   4. known answers worked out by hand: row copies (16-byte and 2-byte units, strided ids),
 *      transposed src, scatter_set "last write wins" (the rule as a formula over 100
 *      duplicates per target), an aliasing destination (row-major order), per-add rounding
 *      (f16 2048 + 1 + 1 = 2048), integer wrap through atomics (u8, i16 by compare-and-swap;
 *      i32, i64);
 *   5. the atomic float path (2^20 updates over few slices) and WK_OPTION_DETERMINISTIC on
 *      the same op: +1 updates are exact in any order (f32 f64 f16: 1024; bf16 stops at 256,
 *      where 256 + 1 rounds to 256).
 * Run: ctest -R test_gpu_index (on a GPU machine). */
#include "testlib.h"
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

static const wk_dtype id_types[3] = {WK_DTYPE_U8, WK_DTYPE_U32, WK_DTYPE_I64};

static int64_t sentinel_of(wk_dtype idt)
{
    return idt == WK_DTYPE_U8 ? 255 : idt == WK_DTYPE_U32 ? 4294967295ll : INT64_MAX;
}

/* ids of dtype idt holding v[0..n) (each representable in idt). */
static wk_storage *make_ids(wk_dtype idt, const int64_t *v, size_t n)
{
    unsigned char *buf = malloc(n * 8 + 8);
    if (!buf)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (idt == WK_DTYPE_U8)
            buf[i] = (uint8_t)v[i];
        else if (idt == WK_DTYPE_U32)
            ((uint32_t *)(void *)buf)[i] = (uint32_t)v[i];
        else
            ((int64_t *)(void *)buf)[i] = v[i];
    }
    wk_storage *s = testlib_upload(g_dev, idt, buf, n);
    free(buf);
    return s;
}

static wk_storage *up_f32(const float *v, size_t n)
{
    return testlib_upload(g_dev, WK_DTYPE_F32, v, n);
}

/* s (f32, n <= 64 elements) equals want exactly. */
static void check_f32(const wk_storage *s, const float *want, size_t n, const char *what)
{
    float got[64];
    if (!TEST_CHECK(s && wk_storage_len(s) == n && n <= 64, "%s: %s: wrong output size", g_spec,
                    what) ||
        testlib_download(got, n, s))
        return;
    for (size_t i = 0; i < n; i++)
        if (!TEST_CHECK(memcmp(&got[i], &want[i], 4) == 0, "%s: %s: element %zu is %g, want %g",
                        g_spec, what, i, got[i], want[i]))
            return;
}

static void check_ok(wk_status st, const char *what)
{
    TEST_CHECK(st == WK_OK, "%s: %s: %s (%s)", g_spec, what, wk_status_string(st), wk_last_error());
}

/* The call's status, then the next synchronize: WK_ERR_INDEX_OUT_OF_RANGE from one of them,
 * with a message naming op and the id's text; afterwards the device synchronizes cleanly. */
static void expect_bad(wk_status call, const char *op, const char *id_text, const char *what)
{
    wk_status st = call == WK_OK ? wk_device_synchronize(g_dev) : call;
    if (TEST_CHECK(st == WK_ERR_INDEX_OUT_OF_RANGE, "%s: %s: got %s, want an out-of-range error",
                   g_spec, what, wk_status_string(st))) {
        const char *m = wk_last_error();
        TEST_CHECK(strstr(m, op) && strstr(m, id_text),
                   "%s: %s: message \"%s\" should name %s and id %s", g_spec, what, m, op, id_text);
    }
    TEST_EQ_STATUS(wk_device_synchronize(g_dev), WK_OK);
}

/* ------------------------------------------------------------------ 1. bad ids */
typedef struct bad_id {
    wk_dtype idt;
    int64_t v;
    const char *text; /* how the message writes it (the low 32 bits) */
} bad_id;
static const bad_id bad_ids[4] = {
    {WK_DTYPE_U8, 200, "200"},
    {WK_DTYPE_U32, 70000, "70000"},
    {WK_DTYPE_I64, 5000, "5000"},
    {WK_DTYPE_I64, -3, "4294967293"},
};

static const float v6[6] = {1, 2, 3, 4, 5, 6};

static void bad_select_gather(const bad_id *b)
{
    const wk_layout l32 = testlib_layout2(3, 2), l23 = testlib_layout2(2, 3);
    wk_storage *src = up_f32(v6, 6), *o = NULL;
    /* index_select dim 0 of [[1,2],[3,4],[5,6]] with ids {0, bad, 1} */
    const int64_t i1[3] = {0, b->v, 1};
    wk_storage *ids = make_ids(b->idt, i1, 3);
    wk_layout li = testlib_layout1(3);
    expect_bad(wk_index_select(&o, src, &l32, ids, &li, 0), "index_select", b->text,
               "index_select bad id");
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);
    const int64_t g1[2] = {2, 0};
    ids = make_ids(b->idt, g1, 2);
    li = testlib_layout1(2);
    check_ok(wk_index_select(&o, src, &l32, ids, &li, 0), "index_select after the error");
    const float want_sel[4] = {5, 6, 1, 2};
    check_f32(o, want_sel, 4, "index_select after the error");
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);

    /* gather dim 1 of [[1,2,3],[4,5,6]] with ids [[2,bad],[1,1]], then [[2,0],[1,1]] */
    const int64_t i2[4] = {2, b->v, 1, 1}, g2[4] = {2, 0, 1, 1};
    const wk_layout lg = testlib_layout2(2, 2);
    ids = make_ids(b->idt, i2, 4);
    expect_bad(wk_gather(&o, src, &l23, ids, &lg, 1), "gather", b->text, "gather bad id");
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);
    ids = make_ids(b->idt, g2, 4);
    check_ok(wk_gather(&o, src, &l23, ids, &lg, 1), "gather after the error");
    const float want_g[4] = {3, 1, 5, 5};
    check_f32(o, want_g, 4, "gather after the error");
    wk_storage_free(o);
    wk_storage_free(ids);
    wk_storage_free(src);
}

#define GUARD (-7.5f)
/* 14 elements: guards [0, 4) and [10, 14), the 2x3 view at offset 4 holding 10..15. */
static wk_storage *guarded_dst(wk_layout *ld)
{
    float h[14];
    for (int i = 0; i < 14; i++)
        h[i] = i >= 4 && i < 10 ? (float)(6 + i) : GUARD;
    *ld = testlib_layout2(2, 3);
    ld->offset = 4;
    return up_f32(h, 14);
}

static void check_guards(const wk_storage *dst, const char *what)
{
    float h[14];
    if (testlib_download(h, 14, dst))
        return;
    for (int i = 0; i < 14; i++)
        if (i < 4 || i >= 10)
            if (!TEST_CHECK(h[i] == GUARD, "%s: %s: guard element %d is %g", g_spec, what, i, h[i]))
                return;
}

static void bad_scatter(const bad_id *b, int add)
{
    const char *op = add ? "scatter_add_set" : "scatter_set";
    const wk_layout l23 = testlib_layout2(2, 3);
    wk_layout ld;
    wk_storage *src = up_f32(v6, 6), *dst = guarded_dst(&ld);
    const int64_t ib[6] = {0, 0, 2, 1, b->v, 1}, ig[6] = {0, 0, 2, 1, 1, 1};
    wk_storage *ids = make_ids(b->idt, ib, 6);
    wk_status st = add ? wk_scatter_add_set(dst, &ld, ids, &l23, src, &l23, 1)
                       : wk_scatter_set(dst, &ld, ids, &l23, src, &l23, 1);
    expect_bad(st, op, b->text, op);
    check_guards(dst, op);
    wk_storage_free(ids);
    wk_storage_free(dst);
    /* valid: rows [10,11,12], [13,14,15] with ids [[0,0,2],[1,1,1]] and src [[1,2,3],[4,5,6]] */
    dst = guarded_dst(&ld);
    ids = make_ids(b->idt, ig, 6);
    st = add ? wk_scatter_add_set(dst, &ld, ids, &l23, src, &l23, 1)
             : wk_scatter_set(dst, &ld, ids, &l23, src, &l23, 1);
    check_ok(st, op);
    float want[14];
    const float set[6] = {2, 11, 3, 13, 6, 15}, sum[6] = {13, 11, 15, 13, 29, 15};
    for (int i = 0; i < 14; i++)
        want[i] = i >= 4 && i < 10 ? (add ? sum : set)[i - 4] : GUARD;
    check_f32(dst, want, 14, add ? "scatter_add_set after the error" : "scatter_set after the error");
    wk_storage_free(ids);
    wk_storage_free(dst);
    wk_storage_free(src);
}

static void bad_index_add(const bad_id *b)
{
    const wk_layout l32 = testlib_layout2(3, 2), l22 = testlib_layout2(2, 2),
                    li = testlib_layout1(2);
    const float s4[4] = {1, 1, 2, 2};
    wk_storage *dst = up_f32(v6, 6), *src = up_f32(s4, 4), *o = NULL;
    const int64_t ib[2] = {b->v, 0}, ig[2] = {2, 2};
    wk_storage *ids = make_ids(b->idt, ib, 2);
    expect_bad(wk_index_add(&o, dst, &l32, ids, &li, src, &l22, 0), "index_add", b->text,
               "index_add bad id");
    wk_storage_free(o), o = NULL;
    check_f32(dst, v6, 6, "index_add's dst after the error (never written)");
    wk_storage_free(ids);
    ids = make_ids(b->idt, ig, 2);
    check_ok(wk_index_add(&o, dst, &l32, ids, &li, src, &l22, 0), "index_add after the error");
    const float want[6] = {1, 2, 3, 4, 8, 9};
    check_f32(o, want, 6, "index_add after the error");
    wk_storage_free(o);
    wk_storage_free(ids);
    wk_storage_free(src);
    wk_storage_free(dst);
}

/* ------------------------------------------------------------------ 2. the sentinel */
static void sentinel(wk_dtype idt)
{
    const int64_t S = sentinel_of(idt);
    const wk_layout l32 = testlib_layout2(3, 2), l23 = testlib_layout2(2, 3),
                    l22 = testlib_layout2(2, 2), l21 = testlib_layout2(2, 1);
    wk_storage *src = up_f32(v6, 6), *o = NULL;
    const int64_t i1[2] = {S, 1};
    wk_storage *ids = make_ids(idt, i1, 2);
    wk_layout li = testlib_layout1(2);
    check_ok(wk_index_select(&o, src, &l32, ids, &li, 0), "index_select sentinel");
    const float w1[4] = {0, 0, 3, 4};
    check_f32(o, w1, 4, "index_select: the sentinel's row is zero");
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);

    const int64_t i2[2] = {S, 0}; /* gather dim 1, ids (2, 1) */
    ids = make_ids(idt, i2, 2);
    check_ok(wk_gather(&o, src, &l23, ids, &l21, 1), "gather sentinel");
    const float w2[2] = {0, 4};
    check_f32(o, w2, 2, "gather: the sentinel's element is zero");
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);
    wk_storage_free(src);

    /* scatters on [[9,9],[9,9]], ids [[S,1],[0,S]] along dim 1, src [[1,2],[3,4]] */
    const float nines[4] = {9, 9, 9, 9}, s4[4] = {1, 2, 3, 4};
    const int64_t i3[4] = {S, 1, 0, S};
    ids = make_ids(idt, i3, 4);
    src = up_f32(s4, 4);
    for (int add = 0; add < 2; add++) {
        wk_storage *dst = up_f32(nines, 4);
        check_ok(add ? wk_scatter_add_set(dst, &l22, ids, &l22, src, &l22, 1)
                     : wk_scatter_set(dst, &l22, ids, &l22, src, &l22, 1),
                 "scatter sentinel");
        const float ws[4] = {9, 2, 3, 9}, wa[4] = {9, 11, 12, 9};
        check_f32(dst, add ? wa : ws, 4, "scatter: the sentinel is skipped");
        wk_storage_free(dst);
    }
    wk_storage_free(ids);
    /* index_add on [[9,9],[9,9]] with ids {S, 0} along dim 0: row 1 of src adds to row 0 */
    const int64_t i4[2] = {S, 0};
    ids = make_ids(idt, i4, 2);
    wk_storage *dst = up_f32(nines, 4);
    check_ok(wk_index_add(&o, dst, &l22, ids, &li, src, &l22, 0), "index_add sentinel");
    const float w4[4] = {12, 13, 9, 9};
    check_f32(o, w4, 4, "index_add: the sentinel is skipped");
    wk_storage_free(o);
    wk_storage_free(dst);
    wk_storage_free(ids);
    wk_storage_free(src);
}

/* ------------------------------------------------------------------ 3. empty outputs */
static void empty_outputs(void)
{
    const int64_t d20[2] = {2, 0}, d10[2] = {1, 0}, d30[2] = {3, 0};
    const wk_layout l20 = testlib_layout(2, d20), l10 = testlib_layout(2, d10),
                    l30 = testlib_layout(2, d30), li = testlib_layout1(1);
    const int64_t bad[1] = {5};
    float one = 0;
    wk_storage *src = up_f32(&one, 1), *ids = make_ids(WK_DTYPE_U32, bad, 1), *o = NULL;
    expect_bad(wk_index_select(&o, src, &l20, ids, &li, 0), "index_select", "5",
               "index_select with an empty output");
    wk_storage_free(o), o = NULL;
    expect_bad(wk_index_add(&o, src, &l30, ids, &li, src, &l10, 0), "index_add", "5",
               "index_add with an empty output");
    wk_storage_free(o);
    wk_storage_free(ids);
    wk_storage_free(src);
}

/* ------------------------------------------------------------------ 4. known answers */
static void kat_select(void)
{
    float h[16];
    for (int i = 0; i < 16; i++)
        h[i] = (float)i; /* 4x4: row r holds 4r .. 4r+3 (16-byte rows) */
    wk_storage *src = up_f32(h, 16), *o = NULL;
    const wk_layout l44 = testlib_layout2(4, 4);
    /* ids storage {3, 9, 1, 9, 3} read with stride 2: 3, 1, 3 */
    const int64_t iv[5] = {3, 9, 1, 9, 3};
    wk_storage *ids = make_ids(WK_DTYPE_U32, iv, 5);
    wk_layout li = testlib_layout1(3);
    li.strides[0] = 2;
    check_ok(wk_index_select(&o, src, &l44, ids, &li, 0), "index_select rows");
    const float w1[12] = {12, 13, 14, 15, 4, 5, 6, 7, 12, 13, 14, 15};
    check_f32(o, w1, 12, "index_select of 16-byte rows, strided ids");
    wk_storage_free(o), o = NULL;
    /* along dim 1 (rows of one element): columns 3, 1, 3 */
    check_ok(wk_index_select(&o, src, &l44, ids, &li, 1), "index_select columns");
    const float w2[12] = {3, 1, 3, 7, 5, 7, 11, 9, 11, 15, 13, 15};
    check_f32(o, w2, 12, "index_select along dim 1");
    wk_storage_free(o), o = NULL;
    wk_storage_free(ids);
    wk_storage_free(src);

    /* transposed src: storage [[1,2,3],[4,5,6]] read as [[1,4],[2,5],[3,6]]; rows 2, 0 */
    src = up_f32(v6, 6);
    wk_layout lt = testlib_layout2(3, 2);
    lt.strides[0] = 1;
    lt.strides[1] = 3;
    const int64_t i2[2] = {2, 0};
    ids = make_ids(WK_DTYPE_I64, i2, 2);
    li = testlib_layout1(2);
    check_ok(wk_index_select(&o, src, &lt, ids, &li, 0), "index_select transposed");
    const float w3[4] = {3, 6, 1, 4};
    check_f32(o, w3, 4, "index_select of a transposed src");
    wk_storage_free(o), o = NULL;
    wk_storage_free(src);

    /* bf16 3x3 (6-byte rows: 2-byte units): rows 2, 0 */
    const double b9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    src = testlib_upload_f64(g_dev, WK_DTYPE_BF16, b9, 9);
    const wk_layout l33 = testlib_layout2(3, 3);
    check_ok(wk_index_select(&o, src, &l33, ids, &li, 0), "index_select bf16");
    double got[6];
    const double w4[6] = {7, 8, 9, 1, 2, 3};
    if (o && !testlib_download_f64(got, 6, o))
        for (int i = 0; i < 6; i++)
            TEST_CHECK(got[i] == w4[i], "%s: bf16 index_select element %d is %g, want %g",
                       g_spec, i, got[i], w4[i]);
    wk_storage_free(o);
    wk_storage_free(ids);
    wk_storage_free(src);
}

/* scatter_set along dim 0 with 100 rows of ids into 4 rows: target (t, j) holds src[i][j] of
 * the last i with ids[i][j] = t, ids[i][j] = (7i + j) % 4, src[i][j] = 64i + j. */
static void kat_last_write(void)
{
    enum { R = 100, C = 64, T = 4 };
    float *src = malloc(sizeof(float) * R * C), dst0[T * C], want[T * C];
    int64_t *iv = malloc(sizeof(int64_t) * R * C);
    if (!TEST_CHECK(src && iv, "malloc")) {
        free(src);
        free(iv);
        return;
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            src[i * C + j] = (float)(64 * i + j);
            iv[i * C + j] = (7 * i + j) % 4;
        }
    for (int t = 0; t < T; t++)
        for (int j = 0; j < C; j++) {
            dst0[t * C + j] = -1;
            want[t * C + j] = -1;
            for (int i = R - 1; i >= 0; i--)
                if ((7 * i + j) % 4 == t) {
                    want[t * C + j] = (float)(64 * i + j);
                    break;
                }
        }
    wk_storage *s = up_f32(src, R * C), *d = up_f32(dst0, T * C);
    wk_storage *ids = make_ids(WK_DTYPE_U8, iv, R * C);
    const wk_layout lrc = testlib_layout2(R, C), ltc = testlib_layout2(T, C);
    check_ok(wk_scatter_set(d, &ltc, ids, &lrc, s, &lrc, 0), "scatter_set duplicates");
    float got[T * C];
    if (!testlib_download(got, T * C, d))
        for (int k = 0; k < T * C; k++)
            if (!TEST_CHECK(got[k] == want[k], "%s: scatter_set last write: element %d is %g, want %g",
                            g_spec, k, got[k], want[k]))
                break;
    wk_storage_free(ids);
    wk_storage_free(d);
    wk_storage_free(s);
    free(src);
    free(iv);
}

static void kat_alias_and_wrap(void)
{
    /* a destination of 3 elements seen as (2, 3) with row stride 0: ids [[0,1,2],[2,1,0]] along
     * dim 1, src [[1,2,3],[4,5,6]] in row-major order: dst = {6, 5, 4} */
    const float z3[3] = {0, 0, 0};
    const int64_t ia[6] = {0, 1, 2, 2, 1, 0};
    wk_storage *d = up_f32(z3, 3), *s = up_f32(v6, 6), *ids = make_ids(WK_DTYPE_U32, ia, 6);
    wk_layout lalias = testlib_layout2(2, 3);
    lalias.strides[0] = 0;
    const wk_layout l23 = testlib_layout2(2, 3);
    check_ok(wk_scatter_set(d, &lalias, ids, &l23, s, &l23, 1), "scatter_set aliasing");
    const float wa[3] = {6, 5, 4};
    check_f32(d, wa, 3, "scatter_set into an aliasing destination");
    wk_storage_free(ids);
    wk_storage_free(s);
    wk_storage_free(d);

    /* f16: 2048 + 1 + 1 rounds at each add: 2048 (the f16 spacing there is 2, ties to even) */
    const double d1[1] = {2048}, s2[2] = {1, 1};
    const int64_t i00[2] = {0, 0};
    d = testlib_upload_f64(g_dev, WK_DTYPE_F16, d1, 1);
    s = testlib_upload_f64(g_dev, WK_DTYPE_F16, s2, 2);
    ids = make_ids(WK_DTYPE_I64, i00, 2);
    const wk_layout l1 = testlib_layout1(1), l2 = testlib_layout1(2);
    check_ok(wk_scatter_add_set(d, &l1, ids, &l2, s, &l2, 0), "f16 scatter_add_set");
    double got = 0;
    if (!testlib_download_f64(&got, 1, d))
        TEST_CHECK(got == 2048, "%s: f16 2048 + 1 + 1 gave %g, want 2048", g_spec, got);
    wk_storage_free(s);
    wk_storage_free(d);

    /* integer wrap through atomics: u8 {250, 7} += {3, 4 | 255} -> {1, 6}; i16 32767 + 1;
     * i32 INT32_MAX + 1; i64 INT64_MAX + 1 */
    const int64_t i001[3] = {0, 0, 1};
    wk_storage *ids3 = make_ids(WK_DTYPE_U8, i001, 3);
    const wk_layout l3 = testlib_layout1(3);
    const uint8_t du8[2] = {250, 7}, su8[3] = {3, 4, 255};
    d = testlib_upload(g_dev, WK_DTYPE_U8, du8, 2);
    s = testlib_upload(g_dev, WK_DTYPE_U8, su8, 3);
    check_ok(wk_scatter_add_set(d, &l2, ids3, &l3, s, &l3, 0), "u8 scatter_add_set");
    uint8_t gu8[2] = {0, 0};
    if (!testlib_download(gu8, 2, d))
        TEST_CHECK(gu8[0] == 1 && gu8[1] == 6, "%s: u8 wrap gave {%d, %d}, want {1, 6}", g_spec,
                   gu8[0], gu8[1]);
    wk_storage_free(s);
    wk_storage_free(d);
    wk_storage_free(ids3);

    const int16_t di16[1] = {32767}, si16[2] = {1, 0};
    d = testlib_upload(g_dev, WK_DTYPE_I16, di16, 1);
    s = testlib_upload(g_dev, WK_DTYPE_I16, si16, 2);
    check_ok(wk_scatter_add_set(d, &l1, ids, &l2, s, &l2, 0), "i16 scatter_add_set");
    int16_t gi16 = 0;
    if (!testlib_download(&gi16, 1, d))
        TEST_CHECK(gi16 == -32768, "%s: i16 wrap gave %d", g_spec, gi16);
    wk_storage_free(s);
    wk_storage_free(d);

    const int32_t di32[1] = {2147483647}, si32[2] = {1, 0};
    d = testlib_upload(g_dev, WK_DTYPE_I32, di32, 1);
    s = testlib_upload(g_dev, WK_DTYPE_I32, si32, 2);
    wk_storage *o = NULL;
    check_ok(wk_index_add(&o, d, &l1, ids, &l2, s, &l2, 0), "i32 index_add");
    int32_t gi32 = 0;
    if (o && !testlib_download(&gi32, 1, o))
        TEST_CHECK(gi32 == INT32_MIN, "%s: i32 wrap gave %d", g_spec, gi32);
    wk_storage_free(o);
    wk_storage_free(s);
    wk_storage_free(d);

    const int64_t di64[1] = {INT64_MAX}, si64[2] = {1, 0};
    d = testlib_upload(g_dev, WK_DTYPE_I64, di64, 1);
    s = testlib_upload(g_dev, WK_DTYPE_I64, si64, 2);
    check_ok(wk_scatter_add_set(d, &l1, ids, &l2, s, &l2, 0), "i64 scatter_add_set");
    int64_t gi64 = 0;
    if (!testlib_download(&gi64, 1, d))
        TEST_CHECK(gi64 == INT64_MIN, "%s: i64 wrap gave %lld", g_spec, (long long)gi64);
    wk_storage_free(s);
    wk_storage_free(d);
    wk_storage_free(ids);
}

/* ------------------------------------------------------------------ 5. atomic float path */
/* dst (4, 256) of zeros += src (4096, 256) of ones along dim 0 with ids[i][j] = i % 4: 2^20
 * updates over 256 slices (the atomic path unless deterministic), 1024 per target. */
static void big_adds(wk_dtype dt, int deterministic)
{
    enum { R = 4096, C = 256, T = 4 };
    const double want = dt == WK_DTYPE_BF16 ? 256 : 1024;
    double *h = malloc(sizeof(double) * R * C);
    int64_t *iv = malloc(sizeof(int64_t) * R * C);
    double got[T * C];
    if (!TEST_CHECK(h && iv, "malloc")) {
        free(h);
        free(iv);
        return;
    }
    for (int i = 0; i < R * C; i++) {
        h[i] = i < T * C ? 0 : 1;
        iv[i] = (i / C) % T;
    }
    wk_set_option(WK_OPTION_DETERMINISTIC, deterministic);
    wk_storage *d = testlib_upload_f64(g_dev, dt, h, T * C); /* zeros */
    for (int i = 0; i < R * C; i++)
        h[i] = 1;
    wk_storage *s = testlib_upload_f64(g_dev, dt, h, R * C);
    wk_storage *ids = make_ids(WK_DTYPE_I64, iv, R * C), *o = NULL;
    const wk_layout lrc = testlib_layout2(R, C), ltc = testlib_layout2(T, C);
    const wk_layout li = testlib_layout1(R);
    check_ok(wk_scatter_add_set(d, &ltc, ids, &lrc, s, &lrc, 0), "big scatter_add_set");
    if (!testlib_download_f64(got, T * C, d))
        for (int k = 0; k < T * C; k++)
            if (!TEST_CHECK(got[k] == want, "%s: %s scatter_add_set (deterministic %d): element "
                            "%d is %g, want %g", g_spec, wk_dtype_name(dt), deterministic, k,
                            got[k], want))
                break;
    /* index_add: the same through rank-1 ids (i % 4 for row i) on a fresh copy of zeros */
    for (int i = 0; i < R; i++)
        iv[i] = i % T;
    wk_storage_free(ids);
    ids = make_ids(WK_DTYPE_U32, iv, R);
    for (int i = 0; i < T * C; i++)
        h[i] = 0;
    wk_storage *z = testlib_upload_f64(g_dev, dt, h, T * C);
    check_ok(wk_index_add(&o, z, &ltc, ids, &li, s, &lrc, 0), "big index_add");
    if (o && !testlib_download_f64(got, T * C, o))
        for (int k = 0; k < T * C; k++)
            if (!TEST_CHECK(got[k] == want, "%s: %s index_add (deterministic %d): element %d is "
                            "%g, want %g", g_spec, wk_dtype_name(dt), deterministic, k, got[k],
                            want))
                break;
    wk_set_option(WK_OPTION_DETERMINISTIC, 0);
    wk_storage_free(o);
    wk_storage_free(z);
    wk_storage_free(ids);
    wk_storage_free(s);
    wk_storage_free(d);
    free(h);
    free(iv);
}

static void run_device(void)
{
    for (int k = 0; k < 4; k++) {
        bad_select_gather(&bad_ids[k]);
        bad_scatter(&bad_ids[k], 0);
        bad_scatter(&bad_ids[k], 1);
        bad_index_add(&bad_ids[k]);
    }
    for (int k = 0; k < 3; k++)
        sentinel(id_types[k]);
    empty_outputs();
    kat_select();
    kat_last_write();
    kat_alias_and_wrap();
    const wk_dtype fl[4] = {WK_DTYPE_F32, WK_DTYPE_F64, WK_DTYPE_F16, WK_DTYPE_BF16};
    for (int k = 0; k < 4; k++)
        for (int det = 0; det < 2; det++)
            big_adds(fl[k], det);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    int gpus = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(specs[i], "cpu") == 0)
            continue;
        gpus++;
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        run_device();
        TEST_EQ_STATUS(wk_device_synchronize(g_dev), WK_OK);
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    if (gpus == 0)
        printf("skipped: no GPU\n");
    return testlib_summary();
}
