/* matmul.cu: the portable GEMM's kernels (kernels/gemm.h) for f32, f64 and f8e4m3 (module
 * "matmul"; f8e4m3 reaches only these kernels, no vendor path: docs/semantics.md). */
#include "gemm.h"

GEMM_FMA(f32, WK_DT_F32)
GEMM_FMA(f64, WK_DT_F64)
GEMM_FMA(f8e4m3, WK_DT_F8E4M3)
GEMM_MMA(f8e4m3, WK_DT_F8E4M3)
GEMM_PIPE_F8E4M3
