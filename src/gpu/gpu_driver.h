/* gpu_driver.h: the runtime half of the GPU backend, internal to src/gpu and its tests.
 *   - wk_gpu_driver: one small interface over the CUDA driver API (cuda.c) and the HIP runtime
 *     API (hip.c); both libraries are opened with dlopen at first use;
 *   - wk_gpu_device: what a GPU wk_device holds (dev->impl);
 *   - the caching allocator (gpu_alloc.c), the module cache (gpu_module.c) and run-time
 *     compilation (gpu_rtc.c);
 *   - the code objects and kernel sources embedded by cmake/gpu.cmake (generated table).
 * The op half (gpu_<family>.c) only needs gpu_impl.h. */
#ifndef WK_GPU_DRIVER_H
#define WK_GPU_DRIVER_H

#include "gpu_impl.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The two GPU backends (one implementation in gpu_backend.c, parametrised by the driver). */
extern const wk_backend wk_cuda_backend;
extern const wk_backend wk_rocm_backend;
extern const wk_backend wk_simt_backend; /* the same over src/simt/simt.c */

/* ---------------------------------------------------------------- device facts */
typedef struct wk_gpu_props {
    char name[96];       /* "NVIDIA H100 80GB HBM3", "AMD Instinct MI250X" */
    char arch[32];       /* "sm_90", "gfx90a" (no target features) */
    char arch_full[64];  /* as the vendor names it: "sm_90", "gfx90a:sramecc+:xnack-" (for RTC) */
    size_t total_mem;    /* bytes */
    int warp_size;       /* 32 or 64 */
    int sm_count;        /* multiprocessors / compute units */
    int smem_block;      /* bytes of dynamic shared memory one block may have (opted in) */
    int64_t timer_khz;   /* ticks per millisecond of kernels/gpu.h wk_timer; 0: unknown */
} wk_gpu_props;

/* ---------------------------------------------------------------- driver interface */
/* Every call that takes a ctx first makes the device current in the calling thread (CUDA:
 * cuCtxSetCurrent of the primary context; HIP: hipSetDevice), so any thread may call.
 * Failures set the thread's message through wk_err with the vendor's error name. */
typedef struct wk_gpu_driver {
    const char *name;     /* "cuda", "rocm" */
    wk_backend_kind kind;
    /* Loads the library and initialises it, once per process (thread-safe). Returns the number
     * of devices; when 0, *reason (static) says why. */
    int (*init)(const char **reason);
    wk_status (*props)(wk_gpu_props *p, int ordinal);
    /* A context for the device (primary context on CUDA) and one non-blocking stream. */
    wk_status (*ctx_create)(void **ctx, int ordinal);
    void (*ctx_destroy)(void *ctx);
    /* WK_ERR_OUT_OF_MEMORY when the device is out of memory (the device stays usable). */
    wk_status (*mem_alloc)(void *ctx, void **ptr, size_t bytes);
    void (*mem_free)(void *ctx, void *ptr);
    wk_status (*mem_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
    /* Asynchronous on the device's stream. */
    wk_status (*h2d)(void *ctx, void *dst, const void *src, size_t bytes);
    wk_status (*d2h)(void *ctx, void *dst, const void *src, size_t bytes);
    wk_status (*d2d)(void *ctx, void *dst, const void *src, size_t bytes);
    wk_status (*memset_zero)(void *ctx, void *dst, size_t bytes);
    /* Waits for the stream; reports any error of earlier asynchronous work. */
    wk_status (*sync)(void *ctx);
    /* Loads a code object (fatbin, cubin, PTX, HSACO or offload bundle). WK_ERR_NOT_SUPPORTED
     * when nothing in it fits the device (CUDA_ERROR_NO_BINARY_FOR_GPU and the like): the
     * caller falls back to run-time compilation. */
    wk_status (*module_load)(void *ctx, void **module, const void *image);
    void (*module_unload)(void *ctx, void *module);
    wk_status (*function)(void *ctx, void **fn, void *module, const char *name);
    /* flags: WK_LAUNCH_EARLY (gpu_impl.h) where the kernel may start before the stream's
     * previous kernel ends (it waits for it itself: gpu.h's WK_GRID_WAIT); a driver without
     * such launches ignores it. */
    wk_status (*launch)(void *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                        unsigned shmem, void **args, unsigned flags);
    /* Makes the device current in the calling thread; *stream: the native stream. */
    wk_status (*bind)(void *ctx, void **stream);
    /* Graphs (gpu_graph.c). graph_ok: the library has the graph entry points (else the others
     * are never called). capture_begin: the stream's work is recorded, not run (relaxed mode:
     * allocations stay possible), until capture_end, which always ends the capture and returns
     * an executable graph in *exec, or fails. graph_launch: one replay on the stream. */
    bool (*graph_ok)(void);
    wk_status (*capture_begin)(void *ctx);
    wk_status (*capture_end)(void *ctx, void **exec);
    wk_status (*graph_launch)(void *ctx, void *exec);
    void (*graph_destroy)(void *ctx, void *exec);
    /* Optional (NULL where the driver lacks them; src/comm copes):
     * query: *idle = the stream has finished its work (an error of that work is returned);
     * peer_copy: bytes from src (device of src_ctx) to dst (device of dst_ctx), two devices of
     * this driver, after the work queued on src's stream; returns when the copy is done. */
    wk_status (*query)(void *ctx, bool *idle);
    wk_status (*peer_copy)(void *dst_ctx, void *dst, void *src_ctx, const void *src, size_t bytes);
    /* peer_access: lets kernels on ctx's device read and write memory allocated on peer_ctx's
     * (CUDA: cuCtxEnablePeerAccess); WK_ERR_NOT_SUPPORTED where the two devices cannot. */
    wk_status (*peer_access)(void *ctx, void *peer_ctx);
} wk_gpu_driver;

extern const wk_gpu_driver wk_gpu_cuda_driver; /* cuda.c */
extern const wk_gpu_driver wk_gpu_hip_driver;  /* hip.c */
extern const wk_gpu_driver wk_gpu_simt_driver; /* src/simt/simt.c: kernels run on the CPU */

/* ---------------------------------------------------------------- device state */
struct wk_gpu_alloc;   /* gpu_alloc.c */
struct wk_gpu_modules; /* gpu_module.c */

typedef struct wk_gpu_device {
    const wk_gpu_driver *drv;
    void *ctx;
    int ordinal;
    wk_gpu_props props;
    bool force_rtc; /* WICK_FORCE_RTC=1 at open: compile every module from source */
    bool no_cache;  /* WICK_GPU_NO_CACHE=1 at open: every free is a real free */
    struct wk_gpu_alloc *alloc;
    struct wk_gpu_modules *modules;
    void *error_word; /* device uint32[2] kernels set on bad input; NULL until first asked for */
    void *counters;   /* device uint32[WK_GPU_COUNTERS], zero between kernels (wk_gpu_counters) */
    void *blas;       /* vendor BLAS state (gpu_blas.c); NULL until first used */
    pthread_mutex_t blas_mu;
    pthread_mutex_t error_mu;
    const void *capture; /* the graph being captured on this device (gpu_graph.c), or NULL */
    /* [act_lo, act_hi): the bytes the last early-launched kernel that writes int8 activations
     * (qmvq, the norm and binary_act kernels: they let their dependents start before they end)
     * wrote: a matvec whose weights overlap them is not launched early (its reads of W before
     * its grid wait would race with those writes; gpu_ops.c wk_gpu_act_written) */
    _Atomic uintptr_t act_lo, act_hi;
} wk_gpu_device;


static inline wk_gpu_device *wk_gpu_dev(const wk_device *dev) { return (wk_gpu_device *)dev->impl; }


/* Frees the vendor BLAS state of g (gpu_blas.c), if any. */
void wk_gpu_blas_close(wk_gpu_device *g);

/* ---------------------------------------------------------------- caching allocator */
/* Per device. Freed blocks go to size-bucketed free lists and are reused for later requests of
 * a similar size: with one stream per device, stream order makes that safe. On out-of-memory
 * the cache is released and the allocation retried once. */
wk_status wk_gpu_alloc_create(wk_gpu_device *g);
void wk_gpu_alloc_destroy(wk_gpu_device *g); /* frees every block, cached or live */
wk_status wk_gpu_mem_alloc(wk_gpu_device *g, size_t bytes, void **ptr);
void wk_gpu_mem_free(wk_gpu_device *g, void *ptr);
/* Returns every cached block to the driver. */
void wk_gpu_mem_release_cache(wk_gpu_device *g);
/* Graph capture: owner non-NULL pins every block handed out, and parks every block freed, until
 * wk_gpu_alloc_release(owner) (after the graph's last replay has finished); NULL ends pinning. */
void wk_gpu_alloc_capture(wk_gpu_device *g, const void *owner);
void wk_gpu_alloc_release(wk_gpu_device *g, const void *owner);
/* Counters, for tests and `wick devices`. */
typedef struct wk_gpu_mem_stats {
    size_t live_bytes, cached_bytes;
    size_t driver_allocs, cache_hits, oom_retries;
} wk_gpu_mem_stats;
void wk_gpu_mem_stats_get(wk_gpu_device *g, wk_gpu_mem_stats *out);

/* ---------------------------------------------------------------- module cache */
wk_status wk_gpu_modules_create(wk_gpu_device *g);
void wk_gpu_modules_destroy(wk_gpu_device *g);
/* How the modules of a device were loaded so far (for tests). */
void wk_gpu_modules_counts(wk_gpu_device *g, int *embedded, int *compiled);
/* Loads module `module` (kernels/<module>.cu) on dev if it is not loaded yet (bench/gpu_rtc_bench.c
 * times each module's first use with it). */
wk_status wk_gpu_module_load_named(wk_device *dev, const char *module);
/* Loads every module on g now (wk_device_warmup): those no embedded code object fits are
 * compiled (or read from the kernel cache) on up to `threads` threads at once (<= 0: one per
 * CPU), then loaded. Returns the first failure, after trying every module. */
wk_status wk_gpu_modules_warmup(wk_gpu_device *g, int threads);
/* Where g's kernels come from (wk_code_source of wick.h): predicted from the embedded code
 * objects' targets until a module has loaded, then what happened. */
wk_code_source wk_gpu_code_source(wk_gpu_device *g);

/* ---------------------------------------------------------------- run-time compilation */
/* image (wk_malloc'd, *size bytes): the source `src` of module `name` compiled for `arch`
 * ("sm_86" on CUDA through NVRTC; "gfx90a:xnack-" on ROCm through hipRTC), with every embedded
 * header supplied by name. No device or driver needed. */
wk_status wk_gpu_rtc_compile(void **image, size_t *size, wk_backend_kind kind, const char *arch,
                             const char *name, const char *src);
/* Whether the run-time compiler's front end accepts the source (NVRTC -fdevice-syntax-only,
 * hipRTC -fsyntax-only; nothing compiled): for tests, where the build's nvcc and clang already
 * ran the optimisers and code generators on every module (NVRTC 10 times and hipRTC 20 times
 * faster per module than with the optimiser off, and a hundred times faster than with it on). */
wk_status wk_gpu_rtc_check(wk_backend_kind kind, const char *arch, const char *name,
                           const char *src);

/* One compile, in two steps behind a small interface: prepare sets the options and names the
 * compiler (loading it if needed: WK_ERR_NOT_SUPPORTED with "unavailable" when it is missing),
 * compile runs it. The vendors' compilers are wk_gpu_rtc_vendor (gpu_rtc.c); tests put a fake
 * one in their place (wk_gpu_rtc_set_compiler) to count compiles. */
typedef struct wk_gpu_rtc_job {
    wk_backend_kind kind;
    const char *arch;   /* the device's, as the vendor names it (props.arch_full) */
    const char *module; /* the module name (kernels/<module>.cu) */
    const char *source; /* its kernel source, NUL-terminated */
    bool optimise;      /* false: wk_gpu_rtc_check's options (front end only) */
    /* set by prepare (opts may point into arch_opt: the job is not copied after prepare) */
    const char *opts[8];
    int nopt;
    bool ptx;           /* the output is PTX text (NVRTC for an arch newer than it knows) */
    char arch_opt[96];
    char compiler[200]; /* the compiler's identity: name, version, library file */
} wk_gpu_rtc_job;
typedef struct wk_gpu_rtc_compiler {
    const char *name;
    wk_status (*prepare)(wk_gpu_rtc_job *job);
    /* image: wk_malloc'd, *size bytes plus a NUL byte after them */
    wk_status (*compile)(const wk_gpu_rtc_job *job, void **image, size_t *size);
} wk_gpu_rtc_compiler;
extern const wk_gpu_rtc_compiler wk_gpu_rtc_vendor; /* NVRTC on CUDA, hipRTC on ROCm */

/* ---------------------------------------------------------------- run-time compiled kernel cache */
/* gpu_rtc_cache.c. wk_gpu_rtc_build compiles module `name` for `arch` as wk_gpu_rtc_compile does,
 * through a cache on disk: an entry made by an earlier process (same source and headers, options,
 * arch and compiler) is loaded instead of compiling, and a compiled image is stored for the next
 * process. *from_cache (may be NULL): 1 if the image came from disk. Directory, size limit and
 * switches: docs/architecture.md "The kernel cache" (WICK_CACHE_DIR, WICK_CACHE_DISABLE,
 * WICK_CACHE_MAXSIZE, read once per process). Never fails because of the cache: a missing,
 * unreadable or corrupt entry is compiled (a corrupt one deleted), an unwritable directory only
 * leaves a note (wk_kernel_cache_info). */
wk_status wk_gpu_rtc_build(void **image, size_t *size, wk_backend_kind kind, const char *arch,
                           const char *name, const char *src, int *from_cache);
/* Tests: the compiler wk_gpu_rtc_build uses (NULL: wk_gpu_rtc_vendor); returns the previous one. */
const wk_gpu_rtc_compiler *wk_gpu_rtc_set_compiler(const wk_gpu_rtc_compiler *c);
/* Tests: forget the directory and switches read from the environment (read again at next use),
 * and zero the counters. */
void wk_gpu_rtc_cache_reset(void);
typedef struct wk_gpu_rtc_cache_stats {
    long hits, misses, stores, discarded, evicted, store_failures;
} wk_gpu_rtc_cache_stats;
void wk_gpu_rtc_cache_stats_get(wk_gpu_rtc_cache_stats *out);
/* The entry file name of a job (prepared), without the directory: "<module>-<arch>-<key>.wkrtc". */
void wk_gpu_rtc_cache_name(char *out, size_t cap, const wk_gpu_rtc_job *job);

/* ---------------------------------------------------------------- embedded code objects */
/* Generated by cmake/gpu.cmake (gen/wk_gpu_embed_table.c): one entry per kernels/<name>.cu.
 * A code object is absent (NULL) when its compiler was not found at build time. */
typedef struct wk_gpu_embedded {
    const char *name;                             /* module name: the file stem */
    const unsigned char *cuda, *cuda_end;         /* NVIDIA fatbin */
    const unsigned char *hip, *hip_end;           /* clang offload bundle of HSACO */
    const char *source;                           /* kernels/<name>.cu, NUL-terminated */
    int cuda_packed;                              /* cuda..cuda_end is a zstd frame of the fatbin */
    int hip_packed;                               /* hip..hip_end is a zstd frame of the bundle */
} wk_gpu_embedded;
typedef struct wk_gpu_embedded_header {
    const char *name; /* as included: "gpu.h", "fpconv.h" */
    const char *text; /* NUL-terminated */
} wk_gpu_embedded_header;
extern const wk_gpu_embedded wk_gpu_embedded_modules[];
extern const int wk_gpu_embedded_module_count;
extern const wk_gpu_embedded_header wk_gpu_embedded_headers[];
extern const int wk_gpu_embedded_header_count;
/* What the embedded code objects hold (cmake/gpu.cmake): the SASS archs of the fatbins ("80,86,
 * 89,90"; "" without nvcc), the compute capability of their PTX (0: none), and the gfx targets of
 * the AMD bundles ("gfx900,...,gfx1201"; "" without an AMD toolchain). */
extern const char wk_gpu_embedded_cuda_sass[];
extern const int wk_gpu_embedded_cuda_ptx;
extern const char wk_gpu_embedded_hip_targets[];
/* The code object of module mi for the driver of `kind`, as its module_load takes it: the
 * embedded bytes, or (AMD bundles are embedded zstd-compressed) the bundle inflated once per
 * process and kept until wk_gpu_embedded_release (gpu_blob.c). NULL/0 when none was built. */
wk_status wk_gpu_embedded_image(const void **image, size_t *size, wk_backend_kind kind, int mi);
void wk_gpu_embedded_release(void); /* when the last GPU device closes */

#endif
