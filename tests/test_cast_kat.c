/* test_cast_kat.c: known answers for wk_to_dtype on every device (docs/semantics.md,
 * "Conversions"): round to nearest even into f16/bf16/f8e4m3, overflow to inf (f16, bf16) or
 * saturation (f8e4m3), quiet NaNs, float -> int truncation with saturation and NaN -> 0 (Rust's
 * `as`), int -> int two's-complement wrap, int -> float round to nearest even, and f64 reaching
 * the reduced types through f32. Every expected bit pattern is worked out in its comment.
 * Run: ctest -R test_cast_kat */
#include "testlib.h"
#include <math.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* Casts n elements of `from` (host x) to `to`; compares the raw result with want (host, n
 * elements of `to`). nan_ok: for float outputs, any NaN matches an expected NaN. */
static void cast_case(const char *what, wk_dtype from, wk_dtype to, const void *x, const void *want,
                      size_t n)
{
    wk_storage *sx = testlib_upload(g_dev, from, x, n), *sy = NULL;
    if (!sx)
        return;
    const wk_layout l = testlib_layout1((int64_t)n);
    const wk_status st = wk_to_dtype(&sy, sx, &l, to);
    if (TEST_CHECK(st == WK_OK, "%s: to_dtype %s -> %s (%s): %s (%s)", g_spec, wk_dtype_name(from),
                   wk_dtype_name(to), what, wk_status_string(st), wk_last_error())) {
        const size_t es = wk_dtype_size(to);
        unsigned char got[64];
        TEST_CHECK(wk_storage_dtype(sy) == to && wk_storage_len(sy) == n, "%s: output dtype/len",
                   g_spec);
        if (n * es <= sizeof got && !testlib_download(got, n, sy)) {
            const unsigned char *w = want;
            for (size_t i = 0; i < n; i++) {
                int ok = memcmp(got + i * es, w + i * es, es) == 0;
                if (!ok && to == WK_DTYPE_F32) {
                    float a, b;
                    memcpy(&a, got + i * es, 4);
                    memcpy(&b, w + i * es, 4);
                    ok = isnan(a) && isnan(b);
                } else if (!ok && to == WK_DTYPE_F64) {
                    double a, b;
                    memcpy(&a, got + i * es, 8);
                    memcpy(&b, w + i * es, 8);
                    ok = isnan(a) && isnan(b);
                }
                if (!TEST_CHECK(ok, "%s: to_dtype %s -> %s (%s) element %zu wrong", g_spec,
                                wk_dtype_name(from), wk_dtype_name(to), what, i)) {
                    printf("  got  ");
                    for (size_t k = es; k-- > 0;)
                        printf("%02x", got[i * es + k]);
                    printf("\n  want ");
                    for (size_t k = es; k-- > 0;)
                        printf("%02x", w[i * es + k]);
                    printf("\n");
                }
            }
        }
    }
    wk_storage_free(sy);
    wk_storage_free(sx);
}

#define CAST(what, FT, FROM, TT, TO, X, W)                                   \
    do {                                                                     \
        const FT x_[] = X;                                                   \
        const TT w_[] = W;                                                   \
        _Static_assert(sizeof x_ / sizeof x_[0] == sizeof w_ / sizeof w_[0], \
                       "input and expected counts differ");                  \
        cast_case(what, FROM, TO, x_, w_, sizeof x_ / sizeof x_[0]);         \
    } while (0)
#define L(...) {__VA_ARGS__}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void test_to_reduced(void)
{
    /* f32 -> f16: 1 = 0x3C00; 65504 (max) = 0x7BFF; 65520 rounds up to inf; 2^-24 is the
     * smallest subnormal 0x0001; 2^-25 ties to even (0); 1 + 2^-11 ties to even (0x3C00);
     * -inf = 0xFC00. */
    CAST("f16 literals", float, WK_DTYPE_F32, uint16_t, WK_DTYPE_F16,
         L(1.0f, 65504.0f, 65520.0f, 0x1p-24f, 0x1p-25f, 1.0f + 0x1p-11f, -INFINITY, -0.0f),
         L(0x3C00, 0x7BFF, 0x7C00, 0x0001, 0x0000, 0x3C00, 0xFC00, 0x8000));
    /* NaN -> quiet NaN: the f32 default NaN 0x7FC00000 -> 0x7E00; a signalling NaN 0x7F800001
     * gets the quiet bit: 0x7E00. */
    {
        const float x[2] = {f32_from_bits(0x7FC00000u), f32_from_bits(0x7F800001u)};
        const uint16_t w[2] = {0x7E00, 0x7E00};
        cast_case("f16 NaN", WK_DTYPE_F32, WK_DTYPE_F16, x, w, 2);
    }
    /* f32 -> bf16: 1 = 0x3F80; 1 + 2^-8 ties to even (0x3F80); 1 + 3*2^-8 ties to even
     * (0x3F82); 1 + 2^-8 + 2^-20 rounds up (0x3F81); FLT_MAX rounds to inf (0x7F80). */
    {
        const float x[6] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 1.0f + 0x1p-8f + 0x1p-20f,
                            f32_from_bits(0x7F7FFFFFu), f32_from_bits(0xFF800001u)};
        const uint16_t w[6] = {0x3F80, 0x3F80, 0x3F82, 0x3F81, 0x7F80, 0xFFC0};
        cast_case("bf16 literals", WK_DTYPE_F32, WK_DTYPE_BF16, x, w, 6);
    }
    /* f32 -> f8e4m3 (E4M3FN): 448 = 0x7E; 1000 saturates to 0x7E; -inf saturates to 0xFE; 2^-9 =
     * 0x01; 2^-6 = 0x08; NaN = 0x7F; 1 = 0x38. */
    {
        const float x[7] = {448.0f, 1000.0f, -INFINITY, 0x1p-9f, 0x1p-6f, f32_from_bits(0x7FC00000u),
                            1.0f};
        const uint8_t w[7] = {0x7E, 0x7E, 0xFE, 0x01, 0x08, 0x7F, 0x38};
        cast_case("f8e4m3 literals", WK_DTYPE_F32, WK_DTYPE_F8E4M3, x, w, 7);
    }
    /* f8e4m3 -> f32: 0x7F and 0xFF are NaN; 0x7E = 448; 0x01 = 2^-9; 0x80 = -0. */
    {
        const uint8_t x[5] = {0x7F, 0xFF, 0x7E, 0x01, 0x80};
        const float w[5] = {NAN, NAN, 448.0f, 0x1p-9f, -0.0f};
        cast_case("from f8e4m3", WK_DTYPE_F8E4M3, WK_DTYPE_F32, x, w, 5);
    }
    /* f64 -> f16 goes through f32 (semantics.md): 1 + 2^-11 + 2^-40 would round up to 0x3C01
     * directly, but f32 drops the 2^-40 and the tie goes to even: 0x3C00. 1e300 -> inf. */
    CAST("f64 via f32", double, WK_DTYPE_F64, uint16_t, WK_DTYPE_F16,
         L(1.0 + 0x1p-11 + 0x1p-40, 1e300, 0.5), L(0x3C00, 0x7C00, 0x3800));
    /* f64 -> f32: round to nearest even; 1e300 overflows to inf; 1e-50 underflows to 0. */
    CAST("f64 to f32", double, WK_DTYPE_F64, float, WK_DTYPE_F32, L(0.1, 1e300, -1e-50, 1.0 + 0x1p-24),
         L(0.1f, INFINITY, -0.0f, 1.0f));
    /* Between reduced types: f16 1 + 2^-10 (0x3C01) -> bf16 has 7 fraction bits: 1.0 (0x3F80);
     * f16 65504 (0x7BFF) = 0x477FE000 in f32 -> bf16 rounds up: 65536 (0x4780); f16 inf -> inf. */
    CAST("f16 to bf16", uint16_t, WK_DTYPE_F16, uint16_t, WK_DTYPE_BF16, L(0x3C01, 0x7BFF, 0x7C00),
         L(0x3F80, 0x4780, 0x7F80));
    /* bf16 65536 (0x4780) overflows f16: inf; bf16 2^-30 (0x3080) underflows f16: 0. */
    CAST("bf16 to f16", uint16_t, WK_DTYPE_BF16, uint16_t, WK_DTYPE_F16, L(0x4780, 0x3080, 0xBF80),
         L(0x7C00, 0x0000, 0xBC00));
    /* f8e4m3 448 (0x7E) -> f16 1.75 * 2^8: exponent 23, fraction 0x300: 0x5F00. f16 inf -> f8
     * saturates: 0x7E. */
    CAST("f8 to f16", uint8_t, WK_DTYPE_F8E4M3, uint16_t, WK_DTYPE_F16, L(0x7E, 0x38), L(0x5F00, 0x3C00));
    CAST("f16 to f8", uint16_t, WK_DTYPE_F16, uint8_t, WK_DTYPE_F8E4M3, L(0x7C00, 0xFC00, 0x3C00),
         L(0x7E, 0xFE, 0x38));
}

static void test_float_to_int(void)
{
    /* Rust `as`: NaN -> 0, truncate toward zero, saturate (inf too). */
    CAST("f32 to i32", float, WK_DTYPE_F32, int32_t, WK_DTYPE_I32,
         L(NAN, 3.9f, -3.9f, 1e10f, -1e10f, INFINITY, -INFINITY, 2147483520.0f, -2147483648.0f),
         L(0, 3, -3, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 2147483520, INT32_MIN));
    /* u8: -1 -> 0, 255.9 -> 255, 300 -> 255, -0.5 -> 0. */
    CAST("f32 to u8", float, WK_DTYPE_F32, uint8_t, WK_DTYPE_U8, L(-1.0f, 255.9f, 300.0f, -0.5f, 7.5f),
         L(0, 255, 255, 0, 7));
    /* u32: 2^32 saturates to 2^32 - 1; 4294967040 (the largest f32 below 2^32) fits. */
    CAST("f32 to u32", float, WK_DTYPE_F32, uint32_t, WK_DTYPE_U32,
         L(4294967296.0f, 4294967040.0f, -5.0f, NAN), L(4294967295u, 4294967040u, 0u, 0u));
    CAST("f32 to i16", float, WK_DTYPE_F32, int16_t, WK_DTYPE_I16, L(40000.0f, -40000.0f, -32768.9f),
         L(32767, -32768, -32768));
    /* f64 -> i64: 2^63 (9223372036854775808.0) is one past INT64_MAX: saturate; 1e19 too. */
    CAST("f64 to i64", double, WK_DTYPE_F64, int64_t, WK_DTYPE_I64,
         L(9223372036854775808.0, 1e19, -1e19, -9223372036854775808.0, 9007199254740993.0, NAN),
         L(INT64_MAX, INT64_MAX, INT64_MIN, INT64_MIN, INT64_C(9007199254740992), 0));
    /* Reduced -> int: f8 NaN -> 0; f8 -448 (0xFE) -> i32 -448, -> u8 0; bf16 2^32 (0x4F80) ->
     * i32 saturates. */
    CAST("f8 to i32", uint8_t, WK_DTYPE_F8E4M3, int32_t, WK_DTYPE_I32, L(0x7F, 0xFE, 0x3C), L(0, -448, 1));
    CAST("f8 to u8", uint8_t, WK_DTYPE_F8E4M3, uint8_t, WK_DTYPE_U8, L(0xFE, 0x7E), L(0, 255));
    CAST("bf16 to i32", uint16_t, WK_DTYPE_BF16, int32_t, WK_DTYPE_I32, L(0x4F80, 0xC0B0),
         L(INT32_MAX, -5));
    CAST("f16 to i64", uint16_t, WK_DTYPE_F16, int64_t, WK_DTYPE_I64, L(0x7C00, 0xFC00, 0x7E00),
         L(INT64_MAX, INT64_MIN, 0));
}

static void test_int_to_int(void)
{
    /* Two's-complement wrap to the target width (Rust `as`). */
    CAST("i32 to u8", int32_t, WK_DTYPE_I32, uint8_t, WK_DTYPE_U8, L(300, -1, 255, 256), L(44, 255, 255, 0));
    CAST("i64 to u32", int64_t, WK_DTYPE_I64, uint32_t, WK_DTYPE_U32, L(-1, INT64_C(4294967301)),
         L(4294967295u, 5u));
    CAST("i64 to i32", int64_t, WK_DTYPE_I64, int32_t, WK_DTYPE_I32,
         L(INT64_C(4294967301), INT64_C(2147483648), INT64_MIN), L(5, INT32_MIN, 0));
    CAST("u32 to i32", uint32_t, WK_DTYPE_U32, int32_t, WK_DTYPE_I32, L(4294967295u, 2147483648u),
         L(-1, INT32_MIN));
    CAST("u32 to i64", uint32_t, WK_DTYPE_U32, int64_t, WK_DTYPE_I64, L(4294967295u), L(INT64_C(4294967295)));
    CAST("i16 to u32", int16_t, WK_DTYPE_I16, uint32_t, WK_DTYPE_U32, L(-1, -32768), L(4294967295u, 4294934528u));
    CAST("u8 to i16", uint8_t, WK_DTYPE_U8, int16_t, WK_DTYPE_I16, L(200, 255), L(200, 255));
    CAST("i32 to i16", int32_t, WK_DTYPE_I32, int16_t, WK_DTYPE_I16, L(32768, 65535, -32769), L(-32768, -1, 32767));
    CAST("i64 to u8", int64_t, WK_DTYPE_I64, uint8_t, WK_DTYPE_U8, L(INT64_C(-256), INT64_C(511)), L(0, 255));
}

static void test_int_to_float(void)
{
    /* Round to nearest even: 2^24 + 1 ties to 2^24 (even); 2^24 + 3 ties to 2^24 + 4. */
    CAST("i32 to f32", int32_t, WK_DTYPE_I32, float, WK_DTYPE_F32, L(16777217, 16777219, -7, INT32_MIN),
         L(16777216.0f, 16777220.0f, -7.0f, -2147483648.0f));
    /* 2^53 + 1 ties to 2^53 in f64; INT64_MIN is exact. */
    CAST("i64 to f64", int64_t, WK_DTYPE_I64, double, WK_DTYPE_F64,
         L(INT64_C(9007199254740993), INT64_MIN, INT64_MAX),
         L(9007199254740992.0, -9223372036854775808.0, 9223372036854775808.0));
    CAST("i64 to f32", int64_t, WK_DTYPE_I64, float, WK_DTYPE_F32, L(INT64_MIN, INT64_C(16777217)),
         L(-9223372036854775808.0f, 16777216.0f));
    CAST("u32 to f32", uint32_t, WK_DTYPE_U32, float, WK_DTYPE_F32, L(4294967295u), L(4294967296.0f));
    /* To reduced types through f32: i32 65519 -> f16 65504 (below the 65520 midpoint); 70000 ->
     * inf; i64 257 -> bf16 ties to 256 (0x4380); u8 255 -> f8e4m3 256 (0x78, spacing 16 there);
     * i32 1000 -> f8e4m3 saturates (0x7E). */
    CAST("i32 to f16", int32_t, WK_DTYPE_I32, uint16_t, WK_DTYPE_F16, L(65519, 70000, -2), L(0x7BFF, 0x7C00, 0xC000));
    CAST("i64 to bf16", int64_t, WK_DTYPE_I64, uint16_t, WK_DTYPE_BF16, L(257, 259), L(0x4380, 0x4382));
    CAST("u8 to f8", uint8_t, WK_DTYPE_U8, uint8_t, WK_DTYPE_F8E4M3, L(255, 1), L(0x78, 0x38));
    CAST("i32 to f8", int32_t, WK_DTYPE_I32, uint8_t, WK_DTYPE_F8E4M3, L(1000, -1000), L(0x7E, 0xFE));
    /* f32 -> f64 is exact: 0.1f = 0.100000001490116119384765625. */
    CAST("f32 to f64", float, WK_DTYPE_F32, double, WK_DTYPE_F64, L(0.1f, -INFINITY),
         L(0.100000001490116119384765625, -INFINITY));
}

/* A strided source and same-dtype conversion (a copy): the transpose of a 2x3 i32 matrix. */
static void test_strided(void)
{
    const int32_t x[6] = {0, 1, 2, 3, 4, 5};
    wk_storage *sx = testlib_upload(g_dev, WK_DTYPE_I32, x, 6), *sy = NULL;
    if (!sx)
        return;
    const wk_layout l = testlib_layout2(2, 3);
    wk_layout t;
    TEST_EQ_STATUS(wk_layout_transpose(&t, &l, 0, 1), WK_OK);
    const int32_t want[6] = {0, 3, 1, 4, 2, 5};
    int32_t y[6];
    if (TEST_EQ_STATUS(wk_to_dtype(&sy, sx, &t, WK_DTYPE_I32), WK_OK) && !testlib_download(y, 6, sy))
        for (int i = 0; i < 6; i++)
            TEST_EQ_INT(y[i], want[i]);
    wk_storage_free(sy);
    sy = NULL;
    double d[6];
    if (TEST_EQ_STATUS(wk_to_dtype(&sy, sx, &t, WK_DTYPE_F64), WK_OK) && !testlib_download(d, 6, sy))
        for (int i = 0; i < 6; i++)
            TEST_NEAR(d[i], want[i], 0);
    wk_storage_free(sy);
    wk_storage_free(sx);
}

/* Every one of the 100 (from, to) pairs runs and converts small integers exactly (0..3 are
 * representable in every dtype). */
static void test_all_pairs(void)
{
    const double vals[4] = {0, 1, 2, 3};
    for (int from = 0; from < WK_DTYPE_COUNT; from++) {
        unsigned char buf[4 * 8];
        /* Encode 0..3 in `from` via an f64 -> from conversion on the device. */
        wk_storage *s64 = testlib_upload(g_dev, WK_DTYPE_F64, vals, 4), *sx = NULL;
        const wk_layout l = testlib_layout1(4);
        if (!s64 || !TEST_EQ_STATUS(wk_to_dtype(&sx, s64, &l, (wk_dtype)from), WK_OK)) {
            wk_storage_free(s64);
            continue;
        }
        for (int to = 0; to < WK_DTYPE_COUNT; to++) {
            wk_storage *sy = NULL, *back = NULL;
            wk_status st = wk_to_dtype(&sy, sx, &l, (wk_dtype)to);
            if (TEST_CHECK(st == WK_OK, "%s: to_dtype %s -> %s: %s (%s)", g_spec,
                           wk_dtype_name((wk_dtype)from), wk_dtype_name((wk_dtype)to),
                           wk_status_string(st), wk_last_error()) &&
                TEST_EQ_STATUS(wk_to_dtype(&back, sy, &l, WK_DTYPE_F64), WK_OK) &&
                !testlib_download(buf, 4, back)) {
                double got[4];
                memcpy(got, buf, sizeof got);
                for (int i = 0; i < 4; i++)
                    TEST_CHECK(got[i] == vals[i], "%s: %s -> %s of %g gave %g", g_spec,
                               wk_dtype_name((wk_dtype)from), wk_dtype_name((wk_dtype)to), vals[i],
                               got[i]);
            }
            wk_storage_free(back);
            wk_storage_free(sy);
        }
        wk_storage_free(sx);
        wk_storage_free(s64);
    }
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        test_to_reduced();
        test_float_to_int();
        test_int_to_int();
        test_int_to_float();
        test_strided();
        test_all_pairs();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
