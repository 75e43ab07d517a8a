/* ref_quant.c: the float64 reference decoder of the GGML block types and the quantized ops
 * (see ref_quant.h). Written from the block layouts of ggml-common.h as documented in
 * docs/semantics.md, in ggml's dequantize_row_* loop order, independently of the library. */
#include "ref_quant.h"
#include "ref.h"
#include <stdlib.h>
#include <string.h>

int64_t ref_qblock_elems(wk_qtype qt)
{
    switch (qt) {
    case WK_QTYPE_F32: case WK_QTYPE_F16: case WK_QTYPE_BF16: return 1;
    case WK_QTYPE_Q4_0: case WK_QTYPE_Q4_1: case WK_QTYPE_Q5_0: case WK_QTYPE_Q5_1:
    case WK_QTYPE_Q8_0: case WK_QTYPE_Q8_1: return 32;
    case WK_QTYPE_Q2_K: case WK_QTYPE_Q3_K: case WK_QTYPE_Q4_K: case WK_QTYPE_Q5_K:
    case WK_QTYPE_Q6_K: case WK_QTYPE_Q8_K: return 256;
    }
    return 0;
}

int64_t ref_qblock_bytes(wk_qtype qt)
{
    switch (qt) {
    case WK_QTYPE_F32: return 4;
    case WK_QTYPE_F16: case WK_QTYPE_BF16: return 2;
    case WK_QTYPE_Q4_0: return 2 + 16;
    case WK_QTYPE_Q4_1: return 2 + 2 + 16;
    case WK_QTYPE_Q5_0: return 2 + 4 + 16;
    case WK_QTYPE_Q5_1: return 2 + 2 + 4 + 16;
    case WK_QTYPE_Q8_0: return 2 + 32;
    case WK_QTYPE_Q8_1: return 2 + 2 + 32;
    case WK_QTYPE_Q2_K: return 16 + 64 + 2 + 2;
    case WK_QTYPE_Q3_K: return 32 + 64 + 12 + 2;
    case WK_QTYPE_Q4_K: return 2 + 2 + 12 + 128;
    case WK_QTYPE_Q5_K: return 2 + 2 + 12 + 32 + 128;
    case WK_QTYPE_Q6_K: return 128 + 64 + 16 + 2;
    case WK_QTYPE_Q8_K: return 4 + 256 + 32;
    }
    return 0;
}

static double f16_at(const unsigned char *p) { return ref_load_f(WK_DTYPE_F16, p, 0); }
static int s8(unsigned char v) { return (int)(signed char)v; }

/* ggml's get_scale_min_k4: 6-bit scale and min j of the 12 packed bytes q. */
static void scale_min_k4(int j, const unsigned char *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* The 16 signed 6-bit scales of q3_k, unpacked through 32-bit words as ggml does. */
static void q3k_scales(int *out, const unsigned char *s12)
{
    uint32_t aux[4];
    const uint32_t km1 = 0x03030303u, km2 = 0x0f0f0f0fu;
    memcpy(aux, s12, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & km2) | (((tmp >> 4) & km1) << 4);
    aux[3] = ((aux[1] >> 4) & km2) | (((tmp >> 6) & km1) << 4);
    aux[0] = (aux[0] & km2) | (((tmp >> 0) & km1) << 4);
    aux[1] = (aux[1] & km2) | (((tmp >> 2) & km1) << 4);
    unsigned char bytes[16];
    memcpy(bytes, aux, 16); /* little-endian host */
    for (int i = 0; i < 16; i++)
        out[i] = (int)bytes[i] - 32;
}

/* Exact values (before the f32 rounding). */
static void decode_exact(double *y, wk_qtype qt, const unsigned char *b)
{
    switch (qt) {
    case WK_QTYPE_F32: y[0] = ref_load_f(WK_DTYPE_F32, b, 0); break;
    case WK_QTYPE_F16: y[0] = ref_load_f(WK_DTYPE_F16, b, 0); break;
    case WK_QTYPE_BF16: y[0] = ref_load_f(WK_DTYPE_BF16, b, 0); break;
    case WK_QTYPE_Q4_0: case WK_QTYPE_Q4_1: {
        const int one = qt == WK_QTYPE_Q4_1;
        const double d = f16_at(b), m = one ? f16_at(b + 2) : 0;
        const unsigned char *qs = b + (one ? 4 : 2);
        for (int j = 0; j < 16; j++) {
            y[j] = ((qs[j] & 0xF) - (one ? 0 : 8)) * d + m;
            y[j + 16] = ((qs[j] >> 4) - (one ? 0 : 8)) * d + m;
        }
        break;
    }
    case WK_QTYPE_Q5_0: case WK_QTYPE_Q5_1: {
        const int one = qt == WK_QTYPE_Q5_1;
        const double d = f16_at(b), m = one ? f16_at(b + 2) : 0;
        uint32_t qh;
        memcpy(&qh, b + (one ? 4 : 2), 4);
        const unsigned char *qs = b + (one ? 8 : 6);
        for (int j = 0; j < 16; j++) {
            const int xh0 = (int)(((qh >> j) << 4) & 0x10);
            const int xh1 = (int)((qh >> (j + 12)) & 0x10);
            y[j] = (((qs[j] & 0xF) | xh0) - (one ? 0 : 16)) * d + m;
            y[j + 16] = (((qs[j] >> 4) | xh1) - (one ? 0 : 16)) * d + m;
        }
        break;
    }
    case WK_QTYPE_Q8_0: case WK_QTYPE_Q8_1: {
        const double d = f16_at(b);
        const unsigned char *qs = b + (qt == WK_QTYPE_Q8_1 ? 4 : 2);
        for (int j = 0; j < 32; j++)
            y[j] = s8(qs[j]) * d;
        break;
    }
    case WK_QTYPE_Q2_K: {
        const double d = f16_at(b + 80), dmin = f16_at(b + 82);
        const unsigned char *sc = b, *q = b + 16;
        int is = 0;
        for (int n = 0; n < 256; n += 128) {
            for (int j = 0, shift = 0; j < 4; j++, shift += 2) {
                for (int half = 0; half < 2; half++) {
                    const int s = sc[is++];
                    for (int l = 0; l < 16; l++)
                        *y++ = d * (s & 0xF) * ((q[l + 16 * half] >> shift) & 3) - dmin * (s >> 4);
                }
            }
            q += 32;
        }
        break;
    }
    case WK_QTYPE_Q3_K: {
        int scales[16];
        q3k_scales(scales, b + 96);
        const double d = f16_at(b + 108);
        const unsigned char *q = b + 32, *hm = b;
        int is = 0, m = 1;
        for (int n = 0; n < 256; n += 128) {
            for (int j = 0, shift = 0; j < 4; j++, shift += 2, m <<= 1) {
                for (int half = 0; half < 2; half++) {
                    const double dl = d * scales[is++];
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                }
            }
            q += 32;
        }
        break;
    }
    case WK_QTYPE_Q4_K: case WK_QTYPE_Q5_K: {
        const int five = qt == WK_QTYPE_Q5_K;
        const double d = f16_at(b), dmin = f16_at(b + 2);
        const unsigned char *sc = b + 4, *qh = b + 16, *ql = b + (five ? 48 : 16);
        int u1 = 1, u2 = 2;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            int s1, m1, s2, m2;
            scale_min_k4(is, sc, &s1, &m1);
            scale_min_k4(is + 1, sc, &s2, &m2);
            for (int l = 0; l < 32; l++)
                *y++ = d * s1 * ((ql[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - dmin * m1;
            for (int l = 0; l < 32; l++)
                *y++ = d * s2 * ((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - dmin * m2;
        }
        break;
    }
    case WK_QTYPE_Q6_K: {
        const double d = f16_at(b + 208);
        const unsigned char *ql = b, *qh = b + 128, *sc = b + 192;
        for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * s8(sc[is]) * q1;
                y[l + 32] = d * s8(sc[is + 2]) * q2;
                y[l + 64] = d * s8(sc[is + 4]) * q3;
                y[l + 96] = d * s8(sc[is + 6]) * q4;
            }
        }
        break;
    }
    case WK_QTYPE_Q8_K: {
        const double d = ref_load_f(WK_DTYPE_F32, b, 0);
        for (int j = 0; j < 256; j++)
            y[j] = s8(b[4 + j]) * d;
        break;
    }
    }
}

void ref_dequant_block(double *y, wk_qtype qt, const unsigned char *b)
{
    decode_exact(y, qt, b);
    for (int64_t i = 0; i < ref_qblock_elems(qt); i++)
        y[i] = ref_round(WK_DTYPE_F32, y[i]); /* the exact value, rounded once to f32 */
}

/* w (rows x k, quantized) decoded into f64 values; NULL on allocation failure. */
static double *decode_all(wk_qtype qt, const void *w, int64_t count)
{
    const int64_t be = ref_qblock_elems(qt), bb = ref_qblock_bytes(qt);
    double *v = malloc((size_t)(count > 0 ? count : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (int64_t i = 0; i < count / be; i++)
        ref_dequant_block(v + i * be, qt, (const unsigned char *)w + i * bb);
    return v;
}

wk_status ref_dequantize(void *out, wk_dtype dt, wk_qtype qt, const void *q, int64_t n)
{
    double *v = decode_all(qt, q, n);
    if (!v)
        return WK_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < n; i++)
        ref_store_f(dt, out, i, v[i]);
    free(v);
    return WK_OK;
}

wk_status ref_qmatmul(void *out, wk_dtype dt, const void *x, const wk_layout *lx, wk_qtype qt,
                      const void *w, int64_t n, int64_t k)
{
    const int64_t rows = k > 0 ? ref_count(lx) / k : 0;
    double *v = decode_all(qt, w, n * k);
    if (!v)
        return WK_ERR_OUT_OF_MEMORY;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t i = 0; i < k; i++)
                s += ref_load_f(dt, x, ref_offset(lx, r * k + i)) * v[j * k + i];
            ref_store_f(dt, out, r * n + j, s);
        }
    free(v);
    return WK_OK;
}

wk_status ref_qembedding(void *out, wk_dtype dt, wk_dtype idt, const void *ids,
                         const wk_layout *li, wk_qtype qt, const void *w, int64_t rows,
                         int64_t k)
{
    const int64_t nids = ref_count(li);
    const int64_t none = ref_int_max(idt);
    for (int64_t p = 0; p < nids; p++) { /* every id before any write */
        const int64_t id = ref_load_i(idt, ids, ref_offset(li, p));
        if (id != none && (id < 0 || id >= rows))
            return WK_ERR_INDEX_OUT_OF_RANGE;
    }
    const int64_t be = ref_qblock_elems(qt), bb = ref_qblock_bytes(qt);
    double *v = malloc((size_t)(k > 0 ? k : 1) * sizeof *v);
    if (!v)
        return WK_ERR_OUT_OF_MEMORY;
    for (int64_t p = 0; p < nids; p++) {
        const int64_t id = ref_load_i(idt, ids, ref_offset(li, p));
        for (int64_t i = 0; i < k / be; i++) {
            if (id == none)
                for (int64_t e = 0; e < be; e++)
                    v[i * be + e] = 0;
            else
                ref_dequant_block(v + i * be, qt, (const unsigned char *)w + (id * (k / be) + i) * bb);
        }
        for (int64_t i = 0; i < k; i++)
            ref_store_f(dt, out, p * k + i, v[i]);
    }
    free(v);
    return WK_OK;
}
