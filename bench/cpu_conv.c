/* cpu_conv.c: the two CPU convolution rows of bench/cpu_compare.py (conv2d 8x64x56x56 k3 p1 ->
 * 64, conv1d 8x256x1024 k3 p1 -> 256, f32) timed alone through the public API, without Python,
 * so that many fresh processes can be compared quickly (a benchmark, not a test).
 *   OMP_NUM_THREADS=2 BUILD/wick_cpu_conv [--rounds R] [--procs P] [--verbose]
 * Each time is the minimum over R rounds of the mean of 10 calls. --verbose prints every round
 * to stderr as "ms(share)", share = the process's CPU seconds per wall second: a round with a
 * share under the thread count had its cores taken by something else. With --procs P
 * the program runs itself P times in fresh processes and prints one line per process: the
 * speed of a process depends on where its buffers land, so one process is not a measurement.
 * Build: cmake --build BUILD --target wick_cpu_conv */
#define _POSIX_C_SOURCE 200809L
#include "wick.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int g_verbose;

/* User plus system CPU seconds of r. */
static double cpu_s(const struct rusage *r)
{
    return (double)r->ru_utime.tv_sec + 1e-6 * (double)r->ru_utime.tv_usec +
           (double)r->ru_stime.tv_sec + 1e-6 * (double)r->ru_stime.tv_usec;
}

/* A storage of n f32 values uniform in [lo, hi) from a fixed LCG. */
static wk_storage *filled(wk_device *dev, size_t n, float lo, float hi, uint32_t seed)
{
    float *h = malloc(n * sizeof(float));
    wk_storage *s = NULL;
    if (!h)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = lo + (hi - lo) * (float)(seed >> 8) * (1.0f / 16777216.0f);
    }
    if (wk_storage_from_host(&s, dev, WK_DTYPE_F32, h, n) != WK_OK)
        s = NULL;
    free(h);
    return s;
}

/* ms per call of conv (1-D when one_d) on x dims xd, w dims wd (rank r), padding 1. */
static double time_conv(wk_device *dev, int one_d, const int64_t *xd, const int64_t *wd, int r,
                        int rounds)
{
    size_t nx = 1, nw = 1;
    for (int i = 0; i < r; i++)
        nx *= (size_t)xd[i], nw *= (size_t)wd[i];
    wk_storage *x = filled(dev, nx, -1, 1, 1), *w = filled(dev, nw, -0.1f, 0.1f, 2);
    wk_layout lx, lw;
    wk_layout_contiguous(&lx, r, xd);
    wk_layout_contiguous(&lw, r, wd);
    const wk_conv_params p = {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
    double bestt = -1;
    for (int round = -1; x && w && round < rounds; round++) {
        int reps = round < 0 ? 1 : 10;
        struct rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        const double t0 = now();
        for (int i = 0; i < reps; i++) {
            wk_storage *o = NULL;
            const wk_status st = one_d ? wk_conv1d(&o, x, &lx, w, &lw, &p)
                                       : wk_conv2d(&o, x, &lx, w, &lw, &p);
            if (st != WK_OK) {
                fprintf(stderr, "conv failed: %s: %s\n", wk_status_string(st), wk_last_error());
                return -1;
            }
            wk_storage_free(o);
        }
        const double t = (now() - t0) / reps * 1e3;
        getrusage(RUSAGE_SELF, &r1);
        if (g_verbose) /* ms per call (the process's CPU seconds per wall second) */
            fprintf(stderr, " %.2f(%.2f)", t, (cpu_s(&r1) - cpu_s(&r0)) / (t * reps * 1e-3));
        if (round >= 0 && (bestt < 0 || t < bestt))
            bestt = t;
    }
    wk_storage_free(x);
    wk_storage_free(w);
    return bestt;
}

int main(int argc, char **argv)
{
    int rounds = 5, procs = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--verbose"))
            g_verbose = 1;
        else if (i + 1 >= argc)
            break;
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--procs"))
            procs = atoi(argv[++i]);
    }
    if (procs > 0) { /* fresh processes, one line each */
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "%s --rounds %d%s", argv[0], rounds, g_verbose ? " --verbose" : "");
        for (int i = 0; i < procs; i++)
            if (system(cmd) != 0)
                return 1;
        return 0;
    }
    wk_device *dev = NULL;
    if (wk_device_open(&dev, "cpu") != WK_OK) {
        fprintf(stderr, "no cpu device: %s\n", wk_last_error());
        return 1;
    }
    const int64_t x2[4] = {8, 64, 56, 56}, w2[4] = {64, 64, 3, 3};
    const int64_t x1[3] = {8, 256, 1024}, w1[3] = {256, 256, 3};
    const double t2 = time_conv(dev, 0, x2, w2, 4, rounds);
    const double t1 = time_conv(dev, 1, x1, w1, 3, rounds);
    printf("conv2d 8x64x56x56 k3 p1 -> 64: %.2f ms (%.0f GFLOP/s)   conv1d 8x256x1024 k3 p1 -> 256: "
           "%.2f ms (%.0f GFLOP/s)\n",
           t2, 2.0 * 8 * 64 * 3136 * 576 / t2 * 1e-6, t1, 2.0 * 8 * 256 * 1024 * 768 / t1 * 1e-6);
    /* how much of the process sits on transparent huge pages (Linux; silent elsewhere) */
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "AnonHugePages:", 14)) {
            line[strcspn(line, "\n")] = 0;
            printf("  (the process's transparent huge pages: %s)\n", line + 14 + strspn(line + 14, " "));
        }
    if (f)
        fclose(f);
    wk_device_close(dev);
    return t2 < 0 || t1 < 0;
}
