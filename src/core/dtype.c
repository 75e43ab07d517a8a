/* dtype.c: dtype facts, the public scalar conversions, op names, and which (op, dtype) pairs the
 * semantics define (docs/semantics.md). */
#include "wk_core.h"

#define WK_DT_NAME(E, n, T) [WK_DTYPE_##E] = #n,
#define WK_DT_SIZE(E, n, T) [WK_DTYPE_##E] = sizeof(T),
static const char *const dtype_names[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(WK_DT_NAME)};
static const size_t dtype_sizes[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(WK_DT_SIZE)};

const char *wk_dtype_name(wk_dtype d) { return wk_dtype_valid(d) ? dtype_names[d] : "?"; }
size_t wk_dtype_size(wk_dtype d) { return wk_dtype_valid(d) ? dtype_sizes[d] : 0; }
int wk_dtype_is_float(wk_dtype d) { return wk_dtype_valid(d) && !wk_dtype_is_int(d); }

uint16_t wk_f32_to_f16(float x) { return wk_fp_f32_to_f16(x); }
float wk_f16_to_f32(uint16_t h) { return wk_fp_f16_to_f32(h); }
uint16_t wk_f32_to_bf16(float x) { return wk_fp_f32_to_bf16(x); }
float wk_bf16_to_f32(uint16_t h) { return wk_fp_bf16_to_f32(h); }
uint8_t wk_f32_to_f8e4m3(float x) { return wk_fp_f32_to_f8e4m3(x); }
float wk_f8e4m3_to_f32(uint8_t b) { return wk_fp_f8e4m3_to_f32(b); }

static const char *const op_names[WK_OP_ID_LIMIT] = {
    [WK_OP_EXP] = "exp", [WK_OP_LOG] = "log", [WK_OP_SIN] = "sin", [WK_OP_COS] = "cos",
    [WK_OP_TANH] = "tanh", [WK_OP_ABS] = "abs", [WK_OP_NEG] = "neg", [WK_OP_RECIP] = "recip",
    [WK_OP_SQR] = "sqr", [WK_OP_SQRT] = "sqrt", [WK_OP_GELU] = "gelu",
    [WK_OP_GELU_ERF] = "gelu_erf", [WK_OP_ERF] = "erf", [WK_OP_RELU] = "relu",
    [WK_OP_SILU] = "silu", [WK_OP_FLOOR] = "floor", [WK_OP_CEIL] = "ceil",
    [WK_OP_ROUND] = "round", [WK_OP_SIGN] = "sign", [WK_OP_SIGMOID] = "sigmoid",
    [WK_OP_AFFINE] = "affine", [WK_OP_POWF] = "powf", [WK_OP_ELU] = "elu",
    [WK_OP_ADD] = "add", [WK_OP_SUB] = "sub", [WK_OP_MUL] = "mul", [WK_OP_DIV] = "div",
    [WK_OP_MAXIMUM] = "maximum", [WK_OP_MINIMUM] = "minimum", [WK_OP_SWIGLU] = "swiglu",
    [WK_OP_GEGLU] = "geglu", [WK_OP_GEGLU_ERF] = "geglu_erf",
    [WK_OP_EQ] = "eq", [WK_OP_NE] = "ne", [WK_OP_LT] = "lt", [WK_OP_LE] = "le",
    [WK_OP_GT] = "gt", [WK_OP_GE] = "ge",
    [WK_OP_WHERE_COND] = "where_cond", [WK_OP_TO_DTYPE] = "to_dtype",
    [WK_OP_CONST_SET] = "const_set", [WK_OP_ZEROS] = "zeros",
    [WK_OP_SUM] = "sum", [WK_OP_MIN] = "min", [WK_OP_MAX] = "max", [WK_OP_ARGMIN] = "argmin",
    [WK_OP_ARGMAX] = "argmax", [WK_OP_COPY_STRIDED] = "copy_strided_src", [WK_OP_COPY2D] = "copy2d",
    [WK_OP_RAND_UNIFORM] = "rand_uniform", [WK_OP_RAND_NORMAL] = "rand_normal",
    [WK_OP_MATMUL] = "matmul", [WK_OP_CONV1D] = "conv1d",
    [WK_OP_CONV_TRANSPOSE1D] = "conv_transpose1d", [WK_OP_CONV2D] = "conv2d",
    [WK_OP_CONV_TRANSPOSE2D] = "conv_transpose2d", [WK_OP_AVG_POOL2D] = "avg_pool2d",
    [WK_OP_MAX_POOL2D] = "max_pool2d", [WK_OP_UPSAMPLE_NEAREST1D] = "upsample_nearest1d",
    [WK_OP_UPSAMPLE_NEAREST2D] = "upsample_nearest2d",
    [WK_OP_UPSAMPLE_BILINEAR2D] = "upsample_bilinear2d", [WK_OP_INDEX_SELECT] = "index_select",
    [WK_OP_GATHER] = "gather", [WK_OP_SCATTER_SET] = "scatter_set",
    [WK_OP_SCATTER_ADD_SET] = "scatter_add_set", [WK_OP_INDEX_ADD] = "index_add",
    [WK_OP_SOFTMAX_LAST_DIM] = "softmax_last_dim", [WK_OP_RMS_NORM] = "rms_norm",
    [WK_OP_LAYER_NORM] = "layer_norm", [WK_OP_ROPE] = "rope", [WK_OP_ROPE_I] = "rope_i",
    [WK_OP_ROPE_THD] = "rope_thd", [WK_OP_ARG_SORT_LAST_DIM] = "arg_sort_last_dim",
    [WK_OP_ADD_RMS_NORM] = "add_rms_norm", [WK_OP_ADD_LAYER_NORM] = "add_layer_norm",
    [WK_OP_DEQUANTIZE] = "dequantize", [WK_OP_QMATMUL] = "qmatmul",
    [WK_OP_QEMBEDDING] = "qembedding", [WK_OP_DECODE_ATTENTION] = "decode_attention",
    [WK_OP_ROPE_KV_APPEND] = "rope_kv_append", [WK_OP_QUANTIZE_ACT] = "quantize_act",
    [WK_OP_ADD_RMS_NORM_ACT] = "add_rms_norm_act", [WK_OP_QMATMUL_ACT] = "qmatmul_act",
    [WK_OP_BINARY_ACT] = "binary_act",
};

const char *wk_op_name(wk_op op)
{
    if ((unsigned)op >= WK_OP_ID_LIMIT || !op_names[op])
        return "?";
    return op_names[op];
}

/* The rule table of docs/semantics.md ("Integers"). */
int wk_op_defined(wk_op op, wk_dtype dt)
{
    if (!wk_dtype_valid(dt) || (unsigned)op >= WK_OP_ID_LIMIT || !op_names[op])
        return 0;
    /* quantized ops: the float side is f32, f16 or bf16 ("Quantized tensors") */
    if (op == WK_OP_DEQUANTIZE || op == WK_OP_QMATMUL || op == WK_OP_QEMBEDDING ||
        op == WK_OP_DECODE_ATTENTION || op == WK_OP_QUANTIZE_ACT || op == WK_OP_ADD_RMS_NORM_ACT ||
        op == WK_OP_QMATMUL_ACT || op == WK_OP_BINARY_ACT)
        return dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16;
    if (wk_dtype_is_float(dt))
        return 1;
    switch (op) {
    case WK_OP_EXP: case WK_OP_LOG: case WK_OP_SIN: case WK_OP_COS: case WK_OP_TANH:
    case WK_OP_RECIP: case WK_OP_SQRT: case WK_OP_GELU: case WK_OP_GELU_ERF: case WK_OP_ERF:
    case WK_OP_SILU: case WK_OP_SIGMOID: case WK_OP_POWF: case WK_OP_ELU:
    case WK_OP_SWIGLU: case WK_OP_GEGLU: case WK_OP_GEGLU_ERF:
    case WK_OP_RAND_UNIFORM: case WK_OP_RAND_NORMAL:
    case WK_OP_MATMUL: case WK_OP_CONV1D: case WK_OP_CONV_TRANSPOSE1D: case WK_OP_CONV2D:
    case WK_OP_CONV_TRANSPOSE2D: case WK_OP_AVG_POOL2D: case WK_OP_UPSAMPLE_BILINEAR2D:
    case WK_OP_SOFTMAX_LAST_DIM: case WK_OP_RMS_NORM: case WK_OP_LAYER_NORM: case WK_OP_ROPE:
    case WK_OP_ROPE_I: case WK_OP_ROPE_THD: case WK_OP_ADD_RMS_NORM: case WK_OP_ADD_LAYER_NORM:
    case WK_OP_ROPE_KV_APPEND:
        return 0;
    case WK_OP_NEG:
        return wk_dtype_is_signed_int(dt);
    default:
        return 1;
    }
}
