/* ref_attn.h: the float64 reference of wk_decode_attention (ref_attn.c). */
#ifndef WK_REF_ATTN_H
#define WK_REF_ATTN_H

#include "wick.h"

/* out (B, Hq, Lq, D) contiguous of qdt; q, k, v through their layouts (rank 4, offsets
 * included); the rules of wk_decode_attention (include/wick.h), arguments assumed valid. */
wk_status ref_decode_attention(void *out, wk_dtype qdt, wk_dtype kvdt, const void *q,
                               const wk_layout *lq, const void *k, const wk_layout *lk,
                               const void *v, const wk_layout *lv, double scale, int causal);

#endif
