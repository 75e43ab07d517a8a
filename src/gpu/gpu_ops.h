/* gpu_ops.h: what the op half of the GPU backend (gpu_<family>.c) shares: the kernel layout
 * argument (the host twin of wk_klay<N> in kernels/gpu.h), kernel names, grid sizes and one
 * launch call. Internal to src/gpu. */
#ifndef WK_GPU_OPS_H
#define WK_GPU_OPS_H

#include "gpu_impl.h"
#include "wk_core.h"

/* Threads per block of every kernel in kernels/ (WK_BLOCK there). */
#define WK_GPU_BLOCK 256

/* The strided layout argument of N inputs of equal dims, passed by value. Mirrors
 * `template <int N> struct wk_klay` of kernels/gpu.h field for field: rank >= 1, small = 1 when
 * the element count and every input's largest offset fit in int32 (32-bit index arithmetic),
 * dims shared, one row of strides per input, offsets folded into the pointers. */
#define WK_GPU_KLAY(N)                  \
    struct {                            \
        int32_t rank;                   \
        int32_t small;                  \
        int64_t dims[WK_MAX_RANK];      \
        int64_t st[N][WK_MAX_RANK];     \
    }
typedef WK_GPU_KLAY(1) wk_klay1;
typedef WK_GPU_KLAY(2) wk_klay2;
typedef WK_GPU_KLAY(3) wk_klay3;

/* Kernel layouts of n (1..3) layouts of equal dims, collapsed jointly (collapsed[k] receives
 * layout k collapsed, offsets kept, for callers that look at the shape). A rank-0 result
 * becomes rank 1 of one element. */
void wk_gpu_klay1(wk_klay1 *k, wk_layout *collapsed, const wk_layout *l);
void wk_gpu_klay2(wk_klay2 *k, wk_layout *collapsed, const wk_layout *a, const wk_layout *b);
void wk_gpu_klay3(wk_klay3 *k, wk_layout *collapsed, const wk_layout *a, const wk_layout *b,
                  const wk_layout *c);
/* The same for one layout that is already collapsed (or any layout): no merging. */
void wk_gpu_klay1_of(wk_klay1 *k, const wk_layout *l);

/* Device address of element `elem` of a buffer of elements of esize bytes. */
static inline void *wk_gpu_at(const void *base, int64_t elem, size_t esize)
{
    return (void *)((uintptr_t)base + (uintptr_t)elem * esize);
}

/* Every row of p (layout l, elements of esz bytes; a row runs along the last dim) starts on an
 * `align`-byte boundary: the base address, and the strides of the other dims (those of more
 * than one element) in multiples of align / esz elements. */
static inline bool wk_gpu_rows_aligned(const void *p, const wk_layout *l, size_t esz, size_t align)
{
    const int64_t ve = (int64_t)(align / esz);
    if ((uintptr_t)p % align != 0)
        return false;
    for (int i = 0; i + 1 < l->rank; i++)
        if (l->dims[i] > 1 && l->strides[i] % ve != 0)
            return false;
    return true;
}

/* Blocks for a grid-stride kernel over `units` work items: about 4 per thread when that still
 * gives 4 blocks per multiprocessor, else one per thread (>= 1, capped). */
unsigned wk_gpu_blocks(const wk_device *dev, int64_t units);

/* Short names used in kernel names: "exp", "gelu_erf", ...; "u8", "f8e4m3", ... */
const char *wk_gpu_op_kname(wk_op op);
const char *wk_gpu_dtype_kname(wk_dtype dt);

/* Looks up kernel `name` of module `module` and launches it with blocks of WK_GPU_BLOCK threads,
 * no dynamic shared memory. */
wk_status wk_gpu_run(wk_device *dev, const char *module, const char *name, unsigned gx,
                     unsigned gy, unsigned gz, void **args);
/* The same for a kernel that may start early (WK_LAUNCH_EARLY, gpu_impl.h). */
wk_status wk_gpu_run_early(wk_device *dev, const char *module, const char *name, unsigned gx,
                           unsigned gy, unsigned gz, void **args);

/* The row driver of softmax_last_dim, rms_norm and layer_norm (gpu_norm.c): op is one of the
 * three; alpha/beta NULL where the op has none. */
wk_status wk_gpu_rowop(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                       const wk_layout *lx, const void *alpha, const wk_layout *la,
                       const void *beta, const wk_layout *lb, float eps);

#endif
