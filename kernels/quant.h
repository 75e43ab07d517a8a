/* quant.h: device decoders of the GGML block types (ggml-common.h layouts, byte for byte), for
 * kernels/quant.cu. Written from the format, independent of the host decoders of src/core: the
 * kernels cannot include host C headers.
 *
 * The unit every kernel works on is a sub-block: 32 consecutive elements of one block (a whole
 * block of the 32-element types, one eighth of a 256-element K super-block). wk_q<Q>::sub
 * decodes sub-block s of the block at b into wk_qsub: 32 small signed integers q (element e in
 * byte e%4 of word e/4, so 4 of them feed one WK_DP4A) and, per half h (elements 16h..16h+15,
 * the scale groups of Q2_K/Q3_K/Q6_K), a scale dw[h] and, for the types with a min (MIN = 1),
 * an offset mw[h]:   element = dw[h] * q (+ mw[h]).
 * The products are formed in the order of ggml's dequantize_row_* (d * sc first, then times q,
 * then minus the min), so dequantized values are those of the reference bit for bit.
 *
 * Alignment: blocks are packed at 2-byte alignment (Q4_0 is 18 bytes), so data is read through
 * 16-bit loads; the types whose block size is a multiple of 4 (A4) read 32-bit words, which
 * needs the tensor's base address 4-byte aligned (the host checks it). No 4-byte load ever
 * touches an address that is not 4-byte aligned, and nothing outside the block is read. */
#ifndef WK_QUANT_H
#define WK_QUANT_H

#include "gpu.h"

/* Block type ids: the values of wk_qtype (include/wick.h). */
enum {
    WK_Q4_0 = 2, WK_Q4_1 = 3, WK_Q5_0 = 6, WK_Q5_1 = 7, WK_Q8_0 = 8, WK_Q8_1 = 9,
    WK_Q2_K = 10, WK_Q3_K = 11, WK_Q4_K = 12, WK_Q5_K = 13, WK_Q6_K = 14, WK_Q8_K = 15
};

struct wk_qsub {
    uint32_t q[8]; /* 32 signed bytes */
    float dw[2];
    float mw[2];
};

/* ---- byte access */
WK_DEV uint32_t wk_qb(const uint8_t *p, int o) { return p[o]; }
WK_DEV uint32_t wk_qh16(const uint8_t *p, int o) { return *(const uint16_t *)(p + o); }
/* 32-bit little-endian word at byte o (o even): one load when A4, else two 16-bit loads. */
template <bool A4> WK_DEV uint32_t wk_qw(const uint8_t *p, int o)
{
    if (A4)
        return *(const uint32_t *)(p + o);
    return wk_qh16(p, o) | (wk_qh16(p, o + 2) << 16);
}
/* The int8 grid of a block of activations with maximum |x| amax (finite, >= 0), ggml's q8_1
 * rule: d = amax / 127, q = round(x * sc * id). Normally sc = 1 and id = 1 / d. For amax below
 * 2^-60 (blocks of subnormals, where 1 / d overflows) the grid is built on x * 2^64 (sc = 2^64,
 * exact) and d is scaled back, exact unless it lands below f32's normal range (then off by at
 * most 2^-150). Other blocks get exactly the values of the plain rule. */
WK_DEV void wk_q8_grid(float amax, float &d, float &sc, float &id)
{
    const bool tiny = amax < 8.67361738e-19f; /* 2^-60 */
    sc = tiny ? 1.84467441e19f : 1.0f;         /* 2^64 */
    const float ds = (amax * sc) / 127.0f;
    id = amax > 0.0f ? 1.0f / ds : 0.0f;
    d = tiny ? ds * 5.42101086e-20f : ds; /* 2^-64 */
}

WK_DEV float wk_qf16(const uint8_t *p, int o) { return wk_fp_f16_to_f32((uint16_t)wk_qh16(p, o)); }

/* A byte source in registers: the little-endian words v[] of blocks loaded whole (16-byte
 * loads), starting at byte o (even) of them, with the accessors above. Every block type keeps
 * its fields at even offsets, so a word is one register or two halves of neighbours; with the
 * offsets known at compile time (unrolled loops, as in kernels/qmv.cu wk_qmv_v) each access is
 * a register selection and v never lives in memory. */
struct wk_qr {
    const uint32_t *v;
    int o;
};
WK_DEV wk_qr operator+(wk_qr p, int d) { return wk_qr{p.v, p.o + d}; }
WK_DEV uint32_t wk_qb(wk_qr p, int o)
{
    const int a = p.o + o;
    return (p.v[a >> 2] >> (8 * (a & 3))) & 0xFFu;
}
WK_DEV uint32_t wk_qh16(wk_qr p, int o)
{
    const int a = p.o + o;
    return (p.v[a >> 2] >> (8 * (a & 2))) & 0xFFFFu;
}
template <bool A4> WK_DEV uint32_t wk_qw(wk_qr p, int o)
{
    const int a = p.o + o;
    return a & 2 ? (p.v[a >> 2] >> 16) | (p.v[(a >> 2) + 1] << 16) : p.v[a >> 2];
}
/* the f16 at byte o as f32: the GPU's conversion instruction (gpu.h wk_cvt_f16_f32) */
WK_DEV float wk_qf16(wk_qr p, int o) { return wk_cvt_f16_f32(wk_qh16(p, o)); }

/* Bytewise v - c for bytes of v below 128 + c's byte (no borrow crosses bytes): the result
 * bytes are the signed differences. Each byte: v + 128 - c >= 128 - c > 0, then flipping the
 * top bit subtracts 128 again modulo 256. */
WK_DEV uint32_t wk_qsubb(uint32_t v, uint32_t c) { return ((v | 0x80808080u) - c) ^ 0x80808080u; }
/* Bits 0..3 of n to bit 0 of bytes 0..3. */
WK_DEV uint32_t wk_qspread(uint32_t n)
{
    return (n & 1u) | ((n & 2u) << 7) | ((n & 4u) << 14) | ((n & 8u) << 21);
}

WK_DEV void wk_qsame(wk_qsub &o, float d, float m)
{
    o.dw[0] = o.dw[1] = d;
    o.mw[0] = o.mw[1] = m;
}

template <int Q> struct wk_q;

/* Q4_0 (18 bytes): f16 d; qs[16]: element j low nibble of qs[j], j+16 high nibble; (q-8)*d. */
template <> struct wk_q<WK_Q4_0> {
    enum { QK = 32, BYTES = 18, MIN = 0 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        (void)s;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t w = wk_qw<false>(b, 2 + 4 * i);
            o.q[i] = wk_qsubb(w & 0x0F0F0F0Fu, 0x08080808u);
            o.q[4 + i] = wk_qsubb((w >> 4) & 0x0F0F0F0Fu, 0x08080808u);
        }
        wk_qsame(o, wk_qf16(b, 0), 0.0f);
    }
};

/* Q4_1 (20): f16 d, f16 m, qs[16]; q*d + m. */
template <> struct wk_q<WK_Q4_1> {
    enum { QK = 32, BYTES = 20, MIN = 1 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        (void)s;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t w = wk_qw<true>(b, 4 + 4 * i);
            o.q[i] = w & 0x0F0F0F0Fu;
            o.q[4 + i] = (w >> 4) & 0x0F0F0F0Fu;
        }
        wk_qsame(o, wk_qf16(b, 0), wk_qf16(b, 2));
    }
};

/* Q5_0 (22): f16 d, qh (32 bits: bit e = 5th bit of element e), qs[16]; (q-16)*d. */
template <> struct wk_q<WK_Q5_0> {
    enum { QK = 32, BYTES = 22, MIN = 0 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        (void)s;
        const uint32_t qh = wk_qw<false>(b, 2);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t w = wk_qw<false>(b, 6 + 4 * i);
            o.q[i] = wk_qsubb((w & 0x0F0F0F0Fu) | (wk_qspread(qh >> (4 * i)) << 4), 0x10101010u);
            o.q[4 + i] = wk_qsubb(((w >> 4) & 0x0F0F0F0Fu) | (wk_qspread(qh >> (16 + 4 * i)) << 4),
                                  0x10101010u);
        }
        wk_qsame(o, wk_qf16(b, 0), 0.0f);
    }
};

/* Q5_1 (24): f16 d, f16 m, qh, qs[16]; q*d + m. */
template <> struct wk_q<WK_Q5_1> {
    enum { QK = 32, BYTES = 24, MIN = 1 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        (void)s;
        const uint32_t qh = wk_qw<true>(b, 4);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t w = wk_qw<true>(b, 8 + 4 * i);
            o.q[i] = (w & 0x0F0F0F0Fu) | (wk_qspread(qh >> (4 * i)) << 4);
            o.q[4 + i] = ((w >> 4) & 0x0F0F0F0Fu) | (wk_qspread(qh >> (16 + 4 * i)) << 4);
        }
        wk_qsame(o, wk_qf16(b, 0), wk_qf16(b, 2));
    }
};

/* Q8_0 (34): f16 d, int8 qs[32]; q*d. */
template <> struct wk_q<WK_Q8_0> {
    enum { QK = 32, BYTES = 34, MIN = 0 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        (void)s;
#pragma unroll
        for (int i = 0; i < 8; i++)
            o.q[i] = wk_qw<false>(b, 2 + 4 * i);
        wk_qsame(o, wk_qf16(b, 0), 0.0f);
    }
};

/* Q8_1 (36): f16 d, f16 s (= d * sum q, unused here), int8 qs[32]; q*d. */
template <> struct wk_q<WK_Q8_1> {
    enum { QK = 32, BYTES = 36, MIN = 0 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        (void)s;
#pragma unroll
        for (int i = 0; i < 8; i++)
            o.q[i] = wk_qw<true>(b, 4 + 4 * i);
        wk_qsame(o, wk_qf16(b, 0), 0.0f);
    }
};

/* Q2_K (84): scales[16] (low nibble scale, high nibble min, per 16 elements), qs[64], f16 d,
 * f16 dmin. Sub-block s = 4n + j: 2-bit field j of qs[32n + l], l < 32; scale groups 2s, 2s+1
 * (= 8n + 2j + h). element = (d * sc) * q - dmin * m. */
template <> struct wk_q<WK_Q2_K> {
    enum { QK = 256, BYTES = 84, MIN = 1 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        const int n = s >> 2, j = s & 3;
#pragma unroll
        for (int i = 0; i < 8; i++)
            o.q[i] = (wk_qw<true>(b, 16 + 32 * n + 4 * i) >> (2 * j)) & 0x03030303u;
        const float d = wk_qf16(b, 80), dmin = wk_qf16(b, 82);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint32_t sc = wk_qb(b, 2 * s + h);
            o.dw[h] = d * (float)(int)(sc & 0xFu);
            o.mw[h] = -(dmin * (float)(int)(sc >> 4));
        }
    }
};

/* Q3_K (110): hmask[32], qs[64], scales[12] (16 6-bit scales), f16 d. Sub-block s = 4n + j:
 * low 2 bits = field j of qs[32n + l], high bit = bit s of hmask[l] (clear means -4); scale
 * groups 2s + h. element = (d * (sc - 32)) * q. */
template <> struct wk_q<WK_Q3_K> {
    enum { QK = 256, BYTES = 110, MIN = 0 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        const int n = s >> 2, j = s & 3;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const uint32_t lo = (wk_qw<false>(b, 32 + 32 * n + 4 * i) >> (2 * j)) & 0x03030303u;
            const uint32_t hb = (wk_qw<false>(b, 4 * i) >> s) & 0x01010101u;
            o.q[i] = wk_qsubb(lo | (hb << 2), 0x04040404u);
        }
        const float d = wk_qf16(b, 108);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            /* scale t: low 4 bits in scales[t] (t < 8) or its high nibble (scales[t-8]); high
             * 2 bits in field t/4 of scales[8 + t%4]. */
            const int t = 2 * s + h;
            const uint32_t low = t < 8 ? wk_qb(b, 96 + t) & 0xFu : wk_qb(b, 96 + t - 8) >> 4;
            const uint32_t high = (wk_qb(b, 104 + (t & 3)) >> (2 * (t >> 2))) & 3u;
            o.dw[h] = d * (float)((int)(low | (high << 4)) - 32);
            o.mw[h] = 0.0f;
        }
    }
};

/* The 6-bit (scale, min) pair t (0..7) of Q4_K/Q5_K: 12 bytes at sc (memory or wk_qr). */
template <class B> WK_DEV void wk_q_k4(B sc, int t, int &d, int &m)
{
    if (t < 4) {
        d = (int)(wk_qb(sc, t) & 63);
        m = (int)(wk_qb(sc, t + 4) & 63);
    } else {
        d = (int)((wk_qb(sc, t + 4) & 0xF) | ((wk_qb(sc, t - 4) >> 6) << 4));
        m = (int)((wk_qb(sc, t + 4) >> 4) | ((wk_qb(sc, t) >> 6) << 4));
    }
}

/* Q4_K (144): f16 d, f16 dmin, scales[12], qs[128]. Sub-block s = 2g + h: nibble h of
 * qs[32g + l]; element = (d * sc) * q - dmin * m with pair s. */
template <> struct wk_q<WK_Q4_K> {
    enum { QK = 256, BYTES = 144, MIN = 1 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        const int g = s >> 1, h = s & 1;
#pragma unroll
        for (int i = 0; i < 8; i++)
            o.q[i] = (wk_qw<true>(b, 16 + 32 * g + 4 * i) >> (4 * h)) & 0x0F0F0F0Fu;
        int sc, m;
        wk_q_k4(b + 4, s, sc, m);
        wk_qsame(o, wk_qf16(b, 0) * (float)sc, -(wk_qf16(b, 2) * (float)m));
    }
};

/* Q5_K (176): f16 d, f16 dmin, scales[12], qh[32], qs[128]. As Q4_K with the 5th bit = bit s
 * of qh[l]. */
template <> struct wk_q<WK_Q5_K> {
    enum { QK = 256, BYTES = 176, MIN = 1 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        const int g = s >> 1, h = s & 1;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const uint32_t lo = (wk_qw<true>(b, 48 + 32 * g + 4 * i) >> (4 * h)) & 0x0F0F0F0Fu;
            const uint32_t hb = (wk_qw<true>(b, 16 + 4 * i) >> s) & 0x01010101u;
            o.q[i] = lo | (hb << 4);
        }
        int sc, m;
        wk_q_k4(b + 4, s, sc, m);
        wk_qsame(o, wk_qf16(b, 0) * (float)sc, -(wk_qf16(b, 2) * (float)m));
    }
};

/* Q6_K (210): ql[128], qh[64], int8 scales[16], f16 d. Sub-block s = 4n + c: low nibble
 * c/2 of ql[64n + 32(c%2) + l], high 2 bits = field c of qh[32n + l], minus 32; scale
 * scales[8n + 2c + h]. element = (d * sc) * q. */
template <> struct wk_q<WK_Q6_K> {
    enum { QK = 256, BYTES = 210, MIN = 0 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
        const int n = s >> 2, c = s & 3;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const uint32_t lo =
                (wk_qw<false>(b, 64 * n + 32 * (c & 1) + 4 * i) >> (4 * (c >> 1))) & 0x0F0F0F0Fu;
            const uint32_t hi = (wk_qw<false>(b, 128 + 32 * n + 4 * i) >> (2 * c)) & 0x03030303u;
            o.q[i] = wk_qsubb(lo | (hi << 4), 0x20202020u);
        }
        const float d = wk_qf16(b, 208);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            o.dw[h] = d * (float)(int)(signed char)wk_qb(b, 192 + 8 * n + 2 * c + h);
            o.mw[h] = 0.0f;
        }
    }
};

/* Q8_K (292): f32 d, int8 qs[256], int16 bsums[16] (unused here); d * q. */
template <> struct wk_q<WK_Q8_K> {
    enum { QK = 256, BYTES = 292, MIN = 0 };
    WK_DEV void sub(const uint8_t *b, int s, wk_qsub &o)
    {
#pragma unroll
        for (int i = 0; i < 8; i++)
            o.q[i] = wk_qw<true>(b, 4 + 32 * s + 4 * i);
        wk_qsame(o, __uint_as_float(wk_qw<true>(b, 0)), 0.0f);
    }
};

/* Signed byte e (0..31) of a sub-block. */
WK_DEV int wk_qbyte(const wk_qsub &o, int e)
{
    return (int)(signed char)(uint8_t)(o.q[e >> 2] >> (8 * (e & 3)));
}

/* The 32 dequantized values of a sub-block, as ggml's dequantize_row_* computes them. */
template <int Q> WK_DEV void wk_qvals(const wk_qsub &o, float *y)
{
#pragma unroll
    for (int e = 0; e < 32; e++) {
        const int h = e >> 4;
        const float p = o.dw[h] * (float)wk_qbyte(o, e);
        y[e] = wk_q<Q>::MIN ? p + o.mw[h] : p;
    }
}

#endif /* WK_QUANT_H */
