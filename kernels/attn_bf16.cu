/* attn_bf16.cu: decode attention (kernels/attn.h) for bf16 queries; module "attn_bf16". */
#include "attn.h"

#ifdef ATTN_MMA /* the matrix-unit kernels: not compiled for AMD */
ATTN_MMA(bf16, 1, 1) ATTN_MMA(bf16, 1, 2) ATTN_MMA(bf16, 1, 3) ATTN_MMA(bf16, 1, 4)
#endif
ATTN_KV(bf16, WK_DT_BF16)
