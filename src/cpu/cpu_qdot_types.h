/* cpu_qdot_types.h: the per-type pieces of the quantized dot product (cpu_qdot.h): the weight
 * codes of a 32-element sub-block and the scales that combine its half dot products, in plain C.
 * Included by the scalar path (cpu_qdot.c) and the SIMD paths (cpu_qdot_avx2.c,
 * cpu_qdot_avx512.c), which take the integer sub-scales from here so every path uses the same
 * numbers. Layouts: src/core/quant_blocks.h. For every type
 *   weight element = d * S * (u - c) + e * N     (S, N per half of the sub-block, u a byte)
 * where u is the unsigned byte the SIMD paths multiply (the q8 types: code + 128), so the dot
 * product of a half with x codes is  S * (sum u x - c * sum x)  + (the min term). */
#ifndef WK_CPU_QDOT_TYPES_H
#define WK_CPU_QDOT_TYPES_H

#include "quant_blocks.h"
#include <math.h>
#include <stdint.h>

/* The block types (their wk_qtype values, as qd_type_of numbers them) that the SIMD paths take;
 * WK_QDOT_CASE is a switch case calling that path's rows_<id>(jb, j0, j1). */
#define WK_QDOT_SIMD_TYPES(X) X(2) X(3) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define WK_QDOT_CASE(id) \
    case id:             \
        rows_##id(jb, j0, j1); \
        break;

/* d and e are read at byte offsets dof / eof of the block: an f16 (q8_k: d an f32), e negated
 * for the K types (e = -dmin); eof < 0: no min term. ints: 0 S = 1 (and N = 1 for the affine
 * q4_1, q5_1), 1 one S, N per sub-block (q4_k, q5_k), 2 one S (and N) per half (q2_k, q3_k,
 * q6_k). sgn: the block stores signed int8 codes (q8 types): u = code + 128, c = 128. */
typedef struct qd_type {
    int sub;  /* 32-element sub-blocks per block */
    int bytes;
    int c;
    int sgn;
    int dof, eof, eneg;
    int ints;
} qd_type;

static inline qd_type qd_type_of(int qt)
{
    switch (qt) {
    case 2: return (qd_type){1, 18, 8, 0, 0, -1, 0, 0};     /* q4_0 */
    case 3: return (qd_type){1, 20, 0, 0, 0, 2, 0, 0};      /* q4_1 */
    case 6: return (qd_type){1, 22, 16, 0, 0, -1, 0, 0};    /* q5_0 */
    case 7: return (qd_type){1, 24, 0, 0, 0, 2, 0, 0};      /* q5_1 */
    case 8: return (qd_type){1, 34, 128, 1, 0, -1, 0, 0};   /* q8_0 */
    case 9: return (qd_type){1, 36, 128, 1, 0, -1, 0, 0};   /* q8_1 */
    case 10: return (qd_type){8, 84, 0, 0, 80, 82, 1, 2};   /* q2_k */
    case 11: return (qd_type){8, 110, 4, 0, 108, -1, 0, 2}; /* q3_k */
    case 12: return (qd_type){8, 144, 0, 0, 0, 2, 1, 1};    /* q4_k */
    case 13: return (qd_type){8, 176, 0, 0, 0, 2, 1, 1};    /* q5_k */
    case 14: return (qd_type){8, 210, 32, 0, 208, -1, 0, 2}; /* q6_k */
    case 15: return (qd_type){8, 292, 128, 1, 0, -1, 0, 0}; /* q8_k */
    default: return (qd_type){0, 0, 0, 0, 0, -1, 0, 0};
    }
}

/* The integer sub-scales S[2] and mins N[2] of sub-block s of the block at b. */
static inline void qd_ints(int qt, const uint8_t *b, int s, int32_t S[2], int32_t N[2])
{
    switch (qt) {
    case 10: /* q2_k: byte 2s + h: scale low nibble, min high nibble */
        for (int h = 0; h < 2; h++)
            S[h] = b[2 * s + h] & 15, N[h] = b[2 * s + h] >> 4;
        break;
    case 11: /* q3_k */
        for (int h = 0; h < 2; h++)
            S[h] = wk_qb_q3_k_scale(b + 96, 2 * s + h), N[h] = 0;
        break;
    case 12:
    case 13: /* q4_k, q5_k */
        S[0] = S[1] = wk_qb_k4_scale(b + 4, s, 0);
        N[0] = N[1] = wk_qb_k4_scale(b + 4, s, 1);
        break;
    case 14: /* q6_k: int8 scales */
        for (int h = 0; h < 2; h++)
            S[h] = wk_qb_i8(b[192 + 2 * s + h]), N[h] = 0;
        break;
    default: /* one scale per block; the affine q4_1, q5_1 add m * sum x */
        S[0] = S[1] = 1;
        N[0] = N[1] = 1;
        break;
    }
}

/* u[0..32) of sub-block s of the block at b (element order). */
static inline void qd_bytes(int qt, const uint8_t *b, int s, uint8_t u[32])
{
    const int h = s >> 2, j = s & 3, g = s >> 1, t = s & 1;
    for (int l = 0; l < 32; l++) {
        int v;
        switch (qt) {
        case 2: v = wk_qb_nib32(b + 2, l); break;
        case 3: v = wk_qb_nib32(b + 4, l); break;
        case 6: v = wk_qb_nib32(b + 6, l) | (int)(((wk_qb_u32(b + 2) >> l) & 1u) << 4); break;
        case 7: v = wk_qb_nib32(b + 8, l) | (int)(((wk_qb_u32(b + 4) >> l) & 1u) << 4); break;
        case 8: v = b[2 + l] ^ 0x80; break;
        case 9: v = b[4 + l] ^ 0x80; break;
        case 10: v = (b[16 + 32 * h + l] >> (2 * j)) & 3; break;
        case 11: v = ((b[32 + 32 * h + l] >> (2 * j)) & 3) | (((b[l] >> s) & 1) << 2); break;
        case 12: v = (b[16 + 32 * g + l] >> (4 * t)) & 15; break;
        case 13: v = ((b[48 + 32 * g + l] >> (4 * t)) & 15) | (((b[16 + l] >> s) & 1) << 4); break;
        case 14:
            v = ((b[64 * h + l + 32 * (j & 1)] >> (4 * (j >> 1))) & 15) |
                (((b[128 + 32 * h + l] >> (2 * j)) & 3) << 4);
            break;
        case 15: v = b[4 + 32 * s + l] ^ 0x80; break;
        default: v = 0; break;
        }
        u[l] = (uint8_t)v;
    }
}

/* Step 3 of cpu_qdot.h for one output and sub-block: acc after the sub-block's terms, from the
 * exact half dot products is0, is1 (with the c correction), the x half sums xh0, xh1, the block's
 * F * K products dS0, dS1 (d * S) and eN0, eN1 (e * N), and the x block scale dx. The SIMD paths
 * do exactly these operations lane by lane. */
static inline float qd_terms(const qd_type *ty, float acc, int32_t is0, int32_t is1, int32_t xh0,
                             int32_t xh1, float dS0, float dS1, float eN0, float eN1, float dx)
{
    if (ty->ints == 2) {
        acc = fmaf((float)is0, dS0 * dx, acc);
        acc = fmaf((float)is1, dS1 * dx, acc);
    } else {
        acc = fmaf((float)(is0 + is1), dS0 * dx, acc);
    }
    if (ty->eof >= 0) {
        if (ty->ints == 2) {
            acc = fmaf((float)xh0, eN0 * dx, acc);
            acc = fmaf((float)xh1, eN1 * dx, acc);
        } else {
            acc = fmaf((float)(xh0 + xh1), eN0 * dx, acc);
        }
    }
    return acc;
}

/* The raw 32-byte fields of a K-type block (q2_k .. q6_k) that its sub-blocks' bytes come from,
 * as the SIMD paths transpose them: their byte offsets (off) and count. */
static inline int qd_kfields(int qt, int off[6])
{
    switch (qt) {
    case 10: off[0] = 16, off[1] = 48; return 2;                         /* q2_k: qs */
    case 11: off[0] = 32, off[1] = 64, off[2] = 0; return 3;             /* q3_k: qs, hmask */
    case 12: off[0] = 16, off[1] = 48, off[2] = 80, off[3] = 112; return 4; /* q4_k: qs */
    case 13: /* q5_k: qs, qh */
        off[0] = 48, off[1] = 80, off[2] = 112, off[3] = 144, off[4] = 16;
        return 5;
    default: /* q6_k: ql, qh */
        off[0] = 0, off[1] = 32, off[2] = 64, off[3] = 96, off[4] = 128, off[5] = 160;
        return 6;
    }
}

/* The float scales d and e of the block at b (e = 0 when the type has no min term). */
static inline void qd_floats(const qd_type *ty, const uint8_t *b, float *d, float *e)
{
    *d = ty->sgn && ty->sub == 8 ? wk_fp_from_bits(wk_qb_u32(b)) : wk_qb_f16(b + ty->dof);
    *e = 0.0f;
    if (ty->eof >= 0)
        *e = ty->eneg ? -wk_qb_f16(b + ty->eof) : wk_qb_f16(b + ty->eof);
}

#endif
