/* test_threads.c: several threads using the library at once (docs/architecture.md, "Threads").
 *   1. NT threads run ops concurrently on ONE shared device handle, reading shared input
 *      storages, each writing its own outputs, and each failing on purpose with a message that
 *      names its own thread (an out-of-range id of its own), which wk_last_error() on that thread
 *      must show and no other thread's (on a GPU, whose kernels report a bad id at the next
 *      synchronize of the handle, this is checked where each thread owns its handle: phase 3).
 *   2. The same threads draw random numbers from the shared device: the blocks they get are
 *      disjoint pieces of the one stream a single draw of the total gives (the counter is taken
 *      atomically).
 *   3. Each thread opens its own device handles, runs ops on them and closes them, over and
 *      over, while the others do the same.
 * Every result is compared with a value computed here in exact arithmetic (small integers in
 * f32/f64). Runs on every device present (a GPU too). Built under ThreadSanitizer by `make tsan`,
 * where any data race fails the test.
 * Run: ctest -R test_threads */
#include "testlib.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { NT = 4, ROUNDS = 6, N = 40000 /* past the CPU's parallel threshold: OpenMP inside */ };
enum { RN = 256, RK = 8 }; /* random: each thread draws RK blocks of RN */

typedef struct worker {
    int id;
    const char *spec;
    wk_device *dev;        /* the shared device (phases 1, 2) */
    const wk_storage *a, *b; /* shared inputs: a[i] = i % 10, b[i] = 2 * (i % 10) */
    int fails;
    char first[256];
    float *blocks;         /* phase 2: RK * RN draws */
} worker;

static void fail(worker *w, const char *what)
{
    if (w->fails++ == 0)
        snprintf(w->first, sizeof w->first, "%s: thread %d: %s (last error: %s)", w->spec, w->id,
                 what, wk_last_error());
}
#define WCHECK(w, cond, what) do { if (!(cond)) fail((w), (what)); } while (0)

/* c = a + b, then sum over everything, then a bad index_select naming this thread. */
static void ops_round(worker *w, wk_device *dev, const wk_storage *a, const wk_storage *b)
{
    const wk_layout l = testlib_layout1(N);
    wk_storage *c = NULL, *s = NULL, *o = NULL, *ids = NULL, *m = NULL;
    WCHECK(w, wk_binary(&c, WK_OP_ADD, a, &l, b, &l) == WK_OK, "add");
    const int32_t d0[1] = {0};
    if (c) {
        WCHECK(w, wk_reduce(&s, WK_OP_SUM, c, &l, d0, 1) == WK_OK, "sum");
        if (s) {
            float got = 0;
            WCHECK(w, wk_storage_to_host(&got, 1, s) == WK_OK, "download sum");
            /* sum of 3 * (i % 10) over N = 4000 * 10 elements: 4000 * 3 * 45, every partial sum an
             * integer below 2^24, so exact in f32 in any order */
            WCHECK(w, got == 4000.0f * 3.0f * 45.0f, "sum value");
        }
    }
    /* matmul (BLAS) of 2x3 by 3x2 small integers: [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] */
    const float ma[6] = {1, 2, 3, 4, 5, 6}, mb[6] = {1, 0, 0, 1, 1, 1};
    wk_storage *sa = NULL, *sb = NULL;
    if (wk_storage_from_host(&sa, dev, WK_DTYPE_F32, ma, 6) == WK_OK &&
        wk_storage_from_host(&sb, dev, WK_DTYPE_F32, mb, 6) == WK_OK) {
        const wk_layout la = testlib_layout2(2, 3), lb = testlib_layout2(3, 2);
        WCHECK(w, wk_matmul(&m, sa, &la, sb, &lb) == WK_OK, "matmul");
        float mm[4] = {0};
        if (m) {
            WCHECK(w, wk_storage_to_host(mm, 4, m) == WK_OK, "download matmul");
            WCHECK(w, mm[0] == 4 && mm[1] == 5 && mm[2] == 10 && mm[3] == 11, "matmul value");
        }
    } else {
        fail(w, "upload");
    }
    /* a failure whose message only this thread can produce: id 50000 + thread (past N). A GPU
     * finds it in a kernel and reports it at the next synchronize of that device handle, from
     * whichever thread calls it first: checked only where this thread owns the handle. */
    if (wk_device_backend(dev) == WK_BACKEND_CPU || dev != w->dev) {
        const int64_t bad[2] = {0, 50000 + w->id};
        char want[32];
        snprintf(want, sizeof want, "%d", 50000 + w->id);
        if (wk_storage_from_host(&ids, dev, WK_DTYPE_I64, bad, 2) == WK_OK) {
            const wk_layout li = testlib_layout1(2);
            wk_status st = wk_index_select(&o, a, &l, ids, &li, 0);
            if (st == WK_OK) /* a GPU may report it at the next synchronize */
                st = wk_device_synchronize(dev);
            WCHECK(w, st == WK_ERR_INDEX_OUT_OF_RANGE, "bad id status");
            WCHECK(w, strstr(wk_last_error(), want) != NULL, "wk_last_error names another thread's id");
        }
    }
    wk_storage_free(o);
    wk_storage_free(ids);
    wk_storage_free(m);
    wk_storage_free(sa);
    wk_storage_free(sb);
    wk_storage_free(s);
    wk_storage_free(c);
}

static void *phase_shared(void *p)
{
    worker *w = p;
    for (int r = 0; r < ROUNDS; r++)
        ops_round(w, w->dev, w->a, w->b);
    return NULL;
}

static void *phase_rand(void *p)
{
    worker *w = p;
    for (int k = 0; k < RK; k++) {
        wk_storage *s = NULL;
        WCHECK(w, wk_rand_uniform(&s, w->dev, WK_DTYPE_F32, RN, 0.0, 1.0) == WK_OK, "rand");
        if (s)
            WCHECK(w, wk_storage_to_host(w->blocks + (size_t)k * RN, RN, s) == WK_OK, "download rand");
        wk_storage_free(s);
    }
    return NULL;
}

/* Own devices: open, upload, run a round, close, ROUNDS times. */
static void *phase_own(void *p)
{
    worker *w = p;
    for (int r = 0; r < ROUNDS; r++) {
        wk_device *d = NULL;
        if (wk_device_open(&d, w->spec) != WK_OK) {
            fail(w, "open");
            continue;
        }
        wk_storage *a = NULL, *b = NULL;
        float *h = malloc(2 * N * sizeof *h);
        if (h) {
            for (int i = 0; i < N; i++) {
                h[i] = (float)(i % 10);
                h[N + i] = 2.0f * (float)(i % 10);
            }
            if (wk_storage_from_host(&a, d, WK_DTYPE_F32, h, N) == WK_OK &&
                wk_storage_from_host(&b, d, WK_DTYPE_F32, h + N, N) == WK_OK)
                ops_round(w, d, a, b);
            else
                fail(w, "upload");
            free(h);
        }
        wk_storage_free(a);
        wk_storage_free(b);
        WCHECK(w, wk_device_synchronize(d) == WK_OK, "synchronize");
        wk_device_close(d);
    }
    return NULL;
}

static void run_phase(worker *ws, void *(*fn)(void *), const char *name)
{
    pthread_t t[NT];
    int started[NT] = {0};
    for (int i = 0; i < NT; i++)
        started[i] = pthread_create(&t[i], NULL, fn, &ws[i]) == 0;
    for (int i = 0; i < NT; i++)
        if (started[i])
            pthread_join(t[i], NULL);
    for (int i = 0; i < NT; i++) {
        TEST_CHECK(started[i], "%s: thread %d did not start", name, i);
        TEST_CHECK(ws[i].fails == 0, "%s: %d failures, first: %s", name, ws[i].fails, ws[i].first);
        ws[i].fails = 0;
    }
}

/* Phase 2's blocks are disjoint RN-aligned pieces of one draw of NT * RK * RN. */
static void check_rand(worker *ws, wk_device *dev)
{
    const size_t total = (size_t)NT * RK * RN;
    float *ref = malloc(total * sizeof *ref);
    char *used = calloc(NT * RK, 1);
    wk_storage *s = NULL;
    if (!TEST_CHECK(ref && used, "out of memory") ||
        !TEST_EQ_STATUS(wk_device_set_seed(dev, 42), WK_OK) ||
        !TEST_EQ_STATUS(wk_rand_uniform(&s, dev, WK_DTYPE_F32, total, 0.0, 1.0), WK_OK) ||
        testlib_download(ref, total, s)) {
        free(ref);
        free(used);
        wk_storage_free(s);
        return;
    }
    int matched = 0;
    for (int i = 0; i < NT; i++)
        for (int k = 0; k < RK; k++) {
            const float *blk = ws[i].blocks + (size_t)k * RN;
            for (int j = 0; j < NT * RK; j++)
                if (!used[j] && memcmp(blk, ref + (size_t)j * RN, RN * sizeof *blk) == 0) {
                    used[j] = 1;
                    matched++;
                    break;
                }
        }
    TEST_EQ_INT(matched, NT * RK);
    free(ref);
    free(used);
    wk_storage_free(s);
}

static void test_device(const char *spec)
{
    printf("device %s: %d threads\n", spec, NT);
    wk_device *dev = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&dev, spec), WK_OK))
        return;
    float *h = malloc(2 * N * sizeof *h);
    float *blocks = malloc((size_t)NT * RK * RN * sizeof *blocks);
    wk_storage *a = NULL, *b = NULL;
    if (TEST_CHECK(h && blocks, "out of memory")) {
        for (int i = 0; i < N; i++) {
            h[i] = (float)(i % 10);
            h[N + i] = 2.0f * (float)(i % 10);
        }
        a = testlib_upload(dev, WK_DTYPE_F32, h, N);
        b = testlib_upload(dev, WK_DTYPE_F32, h + N, N);
    }
    if (a && b) {
        worker ws[NT];
        for (int i = 0; i < NT; i++)
            ws[i] = (worker){.id = i, .spec = spec, .dev = dev, .a = a, .b = b,
                             .blocks = blocks + (size_t)i * RK * RN};
        run_phase(ws, phase_shared, "shared device");
        TEST_EQ_STATUS(wk_device_set_seed(dev, 42), WK_OK);
        run_phase(ws, phase_rand, "shared random stream");
        check_rand(ws, dev);
        run_phase(ws, phase_own, "own devices, opened and closed");
        /* the shared inputs were only read */
        float *back = malloc(N * sizeof *back);
        if (back && !testlib_download(back, N, a))
            TEST_CHECK(memcmp(back, h, N * sizeof *back) == 0, "a shared input changed");
        free(back);
    }
    wk_storage_free(a);
    wk_storage_free(b);
    free(h);
    free(blocks);
    wk_device_close(dev);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    for (int i = 0; i < n; i++)
        test_device(specs[i]);
    /* the calling thread's own message is untouched by the others' failures */
    TEST_CHECK(strstr(wk_last_error(), "5000") == NULL, "main thread sees a worker's error: %s",
               wk_last_error());
    return testlib_summary();
}
