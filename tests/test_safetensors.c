/* test_safetensors.c: the safetensors reader and writer (the Python-package half of the
 * compatibility check is tests/safetensors_compat.py, ctest safetensors_python).
 *   1. A file written by the Python package (safetensors 0.8, its bytes pasted below as a
 *      literal) is what the writer produces for the same content, and reads back field by field.
 *   2. Round trip: every wick dtype, rank 0 to 8, empty tensors, metadata; bytes equal after
 *      write + read; wk_safetensors_load_tensor on every device gives the same values, and with
 *      a conversion the values of the public scalar conversions.
 *   3. Hostile headers (each case of the issue and more) fail with WK_ERR_FORMAT (or the stated
 *      status) and a message naming the problem; no leak (a counting allocator checks).
 *   4. Every prefix of a valid file (truncation at every byte) fails cleanly, and 3000 copies with
 *      random bytes changed either open (then every tensor's bytes lie inside the file and tile
 *      its data section) or fail with WK_ERR_FORMAT; run under ASan by `make asan`. Injected
 *      allocation failures give WK_ERR_OUT_OF_MEMORY and leak nothing.
 *   5. Writer misuse returns the documented status.
 * Run: ctest -R test_safetensors */
#include "testlib.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* A file: 8-byte length of the header, the header, then `data` bytes of data (values i & 255). */
typedef struct raw {
    uint8_t *b;
    size_t n;
} raw;

static raw make_file(const char *header, uint64_t header_len_field, size_t data)
{
    size_t h = strlen(header);
    raw r = {malloc(8 + h + data + 1), 8 + h + data};
    for (int k = 0; k < 8; k++)
        r.b[k] = (uint8_t)(header_len_field >> (8 * k));
    memcpy(r.b + 8, header, h);
    for (size_t i = 0; i < data; i++)
        r.b[8 + h + i] = (uint8_t)i;
    return r;
}

/* The file must fail to open with status want, a message holding `field`, and no leak. */
static void expect_fail(const void *bytes, size_t n, wk_status want, const char *field,
                        const char *what)
{
    const char *path = testlib_tmp_path("hostile.safetensors");
    testlib_write_file(path, bytes, n);
    long live = atomic_load(&testlib_live);
    wk_safetensors *st = (wk_safetensors *)(uintptr_t)1;
    wk_status s = wk_safetensors_open(&st, path);
    TEST_CHECK(s == want, "%s: status %s, want %s (%s)", what, wk_status_string(s),
               wk_status_string(want), wk_last_error());
    if (s == WK_OK)
        wk_safetensors_close(st);
    else
        TEST_CHECK(st == NULL, "%s: *out not NULL on failure", what);
    if (s == want && field)
        TEST_CHECK(strstr(wk_last_error(), field) != NULL, "%s: message '%s' does not name '%s'",
                   what, wk_last_error(), field);
    TEST_CHECK(atomic_load(&testlib_live) == live, "%s: %ld allocations leaked", what,
               atomic_load(&testlib_live) - live);
    unlink(path);
}

static void expect_header(const char *header, size_t data, wk_status want, const char *field,
                          const char *what)
{
    raw r = make_file(header, strlen(header), data);
    expect_fail(r.b, r.n, want, field, what);
    free(r.b);
}

/* ---- 1. the Python package's bytes */
/* safetensors 0.8.0: save({"b": f32 [2,3] = 0..5, "a": f32 [1] = {7}, "c": u8 [3] = {1,2,3},
 * "s": i64 [] = {-2}, "e": i16 [0,2]}, metadata={"k": "v"}): dtype order I64, F32 (a, b), I16,
 * U8; 300 bytes of JSON padded with 4 spaces (header length 304), 39 data bytes: 351 in all. */
static const char py_header[] =
    "{\"__metadata__\":{\"k\":\"v\"},"
    "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
    "\"b\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[12,36]},"
    "\"e\":{\"dtype\":\"I16\",\"shape\":[0,2],\"data_offsets\":[36,36]},"
    "\"c\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[36,39]}}";

static const float b_vals[6] = {0, 1, 2, 3, 4, 5};
static const float a_val[1] = {7};
static const uint8_t c_vals[3] = {1, 2, 3};
static const int64_t s_val[1] = {-2};

/* The expected file: header padded with spaces so that 8 + header is a multiple of 8. */
static raw py_file(void)
{
    size_t h = strlen(py_header), pad = (8 - (8 + h) % 8) % 8;
    raw r = {malloc(8 + h + pad + 39), 8 + h + pad + 39};
    uint64_t hl = h + pad;
    for (int k = 0; k < 8; k++)
        r.b[k] = (uint8_t)(hl >> (8 * k));
    memcpy(r.b + 8, py_header, h);
    memset(r.b + 8 + h, ' ', pad);
    uint8_t *d = r.b + 8 + hl;
    memcpy(d, s_val, 8);
    memcpy(d + 8, a_val, 4);
    memcpy(d + 12, b_vals, 24);
    memcpy(d + 36, c_vals, 3);
    return r;
}

static void test_python_bytes(void)
{
    raw want = py_file();
    TEST_EQ_INT(want.n, 351);
    char path[128];
    snprintf(path, sizeof path, "%s", testlib_tmp_path("py.safetensors"));
    wk_safetensors_writer *w = NULL;
    const int64_t db[2] = {2, 3}, da[1] = {1}, dc[1] = {3}, de[2] = {0, 2};
    if (TEST_EQ_STATUS(wk_safetensors_writer_new(&w), WK_OK)) {
        /* added in another order than the file's: the writer sorts */
        TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "b", WK_DTYPE_F32, 2, db, b_vals, 24), WK_OK);
        TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "a", WK_DTYPE_F32, 1, da, a_val, 4), WK_OK);
        TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "c", WK_DTYPE_U8, 1, dc, c_vals, 3), WK_OK);
        TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "s", WK_DTYPE_I64, 0, NULL, s_val, 8), WK_OK);
        TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "e", WK_DTYPE_I16, 2, de, NULL, 0), WK_OK);
        TEST_EQ_STATUS(wk_safetensors_writer_add_metadata(w, "k", "v"), WK_OK);
        TEST_EQ_STATUS(wk_safetensors_writer_write(w, path), WK_OK);
        wk_safetensors_writer_free(w);
        size_t n = 0;
        uint8_t *got = testlib_read_file(path, &n);
        TEST_CHECK(got && n == want.n && memcmp(got, want.b, n) == 0,
                   "writer output (%zu bytes) differs from the Python package's (%zu bytes)", n, want.n);
        free(got);
    }
    testlib_write_file(path, want.b, want.n);
    wk_safetensors *st = NULL;
    if (TEST_EQ_STATUS(wk_safetensors_open(&st, path), WK_OK)) {
        TEST_EQ_INT(wk_safetensors_file_size(st), want.n);
        TEST_EQ_INT(wk_safetensors_data_offset(st), want.n - 39);
        TEST_EQ_INT(wk_safetensors_data_offset(st) % 8, 0);
        TEST_EQ_INT(wk_safetensors_tensor_count(st), 5);
        TEST_EQ_INT(wk_safetensors_metadata_count(st), 1);
        const char *k = NULL, *v = NULL;
        TEST_EQ_STATUS(wk_safetensors_metadata_get(&k, &v, st, 0), WK_OK);
        TEST_CHECK(k && v && strcmp(k, "k") == 0 && strcmp(v, "v") == 0, "metadata pair 0");
        TEST_EQ_STATUS(wk_safetensors_metadata_get(&k, &v, st, 1), WK_ERR_INDEX_OUT_OF_RANGE);
        TEST_CHECK(strcmp(wk_safetensors_metadata_find(st, "k"), "v") == 0, "metadata_find k");
        TEST_CHECK(wk_safetensors_metadata_find(st, "x") == NULL, "metadata_find x");
        /* data order: s a b e c (e and c both start at 36; the empty one first) */
        static const char *names[5] = {"s", "a", "b", "e", "c"};
        static const uint64_t offs[5] = {0, 8, 12, 36, 36}, sizes[5] = {8, 4, 24, 0, 3};
        static const int32_t ranks[5] = {0, 1, 2, 2, 1};
        static const char *dts[5] = {"I64", "F32", "F32", "I16", "U8"};
        for (int i = 0; i < 5; i++) {
            wk_safetensors_tensor_info ti;
            if (!TEST_EQ_STATUS(wk_safetensors_tensor_info_get(&ti, st, i), WK_OK))
                continue;
            TEST_CHECK(strcmp(ti.name, names[i]) == 0, "tensor %d is '%s', want '%s'", i, ti.name, names[i]);
            TEST_CHECK(strcmp(ti.dtype_name, dts[i]) == 0, "tensor %d dtype %s", i, ti.dtype_name);
            TEST_EQ_INT(ti.has_dtype, 1);
            TEST_EQ_INT(ti.offset, offs[i]);
            TEST_EQ_INT(ti.nbytes, sizes[i]);
            TEST_EQ_INT(ti.rank, ranks[i]);
            TEST_EQ_INT(wk_safetensors_find_tensor(st, names[i]), i);
        }
        TEST_EQ_INT(wk_safetensors_find_tensor(st, "z"), -1);
        wk_safetensors_tensor_info ti;
        TEST_EQ_STATUS(wk_safetensors_tensor_info_get(&ti, st, 2), WK_OK);
        TEST_EQ_INT(ti.dtype, WK_DTYPE_F32);
        TEST_EQ_INT(ti.dims[0], 2);
        TEST_EQ_INT(ti.dims[1], 3);
        TEST_EQ_INT(ti.elems, 6);
        TEST_CHECK(memcmp(wk_safetensors_tensor_data(st, 2), b_vals, 24) == 0, "bytes of b");
        TEST_CHECK(memcmp(wk_safetensors_tensor_data(st, 0), s_val, 8) == 0, "bytes of s");
        TEST_EQ_STATUS(wk_safetensors_tensor_info_get(&ti, st, 5), WK_ERR_INDEX_OUT_OF_RANGE);
        TEST_CHECK(wk_safetensors_tensor_data(st, 5) == NULL, "data of tensor 5 of 5");
        wk_safetensors_close(st);
    }
    free(want.b);
}

/* ---- 2. round trip of every dtype on every device */
static uint8_t g_bytes[8 * 4096];

static void test_round_trip(void)
{
    /* one tensor per dtype, of mixed ranks; values: bytes of a fixed LCG, with float dtypes made
     * finite (f32 values in [-8, 8) converted for the reduced types) */
    wk_safetensors_writer *w = NULL;
    if (!TEST_EQ_STATUS(wk_safetensors_writer_new(&w), WK_OK))
        return;
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof g_bytes; i++) {
        x = x * 1664525u + 1013904223u;
        g_bytes[i] = (uint8_t)(x >> 24);
    }
    float fv[512];
    for (int i = 0; i < 512; i++)
        fv[i] = (float)((i * 37) % 256) / 16.0f - 8.0f;
    static uint8_t f16b[1024], bf16b[1024], f8b[512], f64b[4096];
    for (int i = 0; i < 512; i++) {
        uint16_t h = wk_f32_to_f16(fv[i]), b = wk_f32_to_bf16(fv[i]);
        double d = fv[i];
        memcpy(f16b + 2 * i, &h, 2);
        memcpy(bf16b + 2 * i, &b, 2);
        f8b[i] = wk_f32_to_f8e4m3(fv[i]);
        memcpy(f64b + 8 * i, &d, 8);
    }
    static const int64_t d3[3] = {4, 8, 16}, d1[1] = {512}, d8[8] = {2, 1, 2, 2, 1, 2, 2, 1};
    static const int64_t d2[2] = {16, 32}, dz[3] = {3, 0, 5};
    struct {
        const char *name;
        wk_dtype dt;
        int32_t rank;
        const int64_t *dims;
        const void *data;
        uint64_t elems;
    } ts[] = {
        {"u8.t", WK_DTYPE_U8, 1, d1, g_bytes, 512},
        {"u32.t", WK_DTYPE_U32, 3, d3, g_bytes, 512},
        {"i16.t", WK_DTYPE_I16, 2, d2, g_bytes + 7, 512},
        {"i32.t", WK_DTYPE_I32, 8, d8, g_bytes + 11, 32},
        {"i64.t", WK_DTYPE_I64, 1, d1, g_bytes + 13, 512},
        {"bf16.t", WK_DTYPE_BF16, 3, d3, bf16b, 512},
        {"f16.t", WK_DTYPE_F16, 1, d1, f16b, 512},
        {"f32.t", WK_DTYPE_F32, 2, d2, fv, 512},
        {"f64.t", WK_DTYPE_F64, 1, d1, f64b, 512},
        {"f8.t", WK_DTYPE_F8E4M3, 1, d1, f8b, 512},
        {"empty", WK_DTYPE_F32, 3, dz, NULL, 0},
        {"scalar", WK_DTYPE_F32, 0, NULL, fv + 3, 1},
        {"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", WK_DTYPE_U8, 1, d1, g_bytes + 100, 512},
    };
    const int nts = (int)(sizeof ts / sizeof ts[0]);
    for (int i = 0; i < nts; i++)
        TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, ts[i].name, ts[i].dt, ts[i].rank,
                                                        ts[i].dims, ts[i].data,
                                                        ts[i].elems * wk_dtype_size(ts[i].dt)),
                       WK_OK);
    TEST_EQ_STATUS(wk_safetensors_writer_add_metadata(w, "format", "pt"), WK_OK);
    TEST_EQ_STATUS(wk_safetensors_writer_add_metadata(w, "quote\"back\\slash\nline", "\xce\xbb"), WK_OK);
    const char *path = testlib_tmp_path("rt.safetensors");
    TEST_EQ_STATUS(wk_safetensors_writer_write(w, path), WK_OK);
    wk_safetensors_writer_free(w);

    wk_safetensors *st = NULL;
    if (!TEST_EQ_STATUS(wk_safetensors_open(&st, path), WK_OK))
        return;
    TEST_EQ_INT(wk_safetensors_tensor_count(st), nts);
    TEST_CHECK(wk_safetensors_metadata_find(st, "quote\"back\\slash\nline") &&
                   strcmp(wk_safetensors_metadata_find(st, "quote\"back\\slash\nline"), "\xce\xbb") == 0,
               "escaped metadata key");
    const char *specs[TESTLIB_MAX_DEVICES];
    int ndev = testlib_devices(specs);
    uint64_t prev_end = 0;
    for (int i = 0; i < nts; i++) {
        int64_t j = wk_safetensors_find_tensor(st, ts[i].name);
        if (!TEST_CHECK(j >= 0, "tensor '%s' not found", ts[i].name))
            continue;
        wk_safetensors_tensor_info ti;
        TEST_EQ_STATUS(wk_safetensors_tensor_info_get(&ti, st, j), WK_OK);
        uint64_t nb = ts[i].elems * wk_dtype_size(ts[i].dt);
        TEST_CHECK(ti.dtype == ts[i].dt && ti.rank == ts[i].rank && ti.nbytes == nb &&
                       (uint64_t)ti.elems == ts[i].elems,
                   "'%s': dtype %d rank %d nbytes %llu", ts[i].name, ti.dtype, ti.rank,
                   (unsigned long long)ti.nbytes);
        for (int k = 0; k < ts[i].rank; k++)
            TEST_EQ_INT(ti.dims[k], ts[i].dims[k]);
        TEST_CHECK(nb == 0 || memcmp(wk_safetensors_tensor_data(st, j), ts[i].data, nb) == 0,
                   "'%s': bytes differ after the round trip", ts[i].name);
        for (int d = 0; d < ndev && nb > 0; d++) {
            wk_device *dev = NULL;
            if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[d]), WK_OK))
                continue;
            wk_storage *s = NULL;
            if (TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, j, dev, ts[i].dt), WK_OK)) {
                uint8_t *back = malloc(nb);
                TEST_CHECK(testlib_download(back, (size_t)ts[i].elems, s) == 0 &&
                               memcmp(back, ts[i].data, nb) == 0,
                           "'%s' on %s: loaded bytes differ", ts[i].name, specs[d]);
                free(back);
                wk_storage_free(s);
            }
            wk_device_close(dev);
        }
    }
    /* data order: the writer's dtype order, then names; offsets tile the data section */
    for (int64_t j = 0; j < wk_safetensors_tensor_count(st); j++) {
        wk_safetensors_tensor_info ti;
        wk_safetensors_tensor_info_get(&ti, st, j);
        TEST_EQ_INT(ti.offset, prev_end);
        prev_end = ti.offset + ti.nbytes;
    }
    TEST_EQ_INT(prev_end + wk_safetensors_data_offset(st), wk_safetensors_file_size(st));
    /* conversion on load: f32 -> f16 and bf16 equal the scalar conversions; f16 -> f32 exact */
    for (int d = 0; d < ndev; d++) {
        wk_device *dev = NULL;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[d]), WK_OK))
            continue;
        int64_t jf = wk_safetensors_find_tensor(st, "f32.t"), jh = wk_safetensors_find_tensor(st, "f16.t");
        wk_storage *s = NULL;
        uint16_t got[512];
        float gf[512];
        if (TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, jf, dev, WK_DTYPE_F16), WK_OK)) {
            TEST_EQ_INT(wk_storage_dtype(s), WK_DTYPE_F16);
            int bad = testlib_download(got, 512, s);
            for (int i = 0; i < 512 && !bad; i++)
                bad = got[i] != wk_f32_to_f16(fv[i]);
            TEST_CHECK(!bad, "f32 -> f16 on load (%s)", specs[d]);
            wk_storage_free(s);
        }
        if (TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, jf, dev, WK_DTYPE_BF16), WK_OK)) {
            int bad = testlib_download(got, 512, s);
            for (int i = 0; i < 512 && !bad; i++)
                bad = got[i] != wk_f32_to_bf16(fv[i]);
            TEST_CHECK(!bad, "f32 -> bf16 on load (%s)", specs[d]);
            wk_storage_free(s);
        }
        if (TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, jh, dev, WK_DTYPE_F32), WK_OK)) {
            int bad = testlib_download(gf, 512, s);
            for (int i = 0; i < 512 && !bad; i++)
                bad = gf[i] != fv[i]; /* multiples of 1/16 in [-8, 8): exact in f16 */
            TEST_CHECK(!bad, "f16 -> f32 on load (%s)", specs[d]);
            wk_storage_free(s);
        }
        TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, 99, dev, WK_DTYPE_F32), WK_ERR_INDEX_OUT_OF_RANGE);
        TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, jf, dev, (wk_dtype)77), WK_ERR_INVALID_ARGUMENT);
        wk_device_close(dev);
    }
    wk_safetensors_close(st);
    unlink(path);
}

/* ---- 3. hostile files */
static void test_hostile(void)
{
    const char *T = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    expect_header(T, 8, WK_OK, NULL, "the valid base case");
    /* the length field */
    uint8_t tiny[5] = {1, 0, 0, 0, 0};
    expect_fail(tiny, 5, WK_ERR_FORMAT, "shorter than the 8-byte header length", "5-byte file");
    expect_fail(tiny, 0, WK_ERR_FORMAT, "shorter than the 8-byte header length", "empty file");
    raw r = make_file(T, strlen(T) + 9, 8);
    expect_fail(r.b, r.n, WK_ERR_FORMAT, "runs past the end of the file", "header length past the end");
    free(r.b);
    r = make_file(T, UINT64_MAX, 8);
    expect_fail(r.b, r.n, WK_ERR_FORMAT, "over the limit", "header length 2^64-1");
    free(r.b);
    r = make_file(T, 100000001, 8);
    expect_fail(r.b, r.n, WK_ERR_FORMAT, "over the limit", "header over 100 MB");
    free(r.b);
    r = make_file(T, 0, 8);
    expect_fail(r.b, r.n, WK_ERR_FORMAT, "start with '{'", "header length 0");
    free(r.b);
    /* the JSON */
    expect_header(" {}", 0, WK_ERR_FORMAT, "start with '{'", "leading space");
    expect_header("[]", 0, WK_ERR_FORMAT, "start with '{'", "an array");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8,
                  WK_ERR_FORMAT, "header JSON", "unterminated object");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}}", 8,
                  WK_ERR_FORMAT, "header JSON", "trailing garbage");
    expect_header("{\"t\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "header JSON", "invalid UTF-8 byte in a name");
    expect_header("{\"t\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "header JSON", "overlong UTF-8 in a name");
    expect_header("{\"t\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "header JSON", "UTF-8 surrogate in a name");
    expect_header("{\"t\\u0000x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "header JSON", "NUL in a name");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16,
                  WK_ERR_FORMAT, "duplicate", "duplicate names");
    {
        static char deep[20000];
        memset(deep, '[', 10000);
        memcpy(deep, "{\"a\":", 5);
        expect_header(deep, 0, WK_ERR_FORMAT, "header JSON", "10000 nested arrays");
    }
    /* raw NUL byte inside the header bytes */
    r = make_file(T, strlen(T), 8);
    r.b[8 + 4] = 0;
    expect_fail(r.b, r.n, WK_ERR_FORMAT, "header JSON", "NUL byte in the header");
    free(r.b);
    /* tensor entries */
    expect_header("{\"t\":{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "unknown dtype \"F33\"", "unknown dtype");
    expect_header("{\"t\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "unknown dtype", "lower-case dtype");
    expect_header("{\"t\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "dtype is not a string", "dtype a number");
    expect_header("{\"t\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, WK_ERR_FORMAT,
                  "missing \"dtype\"", "no dtype");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, WK_ERR_FORMAT,
                  "missing \"shape\"", "no shape");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, WK_ERR_FORMAT,
                  "missing \"data_offsets\"", "no offsets");
    expect_header("{\"t\":[1]}", 0, WK_ERR_FORMAT, "not a JSON object", "entry an array");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "do not fill", "shape bytes 12, offsets 8");
    expect_header("{\"t\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "do not fill", "shape bytes 16, offsets 8");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "non-negative", "negative dim");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "non-negative integers", "float dim");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "shape is not an array", "shape a number");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,8]}}",
                  8, WK_ERR_FORMAT, "overflows", "element count overflow");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2305843009213693952],\"data_offsets\":[0,8]}}",
                  8, WK_ERR_FORMAT, "do not fill", "byte count overflow (2^61 f32)");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}",
                  8, WK_ERR_FORMAT, "header JSON", "dim past 64 bits");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}",
                  8, WK_ERR_NOT_SUPPORTED, "rank 9", "rank 9");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]}}", 8,
                  WK_ERR_FORMAT, "not an array of 2", "3 offsets");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8,
                  WK_ERR_FORMAT, "non-negative", "negative offset");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                  WK_ERR_FORMAT, "out of range", "end before begin");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 8,
                  WK_ERR_FORMAT, "out of range", "offsets past the data");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[18446744073709551608,0]}}",
                  8, WK_ERR_FORMAT, "header JSON", "offset near 2^64");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                  WK_ERR_FORMAT, "overlap", "overlapping tensors");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                  WK_ERR_FORMAT, "overlap", "two tensors on the same bytes");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"u\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20,
                  WK_ERR_FORMAT, "gap", "a gap between tensors");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                  WK_ERR_FORMAT, "gap", "data not starting at 0");
    expect_header(T, 9, WK_ERR_FORMAT, "end at byte 8 of a data section of 9", "a trailing byte");
    expect_header("{\"t\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1,
                  WK_ERR_FORMAT, "do not fill", "odd count of 4-bit values");
    /* metadata */
    expect_header("{\"__metadata__\":{\"a\":1}}", 0, WK_ERR_FORMAT, "not a string", "metadata number");
    expect_header("{\"__metadata__\":[\"a\"]}", 0, WK_ERR_FORMAT, "__metadata__ is not", "metadata array");
    expect_header("{\"__metadata__\":{\"a\":\"x\\u0000y\"}}", 0, WK_ERR_FORMAT, "header JSON",
                  "NUL in a metadata value");
    expect_header("{\"__metadata__\":{\"a\":\"b\"},\"__metadata__\":{}}", 0, WK_ERR_FORMAT,
                  "duplicate", "two metadata objects");
    /* valid edge cases */
    expect_header("{}", 0, WK_OK, NULL, "no tensors");
    expect_header("{\"__metadata__\":{}}      ", 0, WK_OK, NULL, "empty metadata, padding");
    expect_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296,4],"
                  "\"data_offsets\":[0,0]}}", 0, WK_OK, NULL, "empty tensor with huge dims");
    expect_header("{\"t\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]},\"x\":1e0}", 2,
                  WK_ERR_FORMAT, "tensor 'x'", "a number as an entry");

    /* a known dtype that wick lacks: opens, lists, refuses to load */
    const char *I8 = "{\"t\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                     "\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[2,4]}}";
    r = make_file(I8, strlen(I8), 4);
    r.b[r.n - 1] = 1;
    const char *path = testlib_tmp_path("i8.safetensors");
    testlib_write_file(path, r.b, r.n);
    free(r.b);
    wk_safetensors *st = NULL;
    wk_device *cpu = NULL;
    if (TEST_EQ_STATUS(wk_safetensors_open(&st, path), WK_OK) &&
        TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK)) {
        wk_safetensors_tensor_info ti;
        TEST_EQ_STATUS(wk_safetensors_tensor_info_get(&ti, st, 0), WK_OK);
        TEST_CHECK(strcmp(ti.dtype_name, "I8") == 0 && ti.has_dtype == 0, "I8 tensor info");
        wk_storage *s = NULL;
        TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, 0, cpu, WK_DTYPE_F32), WK_ERR_NOT_SUPPORTED);
        TEST_CHECK(strstr(wk_last_error(), "I8") != NULL, "message names I8: %s", wk_last_error());
        TEST_EQ_STATUS(wk_safetensors_tensor_info_get(&ti, st, 1), WK_OK);
        TEST_CHECK(ti.has_dtype == 1 && ti.dtype == WK_DTYPE_U8, "BOOL loads as u8");
        uint8_t bb[2] = {9, 9};
        if (TEST_EQ_STATUS(wk_safetensors_load_tensor(&s, st, 1, cpu, WK_DTYPE_U8), WK_OK)) {
            testlib_download(bb, 2, s);
            TEST_CHECK(bb[0] == 2 && bb[1] == 1, "BOOL bytes %d %d", bb[0], bb[1]);
            wk_storage_free(s);
        }
    }
    wk_device_close(cpu);
    wk_safetensors_close(st);
    unlink(path);
    st = (wk_safetensors *)(uintptr_t)1;
    TEST_EQ_STATUS(wk_safetensors_open(&st, testlib_tmp_path("missing.safetensors")), WK_ERR_IO);
    TEST_CHECK(st == NULL, "*out NULL after WK_ERR_IO");
    TEST_EQ_STATUS(wk_safetensors_open(&st, testlib_dir), WK_ERR_IO);
    TEST_EQ_STATUS(wk_safetensors_open(NULL, path), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_open(&st, NULL), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_INT(wk_safetensors_tensor_count(NULL), 0);
    TEST_CHECK(wk_safetensors_find_tensor(NULL, "t") == -1, "find on NULL");
    wk_safetensors_close(NULL);
}

/* ---- 4. every prefix, and allocation failures */
static void test_truncation(void)
{
    raw full = py_file();
    int bad = 0;
    for (size_t n = 0; n < full.n; n++) {
        const char *path = testlib_tmp_path("trunc.safetensors");
        testlib_write_file(path, full.b, n);
        long live = atomic_load(&testlib_live);
        wk_safetensors *st = NULL;
        wk_status s = wk_safetensors_open(&st, path);
        if (s != WK_ERR_FORMAT || st != NULL || atomic_load(&testlib_live) != live) {
            if (bad++ < 5)
                TEST_CHECK(0, "prefix of %zu bytes: %s (%s)", n, wk_status_string(s), wk_last_error());
            wk_safetensors_close(st);
        }
    }
    TEST_CHECK(bad == 0, "%d of %zu prefixes misbehaved", bad, full.n);
    /* random byte changes (1 to 4 bytes, anywhere, biased to the header) */
    uint32_t x = 7;
    int opened = 0;
    bad = 0;
    uint8_t *mut = malloc(full.n);
    for (int it = 0; it < 3000; it++) {
        memcpy(mut, full.b, full.n);
        for (int k = 0; k <= it % 4; k++) {
            x = x * 1664525u + 1013904223u;
            size_t at = (x >> 8) % (it % 2 ? full.n : 8 + 304);
            x = x * 1664525u + 1013904223u;
            mut[at] = it % 3 ? (uint8_t)(x >> 24) : (uint8_t)"0123456789{}[],:\" \\"[(x >> 24) % 18];
        }
        const char *path = testlib_tmp_path("mut.safetensors");
        testlib_write_file(path, mut, full.n);
        long live = atomic_load(&testlib_live);
        wk_safetensors *st = NULL;
        wk_status s = wk_safetensors_open(&st, path);
        if (s == WK_OK) {
            opened++;
            uint64_t end = 0;
            for (int64_t i = 0; i < wk_safetensors_tensor_count(st); i++) {
                wk_safetensors_tensor_info ti;
                wk_safetensors_tensor_info_get(&ti, st, i);
                if (ti.offset != end)
                    bad++;
                end = ti.offset + ti.nbytes;
            }
            if (wk_safetensors_data_offset(st) + end != full.n)
                bad++;
            wk_safetensors_close(st);
        } else if (s != WK_ERR_FORMAT && s != WK_ERR_NOT_SUPPORTED) {
            if (bad++ < 5)
                TEST_CHECK(0, "mutation %d: %s (%s)", it, wk_status_string(s), wk_last_error());
        }
        if (atomic_load(&testlib_live) != live)
            bad++;
    }
    free(mut);
    TEST_CHECK(bad == 0, "%d of 3000 mutated files misbehaved (%d opened)", bad, opened);
    printf("3000 mutated files: %d opened, the others refused\n", opened);
    /* every allocation of open failing in turn */
    const char *path = testlib_tmp_path("oom.safetensors");
    testlib_write_file(path, full.b, full.n);
    int ok_seen = 0;
    for (long k = 1; k < 64 && !ok_seen; k++) {
        long live = atomic_load(&testlib_live);
        atomic_store(&testlib_allocs, 0);
        atomic_store(&testlib_fail_at, k);
        wk_safetensors *st = NULL;
        wk_status s = wk_safetensors_open(&st, path);
        atomic_store(&testlib_fail_at, 0);
        if (s == WK_OK) {
            ok_seen = 1;
            wk_safetensors_close(st);
        } else {
            TEST_CHECK(s == WK_ERR_OUT_OF_MEMORY && st == NULL, "allocation %ld failing: %s", k,
                       wk_status_string(s));
        }
        TEST_CHECK(atomic_load(&testlib_live) == live, "allocation %ld failing: %ld leaked", k,
                   atomic_load(&testlib_live) - live);
    }
    TEST_CHECK(ok_seen, "open never succeeded within 64 allocations");
    /* the writer under allocation failures */
    ok_seen = 0;
    for (long k = 1; k < 64 && !ok_seen; k++) {
        long live = atomic_load(&testlib_live);
        atomic_store(&testlib_allocs, 0);
        atomic_store(&testlib_fail_at, k);
        wk_safetensors_writer *w = NULL;
        wk_status s = wk_safetensors_writer_new(&w);
        const int64_t d[1] = {6};
        for (int i = 0; i < 20 && !s; i++) {
            char name[16];
            snprintf(name, sizeof name, "t%d", i);
            s = wk_safetensors_writer_add_tensor(w, name, WK_DTYPE_F32, 1, d, b_vals, 24);
        }
        if (!s)
            s = wk_safetensors_writer_add_metadata(w, "k", "v");
        if (!s)
            s = wk_safetensors_writer_write(w, path);
        atomic_store(&testlib_fail_at, 0);
        wk_safetensors_writer_free(w);
        ok_seen = s == WK_OK;
        TEST_CHECK(s == WK_OK || s == WK_ERR_OUT_OF_MEMORY, "writer, allocation %ld failing: %s", k,
                   wk_status_string(s));
        TEST_CHECK(atomic_load(&testlib_live) == live, "writer, allocation %ld failing: %ld leaked", k,
                   atomic_load(&testlib_live) - live);
    }
    TEST_CHECK(ok_seen, "the writer never succeeded within 64 allocations");
    unlink(path);
    free(full.b);
}

/* ---- 5. writer misuse */
static void test_writer_errors(void)
{
    wk_safetensors_writer *w = NULL;
    if (!TEST_EQ_STATUS(wk_safetensors_writer_new(&w), WK_OK))
        return;
    const int64_t d2[1] = {2}, dneg[1] = {-1}, d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const float v[2] = {1, 2};
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "t", WK_DTYPE_F32, 1, d2, v, 8), WK_OK);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "t", WK_DTYPE_F32, 1, d2, v, 8), WK_ERR_INVALID_ARGUMENT);
    TEST_CHECK(strstr(wk_last_error(), "duplicate") != NULL, "message: %s", wk_last_error());
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "__metadata__", WK_DTYPE_F32, 1, d2, v, 8),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "x\xff", WK_DTYPE_F32, 1, d2, v, 8),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "x\xed\xa0\x80", WK_DTYPE_F32, 1, d2, v, 8),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "u", WK_DTYPE_F32, 1, d2, v, 4), WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "u", WK_DTYPE_F32, 1, dneg, v, 0), WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "u", WK_DTYPE_F32, 9, d9, v, 4), WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "u", (wk_dtype)40, 1, d2, v, 8), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, "u", WK_DTYPE_F32, 1, d2, NULL, 8), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_tensor(w, NULL, WK_DTYPE_F32, 1, d2, v, 8), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_metadata(w, "k", "v"), WK_OK);
    TEST_EQ_STATUS(wk_safetensors_writer_add_metadata(w, "k", "w"), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_metadata(w, "k2", "\xc3"), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_add_metadata(w, NULL, "v"), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_write(w, testlib_tmp_path("no/such/dir.safetensors")), WK_ERR_IO);
    TEST_EQ_STATUS(wk_safetensors_writer_write(w, NULL), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_write(NULL, "x"), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_safetensors_writer_new(NULL), WK_ERR_INVALID_ARGUMENT);
    wk_safetensors_writer_free(w);
    wk_safetensors_writer_free(NULL);
}

int main(void)
{
    const wk_allocator a = {testlib_count_alloc, testlib_count_free, NULL};
    TEST_EQ_STATUS(wk_set_allocator(&a), WK_OK);
    snprintf(testlib_dir, sizeof testlib_dir, "/tmp/wick_st_XXXXXX");
    if (!mkdtemp(testlib_dir)) {
        TEST_CHECK(0, "mkdtemp failed");
        return testlib_summary();
    }
    test_python_bytes();
    test_round_trip();
    test_hostile();
    test_truncation();
    test_writer_errors();
    TEST_CHECK(atomic_load(&testlib_live) == 0, "%ld allocations still live at the end",
               atomic_load(&testlib_live));
    rmdir(testlib_dir);
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);
    return testlib_summary();
}
