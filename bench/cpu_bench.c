/* cpu_bench.c: the CPU backend against its physical limits, one table (a benchmark, not a test).
 *   matmul:        GFLOP/s through wk_matmul vs cblas_sgemm called directly on the same
 *                  storages (same shapes, same buffers); goal >= 0.95x.
 *   elementwise,   GB/s (bytes read + written) of add, exp, cast f32->bf16 and sum over the last
 *   reduction:     dim vs memcpy on buffers of the same size (the best of a one-thread memcpy
 *                  and an OpenMP-split one); goal >= 0.8x. 2^25 elements: far above the caches.
 *   conv2d:        time and GFLOP/s of an 8x64x56x56 input, 64 3x3 kernels, padding 1, f32.
 * Each number is the best of several runs after a warm-up. wick's ops return fresh storages;
 * the bench installs a small caching allocator through wk_set_allocator (as an engine would), so
 * the timings measure the ops, not the kernel's page faults on fresh memory.
 * Build: cmake --build BUILD --target wick_cpu_bench; run: BUILD/wick_cpu_bench */
#include "backend.h"
#include "wick.h"
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a caching allocator: freed blocks are kept and handed out again for the same size */
#define CACHE_SLOTS 64
static struct {
    void *p;
    size_t bytes;
    int used;
} g_cache[CACHE_SLOTS];

static void *cache_alloc(size_t bytes, void *user)
{
    (void)user;
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (g_cache[i].p && !g_cache[i].used && g_cache[i].bytes == bytes) {
            g_cache[i].used = 1;
            return g_cache[i].p;
        }
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1))
        return NULL;
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (!g_cache[i].p) {
            g_cache[i].p = p, g_cache[i].bytes = bytes, g_cache[i].used = 1;
            return p;
        }
    return p; /* cache full: plain allocation (freed in cache_free) */
}

static void cache_free(void *p, void *user)
{
    (void)user;
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (g_cache[i].p == p) {
            g_cache[i].used = 0;
            return;
        }
    free(p);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- timed bodies: each runs the op once */
typedef struct job {
    int kind;
    wk_storage *a, *b, *out;
    wk_layout la, lb;
    int m, n, k, batch;
    size_t bytes;
    wk_conv_params p;
} job;

enum { J_WK_MM, J_BLAS_MM, J_ADD, J_EXP, J_CAST, J_SUM, J_MEMCPY1, J_MEMCPYP, J_CONV };

static int run_once(job *j)
{
    wk_storage *o = NULL;
    wk_status st = WK_OK;
    switch (j->kind) {
    case J_WK_MM: st = wk_matmul(&o, j->a, &j->la, j->b, &j->lb); break;
    case J_BLAS_MM: {
        const float *a = j->a->data, *b = j->b->data;
        float *c = j->out->data;
        const size_t sa = (size_t)j->m * j->k, sb = (size_t)j->k * j->n, sc = (size_t)j->m * j->n;
        for (int i = 0; i < j->batch; i++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->m, j->n, j->k, 1.0f,
                        a + i * sa, j->k, b + i * sb, j->n, 0.0f, c + i * sc, j->n);
        break;
    }
    case J_ADD: st = wk_binary(&o, WK_OP_ADD, j->a, &j->la, j->b, &j->la); break;
    case J_EXP: st = wk_unary(&o, WK_OP_EXP, j->a, &j->la); break;
    case J_CAST: st = wk_to_dtype(&o, j->a, &j->la, WK_DTYPE_BF16); break;
    case J_SUM: {
        const int32_t d = j->la.rank - 1;
        st = wk_reduce(&o, WK_OP_SUM, j->a, &j->la, &d, 1);
        break;
    }
    case J_MEMCPY1: memcpy(j->out->data, j->a->data, j->bytes); break;
    case J_MEMCPYP: {
        char *dst = j->out->data;
        const char *src = j->a->data;
#pragma omp parallel
        {
            const size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
            const size_t chunk = (j->bytes / nt + 63) / 64 * 64;
            const size_t b = t * chunk < j->bytes ? t * chunk : j->bytes;
            const size_t e = b + chunk < j->bytes ? b + chunk : j->bytes;
            memcpy(dst + b, src + b, e - b);
        }
        break;
    }
    case J_CONV: st = wk_conv2d(&o, j->a, &j->la, j->b, &j->lb, &j->p); break;
    }
    wk_storage_free(o);
    if (st != WK_OK) {
        fprintf(stderr, "op failed: %s: %s\n", wk_status_string(st), wk_last_error());
        return 1;
    }
    return 0;
}

/* Best wall time of reps runs after one warm-up; < 0 on failure. */
static double best(job *j, int reps)
{
    if (run_once(j))
        return -1;
    double t = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        if (run_once(j))
            return -1;
        const double dt = now() - t0;
        t = dt < t ? dt : t;
    }
    return t;
}

static wk_storage *filled(wk_device *dev, size_t n, float lo, float hi)
{
    float *h = malloc(n * sizeof *h);
    wk_storage *s = NULL;
    if (!h)
        return NULL;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        h[i] = lo + (hi - lo) * (float)((double)(x >> 11) * 0x1p-53);
    }
    if (wk_storage_from_host(&s, dev, WK_DTYPE_F32, h, n) != WK_OK)
        s = NULL;
    free(h);
    return s;
}

static void row(const char *op, const char *shape, const char *unit, double wick, double ref,
                const char *refname, double goal)
{
    if (wick < 0 || ref < 0) {
        printf("| %-14s | %-22s | failed |\n", op, shape);
        return;
    }
    char g[32] = "-";
    if (goal > 0)
        snprintf(g, sizeof g, "%s%.2fx", wick / ref >= goal ? ">= " : "MISS ", goal);
    printf("| %-14s | %-22s | %8.1f %-6s | %8.1f %-6s (%s) | %5.2fx | %s |\n", op, shape, wick,
           unit, ref, unit, refname, wick / ref, g);
}

static void bench_matmul(wk_device *dev, int batch, int m, int n, int k, int reps)
{
    job w = {.kind = J_WK_MM, .m = m, .n = n, .k = k, .batch = batch};
    w.a = filled(dev, (size_t)batch * m * k, -1, 1);
    w.b = filled(dev, (size_t)batch * k * n, -1, 1);
    wk_storage_alloc_uninit(&w.out, dev, WK_DTYPE_F32, (size_t)batch * m * n);
    const int64_t da[3] = {batch, m, k}, db[3] = {batch, k, n};
    const int r = batch > 1 ? 3 : 2;
    wk_layout_contiguous(&w.la, r, batch > 1 ? da : da + 1);
    wk_layout_contiguous(&w.lb, r, batch > 1 ? db : db + 1);
    job b = w;
    b.kind = J_BLAS_MM;
    double tw = -1, tb = -1;
    if (w.a && w.b && w.out) {
        tb = best(&b, reps);
        tw = best(&w, reps);
        const double t2 = best(&b, reps); /* again, after: the best of both sides */
        tb = t2 >= 0 && t2 < tb ? t2 : tb;
    }
    const double flop = 2.0 * batch * m * n * k;
    char shape[64];
    if (batch > 1)
        snprintf(shape, sizeof shape, "%dx%dx%dx%d", batch, m, n, k);
    else
        snprintf(shape, sizeof shape, "%dx%dx%d", m, n, k);
    row("matmul f32", shape, "GFLOP/s", tw > 0 ? flop / tw * 1e-9 : -1,
        tb > 0 ? flop / tb * 1e-9 : -1, "sgemm", 0.95);
    wk_storage_free(w.a);
    wk_storage_free(w.b);
    wk_storage_free(w.out);
}

static void bench_memory(wk_device *dev, int reps)
{
    const size_t n = (size_t)1 << 25;
    const int64_t dims[2] = {(int64_t)(n / 1024), 1024};
    job j = {0};
    j.a = filled(dev, n, -4, 4);
    j.b = filled(dev, n, -4, 4);
    wk_storage_alloc_uninit(&j.out, dev, WK_DTYPE_F32, n);
    wk_layout_contiguous(&j.la, 2, dims);
    if (!j.a || !j.b || !j.out) {
        printf("allocation failed\n");
        return;
    }
    /* memcpy of 4n bytes moves 8n bytes (read + write): the best of one thread and all */
    j.bytes = n * 4;
    j.kind = J_MEMCPY1;
    const double t1 = best(&j, reps);
    j.kind = J_MEMCPYP;
    const double tp = best(&j, reps);
    const double copy_gbs = 8.0 * (double)n / (t1 < tp ? t1 : tp) * 1e-9;
    printf("| %-14s | %-22s | %8.1f %-6s | 1 thread %.1f, %d threads %.1f GB/s |\n", "memcpy",
           "2^25 f32", copy_gbs, "GB/s", 8.0 * (double)n / t1 * 1e-9, omp_get_max_threads(),
           8.0 * (double)n / tp * 1e-9);
    struct {
        int kind;
        const char *name;
        double bytes; /* read + written */
        double ref;
    } ops[] = {
        {J_ADD, "add f32", 12.0 * n, copy_gbs},
        {J_EXP, "exp f32", 8.0 * n, copy_gbs},
        {J_CAST, "cast f32->bf16", 6.0 * n, copy_gbs},
        {J_SUM, "sum last dim", 4.0 * n, copy_gbs},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        j.kind = ops[i].kind;
        const double t = best(&j, reps);
        char shape[64];
        snprintf(shape, sizeof shape, "2^25 (%lldx1024)", (long long)dims[0]);
        row(ops[i].name, shape, "GB/s", t > 0 ? ops[i].bytes / t * 1e-9 : -1, ops[i].ref,
            "memcpy", 0.8);
    }
    wk_storage_free(j.a);
    wk_storage_free(j.b);
    wk_storage_free(j.out);
}

static void bench_conv(wk_device *dev, int reps)
{
    const int64_t dx[4] = {8, 64, 56, 56}, dw[4] = {64, 64, 3, 3};
    job j = {.kind = J_CONV};
    j.a = filled(dev, 8 * 64 * 56 * 56, -1, 1);
    j.b = filled(dev, 64 * 64 * 9, -1, 1);
    wk_layout_contiguous(&j.la, 4, dx);
    wk_layout_contiguous(&j.lb, 4, dw);
    j.p = (wk_conv_params){.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
    /* the gemm it reduces to, through BLAS directly: per image 64 x 3136 x 576 */
    job g = {.kind = J_BLAS_MM, .m = 64, .n = 56 * 56, .k = 64 * 9, .batch = 8};
    g.a = filled(dev, (size_t)8 * 64 * 576, -1, 1);
    g.b = filled(dev, (size_t)8 * 576 * 3136, -1, 1);
    wk_storage_alloc_uninit(&g.out, dev, WK_DTYPE_F32, (size_t)8 * 64 * 3136);
    const double flop = 2.0 * 8 * 64 * 3136 * 576;
    double t = -1, tg = -1;
    if (j.a && j.b && g.a && g.b && g.out) {
        t = best(&j, reps);
        tg = best(&g, reps);
    }
    row("conv2d f32", "8x64x56x56 k3 p1 ->64", "GFLOP/s", t > 0 ? flop / t * 1e-9 : -1,
        tg > 0 ? flop / tg * 1e-9 : -1, "its gemm", 0.0);
    printf("(conv2d: %.1f ms per call; the reference is the same gemm without im2col)\n", t * 1e3);
    wk_storage_free(j.a);
    wk_storage_free(j.b);
    wk_storage_free(g.a);
    wk_storage_free(g.b);
    wk_storage_free(g.out);
}

int main(void)
{
    const wk_allocator cache = {cache_alloc, cache_free, NULL};
    if (wk_set_allocator(&cache) != WK_OK)
        return 1;
    wk_device *dev = NULL;
    if (wk_device_open(&dev, "cpu") != WK_OK) {
        fprintf(stderr, "cannot open the cpu device: %s\n", wk_last_error());
        return 1;
    }
    printf("wick %s CPU bench on %s; OpenBLAS %s\n\n", wk_version_string(), wk_device_name(dev),
           openblas_get_config());
    printf("| %-14s | %-22s | %-15s | %-24s | %-6s | %-7s |\n", "op", "shape", "wick", "reference",
           "ratio", "goal");
    printf("|----------------|------------------------|-----------------|--------------------------|--------|---------|\n");
    bench_matmul(dev, 1, 1024, 1024, 1024, 5);
    bench_matmul(dev, 1, 2048, 2048, 2048, 3);
    bench_matmul(dev, 32, 256, 256, 256, 5);
    bench_matmul(dev, 256, 32, 32, 32, 20);
    bench_memory(dev, 5);
    bench_conv(dev, 3);
    wk_device_close(dev);
    wk_set_allocator(NULL);
    for (int i = 0; i < CACHE_SLOTS; i++)
        free(g_cache[i].p);
    return 0;
}
