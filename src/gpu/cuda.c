/* cuda.c: the GPU driver interface (gpu_driver.h) over the CUDA driver API.
 * libcuda.so.1 is opened with dlopen at first use and every entry point looked up with dlsym
 * (under its versioned name: cuMemAlloc_v2 ...), so libwick has no load-time dependency on it.
 * Each device uses its primary context (shared with the CUDA runtime and other libraries in the
 * process) and one non-blocking stream. Built with WK_HAVE_CUDA_H (set by cmake/gpu.cmake when
 * cuda.h is found); without it the backend reports "built without CUDA headers". */
#include "gpu_driver.h"
#include "wk_core.h"

#if defined(WK_HAVE_CUDA_H)
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry points used, under our own names (cuda.h #defines the plain names to the _v2 ones). */
typedef struct cu_api {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*StreamQuery)(CUstream);
    /* launches with more than 48 KiB of dynamic shared memory: optional (CUDA 9+) */
    CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    /* peer copies: optional */
    CUresult (*MemcpyPeerAsync)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
    CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
    CUresult (*CtxEnablePeerAccess)(CUcontext, unsigned);
    /* graphs: optional (all NULL when any is missing) */
    CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
    CUresult (*StreamEndCapture)(CUstream, CUgraph *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
#if CUDA_VERSION >= 12000
    /* early (programmatic dependent) launches: optional */
    CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
#endif
    CUresult (*FuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
    /* a new context after a kernel fault (cu_ctx_create): optional */
    CUresult (*PrimaryCtxReset)(CUdevice);
} cu_api;
static cu_api cu;

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static int cu_count;
static char cu_reason[320];

typedef struct cu_ctx {
    int ordinal;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    bool early; /* early launches possible: compute capability 9.0+, cuLaunchKernelEx, not off */
} cu_ctx;

static const char *cu_name(CUresult r)
{
    const char *s = NULL;
    if (cu.GetErrorName && cu.GetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "CUDA error %d", (int)r);
    return buf;
}

/* The errors after which NVIDIA documents the context as unusable ("any further CUDA work will
 * return the same error"): a kernel fault, an assert, a watchdog timeout. */
static bool cu_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_LAUNCH_TIMEOUT: case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR: case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS: case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC: case CUDA_ERROR_LAUNCH_FAILED:
        return true;
    default:
        return false;
    }
}

/* CUresult -> wk_status with "what: CUDA_ERROR_..." as the message (and, for a sticky error,
 * what it means and what to do). */
static wk_status cu_fail(CUresult r, const char *what)
{
    if (cu_sticky(r))
        return wk_err(WK_ERR_DEVICE, "cuda: %s: %s: the device's context is lost to a kernel fault "
                      "(CUDA fails every later call on it): free its storages and close its handles; "
                      "wk_device_open then tries a new context (docs/semantics.md, \"Faults\")",
                      what, cu_name(r));
    wk_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE;
    return wk_err(s, "cuda: %s: %s", what, cu_name(r));
}
#define CU_CHECK(call, what)                  \
    do {                                      \
        CUresult r_ = (call);                 \
        if (r_ != CUDA_SUCCESS)               \
            return cu_fail(r_, what);         \
    } while (0)

static int cu_load(void *lib)
{
    static const struct { size_t off; const char *sym; } syms[] = {
#define S(field, sym) {offsetof(cu_api, field), sym}
        S(Init, "cuInit"), S(DeviceGetCount, "cuDeviceGetCount"), S(DeviceGet, "cuDeviceGet"),
        S(DeviceGetName, "cuDeviceGetName"), S(DeviceGetAttribute, "cuDeviceGetAttribute"),
        S(DeviceTotalMem, "cuDeviceTotalMem_v2"), S(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
        S(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"), S(CtxSetCurrent, "cuCtxSetCurrent"),
        S(StreamCreate, "cuStreamCreate"), S(StreamDestroy, "cuStreamDestroy_v2"),
        S(StreamSynchronize, "cuStreamSynchronize"), S(MemAlloc, "cuMemAlloc_v2"),
        S(MemFree, "cuMemFree_v2"), S(MemGetInfo, "cuMemGetInfo_v2"),
        S(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"), S(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
        S(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"), S(MemsetD8Async, "cuMemsetD8Async"),
        S(ModuleLoadData, "cuModuleLoadData"), S(ModuleUnload, "cuModuleUnload"),
        S(ModuleGetFunction, "cuModuleGetFunction"), S(LaunchKernel, "cuLaunchKernel"),
        S(GetErrorName, "cuGetErrorName"), S(StreamQuery, "cuStreamQuery"),
#undef S
    };
    _Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym needs code == data pointers");
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(lib, syms[i].sym);
        if (!p) {
            snprintf(cu_reason, sizeof cu_reason, "libcuda.so.1 lacks %s (driver too old?)",
                     syms[i].sym);
            return 0;
        }
        memcpy((char *)&cu + syms[i].off, &p, sizeof p);
    }
    /* peer copies: optional (cuMemcpyPeerAsync stages through the host itself where the two
     * devices cannot reach each other) */
    {
        void *p = dlsym(lib, "cuMemcpyPeerAsync");
        memcpy(&cu.MemcpyPeerAsync, &p, sizeof p);
        p = dlsym(lib, "cuDeviceCanAccessPeer");
        memcpy(&cu.DeviceCanAccessPeer, &p, sizeof p);
        p = dlsym(lib, "cuCtxEnablePeerAccess");
        memcpy(&cu.CtxEnablePeerAccess, &p, sizeof p);
        p = dlsym(lib, "cuFuncSetAttribute");
        memcpy(&cu.FuncSetAttribute, &p, sizeof p);
    }
    /* early launches (CUDA 12.0+) and the function attributes they are checked with: optional */
    {
        void *p;
#if CUDA_VERSION >= 12000
        p = dlsym(lib, "cuLaunchKernelEx");
        memcpy(&cu.LaunchKernelEx, &p, sizeof p);
#endif
        p = dlsym(lib, "cuFuncGetAttribute");
        memcpy(&cu.FuncGetAttribute, &p, sizeof p);
        p = dlsym(lib, "cuDevicePrimaryCtxReset_v2");
        memcpy(&cu.PrimaryCtxReset, &p, sizeof p);
    }
    /* the graph entry points (CUDA 11.4+): optional */
    static const struct {
        size_t off;
        const char *sym;
    } gsyms[] = {
#define S(field, sym) {offsetof(cu_api, field), sym}
        S(StreamBeginCapture, "cuStreamBeginCapture_v2"), S(StreamEndCapture, "cuStreamEndCapture"),
        S(GraphInstantiate, "cuGraphInstantiateWithFlags"), S(GraphLaunch, "cuGraphLaunch"),
        S(GraphExecDestroy, "cuGraphExecDestroy"), S(GraphDestroy, "cuGraphDestroy"),
#undef S
    };
    bool all = true;
    for (size_t i = 0; i < sizeof gsyms / sizeof gsyms[0]; i++)
        all = all && dlsym(lib, gsyms[i].sym) != NULL;
    for (size_t i = 0; all && i < sizeof gsyms / sizeof gsyms[0]; i++) {
        void *p = dlsym(lib, gsyms[i].sym);
        memcpy((char *)&cu + gsyms[i].off, &p, sizeof p);
    }
    return 1;
}

static void cu_init_once(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(cu_reason, sizeof cu_reason, "libcuda.so.1 not found (dlopen: %s)",
                 e ? e : "unknown error");
        return;
    }
    if (!cu_load(lib)) {
        memset(&cu, 0, sizeof cu);
        return; /* the library stays open: harmless, and dlclose of a driver is not */
    }
    CUresult r = cu.Init(0);
    if (r != CUDA_SUCCESS) {
        snprintf(cu_reason, sizeof cu_reason, "cuInit failed: %s", cu_name(r));
        return;
    }
    int n = 0;
    r = cu.DeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
        snprintf(cu_reason, sizeof cu_reason, "cuDeviceGetCount failed: %s", cu_name(r));
        return;
    }
    if (n <= 0) {
        snprintf(cu_reason, sizeof cu_reason, "no devices");
        return;
    }
    cu_count = n;
}

static int cu_init(const char **reason)
{
    pthread_once(&cu_once, cu_init_once);
    *reason = cu_count > 0 ? "" : cu_reason;
    return cu_count;
}

static wk_status cu_props(wk_gpu_props *p, int ordinal)
{
    CUdevice d;
    int major = 0, minor = 0;
    memset(p, 0, sizeof *p);
    CU_CHECK(cu.DeviceGet(&d, ordinal), "cuDeviceGet");
    CU_CHECK(cu.DeviceGetName(p->name, (int)sizeof p->name, d), "cuDeviceGetName");
    CU_CHECK(cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d),
             "cuDeviceGetAttribute");
    CU_CHECK(cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d),
             "cuDeviceGetAttribute");
    CU_CHECK(cu.DeviceGetAttribute(&p->warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d),
             "cuDeviceGetAttribute");
    CU_CHECK(cu.DeviceGetAttribute(&p->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d),
             "cuDeviceGetAttribute");
    CU_CHECK(cu.DeviceTotalMem(&p->total_mem, d), "cuDeviceTotalMem");
    /* what a kernel may opt into past the default 48 KiB (cu_launch); 48 KiB if unknown */
    if (cu.DeviceGetAttribute(&p->smem_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                              d) != CUDA_SUCCESS ||
        p->smem_block < 48 * 1024)
        p->smem_block = 48 * 1024;
    snprintf(p->arch, sizeof p->arch, "sm_%d%d", major, minor);
    snprintf(p->arch_full, sizeof p->arch_full, "%s", p->arch);
    p->timer_khz = 1000000; /* %globaltimer counts nanoseconds */
    return WK_OK;
}

static wk_status cu_current(const cu_ctx *c)
{
    CU_CHECK(cu.CtxSetCurrent(c->ctx), "cuCtxSetCurrent");
    return WK_OK;
}
#define CU_CURRENT(c)                         \
    do {                                      \
        wk_status s_ = cu_current(c);         \
        if (s_ != WK_OK)                      \
            return s_;                        \
    } while (0)

/* Contexts (wick device handles) alive per ordinal: a lost primary context is reset only when
 * none of wick's is left (cu_ctx_create). */
#define CU_MAX_ORDINALS 64
static pthread_mutex_t cu_open_mu = PTHREAD_MUTEX_INITIALIZER;
static int cu_open[CU_MAX_ORDINALS];

/* c->ctx retained and current, c->stream made and idle. On failure nothing is held. */
static CUresult cu_ctx_start(cu_ctx *c)
{
    CUresult r = cu.PrimaryCtxRetain(&c->ctx, c->dev);
    if (r != CUDA_SUCCESS)
        return r;
    r = cu.CtxSetCurrent(c->ctx);
    if (r == CUDA_SUCCESS)
        r = cu.StreamCreate(&c->stream, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS) {
        r = cu.StreamQuery(c->stream); /* a fresh stream: only a lost context makes this fail */
        if (r != CUDA_SUCCESS)
            cu.StreamDestroy(c->stream);
    }
    if (r != CUDA_SUCCESS)
        cu.PrimaryCtxRelease(c->dev);
    return r;
}

static wk_status cu_ctx_create(void **out, int ordinal)
{
    cu_ctx *c = wk_calloc(1, sizeof *c);
    if (!c)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "cuda: out of host memory");
    c->ordinal = ordinal;
    CUresult r = cu.DeviceGet(&c->dev, ordinal);
    if (r != CUDA_SUCCESS) {
        wk_free(c);
        return cu_fail(r, "cuDeviceGet");
    }
    const bool counted = ordinal >= 0 && ordinal < CU_MAX_ORDINALS;
    pthread_mutex_lock(&cu_open_mu);
    r = cu_ctx_start(c);
    if (cu_sticky(r)) {
        /* The primary context is lost to an earlier kernel fault. With no wick handle of the
         * device left, a reset gives a new one (its old allocations are gone with it); NVIDIA
         * documents a process restart as the way out, so this may still fail. */
        const int others = counted ? cu_open[ordinal] : -1;
        if (others != 0 || !cu.PrimaryCtxReset) {
            pthread_mutex_unlock(&cu_open_mu);
            wk_free(c);
            if (others > 0)
                return wk_err(WK_ERR_DEVICE, "cuda:%d: its context was lost to a kernel fault (%s) "
                              "and %d wick handle(s) of it are still open: free their storages "
                              "and close them, then open it again", ordinal, cu_name(r), others);
            return cu_fail(r, "opening the device");
        }
        const CUresult first = r;
        r = cu.PrimaryCtxReset(c->dev);
        if (r == CUDA_SUCCESS)
            r = cu_ctx_start(c);
        if (r != CUDA_SUCCESS) {
            pthread_mutex_unlock(&cu_open_mu);
            wk_free(c);
            return wk_err(WK_ERR_DEVICE, "cuda:%d: its context was lost to a kernel fault (%s) and "
                          "a reset did not recover it (%s): the process must restart, as NVIDIA "
                          "documents", ordinal, cu_name(first), cu_name(r));
        }
    }
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&cu_open_mu);
        wk_free(c);
        return cu_fail(r, "cuDevicePrimaryCtxRetain / cuStreamCreate");
    }
    if (counted)
        cu_open[ordinal]++;
    pthread_mutex_unlock(&cu_open_mu);
#if CUDA_VERSION >= 12000
    int major = 0;
    const char *off = getenv("WICK_EARLY_LAUNCH");
    c->early = cu.LaunchKernelEx && cu.FuncGetAttribute && !(off && strcmp(off, "0") == 0) &&
               cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     c->dev) == CUDA_SUCCESS &&
               major >= 9;
#endif
    *out = c;
    return WK_OK;
}

static void cu_ctx_destroy(void *ctx)
{
    cu_ctx *c = ctx;
    if (!c)
        return;
    if (cu.CtxSetCurrent(c->ctx) == CUDA_SUCCESS) {
        cu.StreamSynchronize(c->stream);
        cu.StreamDestroy(c->stream);
    }
    cu.PrimaryCtxRelease(c->dev);
    pthread_mutex_lock(&cu_open_mu);
    if (c->ordinal >= 0 && c->ordinal < CU_MAX_ORDINALS)
        cu_open[c->ordinal]--;
    pthread_mutex_unlock(&cu_open_mu);
    wk_free(c);
}

static wk_status cu_mem_alloc(void *ctx, void **ptr, size_t bytes)
{
    CU_CURRENT(ctx);
    CUdeviceptr p = 0;
    CUresult r = cu.MemAlloc(&p, bytes);
    if (cu_sticky(r))
        return cu_fail(r, "cuMemAlloc");
    if (r != CUDA_SUCCESS)
        return wk_err(r == CUDA_ERROR_OUT_OF_MEMORY ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE,
                      "cuda: cuMemAlloc(%zu bytes): %s", bytes, cu_name(r));
    *ptr = (void *)(uintptr_t)p;
    return WK_OK;
}

static void cu_mem_free(void *ctx, void *ptr)
{
    if (cu_current(ctx) == WK_OK)
        cu.MemFree((CUdeviceptr)(uintptr_t)ptr);
}

static wk_status cu_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes)
{
    CU_CURRENT(ctx);
    CU_CHECK(cu.MemGetInfo(free_bytes, total_bytes), "cuMemGetInfo");
    return WK_OK;
}

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

static wk_status cu_h2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CU_CHECK(cu.MemcpyHtoDAsync(dptr(dst), src, bytes, c->stream), "cuMemcpyHtoDAsync");
    return WK_OK;
}

static wk_status cu_d2h(void *ctx, void *dst, const void *src, size_t bytes)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CU_CHECK(cu.MemcpyDtoHAsync(dst, dptr(src), bytes, c->stream), "cuMemcpyDtoHAsync");
    return WK_OK;
}

static wk_status cu_d2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CU_CHECK(cu.MemcpyDtoDAsync(dptr(dst), dptr(src), bytes, c->stream), "cuMemcpyDtoDAsync");
    return WK_OK;
}

static wk_status cu_memset_zero(void *ctx, void *dst, size_t bytes)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CU_CHECK(cu.MemsetD8Async(dptr(dst), 0, bytes, c->stream), "cuMemsetD8Async");
    return WK_OK;
}

static wk_status cu_sync(void *ctx)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CU_CHECK(cu.StreamSynchronize(c->stream), "cuStreamSynchronize (error from earlier async work)");
    return WK_OK;
}

static wk_status cu_module_load(void *ctx, void **module, const void *image)
{
    CU_CURRENT(ctx);
    CUmodule m = NULL;
    CUresult r = cu.ModuleLoadData(&m, image);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
        r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
        return wk_err(WK_ERR_NOT_SUPPORTED, "cuda: cuModuleLoadData: %s", cu_name(r));
    CU_CHECK(r, "cuModuleLoadData");
    *module = m;
    return WK_OK;
}

static void cu_module_unload(void *ctx, void *module)
{
    if (cu_current(ctx) == WK_OK)
        cu.ModuleUnload(module);
}

static wk_status cu_function(void *ctx, void **fn, void *module, const char *name)
{
    CU_CURRENT(ctx);
    CUfunction f = NULL;
    CUresult r = cu.ModuleGetFunction(&f, module, name);
    if (cu_sticky(r))
        return cu_fail(r, "cuModuleGetFunction");
    if (r != CUDA_SUCCESS)
        return wk_err(r == CUDA_ERROR_NOT_FOUND ? WK_ERR_NOT_SUPPORTED : WK_ERR_DEVICE,
                      "cuda: cuModuleGetFunction(\"%.80s\"): %s", name, cu_name(r));
    *fn = f;
    return WK_OK;
}

static wk_status cu_launch(void *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                           unsigned shmem, void **args, unsigned flags)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    /* past the 48 KiB that every kernel may take, the kernel must opt in (sm_70+; the GEMM
     * of kernels/gemm.h takes up to 96 KiB); the attribute is cheap to set again */
    if (shmem > 48u * 1024u && cu.FuncSetAttribute) {
        CUresult a = cu.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         (int)shmem);
        if (a != CUDA_SUCCESS)
            return wk_err(WK_ERR_NOT_SUPPORTED,
                          "cuda: cuFuncSetAttribute(max dynamic shared memory %u): %s", shmem,
                          cu_name(a));
    }
    CUresult r;
#if CUDA_VERSION >= 12000
    /* An early launch needs the kernel's griddepcontrol.wait, which gpu.h emits where the code
     * is built for sm_90 or later: the function's binary version says what was loaded (a
     * newer GPU may run older code). */
    int bv = 0;
    if ((flags & 1u) && c->early &&
        cu.FuncGetAttribute(&bv, CU_FUNC_ATTRIBUTE_BINARY_VERSION, fn) == CUDA_SUCCESS &&
        bv >= 90) {
        CUlaunchAttribute at;
        memset(&at, 0, sizeof at);
        at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at.value.programmaticStreamSerializationAllowed = 1;
        const CUlaunchConfig cfg = {grid[0],  grid[1],  grid[2], block[0], block[1],
                                    block[2], shmem,    c->stream, &at,    1};
        r = cu.LaunchKernelEx(&cfg, fn, args, NULL);
    } else
#endif
        r = cu.LaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem,
                            c->stream, args, NULL);
    if (cu_sticky(r))
        return cu_fail(r, "cuLaunchKernel");
    if (r != CUDA_SUCCESS)
        return wk_err(r == CUDA_ERROR_OUT_OF_MEMORY ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE,
                      "cuda: cuLaunchKernel(grid %u,%u,%u block %u,%u,%u shmem %u): %s", grid[0],
                      grid[1], grid[2], block[0], block[1], block[2], shmem, cu_name(r));
    return WK_OK;
}

static wk_status cu_bind(void *ctx, void **stream)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    *stream = (void *)c->stream;
    return WK_OK;
}

static bool cu_graph_ok(void) { return cu.GraphLaunch != NULL; }

static wk_status cu_capture_begin(void *ctx)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CU_CHECK(cu.StreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
    return WK_OK;
}

static wk_status cu_capture_end(void *ctx, void **exec)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CUgraph gr = NULL;
    CUresult r = cu.StreamEndCapture(c->stream, &gr);
    if (r != CUDA_SUCCESS)
        return cu_fail(r, "cuStreamEndCapture");
    CUgraphExec e = NULL;
    r = cu.GraphInstantiate(&e, gr, 0);
    (void)cu.GraphDestroy(gr);
    if (r != CUDA_SUCCESS)
        return cu_fail(r, "cuGraphInstantiateWithFlags");
    *exec = e;
    return WK_OK;
}

static wk_status cu_graph_launch(void *ctx, void *exec)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CU_CHECK(cu.GraphLaunch((CUgraphExec)exec, c->stream), "cuGraphLaunch");
    return WK_OK;
}

static void cu_graph_destroy(void *ctx, void *exec)
{
    if (cu_current(ctx) == WK_OK)
        (void)cu.GraphExecDestroy((CUgraphExec)exec);
}

static wk_status cu_query(void *ctx, bool *idle)
{
    const cu_ctx *c = ctx;
    CU_CURRENT(c);
    CUresult r = cu.StreamQuery(c->stream);
    *idle = r == CUDA_SUCCESS;
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
        return cu_fail(r, "cuStreamQuery (error from earlier async work)");
    return WK_OK;
}

static wk_status cu_peer_copy(void *dst_ctx, void *dst, void *src_ctx, const void *src,
                              size_t bytes)
{
    const cu_ctx *d = dst_ctx, *s = src_ctx;
    if (!cu.MemcpyPeerAsync)
        return wk_err(WK_ERR_NOT_SUPPORTED, "cuda: the driver lacks cuMemcpyPeerAsync");
    CU_CURRENT(s);
    CU_CHECK(cu.StreamSynchronize(s->stream), "cuStreamSynchronize (source of a peer copy)");
    CU_CURRENT(d);
    int can = 0;
    if (cu.DeviceCanAccessPeer && cu.CtxEnablePeerAccess &&
        cu.DeviceCanAccessPeer(&can, d->dev, s->dev) == CUDA_SUCCESS && can) {
        CUresult r = cu.CtxEnablePeerAccess(s->ctx, 0); /* once per pair; later calls say so */
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
            return cu_fail(r, "cuCtxEnablePeerAccess");
    }
    CU_CHECK(cu.MemcpyPeerAsync(dptr(dst), d->ctx, dptr(src), s->ctx, bytes, d->stream),
             "cuMemcpyPeerAsync");
    CU_CHECK(cu.StreamSynchronize(d->stream), "cuStreamSynchronize (peer copy)");
    return WK_OK;
}

static wk_status cu_peer_access(void *ctx, void *peer_ctx)
{
    const cu_ctx *c = ctx, *p = peer_ctx;
    int can = 0;
    if (!cu.DeviceCanAccessPeer || !cu.CtxEnablePeerAccess)
        return wk_err(WK_ERR_NOT_SUPPORTED, "cuda: the driver lacks the peer access entry points");
    if (c->dev == p->dev)
        return WK_OK;
    CU_CHECK(cu.DeviceCanAccessPeer(&can, c->dev, p->dev), "cuDeviceCanAccessPeer");
    if (!can)
        return wk_err(WK_ERR_NOT_SUPPORTED, "cuda: device %d cannot access device %d's memory",
                      c->ordinal, p->ordinal);
    CU_CURRENT(c);
    CUresult r = cu.CtxEnablePeerAccess(p->ctx, 0); /* once per pair; later calls say so */
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        return cu_fail(r, "cuCtxEnablePeerAccess");
    return WK_OK;
}

const wk_gpu_driver wk_gpu_cuda_driver = {
    .name = "cuda", .kind = WK_BACKEND_CUDA, .init = cu_init, .props = cu_props,
    .ctx_create = cu_ctx_create, .ctx_destroy = cu_ctx_destroy, .mem_alloc = cu_mem_alloc,
    .mem_free = cu_mem_free, .mem_info = cu_mem_info, .h2d = cu_h2d, .d2h = cu_d2h, .d2d = cu_d2d,
    .memset_zero = cu_memset_zero, .sync = cu_sync, .module_load = cu_module_load,
    .module_unload = cu_module_unload, .function = cu_function, .launch = cu_launch,
    .bind = cu_bind, .graph_ok = cu_graph_ok, .capture_begin = cu_capture_begin,
    .capture_end = cu_capture_end, .graph_launch = cu_graph_launch,
    .graph_destroy = cu_graph_destroy, .query = cu_query, .peer_copy = cu_peer_copy,
    .peer_access = cu_peer_access,
};

#else /* !WK_HAVE_CUDA_H */

static int cu_init(const char **reason)
{
    *reason = "built without CUDA headers (cuda.h not found at build time)";
    return 0;
}

/* Only init is ever called: the backend opens no device when init reports none. */
const wk_gpu_driver wk_gpu_cuda_driver = {.name = "cuda", .kind = WK_BACKEND_CUDA, .init = cu_init};

#endif
