/* simt_kernel.h: the third platform of kernels/gpu.h. Included by gpu.h when WK_SIMT is defined:
 * the kernel files of kernels/ are then compiled as C++ by the host compiler (cmake/simt.cmake)
 * and run on the CPU by the simt driver (src/simt/), each block's threads as fibers.
 *
 * The CUDA names the kernels use map to the running lane (wk_simt_self, set by the scheduler of
 * simt_sched.c before it switches to a lane's fiber) and to the runtime's functions, which are C
 * (simt_rt.h). __shared__ variables are statics in the section "wk_simt_shared": the blocks of
 * every simt launch run one after another on the launching thread (one launch at a time per
 * process), so one copy is enough, and the section's bounds (__start/__stop symbols) tell the
 * race check which accesses are shared-memory accesses. */
#ifndef WK_SIMT_KERNEL_H
#define WK_SIMT_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "simt_rt.h"

/* ---- kernels: internal-linkage functions, found through the table cmake/simt.cmake generates
 * from the preprocessed file (it looks for "wk_simt_kvoid NAME("). */
typedef void wk_simt_kvoid;
#define WK_SIMT_KERNEL static __attribute__((used)) wk_simt_kvoid

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __shared__ static __attribute__((section("wk_simt_shared")))

/* ---- the running lane */
#define threadIdx (wk_simt_self->tid)
#define blockIdx (wk_simt_block_idx)
#define blockDim (wk_simt_block_dim)
#define gridDim (wk_simt_grid_dim)
#define warpSize (wk_simt_warp_size)

static inline void __syncthreads(void) { wk_simt_syncthreads(); }
/* Makes this thread's writes visible to every thread before its later accesses: a launch runs
 * its blocks one after another on one host thread (simt_sched.c), so program order already is. */
static inline void __threadfence(void) {}

/* Warp operations over the lanes of the calling lane's warp (every lane present in the block
 * must take part: the scheduler reports a lane that does not). Values of up to 8 bytes. */
template <class T> static inline T wk_simt_shfl_t(T v, int arg, uint64_t (*op)(uint64_t, int))
{
    static_assert(sizeof(T) <= 8, "simt shuffles move up to 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    b = op(b, arg);
    T r;
    memcpy(&r, &b, sizeof r);
    return r;
}
#define wk_simt_shfl_down_t(v, d) wk_simt_shfl_t((v), (d), wk_simt_shfl_down)
#define wk_simt_shfl_xor_t(v, m) wk_simt_shfl_t((v), (m), wk_simt_shfl_xor)
#define wk_simt_shfl_idx_t(v, s) wk_simt_shfl_t((v), (s), wk_simt_shfl_idx)
#define __shfl_sync(mask, v, s) wk_simt_shfl_idx_t((v), (s))
#define __shfl(v, s) wk_simt_shfl_idx_t((v), (s))
#define __shfl_xor_sync(mask, v, m) wk_simt_shfl_xor_t((v), (m))
#define __shfl_xor(v, m) wk_simt_shfl_xor_t((v), (m))
#define __shfl_down_sync(mask, v, d) wk_simt_shfl_down_t((v), (d))
#define __shfl_down(v, d) wk_simt_shfl_down_t((v), (d))
#define __ballot_sync(mask, p) wk_simt_ballot((p) ? 1 : 0)
#define __ballot(p) wk_simt_ballot((p) ? 1 : 0)

/* ---- atomics: the lanes never run at the same time, so these are plain read-modify-writes in
 * the runtime (checked against the allocation's bounds, exempt from the race check). */
static inline unsigned atomicCAS(unsigned *p, unsigned c, unsigned v)
{
    return wk_simt_atomic_cas32(p, c, v);
}
static inline int atomicCAS(int *p, int c, int v)
{
    return (int)wk_simt_atomic_cas32((unsigned *)p, (unsigned)c, (unsigned)v);
}
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long c,
                                           unsigned long long v)
{
    return wk_simt_atomic_cas64((uint64_t *)p, c, v);
}
static inline float atomicAdd(float *p, float v) { return wk_simt_atomic_add_f32(p, v); }
static inline double atomicAdd(double *p, double v) { return wk_simt_atomic_add_f64(p, v); }
static inline int atomicAdd(int *p, int v)
{
    return (int)wk_simt_atomic_add_u32((unsigned *)p, (unsigned)v);
}
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return wk_simt_atomic_add_u32(p, v); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return wk_simt_atomic_add_u64((uint64_t *)p, v);
}

/* ---- bit casts and the integer min/max of CUDA */
static inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
static inline float __uint_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
static inline unsigned __float_as_uint(float v) { unsigned u; memcpy(&u, &v, 4); return u; }
static inline int __float_as_int(float v) { int u; memcpy(&u, &v, 4); return u; }
static inline double __longlong_as_double(long long v) { double d; memcpy(&d, &v, 8); return d; }
static inline long long __double_as_longlong(double v) { long long u; memcpy(&u, &v, 8); return u; }
#define WK_SIMT_MINMAX(T)                                      \
    static inline T min(T a, T b) { return a < b ? a : b; }    \
    static inline T max(T a, T b) { return a > b ? a : b; }
WK_SIMT_MINMAX(int)
WK_SIMT_MINMAX(unsigned)
WK_SIMT_MINMAX(long)
WK_SIMT_MINMAX(unsigned long)
WK_SIMT_MINMAX(long long)
WK_SIMT_MINMAX(unsigned long long)
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
#undef WK_SIMT_MINMAX

/* ---- dynamic shared memory (WK_SHARED_DYN of gpu.h): one buffer of the runtime, in the shared
 * section too; a launch asking for more than WK_SIMT_DYN_SHARED bytes fails. */
#define WK_SIMT_SHARED_DYN(T, name) static T *const name = (T *)wk_simt_dyn_shared

/* ---- kernel table entries: run(args) calls the kernel with its arguments unpacked from the
 * launch's void *args[] (cuLaunchKernel's kernelParams), by the kernel's own parameter types. */
template <int... I> struct wk_simt_seq {};
template <int N, int... I> struct wk_simt_mkseq : wk_simt_mkseq<N - 1, N - 1, I...> {};
template <int... I> struct wk_simt_mkseq<0, I...> { typedef wk_simt_seq<I...> type; };
template <class T> struct wk_simt_strip { typedef T type; };
template <class T> struct wk_simt_strip<const T> { typedef T type; };
template <class F, F f> struct wk_simt_call;
template <class... A, void (*f)(A...)> struct wk_simt_call<void (*)(A...), f> {
    template <int... I> static void go(void **args, wk_simt_seq<I...>)
    {
        f(*(typename wk_simt_strip<A>::type *)args[I]...);
    }
    static void run(void **args) { go(args, typename wk_simt_mkseq<sizeof...(A)>::type()); }
};
#define WK_SIMT_ENTRY(name) {#name, &wk_simt_call<decltype(&name), &name>::run}

#endif
