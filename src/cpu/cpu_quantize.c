/* cpu_quantize.c: f32 -> GGML blocks (wk_quantize), reference-style quantizers written from the
 * block formats of src/core/quant_blocks.h (which decodes them). Plain round-to-nearest with a
 * min-max (or signed max-abs) scale per block or sub-block; the K types quantize their sub-block
 * scales with the same rule (no iterative scale search as ggml's). Every code is computed from
 * the STORED (f16-rounded, 6/8-bit-quantized) scales, exactly as the decoder will use them, so
 * the rounding of the scales cannot push a code past the decoded value. Round-trip error bounds
 * per type: docs/semantics.md ("Quantized tensors"), checked by tests/test_quant_kat.c.
 * Non-finite inputs give blocks whose decoded values are unspecified (no UB). */
#include "cpu_ops.h"
#include "quant_blocks.h"
#include "wk_core.h"
#include <math.h>
#include <omp.h>
#include <string.h>

/* Nearest integer of v clamped to [lo, hi]; NaN -> lo (never an undefined conversion). */
static int qround(float v, int lo, int hi)
{
    if (!(v >= (float)lo))
        return lo;
    if (v >= (float)hi)
        return hi;
    int q = (int)floorf(v + 0.5f);
    return q > hi ? hi : q;
}

/* Stores f as f16 at p (little-endian) and returns the stored value. */
static float put_f16(uint8_t *p, float f)
{
    uint16_t h = wk_fp_f32_to_f16(f);
    p[0] = (uint8_t)(h & 0xff);
    p[1] = (uint8_t)(h >> 8);
    return wk_fp_f16_to_f32(h);
}

static void put_u16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

static float inv(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

/* The element of largest magnitude, with its sign (0 for an all-zero run). */
static float signed_absmax(const float *x, int n)
{
    float m = 0.0f, a = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > a) {
            a = fabsf(x[i]);
            m = x[i];
        }
    return m;
}

static void minmax(const float *x, int n, float *lo, float *hi)
{
    *lo = x[0];
    *hi = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < *lo)
            *lo = x[i];
        if (x[i] > *hi)
            *hi = x[i];
    }
}

/* ---- trivial types */
static void quant_f32(const float *x, uint8_t *b) { memcpy(b, x, 4); }
static void quant_f16(const float *x, uint8_t *b) { put_u16(b, wk_fp_f32_to_f16(x[0])); }
static void quant_bf16(const float *x, uint8_t *b) { put_u16(b, wk_fp_f32_to_bf16(x[0])); }

/* ---- 32-element types. Symmetric ones: the largest-magnitude element maps to the most
 * negative code (-8, -16), as ggml does, so the full code range is used. */
static void pack_nibbles(uint8_t *qs, const int *q)
{
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

static void quant_q4_0(const float *x, uint8_t *b)
{
    int q[32];
    const float d = put_f16(b, signed_absmax(x, 32) / -8.0f), id = inv(d);
    for (int i = 0; i < 32; i++)
        q[i] = qround(x[i] * id, -8, 7) + 8;
    pack_nibbles(b + 2, q);
}

static void quant_q5_0(const float *x, uint8_t *b)
{
    int q[32];
    uint32_t qh = 0;
    const float d = put_f16(b, signed_absmax(x, 32) / -16.0f), id = inv(d);
    for (int i = 0; i < 32; i++) {
        q[i] = qround(x[i] * id, -16, 15) + 16;
        qh |= (uint32_t)(q[i] >> 4) << i;
    }
    put_u16(b + 2, qh & 0xffffu);
    put_u16(b + 4, qh >> 16);
    pack_nibbles(b + 6, q);
}

/* Affine ones: value = q * d + m, m the block minimum, d = range / (levels - 1). */
static void quant_affine32(const float *x, uint8_t *b, int levels, int *q)
{
    float lo, hi;
    minmax(x, 32, &lo, &hi);
    const float d = put_f16(b, (hi - lo) / (float)(levels - 1)), id = inv(d);
    const float m = put_f16(b + 2, lo);
    for (int i = 0; i < 32; i++)
        q[i] = qround((x[i] - m) * id, 0, levels - 1);
}

static void quant_q4_1(const float *x, uint8_t *b)
{
    int q[32];
    quant_affine32(x, b, 16, q);
    pack_nibbles(b + 4, q);
}

static void quant_q5_1(const float *x, uint8_t *b)
{
    int q[32];
    uint32_t qh = 0;
    quant_affine32(x, b, 32, q);
    for (int i = 0; i < 32; i++)
        qh |= (uint32_t)(q[i] >> 4) << i;
    put_u16(b + 4, qh & 0xffffu);
    put_u16(b + 6, qh >> 16);
    pack_nibbles(b + 8, q);
}

/* int8 codes q = round(x / d), d = max|x| / 127; returns sum q. */
static int quant_i8(const float *x, int n, float d, uint8_t *qs)
{
    const float id = inv(d);
    int sum = 0;
    for (int i = 0; i < n; i++) {
        int q = qround(x[i] * id, -127, 127);
        qs[i] = (uint8_t)(q & 0xff);
        sum += q;
    }
    return sum;
}

static void quant_q8_0(const float *x, uint8_t *b)
{
    const float d = put_f16(b, fabsf(signed_absmax(x, 32)) / 127.0f);
    quant_i8(x, 32, d, b + 2);
}

static void quant_q8_1(const float *x, uint8_t *b)
{
    const float d = put_f16(b, fabsf(signed_absmax(x, 32)) / 127.0f);
    const int sum = quant_i8(x, 32, d, b + 4);
    put_f16(b + 2, d * (float)sum); /* s = d * sum(q), as ggml's q8_1 */
}

static void quant_q8_k(const float *x, uint8_t *b)
{
    const float d = fabsf(signed_absmax(x, 256)) / 127.0f;
    uint32_t bits = wk_fp_bits(d);
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(bits >> (8 * i));
    quant_i8(x, 256, d, b + 4);
    for (int g = 0; g < 16; g++) { /* bsums: sums of 16 codes, int16 */
        int s = 0;
        for (int i = 0; i < 16; i++)
            s += wk_qb_i8(b[4 + 16 * g + i]);
        put_u16(b + 260 + 2 * g, (uint32_t)s & 0xffffu);
    }
}

/* ---- K types with per-sub-block scale and min (q2_k: 16 x 16, 4-bit; q4_k, q5_k: 8 x 32,
 * 6-bit): value = (d*sc)*q - dmin*mn. Per sub-block the range [min(0, lo), hi] maps onto the
 * codes; scales and mins are quantized against d = max scale / smax, dmin = max min / smax. */
static void kmin_params(const float *x, int nsub, int sub, int levels, int smax, uint8_t *pd,
                        uint8_t *pdmin, int *sc, int *mn, float *dl, float *ml)
{
    float scale[16], mins[16], smx = 0.0f, mmx = 0.0f;
    for (int s = 0; s < nsub; s++) {
        float lo, hi;
        minmax(x + s * sub, sub, &lo, &hi);
        if (lo > 0.0f)
            lo = 0.0f;
        scale[s] = (hi - lo) / (float)(levels - 1);
        mins[s] = -lo;
        smx = scale[s] > smx ? scale[s] : smx;
        mmx = mins[s] > mmx ? mins[s] : mmx;
    }
    const float d = put_f16(pd, smx / (float)smax), dmin = put_f16(pdmin, mmx / (float)smax);
    for (int s = 0; s < nsub; s++) {
        /* round the scale up so the sub-block's range stays covered */
        sc[s] = qround(ceilf(scale[s] * inv(d)), 0, smax);
        mn[s] = qround(mins[s] * inv(dmin), 0, smax);
        dl[s] = d * (float)sc[s];
        ml[s] = dmin * (float)mn[s];
    }
}

/* Code of x for a sub-block with decoded step dl and offset ml. */
static int kmin_code(float x, float dl, float ml, int levels)
{
    return qround((x + ml) * inv(dl), 0, levels - 1);
}

static void quant_q2_k(const float *x, uint8_t *b)
{
    int sc[16], mn[16];
    float dl[16], ml[16];
    kmin_params(x, 16, 16, 4, 15, b + 80, b + 82, sc, mn, dl, ml);
    for (int s = 0; s < 16; s++)
        b[s] = (uint8_t)(sc[s] | (mn[s] << 4));
    for (int e = 0; e < 256; e++) {
        const int h = e >> 7, j = (e >> 5) & 3, l = e & 31, s = e >> 4;
        b[16 + 32 * h + l] |= (uint8_t)(kmin_code(x[e], dl[s], ml[s], 4) << (2 * j));
    }
}

/* The 12 scale bytes of q4_k / q5_k (the inverse of wk_qb_k4_scale). */
static void pack_k4_scales(uint8_t *p, const int *sc, const int *mn)
{
    for (int j = 0; j < 4; j++) {
        p[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        p[j + 4] = (uint8_t)(mn[j] | ((mn[j + 4] >> 4) << 6));
        p[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

static void quant_q4_k(const float *x, uint8_t *b)
{
    int sc[8], mn[8];
    float dl[8], ml[8];
    kmin_params(x, 8, 32, 16, 63, b, b + 2, sc, mn, dl, ml);
    pack_k4_scales(b + 4, sc, mn);
    for (int e = 0; e < 256; e++) {
        const int g = e >> 6, t = (e >> 5) & 1, l = e & 31, s = e >> 5;
        b[16 + 32 * g + l] |= (uint8_t)(kmin_code(x[e], dl[s], ml[s], 16) << (4 * t));
    }
}

static void quant_q5_k(const float *x, uint8_t *b)
{
    int sc[8], mn[8];
    float dl[8], ml[8];
    kmin_params(x, 8, 32, 32, 63, b, b + 2, sc, mn, dl, ml);
    pack_k4_scales(b + 4, sc, mn);
    for (int e = 0; e < 256; e++) {
        const int g = e >> 6, t = (e >> 5) & 1, l = e & 31, s = e >> 5;
        const int q = kmin_code(x[e], dl[s], ml[s], 32);
        b[48 + 32 * g + l] |= (uint8_t)((q & 15) << (4 * t));
        b[16 + l] |= (uint8_t)((q >> 4) << (2 * g + t));
    }
}

/* ---- symmetric K types (q3_k: 16 x 16, codes -4..3, 6-bit signed scales; q6_k: 16 x 16,
 * codes -32..31, int8 scales): value = (d*sc)*q. Each sub-block's signed max maps to the most
 * negative code; the sub-block scales are quantized the same way against d. */
/* s[i] = the raw scale of sub-block i (its signed max over qmin); returns the raw super-scale
 * (the signed max of s over smin), to be rounded to f16 by the caller. */
static float ksym_raw(const float *x, int qmin, int smin, float *s)
{
    for (int i = 0; i < 16; i++)
        s[i] = signed_absmax(x + 16 * i, 16) / (float)qmin;
    return signed_absmax(s, 16) / (float)smin;
}

/* sc[i] = s[i] / d quantized to [smin, smax]; dl[i] = the decoded step d * sc[i]. */
static void ksym_finish(const float *s, float d, int smin, int smax, int *sc, float *dl)
{
    for (int i = 0; i < 16; i++) {
        sc[i] = qround(s[i] * inv(d), smin, smax);
        dl[i] = d * (float)sc[i];
    }
}

static void quant_q3_k(const float *x, uint8_t *b)
{
    int sc[16];
    float s[16], dl[16];
    const float d = put_f16(b + 108, ksym_raw(x, -4, -32, s));
    ksym_finish(s, d, -32, 31, sc, dl);
    for (int i = 0; i < 16; i++) { /* scales + 32 in 6 bits, split 4 + 2 (wk_qb_q3_k_scale) */
        const int u = sc[i] + 32;
        b[96 + (i & 7)] |= (uint8_t)((u & 15) << (i < 8 ? 0 : 4));
        b[96 + 8 + (i & 3)] |= (uint8_t)((u >> 4) << (2 * (i >> 2)));
    }
    for (int e = 0; e < 256; e++) {
        const int h = e >> 7, j = (e >> 5) & 3, l = e & 31;
        const int u = qround(x[e] * inv(dl[e >> 4]), -4, 3) + 4; /* 0..7 */
        b[32 + 32 * h + l] |= (uint8_t)((u & 3) << (2 * j));
        b[l] |= (uint8_t)((u >> 2) << (4 * h + j));
    }
}

static void quant_q6_k(const float *x, uint8_t *b)
{
    int sc[16];
    float s[16], dl[16];
    const float d = put_f16(b + 208, ksym_raw(x, -32, -128, s));
    ksym_finish(s, d, -128, 127, sc, dl);
    for (int i = 0; i < 16; i++)
        b[192 + i] = (uint8_t)(sc[i] & 0xff);
    for (int e = 0; e < 256; e++) {
        const int h = e >> 7, j = (e >> 5) & 3, l = e & 31;
        const int u = qround(x[e] * inv(dl[e >> 4]), -32, 31) + 32; /* 0..63 */
        b[64 * h + l + 32 * (j & 1)] |= (uint8_t)((u & 15) << (4 * (j >> 1)));
        b[128 + 32 * h + l] |= (uint8_t)((u >> 4) << (2 * j));
    }
}

/* ---- dispatch, written once from the block list */
typedef void (*quant_fn)(const float *x, uint8_t *b);
#define WK_QZ_CASE(E, n, id, el, by) case WK_QTYPE_##E: return quant_##n;
static quant_fn quantizer(wk_qtype qt)
{
    switch (qt) {
    WK_QBLOCK_LIST(WK_QZ_CASE)
    }
    return NULL;
}
#undef WK_QZ_CASE

wk_status wk_cpu_quantize(wk_qtype qt, void *out, const float *x, int64_t n)
{
    const quant_fn f = quantizer(qt);
    const int64_t be = wk_qtype_block_elems(qt), bb = wk_qtype_block_bytes(qt);
    if (!f || be <= 0)
        return wk_err(WK_ERR_INTERNAL, "quantize: no quantizer for %s", wk_qtype_name(qt));
    const int64_t nb = n / be;
    uint8_t *o = out;
#pragma omp parallel for schedule(static) if (n >= WK_CPU_PAR_THRESHOLD)
    for (int64_t i = 0; i < nb; i++) {
        memset(o + i * bb, 0, (size_t)bb); /* the packers OR their bits in */
        f(x + i * be, o + i * bb);
    }
    return WK_OK;
}
