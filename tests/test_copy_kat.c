/* test_copy_kat.c: known answers for the in-place movement ops on every device:
 * copy_strided_src (a transposed 2x3 written from an offset), copy2d (row blocks between
 * strides), const_set on strided and broadcast views (untouched elements stay), plus the storage
 * basics (zeros, from/to host, clone). Expected arrays are written out by hand.
 * Run: ctest -R test_copy_kat */
#include "testlib.h"
#include <math.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

static void expect_f32(const wk_storage *s, const float *want, size_t n, const char *what)
{
    float got[32];
    if (n > 32 || testlib_download(got, n, s))
        return;
    for (size_t i = 0; i < n; i++)
        TEST_CHECK(got[i] == want[i], "%s: %s: element %zu = %g, expected %g", g_spec, what, i,
                   got[i], want[i]);
}

static void test_storage(void)
{
    wk_storage *z = NULL, *c = NULL;
    if (TEST_EQ_STATUS(wk_storage_zeros(&z, g_dev, WK_DTYPE_F32, 5), WK_OK)) {
        TEST_EQ_INT(wk_storage_len(z), 5);
        TEST_EQ_INT(wk_storage_dtype(z), WK_DTYPE_F32);
        TEST_CHECK(wk_storage_device(z) == g_dev, "%s: storage device", g_spec);
        expect_f32(z, (const float[]){0, 0, 0, 0, 0}, 5, "zeros");
        /* clone is a copy: changing the clone leaves the original. */
        if (TEST_EQ_STATUS(wk_storage_clone(&c, z), WK_OK)) {
            const wk_layout l = testlib_layout1(5);
            const float one = 1.0f;
            TEST_EQ_STATUS(wk_const_set(c, &l, &one), WK_OK);
            expect_f32(c, (const float[]){1, 1, 1, 1, 1}, 5, "clone after const_set");
            expect_f32(z, (const float[]){0, 0, 0, 0, 0}, 5, "original after clone changed");
        }
    }
    wk_storage_free(c);
    wk_storage_free(z);
    /* Zero-length storages are valid. */
    wk_storage *e = NULL;
    if (TEST_EQ_STATUS(wk_storage_zeros(&e, g_dev, WK_DTYPE_I64, 0), WK_OK)) {
        TEST_EQ_INT(wk_storage_len(e), 0);
        TEST_EQ_STATUS(wk_storage_to_host(NULL, 0, e), WK_OK); /* nothing to copy */
    }
    wk_storage_free(e);
    /* alloc_uninit gives the right size; from_host/to_host round-trip every byte (i64). */
    wk_storage *u = NULL, *h = NULL;
    if (TEST_EQ_STATUS(wk_storage_alloc_uninit(&u, g_dev, WK_DTYPE_BF16, 7), WK_OK))
        TEST_EQ_INT(wk_storage_len(u), 7);
    const int64_t v[3] = {INT64_MIN, -1, INT64_C(0x0123456789ABCDEF)};
    int64_t back[3];
    h = testlib_upload(g_dev, WK_DTYPE_I64, v, 3);
    if (h && !testlib_download(back, 3, h))
        for (int i = 0; i < 3; i++)
            TEST_EQ_INT(back[i], v[i]);
    wk_storage_free(h);
    wk_storage_free(u);
}

static void test_copy_strided(void)
{
    /* src (2,3) = [[0,1,2],[3,4,5]]; its transpose (3,2) in row-major order is 0,3,1,4,2,5,
     * written at dst[1..7) of an 8-element dst of -1: the ends stay -1. */
    const float src[6] = {0, 1, 2, 3, 4, 5}, init[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    wk_storage *s = testlib_upload(g_dev, WK_DTYPE_F32, src, 6);
    wk_storage *d = testlib_upload(g_dev, WK_DTYPE_F32, init, 8);
    if (s && d) {
        const wk_layout l = testlib_layout2(2, 3);
        wk_layout t;
        TEST_EQ_STATUS(wk_layout_transpose(&t, &l, 0, 1), WK_OK);
        if (TEST_EQ_STATUS(wk_copy_strided_src(d, 1, s, &t), WK_OK))
            expect_f32(d, (const float[]){-1, 0, 3, 1, 4, 2, 5, -1}, 8, "copy_strided_src transpose");
        /* A broadcast source (stride 0) at offset 4 of src: [4,4,4] at dst[5..8). */
        wk_layout b = testlib_layout1(3);
        b.strides[0] = 0;
        b.offset = 4;
        if (TEST_EQ_STATUS(wk_copy_strided_src(d, 5, s, &b), WK_OK))
            expect_f32(d, (const float[]){-1, 0, 3, 1, 4, 4, 4, 4}, 8, "copy_strided_src broadcast");
        /* A narrowed column (dim 1 = [1,2)) of the (2,3): 1, 4 at dst[0..2). */
        wk_layout col;
        TEST_EQ_STATUS(wk_layout_narrow(&col, &l, 1, 1, 1), WK_OK);
        if (TEST_EQ_STATUS(wk_copy_strided_src(d, 0, s, &col), WK_OK))
            expect_f32(d, (const float[]){1, 4, 3, 1, 4, 4, 4, 4}, 8, "copy_strided_src column");
        /* An empty source writes nothing, even at dst_offset == len. */
        const wk_layout e = testlib_layout1(0);
        if (TEST_EQ_STATUS(wk_copy_strided_src(d, 8, s, &e), WK_OK))
            expect_f32(d, (const float[]){1, 4, 3, 1, 4, 4, 4, 4}, 8, "copy_strided_src empty");
    }
    wk_storage_free(d);
    wk_storage_free(s);
    /* u8 and i64 take the same path with other element sizes. */
    const uint8_t s8[4] = {1, 2, 3, 4};
    uint8_t d8[4] = {0, 0, 0, 0};
    s = testlib_upload(g_dev, WK_DTYPE_U8, s8, 4);
    d = testlib_upload(g_dev, WK_DTYPE_U8, d8, 4);
    if (s && d) {
        const wk_layout l = testlib_layout2(2, 2);
        wk_layout t;
        wk_layout_transpose(&t, &l, 0, 1);
        if (TEST_EQ_STATUS(wk_copy_strided_src(d, 0, s, &t), WK_OK) && !testlib_download(d8, 4, d)) {
            const uint8_t want[4] = {1, 3, 2, 4};
            for (int i = 0; i < 4; i++)
                TEST_EQ_INT(d8[i], want[i]);
        }
    }
    wk_storage_free(d);
    wk_storage_free(s);
}

static void test_copy2d(void)
{
    /* src: 12 elements 0..11 (a 3x4 matrix). Copy d1 = 2 rows of d2 = 3 elements from
     * src_offset 1 with src_stride1 4 into dst (10 elements of 100) at dst_offset 2 with
     * dst_stride1 5: dst[2 + 5i + j] = src[1 + 4i + j]: dst[2..5) = 1,2,3; dst[7..10) = 5,6,7. */
    float src[12];
    for (int i = 0; i < 12; i++)
        src[i] = (float)i;
    const float init[10] = {100, 100, 100, 100, 100, 100, 100, 100, 100, 100};
    wk_storage *s = testlib_upload(g_dev, WK_DTYPE_F32, src, 12);
    wk_storage *d = testlib_upload(g_dev, WK_DTYPE_F32, init, 10);
    if (s && d) {
        if (TEST_EQ_STATUS(wk_copy2d(d, s, 2, 3, 4, 5, 1, 2), WK_OK))
            expect_f32(d, (const float[]){100, 100, 1, 2, 3, 100, 100, 5, 6, 7}, 10, "copy2d");
        /* Both ranges ending exactly at their storage's end are in bounds: 3 rows of 3, src
         * stride 4 from 1 (last read src[1 + 8 + 2] = src[11]), dst stride 3 from 1 (last write
         * dst[9]): dst[1 + 3i + j] = src[1 + 4i + j]; dst[0] keeps 100. */
        if (TEST_EQ_STATUS(wk_copy2d(d, s, 3, 3, 4, 3, 1, 1), WK_OK))
            expect_f32(d, (const float[]){100, 1, 2, 3, 5, 6, 7, 9, 10, 11}, 10, "copy2d to the end");
        /* d1 = 0 or d2 = 0 copies nothing. */
        TEST_EQ_STATUS(wk_copy2d(d, s, 0, 3, 4, 3, 0, 0), WK_OK);
        TEST_EQ_STATUS(wk_copy2d(d, s, 3, 0, 4, 3, 0, 0), WK_OK);
        expect_f32(d, (const float[]){100, 1, 2, 3, 5, 6, 7, 9, 10, 11}, 10, "copy2d empty");
    }
    wk_storage_free(d);
    wk_storage_free(s);
    /* f16 (2-byte elements): rows of 2 with stride 3 into a packed 2x2. */
    const uint16_t h[6] = {0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};
    uint16_t ho[4] = {0, 0, 0, 0};
    s = testlib_upload(g_dev, WK_DTYPE_F16, h, 6);
    d = testlib_upload(g_dev, WK_DTYPE_F16, ho, 4);
    if (s && d && TEST_EQ_STATUS(wk_copy2d(d, s, 2, 2, 3, 2, 1, 0), WK_OK) && !testlib_download(ho, 4, d)) {
        const uint16_t want[4] = {0x4000, 0x4200, 0x4500, 0x4600};
        for (int i = 0; i < 4; i++)
            TEST_EQ_INT(ho[i], want[i]);
    }
    wk_storage_free(d);
    wk_storage_free(s);
}

static void test_const_set(void)
{
    /* A (3,4) f32 of zeros; the view dims (3,2) strides (4,2) offset 1 is columns 1 and 3:
     * elements 1,3,5,7,9,11 become 7, the others stay 0. */
    wk_storage *s = NULL;
    if (!TEST_EQ_STATUS(wk_storage_zeros(&s, g_dev, WK_DTYPE_F32, 12), WK_OK))
        return;
    wk_layout v = testlib_layout2(3, 2);
    v.strides[0] = 4;
    v.strides[1] = 2;
    v.offset = 1;
    const float seven = 7.0f;
    if (TEST_EQ_STATUS(wk_const_set(s, &v, &seven), WK_OK))
        expect_f32(s, (const float[]){0, 7, 0, 7, 0, 7, 0, 7, 0, 7, 0, 7}, 12, "const_set strided");
    /* A broadcast view (stride 0) writes one element: element 2 becomes -1. */
    wk_layout b = testlib_layout1(5);
    b.strides[0] = 0;
    b.offset = 2;
    const float m1 = -1.0f;
    if (TEST_EQ_STATUS(wk_const_set(s, &b, &m1), WK_OK))
        expect_f32(s, (const float[]){0, 7, -1, 7, 0, 7, 0, 7, 0, 7, 0, 7}, 12, "const_set broadcast");
    /* An empty view writes nothing; a rank-0 view at offset 11 writes one element. */
    const wk_layout e = testlib_layout2(3, 0);
    const float nine = 9.0f;
    TEST_EQ_STATUS(wk_const_set(s, &e, &nine), WK_OK);
    wk_layout r0;
    memset(&r0, 0, sizeof r0);
    r0.offset = 11;
    if (TEST_EQ_STATUS(wk_const_set(s, &r0, &nine), WK_OK))
        expect_f32(s, (const float[]){0, 7, -1, 7, 0, 7, 0, 7, 0, 7, 0, 9}, 12, "const_set rank 0");
    /* NaN is written as given. */
    const float nan = NAN;
    const wk_layout first = testlib_layout1(1);
    float got[12];
    if (TEST_EQ_STATUS(wk_const_set(s, &first, &nan), WK_OK) && !testlib_download(got, 12, s))
        TEST_CHECK(isnan(got[0]) && got[1] == 7.0f, "%s: const_set NaN", g_spec);
    wk_storage_free(s);

    /* Raw bits for reduced types: f16 1.0 = 0x3C00 into every other element of 6. */
    uint16_t h[6] = {0, 0, 0, 0, 0, 0};
    wk_storage *sh = testlib_upload(g_dev, WK_DTYPE_F16, h, 6);
    wk_layout ev = testlib_layout1(3);
    ev.strides[0] = 2;
    const uint16_t one = 0x3C00;
    if (sh && TEST_EQ_STATUS(wk_const_set(sh, &ev, &one), WK_OK) && !testlib_download(h, 6, sh)) {
        const uint16_t want[6] = {0x3C00, 0, 0x3C00, 0, 0x3C00, 0};
        for (int i = 0; i < 6; i++)
            TEST_EQ_INT(h[i], want[i]);
    }
    wk_storage_free(sh);
    /* i64 INT64_MIN and f8e4m3 0x7E into a transposed (2,3) view: every element. */
    int64_t q[6] = {1, 2, 3, 4, 5, 6};
    wk_storage *sq = testlib_upload(g_dev, WK_DTYPE_I64, q, 6);
    const wk_layout l23 = testlib_layout2(2, 3);
    wk_layout tq;
    wk_layout_transpose(&tq, &l23, 0, 1);
    const int64_t mn = INT64_MIN;
    if (sq && TEST_EQ_STATUS(wk_const_set(sq, &tq, &mn), WK_OK) && !testlib_download(q, 6, sq))
        for (int i = 0; i < 6; i++)
            TEST_EQ_INT(q[i], INT64_MIN);
    wk_storage_free(sq);
    uint8_t f8[6] = {0};
    wk_storage *s8 = testlib_upload(g_dev, WK_DTYPE_F8E4M3, f8, 6);
    const uint8_t v8 = 0x7E;
    if (s8 && TEST_EQ_STATUS(wk_const_set(s8, &tq, &v8), WK_OK) && !testlib_download(f8, 6, s8))
        for (int i = 0; i < 6; i++)
            TEST_EQ_INT(f8[i], 0x7E);
    wk_storage_free(s8);
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
        test_storage();
        test_copy_strided();
        test_copy2d();
        test_const_set();
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
