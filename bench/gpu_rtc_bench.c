/* gpu_rtc_bench.c: how long a GPU device waits for its kernel modules (tools/device/rtc_cache.sh).
 *   wick_gpu_rtc_bench DEVICE modules         each module's first use, one after the other:
 *                                             "module <name> <ms> <compiled|cached|embedded>"
 *   wick_gpu_rtc_bench DEVICE warmup THREADS  wk_device_warmup(dev, THREADS): "warmup <ms>"
 *   wick_gpu_rtc_bench compile cuda|rocm ARCH each module compiled for ARCH (sm_90, gfx1100) by
 *                                             NVRTC or hipRTC, no device and no cache: "module
 *                                             <name> <ms> <cpu ms> <bytes>"
 * Both end with "open <ms>" (the device open, driver start included) and "total <ms>" (the whole
 * process after main started), and the kernel cache's counters. Run with WICK_FORCE_RTC=1 and
 * WICK_CACHE_DIR set to time run-time compilation cold (empty directory) or warm (filled by an
 * earlier run). A benchmark, not a test: it links libwick.a for the module-by-name load. */
#include "gpu/gpu_driver.h"
#include "wick.h"
#include "wk_core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-3;
}

/* Every module through the vendor's run-time compiler, one after the other. */
static int compile_all(const char *vendor, const char *arch)
{
    const wk_backend_kind kind = strcmp(vendor, "rocm") == 0 ? WK_BACKEND_ROCM : WK_BACKEND_CUDA;
    double total = 0, total_cpu = 0;
    int bad = 0;
    for (int i = 0; i < wk_gpu_embedded_module_count; i++) {
        const wk_gpu_embedded *e = &wk_gpu_embedded_modules[i];
        void *image = NULL;
        size_t size = 0;
        const double t = now_ms(), c = cpu_ms();
        const wk_status st = wk_gpu_rtc_compile(&image, &size, kind, arch, e->name, e->source);
        const double ms = now_ms() - t, cms = cpu_ms() - c;
        total += ms;
        total_cpu += cms;
        printf("module %-10s %9.1f %9.1f %zu\n", e->name, ms, cms, size);
        if (st != WK_OK) {
            printf("  %s\n", wk_last_error());
            bad++;
        }
        wk_free(image);
    }
    printf("total %.1f cpu %.1f\n", total, total_cpu);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "compile") == 0)
        return compile_all(argv[2], argv[3]);
    if (argc < 3 || (strcmp(argv[2], "modules") != 0 && strcmp(argv[2], "warmup") != 0)) {
        fprintf(stderr, "usage: %s DEVICE modules | DEVICE warmup THREADS | compile cuda|rocm ARCH\n",
                argv[0]);
        return 2;
    }
    const double t0 = now_ms();
    wk_device *dev = NULL;
    if (wk_device_open(&dev, argv[1]) != WK_OK) {
        fprintf(stderr, "cannot open %s: %s\n", argv[1], wk_last_error());
        return 1;
    }
    printf("open %.1f\n", now_ms() - t0);
    int bad = 0;
    if (strcmp(argv[2], "modules") == 0) {
        for (int i = 0; i < wk_gpu_embedded_module_count; i++) {
            wk_gpu_rtc_cache_stats a, b;
            wk_gpu_rtc_cache_stats_get(&a);
            int emb0 = 0, comp0 = 0, emb1 = 0, comp1 = 0;
            wk_gpu_modules_counts(wk_gpu_dev(dev), &emb0, &comp0);
            const double t = now_ms();
            const wk_status st = wk_gpu_module_load_named(dev, wk_gpu_embedded_modules[i].name);
            const double ms = now_ms() - t;
            wk_gpu_rtc_cache_stats_get(&b);
            wk_gpu_modules_counts(wk_gpu_dev(dev), &emb1, &comp1);
            const char *how = st != WK_OK        ? "FAILED"
                              : emb1 > emb0      ? "embedded"
                              : b.hits > a.hits  ? "cached"
                              : comp1 > comp0    ? "compiled"
                                                 : "built in";
            printf("module %-10s %9.1f %s\n", wk_gpu_embedded_modules[i].name, ms, how);
            if (st != WK_OK) {
                printf("  %s\n", wk_last_error());
                bad++;
            }
        }
    } else {
        const int threads = argc > 3 ? atoi(argv[3]) : 0;
        const double t = now_ms();
        const wk_status st = wk_device_warmup(dev, threads);
        printf("warmup %.1f (threads %d)\n", now_ms() - t, threads);
        if (st != WK_OK) {
            printf("  %s\n", wk_last_error());
            bad++;
        }
    }
    wk_gpu_rtc_cache_stats s;
    wk_gpu_rtc_cache_stats_get(&s);
    const char *dir = NULL, *note = NULL;
    wk_kernel_cache_info(&dir, &note);
    printf("cache %s: %ld hits, %ld misses, %ld stored, %ld discarded%s%s\n", dir[0] ? dir : "off",
           s.hits, s.misses, s.stores, s.discarded, note[0] ? "; " : "", note);
    wk_device_close(dev);
    printf("total %.1f\n", now_ms() - t0);
    return bad ? 1 : 0;
}
