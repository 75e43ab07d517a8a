/* test_binary_kat.c: known answers for binary arithmetic, maximum/minimum, the gated ops
 * (swiglu, geglu, geglu_erf), comparisons and where_cond on every device: IEEE special values, the integer rules of docs/semantics.md
 * (wrapping, x/0 = 0, truncating division), exactness of 64-bit integer compares, broadcasting
 * by stride 0, and "compute in f32, round once" for the reduced float types.
 * Run: ctest -R test_binary_kat */
#include "testlib.h"
#include <math.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* out (host, n elements of the output dtype) = a op b, both contiguous (n) of dtype dt.
 * Uses wk_cmp for EQ..GE, wk_binary otherwise. */
static int run(void *out, wk_op op, wk_dtype dt, const void *a, const void *b, size_t n)
{
    wk_storage *sa = testlib_upload(g_dev, dt, a, n), *sb = testlib_upload(g_dev, dt, b, n), *so = NULL;
    int bad = 1;
    if (sa && sb) {
        const wk_layout l = testlib_layout1((int64_t)n);
        const int is_cmp = op >= WK_OP_EQ && op <= WK_OP_GE;
        wk_status st = is_cmp ? wk_cmp(&so, op, sa, &l, sb, &l) : wk_binary(&so, op, sa, &l, sb, &l);
        bad = !TEST_CHECK(st == WK_OK, "%s: %s on %s: %s (%s)", g_spec, wk_op_name(op),
                          wk_dtype_name(dt), wk_status_string(st), wk_last_error());
        if (!bad) {
            const wk_dtype want = is_cmp ? WK_DTYPE_U8 : dt;
            bad = !TEST_CHECK(wk_storage_dtype(so) == want && wk_storage_len(so) == n,
                              "%s: %s output is %s x %zu", g_spec, wk_op_name(op),
                              wk_dtype_name(wk_storage_dtype(so)), wk_storage_len(so));
            if (!bad)
                bad = testlib_download(out, n, so);
        }
    }
    wk_storage_free(so);
    wk_storage_free(sb);
    wk_storage_free(sa);
    return bad;
}

/* Element-wise check of an integer-valued result against want_ (same element type T). */
#define BIN_CASE(T, DT, OP, A, B, WANT)                                                         \
    do {                                                                                        \
        const T a_[] = A, b_[] = B, want_[] = WANT;                                             \
        enum { n_ = sizeof a_ / sizeof a_[0] };                                                 \
        T out_[n_];                                                                             \
        if (!run(out_, OP, DT, a_, b_, n_))                                                     \
            for (size_t i_ = 0; i_ < n_; i_++)                                                  \
                if (!TEST_EQ_INT(out_[i_], want_[i_]))                                          \
                    printf("  (%s: %s %s element %zu: %lld, %lld)\n", g_spec, wk_dtype_name(DT), \
                           wk_op_name(OP), i_, (long long)a_[i_], (long long)b_[i_]);           \
    } while (0)

#define CMP_CASE(T, DT, OP, A, B, WANT)                                                         \
    do {                                                                                        \
        const T a_[] = A, b_[] = B;                                                             \
        const uint8_t want_[] = WANT;                                                           \
        enum { n_ = sizeof a_ / sizeof a_[0] };                                                 \
        uint8_t out_[n_];                                                                       \
        if (!run(out_, OP, DT, a_, b_, n_))                                                     \
            for (size_t i_ = 0; i_ < n_; i_++)                                                  \
                if (!TEST_EQ_INT(out_[i_], want_[i_]))                                          \
                    printf("  (%s: %s %s element %zu)\n", g_spec, wk_dtype_name(DT),            \
                           wk_op_name(OP), i_);                                                 \
    } while (0)

#define L(...) {__VA_ARGS__}

static void f32_cases(wk_op op, const float *a, const float *b, const double *want, size_t n)
{
    float out[8];
    if (run(out, op, WK_DTYPE_F32, a, b, n))
        return;
    for (size_t i = 0; i < n; i++)
        if (!TEST_NEAR(out[i], want[i], 0))
            printf("  (%s: f32 %s(%g, %g))\n", g_spec, wk_op_name(op), a[i], b[i]);
}

static void test_float(void)
{
    /* Exactly representable operands and results, so the expected values are exact. */
    const float a[6] = {1.5f, -2.0f, 1.0f, 0.0f, -1.0f, INFINITY};
    const float b[6] = {2.5f, 4.0f, 0.0f, 0.0f, 0.0f, INFINITY};
    const double add[6] = {4.0, 2.0, 1.0, 0.0, -1.0, INFINITY};
    const double sub[6] = {-1.0, -6.0, 1.0, 0.0, -1.0, NAN};   /* inf - inf = NaN */
    const double mul[6] = {3.75, -8.0, 0.0, 0.0, -0.0, INFINITY};
    const double div[6] = {0.6, -0.5, INFINITY, NAN, -INFINITY, NAN}; /* 1/0, 0/0, -1/0, inf/inf */
    f32_cases(WK_OP_ADD, a, b, add, 6);
    f32_cases(WK_OP_SUB, a, b, sub, 6);
    f32_cases(WK_OP_MUL, a, b, mul, 6);
    float out[6];
    if (!run(out, WK_OP_DIV, WK_DTYPE_F32, a, b, 6)) {
        TEST_CHECK(out[0] == 0.6f, "%s: 1.5f/2.5f = %.9g, expected 0.6f", g_spec, out[0]);
        for (int i = 1; i < 6; i++)
            TEST_NEAR(out[i], div[i], 0);
    }
    /* 0.1f + 0.2f: the exact sum 0.30000000447 rounds to 0.3f (nearest f32). */
    const float p[1] = {0.1f}, q[1] = {0.2f};
    float r[1];
    if (!run(r, WK_OP_ADD, WK_DTYPE_F32, p, q, 1))
        TEST_CHECK(r[0] == 0.3f, "%s: 0.1f + 0.2f = %.9g, expected 0.3f", g_spec, r[0]);

    /* maximum/minimum: NaN propagates from either side (semantics.md). */
    const float ma[4] = {NAN, 1.0f, 2.0f, -1.0f}, mb[4] = {1.0f, NAN, 3.0f, -INFINITY};
    const double mx[4] = {NAN, NAN, 3.0, -1.0}, mn[4] = {NAN, NAN, 2.0, -INFINITY};
    f32_cases(WK_OP_MAXIMUM, ma, mb, mx, 4);
    f32_cases(WK_OP_MINIMUM, ma, mb, mn, 4);

    /* f64: 0.1 + 0.2 = 0.30000000000000004 (the well-known double result). */
    const double da[2] = {0.1, 1e308}, db[2] = {0.2, 1e308};
    double dout[2];
    if (!run(dout, WK_OP_ADD, WK_DTYPE_F64, da, db, 2)) {
        TEST_CHECK(dout[0] == 0.30000000000000004, "%s: f64 0.1 + 0.2 = %.17g", g_spec, dout[0]);
        TEST_CHECK(isinf(dout[1]), "%s: f64 1e308 + 1e308 = %g, expected inf", g_spec, dout[1]);
    }
}

/* Reduced types compute in f32 and round once (semantics.md). */
static void test_reduced(void)
{
    /* f16: 1 + 2^-11 is a tie between 0x3C00 and 0x3C01: even, 0x3C00. (1+2^-10) + 2^-11 is a
     * tie between 0x3C01 and 0x3C02: even, 0x3C02. 2^-11 is 0x1000 in f16. 65504 + 16 = 65520
     * rounds to inf. */
    {
        const uint16_t a[3] = {0x3C00, 0x3C01, 0x7BFF}, b[3] = {0x1000, 0x1000, 0x4C00};
        const uint16_t want[3] = {0x3C00, 0x3C02, 0x7C00};
        uint16_t out[3];
        if (!run(out, WK_OP_ADD, WK_DTYPE_F16, a, b, 3))
            for (int i = 0; i < 3; i++)
                TEST_CHECK(out[i] == want[i], "%s: f16 0x%04x + 0x%04x = 0x%04x, expected 0x%04x",
                           g_spec, a[i], b[i], out[i], want[i]);
    }
    /* bf16: 1 + 2^-8 (0x3B80) ties to 1.0 (0x3F80); 3 * 0.5 = 1.5 (0x3FC0). */
    {
        const uint16_t a[1] = {0x3F80}, b[1] = {0x3B80};
        uint16_t out[1];
        if (!run(out, WK_OP_ADD, WK_DTYPE_BF16, a, b, 1))
            TEST_CHECK(out[0] == 0x3F80, "%s: bf16 1 + 2^-8 = 0x%04x, expected 0x3F80", g_spec, out[0]);
        const uint16_t c[1] = {0x4040}, d[1] = {0x3F00};
        if (!run(out, WK_OP_MUL, WK_DTYPE_BF16, c, d, 1))
            TEST_CHECK(out[0] == 0x3FC0, "%s: bf16 3 * 0.5 = 0x%04x, expected 0x3FC0", g_spec, out[0]);
    }
    /* f8e4m3: 448 + 448 saturates to 448 (0x7E); 1 + 0.0625 (0x38 + 0x18) is a tie between 1 and
     * 1.125: even, 1 (0x38); maximum(NaN, 1) = NaN (0x7F). */
    {
        const uint8_t a[3] = {0x7E, 0x38, 0x7F}, b[3] = {0x7E, 0x18, 0x38};
        uint8_t out[3];
        if (!run(out, WK_OP_ADD, WK_DTYPE_F8E4M3, a, b, 2)) {
            TEST_CHECK(out[0] == 0x7E, "%s: f8e4m3 448 + 448 = 0x%02x, expected 0x7E", g_spec, out[0]);
            TEST_CHECK(out[1] == 0x38, "%s: f8e4m3 1 + 1/16 = 0x%02x, expected 0x38", g_spec, out[1]);
        }
        if (!run(out, WK_OP_MAXIMUM, WK_DTYPE_F8E4M3, a, b, 3))
            TEST_CHECK((out[2] & 0x7F) == 0x7F, "%s: f8e4m3 maximum(NaN, 1) = 0x%02x", g_spec, out[2]);
    }
}

static void test_int(void)
{
    /* u8 wraps modulo 256: 200 + 100 = 300 - 256 = 44; 5 - 10 = 251; 16 * 16 = 0. */
    BIN_CASE(uint8_t, WK_DTYPE_U8, WK_OP_ADD, L(200, 255), L(100, 1), L(44, 0));
    BIN_CASE(uint8_t, WK_DTYPE_U8, WK_OP_SUB, L(5, 0), L(10, 1), L(251, 255));
    BIN_CASE(uint8_t, WK_DTYPE_U8, WK_OP_MUL, L(16, 15), L(16, 17), L(0, 255));
    BIN_CASE(uint8_t, WK_DTYPE_U8, WK_OP_DIV, L(7, 7, 255), L(2, 0, 255), L(3, 0, 1)); /* x/0 = 0 */
    BIN_CASE(uint8_t, WK_DTYPE_U8, WK_OP_MAXIMUM, L(200, 3), L(100, 4), L(200, 4));
    /* u32: 0 - 1 wraps to 2^32 - 1; compares are unsigned (4294967295 > 1). */
    BIN_CASE(uint32_t, WK_DTYPE_U32, WK_OP_SUB, L(0u), L(1u), L(4294967295u));
    BIN_CASE(uint32_t, WK_DTYPE_U32, WK_OP_MAXIMUM, L(4294967295u, 0u), L(1u, 1u), L(4294967295u, 1u));
    BIN_CASE(uint32_t, WK_DTYPE_U32, WK_OP_MINIMUM, L(4294967295u, 0u), L(1u, 1u), L(1u, 0u));
    BIN_CASE(uint32_t, WK_DTYPE_U32, WK_OP_DIV, L(4294967295u, 5u), L(2u, 0u), L(2147483647u, 0u));
    BIN_CASE(uint32_t, WK_DTYPE_U32, WK_OP_MUL, L(65536u), L(65536u), L(0u));
    /* i16 wraps: 32767 + 1 = -32768. */
    BIN_CASE(int16_t, WK_DTYPE_I16, WK_OP_ADD, L(32767, -32768), L(1, -1), L(-32768, 32767));
    BIN_CASE(int16_t, WK_DTYPE_I16, WK_OP_DIV, L(-32768, -7), L(-1, 2), L(-32768, -3));
    /* i32: division truncates toward zero (7 / -2 = -3, -7 / 2 = -3), x / 0 = 0, MIN / -1 = MIN. */
    BIN_CASE(int32_t, WK_DTYPE_I32, WK_OP_DIV, L(7, -7, -7, 5, INT32_MIN, 0),
             L(-2, 2, -2, 0, -1, 0), L(-3, -3, 3, 0, INT32_MIN, 0));
    BIN_CASE(int32_t, WK_DTYPE_I32, WK_OP_ADD, L(INT32_MAX, INT32_MIN), L(1, -1), L(INT32_MIN, INT32_MAX));
    BIN_CASE(int32_t, WK_DTYPE_I32, WK_OP_SUB, L(INT32_MIN), L(1), L(INT32_MAX));
    BIN_CASE(int32_t, WK_DTYPE_I32, WK_OP_MUL, L(65536, INT32_MAX), L(65536, 2), L(0, -2));
    BIN_CASE(int32_t, WK_DTYPE_I32, WK_OP_MINIMUM, L(-5, INT32_MIN), L(3, INT32_MAX), L(-5, INT32_MIN));
    /* i64: exact beyond 2^53 (a compare through double would call 2^53 + 1 equal to 2^53). */
    BIN_CASE(int64_t, WK_DTYPE_I64, WK_OP_MAXIMUM, L(INT64_C(9007199254740993)),
             L(INT64_C(9007199254740992)), L(INT64_C(9007199254740993)));
    BIN_CASE(int64_t, WK_DTYPE_I64, WK_OP_MUL, L(INT64_MAX), L(2), L(-2));
    BIN_CASE(int64_t, WK_DTYPE_I64, WK_OP_DIV, L(INT64_MIN, INT64_C(-9000000000000000001), 9),
             L(-1, 2, 0), L(INT64_MIN, INT64_C(-4500000000000000000), 0));
    BIN_CASE(int64_t, WK_DTYPE_I64, WK_OP_ADD, L(INT64_MAX), L(1), L(INT64_MIN));
}

static void test_cmp(void)
{
    /* IEEE: every comparison with NaN is false except ne (semantics.md). Columns: (1,1), (NaN,1),
     * (2,NaN), (1,2), (-0,+0). */
    const float a[5] = {1.0f, NAN, 2.0f, 1.0f, -0.0f}, b[5] = {1.0f, 1.0f, NAN, 2.0f, 0.0f};
    const uint8_t eq[5] = {1, 0, 0, 0, 1}, ne[5] = {0, 1, 1, 1, 0}, lt[5] = {0, 0, 0, 1, 0},
                  le[5] = {1, 0, 0, 1, 1}, gt[5] = {0, 0, 0, 0, 0}, ge[5] = {1, 0, 0, 0, 1};
    const uint8_t *want[6] = {eq, ne, lt, le, gt, ge};
    for (int o = 0; o < 6; o++) {
        uint8_t out[5];
        const wk_op op = (wk_op)(WK_OP_EQ + o);
        if (run(out, op, WK_DTYPE_F32, a, b, 5))
            continue;
        for (int i = 0; i < 5; i++)
            TEST_CHECK(out[i] == want[o][i], "%s: f32 %s(%g, %g) = %d, expected %d", g_spec,
                       wk_op_name(op), a[i], b[i], out[i], want[o][i]);
    }
    /* Integers compare exactly: i64 2^53 + 1 > 2^53; u32 2^32 - 1 > 1 (unsigned); i32 -1 < 0. */
    CMP_CASE(int64_t, WK_DTYPE_I64, WK_OP_GT, L(INT64_C(9007199254740993), -1),
             L(INT64_C(9007199254740992), 0), L(1, 0));
    CMP_CASE(int64_t, WK_DTYPE_I64, WK_OP_EQ, L(INT64_C(9007199254740993)),
             L(INT64_C(9007199254740992)), L(0));
    CMP_CASE(uint32_t, WK_DTYPE_U32, WK_OP_GT, L(4294967295u, 0u), L(1u, 0u), L(1, 0));
    CMP_CASE(int32_t, WK_DTYPE_I32, WK_OP_LT, L(-1, 0, INT32_MIN), L(0, 0, INT32_MAX), L(1, 0, 1));
    CMP_CASE(uint8_t, WK_DTYPE_U8, WK_OP_GE, L(200, 3), L(100, 4), L(1, 0));
    CMP_CASE(int16_t, WK_DTYPE_I16, WK_OP_LE, L(-32768, 5), L(32767, 4), L(1, 0));
    /* f16: 1.0 (0x3C00) < 1 + 2^-10 (0x3C01); NaN (0x7E00) ne anything. */
    CMP_CASE(uint16_t, WK_DTYPE_F16, WK_OP_LT, L(0x3C00, 0x7E00), L(0x3C01, 0x3C00), L(1, 0));
    CMP_CASE(uint16_t, WK_DTYPE_F16, WK_OP_NE, L(0x3C00, 0x7E00), L(0x3C00, 0x7E00), L(0, 1));
}

/* Broadcasting through stride 0: a (2,3) + b (3,) broadcast to (2,3); and a transposed operand. */
static void test_layouts(void)
{
    const float a[6] = {0, 1, 2, 3, 4, 5}, b[3] = {10, 20, 30};
    wk_storage *sa = testlib_upload(g_dev, WK_DTYPE_F32, a, 6);
    wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_F32, b, 3), *so = NULL;
    if (!sa || !sb)
        goto done;
    const wk_layout la = testlib_layout2(2, 3), lb1 = testlib_layout1(3);
    wk_layout lb;
    TEST_EQ_STATUS(wk_layout_broadcast(&lb, &lb1, 2, la.dims), WK_OK);
    float out[6];
    if (TEST_EQ_STATUS(wk_binary(&so, WK_OP_ADD, sa, &la, sb, &lb), WK_OK) &&
        !testlib_download(out, 6, so)) {
        const float want[6] = {10, 21, 32, 13, 24, 35};
        for (int i = 0; i < 6; i++)
            TEST_NEAR(out[i], want[i], 0);
    }
    wk_storage_free(so);
    so = NULL;
    /* a^T (3,2) - a^T: zeros; a^T * broadcast column b (3,1) -> (3,2). */
    wk_layout at, bc;
    TEST_EQ_STATUS(wk_layout_transpose(&at, &la, 0, 1), WK_OK);
    const int64_t d31[2] = {3, 1};
    const wk_layout lb31 = testlib_layout(2, d31);
    TEST_EQ_STATUS(wk_layout_broadcast(&bc, &lb31, 2, at.dims), WK_OK);
    if (TEST_EQ_STATUS(wk_binary(&so, WK_OP_MUL, sa, &at, sb, &bc), WK_OK) &&
        !testlib_download(out, 6, so)) {
        /* a^T = [[0,3],[1,4],[2,5]], rows times 10, 20, 30. */
        const float want[6] = {0, 30, 20, 80, 60, 150};
        for (int i = 0; i < 6; i++)
            TEST_NEAR(out[i], want[i], 0);
    }
    wk_storage_free(so);
    so = NULL;
    /* cmp with broadcasting: a (2,3) < element 1 of b (20) broadcast to (2,3): all true. */
    wk_layout s = testlib_layout2(2, 3);
    s.strides[0] = s.strides[1] = 0;
    s.offset = 1;
    uint8_t u[6];
    if (TEST_EQ_STATUS(wk_cmp(&so, WK_OP_LT, sa, &la, sb, &s), WK_OK) && !testlib_download(u, 6, so))
        for (int i = 0; i < 6; i++)
            TEST_EQ_INT(u[i], 1);
    wk_storage_free(so);
    so = NULL;
    /* Empty operands: empty output. */
    const wk_layout e = testlib_layout2(0, 3);
    if (TEST_EQ_STATUS(wk_binary(&so, WK_OP_ADD, sa, &e, sa, &e), WK_OK))
        TEST_EQ_INT(wk_storage_len(so), 0);
done:
    wk_storage_free(so);
    wk_storage_free(sb);
    wk_storage_free(sa);
}

/* where_cond: out = cond != 0 ? t : f, with u8, u32 and i64 conditions. */
static void where_case(wk_dtype cdt, const void *cond, size_t n, const float *want)
{
    const float t[4] = {1, 2, 3, 4}, f[4] = {-1, -2, -3, -4};
    wk_storage *sc = testlib_upload(g_dev, cdt, cond, n);
    wk_storage *st = testlib_upload(g_dev, WK_DTYPE_F32, t, n);
    wk_storage *sf = testlib_upload(g_dev, WK_DTYPE_F32, f, n), *so = NULL;
    if (sc && st && sf) {
        const wk_layout l = testlib_layout1((int64_t)n);
        float out[4];
        if (TEST_EQ_STATUS(wk_where_cond(&so, sc, &l, st, &l, sf, &l), WK_OK) &&
            !testlib_download(out, n, so)) {
            TEST_EQ_INT(wk_storage_dtype(so), WK_DTYPE_F32);
            for (size_t i = 0; i < n; i++)
                if (!TEST_NEAR(out[i], want[i], 0))
                    printf("  (%s: where_cond with %s cond, element %zu)\n", g_spec,
                           wk_dtype_name(cdt), i);
        }
    }
    wk_storage_free(so);
    wk_storage_free(sf);
    wk_storage_free(st);
    wk_storage_free(sc);
}

static void test_where(void)
{
    const uint8_t c8[4] = {0, 1, 255, 0};
    const float w8[4] = {-1, 2, 3, -4};
    where_case(WK_DTYPE_U8, c8, 4, w8);
    /* u32: any non-zero is true, including values that are zero in their low byte (256) and
     * 2^32 - 1. */
    const uint32_t c32[4] = {0, 256, 4294967295u, 0};
    const float w32[4] = {-1, 2, 3, -4};
    where_case(WK_DTYPE_U32, c32, 4, w32);
    /* i64: 2^32 is non-zero only in its high word (a 32-bit truncation would read 0); -1 true. */
    const int64_t c64[4] = {INT64_C(4294967296), -1, 0, INT64_MIN};
    const float w64[4] = {1, 2, -3, 4};
    where_case(WK_DTYPE_I64, c64, 4, w64);

    /* Integer values with a broadcast (stride 0) condition. */
    const uint8_t c1[1] = {1};
    const int64_t ti[3] = {INT64_MAX, 5, -6}, fi[3] = {0, 0, 0};
    wk_storage *sc = testlib_upload(g_dev, WK_DTYPE_U8, c1, 1);
    wk_storage *st = testlib_upload(g_dev, WK_DTYPE_I64, ti, 3);
    wk_storage *sf = testlib_upload(g_dev, WK_DTYPE_I64, fi, 3), *so = NULL;
    if (sc && st && sf) {
        const wk_layout l = testlib_layout1(3);
        wk_layout lc = l;
        lc.strides[0] = 0;
        int64_t out[3];
        if (TEST_EQ_STATUS(wk_where_cond(&so, sc, &lc, st, &l, sf, &l), WK_OK) &&
            !testlib_download(out, 3, so))
            for (int i = 0; i < 3; i++)
                TEST_EQ_INT(out[i], ti[i]);
    }
    wk_storage_free(so);
    wk_storage_free(sf);
    wk_storage_free(st);
    wk_storage_free(sc);
}

/* The gated ops: act(a) * b. Expected values from the formulas of docs/semantics.md in double
 * (silu(1) = 1 / (1 + e^-1), gelu(1) with tanh, gelu_erf(1) = Phi(1) = 0.8413447460685429). */
static void test_glu(void)
{
    const float a[6] = {0.0f, 1.0f, -1.0f, 2.0f, -20.0f, 20.0f}, b[6] = {5, 2, 3, 1, 1, 1};
    const double sw[6] = {0.0, 1.4621171572600098, -0.8068242641099853, 1.7615941559557646,
                          -4.122307236380407e-08, 19.999999958776925};
    const float ga[3] = {1.0f, -1.0f, 0.0f}, gb[3] = {1.0f, 2.0f, 7.0f};
    const double ge[3] = {0.8411919906082768, -0.3176160187834465, 0.0};
    const double gerf[3] = {0.8413447460685429, -0.31731050786291415, 0.0};
    float out[6];
    if (!run(out, WK_OP_SWIGLU, WK_DTYPE_F32, a, b, 6))
        for (int i = 0; i < 6; i++) /* a few f32 ulps (the activation's libm) */
            TEST_NEAR(out[i], sw[i], 4e-7 * fabs(sw[i]));
    if (!run(out, WK_OP_GEGLU, WK_DTYPE_F32, ga, gb, 3))
        for (int i = 0; i < 3; i++)
            TEST_NEAR(out[i], ge[i], 4e-7 * fabs(ge[i]));
    if (!run(out, WK_OP_GEGLU_ERF, WK_DTYPE_F32, ga, gb, 3))
        for (int i = 0; i < 3; i++)
            TEST_NEAR(out[i], gerf[i], 4e-7 * fabs(gerf[i]));
    /* f16 rounds once: silu(0.50048828125) * 11 = 2.7103... is 0x42DB (0.12 ulp from it); rounding
     * silu(a) to f16 first would give 0x42DA. */
    {
        const uint16_t ha[1] = {0x3801}, hb[1] = {0x4980};
        uint16_t ho[1];
        if (!run(ho, WK_OP_SWIGLU, WK_DTYPE_F16, ha, hb, 1))
            TEST_CHECK(ho[0] == 0x42DB, "%s: f16 swiglu(0x3801, 11) = 0x%04x, expected 0x42DB",
                       g_spec, ho[0]);
    }
    /* f64: silu(1) * 2 to a few ulps */
    {
        const double da[1] = {1.0}, db[1] = {2.0};
        double dout[1];
        if (!run(dout, WK_OP_SWIGLU, WK_DTYPE_F64, da, db, 1))
            TEST_NEAR(dout[0], 1.4621171572600098, 1e-15);
    }
    /* integers: not defined */
    {
        const int32_t ia[1] = {1}, ib[1] = {2};
        wk_storage *sa = testlib_upload(g_dev, WK_DTYPE_I32, ia, 1);
        wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_I32, ib, 1), *so = NULL;
        const wk_layout l = testlib_layout1(1);
        if (sa && sb)
            TEST_EQ_STATUS(wk_binary(&so, WK_OP_SWIGLU, sa, &l, sb, &l), WK_ERR_DTYPE);
        TEST_CHECK(so == NULL, "%s: swiglu on i32 left an output", g_spec);
        wk_storage_free(sa);
        wk_storage_free(sb);
    }
    /* The gate and up halves as column views of one (2, 2F) matrix (a stacked gate|up product),
     * F = 37 (odd: no 16-byte runs), against the formula; and f32 equals silu then mul bit for
     * bit (the documented equality). */
    enum { T = 2, F = 37 };
    float gu[T * 2 * F], want[T * F], got[T * F], comp[T * F];
    for (int i = 0; i < T * 2 * F; i++)
        gu[i] = (float)((i * 7919) % 613) / 61.0f - 5.0f;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < F; j++) {
            const double g = gu[t * 2 * F + j], u = gu[t * 2 * F + F + j];
            want[t * F + j] = (float)(g / (1.0 + exp(-g)) * u);
        }
    wk_storage *s = testlib_upload(g_dev, WK_DTYPE_F32, gu, T * 2 * F), *so = NULL, *si = NULL,
               *sc = NULL;
    if (!s)
        return;
    const int64_t d[2] = {T, F}, st[2] = {2 * F, 1};
    wk_layout lg = {.rank = 2, .offset = 0}, lu;
    memcpy(lg.dims, d, sizeof d);
    memcpy(lg.strides, st, sizeof st);
    lu = lg;
    lu.offset = F;
    const wk_layout lc = testlib_layout2(T, F);
    if (TEST_EQ_STATUS(wk_binary(&so, WK_OP_SWIGLU, s, &lg, s, &lu), WK_OK) &&
        !testlib_download(got, T * F, so))
        for (int i = 0; i < T * F; i++)
            TEST_NEAR(got[i], want[i], 4e-7 * fabs(want[i]) + 1e-30);
    if (TEST_EQ_STATUS(wk_unary(&si, WK_OP_SILU, s, &lg), WK_OK) &&
        TEST_EQ_STATUS(wk_binary(&sc, WK_OP_MUL, si, &lc, s, &lu), WK_OK) &&
        !testlib_download(comp, T * F, sc))
        TEST_CHECK(memcmp(comp, got, sizeof got) == 0,
                   "%s: f32 swiglu differs from silu then mul", g_spec);
    wk_storage_free(sc);
    wk_storage_free(si);
    wk_storage_free(so);
    wk_storage_free(s);
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
        test_float();
        test_reduced();
        test_glu();
        test_int();
        test_cmp();
        test_layouts();
        test_where();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
