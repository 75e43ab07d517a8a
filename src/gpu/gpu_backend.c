/* gpu_backend.c: the CUDA and ROCm backends (wk_cuda_backend, wk_rocm_backend): one
 * implementation of the backend vtable (src/core/backend.h) over the driver interface of
 * gpu_driver.h. Devices, memory and copies live here; every op entry goes to the op half
 * (wk_gpu_* of gpu_impl.h). Ops are asynchronous on the device's one stream; download and
 * synchronize wait and report any error of earlier work. */
#include "gpu_driver.h"
#include "wk_core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* True if this build embeds a code object of the driver's vendor for some module. */
static bool have_kernels(const wk_gpu_driver *drv)
{
    if (drv->kind == WK_BACKEND_SIMT) /* its own table: the driver's init says if it is empty */
        return true;
    for (int i = 0; i < wk_gpu_embedded_module_count; i++) {
        const wk_gpu_embedded *e = &wk_gpu_embedded_modules[i];
        if (drv->kind == WK_BACKEND_CUDA ? e->cuda != NULL : e->hip != NULL)
            return true;
    }
    return false;
}

static wk_status gpu_device_count(const wk_gpu_driver *drv, int *n, const char **reason)
{
    const char *why = "";
    int count = drv->init(&why);
    if (count > 0 && !have_kernels(drv)) {
        why = drv->kind == WK_BACKEND_CUDA
                  ? "built without CUDA kernels (nvcc was not found at build time)"
                  : "built without ROCm kernels (hipcc was not found at build time)";
        count = 0;
    }
    *n = count;
    *reason = count > 0 ? "" : why;
    return WK_OK;
}

static wk_status cuda_device_count(int *n, const char **reason)
{
    return gpu_device_count(&wk_gpu_cuda_driver, n, reason);
}

static wk_status rocm_device_count(int *n, const char **reason)
{
    return gpu_device_count(&wk_gpu_hip_driver, n, reason);
}

static wk_status simt_device_count(int *n, const char **reason)
{
    return gpu_device_count(&wk_gpu_simt_driver, n, reason);
}

static void gpu_close(wk_gpu_device *g)
{
    if (g->ctx)
        (void)g->drv->sync(g->ctx);
    if (g->error_word)
        g->drv->mem_free(g->ctx, g->error_word);
    if (g->counters)
        g->drv->mem_free(g->ctx, g->counters);
    wk_gpu_blas_close(g);
    pthread_mutex_destroy(&g->blas_mu);
    wk_gpu_modules_destroy(g);
    wk_gpu_alloc_destroy(g);
    if (g->ctx)
        g->drv->ctx_destroy(g->ctx);
    pthread_mutex_destroy(&g->error_mu);
    wk_free(g);
}

static wk_status gpu_device_open(const wk_gpu_driver *drv, wk_device *dev, int ordinal)
{
    int n = 0;
    const char *why = "";
    gpu_device_count(drv, &n, &why);
    if (ordinal < 0 || ordinal >= n)
        return wk_err(WK_ERR_NO_DEVICE, "%s:%d: %s", drv->name, ordinal,
                      n ? "no such device" : why);
    wk_gpu_device *g = wk_calloc(1, sizeof *g);
    if (!g)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s:%d: out of host memory", drv->name, ordinal);
    if (pthread_mutex_init(&g->error_mu, NULL) != 0) {
        wk_free(g);
        return wk_err(WK_ERR_INTERNAL, "%s:%d: pthread_mutex_init failed", drv->name, ordinal);
    }
    if (pthread_mutex_init(&g->blas_mu, NULL) != 0) {
        pthread_mutex_destroy(&g->error_mu);
        wk_free(g);
        return wk_err(WK_ERR_INTERNAL, "%s:%d: pthread_mutex_init failed", drv->name, ordinal);
    }
    g->drv = drv;
    g->ordinal = ordinal;
    g->force_rtc = env_flag("WICK_FORCE_RTC");
    g->no_cache = env_flag("WICK_GPU_NO_CACHE");
    wk_status st = drv->props(&g->props, ordinal);
    if (st == WK_OK)
        st = drv->ctx_create(&g->ctx, ordinal);
    if (st == WK_OK)
        st = wk_gpu_alloc_create(g);
    if (st == WK_OK)
        st = wk_gpu_modules_create(g);
    if (st != WK_OK) {
        gpu_close(g);
        return st;
    }
    snprintf(dev->name, sizeof dev->name, "%.96s (%s, %d %s, %.1f GiB)", g->props.name,
             g->props.arch, g->props.sm_count, drv->kind == WK_BACKEND_ROCM ? "CUs" : "SMs",
             (double)g->props.total_mem / (1024.0 * 1024.0 * 1024.0));
    dev->impl = g;
    return WK_OK;
}

static wk_status cuda_device_open(wk_device *dev, int ordinal)
{
    return gpu_device_open(&wk_gpu_cuda_driver, dev, ordinal);
}

static wk_status rocm_device_open(wk_device *dev, int ordinal)
{
    return gpu_device_open(&wk_gpu_hip_driver, dev, ordinal);
}

static wk_status simt_device_open(wk_device *dev, int ordinal)
{
    return gpu_device_open(&wk_gpu_simt_driver, dev, ordinal);
}

static void gpu_device_close(wk_device *dev)
{
    if (dev && dev->impl) {
        gpu_close(wk_gpu_dev(dev));
        dev->impl = NULL;
    }
}

/* Waits for the stream, then reports (and clears) what kernels left in the error word. */
static wk_status gpu_wait(wk_gpu_device *g)
{
    wk_status st = g->drv->sync(g->ctx);
    pthread_mutex_lock(&g->error_mu); /* set once by wk_gpu_error_word */
    void *word = g->error_word;
    pthread_mutex_unlock(&g->error_mu);
    if (st != WK_OK || !word)
        return st;
    uint32_t rec[2] = {0, 0}; /* {code, detail}: see wk_gpu_error_word */
    st = g->drv->d2h(g->ctx, rec, word, sizeof rec);
    if (st == WK_OK)
        st = g->drv->sync(g->ctx);
    if (st != WK_OK || rec[0] == 0)
        return st;
    st = g->drv->memset_zero(g->ctx, word, sizeof rec);
    if (st == WK_OK)
        st = g->drv->sync(g->ctx);
    if (st != WK_OK)
        return st;
    return wk_err(WK_ERR_INDEX_OUT_OF_RANGE,
                  "%s:%d: an earlier %s found id %u out of range (low 32 bits of the value); "
                  "nothing was written out of bounds, its output is undefined",
                  g->drv->name, g->ordinal, wk_gpu_kerr_name(rec[0]), rec[1]);
}

/* What a graph capture cannot record (docs/semantics.md, "Graphs"): fails before touching the
 * stream, so the capture stays valid. */
static wk_status no_capture(const wk_gpu_device *g, const char *what)
{
    if (!g->capture)
        return WK_OK;
    return wk_err(WK_ERR_NOT_SUPPORTED, "%s:%d: %s cannot be captured in a graph (it waits for "
                  "the device); end the capture first", g->drv->name, g->ordinal, what);
}

static wk_status gpu_synchronize(wk_device *dev)
{
    wk_status st = no_capture(wk_gpu_dev(dev), "synchronize");
    return st != WK_OK ? st : gpu_wait(wk_gpu_dev(dev));
}

static bool gpu_supports(const wk_device *dev, wk_op op, wk_dtype dt)
{
    (void)dev; /* every device of a build runs the same kernels */
    if (!wk_op_defined(op, dt))
        return false;
    if (op == WK_OP_ZEROS) /* a memset: no kernel */
        return true;
    return wk_gpu_ops_supports(op, dt);
}

/* ---- memory */
static wk_status gpu_alloc(wk_device *dev, size_t bytes, void **ptr)
{
    return wk_gpu_mem_alloc(wk_gpu_dev(dev), bytes, ptr);
}

static void gpu_free(wk_device *dev, void *ptr) { wk_gpu_mem_free(wk_gpu_dev(dev), ptr); }

/* Waits for the copy: host memory may be pinned (then the copy is truly asynchronous) and the
 * caller may reuse src as soon as this returns. */
static wk_status gpu_upload(wk_device *dev, void *dst, const void *host_src, size_t bytes)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    wk_status st = no_capture(g, "an upload from host memory");
    if (st != WK_OK || !bytes)
        return st;
    st = g->drv->h2d(g->ctx, dst, host_src, bytes);
    return st != WK_OK ? st : g->drv->sync(g->ctx);
}

static wk_status gpu_download(wk_device *dev, void *host_dst, const void *src, size_t bytes)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    wk_status st = no_capture(g, "a download to host memory");
    if (st != WK_OK)
        return st;
    st = bytes ? g->drv->d2h(g->ctx, host_dst, src, bytes) : WK_OK;
    return st != WK_OK ? st : gpu_wait(g);
}

static wk_status gpu_copy(wk_device *dev, void *dst, const void *src, size_t bytes)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    return bytes ? g->drv->d2d(g->ctx, dst, src, bytes) : WK_OK;
}

static wk_status gpu_memset_zero(wk_device *dev, void *dst, size_t bytes)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    return bytes ? g->drv->memset_zero(g->ctx, dst, bytes) : WK_OK;
}

/* ---- kernel modules */
static wk_code_source gpu_code_source(const wk_device *dev)
{
    return wk_gpu_code_source(wk_gpu_dev(dev));
}

static wk_status gpu_warmup(wk_device *dev, int threads)
{
    return wk_gpu_modules_warmup(wk_gpu_dev(dev), threads);
}

/* ---- the two vtables: the same functions, a different driver behind device_count/open */
#define WK_GPU_BACKEND(NAME, KIND, PREFIX)                                                   \
    {                                                                                        \
        .name = NAME, .kind = KIND, .device_count = PREFIX##_device_count,                   \
        .device_open = PREFIX##_device_open, .device_close = gpu_device_close,               \
        .synchronize = gpu_synchronize, .supports = gpu_supports, .alloc = gpu_alloc,        \
        .stream = wk_gpu_bind, .code_source = gpu_code_source, .warmup = gpu_warmup,         \
        .free = gpu_free, .upload = gpu_upload, .download = gpu_download, .copy = gpu_copy,  \
        .memset_zero = gpu_memset_zero, .unary = wk_gpu_unary, .binary = wk_gpu_binary,      \
        .where_cond = wk_gpu_where_cond, .to_dtype = wk_gpu_to_dtype,                        \
        .const_set = wk_gpu_const_set, .reduce = wk_gpu_reduce,                              \
        .copy_strided = wk_gpu_copy_strided, .copy2d = wk_gpu_copy2d, .rand = wk_gpu_rand,   \
        .matmul = wk_gpu_matmul, .conv = wk_gpu_conv, .pool2d = wk_gpu_pool2d,               \
        .upsample = wk_gpu_upsample, .index = wk_gpu_index, .softmax = wk_gpu_softmax,       \
        .norm = wk_gpu_norm, .add_norm = wk_gpu_add_norm, .rope = wk_gpu_rope,               \
        .arg_sort = wk_gpu_arg_sort, .rope_kv = wk_gpu_rope_kv,                              \
        .attention = wk_gpu_attention, .graph_begin = wk_gpu_graph_begin,                     \
        .graph_end = wk_gpu_graph_end, .graph_launch = wk_gpu_graph_launch,                  \
        .graph_free = wk_gpu_graph_free,                                                     \
        .supports_q = wk_gpu_supports_q, .dequantize = wk_gpu_dequantize,                    \
        .qmatmul = wk_gpu_qmatmul, .qembedding = wk_gpu_qembedding,                          \
        .quantize_act = wk_gpu_quantize_act, .add_norm_act = wk_gpu_add_norm_act,            \
        .qmatmul_act = wk_gpu_qmatmul_act, .binary_act = wk_gpu_binary_act,                  \
    }

const wk_backend wk_cuda_backend = WK_GPU_BACKEND("cuda", WK_BACKEND_CUDA, cuda);
const wk_backend wk_rocm_backend = WK_GPU_BACKEND("rocm", WK_BACKEND_ROCM, rocm);
const wk_backend wk_simt_backend = WK_GPU_BACKEND("simt", WK_BACKEND_SIMT, simt);
