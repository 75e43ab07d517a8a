/* gpu_cast.c: the GPU to_dtype, every (from, to) pair, through kernels/cast.cu: a contiguous
 * input takes the vectorised kernel of its pair, a strided one the generic kernel with both
 * dtypes as arguments. */
#include "gpu_ops.h"
#include <stdio.h>

/* out (contiguous, elem_count(lx) elements of `to`) = x converted. */
wk_status wk_gpu_to_dtype(wk_device *dev, wk_dtype from, wk_dtype to, void *out, const void *x,
                          const wk_layout *lx)
{
    int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    const size_t fsz = wk_dtype_size(from), tsz = wk_dtype_size(to);
    const void *xp = wk_gpu_at(x, lx->offset, fsz);

    if (wk_layout_is_contiguous(lx)) {
        char name[64];
        snprintf(name, sizeof name, "cast_%s_%s", wk_gpu_dtype_kname(from),
                 wk_gpu_dtype_kname(to));
        void *args[] = {&n, &xp, &out};
        const int64_t vec = (int64_t)(16 / (fsz > tsz ? fsz : tsz));
        return wk_gpu_run(dev, "cast", name, wk_gpu_blocks(dev, (n + vec - 1) / vec), 1, 1,
                          args);
    }

    wk_klay1 k;
    wk_layout col;
    wk_gpu_klay1(&k, &col, lx);
    int ifrom = (int)from, ito = (int)to;
    void *args[] = {&ifrom, &ito, &n, &k, &xp, &out};
    return wk_gpu_run(dev, "cast", "cast_strided", wk_gpu_blocks(dev, n), 1, 1, args);
}
