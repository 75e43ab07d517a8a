/* test_unary_kat.c: known answers for the unary ops, affine, powf and elu, on every device.
 * Each expected value says where it comes from: a hand computation, the formula in
 * docs/semantics.md evaluated in double precision, or a rule of that document.
 * Run: ctest -R test_unary_kat */
#include "testlib.h"
#include <math.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* Relative tolerances: f32 transcendental functions may differ by a few ulps between libms
 * (glibc, CUDA, ROCm device libs); 2^-21 is 4 ulps. f64: 1e-14 relative. */
#define TOL32 4.8e-7
#define TOL64 1e-14

/* y (host, n elements) = op(x) on g_dev. op may be AFFINE/POWF/ELU (params p0, p1). */
static int run(void *y, wk_op op, wk_dtype dt, const void *x, size_t n, double p0, double p1)
{
    wk_storage *sx = testlib_upload(g_dev, dt, x, n), *sy = NULL;
    if (!sx)
        return 1;
    const wk_layout lx = testlib_layout1((int64_t)n);
    wk_status st;
    if (op == WK_OP_AFFINE)
        st = wk_affine(&sy, sx, &lx, p0, p1);
    else if (op == WK_OP_POWF)
        st = wk_powf(&sy, sx, &lx, p0);
    else if (op == WK_OP_ELU)
        st = wk_elu(&sy, sx, &lx, p0);
    else
        st = wk_unary(&sy, op, sx, &lx);
    int bad = !TEST_CHECK(st == WK_OK, "%s: %s on %zu %s: %s (%s)", g_spec, wk_op_name(op), n,
                          wk_dtype_name(dt), wk_status_string(st), wk_last_error());
    if (!bad) {
        bad = !TEST_CHECK(wk_storage_dtype(sy) == dt && wk_storage_len(sy) == n,
                          "%s: %s output dtype/len", g_spec, wk_op_name(op));
        if (!bad)
            bad = testlib_download(y, n, sy);
    }
    wk_storage_free(sy);
    wk_storage_free(sx);
    return bad;
}

static void f32_case(wk_op op, float x, double p0, double want, double reltol)
{
    float y = 0;
    if (run(&y, op, WK_DTYPE_F32, &x, 1, p0, 0))
        return;
    const double tol = reltol * (fabs(want) > 1 ? fabs(want) : 1);
    if (!TEST_NEAR(y, want, tol))
        printf("  (%s: f32 %s(%.9g, p %g))\n", g_spec, wk_op_name(op), x, p0);
}

static void f64_case(wk_op op, double x, double p0, double want, double reltol)
{
    double y = 0;
    if (run(&y, op, WK_DTYPE_F64, &x, 1, p0, 0))
        return;
    const double tol = reltol * (fabs(want) > 1 ? fabs(want) : 1);
    if (!TEST_NEAR(y, want, tol))
        printf("  (%s: f64 %s(%.17g, p %g))\n", g_spec, wk_op_name(op), x, p0);
}

/* Reduced types: bits in, bits out (computed in f32, rounded once to the storage type). */
static void bits_case(wk_dtype dt, wk_op op, uint32_t xbits, uint32_t want)
{
    uint16_t x16 = (uint16_t)xbits, y16 = 0;
    uint8_t x8 = (uint8_t)xbits, y8 = 0;
    const int is8 = dt == WK_DTYPE_F8E4M3;
    if (run(is8 ? (void *)&y8 : (void *)&y16, op, dt, is8 ? (void *)&x8 : (void *)&x16, 1, 0, 0))
        return;
    const uint32_t got = is8 ? y8 : y16;
    TEST_CHECK(got == want, "%s: %s %s(0x%x) = 0x%x, expected 0x%x", g_spec, wk_dtype_name(dt),
               wk_op_name(op), xbits, got, want);
}

static uint32_t f32bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void test_f32(void)
{
    const double e = 2.718281828459045; /* exp(1), public constant */
    f32_case(WK_OP_EXP, 0.0f, 0, 1.0, 0);
    f32_case(WK_OP_EXP, 1.0f, 0, e, TOL32);
    f32_case(WK_OP_EXP, -INFINITY, 0, 0.0, 0);
    f32_case(WK_OP_EXP, INFINITY, 0, INFINITY, 0);
    f32_case(WK_OP_EXP, NAN, 0, NAN, 0);
    f32_case(WK_OP_LOG, 1.0f, 0, 0.0, 0);
    f32_case(WK_OP_LOG, (float)e, 0, 1.0, TOL32);
    f32_case(WK_OP_LOG, 0.0f, 0, -INFINITY, 0);
    f32_case(WK_OP_LOG, -1.0f, 0, NAN, 0);
    f32_case(WK_OP_SIN, 0.0f, 0, 0.0, 0);
    f32_case(WK_OP_SIN, 1.0f, 0, 0.8414709848078965, TOL32);   /* sin(1) */
    f32_case(WK_OP_COS, 0.0f, 0, 1.0, 0);
    f32_case(WK_OP_COS, 1.0f, 0, 0.5403023058681398, TOL32);   /* cos(1) */
    f32_case(WK_OP_TANH, 1.0f, 0, 0.7615941559557649, TOL32);  /* tanh(1) */
    f32_case(WK_OP_TANH, -INFINITY, 0, -1.0, 0);
    f32_case(WK_OP_ABS, -2.5f, 0, 2.5, 0);
    f32_case(WK_OP_NEG, 1.5f, 0, -1.5, 0);
    f32_case(WK_OP_RECIP, 4.0f, 0, 0.25, 0);
    f32_case(WK_OP_RECIP, 0.0f, 0, INFINITY, 0);
    f32_case(WK_OP_RECIP, -0.0f, 0, -INFINITY, 0);
    f32_case(WK_OP_SQR, -3.0f, 0, 9.0, 0);
    f32_case(WK_OP_SQRT, 2.0f, 0, 1.4142135623730951, TOL32); /* sqrt is correctly rounded */
    f32_case(WK_OP_SQRT, -1.0f, 0, NAN, 0);
    /* gelu (tanh form) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated in double. */
    f32_case(WK_OP_GELU, 1.0f, 0, 0.8411919906082768, TOL32);
    f32_case(WK_OP_GELU, -1.0f, 0, -0.15880800939172324, 2e-6); /* gelu(-1) = gelu(1) - 1 */
    f32_case(WK_OP_GELU, 0.0f, 0, 0.0, 0);
    /* gelu_erf = 0.5 x (1 + erf(x / sqrt 2)); differs from the tanh form in the 4th digit. */
    f32_case(WK_OP_GELU_ERF, 1.0f, 0, 0.8413447460685429, TOL32);
    f32_case(WK_OP_GELU_ERF, -1.0f, 0, -0.15865525393145707, 2e-6);
    f32_case(WK_OP_ERF, 1.0f, 0, 0.8427007929497149, TOL32);   /* erf(1) */
    f32_case(WK_OP_ERF, INFINITY, 0, 1.0, 0);
    f32_case(WK_OP_RELU, -1.0f, 0, 0.0, 0);
    f32_case(WK_OP_RELU, 2.0f, 0, 2.0, 0);
    f32_case(WK_OP_SILU, 1.0f, 0, 0.7310585786300049, TOL32);  /* 1 / (1 + e^-1) */
    f32_case(WK_OP_SILU, 0.0f, 0, 0.0, 0);
    f32_case(WK_OP_SIGMOID, 0.0f, 0, 0.5, 0);
    f32_case(WK_OP_SIGMOID, 1.0f, 0, 0.7310585786300049, TOL32);
    f32_case(WK_OP_FLOOR, -1.5f, 0, -2.0, 0);
    f32_case(WK_OP_CEIL, -1.5f, 0, -1.0, 0);
    /* round: half away from zero (wick.h). */
    f32_case(WK_OP_ROUND, -2.5f, 0, -3.0, 0);
    f32_case(WK_OP_ROUND, 2.5f, 0, 3.0, 0);
    f32_case(WK_OP_ROUND, 0.5f, 0, 1.0, 0);
    f32_case(WK_OP_ROUND, 0.49999997f, 0, 0.0, 0); /* largest float below 0.5: floor(x+0.5) gets 1 */
    f32_case(WK_OP_ROUND, 8388609.0f, 0, 8388609.0, 0); /* 2^23+1: already an integer */
    f32_case(WK_OP_SIGN, -3.0f, 0, -1.0, 0);
    f32_case(WK_OP_SIGN, 5.0f, 0, 1.0, 0);
    f32_case(WK_OP_SIGN, 0.0f, 0, 0.0, 0);
    f32_case(WK_OP_SIGN, NAN, 0, NAN, 0);

    /* Signed zeros, checked on the bits. neg(0) = -0; abs(-0) = +0; sign(-0) = +0 (semantics.md). */
    const float z[3] = {0.0f, -0.0f, -0.0f};
    const wk_op zops[3] = {WK_OP_NEG, WK_OP_ABS, WK_OP_SIGN};
    const uint32_t zwant[3] = {0x80000000u, 0, 0};
    for (int i = 0; i < 3; i++) {
        float y = 1;
        if (!run(&y, zops[i], WK_DTYPE_F32, &z[i], 1, 0, 0))
            TEST_CHECK(f32bits(y) == zwant[i], "%s: %s(%g) bits 0x%08x, expected 0x%08x", g_spec,
                       wk_op_name(zops[i]), z[i], f32bits(y), zwant[i]);
    }

    /* affine f32: x * 2 + 0.5. */
    const float ax[3] = {1, 2, -3};
    float ay[3];
    if (!run(ay, WK_OP_AFFINE, WK_DTYPE_F32, ax, 3, 2.0, 0.5)) {
        TEST_NEAR(ay[0], 2.5, 0);
        TEST_NEAR(ay[1], 4.5, 0);
        TEST_NEAR(ay[2], -5.5, 0);
    }
    /* affine rounds twice, no FMA (semantics.md): x = mul = 1+2^-12, add = -(1+2^-11).
     * x*mul = 1 + 2^-11 + 2^-24 exactly, a tie in f32 that rounds to even, 1 + 2^-11; adding
     * add gives 0. A fused multiply-add would give 2^-24. */
    const float fx = 1.0f + 0x1p-12f;
    float fy = -1;
    if (!run(&fy, WK_OP_AFFINE, WK_DTYPE_F32, &fx, 1, 1.0 + 0x1p-12, -(1.0 + 0x1p-11)))
        TEST_CHECK(fy == 0.0f, "%s: affine contracted into an FMA: got %g, expected 0", g_spec, fy);

    /* powf = C powf. */
    f32_case(WK_OP_POWF, 2.0f, 10, 1024.0, 0);
    f32_case(WK_OP_POWF, 4.0f, 0.5, 2.0, TOL32);
    f32_case(WK_OP_POWF, 2.0f, -1, 0.5, TOL32);
    f32_case(WK_OP_POWF, -2.0f, 2, 4.0, TOL32);     /* negative base, integer exponent */
    f32_case(WK_OP_POWF, -8.0f, 1.0 / 3, NAN, 0);  /* negative base, non-integer exponent */
    f32_case(WK_OP_POWF, 0.0f, 0, 1.0, 0);         /* pow(0, 0) = 1 (C99 F.9.4.4) */
    /* elu(alpha): x > 0 ? x : alpha (e^x - 1). */
    f32_case(WK_OP_ELU, 1.0f, 1.0, 1.0, 0);
    f32_case(WK_OP_ELU, -1.0f, 1.0, -0.6321205588285577, 2e-6);
    f32_case(WK_OP_ELU, -1.0f, 2.0, -1.2642411176571153, 2e-6);
    f32_case(WK_OP_ELU, 0.0f, 1.0, 0.0, 0);
    f32_case(WK_OP_ELU, -INFINITY, 1.0, -1.0, 0);
}

static void test_f64(void)
{
    f64_case(WK_OP_EXP, 1.0, 0, 2.718281828459045, TOL64);
    f64_case(WK_OP_LOG, 2.0, 0, 0.6931471805599453, TOL64);   /* ln 2 */
    f64_case(WK_OP_TANH, 1.0, 0, 0.7615941559557649, TOL64);
    f64_case(WK_OP_ERF, 1.0, 0, 0.8427007929497149, TOL64);
    f64_case(WK_OP_GELU, 1.0, 0, 0.8411919906082768, TOL64);
    f64_case(WK_OP_GELU_ERF, 1.0, 0, 0.8413447460685429, TOL64);
    f64_case(WK_OP_SIGMOID, 1.0, 0, 0.7310585786300049, TOL64);
    f64_case(WK_OP_SQRT, 2.0, 0, 1.4142135623730951, 0);      /* correctly rounded */
    f64_case(WK_OP_ROUND, -2.5, 0, -3.0, 0);
    f64_case(WK_OP_ROUND, 0.49999999999999994, 0, 0.0, 0);    /* largest double below 0.5 */
    f64_case(WK_OP_ROUND, 4503599627370497.0, 0, 4503599627370497.0, 0); /* 2^52+1 */
    f64_case(WK_OP_SIGN, -0.25, 0, -1.0, 0);
    f64_case(WK_OP_POWF, 2.0, 0.5, 1.4142135623730951, TOL64);
    f64_case(WK_OP_ELU, -1.0, 1.0, -0.6321205588285577, TOL64);
    /* affine on f64: 0.1 * 10 rounds to exactly 1 in double. */
    f64_case(WK_OP_AFFINE, 0.1, 10, 1.0, 0);
}

/* f16 / bf16 / f8e4m3: compute in f32, round once to the storage type (hand-rounded values). */
static void test_reduced(void)
{
    /* exp(1) = 2.71828...: f16 spacing in [2,4) is 2^-9, 2.71828/2^-9 = 1391.8 -> 1392 * 2^-9 =
     * 2.71875 = 0x4170; bf16 spacing 2^-6 -> 174 * 2^-6 = 2.71875 = 0x402E; f8e4m3 spacing 0.25
     * -> 2.75 = 0x43. */
    bits_case(WK_DTYPE_F16, WK_OP_EXP, 0x3C00, 0x4170);
    bits_case(WK_DTYPE_BF16, WK_OP_EXP, 0x3F80, 0x402E);
    bits_case(WK_DTYPE_F8E4M3, WK_OP_EXP, 0x38, 0x43);
    /* sqrt(2) = 1.41421: f16 0.41421 * 1024 = 424.2 -> 0x3C00 + 424 = 0x3DA8; bf16 * 128 = 53.02
     * -> 0x3FB5; f8e4m3 * 8 = 3.3 -> 0x3B. */
    bits_case(WK_DTYPE_F16, WK_OP_SQRT, 0x4000, 0x3DA8);
    bits_case(WK_DTYPE_BF16, WK_OP_SQRT, 0x4000, 0x3FB5);
    bits_case(WK_DTYPE_F8E4M3, WK_OP_SQRT, 0x40, 0x3B);
    /* gelu(1) = 0.841192 in f16: 0.841192 * 2048 = 1722.8 -> 1723 = 0x3800 + 699 = 0x3ABB. */
    bits_case(WK_DTYPE_F16, WK_OP_GELU, 0x3C00, 0x3ABB);
    /* exp(10) = 22026.47 overflows f8e4m3: saturate to 448 = 0x7E (10 = 0x52 in f8e4m3). */
    bits_case(WK_DTYPE_F8E4M3, WK_OP_EXP, 0x52, 0x7E);
    /* exp(12) = 162754.8 overflows f16: inf (12 = 0x4A00). */
    bits_case(WK_DTYPE_F16, WK_OP_EXP, 0x4A00, 0x7C00);
    bits_case(WK_DTYPE_F16, WK_OP_NEG, 0x3C00, 0xBC00);
    bits_case(WK_DTYPE_BF16, WK_OP_ABS, 0xBF80, 0x3F80);
    bits_case(WK_DTYPE_F8E4M3, WK_OP_NEG, 0x38, 0xB8);
    bits_case(WK_DTYPE_F16, WK_OP_ROUND, 0xC100, 0xC200);   /* round(-2.5) = -3 */
    /* sqrt(-1) = NaN -> 0x7F or 0xFF: the sign of a default NaN differs between libms. */
    uint8_t m1 = 0xB8, nan8 = 0;
    if (!run(&nan8, WK_OP_SQRT, WK_DTYPE_F8E4M3, &m1, 1, 0, 0))
        TEST_CHECK((nan8 & 0x7F) == 0x7F, "%s: f8e4m3 sqrt(-1) = 0x%02x, expected NaN", g_spec, nan8);
    /* affine on f16 rounds once: 1 * 1 + 2^-11 = 1 + 2^-11 in f32, a tie -> even (0x3C00). */
    uint16_t h = 0x3C00, hy = 0;
    if (!run(&hy, WK_OP_AFFINE, WK_DTYPE_F16, &h, 1, 1.0, 0x1p-11))
        TEST_CHECK(hy == 0x3C00, "%s: f16 affine(1, 1, 2^-11) = 0x%04x, expected 0x3C00", g_spec, hy);
    uint16_t b = 0x3F80, by = 0; /* bf16 1 * 3 + 0 = 3 = 0x4040 */
    if (!run(&by, WK_OP_AFFINE, WK_DTYPE_BF16, &b, 1, 3.0, 0.0))
        TEST_CHECK(by == 0x4040, "%s: bf16 affine(1, 3, 0) = 0x%04x, expected 0x4040", g_spec, by);
}

#define INT_CASE(T, DT, OP, P0, P1, ...)                                                        \
    do {                                                                                        \
        const T in_[] = {__VA_ARGS__};                                                          \
        T out_[sizeof in_ / sizeof in_[0]];                                                     \
        if (!run(out_, OP, DT, in_, sizeof in_ / sizeof in_[0], P0, P1)) {                     \
            for (size_t i_ = 0; i_ < sizeof in_ / sizeof in_[0]; i_++)                          \
                if (!TEST_EQ_INT(out_[i_], want_[i_]))                                          \
                    printf("  (%s: %s %s element %zu, input %lld)\n", g_spec, wk_dtype_name(DT), \
                           wk_op_name(OP), i_, (long long)in_[i_]);                             \
        }                                                                                       \
    } while (0)

/* Integer rules (docs/semantics.md, "Integers"): wrapping abs/neg/sqr, identity rounding. */
static void test_int(void)
{
    {
        const int32_t want_[] = {0, 0, 7, 0};
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_RELU, 0, 0, -5, 0, 7, INT32_MIN);
    }
    {
        const int32_t want_[] = {INT32_MIN, 7, 7, 0}; /* abs(MIN) wraps to MIN */
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_ABS, 0, 0, INT32_MIN, -7, 7, 0);
    }
    {
        const int32_t want_[] = {INT32_MIN, -5, 5, 0, -INT32_MAX}; /* -MIN wraps to MIN */
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_NEG, 0, 0, INT32_MIN, 5, -5, 0, INT32_MAX);
    }
    {
        /* 65536^2 = 2^32 wraps to 0; 46341^2 = 2147488281 wraps to 2147488281 - 2^32. */
        const int32_t want_[] = {0, -2147479015, 9};
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_SQR, 0, 0, 65536, 46341, -3);
    }
    {
        const int32_t want_[] = {-1, 0, 1, -1, 1};
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_SIGN, 0, 0, -9, 0, 4, INT32_MIN, INT32_MAX);
    }
    {
        const int32_t want_[] = {-7, 7};
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_FLOOR, 0, 0, -7, 7);
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_CEIL, 0, 0, -7, 7);
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_ROUND, 0, 0, -7, 7);
    }
    {
        const int16_t want_[] = {INT16_MIN, -5};
        INT_CASE(int16_t, WK_DTYPE_I16, WK_OP_NEG, 0, 0, INT16_MIN, 5);
    }
    {
        /* 256^2 = 65536 wraps to 0; 181^2 = 32761 fits; 182^2 = 33124 wraps to 33124 - 65536. */
        const int16_t want_[] = {0, 32761, -32412};
        INT_CASE(int16_t, WK_DTYPE_I16, WK_OP_SQR, 0, 0, 256, 181, 182);
    }
    {
        const int16_t want_[] = {INT16_MIN, 3};
        INT_CASE(int16_t, WK_DTYPE_I16, WK_OP_ABS, 0, 0, INT16_MIN, -3);
    }
    {
        const int64_t want_[] = {INT64_MIN, 1};
        INT_CASE(int64_t, WK_DTYPE_I64, WK_OP_ABS, 0, 0, INT64_MIN, -1);
    }
    {
        /* 2^32 squared = 2^64 wraps to 0; 3037000500^2 = 9223372037000250000 wraps by 2^64. */
        const int64_t want_[] = {0, INT64_C(-9223372036709301616)};
        INT_CASE(int64_t, WK_DTYPE_I64, WK_OP_SQR, 0, 0, INT64_C(4294967296), INT64_C(3037000500));
    }
    {
        const int64_t want_[] = {0, 0, 5};
        INT_CASE(int64_t, WK_DTYPE_I64, WK_OP_RELU, 0, 0, INT64_MIN, -1, 5);
    }
    {
        const uint8_t want_[] = {225, 0, 33}; /* 17^2 = 289 wraps to 33 */
        INT_CASE(uint8_t, WK_DTYPE_U8, WK_OP_SQR, 0, 0, 15, 16, 17);
    }
    {
        const uint8_t want_[] = {200, 0};
        INT_CASE(uint8_t, WK_DTYPE_U8, WK_OP_ABS, 0, 0, 200, 0);   /* unsigned: identity */
        INT_CASE(uint8_t, WK_DTYPE_U8, WK_OP_RELU, 0, 0, 200, 0);
    }
    {
        const uint8_t want_[] = {0, 1, 1};
        INT_CASE(uint8_t, WK_DTYPE_U8, WK_OP_SIGN, 0, 0, 0, 200, 1);
    }
    {
        const uint32_t want_[] = {0, 1};
        INT_CASE(uint32_t, WK_DTYPE_U32, WK_OP_SIGN, 0, 0, 0u, 4294967295u);
    }
    {
        const uint32_t want_[] = {0, 4294836225u}; /* 65536^2 wraps to 0; 65535^2 fits */
        INT_CASE(uint32_t, WK_DTYPE_U32, WK_OP_SQR, 0, 0, 65536u, 65535u);
    }
    /* affine on integers: computed in f64, then the float -> int rule (truncate, saturate). */
    {
        const int32_t want_[] = {3, -3, 1073741823}; /* 3.5 -> 3, -3.5 -> -3, 1073741823.5 -> ... */
        INT_CASE(int32_t, WK_DTYPE_I32, WK_OP_AFFINE, 0.5, 0, 7, -7, INT32_MAX);
    }
    {
        const uint8_t want_[] = {255, 20, 0}; /* 400 saturates to 255; 0 - 10 saturates to 0 */
        INT_CASE(uint8_t, WK_DTYPE_U8, WK_OP_AFFINE, 2, -10, 205, 15, 0);
    }
    {
        /* 2^53 + 1 is not a double: it becomes 2^53 (round to even), then back to i64. INT64_MAX
         * becomes 2^63 in f64, which saturates back to INT64_MAX. */
        const int64_t want_[] = {INT64_C(9007199254740992), INT64_MAX, INT64_MIN};
        INT_CASE(int64_t, WK_DTYPE_I64, WK_OP_AFFINE, 1, 0, INT64_C(9007199254740993), INT64_MAX,
                 INT64_MIN);
    }
}

/* A strided input: neg over the transpose of a 2x3 matrix; output is contiguous 3x2. */
static void test_strided(void)
{
    const float x[6] = {0, 1, 2, 3, 4, 5};
    wk_storage *sx = testlib_upload(g_dev, WK_DTYPE_F32, x, 6), *sy = NULL;
    if (!sx)
        return;
    const wk_layout l = testlib_layout2(2, 3);
    wk_layout t;
    TEST_EQ_STATUS(wk_layout_transpose(&t, &l, 0, 1), WK_OK);
    float y[6];
    if (TEST_EQ_STATUS(wk_unary(&sy, WK_OP_SQR, sx, &t), WK_OK) && !testlib_download(y, 6, sy)) {
        const float want[6] = {0, 9, 1, 16, 4, 25};
        for (int i = 0; i < 6; i++)
            TEST_NEAR(y[i], want[i], 0);
    }
    wk_storage_free(sy);
    sy = NULL;
    /* Broadcast (stride 0) with an offset: 4 copies of element 2. */
    wk_layout b = testlib_layout1(4);
    b.strides[0] = 0;
    b.offset = 2;
    if (TEST_EQ_STATUS(wk_affine(&sy, sx, &b, 1.0, 1.0), WK_OK) && !testlib_download(y, 4, sy))
        for (int i = 0; i < 4; i++)
            TEST_NEAR(y[i], 3.0, 0);
    wk_storage_free(sy);
    sy = NULL;
    /* Empty input: an empty output, no error. */
    wk_layout e = testlib_layout1(0);
    if (TEST_EQ_STATUS(wk_unary(&sy, WK_OP_EXP, sx, &e), WK_OK))
        TEST_EQ_INT(wk_storage_len(sy), 0);
    wk_storage_free(sy);
    sy = NULL;
    /* Rank 0 scalar at offset 5: exp(5) = 148.4131591025766. */
    wk_layout s;
    memset(&s, 0, sizeof s);
    s.offset = 5;
    if (TEST_EQ_STATUS(wk_unary(&sy, WK_OP_EXP, sx, &s), WK_OK) && !testlib_download(y, 1, sy))
        TEST_NEAR(y[0], 148.4131591025766, 148.4131591025766 * TOL32);
    wk_storage_free(sy);
    wk_storage_free(sx);
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
        test_f32();
        test_f64();
        test_reduced();
        test_int();
        test_strided();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
