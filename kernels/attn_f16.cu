/* attn_f16.cu: decode attention (kernels/attn.h) for f16 queries; module "attn_f16". */
#include "attn.h"

#ifdef ATTN_MMA /* the matrix-unit kernels: not compiled for AMD */
ATTN_MMA(f16, 0, 1) ATTN_MMA(f16, 0, 2) ATTN_MMA(f16, 0, 3) ATTN_MMA(f16, 0, 4)
#endif
ATTN_KV(f16, WK_DT_F16)
