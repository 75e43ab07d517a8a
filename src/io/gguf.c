/* gguf.c: the GGUF reader (v2/v3, ggml's docs/gguf.md). The file is mapped read-only and parsed
 * once into small index tables (kv pairs, array records, string offsets, tensor infos); values,
 * strings and tensor bytes are then read from the map. Every count, length and offset is checked
 * against the bytes that remain BEFORE it is used, with overflow-safe arithmetic, so a hostile
 * file yields WK_ERR_FORMAT and never an out-of-bounds read or an allocation larger than a small
 * multiple of the bytes actually parsed (index tables grow as entries are read, not from the
 * counts the file claims). Multi-byte values are assembled byte by byte: the map is unaligned and
 * little-endian whatever the host. The writer is gguf_write.c; the rules are in
 * docs/semantics.md ("GGUF files"). */
#include "wk_core.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GG_HEADER_BYTES 24u  /* magic, version, tensor_count, kv_count */
#define GG_MIN_KV_BYTES 13u  /* key length (8) + value type (4) + smallest value (1) */
#define GG_MIN_TI_BYTES 32u  /* name length (8) + n_dims (4) + one dim (8) + type (4) + offset (8) */
#define GG_MIN_ARR_BYTES 12u /* a nested array: element type (4) + count (8) */

typedef unsigned long long ull; /* for printing uint64_t portably with %llu */

/* An array value: where its elements start and how to reach element i in O(1). */
typedef struct gg_arr {
    uint64_t pos;   /* the array's payload (its element type field) */
    uint64_t data;  /* the first element */
    uint64_t count;
    uint64_t first; /* strings: index into soff; arrays: index of the first child record */
    uint32_t etype;
} gg_arr;

typedef struct gg_kv {
    uint64_t key;  /* offset of the NUL-terminated key in the name arena */
    uint64_t pos;  /* the value's payload */
    int64_t node;  /* array record, or -1 */
    uint32_t type;
} gg_kv;

typedef struct gg_tensor {
    uint64_t name;       /* offset in the name arena */
    uint64_t off_field;  /* byte position of the offset field, for messages */
    int64_t ne[WK_GGUF_MAX_DIMS];
    int64_t elems;
    uint64_t offset, nbytes;
    int32_t n_dims;
    wk_qtype qtype;
} gg_tensor;

typedef struct gg_name {
    const char *s;
    int64_t idx;
} gg_name;

struct wk_gguf {
    const uint8_t *map;
    uint64_t size;
    uint32_t version, alignment;
    uint64_t data_off;
    gg_kv *kv;
    int64_t nkv, kv_cap;
    gg_tensor *t;
    int64_t nt, t_cap;
    gg_arr *arr;
    int64_t narr, arr_cap;
    uint64_t *soff;
    int64_t nsoff, soff_cap;
    char *names;
    int64_t names_len, names_cap;
    gg_name *kv_sorted, *t_sorted;
};

/* ------------------------------------------------------------------ value type facts */
static const struct {
    const char *name;
    size_t size;
} gg_types[WK_GGUF_TYPE_COUNT] = {
    [WK_GGUF_TYPE_U8] = {"u8", 1},     [WK_GGUF_TYPE_I8] = {"i8", 1},
    [WK_GGUF_TYPE_U16] = {"u16", 2},   [WK_GGUF_TYPE_I16] = {"i16", 2},
    [WK_GGUF_TYPE_U32] = {"u32", 4},   [WK_GGUF_TYPE_I32] = {"i32", 4},
    [WK_GGUF_TYPE_F32] = {"f32", 4},   [WK_GGUF_TYPE_BOOL] = {"bool", 1},
    [WK_GGUF_TYPE_STRING] = {"string", 0}, [WK_GGUF_TYPE_ARRAY] = {"array", 0},
    [WK_GGUF_TYPE_U64] = {"u64", 8},   [WK_GGUF_TYPE_I64] = {"i64", 8},
    [WK_GGUF_TYPE_F64] = {"f64", 8},
};

const char *wk_gguf_type_name(wk_gguf_type t)
{
    return (unsigned)t < WK_GGUF_TYPE_COUNT ? gg_types[t].name : "?";
}

size_t wk_gguf_type_size(wk_gguf_type t)
{
    return (unsigned)t < WK_GGUF_TYPE_COUNT ? gg_types[t].size : 0;
}

/* ------------------------------------------------------------------ little-endian bytes */
static uint64_t le_bits(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t k = 0; k < n; k++)
        v |= (uint64_t)p[k] << (8 * k);
    return v;
}

/* dst (n bytes: 1, 2, 4 or 8) <- the low n bytes of bits as a host value of that width. */
static void bits_to_host(void *dst, uint64_t bits, size_t n)
{
    uint8_t b8 = (uint8_t)bits;
    uint16_t b16 = (uint16_t)bits;
    uint32_t b32 = (uint32_t)bits;
    switch (n) {
    case 1: memcpy(dst, &b8, 1); break;
    case 2: memcpy(dst, &b16, 2); break;
    case 4: memcpy(dst, &b32, 4); break;
    default: memcpy(dst, &bits, 8); break;
    }
}

/* Puts "<context>: " in front of the thread's current message; returns st. */
__attribute__((format(printf, 2, 3))) static wk_status prefix_err(wk_status st, const char *fmt, ...)
{
    char inner[768], ctx[256];
    snprintf(inner, sizeof inner, "%s", wk_last_error());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    return wk_err(st, "%s: %s", ctx, inner);
}

/* ------------------------------------------------------------------ growable tables */
/* Makes room for `need` entries of elsize bytes in *p (capacity *cap), doubling. */
static wk_status grow(void **p, int64_t *cap, int64_t need, size_t elsize)
{
    if (need <= *cap)
        return WK_OK;
    int64_t nc = *cap ? *cap : 16;
    while (nc < need)
        nc = nc > INT64_MAX / 2 ? need : nc * 2;
    if ((uint64_t)nc > SIZE_MAX / elsize)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "index of %lld entries", (long long)nc);
    void *q = wk_malloc((size_t)nc * elsize);
    if (!q)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "out of memory for an index of %lld entries",
                      (long long)nc);
    if (*cap > 0)
        memcpy(q, *p, (size_t)*cap * elsize);
    wk_free(*p);
    *p = q;
    *cap = nc;
    return WK_OK;
}

/* ------------------------------------------------------------------ the cursor */
typedef struct gg_cur {
    const uint8_t *p;
    uint64_t size, pos;
} gg_cur;

static uint64_t left(const gg_cur *c) { return c->size - c->pos; }

static wk_status need(const gg_cur *c, uint64_t n, const char *field)
{
    if (n > left(c))
        return wk_err(WK_ERR_FORMAT, "%s at byte %llu needs %llu bytes, %llu left", field,
                      (ull)c->pos, (ull)n, (ull)left(c));
    return WK_OK;
}

static wk_status rd(gg_cur *c, uint64_t *v, size_t n, const char *field)
{
    wk_status st = need(c, n, field);
    if (st)
        return st;
    *v = le_bits(c->p + c->pos, n);
    c->pos += n;
    return WK_OK;
}

/* A string: u64 length, then the bytes. *at: its length field; *len: the length. */
static wk_status rd_string(gg_cur *c, uint64_t *at, uint64_t *len, const char *field)
{
    *at = c->pos;
    wk_status st = rd(c, len, 8, field);
    if (st)
        return st;
    if (*len > left(c))
        return wk_err(WK_ERR_FORMAT, "%s: length %llu at byte %llu runs past the end of the file "
                      "(%llu bytes left)", field, (ull)*len, (ull)*at, (ull)left(c));
    c->pos += *len;
    return WK_OK;
}

/* A key or tensor name: copied NUL-terminated into the arena (its offset in *off). */
static wk_status rd_name(wk_gguf *g, gg_cur *c, uint64_t *off, const char *field)
{
    uint64_t at, len;
    wk_status st = rd_string(c, &at, &len, field);
    if (st)
        return st;
    const uint8_t *s = c->p + at + 8;
    if (len > 0 && memchr(s, 0, (size_t)len))
        return wk_err(WK_ERR_FORMAT, "%s at byte %llu holds a NUL byte", field, (ull)at);
    st = grow((void **)&g->names, &g->names_cap, g->names_len + (int64_t)len + 1, 1);
    if (st)
        return st;
    memcpy(g->names + g->names_len, s, (size_t)len);
    g->names[g->names_len + (int64_t)len] = '\0';
    *off = (uint64_t)g->names_len;
    g->names_len += (int64_t)len + 1;
    return WK_OK;
}

/* ------------------------------------------------------------------ values */
static wk_status parse_array(wk_gguf *g, gg_cur *c, int depth, int64_t slot);

/* A value of a known type at the cursor; arrays fill the record at slot (reserved by the caller). */
static wk_status parse_value(wk_gguf *g, gg_cur *c, uint32_t type, int depth, int64_t slot)
{
    if (type == WK_GGUF_TYPE_ARRAY)
        return parse_array(g, c, depth, slot);
    if (type == WK_GGUF_TYPE_STRING) {
        uint64_t at, len;
        return rd_string(c, &at, &len, "string value");
    }
    wk_status st = need(c, gg_types[type].size, "scalar value");
    if (st)
        return st;
    c->pos += gg_types[type].size;
    return WK_OK;
}

static wk_status rd_type(gg_cur *c, uint32_t *type, const char *field)
{
    uint64_t at = c->pos, v;
    wk_status st = rd(c, &v, 4, field);
    if (st)
        return st;
    if (v >= WK_GGUF_TYPE_COUNT)
        return wk_err(WK_ERR_FORMAT, "%s %llu at byte %llu is not a GGUF value type (0..12)", field,
                      (ull)v, (ull)at);
    *type = (uint32_t)v;
    return WK_OK;
}

/* An array at the cursor (element type, count, elements); its record goes to g->arr[slot].
 * depth: 1 for an array that is a kv value, +1 per nesting level. */
static wk_status parse_array(wk_gguf *g, gg_cur *c, int depth, int64_t slot)
{
    const uint64_t pos = c->pos;
    if (depth > WK_GGUF_MAX_DEPTH)
        return wk_err(WK_ERR_FORMAT, "array at byte %llu is nested %d deep (the limit is %d)",
                      (ull)pos, depth, WK_GGUF_MAX_DEPTH);
    uint32_t et = 0;
    uint64_t count, count_at;
    wk_status st = rd_type(c, &et, "array element type");
    if (st)
        return st;
    count_at = c->pos;
    if ((st = rd(c, &count, 8, "array count")))
        return st;
    const uint64_t min = et == WK_GGUF_TYPE_STRING ? 8 : et == WK_GGUF_TYPE_ARRAY ? GG_MIN_ARR_BYTES
                                                                              : gg_types[et].size;
    if (count > left(c) / min)
        return wk_err(WK_ERR_FORMAT, "array count %llu at byte %llu: %s elements take at least %llu "
                      "bytes each, %llu bytes left", (ull)count, (ull)count_at,
                      gg_types[et].name, (ull)min, (ull)left(c));
    g->arr[slot] = (gg_arr){.pos = pos, .data = c->pos, .count = count, .first = 0, .etype = et};
    if (et == WK_GGUF_TYPE_STRING) {
        const int64_t first = g->nsoff;
        if ((st = grow((void **)&g->soff, &g->soff_cap, first + (int64_t)count, sizeof *g->soff)))
            return st;
        g->nsoff += (int64_t)count;
        g->arr[slot].first = (uint64_t)first;
        for (uint64_t i = 0; i < count; i++) {
            uint64_t len;
            if ((st = rd_string(c, &g->soff[first + (int64_t)i], &len, "string element")))
                return st;
        }
    } else if (et == WK_GGUF_TYPE_ARRAY) {
        /* children take consecutive records, reserved before any grandchild */
        const int64_t first = g->narr;
        if ((st = grow((void **)&g->arr, &g->arr_cap, first + (int64_t)count, sizeof *g->arr)))
            return st;
        g->narr += (int64_t)count;
        g->arr[slot].first = (uint64_t)first;
        for (uint64_t i = 0; i < count; i++)
            if ((st = parse_array(g, c, depth + 1, first + (int64_t)i)))
                return st;
    } else {
        c->pos += count * min; /* count <= left / min: no overflow, in bounds */
    }
    return WK_OK;
}

/* ------------------------------------------------------------------ sections */
static wk_status parse_header(wk_gguf *g, gg_cur *c, uint64_t *nt, uint64_t *nkv)
{
    if (c->size < 4 || memcmp(c->p, "GGUF", 4) != 0)
        return wk_err(WK_ERR_FORMAT, "magic at byte 0 is not \"GGUF\" (file of %llu bytes)",
                      (ull)c->size);
    c->pos = 4;
    uint64_t v;
    wk_status st = rd(c, &v, 4, "version");
    if (st)
        return st;
    if (v == 1)
        return wk_err(WK_ERR_FORMAT, "version 1 not supported (byte 4; versions 2 and 3 are)");
    if (v != 2 && v != 3)
        return wk_err(WK_ERR_FORMAT, "version %llu at byte 4 not supported (versions 2 and 3 are%s)",
                      (ull)v, (v & 0xffff) == 0 ? "; a big-endian file?" : "");
    g->version = (uint32_t)v;
    if ((st = rd(c, nt, 8, "tensor_count")) || (st = rd(c, nkv, 8, "kv_count")))
        return st;
    if (*nt > left(c) / GG_MIN_TI_BYTES)
        return wk_err(WK_ERR_FORMAT, "tensor_count %llu at byte 8: each tensor info takes at least "
                      "%u bytes, %llu bytes left", (ull)*nt, GG_MIN_TI_BYTES, (ull)left(c));
    if (*nkv > left(c) / GG_MIN_KV_BYTES)
        return wk_err(WK_ERR_FORMAT, "kv_count %llu at byte 16: each kv pair takes at least %u "
                      "bytes, %llu bytes left", (ull)*nkv, GG_MIN_KV_BYTES, (ull)left(c));
    return WK_OK;
}

static wk_status parse_kv(wk_gguf *g, gg_cur *c)
{
    gg_kv kv = {.node = -1};
    wk_status st = rd_name(g, c, &kv.key, "key");
    if (!st)
        st = rd_type(c, &kv.type, "value type");
    if (st)
        return st;
    kv.pos = c->pos;
    if (kv.type == WK_GGUF_TYPE_ARRAY) {
        if ((st = grow((void **)&g->arr, &g->arr_cap, g->narr + 1, sizeof *g->arr)))
            return st;
        kv.node = g->narr++;
    }
    if ((st = parse_value(g, c, kv.type, 1, kv.node)))
        return st;
    if ((st = grow((void **)&g->kv, &g->kv_cap, g->nkv + 1, sizeof *g->kv)))
        return st;
    g->kv[g->nkv++] = kv;
    return WK_OK;
}

/* general.alignment: a u32 power of two if present, else 32. */
static wk_status find_alignment(wk_gguf *g)
{
    g->alignment = WK_GGUF_DEFAULT_ALIGNMENT;
    for (int64_t i = 0; i < g->nkv; i++) {
        if (strcmp(g->names + g->kv[i].key, "general.alignment") != 0)
            continue;
        if (g->kv[i].type != WK_GGUF_TYPE_U32)
            return wk_err(WK_ERR_FORMAT, "general.alignment at byte %llu is %s, not u32",
                          (ull)g->kv[i].pos, gg_types[g->kv[i].type].name);
        uint32_t a = (uint32_t)le_bits(g->map + g->kv[i].pos, 4);
        if (a == 0 || (a & (a - 1)) != 0)
            return wk_err(WK_ERR_FORMAT, "general.alignment %u at byte %llu is not a power of two",
                          a, (ull)g->kv[i].pos);
        g->alignment = a;
    }
    return WK_OK;
}

static wk_status parse_tensor_info(wk_gguf *g, gg_cur *c)
{
    gg_tensor t = {.elems = 1};
    wk_status st = rd_name(g, c, &t.name, "tensor name");
    if (st)
        return st;
    const char *name = g->names + t.name;
    uint64_t v, at = c->pos;
    if ((st = rd(c, &v, 4, "n_dims")))
        return st;
    if (v < 1 || v > WK_GGUF_MAX_DIMS)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': n_dims %llu at byte %llu is not in 1..%d", name,
                      (ull)v, (ull)at, WK_GGUF_MAX_DIMS);
    t.n_dims = (int32_t)v;
    for (int k = 0; k < WK_GGUF_MAX_DIMS; k++)
        t.ne[k] = 1;
    for (int k = 0; k < t.n_dims; k++) {
        at = c->pos;
        if ((st = rd(c, &v, 8, "dim")))
            return st;
        if (v == 0 || v > (uint64_t)INT64_MAX)
            return wk_err(WK_ERR_FORMAT, "tensor '%s': dim %d (%llu) at byte %llu is not in "
                          "1..2^63-1", name, k, (ull)v, (ull)at);
        t.ne[k] = (int64_t)v;
        if (__builtin_mul_overflow(t.elems, t.ne[k], &t.elems))
            return wk_err(WK_ERR_FORMAT, "tensor '%s': the element count overflows at dim %d "
                          "(byte %llu)", name, k, (ull)at);
    }
    at = c->pos;
    if ((st = rd(c, &v, 4, "tensor type")))
        return st;
    const int64_t be = v < WK_QTYPE_LIMIT ? wk_qtype_block_elems((wk_qtype)v) : 0;
    if (be == 0)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': ggml type %llu at byte %llu is unknown or not "
                      "supported", name, (ull)v, (ull)at);
    t.qtype = (wk_qtype)v;
    if (t.ne[0] % be != 0)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': row length %lld is not a multiple of the %s "
                      "block (%lld)", name, (long long)t.ne[0], wk_qtype_name(t.qtype), (long long)be);
    /* elems / be blocks of bb <= 292 bytes: can exceed 2^64 only for absurd dims */
    const uint64_t bb = (uint64_t)wk_qtype_block_bytes(t.qtype);
    if (__builtin_mul_overflow((uint64_t)(t.elems / be), bb, &t.nbytes))
        return wk_err(WK_ERR_FORMAT, "tensor '%s': byte size overflows", name);
    t.off_field = c->pos;
    if ((st = rd(c, &t.offset, 8, "tensor offset")))
        return st;
    if ((st = grow((void **)&g->t, &g->t_cap, g->nt + 1, sizeof *g->t)))
        return st;
    g->t[g->nt++] = t;
    return WK_OK;
}

/* The data section starts at the next multiple of the alignment; every tensor lies inside the
 * file at an aligned offset. Overlapping tensors are allowed (the map is read-only). */
static wk_status check_data(wk_gguf *g, uint64_t end_of_infos)
{
    const uint64_t a = g->alignment;
    const uint64_t pad = (a - end_of_infos % a) % a;
    g->data_off = end_of_infos + pad; /* end_of_infos <= size < 2^63: no overflow */
    for (int64_t i = 0; i < g->nt; i++) {
        const gg_tensor *t = &g->t[i];
        const char *name = g->names + t->name;
        if (t->offset % a != 0)
            return wk_err(WK_ERR_FORMAT, "tensor '%s': offset %llu at byte %llu is not a multiple "
                          "of the alignment %llu", name, (ull)t->offset, (ull)t->off_field, (ull)a);
        const uint64_t room = g->data_off <= g->size ? g->size - g->data_off : 0;
        if (t->offset > room || t->nbytes > room - t->offset)
            return wk_err(WK_ERR_FORMAT, "tensor '%s': data [%llu, +%llu) (offset field at byte "
                          "%llu) runs past the end of the file (data section at byte %llu, file "
                          "of %llu bytes)", name, (ull)t->offset, (ull)t->nbytes,
                          (ull)t->off_field, (ull)g->data_off, (ull)g->size);
    }
    return WK_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const gg_name *)a)->s, ((const gg_name *)b)->s);
}

/* *out: names sorted (for lookup); fails on a duplicate. name_of(i) is the arena offset. */
static wk_status sort_names(gg_name **out, const wk_gguf *g, int64_t n, int is_kv)
{
    gg_name *v = wk_malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "out of memory for %lld names", (long long)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (gg_name){g->names + (is_kv ? g->kv[i].key : g->t[i].name), i};
    if (n > 1)
        qsort(v, (size_t)n, sizeof *v, cmp_name);
    for (int64_t i = 1; i < n; i++) {
        if (strcmp(v[i - 1].s, v[i].s) == 0) {
            int64_t a = v[i - 1].idx < v[i].idx ? v[i - 1].idx : v[i].idx;
            int64_t b = v[i - 1].idx < v[i].idx ? v[i].idx : v[i - 1].idx;
            wk_status st = wk_err(WK_ERR_FORMAT, "duplicate %s '%s' (%s %lld and %lld)",
                                  is_kv ? "key" : "tensor name", v[i].s, is_kv ? "kv pairs" : "tensors",
                                  (long long)a, (long long)b);
            wk_free(v);
            return st;
        }
    }
    *out = v;
    return WK_OK;
}

static int64_t find_name(const gg_name *v, int64_t n, const char *s)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(v[mid].s, s);
        if (c == 0)
            return v[mid].idx;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static wk_status parse(wk_gguf *g)
{
    gg_cur c = {g->map, g->size, 0};
    uint64_t nt = 0, nkv = 0; /* set by parse_header; zeroed for compilers that cannot see it */
    wk_status st = parse_header(g, &c, &nt, &nkv);
    if (st)
        return st;
    for (uint64_t i = 0; i < nkv; i++)
        if ((st = parse_kv(g, &c)))
            return prefix_err(st, "kv pair %llu", (ull)i);
    if ((st = find_alignment(g)))
        return st;
    for (uint64_t i = 0; i < nt; i++)
        if ((st = parse_tensor_info(g, &c)))
            return prefix_err(st, "tensor info %llu", (ull)i);
    if ((st = check_data(g, c.pos)))
        return st;
    if ((st = sort_names(&g->kv_sorted, g, g->nkv, 1)))
        return st;
    return sort_names(&g->t_sorted, g, g->nt, 0);
}

/* ------------------------------------------------------------------ open, close */
static void gguf_free(wk_gguf *g)
{
    if (g->map && g->size > 0)
        munmap((void *)(uintptr_t)g->map, (size_t)g->size);
    wk_free(g->kv);
    wk_free(g->t);
    wk_free(g->arr);
    wk_free(g->soff);
    wk_free(g->names);
    wk_free(g->kv_sorted);
    wk_free(g->t_sorted);
    wk_free(g);
}

/* Maps path read-only into g (an empty file maps nothing and fails at the header). */
static wk_status map_file(wk_gguf *g, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return wk_err(WK_ERR_IO, "wk_gguf_open: cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        close(fd);
        return wk_err(WK_ERR_IO, "wk_gguf_open: '%s' is not a regular file%s%s", path,
                      e ? ": " : "", e ? strerror(e) : "");
    }
    if ((uint64_t)sb.st_size > (uint64_t)INT64_MAX / 2 || (uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return wk_err(WK_ERR_IO, "wk_gguf_open: '%s' is too large to map", path);
    }
    g->size = (uint64_t)sb.st_size;
    if (g->size > 0) {
        void *m = mmap(NULL, (size_t)g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return wk_err(WK_ERR_IO, "wk_gguf_open: cannot map '%s': %s", path, strerror(e));
        }
        g->map = m;
    }
    close(fd); /* the mapping stays valid */
    return WK_OK;
}

wk_status wk_gguf_open(wk_gguf **out, const char *path)
{
    if (!out || !path)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_open: NULL %s", out ? "path" : "output");
    *out = NULL;
    wk_gguf *g = wk_calloc(1, sizeof *g);
    if (!g)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_gguf_open: out of memory");
    errno = 0;
    wk_status st = map_file(g, path);
    if (st) {
        gguf_free(g);
        return st;
    }
    if ((st = parse(g))) {
        prefix_err(st, "wk_gguf_open: '%s'", path);
        gguf_free(g);
        return st;
    }
    wk_live_add(1);
    *out = g;
    return WK_OK;
}

void wk_gguf_close(wk_gguf *g)
{
    if (!g)
        return;
    gguf_free(g);
    wk_live_add(-1);
}

uint32_t wk_gguf_version(const wk_gguf *g) { return g ? g->version : 0; }
uint32_t wk_gguf_alignment(const wk_gguf *g) { return g ? g->alignment : 0; }
uint64_t wk_gguf_data_offset(const wk_gguf *g) { return g ? g->data_off : 0; }
uint64_t wk_gguf_file_size(const wk_gguf *g) { return g ? g->size : 0; }

/* ------------------------------------------------------------------ metadata */
int64_t wk_gguf_kv_count(const wk_gguf *g) { return g ? g->nkv : 0; }

const char *wk_gguf_key(const wk_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->nkv ? g->names + g->kv[i].key : NULL;
}

int64_t wk_gguf_find_key(const wk_gguf *g, const char *key)
{
    return g && key ? find_name(g->kv_sorted, g->nkv, key) : -1;
}

wk_status wk_gguf_kv_value(wk_gguf_value *out, const wk_gguf *g, int64_t i)
{
    if (!out || !g)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_kv_value: NULL %s", out ? "file" : "output");
    if (i < 0 || i >= g->nkv)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_gguf_kv_value: pair %lld of %lld", (long long)i,
                      (long long)g->nkv);
    *out = (wk_gguf_value){g, g->kv[i].pos, g->kv[i].node, (int32_t)g->kv[i].type};
    return WK_OK;
}

wk_gguf_type wk_gguf_value_type(wk_gguf_value v) { return (wk_gguf_type)v.type; }

/* Checks that v is a live value of the wanted type. */
static wk_status value_is(wk_gguf_value v, wk_gguf_type want, const char *fn)
{
    if (!v.g || (unsigned)v.type >= WK_GGUF_TYPE_COUNT)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: not a value of an open file", fn);
    if (v.type != (int32_t)want)
        return wk_err(WK_ERR_DTYPE, "%s: the value (byte %llu) is %s, not %s", fn, (ull)v.pos,
                      gg_types[v.type].name, gg_types[want].name);
    if (want == WK_GGUF_TYPE_ARRAY && (v.node < 0 || v.node >= v.g->narr))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: not a value of an open file", fn);
    return WK_OK;
}

/* One getter per scalar type; the bytes were bounds-checked at open. */
#define GG_SCALARS(X)                                                                              \
    X(u8, uint8_t, U8) X(i8, int8_t, I8) X(u16, uint16_t, U16) X(i16, int16_t, I16)                \
    X(u32, uint32_t, U32) X(i32, int32_t, I32) X(u64, uint64_t, U64) X(i64, int64_t, I64)          \
    X(f32, float, F32) X(f64, double, F64)
#define GG_GETTER(name, T, E)                                                                      \
    wk_status wk_gguf_get_##name(T *out, wk_gguf_value v)                                          \
    {                                                                                              \
        wk_status st = value_is(v, WK_GGUF_TYPE_##E, "wk_gguf_get_" #name);                        \
        if (st)                                                                                    \
            return st;                                                                             \
        if (!out)                                                                                  \
            return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_get_" #name ": NULL output");          \
        _Static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,       \
                       "scalar width");                                                            \
        bits_to_host(out, le_bits(v.g->map + v.pos, sizeof(T)), sizeof(T));                        \
        return WK_OK;                                                                              \
    }
GG_SCALARS(GG_GETTER)
#undef GG_GETTER

wk_status wk_gguf_get_bool(int *out, wk_gguf_value v)
{
    wk_status st = value_is(v, WK_GGUF_TYPE_BOOL, "wk_gguf_get_bool");
    if (st)
        return st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_get_bool: NULL output");
    *out = v.g->map[v.pos] != 0;
    return WK_OK;
}

wk_status wk_gguf_get_string(const char **s, uint64_t *len, wk_gguf_value v)
{
    wk_status st = value_is(v, WK_GGUF_TYPE_STRING, "wk_gguf_get_string");
    if (st)
        return st;
    if (!s || !len)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_get_string: NULL output");
    *len = le_bits(v.g->map + v.pos, 8);
    *s = (const char *)v.g->map + v.pos + 8;
    return WK_OK;
}

wk_status wk_gguf_array_info(wk_gguf_type *elem_type, uint64_t *count, wk_gguf_value v)
{
    wk_status st = value_is(v, WK_GGUF_TYPE_ARRAY, "wk_gguf_array_info");
    if (st)
        return st;
    const gg_arr *a = &v.g->arr[v.node];
    if (elem_type)
        *elem_type = (wk_gguf_type)a->etype;
    if (count)
        *count = a->count;
    return WK_OK;
}

wk_status wk_gguf_array_elem(wk_gguf_value *out, wk_gguf_value v, uint64_t i)
{
    wk_status st = value_is(v, WK_GGUF_TYPE_ARRAY, "wk_gguf_array_elem");
    if (st)
        return st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_array_elem: NULL output");
    const wk_gguf *g = v.g;
    const gg_arr *a = &g->arr[v.node];
    if (i >= a->count)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_gguf_array_elem: element %llu of an array of "
                      "%llu (byte %llu)", (ull)i, (ull)a->count, (ull)a->pos);
    if (a->etype == WK_GGUF_TYPE_STRING)
        *out = (wk_gguf_value){g, g->soff[a->first + i], -1, WK_GGUF_TYPE_STRING};
    else if (a->etype == WK_GGUF_TYPE_ARRAY)
        *out = (wk_gguf_value){g, g->arr[a->first + i].pos, (int64_t)(a->first + i), WK_GGUF_TYPE_ARRAY};
    else
        *out = (wk_gguf_value){g, a->data + i * gg_types[a->etype].size, -1, (int32_t)a->etype};
    return WK_OK;
}

wk_status wk_gguf_array_data(const void **data, wk_gguf_value v)
{
    wk_status st = value_is(v, WK_GGUF_TYPE_ARRAY, "wk_gguf_array_data");
    if (st)
        return st;
    if (!data)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_array_data: NULL output");
    const gg_arr *a = &v.g->arr[v.node];
    if (gg_types[a->etype].size == 0)
        return wk_err(WK_ERR_DTYPE, "wk_gguf_array_data: an array of %s (byte %llu) is not packed "
                      "scalars", gg_types[a->etype].name, (ull)a->pos);
    *data = v.g->map + a->data;
    return WK_OK;
}

/* ------------------------------------------------------------------ tensors */
int64_t wk_gguf_tensor_count(const wk_gguf *g) { return g ? g->nt : 0; }

int64_t wk_gguf_find_tensor(const wk_gguf *g, const char *name)
{
    return g && name ? find_name(g->t_sorted, g->nt, name) : -1;
}

wk_status wk_gguf_tensor_info_get(wk_gguf_tensor_info *out, const wk_gguf *g, int64_t i)
{
    if (!out || !g)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_tensor_info_get: NULL %s", out ? "file" : "output");
    if (i < 0 || i >= g->nt)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_gguf_tensor_info_get: tensor %lld of %lld",
                      (long long)i, (long long)g->nt);
    const gg_tensor *t = &g->t[i];
    *out = (wk_gguf_tensor_info){.name = g->names + t->name, .n_dims = t->n_dims, .qtype = t->qtype,
                                 .elems = t->elems, .offset = t->offset, .nbytes = t->nbytes};
    for (int k = 0; k < WK_GGUF_MAX_DIMS; k++) {
        out->ne[k] = t->ne[k];
        out->dims[k] = k < t->n_dims ? t->ne[t->n_dims - 1 - k] : 1;
    }
    return WK_OK;
}

const void *wk_gguf_tensor_data(const wk_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->nt ? g->map + g->data_off + g->t[i].offset : NULL;
}

wk_status wk_gguf_load_tensor(wk_storage **out, const wk_gguf *g, int64_t i, wk_device *dev)
{
    if (!out || !g)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_load_tensor: NULL %s", out ? "file" : "output");
    if (i < 0 || i >= g->nt)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_gguf_load_tensor: tensor %lld of %lld",
                      (long long)i, (long long)g->nt);
    const gg_tensor *t = &g->t[i];
    wk_dtype dt = WK_DTYPE_U8;
    uint64_t n = t->nbytes;
    if (t->qtype == WK_QTYPE_F32 || t->qtype == WK_QTYPE_F16 || t->qtype == WK_QTYPE_BF16) {
        dt = t->qtype == WK_QTYPE_F32 ? WK_DTYPE_F32 : t->qtype == WK_QTYPE_F16 ? WK_DTYPE_F16 : WK_DTYPE_BF16;
        n = (uint64_t)t->elems;
    }
    if (n > SIZE_MAX)
        return wk_err(WK_ERR_OVERFLOW, "wk_gguf_load_tensor: tensor '%s' of %llu elements",
                      g->names + t->name, (ull)n);
    return wk_storage_from_host(out, dev, dt, g->map + g->data_off + t->offset, (size_t)n);
}
