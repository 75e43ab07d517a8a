/* gpu_index.c: PLACEHOLDER while the real file is written (session of issue 5/6). */
#include "gpu_ops.h"

wk_status wk_gpu_index(wk_device *dev, const wk_index_args *a)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}
