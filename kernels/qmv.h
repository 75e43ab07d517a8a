/* qmv.h: word-wise access to the GGML block types for the matrix-vector kernels of
 * kernels/qmv.cu. Same layouts and values as wk_q<Q>::sub of quant.h, but addressable one
 * 32-bit word at a time, so several threads can share one sub-block (each decoding only the
 * words it multiplies) and the compiler keeps every value in a register:
 * b is a byte pointer or a wk_qr (quant.h: blocks held in registers).
 *   wk_qp<Q>::qi(b, s, i)          word i (0..7: elements 4i..4i+3, byte e%4) of sub-block s of
 *                                  the block at b, as 4 signed bytes
 *   wk_qp<Q>::sc(b, s, h, d, m)    scale d and offset m (0 for the types without a min) of half
 *                                  h (words 4h..4h+3) of sub-block s: element = d * q + m
 * The scale products are formed as in quant.h (d * sc first), so a full dot product is the
 * same sum as with wk_q<Q>::sub. */
#ifndef WK_QMV_H
#define WK_QMV_H

#include "quant.h"

template <int Q> struct wk_qp;

template <> struct wk_qp<WK_Q4_0> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        (void)s;
        const uint32_t w = wk_qw<false>(b, 2 + 4 * (i & 3));
        return wk_qsubb(i < 4 ? w & 0x0F0F0F0Fu : (w >> 4) & 0x0F0F0F0Fu, 0x08080808u);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)s, (void)h;
        d = wk_qf16(b, 0);
        m = 0.0f;
    }
};

template <> struct wk_qp<WK_Q4_1> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        (void)s;
        const uint32_t w = wk_qw<true>(b, 4 + 4 * (i & 3));
        return i < 4 ? w & 0x0F0F0F0Fu : (w >> 4) & 0x0F0F0F0Fu;
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)s, (void)h;
        d = wk_qf16(b, 0);
        m = wk_qf16(b, 2);
    }
};

/* Q5_0/Q5_1: the 5th bits of word i are bits 4i..4i+3 of qh for both nibble halves (elements
 * 4i..4i+3 for i < 4, 16 + 4(i-4).. for i >= 4). */
template <> struct wk_qp<WK_Q5_0> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        (void)s;
        const uint32_t qh = wk_qw<false>(b, 2), w = wk_qw<false>(b, 6 + 4 * (i & 3));
        const uint32_t lo = i < 4 ? w & 0x0F0F0F0Fu : (w >> 4) & 0x0F0F0F0Fu;
        return wk_qsubb(lo | (wk_qspread(qh >> (4 * i)) << 4), 0x10101010u);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)s, (void)h;
        d = wk_qf16(b, 0);
        m = 0.0f;
    }
};

template <> struct wk_qp<WK_Q5_1> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        (void)s;
        const uint32_t qh = wk_qw<true>(b, 4), w = wk_qw<true>(b, 8 + 4 * (i & 3));
        const uint32_t lo = i < 4 ? w & 0x0F0F0F0Fu : (w >> 4) & 0x0F0F0F0Fu;
        return lo | (wk_qspread(qh >> (4 * i)) << 4);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)s, (void)h;
        d = wk_qf16(b, 0);
        m = wk_qf16(b, 2);
    }
};

template <> struct wk_qp<WK_Q8_0> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        (void)s;
        return wk_qw<false>(b, 2 + 4 * i);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)s, (void)h;
        d = wk_qf16(b, 0);
        m = 0.0f;
    }
};

template <> struct wk_qp<WK_Q8_1> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        (void)s;
        return wk_qw<true>(b, 4 + 4 * i);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)s, (void)h;
        d = wk_qf16(b, 0);
        m = 0.0f;
    }
};

template <> struct wk_qp<WK_Q2_K> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        return (wk_qw<true>(b, 16 + 32 * (s >> 2) + 4 * i) >> (2 * (s & 3))) & 0x03030303u;
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        const uint32_t c = wk_qb(b, 2 * s + h);
        d = wk_qf16(b, 80) * (float)(int)(c & 0xFu);
        m = -(wk_qf16(b, 82) * (float)(int)(c >> 4));
    }
};

template <> struct wk_qp<WK_Q3_K> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        const uint32_t lo = (wk_qw<false>(b, 32 + 32 * (s >> 2) + 4 * i) >> (2 * (s & 3))) &
                            0x03030303u;
        const uint32_t hb = (wk_qw<false>(b, 4 * i) >> s) & 0x01010101u;
        return wk_qsubb(lo | (hb << 2), 0x04040404u);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        const int t = 2 * s + h;
        const uint32_t low = t < 8 ? wk_qb(b, 96 + t) & 0xFu : wk_qb(b, 96 + t - 8) >> 4;
        const uint32_t high = (wk_qb(b, 104 + (t & 3)) >> (2 * (t >> 2))) & 3u;
        d = wk_qf16(b, 108) * (float)((int)(low | (high << 4)) - 32);
        m = 0.0f;
    }
};

template <> struct wk_qp<WK_Q4_K> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        return (wk_qw<true>(b, 16 + 32 * (s >> 1) + 4 * i) >> (4 * (s & 1))) & 0x0F0F0F0Fu;
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)h;
        int sv, mv;
        wk_q_k4(b + 4, s, sv, mv);
        d = wk_qf16(b, 0) * (float)sv;
        m = -(wk_qf16(b, 2) * (float)mv);
    }
};

template <> struct wk_qp<WK_Q5_K> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        const uint32_t lo = (wk_qw<true>(b, 48 + 32 * (s >> 1) + 4 * i) >> (4 * (s & 1))) &
                            0x0F0F0F0Fu;
        const uint32_t hb = (wk_qw<true>(b, 16 + 4 * i) >> s) & 0x01010101u;
        return lo | (hb << 4);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)h;
        int sv, mv;
        wk_q_k4(b + 4, s, sv, mv);
        d = wk_qf16(b, 0) * (float)sv;
        m = -(wk_qf16(b, 2) * (float)mv);
    }
};

template <> struct wk_qp<WK_Q6_K> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        const int n = s >> 2, c = s & 3;
        const uint32_t lo =
            (wk_qw<false>(b, 64 * n + 32 * (c & 1) + 4 * i) >> (4 * (c >> 1))) & 0x0F0F0F0Fu;
        const uint32_t hi = (wk_qw<false>(b, 128 + 32 * n + 4 * i) >> (2 * c)) & 0x03030303u;
        return wk_qsubb(lo | (hi << 4), 0x20202020u);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        d = wk_qf16(b, 208) * (float)(int)(signed char)wk_qb(b, 192 + 8 * (s >> 2) + 2 * (s & 3) + h);
        m = 0.0f;
    }
};

template <> struct wk_qp<WK_Q8_K> {
    template <class B> WK_DEV uint32_t qi(B b, int s, int i)
    {
        return wk_qw<true>(b, 4 + 32 * s + 4 * i);
    }
    template <class B> WK_DEV void sc(B b, int s, int h, float &d, float &m)
    {
        (void)s, (void)h;
        d = __uint_as_float(wk_qw<true>(b, 0));
        m = 0.0f;
    }
};

#endif /* WK_QMV_H */
