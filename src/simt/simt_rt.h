/* simt_rt.h: the simt runtime's interface, shared by the C runtime (simt_sched.c, simt_mem.c,
 * simt.c) and the kernels compiled as C++ (simt_kernel.h). Internal to src/simt and its tests. */
#ifndef WK_SIMT_RT_H
#define WK_SIMT_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_simt_uint3 {
    unsigned x, y, z;
} wk_simt_uint3;

/* One lane (a GPU thread) of the running block; tid first (threadIdx). */
typedef struct wk_simt_lane {
    wk_simt_uint3 tid;
} wk_simt_lane;

extern wk_simt_lane *wk_simt_self; /* the lane whose fiber runs now */
extern wk_simt_uint3 wk_simt_block_idx, wk_simt_block_dim, wk_simt_grid_dim;
extern int wk_simt_warp_size;

/* bytes of dynamic shared memory a launch may ask for: sm_90's 227 KiB */
#define WK_SIMT_DYN_SHARED 232448
extern unsigned char wk_simt_dyn_shared[WK_SIMT_DYN_SHARED];

void wk_simt_syncthreads(void);
uint64_t wk_simt_shfl_down(uint64_t v, int delta);
uint64_t wk_simt_shfl_xor(uint64_t v, int mask);
uint64_t wk_simt_shfl_idx(uint64_t v, int src); /* lane src (mod the warp size)'s value */
uint64_t wk_simt_ballot(int pred);

unsigned wk_simt_atomic_cas32(unsigned *p, unsigned cmp, unsigned val);
uint64_t wk_simt_atomic_cas64(uint64_t *p, uint64_t cmp, uint64_t val);
unsigned wk_simt_atomic_add_u32(unsigned *p, unsigned v);
uint64_t wk_simt_atomic_add_u64(uint64_t *p, uint64_t v);
float wk_simt_atomic_add_f32(float *p, float v);
double wk_simt_atomic_add_f64(double *p, double v);

/* ---- kernel tables (generated per module by cmake/simt.cmake) */
typedef struct wk_simt_kernel {
    const char *name;
    void (*run)(void **args); /* one thread: the kernel with args unpacked */
} wk_simt_kernel;
typedef struct wk_simt_module {
    const char *name; /* kernels/<name>.cu */
    const wk_simt_kernel *kernels; /* ends with {NULL, NULL} */
    int reserved;
} wk_simt_module;

#ifdef __cplusplus
}
#endif

#ifndef __cplusplus
/* ---- host side (C only) */
#include "wick.h"

/* The generated list of modules (gen/wk_simt_modules.c); count 0 when built without simt. */
extern const wk_simt_module wk_simt_modules[];
extern const int wk_simt_module_count;

/* One launch: every block of grid, each of block[0..2] threads, lanes of `warp` (32 or 64), lane
 * order between synchronisation points shuffled by `seed`. Runs to completion on the calling
 * thread (launches of a process are serialised). A hazard (barrier or warp-operation divergence,
 * a deadlock, an access outside an allocation, a shared-memory race) fails with WK_ERR_DEVICE and a
 * message naming kernel, block, thread and hazard. */
wk_status wk_simt_launch(const wk_simt_kernel *k, const unsigned grid[3], const unsigned block[3],
                         unsigned shmem, void **args, int warp, uint64_t seed);

/* ---- device memory (simt_mem.c): one reserved arena of host memory; every allocation has guard
 * zones, and a shadow byte per 16 bytes says what is addressable. */
#define WK_SIMT_MEM_BYTES ((size_t)8 << 30) /* the arena: the device's "total memory" */
wk_status wk_simt_mem_alloc(void **ptr, size_t bytes);
void wk_simt_mem_free(void *ptr);
size_t wk_simt_mem_used(void);
/* The device memory: WK_SIMT_MEM_BYTES, or less after wk_simt_mem_set_limit (a test hook, so that
 * tests can fill the device: tests/test_faults.c). Devices opened later report it as their total
 * memory; allocations past it fail with WK_ERR_OUT_OF_MEMORY. 0 restores the whole arena. */
size_t wk_simt_mem_total(void);
void wk_simt_mem_set_limit(size_t bytes);
/* WK_OK when [p, p + n) lies inside one live allocation (host-side copies check with it). */
wk_status wk_simt_mem_check(const void *p, size_t n, const char *what);

/* ---- hazards (simt_sched.c): the first one of the running launch wins. wk_simt_mem_fault: the
 * running launch touched memory outside every allocation (set by wk_simt_access, cleared when a
 * launch starts): the driver then treats the device's context as lost, as CUDA does after an
 * illegal address (src/simt/simt.c). */
extern int wk_simt_mem_fault;
void wk_simt_hazard(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Access checks called by the instrumentation hooks and the atomics (simt_mem.c). */
void wk_simt_access(uintptr_t a, size_t n, int write, int atomic, const void *pc);
/* Epochs of the race check: a new one at every block start and every barrier. */
void wk_simt_race_epoch(void);
int wk_simt_lane_id(void); /* linear thread id of the running lane, -1 outside a kernel */
#endif

#endif
