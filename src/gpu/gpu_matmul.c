/* gpu_matmul.c: PLACEHOLDER while the real file is written (session of issue 5/6). */
#include "gpu_ops.h"

wk_status wk_gpu_matmul(wk_device *dev, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}

wk_status wk_gpu_gemm(wk_device *dev, const wk_gpu_gemm_args *g)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}
