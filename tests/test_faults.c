/* test_faults.c: faults leave the process usable (docs/semantics.md, "Faults"; docs/architecture.md,
 * "Threads"). On the CPU, the simt device (simt:0) and every CUDA device present:
 *   1. closing a device while other threads run ops on it: NT threads run ops on storages of
 *      the device (and make new ones on wk_storage_device of theirs) while the main thread closes
 *      the handle, twice: every op returns WK_OK with the right values (small integers, exact),
 *      and the device is freed when the last storage goes (allocation count back to the
 *      baseline). Built under ThreadSanitizer by `make tsan` (CPU only there).
 *   2. out of device memory (simt:0 with the test limit wk_simt_mem_set_limit of 256 MiB; a
 *      CUDA device as it is): allocating 32 MiB (CUDA: 1 GiB) storages until one fails gives
 *      WK_ERR_OUT_OF_MEMORY with a message saying so, *out NULL; an op still runs once one is
 *      freed; after freeing all, the same sizes succeed again, as many as before.
 *   3. a kernel fault (a GPU device; on simt not in the ASan build, whose kernels are checked by
 *      ASan instead): an op's kernel is made to write out of range by calling the backend with an
 *      output pointer no allocation holds (the test-only way past the front end's checks: an
 *      internal call). Then every call on the device fails with WK_ERR_DEVICE and a message
 *      saying the context is lost: synchronize, download (never the old or wrong data), an op, an
 *      upload; a second open of it while this handle is open fails the same way. After every
 *      storage is freed and the handle closed, wk_device_open gives a working device (simt:
 *      always; CUDA: where the driver allows, else the open fails saying the process must
 *      restart, as NVIDIA documents; both outcomes are printed).
 * Expected values are computed here (integers exact in f32). Run: ctest -R test_faults */
#include "backend.h"
#include "simt/simt_rt.h"
#include "testlib.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define FT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FT_ASAN 1
#endif
#endif

enum { N = 4096, NT = 4, ROUNDS = 40 };

static int is_gpu(const char *spec) { return strncmp(spec, "cpu", 3) != 0; }

/* ---------------------------------------------------------------- 1. close while running */
typedef struct worker {
    const wk_storage *x, *y; /* x[i] = i % 100, y[i] = 3 */
    atomic_int *closed;       /* set once the main thread has closed the handle */
    atomic_int *rounds;       /* rounds done by all workers */
    int id, after_close, bad;
    wk_status first;
    char msg[256];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    const wk_layout l = testlib_layout1(N);
    float *got = malloc(N * sizeof *got), *host = malloc(N * sizeof *host);
    /* rounds until ROUNDS of them began after the close: ops are in flight when it happens */
    for (int r = 0; w->after_close + w->bad + (w->first != WK_OK) < ROUNDS && r < 1000000 && got && host;
         r++) {
        const int was_closed = atomic_load(w->closed);
        wk_storage *z = NULL, *c = NULL, *s = NULL;
        /* z = x + y, c = a new storage on x's device, s = z * c */
        for (int i = 0; i < N; i++)
            host[i] = (float)(w->id + r);
        wk_status st = wk_binary(&z, WK_OP_ADD, w->x, &l, w->y, &l);
        if (!st)
            st = wk_storage_from_host(&c, wk_storage_device(w->x), WK_DTYPE_F32, host, N);
        if (!st)
            st = wk_binary(&s, WK_OP_MUL, z, &l, c, &l);
        if (!st)
            st = wk_storage_to_host(got, N, s);
        for (int i = 0; !st && i < N; i++)
            if (got[i] != (float)((i % 100 + 3) * (w->id + r))) {
                w->bad++;
                break;
            }
        if (st && !w->first) {
            w->first = st;
            snprintf(w->msg, sizeof w->msg, "%s", wk_last_error());
        }
        w->after_close += was_closed;
        wk_storage_free(z);
        wk_storage_free(c);
        wk_storage_free(s);
        atomic_fetch_add(w->rounds, 1);
    }
    free(got);
    free(host);
    return NULL;
}

/* check_live: the allocations are back to where they were once the last storage is freed (the
 * simt runtime's lanes, process-wide and grown on demand, go through the hook too: a first run
 * without the check makes them). */
static void test_close_while_running(const char *spec, int check_live)
{
    const long live0 = atomic_load(&testlib_live);
    wk_device *dev = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&dev, spec), WK_OK))
        return;
    float xv[N], yv[N];
    for (int i = 0; i < N; i++) {
        xv[i] = (float)(i % 100);
        yv[i] = 3;
    }
    wk_storage *x = testlib_upload(dev, WK_DTYPE_F32, xv, N);
    wk_storage *y = testlib_upload(dev, WK_DTYPE_F32, yv, N);
    atomic_int closed = 0, rounds = 0;
    worker w[NT];
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) {
        w[t] = (worker){.x = x, .y = y, .closed = &closed, .rounds = &rounds, .id = t + 1};
        pthread_create(&th[t], NULL, work, &w[t]);
    }
    while (atomic_load(&rounds) < NT) /* the workers are running */
        sched_yield();
    wk_device_close(dev);
    atomic_store(&closed, 1);
    wk_device_close(dev); /* a second close of a live device: ignored */
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        TEST_CHECK(w[t].first == WK_OK && w[t].bad == 0, "%s: thread %d: %s%s %s", spec, t,
                   w[t].bad ? "wrong values " : "", wk_status_string(w[t].first), w[t].msg);
    }
    int after = 0;
    for (int t = 0; t < NT; t++)
        after += w[t].after_close;
    printf("%s: %d threads ran ops while the handle was closed (twice), %d rounds after the close: "
           "all right\n", spec, NT, after);
    wk_storage_free(x);
    wk_storage_free(y); /* the last reference: the device goes now */
    if (check_live)
        TEST_CHECK(atomic_load(&testlib_live) == live0, "%s: %ld allocations left after the last "
                   "storage (the device was not freed)", spec, atomic_load(&testlib_live) - live0);
}

/* ---------------------------------------------------------------- 2. out of device memory */
static void test_oom(const char *spec)
{
    const int simt = strncmp(spec, "simt", 4) == 0;
    const size_t chunk = simt ? (size_t)32 << 20 : (size_t)1 << 30; /* bytes per storage */
    enum { MAXS = 4096 };
    wk_storage **s = calloc(MAXS, sizeof *s);
    wk_device *dev = NULL;
    if (!s || !TEST_EQ_STATUS(wk_device_open(&dev, spec), WK_OK)) {
        free(s);
        return;
    }
    int n = 0;
    wk_status st = WK_OK;
    while (n < MAXS && st == WK_OK) {
        wk_storage *p = (wk_storage *)(uintptr_t)1;
        st = wk_storage_alloc_uninit(&p, dev, WK_DTYPE_U8, chunk);
        if (st == WK_OK)
            s[n++] = p;
        else
            TEST_CHECK(p == (wk_storage *)(uintptr_t)1 || p == NULL, "%s: *out written on failure", spec);
    }
    TEST_CHECK(st == WK_ERR_OUT_OF_MEMORY && strstr(wk_last_error(), "out of device memory"),
               "%s: filling the device ended with %s: %s", spec, wk_status_string(st), wk_last_error());
    printf("%s: full after %d storages of %zu MiB: %s\n", spec, n, chunk >> 20, wk_last_error());
    TEST_CHECK(n > 0, "%s: not even one storage fitted", spec);
    /* a huge request fails at once, the same way */
    wk_storage *huge = NULL;
    TEST_EQ_STATUS(wk_storage_zeros(&huge, dev, WK_DTYPE_F32, (size_t)1 << 40), WK_ERR_OUT_OF_MEMORY);
    TEST_CHECK(huge == NULL, "%s: *out set by a failed zeros", spec);
    /* one freed: an op runs again */
    if (n > 0) {
        wk_storage_free(s[--n]);
        float v[4] = {1, -2, 3, -4}, r[4] = {0};
        wk_storage *a = testlib_upload(dev, WK_DTYPE_F32, v, 4), *b = NULL;
        const wk_layout l = testlib_layout1(4);
        if (a && TEST_EQ_STATUS(wk_unary(&b, WK_OP_ABS, a, &l), WK_OK) && !testlib_download(r, 4, b))
            TEST_CHECK(r[0] == 1 && r[1] == 2 && r[2] == 3 && r[3] == 4, "%s: abs after OOM", spec);
        wk_storage_free(a);
        wk_storage_free(b);
    }
    /* all freed: the same sizes fit again */
    const int had = n + 1;
    for (int i = 0; i < n; i++)
        wk_storage_free(s[i]);
    int again = 0;
    for (; again < had; again++)
        if (wk_storage_alloc_uninit(&s[again], dev, WK_DTYPE_U8, chunk) != WK_OK)
            break;
    TEST_CHECK(again == had, "%s: after freeing, %d of the %d storages fit again: %s", spec, again,
               had, wk_last_error());
    for (int i = 0; i < again; i++)
        wk_storage_free(s[i]);
    TEST_EQ_STATUS(wk_device_synchronize(dev), WK_OK);
    wk_device_close(dev);
    free(s);
}

/* ---------------------------------------------------------------- 3. a kernel fault */
/* WK_ERR_DEVICE and a message saying the context is lost. */
static void expect_lost(wk_status st, const char *spec, const char *what)
{
    TEST_CHECK(st == WK_ERR_DEVICE && strstr(wk_last_error(), "lost"),
               "%s after the fault, %s: %s: %s", spec, what, wk_status_string(st),
               st ? wk_last_error() : "");
}

static int neg_ok(wk_device *dev, const char *spec)
{
    float v[N], r[N];
    for (int i = 0; i < N; i++)
        v[i] = (float)i;
    wk_storage *a = testlib_upload(dev, WK_DTYPE_F32, v, N), *b = NULL;
    const wk_layout l = testlib_layout1(N);
    int ok = a && wk_unary(&b, WK_OP_NEG, a, &l) == WK_OK && wk_storage_to_host(r, N, b) == WK_OK;
    for (int i = 0; ok && i < N; i++)
        ok = r[i] == -(float)i;
    wk_storage_free(a);
    wk_storage_free(b);
    return TEST_CHECK(ok, "%s: neg on a fresh device: %s", spec, wk_last_error());
}

static void test_fault(const char *spec)
{
    const int simt = strncmp(spec, "simt", 4) == 0;
    wk_device *dev = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&dev, spec), WK_OK))
        return;
    neg_ok(dev, spec);
    float v[N];
    for (int i = 0; i < N; i++)
        v[i] = (float)i;
    wk_storage *x = testlib_upload(dev, WK_DTYPE_F32, v, N);
    if (!x) {
        wk_device_close(dev);
        return;
    }
    /* The kernel of neg writes N floats at `bad`: simt, 4 GiB into its 8 GiB arena, where nothing
     * is allocated below the test's limit; CUDA, the first page, which is never mapped. */
    void *bad = simt ? (void *)((char *)x->data + ((size_t)4 << 30)) : (void *)(uintptr_t)0x100;
    const wk_layout l = testlib_layout1(N);
    const wk_unary_params p = {0, 0};
    const wk_status inj = dev->be->unary(dev, WK_OP_NEG, WK_DTYPE_F32, &p, bad, x->data, &l);
    printf("%s: the out-of-range write returned %s%s%s\n", spec, wk_status_string(inj),
           inj ? ": " : " (asynchronous)", inj ? wk_last_error() : "");
    expect_lost(wk_device_synchronize(dev), spec, "synchronize");
    float got[N];
    memset(got, 0x7f, sizeof got);
    expect_lost(wk_storage_to_host(got, N, x), spec, "download");
    wk_storage *z = (wk_storage *)(uintptr_t)1;
    expect_lost(wk_unary(&z, WK_OP_NEG, x, &l), spec, "an op");
    TEST_CHECK(z == NULL || z == (wk_storage *)(uintptr_t)1, "%s: a failed op set *out", spec);
    wk_storage *u = NULL;
    expect_lost(wk_storage_from_host(&u, dev, WK_DTYPE_F32, v, N), spec, "an upload");
    TEST_CHECK(u == NULL, "%s: a failed upload set *out", spec);
    expect_lost(wk_device_synchronize(dev), spec, "synchronize again");
    wk_device *dev2 = NULL;
    const wk_status second = wk_device_open(&dev2, spec);
    TEST_CHECK(second == WK_ERR_DEVICE && strstr(wk_last_error(), "still open") && dev2 == NULL,
               "%s: a second open while the lost handle is open: %s: %s", spec,
               wk_status_string(second), second ? wk_last_error() : "");
    if (second == WK_OK)
        wk_device_close(dev2);
    printf("%s: after the fault: %s\n", spec, wk_last_error());
    /* every storage freed, the handle closed: a new context */
    wk_storage_free(x);
    wk_device_close(dev);
    dev = NULL;
    const wk_status re = wk_device_open(&dev, spec);
    if (re == WK_OK) {
        if (neg_ok(dev, spec))
            printf("%s: recovered: a new wk_device_open runs ops again\n", spec);
        wk_device_close(dev);
    } else {
        TEST_CHECK(!simt && re == WK_ERR_DEVICE && strstr(wk_last_error(), "restart"),
                   "%s: reopening after the fault: %s: %s", spec, wk_status_string(re), wk_last_error());
        printf("%s: not recovered in this process (the driver's rule): %s\n", spec, wk_last_error());
    }
}

/* ---------------------------------------------------------------- main */
int main(void)
{
    const wk_allocator a = {testlib_count_alloc, testlib_count_free, NULL};
    TEST_EQ_STATUS(wk_set_allocator(&a), WK_OK);
    const char *specs[TESTLIB_MAX_DEVICES + 1];
    int n = testlib_devices(specs);
    int simt_n = 0;
    const char *why = NULL;
    wk_backend_device_count(&simt_n, &why, WK_BACKEND_SIMT);
    int listed = 0;
    for (int i = 0; i < n; i++)
        listed |= strncmp(specs[i], "simt", 4) == 0;
    if (simt_n > 0 && !listed && !getenv("WICK_TEST_DEVICES"))
        specs[n++] = "simt:0";
    else if (simt_n == 0)
        printf("skip: simt unavailable: %s\n", why ? why : "");
    wk_simt_mem_set_limit((size_t)256 << 20); /* devices opened from here on have 256 MiB */
    for (int i = 0; i < n; i++) {
        if (strncmp(specs[i], "simt", 4) == 0)
            test_close_while_running(specs[i], 0);
        test_close_while_running(specs[i], 1);
    }
    for (int i = 0; i < n; i++) {
        if (!is_gpu(specs[i]))
            continue;
        test_oom(specs[i]);
#if defined(FT_ASAN)
        if (strncmp(specs[i], "simt", 4) == 0) {
            printf("skip: %s kernel fault: in the ASan build ASan checks the kernels' accesses "
                   "(an out-of-range write ends the process)\n", specs[i]);
            continue;
        }
#endif
        test_fault(specs[i]);
    }
    wk_simt_mem_set_limit(0);
    int with_simt = 0;
    for (int i = 0; i < n; i++)
        with_simt |= strncmp(specs[i], "simt", 4) == 0;
    if (!with_simt) /* (the simt runtime keeps its lanes for the process) */
        TEST_CHECK(atomic_load(&testlib_live) == 0, "%ld allocations still live at the end",
                   atomic_load(&testlib_live));
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);
    return testlib_summary();
}
