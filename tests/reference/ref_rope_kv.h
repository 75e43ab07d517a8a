/* ref_rope_kv.h: the float64 reference of wk_rope_kv_append (ref_rope_kv.c). */
#ifndef WK_REF_ROPE_KV_H
#define WK_REF_ROPE_KV_H

#include "wick.h"
#include <stdint.h>

/* The inputs of one call, as wk_rope_kv_append takes them (host copies of the storages). */
typedef struct ref_rope_kv_in {
    wk_dtype dt;            /* q, k and v */
    wk_dtype cdt;           /* kc, vc and out */
    wk_dtype tdt;           /* cos and sin: dt or f32 */
    int interleaved;        /* 1: pairs (2i, 2i + 1); 0: halves (i, i + D/2) */
    const void *q, *k, *v, *cos, *sin;
    const wk_layout *lq, *lk, *lv, *lc, *ls;
    const uint32_t *pos;    /* p_b = pos[b] through lp, or NULL: p_b = start */
    const wk_layout *lp;
    int64_t start;
} ref_rope_kv_in;

/* out (B, Hq, T, D) contiguous of cdt = rope(q); kc and vc: the whole cache storages (cdt),
 * written in place through lkc / lvc at rows p_b .. p_b + T - 1 of every (b, h): rope(k) and v.
 * The rules of docs/semantics.md ("Rope and the KV cache"): WK_ERR_SHAPE for shapes it rejects,
 * WK_ERR_INDEX_OUT_OF_RANGE for a position range past the tables or the cache; on an error nothing
 * is written. Dtypes are assumed valid. */
wk_status ref_rope_kv_append(void *out, void *kc, const wk_layout *lkc, void *vc,
                             const wk_layout *lvc, const ref_rope_kv_in *in);

#endif
