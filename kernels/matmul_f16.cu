/* matmul_f16.cu: the portable GEMM's kernels (kernels/gemm.h) for f16 (module "matmul_f16"). */
#include "gemm.h"

GEMM_FMA(f16, WK_DT_F16)
GEMM_MMA(f16, WK_DT_F16)
GEMM_PIPE(f16, WK_DT_F16)
GEMM_MFMA(f16, WK_DT_F16)
