/* gpu_softmax.c: the GPU softmax over the last dim (candle-nn's softmax_last_dim), through
 * kernels/softmax.cu. The row handling (unit-strided rows, register or streaming plan) is the
 * one of the norms: wk_gpu_rowop in gpu_norm.c. */
#include "gpu_ops.h"

/* out (contiguous, dims of lx) = softmax of x over the last dim; lx->rank >= 1. */
wk_status wk_gpu_softmax(wk_device *dev, wk_dtype dt, void *out, const void *x,
                         const wk_layout *lx)
{
    return wk_gpu_rowop(dev, WK_OP_SOFTMAX_LAST_DIM, dt, out, x, lx, NULL, NULL, NULL, NULL,
                        0.0f);
}
