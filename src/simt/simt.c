/* simt.c: the simt driver (gpu_driver.h): the GPU backend's kernels run on the CPU.
 *
 * Devices: simt:0 has warps of 32 lanes (NVIDIA, AMD RDNA), simt:1 of 64 (AMD CDNA/GCN);
 * WICK_SIMT_WARP=32|64 at open sets simt:0's width instead (so `WICK_SIMT_WARP=64 wick check
 * --device simt:0` runs the 64-lane device under the usual name). WICK_SIMT_SEED (an integer)
 * seeds the shuffled lane order; the default is fixed, so runs reproduce.
 * Memory is host memory (simt_mem.c); modules are the kernels/<name>.cu files compiled as C++ by
 * cmake/simt.cmake, looked up by module name (gpu_module.c passes it as the "image") and kernel
 * name; a launch runs the whole grid before it returns (simt_sched.c), so the stream is always
 * idle. Launches are serialised process-wide (the lanes, the running state and the shared-memory
 * statics are one per process).
 * A kernel fault is modelled on CUDA's (docs/semantics.md, "Faults"): a launch that touched
 * memory outside every allocation loses the context of its device (ordinal), shared by every
 * handle of it like a CUDA primary context: every later call on any of them fails with the
 * fault's message, and a new context (a wk_device_open once every handle of it is closed)
 * starts clean. Other hazards fail their launch only. */
#include "gpu/gpu_driver.h"
#include "simt_rt.h"
#include "wk_core.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIMT_DEVICES 2
#define SIMT_SMS 4 /* "multiprocessors": grids capped by the GPU layer stay small */

typedef struct simt_ctx {
    int ordinal, warp;
    uint64_t seed, launches;
} simt_ctx;

static pthread_mutex_t launch_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- the per-device context state that a fault poisons (guarded by slot_mu) */
typedef struct simt_slot {
    int open;       /* contexts (device handles) alive */
    bool lost;      /* a kernel fault happened in one of them */
    char why[512];  /* its hazard message */
} simt_slot;
static simt_slot slots[SIMT_DEVICES];
static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;

/* WK_ERR_DEVICE with the fault's message if the context of c's device is lost, else WK_OK. */
static wk_status lost(const simt_ctx *c, const char *what)
{
    pthread_mutex_lock(&slot_mu);
    const simt_slot *sl = &slots[c->ordinal];
    wk_status st = WK_OK;
    if (sl->lost)
        st = wk_err(WK_ERR_DEVICE, "simt:%d: %s: the device's context was lost to an earlier kernel "
                    "fault (%s); every call on simt:%d fails until all its storages are freed and "
                    "handles closed, then wk_device_open gives a new context", c->ordinal, what,
                    sl->why, c->ordinal);
    pthread_mutex_unlock(&slot_mu);
    return st;
}
#define LOST(c, what)                          \
    do {                                       \
        wk_status s_ = lost((c), (what));      \
        if (s_ != WK_OK)                       \
            return s_;                         \
    } while (0)

static int simt_init(const char **reason)
{
    if (wk_simt_module_count <= 0) {
        *reason = "built without simt kernels (no C++ compiler at build time, or WICK_SIMT=OFF)";
        return 0;
    }
    *reason = "";
    return SIMT_DEVICES;
}

static int simt_warp(int ordinal)
{
    const char *v = getenv("WICK_SIMT_WARP");
    if (ordinal == 0 && v && (strcmp(v, "32") == 0 || strcmp(v, "64") == 0))
        return atoi(v);
    return ordinal == 0 ? 32 : 64;
}

static wk_status simt_props(wk_gpu_props *p, int ordinal)
{
    memset(p, 0, sizeof *p);
    p->warp_size = simt_warp(ordinal);
    snprintf(p->name, sizeof p->name, "wick simt (CPU, warp %d)", p->warp_size);
    snprintf(p->arch, sizeof p->arch, "simt%d", p->warp_size);
    snprintf(p->arch_full, sizeof p->arch_full, "%s", p->arch);
    p->total_mem = wk_simt_mem_total();
    p->sm_count = SIMT_SMS;
    p->smem_block = WK_SIMT_DYN_SHARED;
    p->timer_khz = 1000000; /* wk_simt_timer_ns */
    return WK_OK;
}

static wk_status simt_ctx_create(void **out, int ordinal)
{
    pthread_mutex_lock(&slot_mu);
    simt_slot *sl = &slots[ordinal];
    if (sl->lost && sl->open > 0) {
        const int n = sl->open;
        pthread_mutex_unlock(&slot_mu);
        return wk_err(WK_ERR_DEVICE, "simt:%d: the device's context was lost to a kernel fault (%s) "
                      "and %d handle(s) of it are still open: free their storages and close them, "
                      "then open it again", ordinal, sl->why, n);
    }
    sl->lost = false; /* no handle left: a new context */
    sl->open++;
    pthread_mutex_unlock(&slot_mu);
    simt_ctx *c = wk_calloc(1, sizeof *c);
    if (!c) {
        pthread_mutex_lock(&slot_mu);
        sl->open--;
        pthread_mutex_unlock(&slot_mu);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "simt: out of host memory");
    }
    c->ordinal = ordinal;
    c->warp = simt_warp(ordinal);
    const char *s = getenv("WICK_SIMT_SEED");
    c->seed = s && *s ? strtoull(s, NULL, 0) : 0x5eedc0de5eedc0deull;
    *out = c;
    return WK_OK;
}

static void simt_ctx_destroy(void *ctx)
{
    simt_ctx *c = ctx;
    if (!c)
        return;
    pthread_mutex_lock(&slot_mu);
    slots[c->ordinal].open--;
    pthread_mutex_unlock(&slot_mu);
    wk_free(c);
}

static wk_status simt_mem_alloc(void *ctx, void **ptr, size_t bytes)
{
    LOST(ctx, "allocation");
    return wk_simt_mem_alloc(ptr, bytes ? bytes : 1);
}

static void simt_mem_free(void *ctx, void *ptr)
{
    (void)ctx;
    wk_simt_mem_free(ptr);
}

static wk_status simt_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes)
{
    LOST(ctx, "memory info");
    const size_t used = wk_simt_mem_used(), total = wk_simt_mem_total();
    *total_bytes = total;
    *free_bytes = used < total ? total - used : 0;
    return WK_OK;
}

static wk_status simt_h2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    LOST(ctx, "host-to-device copy");
    wk_status st = wk_simt_mem_check(dst, bytes, "host-to-device copy");
    if (st == WK_OK)
        memcpy(dst, src, bytes);
    return st;
}

static wk_status simt_d2h(void *ctx, void *dst, const void *src, size_t bytes)
{
    LOST(ctx, "device-to-host copy");
    wk_status st = wk_simt_mem_check(src, bytes, "device-to-host copy");
    if (st == WK_OK)
        memcpy(dst, src, bytes);
    return st;
}

static wk_status simt_d2d(void *ctx, void *dst, const void *src, size_t bytes)
{
    LOST(ctx, "device-to-device copy");
    wk_status st = wk_simt_mem_check(src, bytes, "device-to-device copy (source)");
    if (st == WK_OK)
        st = wk_simt_mem_check(dst, bytes, "device-to-device copy (destination)");
    if (st == WK_OK)
        memmove(dst, src, bytes);
    return st;
}

static wk_status simt_memset_zero(void *ctx, void *dst, size_t bytes)
{
    LOST(ctx, "memset");
    wk_status st = wk_simt_mem_check(dst, bytes, "memset");
    if (st == WK_OK)
        memset(dst, 0, bytes);
    return st;
}

static wk_status simt_sync(void *ctx)
{
    LOST(ctx, "synchronize");
    return WK_OK;
}

/* image: the module's name (see gpu_module.c). */
static wk_status simt_module_load(void *ctx, void **module, const void *image)
{
    LOST(ctx, "module load");
    for (int i = 0; i < wk_simt_module_count; i++)
        if (strcmp(wk_simt_modules[i].name, (const char *)image) == 0) {
            *module = (void *)&wk_simt_modules[i];
            return WK_OK;
        }
    return wk_err(WK_ERR_NOT_SUPPORTED, "simt: no module \"%.64s\"", (const char *)image);
}

static void simt_module_unload(void *ctx, void *module)
{
    (void)ctx;
    (void)module;
}

static wk_status simt_function(void *ctx, void **fn, void *module, const char *name)
{
    LOST(ctx, "function lookup");
    const wk_simt_module *m = module;
    for (const wk_simt_kernel *k = m->kernels; k->name; k++) /* ends with {NULL, NULL} */
        if (strcmp(k->name, name) == 0) {
            *fn = (void *)k;
            return WK_OK;
        }
    return wk_err(WK_ERR_NOT_SUPPORTED, "simt: no kernel \"%.80s\" in module %s", name, m->name);
}

static wk_status simt_launch(void *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                             unsigned shmem, void **args, unsigned flags)
{
    (void)flags; /* kernels run one after another here */
    simt_ctx *c = ctx;
    LOST(c, "launch");
    pthread_mutex_lock(&launch_mu);
    const uint64_t seed = c->seed + 0x9e3779b97f4a7c15ull * ++c->launches;
    wk_status st = wk_simt_launch(fn, grid, block, shmem, args, c->warp, seed);
    const bool fault = st == WK_ERR_DEVICE && wk_simt_mem_fault;
    pthread_mutex_unlock(&launch_mu);
    if (fault) {
        pthread_mutex_lock(&slot_mu);
        simt_slot *sl = &slots[c->ordinal];
        if (!sl->lost)
            snprintf(sl->why, sizeof sl->why, "%s", wk_last_error());
        sl->lost = true;
        pthread_mutex_unlock(&slot_mu);
        st = wk_err(WK_ERR_DEVICE, "%s; the context of simt:%d is lost: every later call on it fails "
                    "(docs/semantics.md, \"Faults\")", sl->why, c->ordinal);
    }
    return st;
}

static wk_status simt_bind(void *ctx, void **stream)
{
    LOST(ctx, "bind");
    *stream = NULL;
    return WK_OK;
}

/* Every simt device's memory is host memory: any kernel reads any device's. */
static wk_status simt_peer_access(void *ctx, void *peer_ctx)
{
    (void)ctx, (void)peer_ctx;
    return WK_OK;
}

const wk_gpu_driver wk_gpu_simt_driver = {
    .name = "simt", .kind = WK_BACKEND_SIMT, .init = simt_init, .props = simt_props,
    .ctx_create = simt_ctx_create, .ctx_destroy = simt_ctx_destroy,
    .mem_alloc = simt_mem_alloc, .mem_free = simt_mem_free, .mem_info = simt_mem_info,
    .h2d = simt_h2d, .d2h = simt_d2h, .d2d = simt_d2d, .memset_zero = simt_memset_zero,
    .sync = simt_sync, .module_load = simt_module_load, .module_unload = simt_module_unload,
    .function = simt_function, .launch = simt_launch, .bind = simt_bind,
    .peer_access = simt_peer_access,
};
