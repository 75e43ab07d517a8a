/* test_bad_quant.c: every error path of the quantized ops (docs/semantics.md, "Quantized
 * tensors"), each with its exact status and *out left NULL, on every device. Checks that come
 * after the support check (the out-of-range id, which the backend finds) accept
 * WK_ERR_NOT_SUPPORTED on a device whose wk_device_supports_quant says no.
 * Run: ctest -R test_bad_quant */
#include "testlib.h"
#include <stdint.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

static void expect_(wk_status got, wk_status want, wk_storage *out, int late, const char *what,
                    int line)
{
    /* an id out of range found by a GPU kernel surfaces at the next synchronize */
    if (late && got == WK_OK && want != WK_OK && wk_device_backend(g_dev) != WK_BACKEND_CPU) {
        wk_storage_free(out);
        out = NULL;
        got = wk_device_synchronize(g_dev);
    }
    int ok = got == want || (late && got == WK_ERR_NOT_SUPPORTED &&
                             !wk_device_supports_quant(g_dev, WK_OP_QEMBEDDING, WK_QTYPE_Q4_0,
                                                       WK_DTYPE_F32));
    TEST_CHECK(ok, "%s line %d: %s: got %s, want %s (%s)", g_spec, line, what,
               wk_status_string(got), wk_status_string(want), wk_last_error());
    TEST_CHECK(out == NULL || want == WK_OK, "%s line %d: %s: a failed call returned an output",
               g_spec, line, what);
    wk_storage_free(out);
}
#define EXPECT(call, want) do { wk_storage *o_ = NULL; wk_storage **out_ = &o_; (void)out_; \
        expect_((call), (want), o_, 0, #call, __LINE__); } while (0)
#define EXPECT_LATE(call, want) do { wk_storage *o_ = NULL; wk_storage **out_ = &o_; (void)out_; \
        expect_((call), (want), o_, 1, #call, __LINE__); } while (0)
#define OUT out_

static void test_quantize(wk_storage *x64, wk_storage *xh)
{
    wk_layout l64 = testlib_layout1(64), l33 = testlib_layout1(33), l65 = testlib_layout1(65);
    const wk_qtype Q = WK_QTYPE_Q4_0;
    EXPECT(wk_quantize(NULL, Q, x64, &l64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_quantize(OUT, Q, NULL, &l64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_quantize(OUT, Q, x64, NULL), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_quantize(OUT, Q, x64, &l65), WK_ERR_LAYOUT);        /* past the storage */
    EXPECT(wk_quantize(OUT, (wk_qtype)4, x64, &l64), WK_ERR_INVALID_ARGUMENT); /* a gap in ids */
    EXPECT(wk_quantize(OUT, (wk_qtype)99, x64, &l64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_quantize(OUT, (wk_qtype)-1, x64, &l64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_quantize(OUT, Q, xh, &l64), WK_ERR_DTYPE);          /* f16 x */
    if (wk_device_backend(wk_storage_device(x64)) == WK_BACKEND_CPU) {
        EXPECT(wk_quantize(OUT, Q, x64, &l33), WK_ERR_SHAPE);     /* 33 % 32 */
        EXPECT(wk_quantize(OUT, WK_QTYPE_Q4_K, x64, &l64), WK_ERR_SHAPE); /* 64 % 256 */
    } else {
        EXPECT(wk_quantize(OUT, Q, x64, &l64), WK_ERR_NOT_SUPPORTED); /* quantize on the CPU */
    }
}

static void test_dequantize(wk_storage *q, wk_storage *x64)
{
    const wk_qtype Q = WK_QTYPE_Q4_0; /* q holds 4 blocks of q4_0 (72 bytes) */
    EXPECT(wk_dequantize(NULL, WK_DTYPE_F32, q, Q, 32), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, NULL, Q, 32), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, q, (wk_qtype)5, 32), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F64, q, Q, 32), WK_ERR_DTYPE);
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F8E4M3, q, Q, 32), WK_ERR_DTYPE);
    EXPECT(wk_dequantize(OUT, WK_DTYPE_U8, q, Q, 32), WK_ERR_DTYPE);
    EXPECT(wk_dequantize(OUT, (wk_dtype)77, q, Q, 32), WK_ERR_DTYPE);
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, x64, Q, 32), WK_ERR_DTYPE); /* not a u8 storage */
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, q, Q, -32), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, q, Q, 48), WK_ERR_SHAPE);   /* 48 % 32 */
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, q, Q, 160), WK_ERR_SHAPE);  /* 5 blocks > 4 */
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, q, WK_QTYPE_Q4_K, 256), WK_ERR_SHAPE); /* 144 > 72 */
    /* 2^55 q8_k blocks of 292 bytes: the byte count overflows */
    EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, q, WK_QTYPE_Q8_K, INT64_MAX / 256 * 256), WK_ERR_OVERFLOW);
    if (wk_device_supports_quant(g_dev, WK_OP_DEQUANTIZE, Q, WK_DTYPE_F32)) {
        wk_storage *o = NULL; /* n = 0: an empty output */
        if (TEST_EQ_STATUS(wk_dequantize(&o, WK_DTYPE_F32, q, Q, 0), WK_OK))
            TEST_EQ_INT(wk_storage_len(o), 0);
        wk_storage_free(o);
    } else {
        EXPECT(wk_dequantize(OUT, WK_DTYPE_F32, q, Q, 32), WK_ERR_NOT_SUPPORTED);
    }
}

static void test_qmatmul(wk_storage *q, wk_storage *x64, wk_storage *q_other)
{
    const wk_qtype Q = WK_QTYPE_Q4_0; /* W (2, 64): 4 blocks = the 72 bytes of q */
    const wk_layout lx = testlib_layout2(1, 64), lbig = testlib_layout2(2, 64);
    const wk_layout l0 = {.rank = 0}, l32 = testlib_layout2(2, 32);
    wk_storage *xu8 = testlib_upload(g_dev, WK_DTYPE_U8, (const uint8_t[64]){0}, 64);
    EXPECT(wk_qmatmul(NULL, x64, &lx, q, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qmatmul(OUT, NULL, &lx, q, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qmatmul(OUT, x64, NULL, q, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qmatmul(OUT, x64, &lx, NULL, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qmatmul(OUT, x64, &lbig, q, Q, 2, 64), WK_ERR_LAYOUT); /* 128 > 64 elements */
    if (q_other)
        EXPECT(wk_qmatmul(OUT, x64, &lx, q_other, Q, 2, 64), WK_ERR_DEVICE_MISMATCH);
    EXPECT(wk_qmatmul(OUT, x64, &lx, q, (wk_qtype)16, 2, 64), WK_ERR_INVALID_ARGUMENT);
    if (xu8)
        EXPECT(wk_qmatmul(OUT, xu8, &lx, q, Q, 2, 64), WK_ERR_DTYPE); /* u8 x */
    EXPECT(wk_qmatmul(OUT, x64, &lx, x64, Q, 2, 64), WK_ERR_DTYPE);   /* w not u8 */
    EXPECT(wk_qmatmul(OUT, x64, &lx, q, Q, -2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qmatmul(OUT, x64, &lx, q, Q, 2, -64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qmatmul(OUT, x64, &l0, q, Q, 2, 64), WK_ERR_SHAPE);     /* rank 0 */
    EXPECT(wk_qmatmul(OUT, x64, &lx, q, Q, 2, 32), WK_ERR_SHAPE);     /* x's k is 64 */
    EXPECT(wk_qmatmul(OUT, x64, &l32, q, WK_QTYPE_Q4_K, 2, 32), WK_ERR_SHAPE); /* 32 % 256 */
    EXPECT(wk_qmatmul(OUT, x64, &lx, q, Q, 3, 64), WK_ERR_SHAPE);     /* 6 blocks > 4 */
    if (wk_device_supports_quant(g_dev, WK_OP_QMATMUL, Q, WK_DTYPE_F32)) {
        wk_storage *o = NULL;
        if (TEST_EQ_STATUS(wk_qmatmul(&o, x64, &lx, q, Q, 2, 64), WK_OK))
            TEST_EQ_INT(wk_storage_len(o), 2);
        wk_storage_free(o);
    } else {
        EXPECT(wk_qmatmul(OUT, x64, &lx, q, Q, 2, 64), WK_ERR_NOT_SUPPORTED);
    }
    wk_storage_free(xu8);
}

static void test_qembedding(wk_storage *q, wk_storage *x64, wk_storage *q_other)
{
    const wk_qtype Q = WK_QTYPE_Q4_0; /* W (2, 64) */
    const uint32_t ids_ok[3] = {1, UINT32_MAX, 0}, ids_bad[3] = {1, 2, 0};
    const int64_t ids_neg[2] = {0, -1};
    const int32_t ids_i32[2] = {0, 1};
    wk_storage *iu = testlib_upload(g_dev, WK_DTYPE_U32, ids_ok, 3);
    wk_storage *ib = testlib_upload(g_dev, WK_DTYPE_U32, ids_bad, 3);
    wk_storage *in = testlib_upload(g_dev, WK_DTYPE_I64, ids_neg, 2);
    wk_storage *i32 = testlib_upload(g_dev, WK_DTYPE_I32, ids_i32, 2);
    const wk_layout l3 = testlib_layout1(3), l2 = testlib_layout1(2), l4 = testlib_layout1(4);
    wk_layout l8 = {.rank = 8};
    for (int d = 0; d < 8; d++)
        l8.dims[d] = 1, l8.strides[d] = 1;
    if (!iu || !ib || !in || !i32)
        goto out;
    EXPECT(wk_qembedding(NULL, WK_DTYPE_F32, iu, &l3, q, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, NULL, &l3, q, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, NULL, q, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, NULL, Q, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l4, q, Q, 2, 64), WK_ERR_LAYOUT);
    if (q_other)
        EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, q_other, Q, 2, 64), WK_ERR_DEVICE_MISMATCH);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, i32, &l2, q, Q, 2, 64), WK_ERR_DTYPE);  /* i32 ids */
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, x64, &l2, q, Q, 2, 64), WK_ERR_DTYPE);  /* f32 ids */
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l8, q, Q, 2, 64), WK_ERR_SHAPE);   /* rank 9 out */
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, q, (wk_qtype)31, 2, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F64, iu, &l3, q, Q, 2, 64), WK_ERR_DTYPE);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, x64, Q, 2, 64), WK_ERR_DTYPE); /* w not u8 */
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, q, Q, -1, 64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, q, Q, 2, -64), WK_ERR_INVALID_ARGUMENT);
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, q, Q, 2, 48), WK_ERR_SHAPE);   /* 48 % 32 */
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, q, Q, 3, 64), WK_ERR_SHAPE);   /* 6 blocks */
    EXPECT(wk_qembedding(OUT, WK_DTYPE_F32, iu, &l3, q, Q, 0, (int64_t)1 << 62), WK_ERR_OVERFLOW);
    /* found by the backend: id 2 of 2 rows (u32), -1 (i64) */
    EXPECT_LATE(wk_qembedding(OUT, WK_DTYPE_F32, ib, &l3, q, Q, 2, 64), WK_ERR_INDEX_OUT_OF_RANGE);
    EXPECT_LATE(wk_qembedding(OUT, WK_DTYPE_F32, in, &l2, q, Q, 2, 64), WK_ERR_INDEX_OUT_OF_RANGE);
    if (wk_device_supports_quant(g_dev, WK_OP_QEMBEDDING, Q, WK_DTYPE_F32)) {
        wk_storage *o = NULL;
        wk_status st = wk_qembedding(&o, WK_DTYPE_F32, ib, &l3, q, Q, 2, 64);
        if (st == WK_OK && wk_device_backend(g_dev) != WK_BACKEND_CPU) { /* deferred */
            wk_storage_free(o);
            o = NULL;
            st = wk_device_synchronize(g_dev);
        }
        TEST_EQ_STATUS(st, WK_ERR_INDEX_OUT_OF_RANGE);
        TEST_CHECK(strstr(wk_last_error(), "id 2") != NULL, "the message names the id: %s",
                   wk_last_error());
        if (TEST_EQ_STATUS(wk_qembedding(&o, WK_DTYPE_F32, iu, &l3, q, Q, 2, 64), WK_OK))
            TEST_EQ_INT(wk_storage_len(o), 3 * 64);
        wk_storage_free(o);
    }
out:
    wk_storage_free(iu);
    wk_storage_free(ib);
    wk_storage_free(in);
    wk_storage_free(i32);
}

static void test_supports(void)
{
    TEST_EQ_INT(wk_device_supports_quant(NULL, WK_OP_QMATMUL, WK_QTYPE_Q4_0, WK_DTYPE_F32), 0);
    TEST_EQ_INT(wk_device_supports_quant(g_dev, WK_OP_ADD, WK_QTYPE_Q4_0, WK_DTYPE_F32), 0);
    TEST_EQ_INT(wk_device_supports_quant(g_dev, WK_OP_QMATMUL, (wk_qtype)4, WK_DTYPE_F32), 0);
    TEST_EQ_INT(wk_device_supports_quant(g_dev, WK_OP_QMATMUL, WK_QTYPE_Q4_0, WK_DTYPE_F64), 0);
    TEST_EQ_INT(wk_op_defined(WK_OP_QMATMUL, WK_DTYPE_F64), 0);
    TEST_EQ_INT(wk_op_defined(WK_OP_DEQUANTIZE, WK_DTYPE_BF16), 1);
    if (wk_device_backend(g_dev) == WK_BACKEND_CPU)
        TEST_EQ_INT(wk_device_supports_quant(g_dev, WK_OP_QMATMUL, WK_QTYPE_Q6_K, WK_DTYPE_BF16), 1);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    wk_device *cpu = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    wk_storage *q_cpu = testlib_upload(cpu, WK_DTYPE_U8, (const uint8_t[72]){0}, 72);
    for (int i = 0; i < nd; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, specs[i]), WK_OK))
            continue;
        float xv[64] = {0};
        uint16_t hv[64] = {0};
        wk_storage *x64 = testlib_upload(g_dev, WK_DTYPE_F32, xv, 64);
        wk_storage *xh = testlib_upload(g_dev, WK_DTYPE_F16, hv, 64);
        wk_storage *q = testlib_upload(g_dev, WK_DTYPE_U8, (const uint8_t[72]){0}, 72);
        const int gpu = wk_device_backend(g_dev) != WK_BACKEND_CPU;
        if (x64 && xh && q) {
            test_supports();
            test_quantize(x64, xh);
            test_dequantize(q, x64);
            test_qmatmul(q, x64, gpu ? q_cpu : NULL);
            test_qembedding(q, x64, gpu ? q_cpu : NULL);
        }
        wk_storage_free(x64);
        wk_storage_free(xh);
        wk_storage_free(q);
        wk_device_close(g_dev);
    }
    wk_storage_free(q_cpu);
    wk_device_close(cpu);
    return testlib_summary();
}
