/* test_bad_input.c: every row of the "Errors" table of docs/semantics.md, for every public
 * function family. Each bad call must return the exact status, leave a message in
 * wk_last_error() that names the op, leave *out NULL, and leave every input untouched (all
 * fixture storages are compared before and after each call). Run on every device.
 * Run: ctest -R test_bad_input */
#include "testlib.h"
#include <stdlib.h>
#include <string.h>

/* Huge allocations must fail with NULL under AddressSanitizer too, not abort the process. The
 * sanitizer runtime (a shared library) looks this hook up dynamically: it must be visible even
 * though the build hides symbols by default. Harmless without a sanitizer. */
__attribute__((visibility("default"), used)) const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

static wk_device *g_dev;
static const char *g_spec;

/* ---- fixtures: small storages every call may read; snapshotted around each bad call. */
enum { FX_F32, FX_F32B, FX_I32, FX_U8, FX_U32, FX_I64, FX_F32_8, FX_COUNT };
static wk_storage *g_fx[FX_COUNT];
static unsigned char g_snap[FX_COUNT][64];

static void fixtures_make(void)
{
    const float f[4] = {1, 2, 3, 4}, g[4] = {5, 6, 7, 8}, h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int32_t i[4] = {-1, 0, 1, 2};
    const uint8_t u[4] = {0, 1, 2, 255};
    const uint32_t c[4] = {0, 1, 0, 1};
    const int64_t k[4] = {1, 2, 3, 4};
    g_fx[FX_F32] = testlib_upload(g_dev, WK_DTYPE_F32, f, 4);
    g_fx[FX_F32B] = testlib_upload(g_dev, WK_DTYPE_F32, g, 4);
    g_fx[FX_I32] = testlib_upload(g_dev, WK_DTYPE_I32, i, 4);
    g_fx[FX_U8] = testlib_upload(g_dev, WK_DTYPE_U8, u, 4);
    g_fx[FX_U32] = testlib_upload(g_dev, WK_DTYPE_U32, c, 4);
    g_fx[FX_I64] = testlib_upload(g_dev, WK_DTYPE_I64, k, 4);
    g_fx[FX_F32_8] = testlib_upload(g_dev, WK_DTYPE_F32, h, 8);
}

static void fixtures_free(void)
{
    for (int i = 0; i < FX_COUNT; i++) {
        wk_storage_free(g_fx[i]);
        g_fx[i] = NULL;
    }
}

static void snap_take(void)
{
    for (int i = 0; i < FX_COUNT; i++)
        if (g_fx[i])
            wk_storage_to_host(g_snap[i], wk_storage_len(g_fx[i]), g_fx[i]);
}

static int snap_same(void)
{
    int same = 1;
    for (int i = 0; i < FX_COUNT; i++) {
        unsigned char now[64];
        if (!g_fx[i] || wk_storage_to_host(now, wk_storage_len(g_fx[i]), g_fx[i]) != WK_OK)
            continue;
        const size_t bytes = wk_storage_len(g_fx[i]) * wk_dtype_size(wk_storage_dtype(g_fx[i]));
        same &= memcmp(now, g_snap[i], bytes) == 0;
    }
    return same;
}

/* Checks a failed call: the status, a message naming one of `names` ("a|b|c"). */
static int expect_err(wk_status got, wk_status want, const char *names, const char *expr,
                      const char *file, int line)
{
    const char *msg = wk_last_error();
    int named = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
        named |= msg != NULL && strstr(msg, tok) != NULL;
    int ok = testlib_eq_status(got, want, expr, file, line);
    if (want != WK_OK)
        ok &= testlib_check(named, file, line, "%s: [%s] message \"%s\" does not name %s", expr,
                            g_spec, msg ? msg : "(null)", names);
    return ok;
}

/* A call that must fail: `o` (a wk_storage *) is available to the call as the output and must
 * stay NULL; fixtures must be unchanged. */
#define BAD(want, names, ...)                                                                 \
    do {                                                                                      \
        wk_storage *o = NULL;                                                                 \
        snap_take();                                                                          \
        const wk_status st_ = (__VA_ARGS__);                                                  \
        expect_err(st_, want, names, #__VA_ARGS__, __FILE__, __LINE__);                       \
        TEST_CHECK(o == NULL, "%s: output set by a failed call: %s", g_spec, #__VA_ARGS__);   \
        wk_storage_free(o);                                                                   \
        TEST_CHECK(snap_same(), "%s: inputs changed by a failed call: %s", g_spec, #__VA_ARGS__); \
    } while (0)

/* ---- layouts */
static wk_layout lay1(int64_t n) { return testlib_layout1(n); }

/* Bad layouts for a 4-element storage, each with the status it must give. */
typedef struct {
    const char *what;
    wk_layout l;
    wk_status want;
} bad_layout;
enum { NBAD = 11 };
static bad_layout g_bad[NBAD];

static void bad_layouts_make(void)
{
    int n = 0;
    wk_layout l;
    memset(&l, 0, sizeof l);
    l.rank = 9; /* rank past WK_MAX_RANK: dims 1, strides 0 so nothing else is wrong */
    for (int k = 0; k < WK_MAX_RANK; k++)
        l.dims[k] = 1;
    g_bad[n++] = (bad_layout){"rank 9", l, WK_ERR_LAYOUT};
    l.rank = -1;
    g_bad[n++] = (bad_layout){"rank -1", l, WK_ERR_LAYOUT};
    l = lay1(4);
    l.dims[0] = -1;
    g_bad[n++] = (bad_layout){"negative dim", l, WK_ERR_LAYOUT};
    l = lay1(4);
    l.strides[0] = -1;
    l.offset = 3; /* addresses 3,2,1,0: inside, but strides must be >= 0 */
    g_bad[n++] = (bad_layout){"negative stride", l, WK_ERR_LAYOUT};
    l = lay1(1);
    l.offset = -1;
    g_bad[n++] = (bad_layout){"negative offset", l, WK_ERR_LAYOUT};
    l = lay1(5);
    g_bad[n++] = (bad_layout){"one past the end", l, WK_ERR_LAYOUT};
    l = lay1(1);
    l.offset = 4;
    g_bad[n++] = (bad_layout){"offset past the end", l, WK_ERR_LAYOUT};
    l = lay1(2);
    l.strides[0] = 4;
    g_bad[n++] = (bad_layout){"stride past the end", l, WK_ERR_LAYOUT};
    l = lay1(3);
    l.strides[0] = INT64_C(1) << 62; /* last address 2^63: past the end (and past int64) */
    g_bad[n++] = (bad_layout){"address overflow", l, WK_ERR_LAYOUT};
    l = testlib_layout2(INT64_C(1) << 40, INT64_C(1) << 40);
    l.strides[0] = l.strides[1] = 0; /* addresses only element 0, but 2^80 elements */
    g_bad[n++] = (bad_layout){"element count overflow", l, WK_ERR_OVERFLOW};
    l = testlib_layout2(INT64_C(1) << 40, INT64_C(1) << 40);
    l.strides[0] = 0;
    l.strides[1] = 0;
    l.dims[0] = 3;
    l.dims[1] = INT64_MAX; /* 3 * (2^63 - 1) */
    g_bad[n++] = (bad_layout){"element count overflow 2", l, WK_ERR_OVERFLOW};
}

/* The same dims with every stride 0 and offset 0: valid on any non-empty storage (unless its
 * rank or dims are themselves malformed, in which case it fails the same way). */
static wk_layout partner(const wk_layout *l)
{
    wk_layout p = *l;
    for (int k = 0; k < WK_MAX_RANK; k++)
        p.strides[k] = 0;
    p.offset = 0;
    return p;
}

/* Every layout argument of every op, given a bad layout (others: its partner). */
static void test_bad_layouts(void)
{
    wk_storage *const x = g_fx[FX_F32], *const y = g_fx[FX_F32B], *const c = g_fx[FX_U32];
    wk_storage *const big = g_fx[FX_F32_8];
    const int32_t d0[1] = {0};
    for (int i = 0; i < NBAD; i++) {
        const wk_layout *b = &g_bad[i].l;
        const wk_layout p = partner(b);
        const wk_status w = g_bad[i].want;
        printf("  bad layout: %s\n", g_bad[i].what);
        BAD(w, "exp|wk_unary", wk_unary(&o, WK_OP_EXP, x, b));
        BAD(w, "affine", wk_affine(&o, x, b, 2.0, 1.0));
        BAD(w, "powf", wk_powf(&o, x, b, 2.0));
        BAD(w, "elu", wk_elu(&o, x, b, 1.0));
        BAD(w, "add|wk_binary", wk_binary(&o, WK_OP_ADD, x, b, y, &p));
        BAD(w, "add|wk_binary", wk_binary(&o, WK_OP_ADD, x, &p, y, b));
        BAD(w, "lt|wk_cmp", wk_cmp(&o, WK_OP_LT, x, b, y, &p));
        BAD(w, "lt|wk_cmp", wk_cmp(&o, WK_OP_LT, x, &p, y, b));
        BAD(w, "where_cond", wk_where_cond(&o, c, b, x, &p, y, &p));
        BAD(w, "where_cond", wk_where_cond(&o, c, &p, x, b, y, &p));
        BAD(w, "where_cond", wk_where_cond(&o, c, &p, x, &p, y, b));
        BAD(w, "to_dtype", wk_to_dtype(&o, x, b, WK_DTYPE_F64));
        const float v = 9.0f;
        BAD(w, "const_set", wk_const_set(x, b, &v));
        BAD(w, "sum|wk_reduce", wk_reduce(&o, WK_OP_SUM, x, b, d0, b->rank > 0 ? 1 : 0));
        BAD(w, "argmax|wk_reduce", wk_reduce(&o, WK_OP_ARGMAX, x, b, NULL, 0));
        BAD(w, "copy_strided_src", wk_copy_strided_src(big, 0, x, b));
    }
}

static void test_unary(void)
{
    wk_storage *const x = g_fx[FX_F32];
    const wk_layout l = lay1(4);
    BAD(WK_ERR_INVALID_ARGUMENT, "exp|wk_unary", wk_unary(NULL, WK_OP_EXP, x, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "exp|wk_unary", wk_unary(&o, WK_OP_EXP, NULL, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "exp|wk_unary", wk_unary(&o, WK_OP_EXP, x, NULL));
    /* op ids of another family, or of no family. */
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_unary", wk_unary(&o, WK_OP_ADD, x, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_unary", wk_unary(&o, WK_OP_AFFINE, x, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_unary", wk_unary(&o, WK_OP_SUM, x, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_unary", wk_unary(&o, (wk_op)999, x, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_unary", wk_unary(&o, (wk_op)-1, x, &l));
    /* ops not defined for the dtype (semantics.md, Integers). */
    BAD(WK_ERR_DTYPE, "exp", wk_unary(&o, WK_OP_EXP, g_fx[FX_I32], &l));
    BAD(WK_ERR_DTYPE, "neg", wk_unary(&o, WK_OP_NEG, g_fx[FX_U8], &l));
    BAD(WK_ERR_DTYPE, "neg", wk_unary(&o, WK_OP_NEG, g_fx[FX_U32], &l));
    BAD(WK_ERR_DTYPE, "gelu", wk_unary(&o, WK_OP_GELU, g_fx[FX_I64], &l));
    BAD(WK_ERR_DTYPE, "sqrt", wk_unary(&o, WK_OP_SQRT, g_fx[FX_U8], &l));
    BAD(WK_ERR_DTYPE, "powf", wk_powf(&o, g_fx[FX_I32], &l, 2.0));
    BAD(WK_ERR_DTYPE, "elu", wk_elu(&o, g_fx[FX_U8], &l, 1.0));
    BAD(WK_ERR_INVALID_ARGUMENT, "affine", wk_affine(NULL, x, &l, 1, 0));
    BAD(WK_ERR_INVALID_ARGUMENT, "affine", wk_affine(&o, NULL, &l, 1, 0));
    BAD(WK_ERR_INVALID_ARGUMENT, "powf", wk_powf(&o, x, NULL, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, "elu", wk_elu(&o, NULL, &l, 1));
}

static void test_binary(void)
{
    wk_storage *const a = g_fx[FX_F32], *const b = g_fx[FX_F32B];
    const wk_layout l = lay1(4), l3 = lay1(3), l22 = testlib_layout2(2, 2);
    BAD(WK_ERR_INVALID_ARGUMENT, "add|wk_binary", wk_binary(NULL, WK_OP_ADD, a, &l, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "add|wk_binary", wk_binary(&o, WK_OP_ADD, NULL, &l, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "add|wk_binary", wk_binary(&o, WK_OP_ADD, a, NULL, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "add|wk_binary", wk_binary(&o, WK_OP_ADD, a, &l, NULL, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "add|wk_binary", wk_binary(&o, WK_OP_ADD, a, &l, b, NULL));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_binary", wk_binary(&o, WK_OP_EXP, a, &l, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_binary", wk_binary(&o, WK_OP_EQ, a, &l, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_binary", wk_binary(&o, (wk_op)39, a, &l, b, &l));
    /* the gated ops: floats only */
    BAD(WK_ERR_DTYPE, "swiglu|wk_binary",
        wk_binary(&o, WK_OP_SWIGLU, g_fx[FX_I32], &l, g_fx[FX_I32], &l));
    BAD(WK_ERR_SHAPE, "add|wk_binary", wk_binary(&o, WK_OP_ADD, a, &l, b, &l3));
    BAD(WK_ERR_SHAPE, "mul|wk_binary", wk_binary(&o, WK_OP_MUL, a, &l, b, &l22)); /* same count */
    BAD(WK_ERR_DTYPE, "add|wk_binary", wk_binary(&o, WK_OP_ADD, a, &l, g_fx[FX_I32], &l));
    BAD(WK_ERR_DTYPE, "maximum|wk_binary", wk_binary(&o, WK_OP_MAXIMUM, g_fx[FX_U8], &l, g_fx[FX_U32], &l));
    /* comparisons */
    BAD(WK_ERR_INVALID_ARGUMENT, "eq|wk_cmp", wk_cmp(NULL, WK_OP_EQ, a, &l, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "eq|wk_cmp", wk_cmp(&o, WK_OP_EQ, NULL, &l, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "eq|wk_cmp", wk_cmp(&o, WK_OP_EQ, a, &l, b, NULL));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_cmp", wk_cmp(&o, WK_OP_ADD, a, &l, b, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_cmp", wk_cmp(&o, (wk_op)46, a, &l, b, &l));
    BAD(WK_ERR_SHAPE, "ge|wk_cmp", wk_cmp(&o, WK_OP_GE, a, &l, b, &l22));
    BAD(WK_ERR_DTYPE, "ne|wk_cmp", wk_cmp(&o, WK_OP_NE, a, &l, g_fx[FX_I64], &l));
}

static void test_where(void)
{
    wk_storage *const c = g_fx[FX_U32], *const t = g_fx[FX_F32], *const f = g_fx[FX_F32B];
    const wk_layout l = lay1(4), l3 = lay1(3);
    BAD(WK_ERR_INVALID_ARGUMENT, "where_cond", wk_where_cond(NULL, c, &l, t, &l, f, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "where_cond", wk_where_cond(&o, NULL, &l, t, &l, f, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "where_cond", wk_where_cond(&o, c, NULL, t, &l, f, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "where_cond", wk_where_cond(&o, c, &l, NULL, &l, f, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "where_cond", wk_where_cond(&o, c, &l, t, NULL, f, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "where_cond", wk_where_cond(&o, c, &l, t, &l, NULL, &l));
    BAD(WK_ERR_INVALID_ARGUMENT, "where_cond", wk_where_cond(&o, c, &l, t, &l, f, NULL));
    /* The condition must be u8, u32 or i64. */
    BAD(WK_ERR_DTYPE, "where_cond", wk_where_cond(&o, g_fx[FX_F32B], &l, t, &l, f, &l));
    BAD(WK_ERR_DTYPE, "where_cond", wk_where_cond(&o, g_fx[FX_I32], &l, t, &l, f, &l));
    /* on_true and on_false share a dtype. */
    BAD(WK_ERR_DTYPE, "where_cond", wk_where_cond(&o, c, &l, t, &l, g_fx[FX_I32], &l));
    BAD(WK_ERR_SHAPE, "where_cond", wk_where_cond(&o, c, &l3, t, &l, f, &l));
    BAD(WK_ERR_SHAPE, "where_cond", wk_where_cond(&o, c, &l, t, &l3, f, &l));
    BAD(WK_ERR_SHAPE, "where_cond", wk_where_cond(&o, c, &l, t, &l, f, &l3));
}

static void test_cast_and_fill(void)
{
    wk_storage *const x = g_fx[FX_F32];
    const wk_layout l = lay1(4);
    BAD(WK_ERR_INVALID_ARGUMENT, "to_dtype", wk_to_dtype(NULL, x, &l, WK_DTYPE_F16));
    BAD(WK_ERR_INVALID_ARGUMENT, "to_dtype", wk_to_dtype(&o, NULL, &l, WK_DTYPE_F16));
    BAD(WK_ERR_INVALID_ARGUMENT, "to_dtype", wk_to_dtype(&o, x, NULL, WK_DTYPE_F16));
    BAD(WK_ERR_INVALID_ARGUMENT, "to_dtype", wk_to_dtype(&o, x, &l, (wk_dtype)99));
    BAD(WK_ERR_INVALID_ARGUMENT, "to_dtype", wk_to_dtype(&o, x, &l, (wk_dtype)-1));
    BAD(WK_ERR_INVALID_ARGUMENT, "to_dtype", wk_to_dtype(&o, x, &l, (wk_dtype)WK_DTYPE_COUNT));
    const float v = 1.0f;
    BAD(WK_ERR_INVALID_ARGUMENT, "const_set", wk_const_set(NULL, &l, &v));
    BAD(WK_ERR_INVALID_ARGUMENT, "const_set", wk_const_set(x, NULL, &v));
    BAD(WK_ERR_INVALID_ARGUMENT, "const_set", wk_const_set(x, &l, NULL));
}

static void test_reduce(void)
{
    wk_storage *const x = g_fx[FX_F32];
    const wk_layout l22 = testlib_layout2(2, 2), l20 = testlib_layout2(2, 0);
    const int32_t d0[1] = {0}, d1[1] = {1}, dup[2] = {0, 0}, d2[1] = {2}, dm1[1] = {-1},
                  three[3] = {0, 1, 0};
    BAD(WK_ERR_INVALID_ARGUMENT, "sum|wk_reduce", wk_reduce(NULL, WK_OP_SUM, x, &l22, d0, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, "sum|wk_reduce", wk_reduce(&o, WK_OP_SUM, NULL, &l22, d0, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, "sum|wk_reduce", wk_reduce(&o, WK_OP_SUM, x, NULL, d0, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, "sum|wk_reduce", wk_reduce(&o, WK_OP_SUM, x, &l22, NULL, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_reduce", wk_reduce(&o, WK_OP_ADD, x, &l22, d0, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, "wk_reduce", wk_reduce(&o, (wk_op)65, x, &l22, d0, 1));
    BAD(WK_ERR_INVALID_ARGUMENT, "max|wk_reduce", wk_reduce(&o, WK_OP_MAX, x, &l22, dup, 2));
    BAD(WK_ERR_INVALID_ARGUMENT, "sum|wk_reduce", wk_reduce(&o, WK_OP_SUM, x, &l22, three, 3));
    BAD(WK_ERR_INVALID_ARGUMENT, "sum|wk_reduce", wk_reduce(&o, WK_OP_SUM, x, &l22, d0, -1));
    BAD(WK_ERR_INDEX_OUT_OF_RANGE, "min|wk_reduce", wk_reduce(&o, WK_OP_MIN, x, &l22, d2, 1));
    BAD(WK_ERR_INDEX_OUT_OF_RANGE, "min|wk_reduce", wk_reduce(&o, WK_OP_MIN, x, &l22, dm1, 1));
    /* min/max/argmin/argmax over an empty reduced extent; an empty sum is fine. */
    BAD(WK_ERR_SHAPE, "max|wk_reduce", wk_reduce(&o, WK_OP_MAX, x, &l20, d1, 1));
    BAD(WK_ERR_SHAPE, "min|wk_reduce", wk_reduce(&o, WK_OP_MIN, x, &l20, d1, 1));
    BAD(WK_ERR_SHAPE, "argmin|wk_reduce", wk_reduce(&o, WK_OP_ARGMIN, x, &l20, d1, 1));
    BAD(WK_ERR_SHAPE, "argmax|wk_reduce", wk_reduce(&o, WK_OP_ARGMAX, x, &l20, d1, 1));
    wk_storage *s = NULL;
    TEST_EQ_STATUS(wk_reduce(&s, WK_OP_SUM, x, &l20, d1, 1), WK_OK);
    wk_storage_free(s);
    s = NULL;
    /* Reducing a non-empty dim of an empty tensor is not an empty extent: an empty output. */
    const wk_layout l02 = testlib_layout2(0, 2);
    if (TEST_EQ_STATUS(wk_reduce(&s, WK_OP_MAX, x, &l02, d1, 1), WK_OK))
        TEST_EQ_INT(wk_storage_len(s), 0);
    wk_storage_free(s);
    s = NULL;
    /* A zero dim makes any other dims valid (2^40 x 2^40 x 0, no element): the kept extent
     * 2^80 of a sum over the zero dim is an overflow, not a wrapped allocation (found by
     * fuzz_ops); reducing the two big dims gives an empty output. */
    const wk_layout big0 = {.rank = 3, .dims = {1ll << 40, 1ll << 40, 0}, .strides = {0, 0, 1}};
    const int32_t d01[2] = {0, 1};
    BAD(WK_ERR_OVERFLOW, "sum|wk_reduce", wk_reduce(&o, WK_OP_SUM, x, &big0, d2, 1));
    if (TEST_EQ_STATUS(wk_reduce(&s, WK_OP_SUM, x, &big0, d01, 2), WK_OK))
        TEST_EQ_INT(wk_storage_len(s), 0);
    wk_storage_free(s);
}

static void test_copy(void)
{
    wk_storage *const src = g_fx[FX_F32], *const dst = g_fx[FX_F32B];
    const wk_layout l3 = lay1(3), l4 = lay1(4);
    /* copy_strided_src */
    BAD(WK_ERR_INVALID_ARGUMENT, "copy_strided_src", wk_copy_strided_src(NULL, 0, src, &l4));
    BAD(WK_ERR_INVALID_ARGUMENT, "copy_strided_src", wk_copy_strided_src(dst, 0, NULL, &l4));
    BAD(WK_ERR_INVALID_ARGUMENT, "copy_strided_src", wk_copy_strided_src(dst, 0, src, NULL));
    BAD(WK_ERR_DTYPE, "copy_strided_src", wk_copy_strided_src(g_fx[FX_I32], 0, src, &l4));
    BAD(WK_ERR_LAYOUT, "copy_strided_src", wk_copy_strided_src(dst, 2, src, &l3)); /* 2 + 3 > 4 */
    BAD(WK_ERR_LAYOUT, "copy_strided_src", wk_copy_strided_src(dst, 1, src, &l4));
    BAD(WK_ERR_LAYOUT, "copy_strided_src", wk_copy_strided_src(dst, SIZE_MAX, src, &l3)); /* no wrap */
    BAD(WK_ERR_LAYOUT, "copy_strided_src", wk_copy_strided_src(dst, SIZE_MAX - 1, src, &l3));
    /* copy2d: dst (4), src (4). */
    BAD(WK_ERR_INVALID_ARGUMENT, "copy2d", wk_copy2d(NULL, src, 1, 1, 1, 1, 0, 0));
    BAD(WK_ERR_INVALID_ARGUMENT, "copy2d", wk_copy2d(dst, NULL, 1, 1, 1, 1, 0, 0));
    BAD(WK_ERR_DTYPE, "copy2d", wk_copy2d(g_fx[FX_U32], src, 1, 1, 1, 1, 0, 0));
    BAD(WK_ERR_LAYOUT, "copy2d", wk_copy2d(dst, src, 2, 2, 2, 2, 1, 0)); /* src last = 1+2+1 = 4 */
    BAD(WK_ERR_LAYOUT, "copy2d", wk_copy2d(dst, src, 2, 2, 2, 2, 0, 1)); /* dst last = 4 */
    BAD(WK_ERR_LAYOUT, "copy2d", wk_copy2d(dst, src, 1, 5, 5, 5, 0, 0)); /* a row of 5 */
    BAD(WK_ERR_LAYOUT, "copy2d", wk_copy2d(dst, src, 3, 1, 2, 1, 0, 0)); /* src rows at 0, 2, 4 */
    BAD(WK_ERR_LAYOUT, "copy2d", wk_copy2d(dst, src, 1, 1, 1, 1, 4, 0)); /* src offset = len */
    /* Extents past 2^63: (2^62 - 1) rows of stride 2^62; a row of 2^63 elements; offset SIZE_MAX. */
    const size_t h = (size_t)1 << 62;
    BAD(WK_ERR_OVERFLOW, "copy2d", wk_copy2d(dst, src, h, 1, h, 1, 0, 0));
    BAD(WK_ERR_OVERFLOW, "copy2d", wk_copy2d(dst, src, 1, (size_t)1 << 63, 1, 1, 0, 0));
    BAD(WK_ERR_OVERFLOW, "copy2d", wk_copy2d(dst, src, 1, 1, 1, 1, SIZE_MAX, 0));
    BAD(WK_ERR_OVERFLOW, "copy2d", wk_copy2d(dst, src, 2, 1, 1, SIZE_MAX, 0, 0));
}

static void test_storage(void)
{
    const float v[4] = {1, 2, 3, 4};
    wk_storage *const x = g_fx[FX_F32];
    BAD(WK_ERR_INVALID_ARGUMENT, "alloc_uninit", wk_storage_alloc_uninit(NULL, g_dev, WK_DTYPE_F32, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "alloc_uninit", wk_storage_alloc_uninit(&o, NULL, WK_DTYPE_F32, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "alloc_uninit", wk_storage_alloc_uninit(&o, g_dev, (wk_dtype)99, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "zeros", wk_storage_zeros(NULL, g_dev, WK_DTYPE_F32, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "zeros", wk_storage_zeros(&o, NULL, WK_DTYPE_F32, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "zeros", wk_storage_zeros(&o, g_dev, (wk_dtype)-1, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "from_host", wk_storage_from_host(NULL, g_dev, WK_DTYPE_F32, v, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "from_host", wk_storage_from_host(&o, NULL, WK_DTYPE_F32, v, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "from_host", wk_storage_from_host(&o, g_dev, WK_DTYPE_F32, NULL, 4));
    BAD(WK_ERR_INVALID_ARGUMENT, "from_host", wk_storage_from_host(&o, g_dev, (wk_dtype)10, v, 4));
    /* n * dtype size past 2^63 - 1. */
    BAD(WK_ERR_OVERFLOW, "alloc_uninit", wk_storage_alloc_uninit(&o, g_dev, WK_DTYPE_F32, (size_t)1 << 62));
    BAD(WK_ERR_OVERFLOW, "zeros", wk_storage_zeros(&o, g_dev, WK_DTYPE_F64, SIZE_MAX / 4));
    BAD(WK_ERR_OVERFLOW, "alloc_uninit", wk_storage_alloc_uninit(&o, g_dev, WK_DTYPE_U8, SIZE_MAX));
    BAD(WK_ERR_OVERFLOW, "from_host", wk_storage_from_host(&o, g_dev, WK_DTYPE_I64, v, (size_t)1 << 61));
    /* 2^61 bytes (2 EiB) fits the count rules but no machine has it. */
    BAD(WK_ERR_OUT_OF_MEMORY, "alloc_uninit", wk_storage_alloc_uninit(&o, g_dev, WK_DTYPE_U8, (size_t)1 << 61));
    BAD(WK_ERR_OUT_OF_MEMORY, "zeros", wk_storage_zeros(&o, g_dev, WK_DTYPE_I16, (size_t)1 << 60));
    /* to_host */
    float dst[5] = {-7, -7, -7, -7, -7};
    BAD(WK_ERR_INVALID_ARGUMENT, "to_host", wk_storage_to_host(NULL, 4, x));
    BAD(WK_ERR_INVALID_ARGUMENT, "to_host", wk_storage_to_host(dst, 4, NULL));
    BAD(WK_ERR_SHAPE, "to_host", wk_storage_to_host(dst, 5, x));
    BAD(WK_ERR_SHAPE, "to_host", wk_storage_to_host(dst, 3, x));
    BAD(WK_ERR_SHAPE, "to_host", wk_storage_to_host(dst, 0, x));
    for (int i = 0; i < 5; i++)
        TEST_CHECK(dst[i] == -7.0f, "%s: failed to_host wrote element %d", g_spec, i);
    /* clone */
    BAD(WK_ERR_INVALID_ARGUMENT, "clone", wk_storage_clone(NULL, x));
    BAD(WK_ERR_INVALID_ARGUMENT, "clone", wk_storage_clone(&o, NULL));
    /* Queries on unknown values. */
    TEST_EQ_INT(wk_device_supports(g_dev, WK_OP_ADD, (wk_dtype)99), 0);
    TEST_EQ_INT(wk_device_supports(g_dev, (wk_op)999, WK_DTYPE_F32), 0);
    TEST_EQ_INT(wk_op_defined((wk_op)-5, WK_DTYPE_F32), 0);
}

/* Device specs, backends, synchronize, the allocator hook. Runs once (not per device). */
static void test_devices(void)
{
    wk_device *d = NULL;
#define BAD_OPEN(want, spec)                                                                   \
    do {                                                                                       \
        d = NULL;                                                                              \
        expect_err(wk_device_open(&d, spec), want, "wk_device_open|device", "open " #spec,     \
                   __FILE__, __LINE__);                                                        \
        TEST_CHECK(d == NULL, "failed open of %s set the handle", #spec);                      \
        wk_device_close(d);                                                                    \
    } while (0)
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, NULL);
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "gpu");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "cuda:x");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "cuda:-1");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "cuda:");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "cuda:0x");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "cuda:99999999999999999999");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "CPU");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "cpux");
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, " cpu");
    expect_err(wk_device_open(NULL, "cpu"), WK_ERR_INVALID_ARGUMENT, "wk_device_open|device",
               "wk_device_open(NULL, \"cpu\")", __FILE__, __LINE__);
    /* Absent devices: an ordinal past the count; a backend with no device. */
    int n = 0;
    const char *reason = NULL;
    wk_backend_device_count(&n, &reason, WK_BACKEND_ROCM);
    if (n < 99)
        BAD_OPEN(WK_ERR_NO_DEVICE, "rocm:99");
    if (n == 0)
        BAD_OPEN(WK_ERR_NO_DEVICE, "rocm:0");
    wk_backend_device_count(&n, &reason, WK_BACKEND_SIMT);
    if (n < 3)
        BAD_OPEN(WK_ERR_NO_DEVICE, "simt:2"); /* simt has 0 or 2 devices */
    BAD_OPEN(WK_ERR_INVALID_ARGUMENT, "simt:x");
    wk_backend_device_count(&n, &reason, WK_BACKEND_CUDA);
    if (n < 99)
        BAD_OPEN(WK_ERR_NO_DEVICE, "cuda:99");
    if (n == 0)
        BAD_OPEN(WK_ERR_NO_DEVICE, "cuda");
    expect_err(wk_backend_device_count(NULL, NULL, WK_BACKEND_CPU), WK_ERR_INVALID_ARGUMENT,
               "wk_backend_device_count", "wk_backend_device_count(NULL)", __FILE__, __LINE__);
    expect_err(wk_backend_device_count(&n, NULL, (wk_backend_kind)WK_BACKEND_COUNT),
               WK_ERR_INVALID_ARGUMENT, "wk_backend_device_count",
               "wk_backend_device_count(kind WK_BACKEND_COUNT)", __FILE__, __LINE__);
    expect_err(wk_backend_device_count(&n, NULL, (wk_backend_kind)-1), WK_ERR_INVALID_ARGUMENT,
               "wk_backend_device_count", "wk_backend_device_count(kind -1)", __FILE__, __LINE__);
    expect_err(wk_device_synchronize(NULL), WK_ERR_INVALID_ARGUMENT, "synchronize",
               "wk_device_synchronize(NULL)", __FILE__, __LINE__);

    /* The allocator hook: only while no device or storage is alive (nothing is alive here). */
    wk_device *cpu = NULL;
    wk_storage *s = NULL;
    TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK);
    expect_err(wk_set_allocator(NULL), WK_ERR_INVALID_ARGUMENT, "allocator",
               "wk_set_allocator with a device open", __FILE__, __LINE__);
    TEST_EQ_STATUS(wk_storage_zeros(&s, cpu, WK_DTYPE_F32, 2), WK_OK);
    expect_err(wk_set_allocator(NULL), WK_ERR_INVALID_ARGUMENT, "allocator",
               "wk_set_allocator with a storage alive", __FILE__, __LINE__);
    wk_storage_free(s);
    wk_device_close(cpu);
    /* An allocator with a NULL function is a bad argument. */
    const wk_allocator half = {NULL, NULL, NULL};
    expect_err(wk_set_allocator(&half), WK_ERR_INVALID_ARGUMENT, "allocator",
               "wk_set_allocator({NULL, NULL})", __FILE__, __LINE__);
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK); /* back to malloc/free: fine when idle */
}

/* The layout helpers (docs/semantics.md, "Layout helpers"): *out is left as it was. */
static void test_layout_helpers(void)
{
    const int64_t d23[2] = {2, 3}, d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, dneg[2] = {2, -1},
                  dbig[2] = {INT64_C(1) << 40, INT64_C(1) << 40}, d43[2] = {4, 3};
    wk_layout l, out;
    TEST_EQ_STATUS(wk_layout_contiguous(&l, 2, d23), WK_OK);
    out = l;
#define BAD_LAYOUT_CALL(want, name, call)                                                       \
    do {                                                                                        \
        expect_err(call, want, name, #call, __FILE__, __LINE__);                               \
        TEST_CHECK(memcmp(&out, &l, sizeof l) == 0, "%s changed *out", #call);                  \
    } while (0)
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "contiguous", wk_layout_contiguous(&out, 9, d9));
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "contiguous", wk_layout_contiguous(&out, -1, d23));
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "contiguous", wk_layout_contiguous(&out, 2, dneg));
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "contiguous", wk_layout_contiguous(&out, 2, NULL));
    BAD_LAYOUT_CALL(WK_ERR_OVERFLOW, "contiguous", wk_layout_contiguous(&out, 2, dbig));
    expect_err(wk_layout_contiguous(NULL, 2, d23), WK_ERR_INVALID_ARGUMENT, "contiguous",
               "wk_layout_contiguous(NULL)", __FILE__, __LINE__);
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "transpose", wk_layout_transpose(&out, &l, 0, 2));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "transpose", wk_layout_transpose(&out, &l, -1, 1));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "transpose", wk_layout_transpose(&out, &l, 1, 8));
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "transpose", wk_layout_transpose(&out, NULL, 0, 1));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "narrow", wk_layout_narrow(&out, &l, 2, 0, 1));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "narrow", wk_layout_narrow(&out, &l, -1, 0, 1));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "narrow", wk_layout_narrow(&out, &l, 1, 2, 2));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "narrow", wk_layout_narrow(&out, &l, 1, -1, 1));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "narrow", wk_layout_narrow(&out, &l, 1, 0, -1));
    BAD_LAYOUT_CALL(WK_ERR_INDEX_OUT_OF_RANGE, "narrow", wk_layout_narrow(&out, &l, 1, 1, INT64_MAX));
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "narrow", wk_layout_narrow(&out, NULL, 0, 0, 1));
    BAD_LAYOUT_CALL(WK_ERR_SHAPE, "broadcast", wk_layout_broadcast(&out, &l, 2, d43));
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "broadcast", wk_layout_broadcast(&out, &l, 2, NULL));
    BAD_LAYOUT_CALL(WK_ERR_INVALID_ARGUMENT, "broadcast", wk_layout_broadcast(&out, &l, 9, d9));
#undef BAD_LAYOUT_CALL
}

/* Operands on two different devices (only with a GPU present). */
static void test_device_mismatch(const char *other)
{
    wk_device *gpu = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&gpu, other), WK_OK))
        return;
    const float v[4] = {1, 2, 3, 4};
    wk_storage *g = testlib_upload(gpu, WK_DTYPE_F32, v, 4);
    const wk_layout l = lay1(4);
    if (g) {
        BAD(WK_ERR_DEVICE_MISMATCH, "add|wk_binary", wk_binary(&o, WK_OP_ADD, g_fx[FX_F32], &l, g, &l));
        BAD(WK_ERR_DEVICE_MISMATCH, "eq|wk_cmp", wk_cmp(&o, WK_OP_EQ, g, &l, g_fx[FX_F32], &l));
        BAD(WK_ERR_DEVICE_MISMATCH, "where_cond", wk_where_cond(&o, g_fx[FX_U32], &l, g, &l, g, &l));
        BAD(WK_ERR_DEVICE_MISMATCH, "copy_strided_src", wk_copy_strided_src(g_fx[FX_F32B], 0, g, &l));
        BAD(WK_ERR_DEVICE_MISMATCH, "copy2d", wk_copy2d(g, g_fx[FX_F32], 1, 4, 4, 4, 0, 0));
    }
    wk_storage_free(g);
    wk_device_close(gpu);
}

int main(void)
{
    bad_layouts_make();
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    test_devices();
    test_layout_helpers();
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        fixtures_make();
        test_bad_layouts();
        test_unary();
        test_binary();
        test_where();
        test_cast_and_fill();
        test_reduce();
        test_copy();
        test_storage();
        if (i == 0 && n > 1)
            test_device_mismatch(specs[1]);
        fixtures_free();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
