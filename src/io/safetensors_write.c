/* safetensors_write.c: the safetensors writer. Collects metadata pairs and tensors (their bytes
 * referenced, not copied), then writes what the Python package writes for the same content, byte
 * for byte: tensors sorted by dtype (the reference implementation's Dtype order, largest first)
 * then by name, packed without gaps in that order; the header is compact JSON built with jansson
 * ("__metadata__" first, then the tensors in data order, each {"dtype", "shape",
 * "data_offsets"}), padded with spaces so that the data section starts at a multiple of 8 bytes.
 * (Metadata with several keys comes out in insertion order; the Rust writer's order is its hash
 * map's, so only files with at most one metadata key can be compared byte for byte.)
 * jansson's JSON tree uses its own allocator (see safetensors.c); the header bytes and wick's
 * tables go through the allocation hook. The bytes go to a temporary file that then replaces the
 * destination (atomic_file.c). */
#include "wk_core.h"
#include "st_dtypes.h"
#include "atomic_file.h"
#include <jansson.h>
#include <string.h>

typedef struct stw_tensor {
    char *name;
    int dt; /* index into st_dtypes */
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    const void *data;
    uint64_t nbytes;
} stw_tensor;

struct wk_safetensors_writer {
    stw_tensor *t;
    int64_t nt, t_cap;
    char **meta; /* key, value, key, value, ... (owned) */
    int64_t nmeta, meta_cap;
};

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = wk_malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* 1 if s is valid UTF-8 as JSON needs it (no overlongs, no surrogates, <= U+10FFFF); jansson
 * refuses the rest, and a name must not reach the file that the reader would refuse. */
static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p, n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2
                                         : (c & 0xF8) == 0xF0 ? 3 : 9;
        if (n == 9)
            return 0;
        unsigned cp = n == 0 ? c : c & (0x3Fu >> n);
        for (unsigned k = 1; k <= n; k++) {
            if ((p[k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[k] & 0x3Fu);
        }
        static const unsigned min[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        p += n + 1;
    }
    return 1;
}

static wk_status grow(void **p, int64_t *cap, int64_t need, size_t elsize)
{
    if (need <= *cap)
        return WK_OK;
    int64_t nc = *cap ? *cap * 2 : 16;
    void *q = wk_malloc((size_t)nc * elsize);
    if (!q)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_safetensors_writer: out of memory");
    if (*cap)
        memcpy(q, *p, (size_t)*cap * elsize);
    wk_free(*p);
    *p = q;
    *cap = nc;
    return WK_OK;
}

wk_status wk_safetensors_writer_new(wk_safetensors_writer **out)
{
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_writer_new: NULL output");
    *out = wk_calloc(1, sizeof **out);
    return *out ? WK_OK : wk_err(WK_ERR_OUT_OF_MEMORY, "wk_safetensors_writer_new: out of memory");
}

void wk_safetensors_writer_free(wk_safetensors_writer *w)
{
    if (!w)
        return;
    for (int64_t i = 0; i < w->nt; i++)
        wk_free(w->t[i].name);
    for (int64_t i = 0; i < 2 * w->nmeta; i++)
        wk_free(w->meta[i]);
    wk_free(w->t);
    wk_free(w->meta);
    wk_free(w);
}

wk_status wk_safetensors_writer_add_metadata(wk_safetensors_writer *w, const char *key,
                                             const char *value)
{
    if (!w || !key || !value)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_writer_add_metadata: NULL argument");
    if (!utf8_ok(key) || !utf8_ok(value))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_writer_add_metadata: key or value "
                      "is not valid UTF-8");
    for (int64_t i = 0; i < w->nmeta; i++)
        if (strcmp(w->meta[2 * i], key) == 0)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_writer_add_metadata: duplicate "
                          "key '%s'", key);
    wk_status s = grow((void **)&w->meta, &w->meta_cap, 2 * (w->nmeta + 1), sizeof *w->meta);
    if (s)
        return s;
    char *k = dup_str(key), *v = dup_str(value);
    if (!k || !v) {
        wk_free(k);
        wk_free(v);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_safetensors_writer_add_metadata: out of memory");
    }
    w->meta[2 * w->nmeta] = k;
    w->meta[2 * w->nmeta + 1] = v;
    w->nmeta++;
    return WK_OK;
}

wk_status wk_safetensors_writer_add_tensor(wk_safetensors_writer *w, const char *name,
                                           wk_dtype dtype, int32_t rank, const int64_t *dims,
                                           const void *data, uint64_t nbytes)
{
    static const char *fn = "wk_safetensors_writer_add_tensor";
    if (!w || !name || (rank > 0 && !dims) || (nbytes > 0 && !data))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (!utf8_ok(name) || strcmp(name, "__metadata__") == 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: name '%s' is not valid UTF-8 or is reserved", fn,
                      name);
    if (!wk_dtype_valid(dtype))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: '%s': unknown dtype %d", fn, name, (int)dtype);
    if (rank < 0 || rank > WK_MAX_RANK)
        return wk_err(WK_ERR_SHAPE, "%s: '%s': rank %d (0..%d)", fn, name, rank, WK_MAX_RANK);
    uint64_t elems = 1;
    bool empty = false;
    for (int32_t k = 0; k < rank; k++) {
        if (dims[k] < 0)
            return wk_err(WK_ERR_SHAPE, "%s: '%s': dim %d is %lld", fn, name, k, (long long)dims[k]);
        empty = empty || dims[k] == 0;
    }
    for (int32_t k = 0; k < rank && !empty; k++) {
        if (elems > (uint64_t)INT64_MAX / (uint64_t)dims[k] / 8)
            return wk_err(WK_ERR_OVERFLOW, "%s: '%s': element count overflows", fn, name);
        elems *= (uint64_t)dims[k];
    }
    if (empty)
        elems = 0;
    if (elems * wk_dtype_size(dtype) != nbytes)
        return wk_err(WK_ERR_SHAPE, "%s: '%s': %llu elements of %s are %llu bytes, not %llu", fn, name,
                      (unsigned long long)elems, wk_dtype_name(dtype),
                      (unsigned long long)(elems * wk_dtype_size(dtype)), (unsigned long long)nbytes);
    for (int64_t i = 0; i < w->nt; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: duplicate name '%s'", fn, name);
    wk_status s = grow((void **)&w->t, &w->t_cap, w->nt + 1, sizeof *w->t);
    if (s)
        return s;
    stw_tensor *t = &w->t[w->nt];
    memset(t, 0, sizeof *t);
    if (!(t->name = dup_str(name)))
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    t->dt = st_dtype_of_wick(dtype);
    t->rank = rank;
    for (int32_t k = 0; k < rank; k++)
        t->dims[k] = dims[k];
    t->data = data;
    t->nbytes = nbytes;
    w->nt++;
    return WK_OK;
}

/* ------------------------------------------------------------------ writing */
/* The reference writer's order: larger Dtype order first, then names by bytes. */
static int before(const stw_tensor *a, const stw_tensor *b)
{
    if (st_dtypes[a->dt].order != st_dtypes[b->dt].order)
        return st_dtypes[a->dt].order > st_dtypes[b->dt].order;
    return strcmp(a->name, b->name) < 0;
}

/* The JSON header (not padded) as a jansson tree; order[] gives the tensors in data order. */
static json_t *header_json(const wk_safetensors_writer *w, const int64_t *order)
{
    json_t *root = json_object();
    int bad = !root;
    if (!bad && w->nmeta > 0) {
        json_t *m = json_object();
        bad = json_object_set_new(root, "__metadata__", m) != 0;
        for (int64_t i = 0; !bad && i < w->nmeta; i++)
            bad = json_object_set_new(m, w->meta[2 * i], json_string(w->meta[2 * i + 1])) != 0;
    }
    uint64_t at = 0;
    for (int64_t i = 0; !bad && i < w->nt; i++) {
        const stw_tensor *t = &w->t[order[i]];
        json_t *e = json_object(), *shape = json_array(), *offs = json_array();
        bad = json_object_set_new(root, t->name, e) != 0;
        bad = bad || json_object_set_new(e, "dtype", json_string(st_dtypes[t->dt].name)) != 0;
        bad = bad || json_object_set_new(e, "shape", shape) != 0;
        bad = bad || json_object_set_new(e, "data_offsets", offs) != 0;
        for (int32_t k = 0; !bad && k < t->rank; k++)
            bad = json_array_append_new(shape, json_integer((json_int_t)t->dims[k])) != 0;
        bad = bad || json_array_append_new(offs, json_integer((json_int_t)at)) != 0;
        bad = bad || json_array_append_new(offs, json_integer((json_int_t)(at + t->nbytes))) != 0;
        at += t->nbytes;
    }
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* *out (wk_malloc'd, *len bytes): the 8-byte length and the padded header. */
static wk_status header_bytes(uint8_t **out, size_t *len, const wk_safetensors_writer *w,
                              const int64_t *order)
{
    json_t *root = header_json(w, order);
    if (!root)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_safetensors_writer_write: out of memory (header)");
    const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
    size_t n = json_dumpb(root, NULL, 0, flags);
    size_t pad = (8 - (8 + n) % 8) % 8;
    uint8_t *p = n ? wk_malloc(8 + n + pad) : NULL;
    if (!p || json_dumpb(root, (char *)p + 8, n, flags) != n) {
        json_decref(root);
        wk_free(p);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_safetensors_writer_write: out of memory (header)");
    }
    json_decref(root);
    memset(p + 8 + n, ' ', pad);
    uint64_t hl = n + pad;
    for (int k = 0; k < 8; k++)
        p[k] = (uint8_t)(hl >> (8 * k));
    *out = p;
    *len = 8 + n + pad;
    return WK_OK;
}

wk_status wk_safetensors_writer_write(const wk_safetensors_writer *w, const char *path)
{
    if (!w || !path)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_writer_write: NULL %s",
                      w ? "path" : "writer");
    int64_t *order = wk_malloc((size_t)(w->nt ? w->nt : 1) * sizeof *order);
    if (!order)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_safetensors_writer_write: out of memory");
    for (int64_t i = 0; i < w->nt; i++) { /* insertion sort: writers hold few tensors */
        int64_t j = i;
        while (j > 0 && before(&w->t[i], &w->t[order[j - 1]])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    uint8_t *head = NULL;
    size_t hlen = 0;
    wk_status s = header_bytes(&head, &hlen, w, order);
    if (s) {
        wk_free(order);
        return s;
    }
    wk_atomic_file *f = NULL;
    s = wk_atomic_file_open(&f, path, "wk_safetensors_writer_write");
    if (s == WK_OK) {
        wk_atomic_file_write(f, head, hlen);
        for (int64_t i = 0; i < w->nt; i++) /* the first failure is kept in f */
            wk_atomic_file_write(f, w->t[order[i]].data, (size_t)w->t[order[i]].nbytes);
        s = wk_atomic_file_commit(f);
    }
    wk_free(head);
    wk_free(order);
    return s;
}
