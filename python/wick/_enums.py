"""wick.h's enums, with their explicit values (append-only on the C side)."""
from enum import IntEnum


class Status(IntEnum):
    OK = 0
    INVALID_ARGUMENT = 100
    SHAPE = 101
    DTYPE = 102
    LAYOUT = 103
    OVERFLOW = 104
    INDEX_OUT_OF_RANGE = 105
    DEVICE_MISMATCH = 106
    OUT_OF_MEMORY = 200
    DEVICE = 300
    NO_DEVICE = 301
    TIMEOUT = 302
    NOT_SUPPORTED = 400
    IO = 500
    FORMAT = 501
    INTERNAL = 900


class DType(IntEnum):
    U8 = 0
    U32 = 1
    I16 = 2
    I32 = 3
    I64 = 4
    BF16 = 5
    F16 = 6
    F32 = 7
    F64 = 8
    F8E4M3 = 9


class Op(IntEnum):
    EXP = 0; LOG = 1; SIN = 2; COS = 3; TANH = 4; ABS = 5; NEG = 6; RECIP = 7; SQR = 8  # noqa: E702
    SQRT = 9; GELU = 10; GELU_ERF = 11; ERF = 12; RELU = 13; SILU = 14; FLOOR = 15  # noqa: E702
    CEIL = 16; ROUND = 17; SIGN = 18; SIGMOID = 19  # noqa: E702
    AFFINE = 20; POWF = 21; ELU = 22  # noqa: E702
    ADD = 30; SUB = 31; MUL = 32; DIV = 33; MAXIMUM = 34; MINIMUM = 35  # noqa: E702
    SWIGLU = 36; GEGLU = 37; GEGLU_ERF = 38  # noqa: E702
    EQ = 40; NE = 41; LT = 42; LE = 43; GT = 44; GE = 45  # noqa: E702
    WHERE_COND = 50; TO_DTYPE = 51; CONST_SET = 52; ZEROS = 53  # noqa: E702
    SUM = 60; MIN = 61; MAX = 62; ARGMIN = 63; ARGMAX = 64  # noqa: E702
    COPY_STRIDED = 70; COPY2D = 71  # noqa: E702
    RAND_UNIFORM = 80; RAND_NORMAL = 81  # noqa: E702
    MATMUL = 90; CONV1D = 91; CONV_TRANSPOSE1D = 92; CONV2D = 93  # noqa: E702
    CONV_TRANSPOSE2D = 94; AVG_POOL2D = 95; MAX_POOL2D = 96  # noqa: E702
    UPSAMPLE_NEAREST1D = 97; UPSAMPLE_NEAREST2D = 98; UPSAMPLE_BILINEAR2D = 99  # noqa: E702
    INDEX_SELECT = 100; GATHER = 101; SCATTER_SET = 102; SCATTER_ADD_SET = 103  # noqa: E702
    INDEX_ADD = 104  # noqa: E702
    SOFTMAX_LAST_DIM = 110; RMS_NORM = 111; LAYER_NORM = 112; ROPE = 113  # noqa: E702
    ROPE_I = 114; ROPE_THD = 115; ARG_SORT_LAST_DIM = 116  # noqa: E702
    DEQUANTIZE = 120; QMATMUL = 121; QEMBEDDING = 122  # noqa: E702
    DECODE_ATTENTION = 130; ROPE_KV_APPEND = 131  # noqa: E702
    QUANTIZE_ACT = 132; ADD_RMS_NORM_ACT = 133; QMATMUL_ACT = 134; BINARY_ACT = 135  # noqa: E702


class Backend(IntEnum):
    CPU = 0
    CUDA = 1
    ROCM = 2
    SIMT = 3


class QType(IntEnum):
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    BF16 = 30


class GgufType(IntEnum):
    U8 = 0; I8 = 1; U16 = 2; I16 = 3; U32 = 4; I32 = 5; F32 = 6; BOOL = 7  # noqa: E702
    STRING = 8; ARRAY = 9; U64 = 10; I64 = 11; F64 = 12  # noqa: E702


class Option(IntEnum):
    MATMUL_TF32 = 0
    PORTABLE_GEMM = 1
    DETERMINISTIC = 2
