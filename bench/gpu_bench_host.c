/* gpu_bench_host.c: where the host time of one small op goes (docs/performance.md, "Decode step").
 * Not a test; uses the library's internal headers to time each step of the path
 * wk_binary -> launch separately on a GPU device (one step in a loop of 100000, ns per step):
 *   checks      wk_check_pair + wk_check_same_dims + wk_check_op (the front end's argument checks)
 *   storage     wk_calloc + wk_free of the storage record
 *   alloc       the backend's alloc + free of 4 KiB (the caching allocator: a hit each time)
 *   name        snprintf of the kernel name ("binary_add_f32")
 *   lookup      wk_gpu_function (module cache: hash, lock, compare)
 *   blocks      wk_gpu_blocks (grid size)
 *   launch      wk_gpu_launch of the add kernel (the driver's launch; 1000 per loop, then a
 *               synchronize, so the GPU's own pace shows too)
 *   wk_binary   the whole public call + wk_storage_free (1000 per loop, then synchronize)
 *   graph       (when the graph API is present) replay of 1000 captured adds, per op
 * build: target wick_gpu_bench_host (cmake/decode.cmake); run: build/wick_gpu_bench_host [--device D] */
#include "api.h"
#include "bench.h"
#include "gpu_impl.h"
#include "gpu_ops.h"
#include <string.h>

static wk_device *dev;
static volatile int64_t sink;

#define STEP_REPS 100000

int main(int argc, char **argv)
{
    const char *spec = "cuda:0";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--device") == 0)
            spec = argv[i + 1];
    CHECK(wk_device_open(&dev, spec));
    if (wk_device_backend(dev) == WK_BACKEND_CPU) {
        fprintf(stderr, "gpu_bench_host: %s is not a GPU device\n", spec);
        return 1;
    }
    printf("device %s\n", wk_device_name(dev));
    const size_t n = 1024;
    wk_storage *a, *b;
    CHECK(wk_rand_uniform(&a, dev, WK_DTYPE_F32, n, -1, 1));
    CHECK(wk_rand_uniform(&b, dev, WK_DTYPE_F32, n, -1, 1));
    wk_layout l;
    const int64_t dims[1] = {(int64_t)n};
    CHECK(wk_layout_contiguous(&l, 1, dims));
    double t0, ns[16];
    const char *names[16];
    int k = 0;

    t0 = now();
    for (int i = 0; i < STEP_REPS; i++) {
        wk_status s = wk_check_pair(a, &l, b, &l, "add");
        s |= wk_check_same_dims(&l, &l, "add");
        s |= wk_check_op(dev, WK_OP_ADD, WK_DTYPE_F32);
        sink += s;
    }
    names[k] = "checks";
    ns[k++] = (now() - t0) / STEP_REPS * 1e9;

    t0 = now();
    for (int i = 0; i < STEP_REPS; i++) {
        void *p = wk_calloc(1, 64);
        sink += p != NULL;
        wk_free(p);
    }
    names[k] = "storage record";
    ns[k++] = (now() - t0) / STEP_REPS * 1e9;

    t0 = now();
    for (int i = 0; i < STEP_REPS; i++) {
        void *p;
        CHECK(dev->be->alloc(dev, n * 4, &p));
        dev->be->free(dev, p);
    }
    names[k] = "alloc + free (cache hit)";
    ns[k++] = (now() - t0) / STEP_REPS * 1e9;

    char name[64];
    t0 = now();
    for (int i = 0; i < STEP_REPS; i++) {
        snprintf(name, sizeof name, "binary_%s_%s", wk_gpu_op_kname(WK_OP_ADD),
                 wk_gpu_dtype_kname(WK_DTYPE_F32));
        sink += name[7];
    }
    names[k] = "kernel name (snprintf)";
    ns[k++] = (now() - t0) / STEP_REPS * 1e9;

    wk_gpu_fn fn;
    CHECK(wk_gpu_function(&fn, dev, "binary", name));
    t0 = now();
    for (int i = 0; i < STEP_REPS; i++) {
        CHECK(wk_gpu_function(&fn, dev, "binary", name));
        sink += fn != NULL;
    }
    names[k] = "kernel lookup";
    ns[k++] = (now() - t0) / STEP_REPS * 1e9;

    t0 = now();
    for (int i = 0; i < STEP_REPS; i++)
        sink += wk_gpu_blocks(dev, 256);
    names[k] = "grid size";
    ns[k++] = (now() - t0) / STEP_REPS * 1e9;

    /* the launch alone: out = a + b into one preallocated buffer */
    void *out;
    CHECK(dev->be->alloc(dev, n * 4, &out));
    int64_t nn = (int64_t)n;
    const void *ap = a->data, *bp = b->data;
    void *args[] = {&nn, &ap, &bp, &out};
    double best = 1e30, best_issue = 0;
    for (int trial = 0; trial < 4; trial++) {
        CHECK(wk_device_synchronize(dev));
        t0 = now();
        for (int i = 0; i < 1000; i++)
            CHECK(wk_gpu_launch(dev, fn, wk_gpu_blocks(dev, 256), 1, 1, WK_GPU_BLOCK, 1, 1, 0, args));
        const double t1 = now();
        CHECK(wk_device_synchronize(dev));
        const double t2 = now();
        if (trial && t2 - t0 < best) {
            best = t2 - t0;
            best_issue = t1 - t0;
        }
    }
    names[k] = "launch (issue)";
    ns[k++] = best_issue / 1000 * 1e9;
    names[k] = "launch (issue + GPU, per op)";
    ns[k++] = best / 1000 * 1e9;
    dev->be->free(dev, out);

    best = 1e30;
    for (int trial = 0; trial < 4; trial++) {
        CHECK(wk_device_synchronize(dev));
        t0 = now();
        for (int i = 0; i < 1000; i++) {
            wk_storage *o;
            CHECK(wk_binary(&o, WK_OP_ADD, a, &l, b, &l));
            wk_storage_free(o);
        }
        const double t1 = now();
        CHECK(wk_device_synchronize(dev));
        const double t2 = now();
        if (trial && t2 - t0 < best) {
            best = t2 - t0;
            best_issue = t1 - t0;
        }
    }
    names[k] = "wk_binary + free (issue)";
    ns[k++] = best_issue / 1000 * 1e9;
    names[k] = "wk_binary + free (issue + GPU)";
    ns[k++] = best / 1000 * 1e9;

    printf("\n== host path of one 1024-element f32 add (ns per step)\n");
    for (int i = 0; i < k; i++)
        printf("HOST %-34s %8.1f\n", names[i], ns[i]);
    wk_storage_free(a);
    wk_storage_free(b);
    wk_device_close(dev);
    return (int)(sink & 0);
}
