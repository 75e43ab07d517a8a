/* test_alloc_fail.c: allocation failures. A counting allocator installed with wk_set_allocator
 * fails the k-th allocation; every op family runs with k = 1, 2, ... until it succeeds without
 * reaching k. Each run must return WK_OK or WK_ERR_OUT_OF_MEMORY (nothing else), leave *out
 * NULL on failure, leak nothing (live allocations return to the baseline) and leave its inputs
 * untouched (in-place ops: the destination too). Runs on every device (device memory does not go
 * through the hook; host-side objects do).
 * Run: ctest -R test_alloc_fail */
#include "testlib.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- the counting allocator (thread-safe: backends may allocate from worker threads) */
static atomic_long g_allocs;  /* allocation calls so far */
static atomic_long g_live;    /* successful allocations minus frees */
static atomic_long g_fail_at; /* 0: never fail; else the allocation call with this number fails */
static atomic_long g_misaligned;

static void *count_alloc(size_t bytes, void *user)
{
    (void)user;
    const long k = atomic_fetch_add(&g_allocs, 1) + 1;
    const long f = atomic_load(&g_fail_at);
    if (f != 0 && k == f)
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p) {
        atomic_fetch_add(&g_live, 1);
        if ((uintptr_t)p % 16 != 0)
            atomic_fetch_add(&g_misaligned, 1);
    }
    return p;
}

static void count_free(void *p, void *user)
{
    (void)user;
    if (!p)
        return;
    atomic_fetch_sub(&g_live, 1);
    free(p);
}

/* ---- inputs, snapshotted around every call */
enum { NBIG = 40000 }; /* past the CPU parallel threshold, so parallel paths run too */
enum { IN_X, IN_Y, IN_H, IN_C, IN_I, IN_BIG, IN_DST, IN_COUNT };
static wk_storage *g_in[IN_COUNT];
static unsigned char *g_snap[IN_COUNT];
static wk_device *g_dev;
static const char *g_spec;

static size_t bytes_of(const wk_storage *s) { return wk_storage_len(s) * wk_dtype_size(wk_storage_dtype(s)); }

static void snap_take(void)
{
    for (int i = 0; i < IN_COUNT; i++)
        if (g_in[i])
            wk_storage_to_host(g_snap[i], wk_storage_len(g_in[i]), g_in[i]);
}

static int snap_same(void)
{
    int same = 1;
    for (int i = 0; i < IN_COUNT; i++) {
        if (!g_in[i])
            continue;
        unsigned char *now = malloc(bytes_of(g_in[i]));
        if (now && wk_storage_to_host(now, wk_storage_len(g_in[i]), g_in[i]) == WK_OK)
            same &= memcmp(now, g_snap[i], bytes_of(g_in[i])) == 0;
        free(now);
    }
    return same;
}

static int inputs_make(void)
{
    static float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {6, 5, 4, 3, 2, 1}, big[NBIG], dst[NBIG];
    static const uint16_t h[6] = {0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};
    static const uint8_t c[6] = {0, 1, 0, 1, 1, 0};
    static const int64_t iv[6] = {-3, 7, 0, 1, 2, 3};
    for (int i = 0; i < NBIG; i++) {
        big[i] = (float)(i % 97) - 48.0f;
        dst[i] = -1.0f;
    }
    g_in[IN_X] = testlib_upload(g_dev, WK_DTYPE_F32, x, 6);
    g_in[IN_Y] = testlib_upload(g_dev, WK_DTYPE_F32, y, 6);
    g_in[IN_H] = testlib_upload(g_dev, WK_DTYPE_F16, h, 6);
    g_in[IN_C] = testlib_upload(g_dev, WK_DTYPE_U8, c, 6);
    g_in[IN_I] = testlib_upload(g_dev, WK_DTYPE_I64, iv, 6);
    g_in[IN_BIG] = testlib_upload(g_dev, WK_DTYPE_F32, big, NBIG);
    g_in[IN_DST] = testlib_upload(g_dev, WK_DTYPE_F32, dst, NBIG);
    for (int i = 0; i < IN_COUNT; i++) {
        if (!g_in[i])
            return 1;
        g_snap[i] = malloc(bytes_of(g_in[i]));
        if (!g_snap[i])
            return 1;
    }
    return 0;
}

static void inputs_free(void)
{
    for (int i = 0; i < IN_COUNT; i++) {
        wk_storage_free(g_in[i]);
        free(g_snap[i]);
        g_in[i] = NULL;
        g_snap[i] = NULL;
    }
}

/* ---- the op families, each a function producing (maybe) a new storage */
typedef wk_status (*op_fn)(wk_storage **out);
static const wk_layout *L6(void)
{
    static wk_layout l;
    l = testlib_layout2(2, 3);
    return &l;
}
static const wk_layout *LBIG(void)
{
    static wk_layout l;
    l = testlib_layout2(200, 200);
    return &l;
}

static wk_status f_zeros(wk_storage **o) { return wk_storage_zeros(o, g_dev, WK_DTYPE_F32, 10); }
static wk_status f_uninit(wk_storage **o) { return wk_storage_alloc_uninit(o, g_dev, WK_DTYPE_I16, 10); }
static wk_status f_from_host(wk_storage **o)
{
    const double v[3] = {1, 2, 3};
    return wk_storage_from_host(o, g_dev, WK_DTYPE_F64, v, 3);
}
static wk_status f_clone(wk_storage **o) { return wk_storage_clone(o, g_in[IN_BIG]); }
static wk_status f_to_host(wk_storage **o)
{
    (void)o;
    float v[6];
    return wk_storage_to_host(v, 6, g_in[IN_X]);
}
static wk_status f_exp(wk_storage **o) { return wk_unary(o, WK_OP_EXP, g_in[IN_X], L6()); }
static wk_status f_gelu_f16(wk_storage **o) { return wk_unary(o, WK_OP_GELU, g_in[IN_H], L6()); }
static wk_status f_neg_big(wk_storage **o) { return wk_unary(o, WK_OP_NEG, g_in[IN_BIG], LBIG()); }
static wk_status f_affine(wk_storage **o) { return wk_affine(o, g_in[IN_I], L6(), 2.0, 1.0); }
static wk_status f_powf(wk_storage **o) { return wk_powf(o, g_in[IN_H], L6(), 2.0); }
static wk_status f_elu(wk_storage **o) { return wk_elu(o, g_in[IN_X], L6(), 1.0); }
static wk_status f_add_bcast(wk_storage **o)
{
    wk_layout lb = testlib_layout2(2, 3);
    lb.strides[0] = 0; /* row 0 of y broadcast over both rows */
    return wk_binary(o, WK_OP_ADD, g_in[IN_X], L6(), g_in[IN_Y], &lb);
}
static wk_status f_div_t(wk_storage **o)
{
    wk_layout t;
    const wk_layout l = testlib_layout2(3, 2);
    wk_layout_transpose(&t, &l, 0, 1);
    return wk_binary(o, WK_OP_DIV, g_in[IN_X], &t, g_in[IN_Y], L6());
}
static wk_status f_cmp(wk_storage **o) { return wk_cmp(o, WK_OP_LT, g_in[IN_X], L6(), g_in[IN_Y], L6()); }
static wk_status f_where(wk_storage **o)
{
    return wk_where_cond(o, g_in[IN_C], L6(), g_in[IN_X], L6(), g_in[IN_Y], L6());
}
static wk_status f_cast_f16(wk_storage **o) { return wk_to_dtype(o, g_in[IN_X], L6(), WK_DTYPE_F16); }
static wk_status f_cast_i64(wk_storage **o) { return wk_to_dtype(o, g_in[IN_I], L6(), WK_DTYPE_BF16); }
static wk_status f_cast_big(wk_storage **o) { return wk_to_dtype(o, g_in[IN_BIG], LBIG(), WK_DTYPE_F8E4M3); }
static wk_status f_sum0(wk_storage **o)
{
    const int32_t d[1] = {0};
    return wk_reduce(o, WK_OP_SUM, g_in[IN_X], L6(), d, 1);
}
static wk_status f_argmax_big(wk_storage **o)
{
    const int32_t d[1] = {1};
    return wk_reduce(o, WK_OP_ARGMAX, g_in[IN_BIG], LBIG(), d, 1);
}
static wk_status f_sum_all_big(wk_storage **o)
{
    const int32_t d[2] = {1, 0};
    return wk_reduce(o, WK_OP_SUM, g_in[IN_BIG], LBIG(), d, 2);
}
static wk_status f_max_f16(wk_storage **o)
{
    const int32_t d[2] = {0, 1};
    return wk_reduce(o, WK_OP_MAX, g_in[IN_H], L6(), d, 2);
}
static wk_status f_const_set(wk_storage **o)
{
    (void)o;
    wk_layout l = testlib_layout2(100, 100);
    l.strides[0] = 300;
    l.strides[1] = 3;
    const float v = 5.0f;
    return wk_const_set(g_in[IN_DST], &l, &v);
}
static wk_status f_copy_strided(wk_storage **o)
{
    (void)o;
    wk_layout t;
    wk_layout_transpose(&t, LBIG(), 0, 1);
    return wk_copy_strided_src(g_in[IN_DST], 0, g_in[IN_BIG], &t);
}
static wk_status f_copy2d(wk_storage **o)
{
    (void)o;
    return wk_copy2d(g_in[IN_DST], g_in[IN_BIG], 100, 150, 200, 300, 10, 5);
}

/* One sweep k = 1, 2, ... With check_live, every call must return the live count to where it
 * was; without it (the first, cold sweep on a GPU, whose backend may fill per-device caches such
 * as loaded kernel modules on first use) only the status, *out and the inputs are checked; those
 * caches must still be gone when the device closes (checked in main). */
static void sweep(const char *name, op_fn fn, int check_live)
{
    int ok = 0;
    long k;
    for (k = 1; k <= 10000 && !ok; k++) {
        snap_take();
        const long base = atomic_load(&g_live);
        const long start = atomic_load(&g_allocs);
        wk_storage *o = NULL;
        atomic_store(&g_fail_at, start + k);
        const wk_status st = fn(&o);
        atomic_store(&g_fail_at, 0);
        const int reached = atomic_load(&g_allocs) >= start + k;
        if (st == WK_OK) {
            wk_storage_free(o);
            TEST_CHECK(!check_live || atomic_load(&g_live) == base, "%s: %s succeeded with "
                       "allocation %ld failing but live allocations went %ld -> %ld", g_spec, name,
                       k, base, atomic_load(&g_live));
            ok = !reached; /* done once k is past every allocation the op makes */
            continue;
        }
        TEST_CHECK(st == WK_ERR_OUT_OF_MEMORY, "%s: %s with allocation %ld failing: %s (%s)", g_spec,
                   name, k, wk_status_string(st), wk_last_error());
        TEST_CHECK(reached, "%s: %s failed (%s) without reaching allocation %ld", g_spec, name,
                   wk_status_string(st), k);
        TEST_CHECK(o == NULL, "%s: %s failed but set *out", g_spec, name);
        TEST_CHECK(!check_live || atomic_load(&g_live) == base, "%s: %s leaked with allocation %ld "
                   "failing: live %ld -> %ld", g_spec, name, k, base, atomic_load(&g_live));
        TEST_CHECK(snap_same(), "%s: %s changed its inputs with allocation %ld failing", g_spec, name, k);
    }
    TEST_CHECK(ok, "%s: %s never succeeded", g_spec, name);
    printf("  %-16s ok after %ld failure points%s\n", name, k - 2, check_live ? "" : " (cold)");
}

/* The CPU backend keeps no caches: strict from the first call. A GPU backend gets a cold sweep
 * first, then a strict one. */
static void run_family(const char *name, op_fn fn, int is_cpu)
{
    if (!is_cpu)
        sweep(name, fn, 0);
    sweep(name, fn, 1);
}

static void test_device_open(const char *spec)
{
    for (long k = 1; k <= 1000; k++) {
        const long base = atomic_load(&g_live), start = atomic_load(&g_allocs);
        wk_device *d = NULL;
        atomic_store(&g_fail_at, start + k);
        const wk_status st = wk_device_open(&d, spec);
        atomic_store(&g_fail_at, 0);
        const int reached = atomic_load(&g_allocs) >= start + k;
        if (st == WK_OK) {
            wk_device_close(d);
            TEST_CHECK(atomic_load(&g_live) == base, "%s: open/close leaked: %ld -> %ld", spec, base,
                       atomic_load(&g_live));
            if (!reached)
                return;
            continue;
        }
        TEST_CHECK(st == WK_ERR_OUT_OF_MEMORY, "open %s with allocation %ld failing: %s (%s)", spec,
                   k, wk_status_string(st), wk_last_error());
        TEST_CHECK(d == NULL, "open %s failed but set the handle", spec);
        TEST_CHECK(atomic_load(&g_live) == base, "open %s leaked with allocation %ld failing", spec, k);
    }
    TEST_CHECK(0, "open %s never succeeded", spec);
}

int main(void)
{
    static const struct { const char *name; op_fn fn; } fams[] = {
        {"zeros", f_zeros},         {"alloc_uninit", f_uninit}, {"from_host", f_from_host},
        {"clone", f_clone},         {"to_host", f_to_host},     {"exp", f_exp},
        {"gelu f16", f_gelu_f16},   {"neg big", f_neg_big},     {"affine i64", f_affine},
        {"powf f16", f_powf},       {"elu", f_elu},             {"add bcast", f_add_bcast},
        {"div transposed", f_div_t}, {"cmp", f_cmp},            {"where_cond", f_where},
        {"to f16", f_cast_f16},     {"i64 to bf16", f_cast_i64}, {"big to f8", f_cast_big},
        {"sum dim 0", f_sum0},      {"argmax big", f_argmax_big}, {"sum all big", f_sum_all_big},
        {"max f16", f_max_f16},     {"const_set", f_const_set}, {"copy_strided", f_copy_strided},
        {"copy2d", f_copy2d},
    };
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs); /* before the hook: may touch drivers */
    const wk_allocator a = {count_alloc, count_free, NULL};
    if (!TEST_EQ_STATUS(wk_set_allocator(&a), WK_OK))
        return testlib_summary();
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        printf("device %s\n", g_spec);
        test_device_open(g_spec);
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        if (!inputs_make()) {
            const int is_cpu = wk_device_backend(g_dev) == WK_BACKEND_CPU;
            for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
                run_family(fams[f].name, fams[f].fn, is_cpu);
        } else {
            TEST_CHECK(0, "%s: could not make the inputs", g_spec);
        }
        inputs_free();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    /* Everything is freed (device caches included): live allocations back to zero, and the hook
     * can be removed. */
    TEST_EQ_INT(atomic_load(&g_live), 0);
    TEST_EQ_INT(atomic_load(&g_misaligned), 0);
    TEST_CHECK(atomic_load(&g_allocs) > 0, "the library never called the allocator hook");
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);
    return testlib_summary();
}
