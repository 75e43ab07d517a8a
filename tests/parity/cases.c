/* cases.c: the op rows of the parity matrix, in display order. One entry per row: the op, the
 * runner kind, the input domain, the tolerance class and whether NaN/inf/+-0 are injected.
 * to_dtype has one row per target dtype ("to_f16"); its columns are the source dtypes. */
#include "parity_impl.h"

#define U(name, op, dom, tol, sp) {name, op, PK_UNARY, dom, tol, sp, WK_DTYPE_U8}
#define B(name, op, dom, tol, sp) {name, op, PK_BINARY, dom, tol, sp, WK_DTYPE_U8}
#define R(name, op, dom, tol, sp) {name, op, PK_REDUCE, dom, tol, sp, WK_DTYPE_U8}
#define CAST(name, to) {name, WK_OP_TO_DTYPE, PK_CAST, PD_CAST, PT_EXACT, 1, to}
/* quantized (one row per op and block type, named "<op>_<qtype>"): dequantize and qembedding decode each element to its f32 value and round once
 * (exact); qmatmul: PT_QDOT (x quantized to int8 blocks for m <= 8 on every backend, as ggml does);
 * qmatmul_act: wk_quantize_act of x, then wk_qmatmul_act, against qmatmul's reference (PT_QDOT) */
#define QROWS(sfx)                                                                      \
    {"dequantize_" sfx, WK_OP_DEQUANTIZE, PK_QUANT, PD_BITS, PT_EXACT, 0, WK_DTYPE_U8},  \
    {"qmatmul_" sfx, WK_OP_QMATMUL, PK_QUANT, PD_ANY, PT_QDOT, 0, WK_DTYPE_U8},          \
    {"qmatmul_act_" sfx, WK_OP_QMATMUL_ACT, PK_QUANT, PD_ANY, PT_QDOT, 0, WK_DTYPE_U8},  \
    {"qembedding_" sfx, WK_OP_QEMBEDDING, PK_QUANT, PD_BITS, PT_EXACT, 0, WK_DTYPE_U8}

const pt_row pt_rows[] = {
    /* transcendental unary ops: libm differences allowed (PT_TRANSC) */
    U("exp", WK_OP_EXP, PD_EXP, PT_TRANSC, 0),
    U("log", WK_OP_LOG, PD_POS, PT_TRANSC, 0),
    U("sin", WK_OP_SIN, PD_TRIG, PT_TRANSC, 0),
    U("cos", WK_OP_COS, PD_TRIG, PT_TRANSC, 0),
    U("tanh", WK_OP_TANH, PD_TRIG, PT_TRANSC, 0),
    /* exactly rounded (or exact) unary ops */
    U("abs", WK_OP_ABS, PD_ANY, PT_EXACT, 1),
    U("neg", WK_OP_NEG, PD_ANY, PT_EXACT, 1),
    U("recip", WK_OP_RECIP, PD_RECIP, PT_EXACT, 0),
    U("sqr", WK_OP_SQR, PD_ANY, PT_EXACT, 1),
    U("sqrt", WK_OP_SQRT, PD_POS, PT_EXACT, 0),
    U("gelu", WK_OP_GELU, PD_TRIG, PT_TRANSC, 0),
    U("gelu_erf", WK_OP_GELU_ERF, PD_TRIG, PT_TRANSC, 0),
    U("erf", WK_OP_ERF, PD_TRIG, PT_TRANSC, 0),
    U("relu", WK_OP_RELU, PD_ANY, PT_EXACT, 0),
    U("silu", WK_OP_SILU, PD_TRIG, PT_TRANSC, 0),
    U("floor", WK_OP_FLOOR, PD_ROUND, PT_EXACT, 1),
    U("ceil", WK_OP_CEIL, PD_ROUND, PT_EXACT, 1),
    U("round", WK_OP_ROUND, PD_ROUND, PT_EXACT, 1),
    U("sign", WK_OP_SIGN, PD_ANY, PT_EXACT, 1),
    U("sigmoid", WK_OP_SIGMOID, PD_TRIG, PT_TRANSC, 0),
    U("affine", WK_OP_AFFINE, PD_ANY, PT_EXACT, 0),
    U("powf", WK_OP_POWF, PD_POW, PT_TRANSC, 0),
    U("elu", WK_OP_ELU, PD_EXP, PT_TRANSC, 0),
    /* binary: IEEE operations are exactly rounded in every compute type */
    B("add", WK_OP_ADD, PD_ANY, PT_EXACT, 0),
    B("sub", WK_OP_SUB, PD_ANY, PT_EXACT, 0),
    B("mul", WK_OP_MUL, PD_ANY, PT_EXACT, 0),
    B("div", WK_OP_DIV, PD_ANY, PT_EXACT, 0),
    B("maximum", WK_OP_MAXIMUM, PD_TIES, PT_EXACT, 1),
    B("minimum", WK_OP_MINIMUM, PD_TIES, PT_EXACT, 1),
    /* gated: an activation of a (libm differences: PT_TRANSC), times b */
    B("swiglu", WK_OP_SWIGLU, PD_TRIG, PT_TRANSC, 0),
    B("geglu", WK_OP_GEGLU, PD_TRIG, PT_TRANSC, 0),
    B("geglu_erf", WK_OP_GEGLU_ERF, PD_TRIG, PT_TRANSC, 0),
    B("eq", WK_OP_EQ, PD_TIES, PT_EXACT, 1),
    B("ne", WK_OP_NE, PD_TIES, PT_EXACT, 1),
    B("lt", WK_OP_LT, PD_TIES, PT_EXACT, 1),
    B("le", WK_OP_LE, PD_TIES, PT_EXACT, 1),
    B("gt", WK_OP_GT, PD_TIES, PT_EXACT, 1),
    B("ge", WK_OP_GE, PD_TIES, PT_EXACT, 1),
    {"where_cond", WK_OP_WHERE_COND, PK_WHERE, PD_TIES, PT_BITS, 1, WK_DTYPE_U8},
    CAST("to_u8", WK_DTYPE_U8),
    CAST("to_u32", WK_DTYPE_U32),
    CAST("to_i16", WK_DTYPE_I16),
    CAST("to_i32", WK_DTYPE_I32),
    CAST("to_i64", WK_DTYPE_I64),
    CAST("to_bf16", WK_DTYPE_BF16),
    CAST("to_f16", WK_DTYPE_F16),
    CAST("to_f32", WK_DTYPE_F32),
    CAST("to_f64", WK_DTYPE_F64),
    CAST("to_f8e4m3", WK_DTYPE_F8E4M3),
    {"const_set", WK_OP_CONST_SET, PK_CONST_SET, PD_TIES, PT_BITS, 1, WK_DTYPE_U8},
    R("sum", WK_OP_SUM, PD_SUM, PT_SUM, 1),
    R("min", WK_OP_MIN, PD_TIES, PT_EXACT, 1),
    R("max", WK_OP_MAX, PD_TIES, PT_EXACT, 1),
    R("argmin", WK_OP_ARGMIN, PD_TIES, PT_EXACT, 1),
    R("argmax", WK_OP_ARGMAX, PD_TIES, PT_EXACT, 1),
    {"copy_strided_src", WK_OP_COPY_STRIDED, PK_COPY_STRIDED, PD_BITS, PT_BITS, 0, WK_DTYPE_U8},
    {"copy2d", WK_OP_COPY2D, PK_COPY2D, PD_BITS, PT_BITS, 0, WK_DTYPE_U8},
    /* matmul and convolutions: sums of products in a BLAS order (PT_SUM) */
    {"matmul", WK_OP_MATMUL, PK_MATMUL, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"conv1d", WK_OP_CONV1D, PK_CONV, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"conv_transpose1d", WK_OP_CONV_TRANSPOSE1D, PK_CONV, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"conv2d", WK_OP_CONV2D, PK_CONV, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"conv_transpose2d", WK_OP_CONV_TRANSPOSE2D, PK_CONV, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    /* @marker:linalg */
    /* pools and upsampling: avg and bilinear are short sums (PT_SUM); max and nearest select
     * (max compares values, NaN included: PT_EXACT; nearest copies bits: PT_BITS) */
    {"avg_pool2d", WK_OP_AVG_POOL2D, PK_POOL, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"max_pool2d", WK_OP_MAX_POOL2D, PK_POOL, PD_TIES, PT_EXACT, 1, WK_DTYPE_U8},
    {"upsample_nearest1d", WK_OP_UPSAMPLE_NEAREST1D, PK_UPSAMPLE, PD_BITS, PT_BITS, 0, WK_DTYPE_U8},
    {"upsample_nearest2d", WK_OP_UPSAMPLE_NEAREST2D, PK_UPSAMPLE, PD_BITS, PT_BITS, 0, WK_DTYPE_U8},
    {"upsample_bilinear2d", WK_OP_UPSAMPLE_BILINEAR2D, PK_UPSAMPLE, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    /* @marker:image */
    /* indexing: selections copy bits (PT_BITS); adds round per add in the same row-major order
     * as the reference, so they are exact too (PT_EXACT) */
    {"index_select", WK_OP_INDEX_SELECT, PK_INDEX, PD_BITS, PT_BITS, 0, WK_DTYPE_U8},
    {"gather", WK_OP_GATHER, PK_INDEX, PD_BITS, PT_BITS, 0, WK_DTYPE_U8},
    {"scatter_set", WK_OP_SCATTER_SET, PK_INDEX, PD_BITS, PT_BITS, 0, WK_DTYPE_U8},
    {"scatter_add_set", WK_OP_SCATTER_ADD_SET, PK_INDEX, PD_ANY, PT_EXACT, 0, WK_DTYPE_U8},
    {"index_add", WK_OP_INDEX_ADD, PK_INDEX, PD_ANY, PT_EXACT, 0, WK_DTYPE_U8},
    /* @marker:index */
    /* fused ops of candle-nn: row sums accumulate in f32 (PT_SUM); rope is a product sum per
     * element (PT_TRANSC); arg_sort's u32 indices are exact (ties and NaN included) */
    {"softmax_last_dim", WK_OP_SOFTMAX_LAST_DIM, PK_SOFTMAX, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"rms_norm", WK_OP_RMS_NORM, PK_NORM, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"layer_norm", WK_OP_LAYER_NORM, PK_NORM, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"rope", WK_OP_ROPE, PK_ROPE, PD_ANY, PT_TRANSC, 0, WK_DTYPE_U8},
    {"rope_i", WK_OP_ROPE_I, PK_ROPE, PD_ANY, PT_TRANSC, 0, WK_DTYPE_U8},
    {"rope_thd", WK_OP_ROPE_THD, PK_ROPE, PD_ANY, PT_TRANSC, 0, WK_DTYPE_U8},
    {"arg_sort_last_dim", WK_OP_ARG_SORT_LAST_DIM, PK_ARG_SORT, PD_TIES, PT_EXACT, 1, WK_DTYPE_U8},
    /* wick's residual add + norm: the sum exact (one rounding, as add), the norm as the norms */
    {"add_rms_norm", WK_OP_ADD_RMS_NORM, PK_ADD_NORM, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    {"add_layer_norm", WK_OP_ADD_LAYER_NORM, PK_ADD_NORM, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    /* @marker:fused */
    QROWS("q4_0"), QROWS("q4_1"), QROWS("q5_0"),
    QROWS("q5_1"), QROWS("q8_0"), QROWS("q8_1"),
    QROWS("q2_k"), QROWS("q3_k"), QROWS("q4_k"),
    QROWS("q5_k"), QROWS("q6_k"), QROWS("q8_k"),
    QROWS("f32"), QROWS("f16"), QROWS("bf16"),
    /* rope with the KV-cache append (one rounding to q's dtype, as rope: PT_TRANSC, then a
     * conversion to the cache's dtype; the bound is the coarser dtype's), halves and interleaved */
    {"rope_kv_append", WK_OP_ROPE_KV_APPEND, PK_ROPE_KV, PD_ANY, PT_TRANSC, 0, WK_DTYPE_U8},
    {"rope_kv_append_i", WK_OP_ROPE_KV_APPEND, PK_ROPE_KV, PD_ANY, PT_TRANSC, 0, WK_DTYPE_U8},
    /* decode attention: f32 sums (scores, softmax, weighted values), the output rounded once */
    {"decode_attention", WK_OP_DECODE_ATTENTION, PK_ATTN, PD_ANY, PT_SUM, 0, WK_DTYPE_U8},
    /* the same with per-entry key counts (wk_decode_attention_lens; target: the counts' dtype) */
    {"decode_attention_lens", WK_OP_DECODE_ATTENTION, PK_ATTN, PD_ANY, PT_SUM, 0, WK_DTYPE_U32},
};
const int pt_nrows = (int)(sizeof pt_rows / sizeof pt_rows[0]);
