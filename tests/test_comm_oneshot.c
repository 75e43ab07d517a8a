/* test_comm_oneshot.c: the one-shot all-reduce (src/comm/comm_oneshot.h, kernels/comm.cu) on the
 * simt device at 32 and 64 lanes. The ranks are areas on one simt device, driven by this thread
 * in two phases per call (every rank's put, then every rank's reduce): simt launches run one at
 * a time, so the one-launch form would wait for a peer that cannot start. Expected values: the
 * CPU transport's fold (comm_reduce.c: rank order, narrow floats rounded at each step, avg
 * divided once), compared bit for bit (a NaN matches any NaN: which one an operation on NaNs
 * returns is the hardware's choice), and every rank's result the same bits as rank 0's:
 *   - every float dtype x every reduction, 2, 3 and 8 ranks, sizes from 1 element to the largest
 *     message taken, inputs with NaN, infinities and signed zeros among random values;
 *   - calls back to back with no host sync between them, new inputs each time, in place and out
 *     of place (a stale flag or slot would hand a call an earlier call's values);
 *   - a rank that never puts: the others' reduce gives up after the timeout and
 *     wk_oneshot_status returns WK_ERR_TIMEOUT naming that rank;
 *   - what it does not take (integers, messages past WK_ONESHOT_MAX_BYTES, a bad phase).
 * test_comm_oneshot --device cuda: the same through the public API on cuda:0 and cuda:1
 * (wk_comm_init_all, the one-launch form; skips without two GPUs): every float dtype and
 * reduction against the CPU fold, 1000 calls back to back, a graph of the call replayed 10,000
 * times with the inputs changed every 1000 replays, a rank that never calls (WK_ERR_TIMEOUT
 * naming it). tools/device/oneshot.sh runs it, under compute-sanitizer too. */
#include "comm/comm_oneshot.h"
#include "testlib.h"
#include "wick.h"
#include "wick_comm.h"
#include "wk_core.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return g_rng;
}

static const wk_dtype DTS[] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16, WK_DTYPE_F64,
                               WK_DTYPE_F8E4M3};

/* n values of dt: mostly in [-4, 4) (small enough that f8e4m3 products stay finite), some NaN,
 * infinities, zeros of both signs */
static void fill(void *p, wk_dtype dt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = rnd();
        double v = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
        switch (r % 97) {
        case 0: v = NAN; break;
        case 1: v = INFINITY; break;
        case 2: v = -INFINITY; break;
        case 3: v = 0.0; break;
        case 4: v = -0.0; break;
        default: break;
        }
        testlib_f64_to(p, i, dt, v);
    }
}

/* the expected result: rank 0's input folded with ranks 1, 2, ... (the CPU transport's) */
static void expect(void *out, void *const *in, int nranks, wk_dtype dt, wk_reduce_op op, size_t n)
{
    memcpy(out, in[0], n * wk_dtype_size(dt));
    for (int p = 1; p < nranks; p++)
        wk_comm_reduce_into(out, in[p], n, dt, op);
    if (op == WK_REDUCE_AVG)
        wk_comm_avg_finish(out, n, dt, nranks);
}

/* a and b hold the same bits, except that a NaN matches any NaN: which NaN an operation on NaN
 * operands gives is the hardware's (and the compiler's operand order's) choice, not the fold's */
static bool same(const void *a, const void *b, wk_dtype dt, size_t n)
{
    const size_t es = wk_dtype_size(dt);
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * es, (const char *)b + i * es, es) != 0 &&
            !(isnan(testlib_f64_of(a, i, dt)) && isnan(testlib_f64_of(b, i, dt))))
            return false;
    return true;
}

static char *dptr(const wk_storage *s, size_t byte_off) { return (char *)s->data + byte_off; }

/* One group of ranks on dev: calls back to back (each its own inputs and its own output part),
 * one sync at the end, every rank's every output checked. */
static void run_calls(wk_device *dev, int nranks, wk_dtype dt, wk_reduce_op op, size_t n,
                      int calls, bool in_place)
{
    wk_device *devs[WK_ONESHOT_MAX_RANKS];
    wk_oneshot *os[WK_ONESHOT_MAX_RANKS];
    for (int r = 0; r < nranks; r++)
        devs[r] = dev;
    if (TEST_EQ_STATUS(wk_oneshot_setup(os, devs, nranks), WK_OK) != 1)
        return;
    const size_t es = wk_dtype_size(dt), bytes = n * es * (size_t)calls;
    void *in[WK_ONESHOT_MAX_RANKS], *got = malloc(bytes), *want = malloc(n * es);
    wk_storage *sx[WK_ONESHOT_MAX_RANKS] = {0}, *sy[WK_ONESHOT_MAX_RANKS] = {0};
    int bad = 0;
    for (int r = 0; r < nranks; r++) {
        in[r] = malloc(bytes);
        fill(in[r], dt, n * (size_t)calls);
        sx[r] = testlib_upload(dev, dt, in[r], n * (size_t)calls);
        if (!in_place)
            wk_storage_alloc_uninit(&sy[r], dev, dt, n * (size_t)calls);
    }
    for (int c = 0; c < calls && !bad; c++)
        for (int phase = WK_ONESHOT_PUT; phase <= WK_ONESHOT_REDUCE && !bad; phase++)
            for (int r = 0; r < nranks && !bad; r++) {
                char *x = dptr(sx[r], (size_t)c * n * es);
                char *y = in_place ? x : dptr(sy[r], (size_t)c * n * es);
                bad = !TEST_EQ_STATUS(wk_oneshot_all_reduce(os[r], y, x, n, dt, op, 60000, phase),
                                      WK_OK);
            }
    void *first = malloc(bytes);
    for (int r = 0; r < nranks && !bad; r++) {
        TEST_EQ_STATUS(wk_oneshot_status(os[r], 60000), WK_OK);
        if (testlib_download(got, n * (size_t)calls, in_place ? sx[r] : sy[r]))
            break;
        if (r == 0)
            memcpy(first, got, bytes);
        else /* every rank the same bits, NaNs included */
            bad = !TEST_CHECK(memcmp(got, first, bytes) == 0, "%s: %d ranks, %s, op %d: rank %d's "
                              "result differs from rank 0's", wk_device_name(dev), nranks,
                              wk_dtype_name(dt), (int)op, r);
        for (int c = 0; c < calls && !bad; c++) {
            void *part[WK_ONESHOT_MAX_RANKS];
            for (int p = 0; p < nranks; p++)
                part[p] = (char *)in[p] + (size_t)c * n * es;
            expect(want, part, nranks, dt, op, n);
            const char *g = (const char *)got + (size_t)c * n * es;
            bad = !TEST_CHECK(same(g, want, dt, n),
                              "%s: %d ranks, %s, op %d, %zu elements, call %d, rank %d%s: not "
                              "the CPU transport's bits", wk_device_name(dev), nranks,
                              wk_dtype_name(dt), (int)op, n, c, r, in_place ? ", in place" : "");
        }
    }
    for (int r = 0; r < nranks; r++) {
        wk_storage_free(sx[r]);
        wk_storage_free(sy[r]);
        wk_oneshot_free(os[r], 60000);
        free(in[r]);
    }
    free(got), free(want), free(first);
}

/* Rank `absent` of 3 never puts: the others wait timeout_ms, then report it. */
static void run_absent(wk_device *dev)
{
    wk_device *devs[3] = {dev, dev, dev};
    wk_oneshot *os[3];
    if (TEST_EQ_STATUS(wk_oneshot_setup(os, devs, 3), WK_OK) != 1)
        return;
    const size_t n = 100;
    float x[100];
    fill(x, WK_DTYPE_F32, n);
    wk_storage *s[3];
    for (int r = 0; r < 3; r++)
        s[r] = testlib_upload(dev, WK_DTYPE_F32, x, n);
    const int absent = 2;
    for (int phase = WK_ONESHOT_PUT; phase <= WK_ONESHOT_REDUCE; phase++)
        for (int r = 0; r < 3; r++)
            if (r != absent)
                TEST_EQ_STATUS(wk_oneshot_all_reduce(os[r], s[r]->data, s[r]->data, n,
                                                     WK_DTYPE_F32, WK_REDUCE_SUM, 2, phase),
                               WK_OK);
    for (int r = 0; r < 2; r++) {
        TEST_EQ_STATUS(wk_oneshot_status(os[r], 2), WK_ERR_TIMEOUT);
        TEST_CHECK(strstr(wk_last_error(), "rank 2 did not take part") != NULL,
                   "timeout message names the absent rank: %s", wk_last_error());
    }
    TEST_EQ_STATUS(wk_oneshot_status(os[absent], 2), WK_OK); /* it waited for nobody */
    for (int r = 0; r < 3; r++) {
        wk_storage_free(s[r]);
        wk_oneshot_free(os[r], 60000);
    }
}

static void run_refusals(wk_device *dev)
{
    TEST_CHECK(!wk_oneshot_takes(WK_DTYPE_I32, WK_REDUCE_SUM, 4), "integers go to NCCL");
    TEST_CHECK(!wk_oneshot_takes(WK_DTYPE_U8, WK_REDUCE_MAX, 4), "integers go to NCCL");
    TEST_CHECK(wk_oneshot_takes(WK_DTYPE_F32, WK_REDUCE_SUM, WK_ONESHOT_MAX_BYTES / 4),
               "the largest message is taken");
    TEST_CHECK(!wk_oneshot_takes(WK_DTYPE_F32, WK_REDUCE_SUM, WK_ONESHOT_MAX_BYTES / 4 + 1),
               "one element more goes to NCCL");
    TEST_CHECK(!wk_oneshot_takes(WK_DTYPE_F16, (wk_reduce_op)WK_REDUCE_OP_COUNT, 4),
               "an unknown reduction");
    wk_device *devs[2] = {dev, dev};
    wk_oneshot *os[2];
    if (TEST_EQ_STATUS(wk_oneshot_setup(os, devs, 2), WK_OK) == 1) {
        wk_storage *s = NULL;
        wk_storage_alloc_uninit(&s, dev, WK_DTYPE_F32, 4);
        TEST_EQ_STATUS(wk_oneshot_all_reduce(os[0], s->data, s->data, 4, WK_DTYPE_F32,
                                             WK_REDUCE_SUM, 100, 0),
                       WK_ERR_INVALID_ARGUMENT);
        TEST_EQ_STATUS(wk_oneshot_all_reduce(os[0], s->data, s->data, 4, WK_DTYPE_I32,
                                             WK_REDUCE_SUM, 100, WK_ONESHOT_BOTH),
                       WK_ERR_INVALID_ARGUMENT);
        wk_storage_free(s);
        wk_oneshot_free(os[0], 60000);
        wk_oneshot_free(os[1], 60000);
    }
    wk_oneshot *one[1];
    TEST_EQ_STATUS(wk_oneshot_setup(one, devs, 1), WK_ERR_NOT_SUPPORTED);
}

/* ---- two GPUs through the public API */

/* inputs of rank r for one call: host copies in[r], device storages x[r] (n elements) */
static void gpu_inputs(wk_device *cpu, wk_storage *const *x, void *const *in, wk_dtype dt, size_t n)
{
    for (int r = 0; r < 2; r++) {
        fill(in[r], dt, n);
        wk_storage *h = NULL;
        if (TEST_EQ_STATUS(wk_storage_from_host(&h, cpu, dt, in[r], n), WK_OK) == 1)
            TEST_EQ_STATUS(wk_storage_copy_between(x[r], 0, h, 0, n), WK_OK);
        wk_storage_free(h);
    }
}

/* both ranks' y (n elements at element offset off) against the CPU fold of in */
static int gpu_check(wk_storage *const *y, size_t off, void *const *in, wk_dtype dt,
                     wk_reduce_op op, size_t n, const char *what)
{
    const size_t es = wk_dtype_size(dt);
    char *g0 = malloc((off + n) * es), *g1 = malloc((off + n) * es), *want = malloc(n * es);
    int ok = !testlib_download(g0, off + n, y[0]) && !testlib_download(g1, off + n, y[1]);
    if (ok) {
        expect(want, in, 2, dt, op, n);
        ok = TEST_CHECK(memcmp(g0 + off * es, g1 + off * es, n * es) == 0,
                        "%s: %s op %d, %zu elements: the ranks differ", what, wk_dtype_name(dt),
                        (int)op, n) &&
             TEST_CHECK(same(g0 + off * es, want, dt, n),
                        "%s: %s op %d, %zu elements: not the CPU transport's bits", what,
                        wk_dtype_name(dt), (int)op, n);
    }
    free(g0), free(g1), free(want);
    return ok;
}

static wk_status ar_both(wk_comm *const *c, wk_storage *const *y, size_t yoff, wk_storage *const *x,
                         size_t n, wk_dtype dt, wk_reduce_op op)
{
    (void)dt;
    wk_status s = wk_comm_group_start();
    for (int r = 0; r < 2 && s == WK_OK; r++)
        s = wk_comm_all_reduce(c[r], y[r], yoff, x[r], 0, n, op);
    const wk_status e = wk_comm_group_end();
    return s != WK_OK ? s : e;
}

static int gpu_main(void)
{
    int have = 0;
    const char *why = "";
    wk_backend_device_count(&have, &why, WK_BACKEND_CUDA);
    if (have < 2) {
        printf("skip: test_comm_oneshot --device cuda needs 2 GPUs, found %d %s\n", have, why);
        return testlib_summary();
    }
    wk_device *d[2] = {0}, *cpu = NULL;
    wk_comm *c[2] = {0};
    TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK);
    TEST_EQ_STATUS(wk_device_open(&d[0], "cuda:0"), WK_OK);
    TEST_EQ_STATUS(wk_device_open(&d[1], "cuda:1"), WK_OK);
    if (TEST_EQ_STATUS(wk_comm_init_all(c, d, 2, 20000), WK_OK) != 1)
        return testlib_summary();
    printf("transport: %s\n", wk_comm_transport(c[0]));
    if (!TEST_CHECK(strstr(wk_comm_transport(c[0]), "one-shot") != NULL,
                    "the GPUs reach each other: the one-shot all-reduce is set up"))
        return testlib_summary();
    const size_t maxn = WK_ONESHOT_MAX_BYTES; /* elements of the widest count below (u8 sized) */
    void *in[2] = {malloc(maxn * 8), malloc(maxn * 8)};
    /* every dtype and reduction, sizes up to the largest taken */
    for (size_t t = 0; t < sizeof DTS / sizeof DTS[0]; t++) {
        const wk_dtype dt = DTS[t];
        const size_t sizes[] = {1, 17, 4096, WK_ONESHOT_MAX_BYTES / wk_dtype_size(dt)};
        for (size_t z = 0; z < 4; z++) {
            const size_t n = sizes[z];
            wk_storage *x[2] = {0}, *y[2] = {0};
            for (int r = 0; r < 2; r++) {
                wk_storage_alloc_uninit(&x[r], d[r], dt, n);
                wk_storage_alloc_uninit(&y[r], d[r], dt, n);
            }
            for (int op = 0; op < WK_REDUCE_OP_COUNT; op++) {
                gpu_inputs(cpu, x, in, dt, n);
                if (TEST_EQ_STATUS(ar_both(c, y, 0, x, n, dt, (wk_reduce_op)op), WK_OK) == 1 &&
                    TEST_EQ_STATUS(wk_comm_synchronize(c[0]), WK_OK) == 1 &&
                    TEST_EQ_STATUS(wk_comm_synchronize(c[1]), WK_OK) == 1)
                    gpu_check(y, 0, in, dt, (wk_reduce_op)op, n, "cuda");
            }
            for (int r = 0; r < 2; r++)
                wk_storage_free(x[r]), wk_storage_free(y[r]);
        }
    }
    /* 1000 calls back to back into 1000 output parts, inputs alternating between two sets */
    {
        const size_t n = 1000;
        const int calls = 1000;
        wk_storage *xa[2], *xb[2], *y[2];
        void *ina[2] = {malloc(n * 4), malloc(n * 4)}, *inb[2] = {malloc(n * 4), malloc(n * 4)};
        for (int r = 0; r < 2; r++) {
            wk_storage_alloc_uninit(&xa[r], d[r], WK_DTYPE_F32, n);
            wk_storage_alloc_uninit(&xb[r], d[r], WK_DTYPE_F32, n);
            wk_storage_alloc_uninit(&y[r], d[r], WK_DTYPE_F32, n * calls);
        }
        gpu_inputs(cpu, xa, ina, WK_DTYPE_F32, n);
        gpu_inputs(cpu, xb, inb, WK_DTYPE_F32, n);
        int bad = 0;
        for (int k = 0; k < calls && !bad; k++)
            bad = !TEST_EQ_STATUS(ar_both(c, y, (size_t)k * n, k & 1 ? xb : xa, n, WK_DTYPE_F32,
                                          WK_REDUCE_SUM), WK_OK);
        if (!bad && TEST_EQ_STATUS(wk_comm_synchronize(c[0]), WK_OK) == 1 &&
            TEST_EQ_STATUS(wk_comm_synchronize(c[1]), WK_OK) == 1)
            for (int k = 0; k < calls && !bad; k++)
                bad = !gpu_check(y, (size_t)k * n, k & 1 ? inb : ina, WK_DTYPE_F32, WK_REDUCE_SUM,
                                 n, "back to back");
        for (int r = 0; r < 2; r++) {
            wk_storage_free(xa[r]), wk_storage_free(xb[r]), wk_storage_free(y[r]);
            free(ina[r]), free(inb[r]);
        }
    }
    /* one graph per device holding the call, replayed 10,000 times; new inputs every 1000 */
    {
        const size_t n = 4096;
        wk_storage *x[2], *y[2];
        for (int r = 0; r < 2; r++) {
            wk_storage_alloc_uninit(&x[r], d[r], WK_DTYPE_BF16, n);
            wk_storage_alloc_uninit(&y[r], d[r], WK_DTYPE_BF16, n);
        }
        gpu_inputs(cpu, x, in, WK_DTYPE_BF16, n);
        wk_graph *g[2] = {0};
        int ok = TEST_EQ_STATUS(wk_graph_begin(d[0]), WK_OK) == 1 &&
                 TEST_EQ_STATUS(wk_graph_begin(d[1]), WK_OK) == 1;
        if (ok) {
            ok = TEST_EQ_STATUS(ar_both(c, y, 0, x, n, WK_DTYPE_BF16, WK_REDUCE_SUM), WK_OK);
            ok &= TEST_EQ_STATUS(wk_graph_end(d[0], &g[0]), WK_OK);
            ok &= TEST_EQ_STATUS(wk_graph_end(d[1], &g[1]), WK_OK);
        }
        for (int k = 0; ok && k < 10000; k++) {
            ok = TEST_EQ_STATUS(wk_graph_launch(g[0]), WK_OK) && TEST_EQ_STATUS(wk_graph_launch(g[1]), WK_OK);
            if (ok && k % 1000 == 999) {
                ok = TEST_EQ_STATUS(wk_comm_synchronize(c[0]), WK_OK) &&
                     TEST_EQ_STATUS(wk_comm_synchronize(c[1]), WK_OK) &&
                     gpu_check(y, 0, in, WK_DTYPE_BF16, WK_REDUCE_SUM, n, "graph replay");
                gpu_inputs(cpu, x, in, WK_DTYPE_BF16, n);
            }
        }
        wk_graph_free(g[0]), wk_graph_free(g[1]);
        for (int r = 0; r < 2; r++)
            wk_storage_free(x[r]), wk_storage_free(y[r]);
    }
    /* rank 1 never calls: rank 0's kernel gives up after the timeout */
    {
        wk_storage *x = NULL;
        wk_storage_alloc_uninit(&x, d[0], WK_DTYPE_F32, 64);
        TEST_EQ_STATUS(wk_comm_set_timeout(c[0], 300), WK_OK);
        TEST_EQ_STATUS(wk_comm_all_reduce(c[0], x, 0, x, 0, 64, WK_REDUCE_SUM), WK_OK);
        TEST_EQ_STATUS(wk_comm_synchronize(c[0]), WK_ERR_TIMEOUT);
        TEST_CHECK(strstr(wk_last_error(), "rank 1 did not take part") != NULL,
                   "the timeout names the absent rank: %s", wk_last_error());
        TEST_EQ_STATUS(wk_comm_all_reduce(c[0], x, 0, x, 0, 64, WK_REDUCE_SUM), WK_ERR_TIMEOUT);
        wk_storage_free(x);
    }
    wk_comm_destroy(c[0]);
    wk_comm_destroy(c[1]);
    free(in[0]), free(in[1]);
    wk_device_close(d[0]), wk_device_close(d[1]), wk_device_close(cpu);
    return testlib_summary();
}

/* The whole single-device suite on spec: every rank an area on that one device, two phases */
static void suite(const char *spec)
{
    wk_device *dev = NULL;
    if (TEST_EQ_STATUS(wk_device_open(&dev, spec), WK_OK) != 1)
        return;
    /* every dtype and reduction: 2 and 3 ranks, sizes around the 16-block split */
    static const size_t sizes[] = {1, 15, 17, 1000};
    for (size_t t = 0; t < sizeof DTS / sizeof DTS[0]; t++)
        for (int op = 0; op < WK_REDUCE_OP_COUNT; op++)
            for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
                run_calls(dev, 2 + (int)(z & 1), DTS[t], (wk_reduce_op)op, sizes[z], 2, z & 1);
    /* the largest message of each width, 8 ranks */
    for (size_t t = 0; t < sizeof DTS / sizeof DTS[0]; t++)
        run_calls(dev, 8, DTS[t], WK_REDUCE_SUM, WK_ONESHOT_MAX_BYTES / wk_dtype_size(DTS[t]), 1,
                  false);
    /* back to back: 300 calls with no sync between them, both slots many times over */
    run_calls(dev, 2, WK_DTYPE_F32, WK_REDUCE_SUM, 37, 300, true);
    run_calls(dev, 3, WK_DTYPE_BF16, WK_REDUCE_AVG, 5, 300, false);
    run_absent(dev);
    run_refusals(dev);
    wk_device_close(dev);
}

/* test_comm_oneshot: simt:0 and simt:1; --device cuda: two GPUs (gpu_main); --device cuda:N:
 * the single-device suite on that GPU (the ranks' areas on one GPU, the phases in stream order:
 * the kernels, fences and timeout on real hardware without a second GPU) */
int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--device") && !strcmp(argv[2], "cuda"))
        return gpu_main();
    if (argc > 2 && !strcmp(argv[1], "--device")) {
        suite(argv[2]);
        return testlib_summary();
    }
    int nsimt = 0;
    wk_backend_device_count(&nsimt, NULL, WK_BACKEND_SIMT);
    if (nsimt < 1) {
        printf("skip: simt device not built\n");
        return testlib_summary();
    }
    for (int d = 0; d < 2 && d < nsimt; d++) {
        char spec[16];
        snprintf(spec, sizeof spec, "simt:%d", d);
        suite(spec);
    }
    return testlib_summary();
}
