/* comm_bench.c: all_reduce (f32, sum, in place) bandwidth of wick's communicators over NCCL on
 * two GPUs, 1 MiB to 1 GiB, as nccl-tests reports it: algbw = bytes / time, busbw = algbw *
 * 2 (n - 1) / n. One thread drives both ranks (wk_comm_init_all, one group per iteration).
 * min_us/mean_us: each iteration timed on the host from the group's start until both
 * communicators are synchronised (a few warm iterations first); b2b_us: the mean of the same
 * number of iterations issued back to back with one synchronize at the end, as nccl-tests
 * measures; algbw and busbw come from b2b_us. Prints one table; bench/comm_torch.py prints the
 * same for torch.distributed, and tools/comm_gpu.sh sets the two side by side. --min-bytes B
 * starts the sizes at B (default 1 MiB; small sizes get 200 iterations): with
 * WICK_COMM_ONESHOT=0 beside the default it compares the one-shot all-reduce with NCCL
 * (tools/device/oneshot.sh).
 *   wick_comm_bench [--device cuda] [--ranks N] [--min-bytes B] [--max-mib M] */
#include "wick.h"
#include "wick_comm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#define CHECK(call)                                                                          \
    do {                                                                                     \
        wk_status s_ = (call);                                                               \
        if (s_ != WK_OK) {                                                                   \
            fprintf(stderr, "%s: %s: %s\n", #call, wk_status_string(s_), wk_last_error());   \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

/* One in-place f32 sum of count elements on every rank, issued as one group. */
static wk_status all_reduce_all(wk_comm **comms, wk_storage **x, int n, size_t count)
{
    wk_status s = wk_comm_group_start();
    for (int r = 0; r < n && s == WK_OK; r++)
        s = wk_comm_all_reduce(comms[r], x[r], 0, x[r], 0, count, WK_REDUCE_SUM);
    const wk_status e = wk_comm_group_end();
    return s != WK_OK ? s : e;
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    int n = 2;
    long max_mib = 1024;
    size_t min_bytes = (size_t)1 << 20;
    for (int k = 1; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "--device"))
            backend = argv[k + 1];
        else if (!strcmp(argv[k], "--ranks"))
            n = atoi(argv[k + 1]);
        else if (!strcmp(argv[k], "--max-mib"))
            max_mib = atol(argv[k + 1]);
        else if (!strcmp(argv[k], "--min-bytes"))
            min_bytes = (size_t)atol(argv[k + 1]);
    }
    if (n < 1 || n > 8)
        n = 2;
    wk_backend_kind kind = !strcmp(backend, "rocm") ? WK_BACKEND_ROCM : !strcmp(backend, "cpu")
                                                                          ? WK_BACKEND_CPU
                                                                          : WK_BACKEND_CUDA;
    int have = 0;
    const char *why = "";
    wk_backend_device_count(&have, &why, kind);
    if (kind != WK_BACKEND_CPU && have < n) {
        printf("skip: %d %s devices needed, %d found %s\n", n, backend, have, why);
        return 0;
    }
    wk_device *devs[8];
    wk_comm *comms[8];
    wk_storage *x[8];
    for (int r = 0; r < n; r++) {
        char spec[32];
        snprintf(spec, sizeof spec, kind == WK_BACKEND_CPU ? "cpu" : "%s:%d", backend, r);
        CHECK(wk_device_open(&devs[r], spec));
    }
    CHECK(wk_comm_init_all(comms, devs, n, 120000));
    printf("wick all_reduce f32 sum, %d x %s, %s\n", n, wk_device_name(devs[0]),
           wk_comm_transport(comms[0]));
    printf("%12s %10s %10s %10s %12s %12s\n", "bytes", "min_us", "mean_us", "b2b_us", "algbw_GB/s",
           "busbw_GB/s");
    const size_t max_elems = (size_t)max_mib << 18; /* MiB / 4 bytes */
    for (int r = 0; r < n; r++)
        CHECK(wk_storage_zeros(&x[r], devs[r], WK_DTYPE_F32, max_elems));
    if (min_bytes < 4)
        min_bytes = 4;
    for (size_t bytes = min_bytes; bytes <= (size_t)max_mib << 20; bytes *= 2) {
        const size_t count = bytes / 4;
        const int warm = 3,
                  iters = bytes >= ((size_t)256 << 20) ? 10 : bytes < ((size_t)1 << 20) ? 200 : 30;
        double best = 1e300, sum = 0;
        for (int it = 0; it < warm + iters; it++) {
            double t0 = now_us();
            CHECK(all_reduce_all(comms, x, n, count));
            for (int r = 0; r < n; r++)
                CHECK(wk_comm_synchronize(comms[r]));
            double t = now_us() - t0;
            if (it >= warm) {
                best = t < best ? t : best;
                sum += t;
            }
        }
        const double mean = sum / iters;
        /* as nccl-tests measures: iters calls back to back, one synchronize, the mean time */
        double t0 = now_us();
        for (int it = 0; it < iters; it++) {
            CHECK(all_reduce_all(comms, x, n, count));
        }
        for (int r = 0; r < n; r++)
            CHECK(wk_comm_synchronize(comms[r]));
        const double b2b = (now_us() - t0) / iters;
        const double algbw = (double)bytes / b2b / 1e3; /* GB/s from bytes per us */
        const double busbw = algbw * 2.0 * (n - 1) / n;
        printf("%12zu %10.1f %10.1f %10.1f %12.2f %12.2f\n", bytes, best, mean, b2b, algbw, busbw);
        printf("RESULT wick %zu %.1f %.1f %.2f\n", bytes, best, b2b, busbw);
        fflush(stdout);
    }
    for (int r = 0; r < n; r++) {
        wk_storage_free(x[r]);
        wk_comm_destroy(comms[r]);
        wk_device_close(devs[r]);
    }
    return 0;
}
