/* test_bad_fused.c: every error path of the fused ops (docs/semantics.md, "Fused ops" and
 * "Errors"), with the exact status: NULL arguments, malformed layouts, rank 0, dtype rules,
 * alpha/beta dims, rope shapes (rank, odd D, cos/sin dims, too few positions, batch mismatch),
 * arg_sort rows past 2^32. Each failed call must leave *out NULL, name the op in
 * wk_last_error(), and leave the inputs untouched. The statuses are the same on every device
 * (the front end checks shapes before asking the backend). Allocation failures: with a counting
 * allocator, the k-th allocation of each op fails for k = 1, 2, ... until the op succeeds; every
 * run returns WK_OK or WK_ERR_OUT_OF_MEMORY, leaves *out NULL on failure and leaks nothing
 * (the CPU's scratch buffers: transposed copies, the sort's items). Run: ctest -R test_bad_fused */
#include "testlib.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

enum { FX_X, FX_A, FX_B, FX_I32, FX_F64, FX_COUNT };
static wk_storage *g_fx[FX_COUNT];
static unsigned char g_snap[FX_COUNT][128];

static void fixtures_make(void)
{
    const float x[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const float a[4] = {1, 1, 1, 1}, b[4] = {0, 0, 0, 0};
    const int32_t i[4] = {1, 2, 3, 4};
    const double d[4] = {1, 2, 3, 4};
    g_fx[FX_X] = testlib_upload(g_dev, WK_DTYPE_F32, x, 16);
    g_fx[FX_A] = testlib_upload(g_dev, WK_DTYPE_F32, a, 4);
    g_fx[FX_B] = testlib_upload(g_dev, WK_DTYPE_F32, b, 4);
    g_fx[FX_I32] = testlib_upload(g_dev, WK_DTYPE_I32, i, 4);
    g_fx[FX_F64] = testlib_upload(g_dev, WK_DTYPE_F64, d, 4);
}

static void fixtures_free(void)
{
    for (int i = 0; i < FX_COUNT; i++) {
        wk_storage_free(g_fx[i]);
        g_fx[i] = NULL;
    }
}

static void snap(int take, int *same)
{
    for (int i = 0; i < FX_COUNT; i++) {
        unsigned char now[128];
        if (!g_fx[i] || wk_storage_to_host(now, wk_storage_len(g_fx[i]), g_fx[i]) != WK_OK)
            continue;
        const size_t bytes = wk_storage_len(g_fx[i]) * wk_dtype_size(wk_storage_dtype(g_fx[i]));
        if (take)
            memcpy(g_snap[i], now, bytes);
        else
            *same &= memcmp(now, g_snap[i], bytes) == 0;
    }
}

/* A call that must fail with `want`: `o` is its output, which must stay NULL; the message must
 * name `name`; the fixtures must be unchanged. */
#define BAD(want, name, ...)                                                                    \
    do {                                                                                        \
        wk_storage *o = NULL;                                                                   \
        int same_ = 1;                                                                          \
        snap(1, &same_);                                                                        \
        const wk_status st_ = (__VA_ARGS__);                                                    \
        TEST_EQ_STATUS(st_, want);                                                              \
        TEST_CHECK(strstr(wk_last_error(), name) != NULL, "%s: message \"%s\" does not name %s", \
                   g_spec, wk_last_error(), name);                                              \
        TEST_CHECK(o == NULL, "%s: output set by a failed call: %s", g_spec, #__VA_ARGS__);     \
        wk_storage_free(o);                                                                     \
        snap(0, &same_);                                                                        \
        TEST_CHECK(same_, "%s: inputs changed by a failed call: %s", g_spec, #__VA_ARGS__);     \
    } while (0)

static void test_softmax_sort(void)
{
    wk_storage *const x = g_fx[FX_X];
    const wk_layout l = testlib_layout2(4, 4), l0 = testlib_layout(0, NULL), l4 = testlib_layout1(4);
    const wk_layout past = testlib_layout2(4, 5); /* 20 elements of a 16-element storage */
    const char *sm = "softmax_last_dim", *as = "arg_sort_last_dim";
    BAD(WK_ERR_INVALID_ARGUMENT, sm, wk_softmax_last_dim(NULL, x, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, sm, wk_softmax_last_dim(&o, NULL, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, sm, wk_softmax_last_dim(&o, x, NULL));
    BAD(WK_ERR_LAYOUT, sm, wk_softmax_last_dim(&o, x, &past));
    BAD(WK_ERR_SHAPE, sm, wk_softmax_last_dim(&o, x, &l0));
    BAD(WK_ERR_DTYPE, sm, wk_softmax_last_dim(&o, g_fx[FX_I32], &l4));
    BAD(WK_ERR_INVALID_ARGUMENT, as, wk_arg_sort_last_dim(NULL, x, &l, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, as, wk_arg_sort_last_dim(&o, NULL, &l, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, as, wk_arg_sort_last_dim(&o, x, NULL, 0));
    BAD(WK_ERR_LAYOUT, as, wk_arg_sort_last_dim(&o, x, &past, 1));
    BAD(WK_ERR_SHAPE, as, wk_arg_sort_last_dim(&o, x, &l0, 1));
    /* a row of 2^32 + 1 elements (stride 0: inside the storage) has no u32 indices */
    wk_layout huge = testlib_layout1((INT64_C(1) << 32) + 1);
    huge.strides[0] = 0;
    BAD(WK_ERR_SHAPE, as, wk_arg_sort_last_dim(&o, x, &huge, 1));
}

static void test_norm(void)
{
    wk_storage *const x = g_fx[FX_X], *const a = g_fx[FX_A], *const b = g_fx[FX_B];
    const wk_layout l = testlib_layout2(4, 4), l4 = testlib_layout1(4), l3 = testlib_layout1(3);
    const wk_layout l0 = testlib_layout(0, NULL), l14 = testlib_layout2(1, 4);
    const wk_layout past = testlib_layout1(5);
    const char *rn = "rms_norm", *ln = "layer_norm";
    BAD(WK_ERR_INVALID_ARGUMENT, rn, wk_rms_norm(NULL, x, &l, a, &l4, 1e-5f));
    BAD(WK_ERR_INVALID_ARGUMENT, rn, wk_rms_norm(&o, NULL, &l, a, &l4, 1e-5f));
    BAD(WK_ERR_INVALID_ARGUMENT, rn, wk_rms_norm(&o, x, NULL, a, &l4, 1e-5f));
    BAD(WK_ERR_INVALID_ARGUMENT, rn, wk_rms_norm(&o, x, &l, NULL, &l4, 1e-5f));
    BAD(WK_ERR_INVALID_ARGUMENT, rn, wk_rms_norm(&o, x, &l, a, NULL, 1e-5f));
    BAD(WK_ERR_LAYOUT, rn, wk_rms_norm(&o, x, &l, a, &past, 1e-5f));
    BAD(WK_ERR_SHAPE, rn, wk_rms_norm(&o, x, &l0, a, &l4, 1e-5f));
    BAD(WK_ERR_SHAPE, rn, wk_rms_norm(&o, x, &l, a, &l3, 1e-5f));   /* alpha (3) for D = 4 */
    BAD(WK_ERR_SHAPE, rn, wk_rms_norm(&o, x, &l, a, &l14, 1e-5f));  /* alpha (1, 4): rank 1 */
    BAD(WK_ERR_DTYPE, rn, wk_rms_norm(&o, x, &l, g_fx[FX_F64], &l4, 1e-5f));
    BAD(WK_ERR_DTYPE, rn, wk_rms_norm(&o, g_fx[FX_I32], &l4, g_fx[FX_I32], &l4, 1e-5f));
    BAD(WK_ERR_INVALID_ARGUMENT, ln, wk_layer_norm(NULL, x, &l, a, &l4, b, &l4, 1e-5f));
    BAD(WK_ERR_INVALID_ARGUMENT, ln, wk_layer_norm(&o, x, &l, a, &l4, NULL, &l4, 1e-5f));
    BAD(WK_ERR_INVALID_ARGUMENT, ln, wk_layer_norm(&o, x, &l, a, &l4, b, NULL, 1e-5f));
    BAD(WK_ERR_LAYOUT, ln, wk_layer_norm(&o, x, &l, a, &l4, b, &past, 1e-5f));
    BAD(WK_ERR_SHAPE, ln, wk_layer_norm(&o, x, &l, a, &l4, b, &l3, 1e-5f)); /* beta (3) */
    BAD(WK_ERR_SHAPE, ln, wk_layer_norm(&o, x, &l0, a, &l4, b, &l4, 1e-5f));
    BAD(WK_ERR_DTYPE, ln, wk_layer_norm(&o, x, &l, a, &l4, g_fx[FX_F64], &l4, 1e-5f));
    BAD(WK_ERR_DTYPE, ln, wk_layer_norm(&o, g_fx[FX_I32], &l4, g_fx[FX_I32], &l4, g_fx[FX_I32],
                                        &l4, 1e-5f));
}

/* BAD for the two-output ops: o and s2 must both stay NULL. */
#define BAD2(want, name, ...)                                                                   \
    do {                                                                                        \
        wk_storage *s2 = NULL;                                                                  \
        BAD(want, name, __VA_ARGS__);                                                           \
        TEST_CHECK(s2 == NULL, "%s: sum set by a failed call: %s", g_spec, #__VA_ARGS__);       \
        wk_storage_free(s2);                                                                    \
    } while (0)

static void test_add_norm(void)
{
    wk_storage *const x = g_fx[FX_X], *const a = g_fx[FX_A], *const b = g_fx[FX_B];
    wk_storage *const i32 = g_fx[FX_I32], *const f64 = g_fx[FX_F64];
    const wk_layout l = testlib_layout2(4, 4), l4 = testlib_layout1(4), l3 = testlib_layout1(3);
    const wk_layout l0 = testlib_layout(0, NULL), l14 = testlib_layout2(1, 4);
    const wk_layout past = testlib_layout2(4, 5);
    const char *rn = "add_rms_norm", *ln = "add_layer_norm";
    BAD2(WK_ERR_INVALID_ARGUMENT, rn, wk_add_rms_norm(&s2, NULL, x, &l, x, &l, a, &l4, 1e-5f));
    BAD2(WK_ERR_INVALID_ARGUMENT, rn, wk_add_rms_norm(&o, &o, x, &l, x, &l, a, &l4, 1e-5f));
    BAD2(WK_ERR_INVALID_ARGUMENT, rn, wk_add_rms_norm(&s2, &o, NULL, &l, x, &l, a, &l4, 1e-5f));
    BAD2(WK_ERR_INVALID_ARGUMENT, rn, wk_add_rms_norm(&s2, &o, x, &l, NULL, &l, a, &l4, 1e-5f));
    BAD2(WK_ERR_INVALID_ARGUMENT, rn, wk_add_rms_norm(&s2, &o, x, &l, x, NULL, a, &l4, 1e-5f));
    BAD2(WK_ERR_INVALID_ARGUMENT, rn, wk_add_rms_norm(&s2, &o, x, &l, x, &l, NULL, &l4, 1e-5f));
    BAD2(WK_ERR_LAYOUT, rn, wk_add_rms_norm(&s2, &o, x, &l, x, &past, a, &l4, 1e-5f));
    BAD2(WK_ERR_SHAPE, rn, wk_add_rms_norm(&s2, &o, x, &l, x, &l14, a, &l4, 1e-5f)); /* r (1, 4) */
    BAD2(WK_ERR_SHAPE, rn, wk_add_rms_norm(&s2, &o, x, &l0, x, &l0, a, &l4, 1e-5f));
    BAD2(WK_ERR_SHAPE, rn, wk_add_rms_norm(&s2, &o, x, &l, x, &l, a, &l3, 1e-5f));
    BAD2(WK_ERR_DTYPE, rn, wk_add_rms_norm(&s2, &o, x, &l4, f64, &l4, a, &l4, 1e-5f));
    BAD2(WK_ERR_DTYPE, rn, wk_add_rms_norm(&s2, &o, x, &l, x, &l, f64, &l4, 1e-5f));
    BAD2(WK_ERR_DTYPE, rn, wk_add_rms_norm(&s2, &o, i32, &l4, i32, &l4, i32, &l4, 1e-5f));
    BAD2(WK_ERR_INVALID_ARGUMENT, ln,
         wk_add_layer_norm(&s2, &o, x, &l, x, &l, a, &l4, NULL, &l4, 1e-5f));
    BAD2(WK_ERR_SHAPE, ln, wk_add_layer_norm(&s2, &o, x, &l, x, &l, a, &l4, b, &l3, 1e-5f));
    BAD2(WK_ERR_DTYPE, ln, wk_add_layer_norm(&s2, &o, x, &l, x, &l, a, &l4, f64, &l4, 1e-5f));
    BAD2(WK_ERR_SHAPE, ln, wk_add_layer_norm(NULL, &o, x, &l, x, &l14, a, &l4, b, &l4, 1e-5f));
}

typedef wk_status (*rope_fn)(wk_storage **, const wk_storage *, const wk_layout *,
                             const wk_storage *, const wk_layout *, const wk_storage *,
                             const wk_layout *);

static void test_rope(void)
{
    wk_storage *const x = g_fx[FX_X], *const c = g_fx[FX_A], *const s = g_fx[FX_B];
    const rope_fn fns[3] = {wk_rope, wk_rope_i, wk_rope_thd};
    const char *names[3] = {"rope", "rope_i", "rope_thd"};
    /* x (1, 2, 2, 4): 16 elements; T = 2 for every op (dims 1 and 2 are both 2) */
    const int64_t xd[4] = {1, 2, 2, 4}, x3d[3] = {2, 2, 4}, xodd[4] = {1, 1, 4, 3};
    const int64_t c22[2] = {2, 2}, c12[2] = {1, 2}, c21[2] = {2, 1}, c4[1] = {4};
    const int64_t c212[3] = {2, 1, 2}, c122[3] = {1, 2, 2};
    const wk_layout lx = testlib_layout(4, xd), lx3 = testlib_layout(3, x3d);
    const wk_layout lodd = testlib_layout(4, xodd), lc = testlib_layout(2, c22);
    const wk_layout lc_few = testlib_layout(2, c12), lc_d = testlib_layout(2, c21);
    const wk_layout lc1 = testlib_layout(1, c4), lc_b = testlib_layout(3, c212);
    const wk_layout lc_b1 = testlib_layout(3, c122); /* B = 1: valid, but 4 elements needed */
    const wk_layout past = testlib_layout2(3, 2);
    const int64_t id[4] = {1, 1, 1, 4};
    const wk_layout li = testlib_layout(4, id); /* 4 elements: fits the i32 fixture */
    for (int k = 0; k < 3; k++) {
        const rope_fn f = fns[k];
        const char *nm = names[k];
        BAD(WK_ERR_INVALID_ARGUMENT, nm, f(NULL, x, &lx, c, &lc, s, &lc));
        BAD(WK_ERR_INVALID_ARGUMENT, nm, f(&o, NULL, &lx, c, &lc, s, &lc));
        BAD(WK_ERR_INVALID_ARGUMENT, nm, f(&o, x, &lx, NULL, &lc, s, &lc));
        BAD(WK_ERR_INVALID_ARGUMENT, nm, f(&o, x, &lx, c, &lc, s, NULL));
        BAD(WK_ERR_LAYOUT, nm, f(&o, x, &lx, c, &past, s, &lc));
        BAD(WK_ERR_LAYOUT, nm, f(&o, x, &lx, c, &lc, s, &past));
        BAD(WK_ERR_SHAPE, nm, f(&o, x, &lx3, c, &lc, s, &lc));      /* x rank 3 */
        BAD(WK_ERR_SHAPE, nm, f(&o, x, &lodd, c, &lc, s, &lc));     /* D = 3 odd */
        BAD(WK_ERR_SHAPE, nm, f(&o, x, &lx, c, &lc_few, s, &lc_few)); /* 1 position for T = 2 */
        BAD(WK_ERR_SHAPE, nm, f(&o, x, &lx, c, &lc_d, s, &lc_d));   /* D/2 = 1, want 2 */
        BAD(WK_ERR_SHAPE, nm, f(&o, x, &lx, c, &lc1, s, &lc1));     /* cos rank 1 */
        BAD(WK_ERR_SHAPE, nm, f(&o, x, &lx, c, &lc_b, s, &lc_b));   /* batch 2 for B = 1 */
        BAD(WK_ERR_SHAPE, nm, f(&o, x, &lx, c, &lc, s, &lc_b1));    /* cos, sin dims differ */
        BAD(WK_ERR_DTYPE, nm, f(&o, x, &lx, g_fx[FX_F64], &lc, s, &lc));
        BAD(WK_ERR_DTYPE, nm, f(&o, x, &lx, c, &lc, g_fx[FX_F64], &lc));
        BAD(WK_ERR_DTYPE, nm, f(&o, g_fx[FX_I32], &li, g_fx[FX_I32], &lc, g_fx[FX_I32], &lc));
    }
}

/* ---- allocation failures */
static atomic_long g_allocs, g_live, g_fail_at;

static void *count_alloc(size_t bytes, void *user)
{
    (void)user;
    const long k = atomic_fetch_add(&g_allocs, 1) + 1;
    if (atomic_load(&g_fail_at) == k)
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p)
        atomic_fetch_add(&g_live, 1);
    return p;
}

static void count_free(void *p, void *user)
{
    (void)user;
    if (p) {
        atomic_fetch_sub(&g_live, 1);
        free(p);
    }
}

enum { BIG = 40000 };
static wk_storage *g_big, *g_vec;
static wk_layout g_lt, g_lrow, g_lv, g_lx4, g_lc, g_lrow4;

static wk_status f_softmax(wk_storage **o) { return wk_softmax_last_dim(o, g_big, &g_lt); }
static wk_status f_rms(wk_storage **o) { return wk_rms_norm(o, g_big, &g_lt, g_vec, &g_lv, 1e-5f); }
static wk_status f_layer(wk_storage **o)
{
    return wk_layer_norm(o, g_big, &g_lt, g_vec, &g_lv, g_vec, &g_lv, 1e-5f);
}
static wk_status f_rope(wk_storage **o)
{
    return wk_rope(o, g_big, &g_lx4, g_big, &g_lc, g_big, &g_lc);
}
static wk_status f_add_rms(wk_storage **o) /* sum not returned: allocated and freed inside */
{
    return wk_add_rms_norm(NULL, o, g_big, &g_lt, g_big, &g_lt, g_vec, &g_lv, 1e-5f);
}
static wk_status f_add_layer(wk_storage **o) /* sum returned, freed here */
{
    wk_storage *sum = NULL;
    const wk_status st = wk_add_layer_norm(&sum, o, g_big, &g_lrow4, g_big, &g_lrow4, g_vec,
                                           &g_lv, g_vec, &g_lv, 1e-5f);
    TEST_CHECK(st == WK_OK || sum == NULL, "%s: add_layer_norm: sum set by a failed call", g_spec);
    wk_storage_free(sum);
    return st;
}
static wk_status f_sort_rows(wk_storage **o) { return wk_arg_sort_last_dim(o, g_big, &g_lt, 1); }
static wk_status f_sort_row(wk_storage **o) { return wk_arg_sort_last_dim(o, g_big, &g_lrow, 0); }

static void test_alloc_fail(void)
{
    static float big[BIG];
    for (int i = 0; i < BIG; i++)
        big[i] = (float)(i % 97) - 48.0f;
    g_big = testlib_upload(g_dev, WK_DTYPE_F32, big, BIG);
    g_vec = testlib_upload(g_dev, WK_DTYPE_F32, big, 200);
    const wk_layout l = testlib_layout2(200, 200);
    const int64_t xd[4] = {2, 4, 50, 100}, cd[2] = {50, 50};
    wk_layout_transpose(&g_lt, &l, 0, 1);
    g_lrow = testlib_layout2(1, BIG);
    g_lv = testlib_layout1(200);
    g_lx4 = testlib_layout(4, xd);
    g_lc = testlib_layout(2, cd);
    g_lrow4 = testlib_layout2(200, 200); /* contiguous rows: the fused kernel on a GPU */
    static const struct {
        const char *name;
        wk_status (*fn)(wk_storage **);
    } ops[] = {{"softmax transposed", f_softmax}, {"rms_norm transposed", f_rms},
               {"layer_norm transposed", f_layer}, {"rope", f_rope},
               {"arg_sort 200 rows", f_sort_rows}, {"arg_sort one row", f_sort_row},
               {"add_rms_norm transposed", f_add_rms}, {"add_layer_norm rows", f_add_layer}};
    for (size_t i = 0; g_big && g_vec && i < sizeof ops / sizeof ops[0]; i++) {
        int done = 0;
        wk_storage *warm = NULL; /* one good call first: tables of a GPU allocator at size */
        if (ops[i].fn(&warm) == WK_OK)
            wk_storage_free(warm);
        for (long k = 1; k <= 50 && !done; k++) {
            wk_storage *o = NULL;
            const long live0 = atomic_load(&g_live);
            atomic_store(&g_fail_at, atomic_load(&g_allocs) + k);
            const wk_status st = ops[i].fn(&o);
            atomic_store(&g_fail_at, 0);
            done = st == WK_OK;
            if (!TEST_CHECK(st == WK_OK || st == WK_ERR_OUT_OF_MEMORY || st == WK_ERR_NOT_SUPPORTED,
                            "%s: %s with allocation %ld failing: %s", g_spec, ops[i].name, k,
                            wk_status_string(st)))
                break;
            done |= st == WK_ERR_NOT_SUPPORTED;
            TEST_CHECK(st == WK_OK || o == NULL, "%s: %s: output set by a failed call", g_spec,
                       ops[i].name);
            wk_storage_free(o);
            TEST_CHECK(atomic_load(&g_live) == live0, "%s: %s leaks with allocation %ld failing",
                       g_spec, ops[i].name, k);
        }
        TEST_CHECK(done, "%s: %s never succeeded", g_spec, ops[i].name);
    }
    wk_storage_free(g_big);
    wk_storage_free(g_vec);
    g_big = g_vec = NULL;
}

int main(void)
{
    /* A GPU's caching allocator keeps freed blocks, and grows its host-side tables, across
     * calls: not leaks, but they move the live count. Every free is real with this. */
    setenv("WICK_GPU_NO_CACHE", "1", 1);
    const wk_allocator counting = {count_alloc, count_free, NULL};
    TEST_EQ_STATUS(wk_set_allocator(&counting), WK_OK);
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        fixtures_make();
        test_softmax_sort();
        test_norm();
        test_add_norm();
        test_rope();
        test_alloc_fail();
        fixtures_free();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    wk_set_allocator(NULL);
    return testlib_summary();
}
