/* hip.c: the GPU driver interface (gpu_driver.h) over the HIP runtime API (ROCm).
 * libamdhip64 is opened with dlopen at first use (.so, .so.6, .so.5) and every entry point looked
 * up with dlsym, so libwick has no load-time dependency on it. Each device gets one non-blocking
 * stream; hipSetDevice before each call makes the device current in the calling thread.
 * Built with WK_HAVE_HIP_H and -D__HIP_PLATFORM_AMD__ (set by cmake/gpu.cmake when
 * hip/hip_runtime_api.h is found); without it the backend reports "built without HIP headers".
 * The entry points used are ones whose signatures did not change between ROCm 5 and 6; the
 * device properties struct did change, so only the arch name is read from it (see hip_arch). */
#include "gpu_driver.h"
#include "wk_core.h"

#if defined(WK_HAVE_HIP_H)
#include <hip/hip_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct hip_api {
    hipError_t (*Init)(unsigned);
    hipError_t (*GetDeviceCount)(int *);
    hipError_t (*DeviceGetName)(char *, int, hipDevice_t);
    hipError_t (*DeviceTotalMem)(size_t *, hipDevice_t);
    hipError_t (*DeviceGetAttribute)(int *, hipDeviceAttribute_t, int);
    hipError_t (*GetDeviceProperties)(void *, int); /* layout varies by version: see hip_arch */
    hipError_t (*SetDevice)(int);
    hipError_t (*StreamCreateWithFlags)(hipStream_t *, unsigned);
    hipError_t (*StreamDestroy)(hipStream_t);
    hipError_t (*StreamSynchronize)(hipStream_t);
    hipError_t (*StreamQuery)(hipStream_t);
    hipError_t (*Malloc)(void **, size_t);
    hipError_t (*Free)(void *);
    hipError_t (*MemGetInfo)(size_t *, size_t *);
    hipError_t (*MemcpyAsync)(void *, const void *, size_t, hipMemcpyKind, hipStream_t);
    hipError_t (*MemsetAsync)(void *, int, size_t, hipStream_t);
    hipError_t (*ModuleLoadData)(hipModule_t *, const void *);
    hipError_t (*ModuleUnload)(hipModule_t);
    hipError_t (*ModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
    hipError_t (*ModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, unsigned, unsigned, hipStream_t, void **, void **);
    const char *(*GetErrorName)(hipError_t);
    /* graphs: optional (all NULL when any is missing) */
    hipError_t (*StreamBeginCapture)(hipStream_t, hipStreamCaptureMode);
    hipError_t (*StreamEndCapture)(hipStream_t, hipGraph_t *);
    hipError_t (*GraphInstantiate)(hipGraphExec_t *, hipGraph_t, hipGraphNode_t *, char *, size_t);
    hipError_t (*GraphLaunch)(hipGraphExec_t, hipStream_t);
    hipError_t (*GraphExecDestroy)(hipGraphExec_t);
    hipError_t (*GraphDestroy)(hipGraph_t);
} hip_api;
static hip_api hip;

static pthread_once_t hip_once = PTHREAD_ONCE_INIT;
static int hip_count;
static char hip_reason[320];

typedef struct hip_ctx {
    int ordinal;
    hipStream_t stream;
} hip_ctx;

static const char *hip_name(hipError_t r)
{
    const char *s = hip.GetErrorName ? hip.GetErrorName(r) : NULL;
    if (s)
        return s;
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "HIP error %d", (int)r);
    return buf;
}

static wk_status hip_fail(hipError_t r, const char *what)
{
    wk_status s = r == hipErrorOutOfMemory ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE;
    return wk_err(s, "rocm: %s: %s", what, hip_name(r));
}
#define HIP_CHECK(call, what)                 \
    do {                                      \
        hipError_t r_ = (call);               \
        if (r_ != hipSuccess)                 \
            return hip_fail(r_, what);        \
    } while (0)

static int hip_load(void *lib)
{
    static const struct { size_t off; const char *sym; } syms[] = {
#define S(field, sym) {offsetof(hip_api, field), sym}
        S(Init, "hipInit"), S(GetDeviceCount, "hipGetDeviceCount"),
        S(DeviceGetName, "hipDeviceGetName"), S(DeviceTotalMem, "hipDeviceTotalMem"),
        S(DeviceGetAttribute, "hipDeviceGetAttribute"), S(SetDevice, "hipSetDevice"),
        S(StreamCreateWithFlags, "hipStreamCreateWithFlags"), S(StreamDestroy, "hipStreamDestroy"),
        S(StreamSynchronize, "hipStreamSynchronize"), S(StreamQuery, "hipStreamQuery"), S(Malloc, "hipMalloc"), S(Free, "hipFree"),
        S(MemGetInfo, "hipMemGetInfo"), S(MemcpyAsync, "hipMemcpyAsync"),
        S(MemsetAsync, "hipMemsetAsync"), S(ModuleLoadData, "hipModuleLoadData"),
        S(ModuleUnload, "hipModuleUnload"), S(ModuleGetFunction, "hipModuleGetFunction"),
        S(ModuleLaunchKernel, "hipModuleLaunchKernel"), S(GetErrorName, "hipGetErrorName"),
#undef S
    };
    _Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym needs code == data pointers");
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(lib, syms[i].sym);
        if (!p) {
            snprintf(hip_reason, sizeof hip_reason, "the HIP runtime lacks %s", syms[i].sym);
            return 0;
        }
        memcpy((char *)&hip + syms[i].off, &p, sizeof p);
    }
    /* ROCm 6 renamed the properties call with its new struct layout; either serves hip_arch. */
    void *p = dlsym(lib, "hipGetDevicePropertiesR0600");
    if (!p)
        p = dlsym(lib, "hipGetDeviceProperties");
    memcpy(&hip.GetDeviceProperties, &p, sizeof p);
    /* the graph entry points: optional */
    static const struct {
        size_t off;
        const char *sym;
    } gsyms[] = {
#define S(field, sym) {offsetof(hip_api, field), sym}
        S(StreamBeginCapture, "hipStreamBeginCapture"), S(StreamEndCapture, "hipStreamEndCapture"),
        S(GraphInstantiate, "hipGraphInstantiate"), S(GraphLaunch, "hipGraphLaunch"),
        S(GraphExecDestroy, "hipGraphExecDestroy"), S(GraphDestroy, "hipGraphDestroy"),
#undef S
    };
    bool all = true;
    for (size_t i = 0; i < sizeof gsyms / sizeof gsyms[0]; i++)
        all = all && dlsym(lib, gsyms[i].sym) != NULL;
    for (size_t i = 0; all && i < sizeof gsyms / sizeof gsyms[0]; i++) {
        void *g = dlsym(lib, gsyms[i].sym);
        memcpy((char *)&hip + gsyms[i].off, &g, sizeof g);
    }
    return 1;
}

static void hip_init_once(void)
{
    static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                        "/opt/rocm/lib/libamdhip64.so"};
    void *lib = NULL;
    char first_error[200] = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib && i == 0) {
            const char *e = dlerror();
            snprintf(first_error, sizeof first_error, "%s", e ? e : "unknown error");
        }
    }
    if (!lib) {
        snprintf(hip_reason, sizeof hip_reason,
                 "libamdhip64.so not found (tried .so, .so.6, .so.5; dlopen: %s)", first_error);
        return;
    }
    if (!hip_load(lib)) {
        memset(&hip, 0, sizeof hip);
        return;
    }
    hipError_t r = hip.Init(0);
    if (r != hipSuccess) {
        snprintf(hip_reason, sizeof hip_reason, "hipInit failed: %s", hip_name(r));
        return;
    }
    int n = 0;
    r = hip.GetDeviceCount(&n);
    if (r != hipSuccess) {
        snprintf(hip_reason, sizeof hip_reason, "hipGetDeviceCount failed: %s", hip_name(r));
        return;
    }
    if (n <= 0) {
        snprintf(hip_reason, sizeof hip_reason, "no devices");
        return;
    }
    hip_count = n;
}

static int hip_init(const char **reason)
{
    pthread_once(&hip_once, hip_init_once);
    *reason = hip_count > 0 ? "" : hip_reason;
    return hip_count;
}

/* The gcnArchName ("gfx90a:sramecc+:xnack-") of the device. hipDeviceProp_t changed layout in
 * ROCm 6, so the struct is read into a buffer larger than any version of it and the name found
 * by its "gfx" prefix past the leading name[256] field (the same in every version). */
static void hip_arch(wk_gpu_props *p, int ordinal)
{
    enum { RAW = 16384 };
    _Static_assert(sizeof(hipDeviceProp_t) < RAW / 2, "room for newer layouts");
    char *raw = wk_calloc(1, RAW);
    if (!raw)
        return;
    if (hip.GetDeviceProperties && hip.GetDeviceProperties(raw, ordinal) == hipSuccess) {
        for (size_t i = 256; i + 4 < RAW; i++) {
            if (memcmp(raw + i, "gfx", 3) == 0 && raw[i + 3] >= '0' && raw[i + 3] <= '9') {
                snprintf(p->arch_full, sizeof p->arch_full, "%.63s", raw + i);
                break;
            }
        }
    }
    wk_free(raw);
    size_t n = strcspn(p->arch_full, ":");
    snprintf(p->arch, sizeof p->arch, "%.*s", (int)(n < sizeof p->arch ? n : sizeof p->arch - 1),
             p->arch_full);
}

static wk_status hip_props(wk_gpu_props *p, int ordinal)
{
    memset(p, 0, sizeof *p);
    HIP_CHECK(hip.DeviceGetName(p->name, (int)sizeof p->name, ordinal), "hipDeviceGetName");
    HIP_CHECK(hip.DeviceTotalMem(&p->total_mem, ordinal), "hipDeviceTotalMem");
    hip_arch(p, ordinal);
    if (!p->arch[0])
        return wk_err(WK_ERR_DEVICE, "rocm: no gfx architecture name for device %d", ordinal);
    if (hip.DeviceGetAttribute(&p->sm_count, hipDeviceAttributeMultiprocessorCount, ordinal) !=
            hipSuccess || p->sm_count <= 0)
        p->sm_count = 1;
    /* Wave64 on GCN/CDNA (gfx9 and older), wave32 on RDNA (gfx10+) as HIP compiles for it. The
     * attribute is trusted only when it says one of the two. */
    int ws = 0;
    if (hip.DeviceGetAttribute(&ws, hipDeviceAttributeWarpSize, ordinal) != hipSuccess ||
        (ws != 32 && ws != 64))
        ws = (strncmp(p->arch, "gfx", 3) == 0 && strlen(p->arch) >= 7) ? 32 : 64;
    p->warp_size = ws;
    /* LDS per workgroup: 64 KiB on every AMD GPU HIP builds for, if the attribute says nothing */
    if (hip.DeviceGetAttribute(&p->smem_block, hipDeviceAttributeMaxSharedMemoryPerBlock,
                               ordinal) != hipSuccess ||
        p->smem_block <= 0)
        p->smem_block = 64 * 1024;
    return WK_OK;
}

static wk_status hip_current(const hip_ctx *c)
{
    HIP_CHECK(hip.SetDevice(c->ordinal), "hipSetDevice");
    return WK_OK;
}
#define HIP_CURRENT(c)                        \
    do {                                      \
        wk_status s_ = hip_current(c);        \
        if (s_ != WK_OK)                      \
            return s_;                        \
    } while (0)

static wk_status hip_ctx_create(void **out, int ordinal)
{
    hip_ctx *c = wk_calloc(1, sizeof *c);
    if (!c)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "rocm: out of host memory");
    c->ordinal = ordinal;
    hipError_t r = hip.SetDevice(ordinal);
    if (r == hipSuccess)
        r = hip.StreamCreateWithFlags(&c->stream, hipStreamNonBlocking);
    if (r != hipSuccess) {
        wk_free(c);
        return hip_fail(r, "hipStreamCreateWithFlags");
    }
    *out = c;
    return WK_OK;
}

static void hip_ctx_destroy(void *ctx)
{
    hip_ctx *c = ctx;
    if (!c)
        return;
    if (hip.SetDevice(c->ordinal) == hipSuccess) {
        (void)hip.StreamSynchronize(c->stream);
        (void)hip.StreamDestroy(c->stream);
    }
    wk_free(c);
}

static wk_status hip_mem_alloc(void *ctx, void **ptr, size_t bytes)
{
    HIP_CURRENT(ctx);
    void *p = NULL;
    hipError_t r = hip.Malloc(&p, bytes);
    if (r != hipSuccess)
        return wk_err(r == hipErrorOutOfMemory ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE,
                      "rocm: hipMalloc(%zu bytes): %s", bytes, hip_name(r));
    *ptr = p;
    return WK_OK;
}

static void hip_mem_free(void *ctx, void *ptr)
{
    if (hip_current(ctx) == WK_OK)
        (void)hip.Free(ptr);
}

static wk_status hip_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes)
{
    HIP_CURRENT(ctx);
    HIP_CHECK(hip.MemGetInfo(free_bytes, total_bytes), "hipMemGetInfo");
    return WK_OK;
}

static wk_status hip_copy(void *ctx, void *dst, const void *src, size_t bytes, hipMemcpyKind kind)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    HIP_CHECK(hip.MemcpyAsync(dst, src, bytes, kind, c->stream), "hipMemcpyAsync");
    return WK_OK;
}

static wk_status hip_h2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    return hip_copy(ctx, dst, src, bytes, hipMemcpyHostToDevice);
}

static wk_status hip_d2h(void *ctx, void *dst, const void *src, size_t bytes)
{
    return hip_copy(ctx, dst, src, bytes, hipMemcpyDeviceToHost);
}

static wk_status hip_d2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    return hip_copy(ctx, dst, src, bytes, hipMemcpyDeviceToDevice);
}

static wk_status hip_memset_zero(void *ctx, void *dst, size_t bytes)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    HIP_CHECK(hip.MemsetAsync(dst, 0, bytes, c->stream), "hipMemsetAsync");
    return WK_OK;
}

static wk_status hip_sync(void *ctx)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    HIP_CHECK(hip.StreamSynchronize(c->stream),
              "hipStreamSynchronize (error from earlier async work)");
    return WK_OK;
}

static wk_status hip_query(void *ctx, bool *idle)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    hipError_t r = hip.StreamQuery(c->stream);
    *idle = r == hipSuccess;
    if (r != hipSuccess && r != hipErrorNotReady)
        return hip_fail(r, "hipStreamQuery (error from earlier async work)");
    return WK_OK;
}

static wk_status hip_module_load(void *ctx, void **module, const void *image)
{
    HIP_CURRENT(ctx);
    hipModule_t m = NULL;
    hipError_t r = hip.ModuleLoadData(&m, image);
    if (r == hipErrorNoBinaryForGpu || r == hipErrorInvalidImage ||
        r == hipErrorInvalidKernelFile || r == hipErrorSharedObjectInitFailed)
        return wk_err(WK_ERR_NOT_SUPPORTED, "rocm: hipModuleLoadData: %s", hip_name(r));
    HIP_CHECK(r, "hipModuleLoadData");
    *module = m;
    return WK_OK;
}

static void hip_module_unload(void *ctx, void *module)
{
    if (hip_current(ctx) == WK_OK)
        (void)hip.ModuleUnload(module);
}

static wk_status hip_function(void *ctx, void **fn, void *module, const char *name)
{
    HIP_CURRENT(ctx);
    hipFunction_t f = NULL;
    hipError_t r = hip.ModuleGetFunction(&f, module, name);
    if (r != hipSuccess)
        return wk_err(r == hipErrorNotFound ? WK_ERR_NOT_SUPPORTED : WK_ERR_DEVICE,
                      "rocm: hipModuleGetFunction(\"%.80s\"): %s", name, hip_name(r));
    *fn = f;
    return WK_OK;
}

static wk_status hip_launch(void *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                            unsigned shmem, void **args, unsigned flags)
{
    (void)flags; /* no early launches on HIP */
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    hipError_t r = hip.ModuleLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1],
                                          block[2], shmem, c->stream, args, NULL);
    if (r != hipSuccess)
        return wk_err(r == hipErrorOutOfMemory ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE,
                      "rocm: hipModuleLaunchKernel(grid %u,%u,%u block %u,%u,%u shmem %u): %s",
                      grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, hip_name(r));
    return WK_OK;
}

static wk_status hip_bind(void *ctx, void **stream)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    *stream = (void *)c->stream;
    return WK_OK;
}

static bool hip_graph_ok(void) { return hip.GraphLaunch != NULL; }

static wk_status hip_capture_begin(void *ctx)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    HIP_CHECK(hip.StreamBeginCapture(c->stream, hipStreamCaptureModeRelaxed), "hipStreamBeginCapture");
    return WK_OK;
}

static wk_status hip_capture_end(void *ctx, void **exec)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    hipGraph_t gr = NULL;
    hipError_t r = hip.StreamEndCapture(c->stream, &gr);
    if (r != hipSuccess)
        return hip_fail(r, "hipStreamEndCapture");
    hipGraphExec_t e = NULL;
    r = hip.GraphInstantiate(&e, gr, NULL, NULL, 0);
    (void)hip.GraphDestroy(gr);
    if (r != hipSuccess)
        return hip_fail(r, "hipGraphInstantiate");
    *exec = (void *)e;
    return WK_OK;
}

static wk_status hip_graph_launch(void *ctx, void *exec)
{
    const hip_ctx *c = ctx;
    HIP_CURRENT(c);
    HIP_CHECK(hip.GraphLaunch((hipGraphExec_t)exec, c->stream), "hipGraphLaunch");
    return WK_OK;
}

static void hip_graph_destroy(void *ctx, void *exec)
{
    if (hip_current(ctx) == WK_OK)
        (void)hip.GraphExecDestroy((hipGraphExec_t)exec);
}

const wk_gpu_driver wk_gpu_hip_driver = {
    .name = "rocm", .kind = WK_BACKEND_ROCM, .init = hip_init, .props = hip_props,
    .ctx_create = hip_ctx_create, .ctx_destroy = hip_ctx_destroy, .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free, .mem_info = hip_mem_info, .h2d = hip_h2d, .d2h = hip_d2h,
    .d2d = hip_d2d, .memset_zero = hip_memset_zero, .sync = hip_sync,
    .module_load = hip_module_load, .module_unload = hip_module_unload, .function = hip_function,
    .launch = hip_launch, .bind = hip_bind, .graph_ok = hip_graph_ok,
    .capture_begin = hip_capture_begin, .capture_end = hip_capture_end,
    .graph_launch = hip_graph_launch, .graph_destroy = hip_graph_destroy, .query = hip_query,
};

#else /* !WK_HAVE_HIP_H */

static int hip_init(const char **reason)
{
    *reason = "built without HIP headers (hip/hip_runtime_api.h not found at build time)";
    return 0;
}

/* Only init is ever called: the backend opens no device when init reports none. */
const wk_gpu_driver wk_gpu_hip_driver = {.name = "rocm", .kind = WK_BACKEND_ROCM, .init = hip_init};

#endif
