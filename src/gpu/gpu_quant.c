/* gpu_quant.c: PLACEHOLDER while the real file is written (session of issue 5/6). */
#include "gpu_ops.h"

wk_status wk_gpu_dequantize(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *q,
                            int64_t n)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}

wk_status wk_gpu_qmatmul(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                         int64_t rows, const void *w, int64_t n, int64_t k)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}

wk_status wk_gpu_qembedding(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *ids,
                            wk_dtype idt, const wk_layout *li, const void *w, int64_t rows,
                            int64_t k)
{
    return wk_err(WK_ERR_NOT_SUPPORTED, "gpu: %s is being written", __func__);
}

bool wk_gpu_supports_q(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt)
{
    return false;
}
