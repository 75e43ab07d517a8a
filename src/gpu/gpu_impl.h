/* gpu_impl.h: the GPU backend, written once over a small driver interface (cuda.c, hip.c).
 * Internal. Two halves meet here:
 *   - the runtime half (gpu_backend.c, gpu_driver.h, cuda.c, hip.c, gpu_module.c, gpu_alloc.c):
 *     devices, memory, streams, the module cache and launches;
 *   - the op half (gpu_<family>.c): one host function per op family that picks a kernel from
 *     kernels/<family>.cu and launches it through wk_gpu_launch.
 * Kernels are `extern "C" __global__` functions; the module of kernels/<family>.cu is named
 * "<family>". Kernel arguments are passed as an array of pointers to the values, as for
 * cuLaunchKernel. Launches are asynchronous on the device's stream. */
#ifndef WK_GPU_IMPL_H
#define WK_GPU_IMPL_H

#include "backend.h"

/* A kernel handle, looked up once per (device, module, name) and cached. */
typedef void *wk_gpu_fn;

/* fn: the kernel `name` of module `module` on dev (loads the module on first use). */
wk_status wk_gpu_function(wk_gpu_fn *fn, wk_device *dev, const char *module, const char *name);
/* Launches fn on the device's stream: grid (gx, gy, gz) of blocks (bx, by, bz), shmem bytes of
 * dynamic shared memory, args as for cuLaunchKernel. */
wk_status wk_gpu_launch(wk_device *dev, wk_gpu_fn fn, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **args);
/* Device facts, read from the device at open. */
int wk_gpu_warp_size(const wk_device *dev);   /* 32 on NVIDIA and RDNA, 64 on CDNA/GCN */
int wk_gpu_sm_count(const wk_device *dev);    /* multiprocessors / compute units */
/* Scratch device memory for an op (freed with wk_gpu_scratch_free; stream-ordered). */
wk_status wk_gpu_scratch_alloc(wk_device *dev, size_t bytes, void **ptr);
void wk_gpu_scratch_free(wk_device *dev, void *ptr);

/* The op half: contracts in src/core/backend.h. */
wk_status wk_gpu_unary(wk_device *dev, wk_op op, wk_dtype dt, const wk_unary_params *p, void *out,
                       const void *x, const wk_layout *lx);
wk_status wk_gpu_binary(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb);
wk_status wk_gpu_where_cond(wk_device *dev, wk_dtype cdt, wk_dtype dt, void *out, const void *c,
                            const wk_layout *lc, const void *t, const wk_layout *lt, const void *f,
                            const wk_layout *lf);
wk_status wk_gpu_to_dtype(wk_device *dev, wk_dtype from, wk_dtype to, void *out, const void *x,
                          const wk_layout *lx);
wk_status wk_gpu_const_set(wk_device *dev, wk_dtype dt, void *base, const wk_layout *l,
                           const void *value);
wk_status wk_gpu_copy_strided(wk_device *dev, wk_dtype dt, void *dst, size_t dst_offset,
                              const void *x, const wk_layout *lx);
wk_status wk_gpu_copy2d(wk_device *dev, wk_dtype dt, void *dst, const void *src, size_t d1,
                        size_t d2, size_t src_stride1, size_t dst_stride1, size_t src_offset,
                        size_t dst_offset);
wk_status wk_gpu_reduce(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, uint32_t dims_mask);
wk_status wk_gpu_rand(wk_device *dev, wk_op op, wk_dtype dt, void *out, size_t n, double a,
                      double b, uint64_t seed, uint64_t offset); /* gpu_rand.c, kernels/rand.cu */
/* Which (op, dtype) pairs the op half implements. */
bool wk_gpu_ops_supports(wk_op op, wk_dtype dt);

#endif
