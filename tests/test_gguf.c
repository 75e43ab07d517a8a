/* test_gguf.c: the GGUF reader and writer.
 *   1. A 128-byte file written by hand, byte by byte from the spec (ggml docs/gguf.md), must equal
 *      what the writer produces for the same content, and read back field by field.
 *   2. A file with every value type (nested arrays, empty strings and arrays, 8 levels of nesting)
 *      and F32/F16/Q4_0/Q8_0/Q4_K/Q6_K tensors of known bytes round-trips (v3, alignment 32, and
 *      v2 with alignment 64); tensor offsets and sizes are checked against hand-computed values;
 *      wk_gguf_load_tensor on every device gives back the same bytes.
 *   3. Hostile files (patched bytes or raw bytes) fail with WK_ERR_FORMAT and a message naming the
 *      field; every prefix of the files fails the same way; allocation failures give
 *      WK_ERR_OUT_OF_MEMORY; nothing leaks (a counting allocator checks every path).
 *   4. Writer misuse returns the documented status.
 * Temp files live in a mkdtemp directory that is removed at the end.
 * Run: ctest -R test_gguf */
#include "testlib.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* ---- raw little-endian bytes, for files written by hand */
typedef struct raw {
    uint8_t b[4096];
    size_t n;
} raw;

static void put(raw *r, uint64_t v, int bytes)
{
    for (int k = 0; k < bytes; k++)
        r->b[r->n++] = (uint8_t)(v >> (8 * k));
}
static void put_str(raw *r, const char *s)
{
    put(r, strlen(s), 8);
    memcpy(r->b + r->n, s, strlen(s));
    r->n += strlen(s);
}
static void put_header(raw *r, uint32_t version, uint64_t nt, uint64_t nkv)
{
    memcpy(r->b, "GGUF", 4);
    r->n = 4;
    put(r, version, 4);
    put(r, nt, 8);
    put(r, nkv, 8);
}
static void pad(raw *r, size_t a)
{
    while (r->n % a)
        r->b[r->n++] = 0;
}

/* The file must fail to open with WK_ERR_FORMAT, a message holding `field`, and no leak. */
static void expect_format(const void *bytes, size_t n, const char *field, const char *what)
{
    const char *path = testlib_tmp_path("hostile.gguf");
    testlib_write_file(path, bytes, n);
    long live = atomic_load(&testlib_live);
    wk_gguf *g = (wk_gguf *)(uintptr_t)1;
    wk_status st = wk_gguf_open(&g, path);
    TEST_CHECK(st == WK_ERR_FORMAT, "%s: status %s, want WK_ERR_FORMAT (%s)", what,
               wk_status_string(st), wk_last_error());
    TEST_CHECK(g == NULL, "%s: *out not NULL on failure", what);
    if (st == WK_ERR_FORMAT && field)
        TEST_CHECK(strstr(wk_last_error(), field) != NULL, "%s: message '%s' does not name '%s'",
                   what, wk_last_error(), field);
    TEST_CHECK(atomic_load(&testlib_live) == live, "%s: %ld allocations leaked", what,
               atomic_load(&testlib_live) - live);
    if (st == WK_OK)
        wk_gguf_close(g);
    unlink(path);
}

/* ---- 1. a small file written by hand */
/* kv "a" = u32 7; tensor "t" f32 [8] = 1..8. Byte positions (docs/gguf.md):
 *   0 magic, 4 version, 8 tensor_count, 16 kv_count,
 *   24 key length, 32 'a', 33 value type, 37 value,
 *   41 name length, 49 't', 50 n_dims, 54 ne[0], 62 ggml type, 66 offset, 74 end of infos,
 *   96 data (74 padded to 32), 128 end (32 data bytes: no padding needed). */
static void small_file(raw *r)
{
    put_header(r, 3, 1, 1);
    put_str(r, "a");
    put(r, 4, 4); /* u32 */
    put(r, 7, 4);
    put_str(r, "t");
    put(r, 1, 4); /* n_dims */
    put(r, 8, 8); /* ne[0] */
    put(r, 0, 4); /* F32 */
    put(r, 0, 8); /* offset */
    pad(r, 32);
    for (int i = 1; i <= 8; i++) {
        float f = (float)i;
        uint32_t u;
        memcpy(&u, &f, 4);
        put(r, u, 4);
    }
}

static void test_small_file(void)
{
    raw r = {{0}, 0};
    small_file(&r);
    TEST_EQ_INT(r.n, 128);
    /* the writer produces exactly these bytes */
    wk_gguf_writer *w = NULL;
    const float vals[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const uint32_t seven = 7;
    const int64_t dims[1] = {8};
    char path[128]; /* a copy: expect_format below reuses the testlib_tmp_path buffers */
    snprintf(path, sizeof path, "%s", testlib_tmp_path("small.gguf"));
    if (TEST_EQ_STATUS(wk_gguf_writer_new(&w), WK_OK)) {
        TEST_EQ_STATUS(wk_gguf_writer_add(w, "a", WK_GGUF_TYPE_U32, &seven), WK_OK);
        TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 1, dims, vals, 32), WK_OK);
        TEST_EQ_STATUS(wk_gguf_writer_write(w, path, 3), WK_OK);
        wk_gguf_writer_free(w);
        size_t n = 0;
        uint8_t *got = testlib_read_file(path, &n);
        TEST_CHECK(got && n == r.n && memcmp(got, r.b, n) == 0,
                   "writer output (%zu bytes) differs from the hand-written file (%zu bytes)", n, r.n);
        free(got);
    }
    /* the reader sees every field */
    testlib_write_file(path, r.b, r.n);
    wk_gguf *g = NULL;
    if (TEST_EQ_STATUS(wk_gguf_open(&g, path), WK_OK)) {
        TEST_EQ_INT(wk_gguf_version(g), 3);
        TEST_EQ_INT(wk_gguf_alignment(g), 32);
        TEST_EQ_INT(wk_gguf_data_offset(g), 96);
        TEST_EQ_INT(wk_gguf_file_size(g), 128);
        TEST_EQ_INT(wk_gguf_kv_count(g), 1);
        TEST_CHECK(strcmp(wk_gguf_key(g, 0), "a") == 0, "key 0");
        TEST_CHECK(wk_gguf_key(g, 1) == NULL, "key 1 of 1");
        wk_gguf_value v;
        uint32_t u = 0;
        TEST_EQ_STATUS(wk_gguf_kv_value(&v, g, 0), WK_OK);
        TEST_EQ_STATUS(wk_gguf_get_u32(&u, v), WK_OK);
        TEST_EQ_INT(u, 7);
        TEST_EQ_STATUS(wk_gguf_kv_value(&v, g, 1), WK_ERR_INDEX_OUT_OF_RANGE);
        wk_gguf_tensor_info ti;
        TEST_EQ_INT(wk_gguf_tensor_count(g), 1);
        if (TEST_EQ_STATUS(wk_gguf_tensor_info_get(&ti, g, 0), WK_OK)) {
            TEST_CHECK(strcmp(ti.name, "t") == 0, "tensor name");
            TEST_EQ_INT(ti.n_dims, 1);
            TEST_EQ_INT(ti.ne[0], 8);
            TEST_EQ_INT(ti.dims[0], 8);
            TEST_EQ_INT(ti.qtype, WK_QTYPE_F32);
            TEST_EQ_INT(ti.offset, 0);
            TEST_EQ_INT(ti.nbytes, 32);
        }
        const void *d = wk_gguf_tensor_data(g, 0);
        TEST_CHECK(d && memcmp(d, r.b + 96, 32) == 0, "tensor bytes");
        wk_gguf_close(g);
    }
    /* every proper prefix fails cleanly */
    for (size_t len = 0; len < r.n; len++) {
        char what[64];
        snprintf(what, sizeof what, "small file cut to %zu bytes", len);
        expect_format(r.b, len, NULL, what);
    }
    unlink(path);
}

/* ---- 2. every value type and tensor type */
typedef struct tensor_case {
    const char *name;
    wk_qtype qt;
    int32_t n_dims;
    int64_t dims[4];
    uint64_t nbytes;      /* hand-computed: blocks x block bytes */
    uint64_t offset32;    /* hand-computed offsets with alignment 32 and 64 */
    uint64_t offset64;
    uint8_t bytes[512];
} tensor_case;

static tensor_case g_tensors[] = {
    /* f32 (2,3): 24 bytes; f16 (4): 8; q4_0 (2,32): 2 x 18; q8_0 (1,64): 2 x 34; q4_k (256): 144;
     * q6_k (2,256): 2 x 210. Offsets: each previous size rounded up to 32 and summed. */
    {"f32.weight", WK_QTYPE_F32, 2, {2, 3}, 24, 0, 0, {0}},
    {"f16.weight", WK_QTYPE_F16, 1, {4}, 8, 32, 64, {0}},
    {"q4_0.weight", WK_QTYPE_Q4_0, 2, {2, 32}, 36, 64, 128, {0}},
    {"q8_0.weight", WK_QTYPE_Q8_0, 2, {1, 64}, 68, 128, 192, {0}},
    {"q4_k.weight", WK_QTYPE_Q4_K, 1, {256}, 144, 224, 320, {0}},
    {"blk.0.q6_k.weight", WK_QTYPE_Q6_K, 2, {2, 256}, 420, 384, 512, {0}},
};
#define NT ((int)(sizeof g_tensors / sizeof g_tensors[0]))

static const char *const g_strs[3] = {"a", "", "xyz"};

/* Writes every kv type; nest: 8 levels of arrays around one u8. */
static void add_all_kv(wk_gguf_writer *w)
{
    const uint8_t u8 = 200, b1 = 1;
    const int8_t i8 = -5;
    const uint16_t u16 = 60000;
    const int16_t i16 = -30000;
    const uint32_t u32 = 4000000000u;
    const int32_t i32 = -2000000000;
    const float f32 = 1.5f;
    const uint64_t u64 = UINT64_C(9223372036854775813);
    const int64_t i64 = -INT64_C(4611686018427387904);
    const double f64 = -0.125;
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.u8", WK_GGUF_TYPE_U8, &u8), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.i8", WK_GGUF_TYPE_I8, &i8), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.u16", WK_GGUF_TYPE_U16, &u16), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.i16", WK_GGUF_TYPE_I16, &i16), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.u32", WK_GGUF_TYPE_U32, &u32), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.i32", WK_GGUF_TYPE_I32, &i32), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.f32", WK_GGUF_TYPE_F32, &f32), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.bool", WK_GGUF_TYPE_BOOL, &b1), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_string(w, "v.str", "hello", 5), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_string(w, "v.empty", NULL, 0), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.u64", WK_GGUF_TYPE_U64, &u64), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.i64", WK_GGUF_TYPE_I64, &i64), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "v.f64", WK_GGUF_TYPE_F64, &f64), WK_OK);
    const int32_t ai32[2] = {-1, 7};
    const float af32[2] = {0.5f, -2.0f};
    const uint8_t abool[3] = {1, 0, 1};
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, "a.i32", WK_GGUF_TYPE_I32, ai32, 2), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, "a.f32", WK_GGUF_TYPE_F32, af32, 2), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, "a.bool", WK_GGUF_TYPE_BOOL, abool, 3), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, "a.str", WK_GGUF_TYPE_STRING, g_strs, 3), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, "a.empty", WK_GGUF_TYPE_U32, NULL, 0), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, "a.empty_str", WK_GGUF_TYPE_STRING, NULL, 0), WK_OK);
    /* [[1, 2], [], [3]] of i16, element by element */
    const int16_t one = 1, two = 2, three = 3;
    TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, "a.nested", WK_GGUF_TYPE_ARRAY), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, NULL, WK_GGUF_TYPE_I16), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, NULL, WK_GGUF_TYPE_I16, &one), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, NULL, WK_GGUF_TYPE_I16, &two), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, NULL, WK_GGUF_TYPE_I16, NULL, 0), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, NULL, WK_GGUF_TYPE_I16, &three, 1), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_OK);
    /* [["p", "q"], [""]] */
    const char *const pq[2] = {"p", "q"}, *const e[1] = {""};
    TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, "a.nested_str", WK_GGUF_TYPE_ARRAY), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, NULL, WK_GGUF_TYPE_STRING, pq, 2), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, NULL, WK_GGUF_TYPE_STRING), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_string(w, NULL, e[0], 0), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_OK);
    /* 8 levels (the limit): [[[[[[[[42]]]]]]]] */
    for (int d = 0; d < 7; d++)
        TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, d == 0 ? "a.deep" : NULL, WK_GGUF_TYPE_ARRAY), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_array(w, NULL, WK_GGUF_TYPE_U8, (const uint8_t[]){42}, 1), WK_OK);
    for (int d = 0; d < 7; d++)
        TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_OK);
}

static wk_gguf_value kv(const wk_gguf *g, const char *key)
{
    wk_gguf_value v = {0};
    int64_t i = wk_gguf_find_key(g, key);
    TEST_CHECK(i >= 0, "key %s not found", key);
    if (i >= 0)
        TEST_EQ_STATUS(wk_gguf_kv_value(&v, g, i), WK_OK);
    return v;
}

static wk_gguf_value elem(wk_gguf_value a, uint64_t i)
{
    wk_gguf_value v = {0};
    TEST_EQ_STATUS(wk_gguf_array_elem(&v, a, i), WK_OK);
    return v;
}

static void expect_array(wk_gguf_value a, wk_gguf_type et, uint64_t count, const char *what)
{
    wk_gguf_type t = (wk_gguf_type)-1;
    uint64_t n = 999;
    TEST_EQ_STATUS(wk_gguf_array_info(&t, &n, a), WK_OK);
    TEST_CHECK(t == et && n == count, "%s: array of %s[%llu], want %s[%llu]", what,
               wk_gguf_type_name(t), (unsigned long long)n, wk_gguf_type_name(et),
               (unsigned long long)count);
}

static void expect_string(wk_gguf_value v, const char *want, const char *what)
{
    const char *s = NULL;
    uint64_t len = 999;
    if (TEST_EQ_STATUS(wk_gguf_get_string(&s, &len, v), WK_OK))
        TEST_CHECK(len == strlen(want) && memcmp(s, want, len) == 0, "%s: string '%.*s', want '%s'",
                   what, (int)len, s, want);
}

static void check_all_kv(const wk_gguf *g)
{
    uint8_t u8 = 0;
    int8_t i8 = 0;
    uint16_t u16 = 0;
    int16_t i16 = 0;
    uint32_t u32 = 0;
    int32_t i32 = 0;
    float f32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    double f64 = 0;
    int b = 0;
    TEST_EQ_STATUS(wk_gguf_get_u8(&u8, kv(g, "v.u8")), WK_OK);
    TEST_EQ_INT(u8, 200);
    TEST_EQ_STATUS(wk_gguf_get_i8(&i8, kv(g, "v.i8")), WK_OK);
    TEST_EQ_INT(i8, -5);
    TEST_EQ_STATUS(wk_gguf_get_u16(&u16, kv(g, "v.u16")), WK_OK);
    TEST_EQ_INT(u16, 60000);
    TEST_EQ_STATUS(wk_gguf_get_i16(&i16, kv(g, "v.i16")), WK_OK);
    TEST_EQ_INT(i16, -30000);
    TEST_EQ_STATUS(wk_gguf_get_u32(&u32, kv(g, "v.u32")), WK_OK);
    TEST_EQ_INT(u32, 4000000000u);
    TEST_EQ_STATUS(wk_gguf_get_i32(&i32, kv(g, "v.i32")), WK_OK);
    TEST_EQ_INT(i32, -2000000000);
    TEST_EQ_STATUS(wk_gguf_get_f32(&f32, kv(g, "v.f32")), WK_OK);
    TEST_CHECK(f32 == 1.5f, "f32 %g", f32);
    TEST_EQ_STATUS(wk_gguf_get_bool(&b, kv(g, "v.bool")), WK_OK);
    TEST_EQ_INT(b, 1);
    expect_string(kv(g, "v.str"), "hello", "v.str");
    expect_string(kv(g, "v.empty"), "", "v.empty");
    TEST_EQ_STATUS(wk_gguf_get_u64(&u64, kv(g, "v.u64")), WK_OK);
    TEST_CHECK(u64 == UINT64_C(9223372036854775813), "u64 %llu", (unsigned long long)u64);
    TEST_EQ_STATUS(wk_gguf_get_i64(&i64, kv(g, "v.i64")), WK_OK);
    TEST_EQ_INT(i64, -INT64_C(4611686018427387904));
    TEST_EQ_STATUS(wk_gguf_get_f64(&f64, kv(g, "v.f64")), WK_OK);
    TEST_CHECK(f64 == -0.125, "f64 %g", f64);
    /* getters check the type exactly */
    TEST_EQ_STATUS(wk_gguf_get_u32(&u32, kv(g, "v.i32")), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_gguf_get_f64(&f64, kv(g, "v.f32")), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_gguf_array_info(NULL, NULL, kv(g, "v.str")), WK_ERR_DTYPE);
    TEST_EQ_INT(wk_gguf_value_type(kv(g, "v.bool")), WK_GGUF_TYPE_BOOL);
    TEST_EQ_INT(wk_gguf_find_key(g, "v.nope"), -1);
    /* arrays of scalars */
    wk_gguf_value a = kv(g, "a.i32");
    expect_array(a, WK_GGUF_TYPE_I32, 2, "a.i32");
    TEST_EQ_STATUS(wk_gguf_get_i32(&i32, elem(a, 1)), WK_OK);
    TEST_EQ_INT(i32, 7);
    wk_gguf_value out;
    TEST_EQ_STATUS(wk_gguf_array_elem(&out, a, 2), WK_ERR_INDEX_OUT_OF_RANGE);
    const void *data = NULL;
    if (TEST_EQ_STATUS(wk_gguf_array_data(&data, a), WK_OK)) {
        const uint8_t want[8] = {0xff, 0xff, 0xff, 0xff, 7, 0, 0, 0}; /* -1, 7 little-endian */
        TEST_CHECK(memcmp(data, want, 8) == 0, "a.i32 packed bytes");
    }
    a = kv(g, "a.f32");
    expect_array(a, WK_GGUF_TYPE_F32, 2, "a.f32");
    TEST_EQ_STATUS(wk_gguf_get_f32(&f32, elem(a, 1)), WK_OK);
    TEST_CHECK(f32 == -2.0f, "a.f32[1] %g", f32);
    a = kv(g, "a.bool");
    expect_array(a, WK_GGUF_TYPE_BOOL, 3, "a.bool");
    for (int i = 0; i < 3; i++) {
        TEST_EQ_STATUS(wk_gguf_get_bool(&b, elem(a, (uint64_t)i)), WK_OK);
        TEST_EQ_INT(b, i != 1);
    }
    a = kv(g, "a.str");
    expect_array(a, WK_GGUF_TYPE_STRING, 3, "a.str");
    for (int i = 0; i < 3; i++)
        expect_string(elem(a, (uint64_t)i), g_strs[i], "a.str[i]");
    TEST_EQ_STATUS(wk_gguf_array_data(&data, a), WK_ERR_DTYPE);
    expect_array(kv(g, "a.empty"), WK_GGUF_TYPE_U32, 0, "a.empty");
    expect_array(kv(g, "a.empty_str"), WK_GGUF_TYPE_STRING, 0, "a.empty_str");
    /* nested */
    a = kv(g, "a.nested");
    expect_array(a, WK_GGUF_TYPE_ARRAY, 3, "a.nested");
    expect_array(elem(a, 0), WK_GGUF_TYPE_I16, 2, "a.nested[0]");
    expect_array(elem(a, 1), WK_GGUF_TYPE_I16, 0, "a.nested[1]");
    expect_array(elem(a, 2), WK_GGUF_TYPE_I16, 1, "a.nested[2]");
    TEST_EQ_STATUS(wk_gguf_get_i16(&i16, elem(elem(a, 0), 1)), WK_OK);
    TEST_EQ_INT(i16, 2);
    TEST_EQ_STATUS(wk_gguf_get_i16(&i16, elem(elem(a, 2), 0)), WK_OK);
    TEST_EQ_INT(i16, 3);
    a = kv(g, "a.nested_str");
    expect_array(a, WK_GGUF_TYPE_ARRAY, 2, "a.nested_str");
    expect_string(elem(elem(a, 0), 1), "q", "a.nested_str[0][1]");
    expect_string(elem(elem(a, 1), 0), "", "a.nested_str[1][0]");
    a = kv(g, "a.deep");
    for (int d = 0; d < 7; d++) {
        expect_array(a, WK_GGUF_TYPE_ARRAY, 1, "a.deep level");
        a = elem(a, 0);
    }
    expect_array(a, WK_GGUF_TYPE_U8, 1, "a.deep innermost");
    TEST_EQ_STATUS(wk_gguf_get_u8(&u8, elem(a, 0)), WK_OK);
    TEST_EQ_INT(u8, 42);
}

static void fill_tensor_bytes(void)
{
    for (int t = 0; t < NT; t++)
        for (uint64_t i = 0; i < g_tensors[t].nbytes; i++)
            g_tensors[t].bytes[i] = (uint8_t)(i * 7 + (uint64_t)t * 31 + 1);
}

static wk_status write_full(const char *path, uint32_t version, uint32_t alignment)
{
    wk_gguf_writer *w = NULL;
    wk_status st = wk_gguf_writer_new(&w);
    if (st)
        return st;
    if (alignment != 32)
        TEST_EQ_STATUS(wk_gguf_writer_add(w, "general.alignment", WK_GGUF_TYPE_U32, &alignment), WK_OK);
    add_all_kv(w);
    for (int t = 0; t < NT; t++)
        TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, g_tensors[t].name, g_tensors[t].qt,
                                                 g_tensors[t].n_dims, g_tensors[t].dims,
                                                 g_tensors[t].bytes, g_tensors[t].nbytes), WK_OK);
    st = wk_gguf_writer_write(w, path, version);
    wk_gguf_writer_free(w);
    return st;
}

static void check_tensors(const wk_gguf *g, uint32_t alignment)
{
    TEST_EQ_INT(wk_gguf_tensor_count(g), NT);
    TEST_EQ_INT(wk_gguf_data_offset(g) % alignment, 0);
    for (int t = 0; t < NT; t++) {
        const tensor_case *c = &g_tensors[t];
        wk_gguf_tensor_info ti;
        if (!TEST_EQ_STATUS(wk_gguf_tensor_info_get(&ti, g, t), WK_OK))
            continue;
        TEST_CHECK(strcmp(ti.name, c->name) == 0, "tensor %d name '%s'", t, ti.name);
        TEST_EQ_INT(wk_gguf_find_tensor(g, c->name), t);
        TEST_EQ_INT(ti.n_dims, c->n_dims);
        TEST_EQ_INT(ti.qtype, c->qt);
        TEST_EQ_INT(ti.nbytes, c->nbytes);
        int64_t elems = 1;
        for (int k = 0; k < c->n_dims; k++) {
            TEST_EQ_INT(ti.dims[k], c->dims[k]);
            TEST_EQ_INT(ti.ne[k], c->dims[c->n_dims - 1 - k]); /* stored innermost first */
            elems *= c->dims[k];
        }
        for (int k = c->n_dims; k < 4; k++)
            TEST_CHECK(ti.ne[k] == 1 && ti.dims[k] == 1, "tensor %d unused dims are 1", t);
        TEST_EQ_INT(ti.elems, elems);
        TEST_EQ_INT(ti.offset, alignment == 32 ? c->offset32 : c->offset64);
        const void *d = wk_gguf_tensor_data(g, t);
        TEST_CHECK(d && memcmp(d, c->bytes, c->nbytes) == 0, "tensor %s bytes", c->name);
    }
    TEST_CHECK(wk_gguf_tensor_data(g, NT) == NULL, "tensor data out of range");
    TEST_EQ_INT(wk_gguf_find_tensor(g, "missing"), -1);
}

static void check_load(const wk_gguf *g)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    int nd = testlib_devices(specs);
    for (int di = 0; di < nd; di++) {
        wk_device *dev = NULL;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[di]), WK_OK))
            continue;
        for (int t = 0; t < NT; t++) {
            const tensor_case *c = &g_tensors[t];
            wk_storage *s = NULL;
            if (!TEST_EQ_STATUS(wk_gguf_load_tensor(&s, g, t, dev), WK_OK))
                continue;
            wk_dtype want = c->qt == WK_QTYPE_F32 ? WK_DTYPE_F32
                            : c->qt == WK_QTYPE_F16 ? WK_DTYPE_F16 : WK_DTYPE_U8;
            TEST_EQ_INT(wk_storage_dtype(s), want);
            const size_t n = c->nbytes / wk_dtype_size(want);
            TEST_EQ_INT(wk_storage_len(s), n);
            uint8_t back[512];
            if (wk_storage_len(s) == n && !testlib_download(back, n, s))
                TEST_CHECK(memcmp(back, c->bytes, c->nbytes) == 0, "%s: %s bytes after load",
                           specs[di], c->name);
            wk_storage_free(s);
        }
        wk_storage *s = NULL;
        TEST_EQ_STATUS(wk_gguf_load_tensor(&s, g, NT, dev), WK_ERR_INDEX_OUT_OF_RANGE);
        wk_device_close(dev);
    }
}

static void test_round_trip(uint32_t version, uint32_t alignment)
{
    const char *path = testlib_tmp_path("full.gguf");
    char keep[128];
    snprintf(keep, sizeof keep, "%s", path);
    if (!TEST_EQ_STATUS(write_full(keep, version, alignment), WK_OK))
        return;
    wk_gguf *g = NULL;
    if (TEST_EQ_STATUS(wk_gguf_open(&g, keep), WK_OK)) {
        TEST_EQ_INT(wk_gguf_version(g), version);
        TEST_EQ_INT(wk_gguf_alignment(g), alignment);
        TEST_EQ_INT(wk_gguf_kv_count(g), 22 + (alignment != 32));
        check_all_kv(g);
        check_tensors(g, alignment);
        check_load(g);
        /* the last tensor ends the file, padded to the alignment */
        wk_gguf_tensor_info last;
        TEST_EQ_STATUS(wk_gguf_tensor_info_get(&last, g, NT - 1), WK_OK);
        uint64_t end = wk_gguf_data_offset(g) + last.offset + last.nbytes;
        TEST_EQ_INT(wk_gguf_file_size(g), end + (alignment - end % alignment) % alignment);
        /* every prefix that cuts off part of a field or of the tensor data fails (v3 only: slow
         * under ASan otherwise) */
        if (version == 3) {
            size_t n = 0;
            uint8_t *bytes = testlib_read_file(keep, &n);
            for (uint64_t len = 0; bytes && len < end; len++) {
                char what[64];
                snprintf(what, sizeof what, "full file cut to %llu bytes", (unsigned long long)len);
                expect_format(bytes, (size_t)len, NULL, what);
            }
            /* allocation failures while opening: OOM, nothing leaked */
            for (long k = 1; k < 100000; k++) {
                long live = atomic_load(&testlib_live);
                atomic_store(&testlib_allocs, 0);
                atomic_store(&testlib_fail_at, k);
                wk_gguf *h = NULL;
                wk_status st = wk_gguf_open(&h, keep);
                atomic_store(&testlib_fail_at, 0);
                if (st == WK_OK) {
                    wk_gguf_close(h);
                    break;
                }
                TEST_CHECK(st == WK_ERR_OUT_OF_MEMORY && h == NULL, "alloc %ld failing: %s", k,
                           wk_status_string(st));
                TEST_CHECK(atomic_load(&testlib_live) == live, "alloc %ld failing: leak", k);
            }
            free(bytes);
        }
        wk_gguf_close(g);
    }
    unlink(keep);
}

/* ---- 3. hostile files */
static void patch(raw *r, size_t at, uint64_t v, int bytes)
{
    size_t n = r->n;
    r->n = at;
    put(r, v, bytes);
    r->n = n;
}

static void test_hostile(void)
{
    raw base = {{0}, 0}, r;
    small_file(&base);
#define PATCHED(at, v, bytes, field, what)                                                          \
    do {                                                                                           \
        r = base;                                                                                  \
        patch(&r, at, v, bytes);                                                                   \
        expect_format(r.b, r.n, field, what);                                                      \
    } while (0)
    PATCHED(0, 'X', 1, "magic", "bad magic");
    PATCHED(4, 1, 4, "version 1 not supported", "version 1");
    PATCHED(4, 4, 4, "version", "version 4");
    PATCHED(16, UINT64_C(1) << 40, 8, "kv_count", "oversized kv count");
    PATCHED(16, UINT64_MAX, 8, "kv_count", "kv count 2^64-1");
    PATCHED(8, UINT64_C(1) << 40, 8, "tensor_count", "oversized tensor count");
    PATCHED(8, 4, 8, "tensor_count", "tensor count just too large");
    PATCHED(24, 1000, 8, "key", "key length past the end");
    PATCHED(24, UINT64_MAX, 8, "key", "key length 2^64-1");
    PATCHED(33, 13, 4, "value type", "unknown value type");
    PATCHED(41, 1000, 8, "tensor name", "tensor name length past the end");
    PATCHED(50, 5, 4, "n_dims", "n_dims 5");
    PATCHED(50, 0, 4, "n_dims", "n_dims 0");
    PATCHED(54, 0, 8, "dim", "dim of 0");
    PATCHED(54, 9, 8, "past the end", "tensor data beyond the end (9 floats)");
    PATCHED(62, 4, 4, "ggml type", "removed ggml type 4");
    PATCHED(62, 31, 4, "ggml type", "ggml type 31");
    PATCHED(62, WK_QTYPE_Q4_0, 4, "row length", "row of 8 not a multiple of the q4_0 block");
    PATCHED(66, 4, 8, "alignment", "misaligned offset");
    PATCHED(66, 32, 8, "past the end", "offset past the end");
    PATCHED(66, UINT64_MAX - 31, 8, "past the end", "offset near 2^64");
    PATCHED(32, 0, 1, "NUL", "key holding a NUL byte");
#undef PATCHED
    /* the unpatched file opens */
    {
        const char *path = testlib_tmp_path("valid.gguf");
        testlib_write_file(path, base.b, base.n);
        wk_gguf *g = NULL;
        TEST_EQ_STATUS(wk_gguf_open(&g, path), WK_OK);
        wk_gguf_close(g);
        unlink(path);
    }

    /* raw files */
    r.n = 0;
    put_header(&r, 3, 0, 1); /* u32 array claiming 1000 elements, holding 2 */
    put_str(&r, "k");
    put(&r, 9, 4);
    put(&r, 4, 4);
    put(&r, 1000, 8);
    put(&r, 1, 4);
    put(&r, 2, 4);
    expect_format(r.b, r.n, "array count", "array length past the end");
    r.n = 0;
    put_header(&r, 3, 0, 1); /* string array claiming 2^62 elements */
    put_str(&r, "k");
    put(&r, 9, 4);
    put(&r, 8, 4);
    put(&r, UINT64_C(1) << 62, 8);
    expect_format(r.b, r.n, "array count", "string array count 2^62");
    r.n = 0;
    put_header(&r, 3, 0, 1); /* a string element whose length runs past the end */
    put_str(&r, "k");
    put(&r, 9, 4);
    put(&r, 8, 4);
    put(&r, 2, 8);
    put_str(&r, "ok");
    put(&r, 500, 8);
    put(&r, 0, 8);
    expect_format(r.b, r.n, "string element", "string element past the end");
    r.n = 0;
    put_header(&r, 3, 0, 1); /* 9 levels of arrays: one past the limit */
    put_str(&r, "k");
    put(&r, 9, 4);
    for (int d = 0; d < 8; d++) {
        put(&r, 9, 4);
        put(&r, 1, 8);
    }
    put(&r, 0, 4);
    put(&r, 0, 8);
    expect_format(r.b, r.n, "nested", "nesting depth 9");
    r.n = 0;
    put_header(&r, 3, 0, 2); /* duplicate key */
    put_str(&r, "k");
    put(&r, 0, 4);
    put(&r, 1, 1);
    put_str(&r, "k");
    put(&r, 0, 4);
    put(&r, 2, 1);
    expect_format(r.b, r.n, "duplicate key", "duplicate key");
    r.n = 0;
    put_header(&r, 3, 0, 1); /* alignment not a power of two */
    put_str(&r, "general.alignment");
    put(&r, 4, 4);
    put(&r, 48, 4);
    expect_format(r.b, r.n, "general.alignment", "alignment 48");
    r.n = 0;
    put_header(&r, 3, 0, 1); /* alignment of the wrong type */
    put_str(&r, "general.alignment");
    put(&r, 10, 4);
    put(&r, 32, 8);
    expect_format(r.b, r.n, "general.alignment", "alignment as u64");
    r.n = 0;
    put_header(&r, 3, 2, 0); /* duplicate tensor names */
    for (int t = 0; t < 2; t++) {
        put_str(&r, "w");
        put(&r, 1, 4);
        put(&r, 1, 8);
        put(&r, 0, 4);
        put(&r, 0, 8);
    }
    pad(&r, 32);
    put(&r, 0, 4);
    expect_format(r.b, r.n, "duplicate tensor name", "duplicate tensor name");
    r.n = 0;
    put_header(&r, 3, 1, 0); /* dims whose product overflows int64 */
    put_str(&r, "w");
    put(&r, 2, 4);
    put(&r, UINT64_C(1) << 32, 8);
    put(&r, UINT64_C(1) << 32, 8);
    put(&r, 0, 4);
    put(&r, 0, 8);
    expect_format(r.b, r.n, "overflows", "element count 2^64");
    r.n = 0;
    put_header(&r, 3, 1, 0); /* a dim above 2^63-1 */
    put_str(&r, "w");
    put(&r, 1, 4);
    put(&r, UINT64_MAX, 8);
    put(&r, 0, 4);
    put(&r, 0, 8);
    expect_format(r.b, r.n, "dim", "dim 2^64-1");
    expect_format("", 0, "magic", "empty file");

    /* files without tensors, and a last tensor without trailing padding, are fine */
    r.n = 0;
    put_header(&r, 2, 0, 0);
    {
        const char *path = testlib_tmp_path("empty.gguf");
        testlib_write_file(path, r.b, r.n);
        wk_gguf *g = NULL;
        if (TEST_EQ_STATUS(wk_gguf_open(&g, path), WK_OK)) {
            TEST_EQ_INT(wk_gguf_version(g), 2);
            TEST_EQ_INT(wk_gguf_kv_count(g), 0);
            TEST_EQ_INT(wk_gguf_tensor_count(g), 0);
        }
        wk_gguf_close(g);
        unlink(path);
    }
    /* missing file: I/O error */
    wk_gguf *g = NULL;
    TEST_EQ_STATUS(wk_gguf_open(&g, testlib_tmp_path("does-not-exist.gguf")), WK_ERR_IO);
    TEST_EQ_STATUS(wk_gguf_open(&g, testlib_dir), WK_ERR_IO); /* a directory */
    TEST_EQ_STATUS(wk_gguf_open(NULL, testlib_dir), WK_ERR_INVALID_ARGUMENT);
}

/* ---- 4. writer misuse */
static void test_writer_errors(void)
{
    wk_gguf_writer *w = NULL;
    if (!TEST_EQ_STATUS(wk_gguf_writer_new(&w), WK_OK))
        return;
    const uint32_t three = 3, u = 1;
    const float f = 1;
    const int64_t d8[1] = {8}, d33[1] = {33}, d0[1] = {0};
    uint8_t bytes[64] = {0};
    const char *path = testlib_tmp_path("misuse.gguf");
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "general.alignment", WK_GGUF_TYPE_U32, &three),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "general.alignment", WK_GGUF_TYPE_F32, &f),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "s", WK_GGUF_TYPE_STRING, "x"), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, NULL, WK_GGUF_TYPE_U32, &u), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, "arr", WK_GGUF_TYPE_U32), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "key", WK_GGUF_TYPE_U32, &u), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_add(w, NULL, WK_GGUF_TYPE_F32, &f), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 1, d8, bytes, 32),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_write(w, path, 3), WK_ERR_INVALID_ARGUMENT); /* array open */
    TEST_EQ_STATUS(wk_gguf_writer_add(w, NULL, WK_GGUF_TYPE_U32, &u), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_ERR_INVALID_ARGUMENT);
    for (int d = 0; d < WK_GGUF_MAX_DEPTH; d++)
        TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, d ? NULL : "deep", WK_GGUF_TYPE_ARRAY), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_begin_array(w, NULL, WK_GGUF_TYPE_U8), WK_ERR_INVALID_ARGUMENT);
    for (int d = 0; d < WK_GGUF_MAX_DEPTH; d++)
        TEST_EQ_STATUS(wk_gguf_writer_end_array(w), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 1, d8, bytes, 31), WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_Q4_0, 1, d33, bytes, 18), WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 1, d0, bytes, 0), WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 5, d8, bytes, 32), WK_ERR_SHAPE);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", (wk_qtype)4, 1, d8, bytes, 32),
                   WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "0123456789012345678901234567890123456789012345678901234567890123",
                                             WK_QTYPE_F32, 1, d8, bytes, 32), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_gguf_writer_write(w, path, 1), WK_ERR_INVALID_ARGUMENT);
    /* duplicates are found at write time */
    TEST_EQ_STATUS(wk_gguf_writer_add(w, "arr", WK_GGUF_TYPE_U32, &u), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_write(w, path, 3), WK_ERR_INVALID_ARGUMENT);
    TEST_CHECK(strstr(wk_last_error(), "duplicate key 'arr'") != NULL, "message: %s", wk_last_error());
    wk_gguf_writer_free(w);
    if (!TEST_EQ_STATUS(wk_gguf_writer_new(&w), WK_OK))
        return;
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 1, d8, bytes, 32), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_add_tensor(w, "t", WK_QTYPE_F32, 1, d8, bytes, 32), WK_OK);
    TEST_EQ_STATUS(wk_gguf_writer_write(w, path, 3), WK_ERR_INVALID_ARGUMENT);
    wk_gguf_writer_free(w);
    if (!TEST_EQ_STATUS(wk_gguf_writer_new(&w), WK_OK))
        return;
    TEST_EQ_STATUS(wk_gguf_writer_write(w, testlib_tmp_path("no/such/dir.gguf"), 3), WK_ERR_IO);
    wk_gguf_writer_free(w);
    unlink(path);
}

int main(void)
{
    const wk_allocator a = {testlib_count_alloc, testlib_count_free, NULL};
    TEST_EQ_STATUS(wk_set_allocator(&a), WK_OK);
    snprintf(testlib_dir, sizeof testlib_dir, "/tmp/wick_gguf_XXXXXX");
    if (!mkdtemp(testlib_dir)) {
        TEST_CHECK(0, "mkdtemp failed");
        return testlib_summary();
    }
    fill_tensor_bytes();
    test_small_file();
    test_round_trip(3, 32);
    test_round_trip(2, 64);
    test_hostile();
    test_writer_errors();
    TEST_CHECK(atomic_load(&testlib_live) == 0, "%ld allocations still live at the end",
               atomic_load(&testlib_live));
    rmdir(testlib_dir);
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);
    return testlib_summary();
}
