/* gguf_write.c: the GGUF writer. kv pairs are encoded into one growing buffer as they are added
 * (arrays built element by element keep a stack of open arrays whose counts are patched when
 * they close); tensors are recorded (their bytes referenced, not copied); wk_gguf_writer_write
 * streams header, kv pairs, tensor infos and the data section in llama.cpp's layout: tensors in
 * the order added, each at the next multiple of the alignment, padded with zeros (gguf.cpp
 * insists that offsets follow each other exactly like this), into a temporary file that then
 * replaces the destination (atomic_file.c). The reader is gguf.c. */
#include "wk_core.h"
#include "atomic_file.h"
#include <stdlib.h>
#include <string.h>

#define GW_MAX_NAME 64 /* ggml's GGML_MAX_NAME: names must be shorter */

typedef struct gw_tensor {
    uint64_t name;  /* offset in the name arena */
    int64_t ne[WK_GGUF_MAX_DIMS];
    int32_t n_dims;
    wk_qtype qtype;
    const void *data;
    uint64_t nbytes;
} gw_tensor;

typedef struct gw_open {
    size_t count_pos; /* where the array's u64 count sits in the kv buffer */
    uint64_t count;
    uint32_t etype;
} gw_open;

struct wk_gguf_writer {
    uint8_t *buf; /* the encoded kv pairs */
    size_t len, cap;
    int64_t nkv;
    char *names;  /* keys and tensor names, NUL-terminated */
    size_t names_len, names_cap;
    uint64_t *keys; /* arena offsets of the keys */
    int64_t keys_cap;
    gw_tensor *t;
    int64_t nt, t_cap;
    gw_open open[WK_GGUF_MAX_DEPTH];
    int depth;
    uint32_t alignment;
};

/* Everything an add may change, to undo a failed one. */
typedef struct gw_mark {
    size_t len, names_len;
    int64_t nkv;
    int depth;
    uint64_t count; /* of the innermost open array */
} gw_mark;

static gw_mark mark(const wk_gguf_writer *w)
{
    return (gw_mark){w->len, w->names_len, w->nkv, w->depth, w->depth ? w->open[w->depth - 1].count : 0};
}

static wk_status undo(wk_gguf_writer *w, gw_mark m, wk_status st)
{
    w->len = m.len;
    w->names_len = m.names_len;
    w->nkv = m.nkv;
    w->depth = m.depth;
    if (w->depth)
        w->open[w->depth - 1].count = m.count;
    return st;
}

/* ------------------------------------------------------------------ buffers */
static wk_status reserve(void **p, size_t *cap, size_t need, size_t elsize)
{
    if (need <= *cap)
        return WK_OK;
    size_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc = nc > SIZE_MAX / 2 ? need : nc * 2;
    if (nc > SIZE_MAX / elsize)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_gguf_writer: %zu entries", nc);
    void *q = wk_malloc(nc * elsize);
    if (!q)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_gguf_writer: out of memory for %zu bytes", nc * elsize);
    if (*cap)
        memcpy(q, *p, *cap * elsize);
    wk_free(*p);
    *p = q;
    *cap = nc;
    return WK_OK;
}

static wk_status put(wk_gguf_writer *w, const void *p, size_t n)
{
    if (n > SIZE_MAX - w->len)
        return wk_err(WK_ERR_OVERFLOW, "wk_gguf_writer: metadata larger than memory");
    wk_status st = reserve((void **)&w->buf, &w->cap, w->len + n, 1);
    if (st)
        return st;
    if (n)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
    return WK_OK;
}

static void le_store(uint8_t *dst, uint64_t v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        dst[k] = (uint8_t)(v >> (8 * k));
}

static wk_status put_le(wk_gguf_writer *w, uint64_t v, size_t n)
{
    uint8_t b[8];
    le_store(b, v, n);
    return put(w, b, n);
}

/* The host value at p (n bytes: 1, 2, 4 or 8) as bits. */
static uint64_t host_bits(const void *p, size_t n)
{
    uint8_t b8;
    uint16_t b16;
    uint32_t b32;
    uint64_t b64;
    switch (n) {
    case 1: memcpy(&b8, p, 1); return b8;
    case 2: memcpy(&b16, p, 2); return b16;
    case 4: memcpy(&b32, p, 4); return b32;
    default: memcpy(&b64, p, 8); return b64;
    }
}

static wk_status put_name(wk_gguf_writer *w, const char *s, uint64_t *off)
{
    size_t n = strlen(s) + 1;
    wk_status st = reserve((void **)&w->names, &w->names_cap, w->names_len + n, 1);
    if (st)
        return st;
    memcpy(w->names + w->names_len, s, n);
    *off = w->names_len;
    w->names_len += n;
    return WK_OK;
}

/* ------------------------------------------------------------------ kv pairs */
/* Starts a value of type: the next element of the innermost open array (key must be NULL and
 * type its element type), or a new pair (key, type). */
static wk_status begin_value(wk_gguf_writer *w, const char *key, wk_gguf_type type, const char *fn)
{
    if (!w)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL writer", fn);
    if ((unsigned)type >= WK_GGUF_TYPE_COUNT)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: unknown value type %d", fn, (int)type);
    if (w->depth > 0) {
        gw_open *o = &w->open[w->depth - 1];
        if (key)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: key '%s' given while an array is open "
                          "(elements have no key; end_array first)", fn, key);
        if ((uint32_t)type != o->etype)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: a %s element in an array of %s", fn,
                          wk_gguf_type_name(type), wk_gguf_type_name((wk_gguf_type)o->etype));
        o->count++;
        return WK_OK;
    }
    if (!key)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL key", fn);
    if (strcmp(key, "general.alignment") == 0 && type != WK_GGUF_TYPE_U32)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: general.alignment must be u32, not %s", fn,
                      wk_gguf_type_name(type));
    int64_t nk = w->nkv + 1;
    size_t kcap = (size_t)w->keys_cap;
    wk_status st = reserve((void **)&w->keys, &kcap, (size_t)nk, sizeof *w->keys);
    w->keys_cap = (int64_t)kcap;
    if (!st)
        st = put_name(w, key, &w->keys[w->nkv]);
    if (!st)
        st = put_le(w, strlen(key), 8);
    if (!st)
        st = put(w, key, strlen(key));
    if (!st)
        st = put_le(w, (uint64_t)type, 4);
    if (!st)
        w->nkv = nk;
    return st;
}

wk_status wk_gguf_writer_add(wk_gguf_writer *w, const char *key, wk_gguf_type type, const void *value)
{
    const size_t n = wk_gguf_type_size(type);
    if (n == 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_add: %s is not a scalar type (use "
                      "add_string / add_array)", wk_gguf_type_name(type));
    if (!value)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_add: NULL value");
    uint64_t bits = host_bits(value, n);
    if (type == WK_GGUF_TYPE_BOOL)
        bits = bits != 0;
    if (key && !(w && w->depth) && strcmp(key, "general.alignment") == 0 && type == WK_GGUF_TYPE_U32 &&
        (bits == 0 || (bits & (bits - 1)) != 0))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_add: general.alignment %llu is not "
                      "a power of two", (unsigned long long)bits);
    gw_mark m = w ? mark(w) : (gw_mark){0};
    wk_status st = begin_value(w, key, type, "wk_gguf_writer_add");
    if (st)
        return w ? undo(w, m, st) : st;
    if ((st = put_le(w, bits, n)))
        return undo(w, m, st);
    if (key && m.depth == 0 && strcmp(key, "general.alignment") == 0)
        w->alignment = (uint32_t)bits;
    return WK_OK;
}

static wk_status put_string(wk_gguf_writer *w, const char *s, uint64_t len)
{
    if (len > SIZE_MAX)
        return wk_err(WK_ERR_OVERFLOW, "wk_gguf_writer: string of %llu bytes", (unsigned long long)len);
    wk_status st = put_le(w, len, 8);
    return st ? st : put(w, s, (size_t)len);
}

wk_status wk_gguf_writer_add_string(wk_gguf_writer *w, const char *key, const char *s, uint64_t len)
{
    if (!s && len > 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_add_string: NULL string of %llu bytes",
                      (unsigned long long)len);
    gw_mark m = w ? mark(w) : (gw_mark){0};
    wk_status st = begin_value(w, key, WK_GGUF_TYPE_STRING, "wk_gguf_writer_add_string");
    if (st)
        return w ? undo(w, m, st) : st;
    if ((st = put_string(w, s, len)))
        return undo(w, m, st);
    return WK_OK;
}

wk_status wk_gguf_writer_begin_array(wk_gguf_writer *w, const char *key, wk_gguf_type elem_type)
{
    if ((unsigned)elem_type >= WK_GGUF_TYPE_COUNT)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_begin_array: unknown element type %d",
                      (int)elem_type);
    if (w && w->depth >= WK_GGUF_MAX_DEPTH)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_begin_array: arrays nested deeper "
                      "than %d", WK_GGUF_MAX_DEPTH);
    gw_mark m = w ? mark(w) : (gw_mark){0};
    wk_status st = begin_value(w, key, WK_GGUF_TYPE_ARRAY, "wk_gguf_writer_begin_array");
    if (st)
        return w ? undo(w, m, st) : st;
    if ((st = put_le(w, (uint64_t)elem_type, 4)))
        return undo(w, m, st);
    const size_t count_pos = w->len;
    if ((st = put_le(w, 0, 8)))
        return undo(w, m, st);
    w->open[w->depth++] = (gw_open){count_pos, 0, (uint32_t)elem_type};
    return WK_OK;
}

wk_status wk_gguf_writer_end_array(wk_gguf_writer *w)
{
    if (!w || w->depth == 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_end_array: %s", w ? "no open array" : "NULL writer");
    const gw_open *o = &w->open[--w->depth];
    le_store(w->buf + o->count_pos, o->count, 8);
    return WK_OK;
}

wk_status wk_gguf_writer_add_array(wk_gguf_writer *w, const char *key, wk_gguf_type elem_type,
                                   const void *elems, uint64_t count)
{
    const size_t n = wk_gguf_type_size(elem_type);
    if (n == 0 && elem_type != WK_GGUF_TYPE_STRING)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_add_array: elements of %s (arrays "
                      "of arrays: begin_array)", wk_gguf_type_name(elem_type));
    if (!elems && count > 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_add_array: NULL elements");
    const char *const *strs = elems;
    if (elem_type == WK_GGUF_TYPE_STRING)
        for (uint64_t i = 0; i < count; i++)
            if (!strs[i])
                return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_add_array: string %llu is NULL",
                              (unsigned long long)i);
    gw_mark m = w ? mark(w) : (gw_mark){0};
    wk_status st = wk_gguf_writer_begin_array(w, key, elem_type);
    if (st)
        return st;
    const uint8_t *p = elems;
    for (uint64_t i = 0; i < count && !st; i++) {
        w->open[w->depth - 1].count++;
        if (elem_type == WK_GGUF_TYPE_STRING) {
            st = put_string(w, strs[i], strlen(strs[i]));
        } else {
            uint64_t bits = host_bits(p + i * n, n);
            st = put_le(w, elem_type == WK_GGUF_TYPE_BOOL ? bits != 0 : bits, n);
        }
    }
    if (!st)
        st = wk_gguf_writer_end_array(w);
    return st ? undo(w, m, st) : WK_OK;
}

/* ------------------------------------------------------------------ tensors */
wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, wk_qtype qtype,
                                    int32_t n_dims, const int64_t *dims, const void *data,
                                    uint64_t nbytes)
{
    const char *fn = "wk_gguf_writer_add_tensor";
    if (!w || !name || (!dims && n_dims > 0))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, !w ? "writer" : !name ? "name" : "dims");
    if (w->depth)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: '%s' added while an array is open", fn, name);
    if (strlen(name) >= GW_MAX_NAME)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: name '%s' has %zu bytes (ggml allows at most %d)",
                      fn, name, strlen(name), GW_MAX_NAME - 1);
    const int64_t be = wk_qtype_block_elems(qtype);
    if (be == 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: '%s': unknown qtype %d", fn, name, (int)qtype);
    if (n_dims < 1 || n_dims > WK_GGUF_MAX_DIMS)
        return wk_err(WK_ERR_SHAPE, "%s: '%s': %d dims (1..%d)", fn, name, n_dims, WK_GGUF_MAX_DIMS);
    gw_tensor t = {.n_dims = n_dims, .qtype = qtype, .data = data, .nbytes = nbytes};
    int64_t elems = 1;
    for (int k = 0; k < WK_GGUF_MAX_DIMS; k++)
        t.ne[k] = k < n_dims ? dims[n_dims - 1 - k] : 1;
    for (int k = 0; k < n_dims; k++) {
        if (dims[k] < 1)
            return wk_err(WK_ERR_SHAPE, "%s: '%s': dim %d is %lld (must be >= 1)", fn, name, k,
                          (long long)dims[k]);
        if (__builtin_mul_overflow(elems, dims[k], &elems))
            return wk_err(WK_ERR_OVERFLOW, "%s: '%s': element count overflows", fn, name);
    }
    if (t.ne[0] % be != 0)
        return wk_err(WK_ERR_SHAPE, "%s: '%s': innermost dim %lld is not a multiple of the %s block "
                      "(%lld)", fn, name, (long long)t.ne[0], wk_qtype_name(qtype), (long long)be);
    uint64_t want;
    if (__builtin_mul_overflow((uint64_t)(elems / be), (uint64_t)wk_qtype_block_bytes(qtype), &want))
        return wk_err(WK_ERR_OVERFLOW, "%s: '%s': byte size overflows", fn, name);
    if (nbytes != want)
        return wk_err(WK_ERR_SHAPE, "%s: '%s': %llu bytes given, %s of %lld elements take %llu", fn,
                      name, (unsigned long long)nbytes, wk_qtype_name(qtype), (long long)elems,
                      (unsigned long long)want);
    if (!data && nbytes > 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: '%s': NULL data", fn, name);
    size_t tcap = (size_t)w->t_cap;
    wk_status st = reserve((void **)&w->t, &tcap, (size_t)w->nt + 1, sizeof *w->t);
    w->t_cap = (int64_t)tcap;
    if (st || (st = put_name(w, name, &t.name)))
        return st;
    w->t[w->nt++] = t;
    return WK_OK;
}

/* ------------------------------------------------------------------ new, free, duplicates */
wk_status wk_gguf_writer_new(wk_gguf_writer **out)
{
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_new: NULL output");
    wk_gguf_writer *w = wk_calloc(1, sizeof *w);
    if (!w)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_gguf_writer_new: out of memory");
    w->alignment = WK_GGUF_DEFAULT_ALIGNMENT;
    wk_live_add(1);
    *out = w;
    return WK_OK;
}

void wk_gguf_writer_free(wk_gguf_writer *w)
{
    if (!w)
        return;
    wk_free(w->buf);
    wk_free(w->names);
    wk_free(w->keys);
    wk_free(w->t);
    wk_free(w);
    wk_live_add(-1);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fails if two keys (is_kv) or two tensor names are equal: sort, compare neighbours. */
static wk_status no_duplicates(const wk_gguf_writer *w, int is_kv)
{
    const int64_t n = is_kv ? w->nkv : w->nt;
    if (n < 2)
        return WK_OK;
    const char **v = wk_malloc((size_t)n * sizeof *v);
    if (!v)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_gguf_writer_write: out of memory");
    for (int64_t i = 0; i < n; i++)
        v[i] = w->names + (is_kv ? w->keys[i] : w->t[i].name);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    wk_status st = WK_OK;
    for (int64_t i = 1; i < n && !st; i++)
        if (strcmp(v[i - 1], v[i]) == 0)
            st = wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_write: duplicate %s '%s'",
                        is_kv ? "key" : "tensor name", v[i]);
    wk_free(v);
    return st;
}

/* ------------------------------------------------------------------ the file */
static wk_status put_le_file(wk_atomic_file *f, uint64_t v, size_t n)
{
    uint8_t b[8];
    le_store(b, v, n);
    return wk_atomic_file_write(f, b, n);
}

static uint64_t pad_to(uint64_t x, uint64_t a) { return (a - x % a) % a; }

/* Header, kv pairs, tensor infos, padding, data. The first failure is kept in f (commit
 * reports it), so the status of each piece need not be checked. */
static void write_all(const wk_gguf_writer *w, wk_atomic_file *f, uint32_t version)
{
    const uint64_t a = w->alignment;
    uint64_t pos = 0, off = 0;
    wk_atomic_file_write(f, "GGUF", 4);
    put_le_file(f, version, 4);
    put_le_file(f, (uint64_t)w->nt, 8);
    put_le_file(f, (uint64_t)w->nkv, 8);
    wk_atomic_file_write(f, w->buf, w->len);
    pos = 24 + w->len;
    for (int64_t i = 0; i < w->nt; i++) {
        const gw_tensor *t = &w->t[i];
        const char *name = w->names + t->name;
        const size_t len = strlen(name);
        put_le_file(f, len, 8);
        wk_atomic_file_write(f, name, len);
        put_le_file(f, (uint64_t)t->n_dims, 4);
        for (int k = 0; k < t->n_dims; k++)
            put_le_file(f, (uint64_t)t->ne[k], 8);
        put_le_file(f, (uint64_t)t->qtype, 4);
        put_le_file(f, off, 8);
        pos += 8 + len + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
        off += t->nbytes + pad_to(t->nbytes, a);
    }
    wk_atomic_file_zeros(f, pad_to(pos, a));
    for (int64_t i = 0; i < w->nt; i++) {
        const gw_tensor *t = &w->t[i];
        wk_atomic_file_write(f, t->data, (size_t)t->nbytes);
        wk_atomic_file_zeros(f, pad_to(t->nbytes, a));
    }
}

wk_status wk_gguf_writer_write(const wk_gguf_writer *w, const char *path, uint32_t version)
{
    if (!w || !path)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_write: NULL %s", w ? "path" : "writer");
    if (version != 2 && version != 3)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_write: version %u (2 or 3)", version);
    if (w->depth)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_gguf_writer_write: %d arrays still open", w->depth);
    wk_status st = no_duplicates(w, 1);
    if (!st)
        st = no_duplicates(w, 0);
    if (st)
        return st;
    /* the data section must be addressable: sum of padded sizes without overflow */
    uint64_t total = 0;
    for (int64_t i = 0; i < w->nt; i++) {
        const uint64_t n = w->t[i].nbytes, p = pad_to(n, w->alignment);
        if (__builtin_add_overflow(total, n, &total) || __builtin_add_overflow(total, p, &total))
            return wk_err(WK_ERR_OVERFLOW, "wk_gguf_writer_write: data section overflows");
    }
    wk_atomic_file *f = NULL;
    if ((st = wk_atomic_file_open(&f, path, "wk_gguf_writer_write")))
        return st;
    write_all(w, f, version);
    return wk_atomic_file_commit(f);
}
