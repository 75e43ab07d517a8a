/* quant_blocks.h: the GGML block formats (byte-compatible with llama.cpp's ggml-common.h) and the
 * scalar decode of one element of one block, written once in plain C so that the CPU backend
 * (src/cpu/cpu_quant.c) and the GPU kernels (kernels/, through kernels/gpu.h) decode identically.
 * Includes nothing but fpconv.h (which supplies WK_FP_FN: static inline on the host,
 * __host__ __device__ in kernels) and stdint.h.
 *
 * Every field is read byte by byte (little-endian, as GGUF stores it), so a block may start at any
 * byte address. Byte offsets inside a block (QK = 32 for the small types, QK_K = 256 for K):
 *   q4_0 (18 B):  d f16 @0, qs[16] @2         e<16: lo nibble of qs[e]; e>=16: hi nibble of qs[e-16]
 *   q4_1 (20 B):  d @0, m @2, qs[16] @4       same nibbles
 *   q5_0 (22 B):  d @0, qh[4] @2, qs[16] @6   + 5th bit = bit e of the 32-bit little-endian qh
 *   q5_1 (24 B):  d @0, m @2, qh[4] @4, qs[16] @8
 *   q8_0 (34 B):  d @0, int8 qs[32] @2
 *   q8_1 (36 B):  d @0, s @2 (= d * sum qs, unused by decode), int8 qs[32] @4
 *   q2_k (84 B):  scales[16] @0 (lo nibble scale, hi nibble min), qs[64] @16, d @80, dmin @82
 *   q3_k (110 B): hmask[32] @0, qs[64] @32, scales[12] @96 (16 x 6 bits), d @108
 *   q4_k (144 B): d @0, dmin @2, scales[12] @4 (8 scales + 8 mins, 6 bits), qs[128] @16
 *   q5_k (176 B): d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48
 *   q6_k (210 B): ql[128] @0, qh[64] @128, int8 scales[16] @192, d @208
 *   q8_k (292 B): d f32 @0, int8 qs[256] @4, int16 bsums[16] @260 (unused by decode)
 *   f32 / f16 / bf16: "blocks" of one element.
 *
 * The value of every element is an exact product/difference of small integers and the f16 (or
 * f32) scales, rounded ONCE to f32: each formula below is ordered so that every intermediate is
 * exact in f32 (e.g. d * sc has at most 11 + 8 significant bits) and only the last operation
 * rounds. So every backend (no FMA contraction: -ffp-contract=off, nvcc -fmad=false) produces the
 * same f32 bits, and f16/bf16 outputs are that f32 rounded once more (docs/semantics.md). */
#ifndef WK_QUANT_BLOCKS_H
#define WK_QUANT_BLOCKS_H

#include "fpconv.h"
#if !(defined(__CUDACC__) || defined(__HIPCC__) || defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__))
#include <stdint.h>
#endif

/* X(QTYPE suffix, lower-case name, wk_qtype id, elements per block, bytes per block), the 15
 * wk_qtype values (ids repeated here because kernels cannot include wick.h). The numbers equal
 * wk_qtype_block_elems / wk_qtype_block_bytes (src/core/qtype.c; tests/test_quant_kat.c checks). */
#define WK_QBLOCK_LIST(X)         \
    X(F32, f32, 0, 1, 4)          \
    X(F16, f16, 1, 1, 2)          \
    X(BF16, bf16, 30, 1, 2)       \
    X(Q4_0, q4_0, 2, 32, 18)      \
    X(Q4_1, q4_1, 3, 32, 20)      \
    X(Q5_0, q5_0, 6, 32, 22)      \
    X(Q5_1, q5_1, 7, 32, 24)      \
    X(Q8_0, q8_0, 8, 32, 34)      \
    X(Q8_1, q8_1, 9, 32, 36)      \
    X(Q2_K, q2_k, 10, 256, 84)    \
    X(Q3_K, q3_k, 11, 256, 110)   \
    X(Q4_K, q4_k, 12, 256, 144)   \
    X(Q5_K, q5_k, 13, 256, 176)   \
    X(Q6_K, q6_k, 14, 256, 210)   \
    X(Q8_K, q8_k, 15, 256, 292)

/* ---- field readers (little-endian bytes) */
WK_FP_FN uint32_t wk_qb_u16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }
WK_FP_FN float wk_qb_f16(const uint8_t *p) { return wk_fp_f16_to_f32((uint16_t)wk_qb_u16(p)); }
WK_FP_FN uint32_t wk_qb_u32(const uint8_t *p) { return wk_qb_u16(p) | (wk_qb_u16(p + 2) << 16); }
WK_FP_FN int wk_qb_i8(uint8_t v) { return v < 128u ? (int)v : (int)v - 256; }

/* ---- element e of one block at b, as f32 */
WK_FP_FN float wk_qb_f32_elem(const uint8_t *b, int e) { return wk_fp_from_bits(wk_qb_u32(b + 4 * e)); }
WK_FP_FN float wk_qb_f16_elem(const uint8_t *b, int e) { return wk_qb_f16(b + 2 * e); }
WK_FP_FN float wk_qb_bf16_elem(const uint8_t *b, int e)
{
    return wk_fp_bf16_to_f32((uint16_t)wk_qb_u16(b + 2 * e));
}

/* 4-bit code of element e (0..31) from 16 bytes of nibbles: e < 16 low nibbles, then high. */
WK_FP_FN int wk_qb_nib32(const uint8_t *qs, int e)
{
    return e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
}

/* q4_0: (q - 8) * d, q in 0..15 */
WK_FP_FN float wk_qb_q4_0_elem(const uint8_t *b, int e)
{
    return (float)(wk_qb_nib32(b + 2, e) - 8) * wk_qb_f16(b);
}
/* q4_1: q * d + m */
WK_FP_FN float wk_qb_q4_1_elem(const uint8_t *b, int e)
{
    return (float)wk_qb_nib32(b + 4, e) * wk_qb_f16(b) + wk_qb_f16(b + 2);
}
/* q5_0: (q - 16) * d, q = nibble | bit e of qh << 4 */
WK_FP_FN float wk_qb_q5_0_elem(const uint8_t *b, int e)
{
    int q = wk_qb_nib32(b + 6, e) | (int)(((wk_qb_u32(b + 2) >> e) & 1u) << 4);
    return (float)(q - 16) * wk_qb_f16(b);
}
/* q5_1: q * d + m */
WK_FP_FN float wk_qb_q5_1_elem(const uint8_t *b, int e)
{
    int q = wk_qb_nib32(b + 8, e) | (int)(((wk_qb_u32(b + 4) >> e) & 1u) << 4);
    return (float)q * wk_qb_f16(b) + wk_qb_f16(b + 2);
}
/* q8_0, q8_1: q * d */
WK_FP_FN float wk_qb_q8_0_elem(const uint8_t *b, int e)
{
    return (float)wk_qb_i8(b[2 + e]) * wk_qb_f16(b);
}
WK_FP_FN float wk_qb_q8_1_elem(const uint8_t *b, int e)
{
    return (float)wk_qb_i8(b[4 + e]) * wk_qb_f16(b);
}

/* q2_k: element e = 128*h + 32*j + l (h < 2, j < 4, l < 32): 2-bit q = bits 2j of qs[32h + l];
 * sub-block s = 8h + 2j + l/16 with scales[s] = sc | mn << 4; value (d*sc)*q - dmin*mn. */
WK_FP_FN float wk_qb_q2_k_elem(const uint8_t *b, int e)
{
    const int h = e >> 7, j = (e >> 5) & 3, l = e & 31;
    const int q = (b[16 + 32 * h + l] >> (2 * j)) & 3;
    const int s = b[8 * h + 2 * j + (l >> 4)];
    const float dl = wk_qb_f16(b + 80) * (float)(s & 15);
    const float ml = wk_qb_f16(b + 82) * (float)(s >> 4);
    return dl * (float)q - ml;
}

/* 6-bit scale i (0..15) of q3_k, unbiased (-32..31): low 4 bits from scales[i] (i < 8) or the
 * high nibble of scales[i-8]; high 2 bits at bits 2*(i/4) of scales[8 + i%4]. */
WK_FP_FN int wk_qb_q3_k_scale(const uint8_t *sc, int i)
{
    const int lo = i < 8 ? (sc[i] & 15) : (sc[i - 8] >> 4);
    const int hi = (sc[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
    return (lo | (hi << 4)) - 32;
}
/* q3_k: e = 128*h + 32*j + l: low 2 bits as q2_k (qs at 32), the third bit is bit 4h + j of
 * hmask[l]; q = low - (bit ? 0 : 4) in -4..3; value (d*sc)*q, sc from sub-block 8h + 2j + l/16. */
WK_FP_FN float wk_qb_q3_k_elem(const uint8_t *b, int e)
{
    const int h = e >> 7, j = (e >> 5) & 3, l = e & 31;
    const int lo = (b[32 + 32 * h + l] >> (2 * j)) & 3;
    const int q = lo - (((b[l] >> (4 * h + j)) & 1) ? 0 : 4);
    const float dl = wk_qb_f16(b + 108) * (float)wk_qb_q3_k_scale(b + 96, 8 * h + 2 * j + (l >> 4));
    return dl * (float)q;
}

/* 6-bit scale (what = 0) or min (what = 1) of sub-block j (0..7) of q4_k / q5_k, packed in 12
 * bytes: j < 4: low 6 bits of sc[j] (scale) / sc[j+4] (min); j >= 4: low nibble from sc[j+4]
 * (scale: its low nibble, min: its high nibble) and high 2 bits from the top of sc[j-4] (scale)
 * or sc[j] (min). */
WK_FP_FN int wk_qb_k4_scale(const uint8_t *sc, int j, int what)
{
    if (j < 4)
        return sc[j + 4 * what] & 63;
    const int lo = what ? (sc[j + 4] >> 4) : (sc[j + 4] & 15);
    const int hi = sc[j - 4 + 4 * what] >> 6;
    return lo | (hi << 4);
}
/* q4_k: e = 64*g + 32*t + l (g < 4, t < 2): q = nibble t of qs[32g + l]; sub-block 2g + t;
 * value (d*sc)*q - dmin*mn. */
WK_FP_FN float wk_qb_q4_k_elem(const uint8_t *b, int e)
{
    const int g = e >> 6, t = (e >> 5) & 1, l = e & 31;
    const int q = (b[16 + 32 * g + l] >> (4 * t)) & 15;
    const float dl = wk_qb_f16(b) * (float)wk_qb_k4_scale(b + 4, 2 * g + t, 0);
    const float ml = wk_qb_f16(b + 2) * (float)wk_qb_k4_scale(b + 4, 2 * g + t, 1);
    return dl * (float)q - ml;
}
/* q5_k: as q4_k with qs at 48 and a fifth bit: bit 2g + t of qh[l] (qh at 16). */
WK_FP_FN float wk_qb_q5_k_elem(const uint8_t *b, int e)
{
    const int g = e >> 6, t = (e >> 5) & 1, l = e & 31;
    const int q = ((b[48 + 32 * g + l] >> (4 * t)) & 15) | (((b[16 + l] >> (2 * g + t)) & 1) << 4);
    const float dl = wk_qb_f16(b) * (float)wk_qb_k4_scale(b + 4, 2 * g + t, 0);
    const float ml = wk_qb_f16(b + 2) * (float)wk_qb_k4_scale(b + 4, 2 * g + t, 1);
    return dl * (float)q - ml;
}
/* q6_k: e = 128*h + 32*j + l (j < 4): low nibble from ql[64h + l + 32*(j&1)], the low nibble
 * for j < 2 and the high one for j >= 2; high 2 bits at bits 2j of qh[32h + l]; q - 32 in
 * -32..31; int8 scale sc[8h + 2j + l/16]; value (d*sc)*(q - 32). */
WK_FP_FN float wk_qb_q6_k_elem(const uint8_t *b, int e)
{
    const int h = e >> 7, j = (e >> 5) & 3, l = e & 31;
    const int lo = (b[64 * h + l + 32 * (j & 1)] >> (4 * (j >> 1))) & 15;
    const int hi = (b[128 + 32 * h + l] >> (2 * j)) & 3;
    const float dl = wk_qb_f16(b + 208) * (float)wk_qb_i8(b[192 + 8 * h + 2 * j + (l >> 4)]);
    return dl * (float)((lo | (hi << 4)) - 32);
}
/* q8_k: q * d with an f32 d */
WK_FP_FN float wk_qb_q8_k_elem(const uint8_t *b, int e)
{
    return (float)wk_qb_i8(b[4 + e]) * wk_fp_from_bits(wk_qb_u32(b));
}

/* The int8 grid of a block of 32 activations with maximum |x| amax (finite, >= 0), for the
 * quantized dot products (ggml's q8 rule): d = amax / 127, code = round(x * sc * id), half away
 * from zero, clamped to +-127. Normally sc = 1 and id = 1 / d. For amax below 2^-60 (blocks of
 * subnormals, where 1 / d overflows) the grid is built on x * 2^64 (sc = 2^64, exact) and d is
 * scaled back. The same operations as wk_q8_grid of kernels/quant.h (the GPU's), so the CPU
 * (src/cpu/cpu_qdot.c) and the GPUs grid x identically. g[0] = d, g[1] = sc, g[2] = id. */
WK_FP_FN void wk_qb_q8_grid(float amax, float *g)
{
    const int tiny = amax < 8.67361738e-19f; /* 2^-60 */
    const float sc = tiny ? 1.84467441e19f : 1.0f; /* 2^64 */
    const float ds = (amax * sc) / 127.0f;
    g[0] = tiny ? ds * 5.42101086e-20f : ds; /* 2^-64 */
    g[1] = sc;
    g[2] = amax > 0.0f ? 1.0f / ds : 0.0f;
}

/* Element e of the block at b of type qt (a wk_qtype value); 0 for an unknown type (the front
 * end never passes one). */
#define WK_QB_CASE_ELEM(E, n, id, el, by) case id: return wk_qb_##n##_elem(b, e);
WK_FP_FN float wk_qb_elem(int qt, const uint8_t *b, int e)
{
    switch (qt) {
    WK_QBLOCK_LIST(WK_QB_CASE_ELEM)
    default: return 0.0f;
    }
}
#undef WK_QB_CASE_ELEM

/* Block geometry by wk_qtype value (0 for an unknown type): elements and bytes per block. */
#define WK_QB_CASE_ELEMS(E, n, id, el, by) case id: return el;
#define WK_QB_CASE_BYTES(E, n, id, el, by) case id: return by;
WK_FP_FN int wk_qb_block_elems(int qt)
{
    switch (qt) {
    WK_QBLOCK_LIST(WK_QB_CASE_ELEMS)
    default: return 0;
    }
}
WK_FP_FN int wk_qb_block_bytes(int qt)
{
    switch (qt) {
    WK_QBLOCK_LIST(WK_QB_CASE_BYTES)
    default: return 0;
    }
}
#undef WK_QB_CASE_ELEMS
#undef WK_QB_CASE_BYTES

#endif /* WK_QUANT_BLOCKS_H */
