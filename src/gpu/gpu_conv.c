/* gpu_conv.c: PLACEHOLDER while the real file is written (session of issue 5/6). */
#include "gpu_ops.h"

wk_status wk_gpu_conv(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *w, const wk_layout *lw,
                      const wk_conv_params *p)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}
