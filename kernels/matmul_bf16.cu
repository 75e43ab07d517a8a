/* matmul_bf16.cu: the portable GEMM's kernels (kernels/gemm.h) for bf16 (module "matmul_bf16"). */
#include "gemm.h"

GEMM_FMA(bf16, WK_DT_BF16)
GEMM_MMA(bf16, WK_DT_BF16)
GEMM_PIPE(bf16, WK_DT_BF16)
GEMM_MFMA(bf16, WK_DT_BF16)
