/* ref_defined.c: which (op, dtype) pairs docs/semantics.md defines, written from the document's
 * "Integers" table independently of the library's wk_op_defined(); the parity harness checks
 * that the two agree. The dtype is the op's data operand (the source of to_dtype, the values of
 * where_cond). */
#include "ref.h"

int ref_op_defined(wk_op op, wk_dtype dt)
{
    if (ref_dtype_size(dt) == 0)
        return 0;
    int is_float = ref_is_float(dt);
    switch (op) {
    /* transcendental and parametrised float ops: floats only */
    case WK_OP_EXP: case WK_OP_LOG: case WK_OP_SIN: case WK_OP_COS: case WK_OP_TANH:
    case WK_OP_RECIP: case WK_OP_SQRT: case WK_OP_GELU: case WK_OP_GELU_ERF: case WK_OP_ERF:
    case WK_OP_SILU: case WK_OP_SIGMOID: case WK_OP_POWF: case WK_OP_ELU:
    case WK_OP_RAND_UNIFORM: case WK_OP_RAND_NORMAL:
    /* the gated binary ops (an activation of a, times b) */
    case WK_OP_SWIGLU: case WK_OP_GEGLU: case WK_OP_GEGLU_ERF:
        return is_float;
    /* neg: floats and signed integers (unsigned neg is not defined) */
    case WK_OP_NEG:
        return is_float || ref_is_signed(dt);
    /* defined on every dtype */
    case WK_OP_ABS: case WK_OP_SQR: case WK_OP_RELU: case WK_OP_SIGN: case WK_OP_FLOOR:
    case WK_OP_CEIL: case WK_OP_ROUND: case WK_OP_AFFINE:
    case WK_OP_ADD: case WK_OP_SUB: case WK_OP_MUL: case WK_OP_DIV: case WK_OP_MAXIMUM:
    case WK_OP_MINIMUM:
    case WK_OP_EQ: case WK_OP_NE: case WK_OP_LT: case WK_OP_LE: case WK_OP_GT: case WK_OP_GE:
    case WK_OP_WHERE_COND: case WK_OP_TO_DTYPE: case WK_OP_CONST_SET: case WK_OP_ZEROS:
    case WK_OP_SUM: case WK_OP_MIN: case WK_OP_MAX: case WK_OP_ARGMIN: case WK_OP_ARGMAX:
    case WK_OP_COPY_STRIDED: case WK_OP_COPY2D:
        return 1;
    /* matmul and the convolutions: floats only (BLAS-style arithmetic) */
    case WK_OP_MATMUL: case WK_OP_CONV1D: case WK_OP_CONV_TRANSPOSE1D: case WK_OP_CONV2D:
    case WK_OP_CONV_TRANSPOSE2D:
        return is_float;
    /* @marker:linalg */
    /* pools and upsampling: averaging and interpolating need floats; max and nearest select */
    case WK_OP_AVG_POOL2D: case WK_OP_UPSAMPLE_BILINEAR2D:
        return is_float;
    case WK_OP_MAX_POOL2D: case WK_OP_UPSAMPLE_NEAREST1D: case WK_OP_UPSAMPLE_NEAREST2D:
        return 1;
    /* @marker:image */
    /* indexing: every value dtype (adds wrap on integers) */
    case WK_OP_INDEX_SELECT: case WK_OP_GATHER: case WK_OP_SCATTER_SET: case WK_OP_SCATTER_ADD_SET:
    case WK_OP_INDEX_ADD:
        return 1;
    /* @marker:index */
    /* fused ops of candle-nn: floats only, except arg_sort (every dtype) */
    case WK_OP_SOFTMAX_LAST_DIM: case WK_OP_RMS_NORM: case WK_OP_LAYER_NORM: case WK_OP_ROPE:
    case WK_OP_ROPE_I: case WK_OP_ROPE_THD:
    /* wick's residual add + norm: as the norms */
    case WK_OP_ADD_RMS_NORM: case WK_OP_ADD_LAYER_NORM:
    /* rope with the KV-cache append: every float dtype, q's and the cache's */
    case WK_OP_ROPE_KV_APPEND:
        return is_float;
    case WK_OP_ARG_SORT_LAST_DIM:
        return 1;
    /* @marker:fused */
    /* quantized ops: the float side is f32, f16 or bf16 (not f64, not f8e4m3) */
    case WK_OP_DEQUANTIZE: case WK_OP_QMATMUL: case WK_OP_QEMBEDDING:
    /* int8 activations: x (or the product's output) f32, f16 or bf16 */
    case WK_OP_QUANTIZE_ACT: case WK_OP_ADD_RMS_NORM_ACT: case WK_OP_QMATMUL_ACT:
    case WK_OP_BINARY_ACT:
        return dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16;
    /* decode attention: q and cache f32, f16 or bf16 */
    case WK_OP_DECODE_ATTENTION:
        return dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16;
    default:
        return 0;
    }
}
