/* gpu_supports.c: wk_gpu_ops_supports (gpu_impl.h), the (op, dtype) pairs that the kernels in
 * kernels/ implement: the GPU backend's supports() (gpu_backend.c), apart from the op half's
 * launch helpers (gpu_ops.c), so the backend needs nothing from them. Quantized types are
 * checked per qtype by wk_gpu_supports_q. */
#include "gpu_impl.h"

bool wk_gpu_ops_supports(wk_op op, wk_dtype dt)
{
    if (!wk_op_defined(op, dt))
        return false;
    return (op >= WK_OP_EXP && op <= WK_OP_ELU) || (op >= WK_OP_ADD && op <= WK_OP_GEGLU_ERF) ||
           (op >= WK_OP_EQ && op <= WK_OP_GE) || (op >= WK_OP_SUM && op <= WK_OP_ARGMAX) ||
           op == WK_OP_WHERE_COND || op == WK_OP_TO_DTYPE || op == WK_OP_CONST_SET ||
           op == WK_OP_COPY_STRIDED || op == WK_OP_COPY2D || op == WK_OP_RAND_UNIFORM ||
           op == WK_OP_RAND_NORMAL || (op >= WK_OP_MATMUL && op <= WK_OP_UPSAMPLE_BILINEAR2D) ||
           (op >= WK_OP_INDEX_SELECT && op <= WK_OP_INDEX_ADD) ||
           (op >= WK_OP_SOFTMAX_LAST_DIM && op <= WK_OP_ADD_LAYER_NORM) ||
           (op >= WK_OP_DEQUANTIZE && op <= WK_OP_QEMBEDDING) || /* per qtype: wk_gpu_supports_q */
           op == WK_OP_DECODE_ATTENTION || op == WK_OP_ROPE_KV_APPEND ||
           op == WK_OP_QUANTIZE_ACT || op == WK_OP_ADD_RMS_NORM_ACT ||
           op == WK_OP_QMATMUL_ACT || /* per qtype: wk_gpu_supports_q */
           op == WK_OP_BINARY_ACT;
}
