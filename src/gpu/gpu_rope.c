/* gpu_rope.c: PLACEHOLDER while the real file is written (session of issue 5/6). */
#include "gpu_ops.h"

wk_status wk_gpu_rope(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *cos, const wk_layout *lc, const void *sin,
                      const wk_layout *ls)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}
