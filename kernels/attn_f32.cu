/* attn_f32.cu: decode attention (kernels/attn.h) for f32 queries; module "attn_f32". */
#include "attn.h"

ATTN_KV(f32, WK_DT_F32)
