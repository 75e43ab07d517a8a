/* test_bad_attn.c: every error path of wk_decode_attention and wk_decode_attention_lens
 * (src/core/api_attn.c) with its exact status, on the CPU (the front end checks once for every
 * backend), plus the valid edge cases next to them (empty batch, Lq = Lk, a cache view with a
 * row stride). A failed call writes no output. The key counts of the lens variant (values, not
 * shapes) are checked by the backend: on the CPU at the call, on a GPU device at the next
 * synchronize (WK_ERR_INDEX_OUT_OF_RANGE both), for a count of 0, Lq - 1 and Lk + 1. */
#include "testlib.h"
#include <math.h>
#include <stdlib.h>

static wk_device *cpu;

static wk_storage *zeros(wk_dtype dt, size_t n)
{
    wk_storage *s = NULL;
    TEST_EQ_STATUS(wk_storage_zeros(&s, cpu, dt, n ? n : 1), WK_OK);
    return s;
}

static wk_layout lay(int64_t b, int64_t h, int64_t l, int64_t d)
{
    return testlib_layout(4, (const int64_t[]){b, h, l, d});
}

int main(void)
{
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    wk_storage *q = zeros(WK_DTYPE_F32, 2 * 5 * 64), *k = zeros(WK_DTYPE_F16, 1 * 2 * 10 * 64);
    wk_storage *v = zeros(WK_DTYPE_F16, 1 * 2 * 10 * 64), *vb = zeros(WK_DTYPE_BF16, 1 * 2 * 10 * 64);
    wk_storage *qu8 = zeros(WK_DTYPE_U8, 8 * 64), *big = zeros(WK_DTYPE_F32, 1 * 8 * 1 * 300);
    wk_layout lq = lay(1, 8, 1, 64), lk = lay(1, 2, 10, 64);
    wk_storage *o = (wk_storage *)0x1; /* must stay untouched on failure */
    const float sc = 0.125f;

    TEST_EQ_STATUS(wk_decode_attention(NULL, q, &lq, k, &lk, v, &lk, sc, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_decode_attention(&o, NULL, &lq, k, &lk, v, &lk, sc, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, NULL, k, &lk, v, &lk, sc, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, NULL, &lk, v, &lk, sc, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, k, &lk, NULL, &lk, sc, 1), WK_ERR_INVALID_ARGUMENT);
    /* a layout past its storage */
    wk_layout lbig = lay(1, 2, 11, 64);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, k, &lbig, v, &lbig, sc, 1), WK_ERR_LAYOUT);
    /* rank */
    wk_layout l3 = testlib_layout(3, (const int64_t[]){8, 1, 64});
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &l3, k, &lk, v, &lk, sc, 1), WK_ERR_SHAPE);
    /* k and v differ */
    wk_layout lk9 = lay(1, 2, 9, 64);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, k, &lk, v, &lk9, sc, 1), WK_ERR_SHAPE);
    /* head size differs between q and k */
    wk_layout lq32 = lay(1, 8, 1, 32);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq32, k, &lk, v, &lk, sc, 1), WK_ERR_SHAPE);
    /* batch differs */
    wk_layout lq2 = lay(2, 4, 1, 64);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq2, k, &lk, v, &lk, sc, 1), WK_ERR_SHAPE);
    /* query heads not a multiple of kv heads */
    wk_layout lq3 = lay(1, 3, 1, 64);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq3, k, &lk, v, &lk, sc, 1), WK_ERR_SHAPE);
    /* head size beyond 256 */
    wk_layout lq300 = lay(1, 8, 1, 300), lk300 = lay(1, 2, 1, 300);
    TEST_EQ_STATUS(wk_decode_attention(&o, big, &lq300, big, &lk300, big, &lk300, sc, 1), WK_ERR_SHAPE);
    /* more query tokens than keys */
    wk_layout lq11 = lay(1, 2, 11, 8), lk10 = lay(1, 2, 10, 8);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq11, k, &lk10, v, &lk10, sc, 1), WK_ERR_SHAPE);
    /* no keys for a query */
    wk_layout lq0 = lay(1, 2, 0, 8), lk0 = lay(1, 2, 0, 8);
    wk_storage *e = NULL;
    TEST_EQ_STATUS(wk_decode_attention(&e, q, &lq0, k, &lk0, v, &lk0, sc, 1), WK_OK); /* empty */
    TEST_EQ_INT(e ? wk_storage_len(e) : 99, 0);
    wk_storage_free(e);
    /* last dim not of stride 1 */
    wk_layout lks = lk;
    lks.dims[3] = 32;
    lks.strides[3] = 2;
    wk_layout lq2s = lay(1, 8, 1, 32);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq2s, k, &lks, v, &lks, sc, 1), WK_ERR_LAYOUT);
    /* dtypes: k and v differ; q not a float; cache not a float */
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, k, &lk, vb, &lk, sc, 1), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_decode_attention(&o, qu8, &lq, k, &lk, v, &lk, sc, 1), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, qu8, &lk10, qu8, &lk10, sc, 1), WK_ERR_SHAPE);
    wk_layout lq8 = lay(1, 2, 1, 8);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq8, qu8, &lk10, qu8, &lk10, sc, 1), WK_ERR_DTYPE);
    /* scale */
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, k, &lk, v, &lk, NAN, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_decode_attention(&o, q, &lq, k, &lk, v, &lk, INFINITY, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_CHECK(o == (wk_storage *)0x1, "a failed call wrote its output");
    TEST_CHECK(wk_last_error()[0] != 0, "no message");

    /* valid: Lq = Lk causal (a prompt), a cache view with row stride 2 D */
    wk_layout lqk = lay(1, 2, 5, 64), lkv = lay(1, 2, 5, 64);
    lkv.strides[2] = 128;
    lkv.strides[1] = 5 * 128;
    TEST_EQ_STATUS(wk_decode_attention(&e, q, &lqk, k, &lkv, v, &lkv, sc, 1), WK_OK);
    TEST_EQ_INT(e ? wk_storage_len(e) : 0, 2 * 5 * 64);
    wk_storage_free(e);

    /* lens: NULL operand or layout, layout past its storage, rank, length, dtype */
    uint32_t hl[3] = {10, 10, 10};
    wk_storage *lens = testlib_upload(cpu, WK_DTYPE_U32, hl, 3);
    wk_storage *lens_i32 = testlib_upload(cpu, WK_DTYPE_I32, hl, 3);
    wk_layout ll1 = testlib_layout1(1), ll4 = testlib_layout1(4), ll3 = testlib_layout1(3);
    wk_layout ll2d = testlib_layout2(1, 1);
    const wk_layout lkf = lay(1, 2, 10, 64);
    TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lkf, v, &lkf, NULL, &ll1, sc, 1),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lkf, v, &lkf, lens, NULL, sc, 1),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lkf, v, &lkf, lens, &ll4, sc, 1),
                   WK_ERR_LAYOUT);
    TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lkf, v, &lkf, lens, &ll2d, sc, 1),
                   WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lkf, v, &lkf, lens, &ll3, sc, 1),
                   WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lkf, v, &lkf, lens_i32, &ll1, sc, 1),
                   WK_ERR_DTYPE);
    /* counts outside [Lq, Lk] = [1, 10] (0, 11) and [2, 10] for two query tokens (1) */
    static const uint32_t badc[3] = {0, 11, 1};
    static const int64_t badq[3] = {1, 1, 2};
    for (int i = 0; i < 3; i++) {
        wk_storage *lb = testlib_upload(cpu, WK_DTYPE_U32, &badc[i], 1);
        wk_layout lqi = lay(1, 8, badq[i], 64);
        wk_storage *qi = zeros(WK_DTYPE_F32, (size_t)(8 * badq[i] * 64));
        TEST_EQ_STATUS(wk_decode_attention_lens(&o, qi, &lqi, k, &lkf, v, &lkf, lb, &ll1, sc, 1),
                       WK_ERR_INDEX_OUT_OF_RANGE);
        wk_storage_free(qi);
        wk_storage_free(lb);
    }
    TEST_CHECK(o == (wk_storage *)0x1, "a failed lens call wrote its output");
    /* valid: count Lk and count Lq */
    for (int i = 0; i < 2; i++) {
        wk_storage *lb = testlib_upload(cpu, WK_DTYPE_U32, (const uint32_t[]){i ? 1u : 10u}, 1);
        TEST_EQ_STATUS(wk_decode_attention_lens(&e, q, &lq, k, &lkf, v, &lkf, lb, &ll1, sc, 1),
                       WK_OK);
        wk_storage_free(e);
        e = NULL;
        wk_storage_free(lb);
    }

    /* another device, when one exists */
    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    for (int i = 0; i < nd; i++) {
        wk_device *g;
        if (wk_device_open(&g, specs[i]) != WK_OK)
            continue;
        if (wk_device_backend(g) == WK_BACKEND_CPU) {
            wk_device_close(g);
            continue;
        }
        wk_storage *gq = NULL;
        if (TEST_EQ_STATUS(wk_storage_zeros(&gq, g, WK_DTYPE_F32, 8 * 64), WK_OK))
            TEST_EQ_STATUS(wk_decode_attention(&o, gq, &lq, k, &lk, v, &lk, sc, 1),
                           WK_ERR_DEVICE_MISMATCH);
        /* lens on another device than q */
        wk_storage *gl = testlib_upload(g, WK_DTYPE_U32, hl, 1);
        TEST_EQ_STATUS(wk_decode_attention_lens(&o, q, &lq, k, &lkf, v, &lkf, gl, &ll1, sc, 1),
                       WK_ERR_DEVICE_MISMATCH);
        /* counts out of range on the device: the call is queued, the next synchronize reports
         * it (and clears it); Lk + 1 must not be read past the cache (the simt device's guard
         * zones and compute-sanitizer catch that) */
        wk_storage *dq = testlib_upload_f64(g, WK_DTYPE_F32, (const double[256]){0}, 2 * 8 * 64);
        wk_storage *dk = testlib_upload_f64(g, WK_DTYPE_F16, (const double[1280]){0}, 2 * 10 * 64);
        for (int c = 0; c < 3; c++) {
            wk_storage *lb = testlib_upload(g, WK_DTYPE_U32, &badc[c], 1);
            wk_layout lqi = lay(1, 8, badq[c], 64);
            wk_storage *oi = NULL;
            if (dq && dk && lb &&
                TEST_EQ_STATUS(wk_decode_attention_lens(&oi, dq, &lqi, dk, &lkf, dk, &lkf, lb, &ll1,
                                                        sc, 1), WK_OK)) {
                TEST_EQ_STATUS(wk_device_synchronize(g), WK_ERR_INDEX_OUT_OF_RANGE);
                TEST_EQ_STATUS(wk_device_synchronize(g), WK_OK);
            }
            wk_storage_free(oi);
            wk_storage_free(lb);
        }
        wk_storage_free(dq);
        wk_storage_free(dk);
        wk_storage_free(gl);
        wk_storage_free(gq);
        wk_device_close(g);
    }
    wk_storage_free(q);
    wk_storage_free(k);
    wk_storage_free(v);
    wk_storage_free(vb);
    wk_storage_free(qu8);
    wk_storage_free(big);
    wk_storage_free(lens);
    wk_storage_free(lens_i32);
    wk_device_close(cpu);
    return testlib_summary();
}
