/* fuzz_gguf.c: the GGUF reader on fuzzer-made files. The input is the whole file; it is opened
 * through the public API (wk_gguf_open on an in-memory file) and, when the open succeeds, every
 * kv pair, array element, string and tensor is walked and every tensor is loaded on the CPU.
 * Contracts checked besides memory safety (ASan/UBSan): a failed open sets no handle and gives
 * WK_ERR_FORMAT (or WK_ERR_OUT_OF_MEMORY above the harness's allocation cap) with a message;
 * every string, array and tensor lies inside the file; keys and names find themselves; a loaded
 * tensor holds exactly the file's bytes. */
#include "fuzz.h"
#include <string.h>

static wk_device *g_cpu;
static volatile unsigned g_sink; /* reads that must touch every byte */
static int g_budget;              /* values left to walk in this input */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_cap_allocations((size_t)64 << 20);
    if (wk_device_open(&g_cpu, "cpu") != WK_OK)
        abort();
    return 0;
}

/* Walks value v (nested arrays: the first 16 elements and the last, to keep inputs fast). */
static void walk_value(wk_gguf_value v, uint64_t fsize, int depth)
{
    FUZZ_CHECK(depth <= WK_GGUF_MAX_DEPTH + 1, "nesting %d past the limit", depth);
    if (--g_budget < 0)
        return;
    FUZZ_CHECK(v.pos < fsize, "value at byte %llu of a %llu-byte file", (unsigned long long)v.pos,
               (unsigned long long)fsize);
    const wk_gguf_type t = wk_gguf_value_type(v);
    if (t == WK_GGUF_TYPE_STRING) {
        const char *s;
        uint64_t len;
        FUZZ_CHECK(wk_gguf_get_string(&s, &len, v) == WK_OK, "string getter");
        FUZZ_CHECK(len <= fsize && v.pos + 8 + len <= fsize, "string of %llu bytes at %llu",
                   (unsigned long long)len, (unsigned long long)v.pos);
        for (uint64_t i = 0; i < len; i++)
            g_sink += (unsigned char)s[i];
        /* a getter of another type refuses it */
        uint32_t u;
        FUZZ_CHECK(wk_gguf_get_u32(&u, v) == WK_ERR_DTYPE, "u32 getter on a string");
        return;
    }
    if (t == WK_GGUF_TYPE_ARRAY) {
        wk_gguf_type et;
        uint64_t count;
        FUZZ_CHECK(wk_gguf_array_info(&et, &count, v) == WK_OK, "array info");
        FUZZ_CHECK(count <= fsize, "array of %llu elements in a %llu-byte file",
                   (unsigned long long)count, (unsigned long long)fsize);
        const size_t es = wk_gguf_type_size(et);
        const void *data;
        const wk_status st = wk_gguf_array_data(&data, v);
        if (es) {
            FUZZ_CHECK(st == WK_OK, "array data of %s", wk_gguf_type_name(et));
            for (uint64_t i = 0; i < count * es; i++)
                g_sink += ((const unsigned char *)data)[i];
        } else {
            FUZZ_CHECK(st == WK_ERR_DTYPE, "array data of %s", wk_gguf_type_name(et));
        }
        for (uint64_t i = 0; i < count; i = i < 15 || i + 1 == count ? i + 1 : count - 1) {
            wk_gguf_value e;
            FUZZ_CHECK(wk_gguf_array_elem(&e, v, i) == WK_OK, "element %llu", (unsigned long long)i);
            FUZZ_CHECK(wk_gguf_value_type(e) == et, "element type");
            walk_value(e, fsize, depth + 1);
        }
        wk_gguf_value e;
        FUZZ_CHECK(wk_gguf_array_elem(&e, v, count) == WK_ERR_INDEX_OUT_OF_RANGE, "element past the end");
        return;
    }
    FUZZ_CHECK((unsigned)t < WK_GGUF_TYPE_COUNT, "value type %d", (int)t);
    FUZZ_CHECK(v.pos + wk_gguf_type_size(t) <= fsize, "scalar past the end");
    uint8_t raw[8];
    wk_status st;
    switch (t) {
    case WK_GGUF_TYPE_U8: st = wk_gguf_get_u8(raw, v); break;
    case WK_GGUF_TYPE_I8: st = wk_gguf_get_i8((int8_t *)raw, v); break;
    case WK_GGUF_TYPE_U16: { uint16_t x; st = wk_gguf_get_u16(&x, v); break; }
    case WK_GGUF_TYPE_I16: { int16_t x; st = wk_gguf_get_i16(&x, v); break; }
    case WK_GGUF_TYPE_U32: { uint32_t x; st = wk_gguf_get_u32(&x, v); break; }
    case WK_GGUF_TYPE_I32: { int32_t x; st = wk_gguf_get_i32(&x, v); break; }
    case WK_GGUF_TYPE_F32: { float x; st = wk_gguf_get_f32(&x, v); break; }
    case WK_GGUF_TYPE_BOOL: { int x; st = wk_gguf_get_bool(&x, v); FUZZ_CHECK(x == 0 || x == 1, "bool %d", x); break; }
    case WK_GGUF_TYPE_U64: { uint64_t x; st = wk_gguf_get_u64(&x, v); break; }
    case WK_GGUF_TYPE_I64: { int64_t x; st = wk_gguf_get_i64(&x, v); break; }
    case WK_GGUF_TYPE_F64: { double x; st = wk_gguf_get_f64(&x, v); break; }
    default: st = WK_ERR_INTERNAL; break;
    }
    FUZZ_CHECK(st == WK_OK, "getter of %s", wk_gguf_type_name(t));
}

static void walk_tensors(const wk_gguf *g, uint64_t fsize)
{
    const int64_t nt = wk_gguf_tensor_count(g);
    const uint64_t base = wk_gguf_data_offset(g);
    for (int64_t i = 0; i < nt; i++) {
        wk_gguf_tensor_info ti;
        FUZZ_CHECK(wk_gguf_tensor_info_get(&ti, g, i) == WK_OK, "tensor info %lld", (long long)i);
        FUZZ_CHECK(wk_gguf_find_tensor(g, ti.name) == i, "tensor '%s' does not find itself", ti.name);
        FUZZ_CHECK(ti.n_dims >= 1 && ti.n_dims <= WK_GGUF_MAX_DIMS, "n_dims %d", ti.n_dims);
        /* (with only empty tensors the aligned data section may start past the end) */
        FUZZ_CHECK(ti.nbytes == 0 || (base <= fsize && ti.offset <= fsize - base &&
                                      ti.nbytes <= fsize - base - ti.offset),
                   "tensor '%s' [%llu, +%llu) past the end", ti.name,
                   (unsigned long long)ti.offset, (unsigned long long)ti.nbytes);
        FUZZ_CHECK(ti.offset % wk_gguf_alignment(g) == 0, "tensor offset not aligned");
        int64_t elems = 1;
        for (int k = 0; k < ti.n_dims; k++) {
            FUZZ_CHECK(ti.ne[k] >= 0 && ti.dims[ti.n_dims - 1 - k] == ti.ne[k], "dims");
            elems *= ti.ne[k];
        }
        FUZZ_CHECK(elems == ti.elems, "elems %lld, product %lld", (long long)ti.elems, (long long)elems);
        const int64_t be = wk_qtype_block_elems(ti.qtype), bb = wk_qtype_block_bytes(ti.qtype);
        FUZZ_CHECK(be > 0 && ti.ne[0] % be == 0 && (uint64_t)(ti.elems / be * bb) == ti.nbytes,
                   "nbytes %llu for %lld elements of %s", (unsigned long long)ti.nbytes,
                   (long long)ti.elems, wk_qtype_name(ti.qtype));
        const unsigned char *data = wk_gguf_tensor_data(g, i);
        FUZZ_CHECK(data != NULL, "tensor data");
        for (uint64_t b = 0; b < ti.nbytes; b += 61) /* touch the bytes (outside the map: SEGV) */
            g_sink += data[b];
        wk_storage *s = NULL;
        const wk_status st = wk_gguf_load_tensor(&s, g, i, g_cpu);
        if (st == WK_ERR_OUT_OF_MEMORY || st == WK_ERR_OVERFLOW) { /* the harness's cap */
            FUZZ_CHECK(s == NULL, "failed load set the handle");
            continue;
        }
        FUZZ_CHECK(st == WK_OK, "load tensor %lld: %s", (long long)i, wk_status_string(st));
        const size_t bytes = wk_storage_len(s) * wk_dtype_size(wk_storage_dtype(s));
        FUZZ_CHECK(bytes == ti.nbytes, "loaded %zu bytes of %llu", bytes, (unsigned long long)ti.nbytes);
        unsigned char *back = malloc(bytes ? bytes : 1);
        if (back) {
            FUZZ_CHECK(wk_storage_to_host(back, wk_storage_len(s), s) == WK_OK, "download");
            FUZZ_CHECK(bytes == 0 || memcmp(back, data, bytes) == 0, "loaded bytes differ");
            free(back);
        }
        wk_storage_free(s);
    }
    wk_gguf_tensor_info ti;
    FUZZ_CHECK(wk_gguf_tensor_info_get(&ti, g, nt) == WK_ERR_INDEX_OUT_OF_RANGE, "tensor past the end");
    FUZZ_CHECK(wk_gguf_tensor_data(g, nt) == NULL && wk_gguf_tensor_data(g, -1) == NULL, "data past the end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_cpu)
        LLVMFuzzerInitialize(NULL, NULL);
    const char *path = fuzz_memfile(data, size);
    if (!path)
        return 0;
    wk_gguf *g = (wk_gguf *)(uintptr_t)1; /* must be reset to NULL on failure */
    const wk_status st = wk_gguf_open(&g, path);
    if (st != WK_OK) {
        FUZZ_CHECK(st == WK_ERR_FORMAT || st == WK_ERR_OUT_OF_MEMORY, "open: %s", wk_status_string(st));
        FUZZ_CHECK(g == NULL, "failed open left a handle");
        FUZZ_CHECK(wk_last_error()[0] != '\0', "no message");
        return 0;
    }
    const uint64_t fsize = wk_gguf_file_size(g);
    FUZZ_CHECK(fsize == size, "file size %llu of %zu", (unsigned long long)fsize, size);
    FUZZ_CHECK(wk_gguf_version(g) == 2 || wk_gguf_version(g) == 3, "version");
    const uint32_t al = wk_gguf_alignment(g);
    FUZZ_CHECK(al > 0 && (al & (al - 1)) == 0, "alignment %u", al);
    const int64_t nkv = wk_gguf_kv_count(g);
    g_budget = 20000;
    for (int64_t i = 0; i < nkv; i++) {
        const char *key = wk_gguf_key(g, i);
        FUZZ_CHECK(key != NULL, "key %lld", (long long)i);
        FUZZ_CHECK(wk_gguf_find_key(g, key) == i, "key '%s' does not find itself", key);
        wk_gguf_value v;
        FUZZ_CHECK(wk_gguf_kv_value(&v, g, i) == WK_OK, "value %lld", (long long)i);
        walk_value(v, fsize, 0);
    }
    FUZZ_CHECK(wk_gguf_key(g, nkv) == NULL, "key past the end");
    wk_gguf_value v;
    FUZZ_CHECK(wk_gguf_kv_value(&v, g, nkv) == WK_ERR_INDEX_OUT_OF_RANGE, "value past the end");
    walk_tensors(g, fsize);
    wk_gguf_close(g);
    return 0;
}
