/* ref_dtype.c: the reference's own dtype facts, rounding, element access and layout walk.
 *
 * Written from docs/semantics.md in a deliberately different style from src/core/fpconv.h (which
 * works on raw f32 bits): here a value is rounded in f64 with frexp/ldexp/nearbyint, so the two
 * implementations check each other. Requires the default rounding mode (nearest even). */
#include "ref.h"
#include <float.h>
#include <math.h>
#include <string.h>

size_t ref_dtype_size(wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_U8: case WK_DTYPE_F8E4M3: return 1;
    case WK_DTYPE_I16: case WK_DTYPE_BF16: case WK_DTYPE_F16: return 2;
    case WK_DTYPE_U32: case WK_DTYPE_I32: case WK_DTYPE_F32: return 4;
    case WK_DTYPE_I64: case WK_DTYPE_F64: return 8;
    }
    return 0;
}

int ref_is_float(wk_dtype dt)
{
    return dt == WK_DTYPE_BF16 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_F32 ||
           dt == WK_DTYPE_F64 || dt == WK_DTYPE_F8E4M3;
}

int ref_is_signed(wk_dtype dt)
{
    return dt == WK_DTYPE_I16 || dt == WK_DTYPE_I32 || dt == WK_DTYPE_I64;
}

int64_t ref_int_min(wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_I16: return INT16_MIN;
    case WK_DTYPE_I32: return INT32_MIN;
    case WK_DTYPE_I64: return INT64_MIN;
    default: return 0;
    }
}

int64_t ref_int_max(wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_U8: return UINT8_MAX;
    case WK_DTYPE_U32: return UINT32_MAX;
    case WK_DTYPE_I16: return INT16_MAX;
    case WK_DTYPE_I32: return INT32_MAX;
    default: return INT64_MAX;
    }
}

/* ---------------------------------------------------------------- rounding */

/* x rounded to nearest even in a binary format with p significand bits (implicit bit included)
 * and smallest normal exponent emin (subnormals below it); a result above maxv becomes +-inf, or
 * +-maxv when saturate is set. */
static double round_format(double x, int p, int emin, double maxv, int saturate)
{
    if (isnan(x) || x == 0)
        return x;
    if (isinf(x))
        return saturate ? copysign(maxv, x) : x;
    int e;
    frexp(x, &e); /* |x| = m * 2^e, m in [0.5, 1): the leading bit is worth 2^(e-1) */
    int lead = e - 1 < emin ? emin : e - 1;
    double quantum = ldexp(1.0, lead - (p - 1)); /* spacing of the format around x */
    double r = nearbyint(x / quantum) * quantum;  /* x / quantum is exact: a power of two */
    if (fabs(r) > maxv)
        return saturate ? copysign(maxv, x) : copysign(INFINITY, x);
    return r;
}

static double round_f32(double x) { return round_format(x, 24, -126, FLT_MAX, 0); }

double ref_round(wk_dtype dt, double x)
{
    switch (dt) {
    case WK_DTYPE_F64: return x;
    case WK_DTYPE_F32: return round_f32(x);
    case WK_DTYPE_BF16: return round_format(round_f32(x), 8, -126, ldexp(255.0, 120), 0);
    case WK_DTYPE_F16: return round_format(round_f32(x), 11, -14, 65504.0, 0);
    case WK_DTYPE_F8E4M3: return round_format(round_f32(x), 4, -6, 448.0, 1);
    default: return x;
    }
}

int64_t ref_wrap(wk_dtype dt, uint64_t v)
{
    switch (dt) {
    case WK_DTYPE_U8: return (int64_t)(v & 0xffu);
    case WK_DTYPE_U32: return (int64_t)(v & 0xffffffffu);
    case WK_DTYPE_I16: {
        uint64_t low = v & 0xffffu;
        return low >= 0x8000u ? (int64_t)low - 0x10000 : (int64_t)low;
    }
    case WK_DTYPE_I32: {
        uint64_t low = v & 0xffffffffu;
        return low >= 0x80000000u ? (int64_t)low - 0x100000000LL : (int64_t)low;
    }
    default: /* i64: the top bit is the sign */
        if (v >= 0x8000000000000000ULL)
            return -(int64_t)(~v) - 1;
        return (int64_t)v;
    }
}

int64_t ref_float_to_int(wk_dtype dt, double x)
{
    if (isnan(x))
        return 0;
    double t = trunc(x);
    /* Compare in f64 against bounds that are exact in f64 (2^63 is, 2^63 - 1 is not). */
    double lo = (double)ref_int_min(dt);
    double hi_excl = dt == WK_DTYPE_I64 ? 9223372036854775808.0 : (double)ref_int_max(dt) + 1.0;
    if (t < lo)
        return ref_int_min(dt);
    if (t >= hi_excl)
        return ref_int_max(dt);
    return (int64_t)t;
}

/* v rounded to p significant bits, nearest even, done on the exact integer. */
static double round_int_bits(int64_t v, int p)
{
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int shift = 0;
    while ((m >> shift) >= (1ULL << p))
        shift++;
    if (shift > 0) {
        uint64_t q = m >> shift;
        uint64_t rem = m & ((1ULL << shift) - 1);
        uint64_t half = 1ULL << (shift - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        m = q;
    }
    double r = ldexp((double)m, shift); /* m <= 2^p <= 2^53: exact */
    return v < 0 ? -r : r;
}

double ref_int_to_float(wk_dtype dt, int64_t v)
{
    if (dt == WK_DTYPE_F64)
        return round_int_bits(v, 53);
    return ref_round(dt, round_int_bits(v, 24));
}

/* ---------------------------------------------------------------- bit formats */

/* Bits of r, a value already representable in the small format (ebits exponent bits, mbits
 * fraction bits, bias 2^(ebits-1) - 1). f8 is E4M3FN: no infinity, NaN = S.1111.111. */
static uint32_t encode_small(double r, int ebits, int mbits, int f8)
{
    uint32_t sign = signbit(r) ? 1u << (ebits + mbits) : 0u;
    uint32_t emax_field = (1u << ebits) - 1u;
    int bias = (1 << (ebits - 1)) - 1;
    if (isnan(r))
        return f8 ? sign | 0x7fu : sign | (emax_field << mbits) | (1u << (mbits - 1));
    if (isinf(r))
        return sign | (emax_field << mbits);
    double a = fabs(r);
    if (a == 0)
        return sign;
    int e;
    frexp(a, &e);
    int lead = e - 1;
    if (lead < 1 - bias) /* subnormal: a = k * 2^(1 - bias - mbits) */
        return sign | (uint32_t)ldexp(a, bias - 1 + mbits);
    uint32_t frac = (uint32_t)(ldexp(a, mbits - lead) - ldexp(1.0, mbits));
    return sign | ((uint32_t)(lead + bias) << mbits) | frac;
}

static double decode_small(uint32_t b, int ebits, int mbits, int f8)
{
    uint32_t emax_field = (1u << ebits) - 1u;
    int bias = (1 << (ebits - 1)) - 1;
    int neg = (b >> (ebits + mbits)) & 1u;
    uint32_t e = (b >> mbits) & emax_field;
    uint32_t m = b & ((1u << mbits) - 1u);
    double v;
    if (f8 && e == emax_field && m == (1u << mbits) - 1u)
        v = NAN;
    else if (!f8 && e == emax_field)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - mbits);
    else
        v = ldexp((double)(m + (1u << mbits)), (int)e - bias - mbits);
    return neg ? -v : v;
}

/* ---------------------------------------------------------------- element access */

double ref_load_f(wk_dtype dt, const void *base, int64_t i)
{
    const unsigned char *p = (const unsigned char *)base + (size_t)i * ref_dtype_size(dt);
    switch (dt) {
    case WK_DTYPE_F64: { double v; memcpy(&v, p, 8); return v; }
    case WK_DTYPE_F32: { float v; memcpy(&v, p, 4); return v; }
    case WK_DTYPE_BF16: { uint16_t v; memcpy(&v, p, 2); return decode_small(v, 8, 7, 0); }
    case WK_DTYPE_F16: { uint16_t v; memcpy(&v, p, 2); return decode_small(v, 5, 10, 0); }
    case WK_DTYPE_F8E4M3: return decode_small(*p, 4, 3, 1);
    default: return ref_int_to_float(WK_DTYPE_F64, ref_load_i(dt, base, i));
    }
}

int64_t ref_load_i(wk_dtype dt, const void *base, int64_t i)
{
    const unsigned char *p = (const unsigned char *)base + (size_t)i * ref_dtype_size(dt);
    switch (dt) {
    case WK_DTYPE_U8: return *p;
    case WK_DTYPE_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case WK_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case WK_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case WK_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    default: return 0;
    }
}

void ref_store_i(wk_dtype dt, void *base, int64_t i, int64_t v)
{
    unsigned char *p = (unsigned char *)base + (size_t)i * ref_dtype_size(dt);
    uint64_t u = (uint64_t)v; /* keep the low bits: that is the wrap */
    switch (dt) {
    case WK_DTYPE_U8: *p = (uint8_t)(u & 0xffu); break;
    case WK_DTYPE_U32: { uint32_t w = (uint32_t)(u & 0xffffffffu); memcpy(p, &w, 4); break; }
    case WK_DTYPE_I16: { uint16_t w = (uint16_t)(u & 0xffffu); memcpy(p, &w, 2); break; }
    case WK_DTYPE_I32: { uint32_t w = (uint32_t)(u & 0xffffffffu); memcpy(p, &w, 4); break; }
    case WK_DTYPE_I64: memcpy(p, &u, 8); break;
    default: break;
    }
}

void ref_store_f(wk_dtype dt, void *base, int64_t i, double x)
{
    unsigned char *p = (unsigned char *)base + (size_t)i * ref_dtype_size(dt);
    if (!ref_is_float(dt)) {
        ref_store_i(dt, base, i, ref_float_to_int(dt, x));
        return;
    }
    double r = ref_round(dt, x);
    switch (dt) {
    case WK_DTYPE_F64: memcpy(p, &r, 8); break;
    case WK_DTYPE_F32: { float f = (float)r; memcpy(p, &f, 4); break; } /* exact: r fits */
    case WK_DTYPE_BF16: { uint16_t b = (uint16_t)encode_small(r, 8, 7, 0); memcpy(p, &b, 2); break; }
    case WK_DTYPE_F16: { uint16_t b = (uint16_t)encode_small(r, 5, 10, 0); memcpy(p, &b, 2); break; }
    case WK_DTYPE_F8E4M3: *p = (uint8_t)encode_small(r, 4, 3, 1); break;
    default: break;
    }
}

/* ---------------------------------------------------------------- layouts */

int64_t ref_count(const wk_layout *l)
{
    int64_t n = 1;
    for (int k = 0; k < l->rank; k++)
        n *= l->dims[k];
    return n;
}

int64_t ref_offset(const wk_layout *l, int64_t i)
{
    int64_t off = l->offset;
    for (int k = l->rank - 1; k >= 0; k--) {
        off += (i % l->dims[k]) * l->strides[k];
        i /= l->dims[k];
    }
    return off;
}
