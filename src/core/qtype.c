/* qtype.c: the facts of the GGML tensor types (wk_qtype): names, block sizes. The byte counts
 * are those of ggml's block structs (ggml-common.h), which GGUF files store verbatim. */
#include "wk_core.h"

typedef struct qtype_fact {
    const char *name;
    int64_t elems, bytes;
} qtype_fact;

static const qtype_fact facts[WK_QTYPE_LIMIT] = {
    [WK_QTYPE_F32] = {"f32", 1, 4},
    [WK_QTYPE_F16] = {"f16", 1, 2},
    [WK_QTYPE_Q4_0] = {"q4_0", 32, 2 + 16},          /* d, 32 x 4-bit */
    [WK_QTYPE_Q4_1] = {"q4_1", 32, 2 + 2 + 16},      /* d, m, 32 x 4-bit */
    [WK_QTYPE_Q5_0] = {"q5_0", 32, 2 + 4 + 16},      /* d, high bits, low nibbles */
    [WK_QTYPE_Q5_1] = {"q5_1", 32, 2 + 2 + 4 + 16},  /* d, m, high bits, low nibbles */
    [WK_QTYPE_Q8_0] = {"q8_0", 32, 2 + 32},          /* d, 32 x int8 */
    [WK_QTYPE_Q8_1] = {"q8_1", 32, 2 + 2 + 32},      /* d, s = d * sum(q), 32 x int8 */
    [WK_QTYPE_Q2_K] = {"q2_k", 256, 16 + 64 + 2 + 2},         /* scales, qs, d, dmin */
    [WK_QTYPE_Q3_K] = {"q3_k", 256, 32 + 64 + 12 + 2},        /* hmask, qs, scales, d */
    [WK_QTYPE_Q4_K] = {"q4_k", 256, 2 + 2 + 12 + 128},        /* d, dmin, scales, qs */
    [WK_QTYPE_Q5_K] = {"q5_k", 256, 2 + 2 + 12 + 32 + 128},   /* d, dmin, scales, qh, qs */
    [WK_QTYPE_Q6_K] = {"q6_k", 256, 128 + 64 + 16 + 2},       /* ql, qh, scales, d */
    [WK_QTYPE_Q8_K] = {"q8_k", 256, 4 + 256 + 2 * 16},        /* f32 d, qs, bsums */
    [WK_QTYPE_BF16] = {"bf16", 1, 2},
};

static const qtype_fact *fact(wk_qtype qt)
{
    return (unsigned)qt < WK_QTYPE_LIMIT && facts[qt].name ? &facts[qt] : NULL;
}

const char *wk_qtype_name(wk_qtype qt) { return fact(qt) ? fact(qt)->name : "?"; }
int64_t wk_qtype_block_elems(wk_qtype qt) { return fact(qt) ? fact(qt)->elems : 0; }
int64_t wk_qtype_block_bytes(wk_qtype qt) { return fact(qt) ? fact(qt)->bytes : 0; }
