/* test_dtype.c: dtype facts and the public scalar conversions (wk_f32_to_f16 and friends).
 * Known answers from the IEEE 754 binary16 format, the bfloat16 format (the top half of an f32)
 * and the OCP 8-bit floating point spec (E4M3FN: bias 7, max 448, NaN = S.1111.111), plus
 * exhaustive checks: every f16/bf16/f8e4m3 bit pattern decodes to the value its fields say,
 * decode-then-encode gives the same bits, and every rounding boundary (the midpoint between two
 * neighbours, and the floats just either side of it) rounds to nearest, ties to even.
 * Also the internal f8e4m3 -> f16 widening of src/core/fpconv.h (the matrix-unit GEMM's): known
 * answers, and for every byte the f16 that decodes to the f8e4m3 value (NaN: 0x7e00 signed).
 * Run: ctest -R test_dtype */
#include "core/fpconv.h"
#include "testlib.h"
#include <math.h>
#include <string.h>

static uint32_t bits32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_facts(void)
{
    static const struct { wk_dtype d; const char *name; size_t size; int is_float; } facts[] = {
        {WK_DTYPE_U8, "u8", 1, 0},     {WK_DTYPE_U32, "u32", 4, 0}, {WK_DTYPE_I16, "i16", 2, 0},
        {WK_DTYPE_I32, "i32", 4, 0},   {WK_DTYPE_I64, "i64", 8, 0}, {WK_DTYPE_BF16, "bf16", 2, 1},
        {WK_DTYPE_F16, "f16", 2, 1},   {WK_DTYPE_F32, "f32", 4, 1}, {WK_DTYPE_F64, "f64", 8, 1},
        {WK_DTYPE_F8E4M3, "f8e4m3", 1, 1},
    };
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        TEST_CHECK(strcmp(wk_dtype_name(facts[i].d), facts[i].name) == 0, "name of dtype %d: %s",
                   (int)facts[i].d, wk_dtype_name(facts[i].d));
        TEST_EQ_INT(wk_dtype_size(facts[i].d), facts[i].size);
        TEST_EQ_INT(!!wk_dtype_is_float(facts[i].d), facts[i].is_float);
    }
    /* Enum values are part of the ABI (wick.h): explicit, append-only. */
    TEST_EQ_INT(WK_DTYPE_U8, 0);
    TEST_EQ_INT(WK_DTYPE_F8E4M3, 9);
    TEST_EQ_INT(WK_DTYPE_COUNT, 10);
    /* Unknown values: "?" and size 0 (wick.h). */
    TEST_CHECK(strcmp(wk_dtype_name((wk_dtype)99), "?") == 0, "name of dtype 99");
    TEST_CHECK(strcmp(wk_dtype_name((wk_dtype)-1), "?") == 0, "name of dtype -1");
    TEST_EQ_INT(wk_dtype_size((wk_dtype)99), 0);
    TEST_EQ_INT(wk_dtype_size((wk_dtype)WK_DTYPE_COUNT), 0);
    TEST_EQ_INT(wk_dtype_is_float((wk_dtype)99), 0);
}

/* Which ops docs/semantics.md defines for which dtypes. */
static void test_op_defined(void)
{
    TEST_EQ_INT(wk_op_defined(WK_OP_EXP, WK_DTYPE_F32), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_EXP, WK_DTYPE_BF16), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_EXP, WK_DTYPE_F8E4M3), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_EXP, WK_DTYPE_I32), 0);   /* integer transcendental: n/a */
    TEST_EQ_INT(wk_op_defined(WK_OP_GELU, WK_DTYPE_U8), 0);
    TEST_EQ_INT(wk_op_defined(WK_OP_POWF, WK_DTYPE_I64), 0);
    TEST_EQ_INT(wk_op_defined(WK_OP_ELU, WK_DTYPE_U32), 0);
    TEST_EQ_INT(wk_op_defined(WK_OP_NEG, WK_DTYPE_U8), 0);    /* neg of unsigned: n/a */
    TEST_EQ_INT(wk_op_defined(WK_OP_NEG, WK_DTYPE_U32), 0);
    TEST_EQ_INT(wk_op_defined(WK_OP_NEG, WK_DTYPE_I32), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_ABS, WK_DTYPE_U8), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_RELU, WK_DTYPE_I32), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_SIGN, WK_DTYPE_U32), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_ROUND, WK_DTYPE_I64), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_SQR, WK_DTYPE_I16), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_AFFINE, WK_DTYPE_U8), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_ADD, WK_DTYPE_U8), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_DIV, WK_DTYPE_I64), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_MAXIMUM, WK_DTYPE_F16), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_SUM, WK_DTYPE_U8), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_ARGMAX, WK_DTYPE_BF16), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_TO_DTYPE, WK_DTYPE_F8E4M3), 1);
    TEST_EQ_INT(wk_op_defined(WK_OP_EXP, (wk_dtype)99), 0);
    TEST_EQ_INT(wk_op_defined((wk_op)999, WK_DTYPE_F32), 0);
}

/* ---- f32 -> f16 known answers (IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 fraction). */
static void test_f16_literals(void)
{
    TEST_EQ_INT(wk_f32_to_f16(1.0f), 0x3C00);             /* exp 15, fraction 0 */
    TEST_EQ_INT(wk_f32_to_f16(-2.0f), 0xC000);
    TEST_EQ_INT(wk_f32_to_f16(0.0f), 0x0000);
    TEST_EQ_INT(wk_f32_to_f16(-0.0f), 0x8000);            /* sign kept */
    TEST_EQ_INT(wk_f32_to_f16(65504.0f), 0x7BFF);         /* largest finite f16 */
    TEST_EQ_INT(wk_f32_to_f16(65519.0f), 0x7BFF);         /* below the midpoint 65520: down */
    TEST_EQ_INT(wk_f32_to_f16(65520.0f), 0x7C00);         /* midpoint to 65536, ties to even: inf */
    TEST_EQ_INT(wk_f32_to_f16(1e10f), 0x7C00);
    TEST_EQ_INT(wk_f32_to_f16(-1e10f), 0xFC00);
    TEST_EQ_INT(wk_f32_to_f16(INFINITY), 0x7C00);
    TEST_EQ_INT(wk_f32_to_f16(-INFINITY), 0xFC00);
    TEST_EQ_INT(wk_f32_to_f16(0x1p-14f), 0x0400);         /* smallest normal */
    TEST_EQ_INT(wk_f32_to_f16(0x1p-24f), 0x0001);         /* smallest subnormal */
    TEST_EQ_INT(wk_f32_to_f16(0x1p-25f), 0x0000);         /* half of it: tie to even (0) */
    TEST_EQ_INT(wk_f32_to_f16(0x1.8p-25f), 0x0001);       /* above the tie: up */
    TEST_EQ_INT(wk_f32_to_f16(0x3p-25f), 0x0002);         /* 1.5 units: tie to even (2) */
    TEST_EQ_INT(wk_f32_to_f16(-0x1p-24f), 0x8001);
    TEST_EQ_INT(wk_f32_to_f16(1e-10f), 0x0000);           /* underflow to +0 */
    TEST_EQ_INT(wk_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);  /* tie between 1 and 1+2^-10: even */
    TEST_EQ_INT(wk_f32_to_f16(1.0f + 0x3p-11f), 0x3C02);  /* tie between 0x3C01 and 0x3C02: even */
    TEST_EQ_INT(wk_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01); /* just above the tie */
    TEST_EQ_INT(wk_f32_to_f16(0.333333343f), 0x3555);     /* 1/3 = 0x3555 (Wikipedia, binary16) */
    TEST_EQ_INT(wk_f32_to_f16(2047.0f + 0.5f), 0x6800);   /* 2047.5: tie between 2047, 2048: even */
    /* NaN -> quiet NaN, sign and top payload bits kept (docs/semantics.md). */
    TEST_EQ_INT(wk_f32_to_f16(from_bits32(0x7FC00000u)), 0x7E00);
    TEST_EQ_INT(wk_f32_to_f16(from_bits32(0xFFC00000u)), 0xFE00);
    TEST_EQ_INT(wk_f32_to_f16(from_bits32(0x7F800001u)), 0x7E00); /* signalling: quieted */
    TEST_EQ_INT(wk_f32_to_f16(from_bits32(0x7FA00000u)), 0x7F00); /* payload top bit kept */

    TEST_CHECK(wk_f16_to_f32(0x3C00) == 1.0f, "f16 0x3C00 -> 1");
    TEST_CHECK(wk_f16_to_f32(0x7BFF) == 65504.0f, "f16 0x7BFF -> 65504");
    TEST_CHECK(wk_f16_to_f32(0x0001) == 0x1p-24f, "f16 0x0001 -> 2^-24");
    TEST_CHECK(wk_f16_to_f32(0x03FF) == 0x3FFp-24f, "f16 0x03FF -> largest subnormal");
    TEST_CHECK(wk_f16_to_f32(0x3555) == 0.333251953125f, "f16 0x3555 -> 0.333251953125");
    TEST_CHECK(wk_f16_to_f32(0xFC00) == -INFINITY, "f16 0xFC00 -> -inf");
    TEST_CHECK(bits32(wk_f16_to_f32(0x8000)) == 0x80000000u, "f16 0x8000 -> -0");
    TEST_CHECK(isnan(wk_f16_to_f32(0x7E00)), "f16 0x7E00 -> NaN");
    TEST_CHECK(isnan(wk_f16_to_f32(0x7C01)), "f16 0x7C01 -> NaN");
    TEST_CHECK(signbit(wk_f16_to_f32(0xFE00)) && isnan(wk_f16_to_f32(0xFE00)), "f16 0xFE00 -> -NaN");
}

/* ---- f32 -> bf16 (bfloat16: the top 16 bits of an f32, rounded to nearest even). */
static void test_bf16_literals(void)
{
    TEST_EQ_INT(wk_f32_to_bf16(1.0f), 0x3F80);
    TEST_EQ_INT(wk_f32_to_bf16(-2.0f), 0xC000);
    TEST_EQ_INT(wk_f32_to_bf16(-0.0f), 0x8000);
    TEST_EQ_INT(wk_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);          /* tie: to even (1.0) */
    TEST_EQ_INT(wk_f32_to_bf16(1.0f + 0x3p-8f), 0x3F82);          /* tie between 0x3F81, 0x3F82 */
    TEST_EQ_INT(wk_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81); /* above the tie: up */
    TEST_EQ_INT(wk_f32_to_bf16(3.14159265f), 0x4049);              /* pi: 0x40490FDB -> down */
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0x7F7FFFFFu)), 0x7F80); /* FLT_MAX rounds to inf */
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0x7F7F7FFFu)), 0x7F7F); /* just below: largest finite */
    TEST_EQ_INT(wk_f32_to_bf16(INFINITY), 0x7F80);
    TEST_EQ_INT(wk_f32_to_bf16(-INFINITY), 0xFF80);
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0x00000001u)), 0x0000); /* tiny subnormal: down */
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0x00018000u)), 0x0002); /* subnormal tie: to even */
    /* NaN -> quiet NaN, sign kept, bit 6 set. */
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0x7FC00000u)), 0x7FC0);
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0x7F800001u)), 0x7FC0);
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0xFF800001u)), 0xFFC0);
    TEST_EQ_INT(wk_f32_to_bf16(from_bits32(0x7FFFFFFFu)), 0x7FFF); /* would carry into inf: must not */

    TEST_CHECK(wk_bf16_to_f32(0x3F80) == 1.0f, "bf16 0x3F80 -> 1");
    TEST_CHECK(wk_bf16_to_f32(0x4049) == 3.140625f, "bf16 0x4049 -> 3.140625");
    TEST_CHECK(wk_bf16_to_f32(0xFF80) == -INFINITY, "bf16 0xFF80 -> -inf");
    TEST_CHECK(isnan(wk_bf16_to_f32(0x7FC0)), "bf16 0x7FC0 -> NaN");
}

/* ---- f32 -> f8e4m3 (OCP E4M3FN: 1 sign, 4 exponent (bias 7), 3 fraction; max 448; saturating). */
static void test_f8_literals(void)
{
    TEST_EQ_INT(wk_f32_to_f8e4m3(1.0f), 0x38);          /* exp 7 */
    TEST_EQ_INT(wk_f32_to_f8e4m3(0.5f), 0x30);
    TEST_EQ_INT(wk_f32_to_f8e4m3(-2.0f), 0xC0);
    TEST_EQ_INT(wk_f32_to_f8e4m3(-0.0f), 0x80);
    TEST_EQ_INT(wk_f32_to_f8e4m3(448.0f), 0x7E);        /* largest finite: 1.75 * 2^8 */
    TEST_EQ_INT(wk_f32_to_f8e4m3(240.0f), 0x77);        /* 1.875 * 2^7 */
    TEST_EQ_INT(wk_f32_to_f8e4m3(256.0f), 0x78);
    TEST_EQ_INT(wk_f32_to_f8e4m3(416.0f), 0x7D);
    TEST_EQ_INT(wk_f32_to_f8e4m3(440.0f), 0x7E);        /* above the 432 midpoint: 448 */
    TEST_EQ_INT(wk_f32_to_f8e4m3(432.0f), 0x7E);        /* tie 416/448: even mantissa (448) */
    TEST_EQ_INT(wk_f32_to_f8e4m3(1000.0f), 0x7E);       /* saturate */
    TEST_EQ_INT(wk_f32_to_f8e4m3(-1000.0f), 0xFE);
    TEST_EQ_INT(wk_f32_to_f8e4m3(INFINITY), 0x7E);      /* no infinity in E4M3FN: saturate */
    TEST_EQ_INT(wk_f32_to_f8e4m3(-INFINITY), 0xFE);
    TEST_EQ_INT(wk_f32_to_f8e4m3(0x1p-6f), 0x08);       /* smallest normal */
    TEST_EQ_INT(wk_f32_to_f8e4m3(0x1p-9f), 0x01);       /* smallest subnormal */
    TEST_EQ_INT(wk_f32_to_f8e4m3(0x7p-9f), 0x07);       /* largest subnormal */
    TEST_EQ_INT(wk_f32_to_f8e4m3(0x1p-10f), 0x00);      /* tie to even: 0 */
    TEST_EQ_INT(wk_f32_to_f8e4m3(0x3p-10f), 0x02);      /* 1.5 units: tie to even (2) */
    TEST_EQ_INT(wk_f32_to_f8e4m3(1.0625f), 0x38);       /* tie between 1 and 1.125: even */
    TEST_EQ_INT(wk_f32_to_f8e4m3(1.1875f), 0x3A);       /* tie between 1.125, 1.25: even */
    TEST_EQ_INT(wk_f32_to_f8e4m3(from_bits32(0x7FC00000u)), 0x7F); /* NaN */
    TEST_EQ_INT(wk_f32_to_f8e4m3(from_bits32(0xFFC00000u)), 0xFF); /* -NaN keeps its sign */

    TEST_CHECK(wk_f8e4m3_to_f32(0x38) == 1.0f, "f8 0x38 -> 1");
    TEST_CHECK(wk_f8e4m3_to_f32(0x7E) == 448.0f, "f8 0x7E -> 448");
    TEST_CHECK(wk_f8e4m3_to_f32(0xFE) == -448.0f, "f8 0xFE -> -448");
    TEST_CHECK(wk_f8e4m3_to_f32(0x01) == 0x1p-9f, "f8 0x01 -> 2^-9");
    TEST_CHECK(wk_f8e4m3_to_f32(0x78) == 256.0f, "f8 0x78 -> 256 (exponent 15 is finite)");
    TEST_CHECK(bits32(wk_f8e4m3_to_f32(0x80)) == 0x80000000u, "f8 0x80 -> -0");
    TEST_CHECK(isnan(wk_f8e4m3_to_f32(0x7F)), "f8 0x7F -> NaN");
    TEST_CHECK(isnan(wk_f8e4m3_to_f32(0xFF)), "f8 0xFF -> NaN");
}

/* Value of a binary float from its fields: 1 sign bit, ebits exponent bits, mbits fraction bits,
 * bias; all-ones exponent is inf/NaN when ieee_special, else only S.1111.111 is NaN (E4M3FN). */
static double decode_fields(uint32_t b, int ebits, int mbits, int bias, int ieee_special)
{
    uint32_t m = b & ((1u << mbits) - 1u);
    uint32_t e = (b >> mbits) & ((1u << ebits) - 1u);
    int neg = (b >> (ebits + mbits)) & 1u;
    double v;
    if (ieee_special && e == (1u << ebits) - 1u)
        v = m ? NAN : INFINITY;
    else if (!ieee_special && e == (1u << ebits) - 1u && m == (1u << mbits) - 1u)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - mbits);
    else
        v = ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
    return neg ? -v : v;
}

typedef uint32_t (*encode_fn)(float);
typedef float (*decode_fn)(uint32_t);
static uint32_t enc_f16(float x) { return wk_f32_to_f16(x); }
static float dec_f16(uint32_t b) { return wk_f16_to_f32((uint16_t)b); }
static uint32_t enc_bf16(float x) { return wk_f32_to_bf16(x); }
static float dec_bf16(uint32_t b) { return wk_bf16_to_f32((uint16_t)b); }
static uint32_t enc_f8(float x) { return wk_f32_to_f8e4m3(x); }
static float dec_f8(uint32_t b) { return wk_f8e4m3_to_f32((uint8_t)b); }

/* Every pattern of a format: decode matches the fields; encode(decode(b)) == b (NaN stays NaN);
 * and between each pair of finite neighbours (lo, hi), the midpoint goes to the one with the even
 * last bit, the float below it to lo and the float above it to hi. */
static void exhaustive(const char *name, int nbits, int ebits, int mbits, int bias, int ieee,
                       encode_fn enc, decode_fn dec)
{
    const uint32_t count = 1u << nbits, sign = 1u << (nbits - 1);
    int bad_dec = 0, bad_rt = 0, bad_round = 0;
    for (uint32_t b = 0; b < count; b++) {
        const double want = decode_fields(b, ebits, mbits, bias, ieee);
        const float got = dec(b);
        if (!(isnan(want) ? isnan(got) : ((double)got == want && !!signbit(got) == !!(b & sign)))) {
            if (bad_dec++ < 5)
                TEST_CHECK(0, "%s decode 0x%x: got %.9g, expected %.9g", name, b, got, want);
        }
        const uint32_t back = enc(got);
        int ok = isnan(want) ? isnan(dec(back)) : back == b;
        if (!ok && bad_rt++ < 5)
            TEST_CHECK(0, "%s round trip 0x%x -> %.9g -> 0x%x", name, b, got, back);
        /* Rounding boundary between b and b+1 (same sign, both finite). */
        const uint32_t nb = b + 1;
        if ((nb & sign) != (b & sign) || nb >= count)
            continue;
        const double hi = decode_fields(nb, ebits, mbits, bias, ieee);
        if (isnan(want) || isinf(want) || isnan(hi) || isinf(hi))
            continue;
        const float mid = (float)((want + hi) / 2); /* exact: one more bit than the format */
        const float below = nextafterf(mid, (float)want), above = nextafterf(mid, (float)hi);
        const uint32_t even = (b & 1u) ? nb : b;
        if (enc(mid) != even || enc(below) != b || enc(above) != nb) {
            if (bad_round++ < 5)
                TEST_CHECK(0, "%s rounding between 0x%x and 0x%x: mid %.9g -> 0x%x (want 0x%x), "
                           "below -> 0x%x, above -> 0x%x", name, b, nb, mid, enc(mid), even,
                           enc(below), enc(above));
        }
    }
    TEST_CHECK(bad_dec == 0, "%s: %d patterns decode wrongly", name, bad_dec);
    TEST_CHECK(bad_rt == 0, "%s: %d patterns do not round-trip", name, bad_rt);
    TEST_CHECK(bad_round == 0, "%s: %d rounding boundaries wrong", name, bad_round);
}

/* wk_fp_f8e4m3_to_f16: exact, since f16 holds every e4m3 value (subnormals included). */
static void test_f8_to_f16(void)
{
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x00), 0x0000);
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x80), 0x8000); /* -0 */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x38), 0x3C00); /* 1 */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0xC0), 0xC000); /* -2 */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x7E), 0x5F00); /* 448 = 1.75 * 2^8 */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x08), 0x2400); /* 2^-6, the smallest normal */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x01), 0x1800); /* 2^-9, the smallest subnormal */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x03), 0x1E00); /* 3 * 2^-9 = 1.5 * 2^-8 */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x07), 0x2300); /* 7 * 2^-9 = 1.75 * 2^-7 */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0x7F), 0x7E00); /* NaN */
    TEST_EQ_INT(wk_fp_f8e4m3_to_f16(0xFF), 0xFE00);
    for (int b = 0; b < 256; b++) {
        const float want = wk_f8e4m3_to_f32((uint8_t)b);
        const uint16_t h = wk_fp_f8e4m3_to_f16((uint8_t)b);
        const float got = wk_f16_to_f32(h);
        if (isnan(want))
            TEST_CHECK(h == ((b & 0x80) ? 0xFE00 : 0x7E00), "f8e4m3 0x%02x -> f16 0x%04x", b, h);
        else
            TEST_CHECK(bits32(got) == bits32(want), "f8e4m3 0x%02x -> f16 0x%04x = %g, want %g",
                       b, h, (double)got, (double)want);
    }
}

int main(void)
{
    test_facts();
    test_op_defined();
    test_f16_literals();
    test_bf16_literals();
    test_f8_literals();
    exhaustive("f16", 16, 5, 10, 15, 1, enc_f16, dec_f16);
    exhaustive("bf16", 16, 8, 7, 127, 1, enc_bf16, dec_bf16);
    exhaustive("f8e4m3", 8, 4, 3, 7, 0, enc_f8, dec_f8);
    test_f8_to_f16();
    return testlib_summary();
}
