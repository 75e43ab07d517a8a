/* inspect.c: `wick inspect FILE` (and `wick gguf FILE`): what a GGUF or safetensors file holds,
 * read through the public API only. GGUF: version, alignment, metadata (arrays as type[count] and
 * their first values), tensors (name, GGML type, dims outermost first, file offset, bytes).
 * safetensors: header size, metadata pairs, tensors (name, dtype as in the file, dims, file
 * offset, bytes). The format is told by the first bytes: "GGUF", else safetensors. */
#include "inspect.h"
#include "wick.h"
#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- GGUF */
/* A string value: quoted, at most 60 bytes, control bytes as \xNN (UTF-8 passes through). */
static void print_string(const char *s, uint64_t len)
{
    putchar('"');
    for (uint64_t i = 0; i < len && i < 60; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (isprint(c) || c >= 0x80)
            putchar(c);
        else
            printf("\\x%02x", c);
    }
    printf(len > 60 ? "\"... (%llu bytes)" : "\"", (unsigned long long)len);
}

/* One value; arrays as type[count] [first values, ...] (nested arrays below the first level:
 * type[count] only). */
static void print_value(wk_gguf_value v, int level)
{
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
        uint64_t u64; int64_t i64; float f32; double f64; int b;
    } x;
    const char *s;
    uint64_t len, n;
    wk_gguf_type et;
    switch (wk_gguf_value_type(v)) {
    case WK_GGUF_TYPE_U8: wk_gguf_get_u8(&x.u8, v); printf("%u", x.u8); break;
    case WK_GGUF_TYPE_I8: wk_gguf_get_i8(&x.i8, v); printf("%d", x.i8); break;
    case WK_GGUF_TYPE_U16: wk_gguf_get_u16(&x.u16, v); printf("%u", x.u16); break;
    case WK_GGUF_TYPE_I16: wk_gguf_get_i16(&x.i16, v); printf("%d", x.i16); break;
    case WK_GGUF_TYPE_U32: wk_gguf_get_u32(&x.u32, v); printf("%u", x.u32); break;
    case WK_GGUF_TYPE_I32: wk_gguf_get_i32(&x.i32, v); printf("%d", x.i32); break;
    case WK_GGUF_TYPE_U64: wk_gguf_get_u64(&x.u64, v); printf("%llu", (unsigned long long)x.u64); break;
    case WK_GGUF_TYPE_I64: wk_gguf_get_i64(&x.i64, v); printf("%lld", (long long)x.i64); break;
    case WK_GGUF_TYPE_F32: wk_gguf_get_f32(&x.f32, v); printf("%.9g", x.f32); break;
    case WK_GGUF_TYPE_F64: wk_gguf_get_f64(&x.f64, v); printf("%.17g", x.f64); break;
    case WK_GGUF_TYPE_BOOL: wk_gguf_get_bool(&x.b, v); printf("%s", x.b ? "true" : "false"); break;
    case WK_GGUF_TYPE_STRING: wk_gguf_get_string(&s, &len, v); print_string(s, len); break;
    case WK_GGUF_TYPE_ARRAY:
        wk_gguf_array_info(&et, &n, v);
        printf("%s[%llu]", wk_gguf_type_name(et), (unsigned long long)n);
        if (level > 0 || n == 0)
            break;
        printf(" [");
        for (uint64_t i = 0; i < n && i < 8; i++) {
            wk_gguf_value e;
            wk_gguf_array_elem(&e, v, i);
            printf(i ? ", " : "");
            print_value(e, level + 1);
        }
        printf(n > 8 ? ", ...]" : "]");
        break;
    }
}

int inspect_gguf(const char *path)
{
    wk_gguf *g = NULL;
    wk_status st = wk_gguf_open(&g, path);
    if (st != WK_OK) {
        fprintf(stderr, "wick: %s: %s\n", wk_status_string(st), wk_last_error());
        return 1;
    }
    printf("%s: GGUF version %u, alignment %u, %llu bytes, data section at byte %llu\n", path,
           wk_gguf_version(g), wk_gguf_alignment(g), (unsigned long long)wk_gguf_file_size(g),
           (unsigned long long)wk_gguf_data_offset(g));
    printf("metadata: %lld pairs\n", (long long)wk_gguf_kv_count(g));
    for (int64_t i = 0; i < wk_gguf_kv_count(g); i++) {
        wk_gguf_value v;
        wk_gguf_kv_value(&v, g, i);
        printf("  %-40s %-7s ", wk_gguf_key(g, i), wk_gguf_type_name(wk_gguf_value_type(v)));
        print_value(v, 0);
        putchar('\n');
    }
    printf("tensors: %lld\n", (long long)wk_gguf_tensor_count(g));
    printf("  %-40s %-5s %-28s %12s %12s\n", "name", "type", "dims (outermost first)",
           "file offset", "bytes");
    for (int64_t i = 0; i < wk_gguf_tensor_count(g); i++) {
        wk_gguf_tensor_info t;
        wk_gguf_tensor_info_get(&t, g, i);
        char dims[96];
        int k = snprintf(dims, sizeof dims, "[");
        for (int d = 0; d < t.n_dims; d++)
            k += snprintf(dims + k, sizeof dims - (size_t)k, d ? ", %lld" : "%lld", (long long)t.dims[d]);
        snprintf(dims + k, sizeof dims - (size_t)k, "]");
        printf("  %-40s %-5s %-28s %12llu %12llu\n", t.name, wk_qtype_name(t.qtype), dims,
               (unsigned long long)(wk_gguf_data_offset(g) + t.offset), (unsigned long long)t.nbytes);
    }
    wk_gguf_close(g);
    return 0;
}


/* ---- safetensors */
int inspect_safetensors(const char *path)
{
    wk_safetensors *st = NULL;
    wk_status s = wk_safetensors_open(&st, path);
    if (s != WK_OK) {
        fprintf(stderr, "wick: %s: %s\n", wk_status_string(s), wk_last_error());
        return 1;
    }
    uint64_t total = 0;
    for (int64_t i = 0; i < wk_safetensors_tensor_count(st); i++) {
        wk_safetensors_tensor_info t;
        wk_safetensors_tensor_info_get(&t, st, i);
        total += t.nbytes;
    }
    printf("%s: safetensors, %llu bytes, header %llu bytes, data section at byte %llu\n", path,
           (unsigned long long)wk_safetensors_file_size(st),
           (unsigned long long)(wk_safetensors_data_offset(st) - 8),
           (unsigned long long)wk_safetensors_data_offset(st));
    printf("metadata: %lld pairs\n", (long long)wk_safetensors_metadata_count(st));
    for (int64_t i = 0; i < wk_safetensors_metadata_count(st); i++) {
        const char *k, *v;
        wk_safetensors_metadata_get(&k, &v, st, i);
        printf("  %-40s ", k);
        print_string(v, strlen(v));
        putchar('\n');
    }
    printf("tensors: %lld (%llu bytes)\n", (long long)wk_safetensors_tensor_count(st),
           (unsigned long long)total);
    printf("  %-40s %-7s %-28s %12s %12s\n", "name", "dtype", "dims (outermost first)",
           "file offset", "bytes");
    for (int64_t i = 0; i < wk_safetensors_tensor_count(st); i++) {
        wk_safetensors_tensor_info t;
        wk_safetensors_tensor_info_get(&t, st, i);
        char dims[160];
        int k = snprintf(dims, sizeof dims, "[");
        for (int d = 0; d < t.rank && k < (int)sizeof dims - 24; d++)
            k += snprintf(dims + k, sizeof dims - (size_t)k, d ? ", %lld" : "%lld", (long long)t.dims[d]);
        snprintf(dims + k, sizeof dims - (size_t)k, "]");
        printf("  %-40s %-7s %-28s %12llu %12llu\n", t.name, t.dtype_name, dims,
               (unsigned long long)(wk_safetensors_data_offset(st) + t.offset),
               (unsigned long long)t.nbytes);
    }
    wk_safetensors_close(st);
    return 0;
}

int inspect_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "wick: cannot open '%s'\n", path);
        return 1;
    }
    char magic[4] = {0};
    size_t n = fread(magic, 1, 4, f);
    fclose(f);
    if (n == 4 && memcmp(magic, "GGUF", 4) == 0)
        return inspect_gguf(path);
    return inspect_safetensors(path);
}
