/* safetensors.c: the safetensors reader. The file is mapped read-only; the JSON header is parsed
 * by jansson (Debian's libjansson) and checked the way the reference implementation (the Rust
 * crate behind the Python package) checks it, before any tensor byte is touched:
 *   - the 8-byte little-endian header length N: at most 100,000,000 and inside the file;
 *   - the header: starts with '{', valid UTF-8 JSON (jansson validates the encoding), no
 *     duplicate keys (JSON_REJECT_DUPLICATES), an object of tensor entries plus an optional
 *     "__metadata__" object of string values;
 *   - each tensor: a known dtype, a shape of non-negative integers whose byte size (without
 *     overflow) equals end - begin of its data_offsets;
 *   - together: sorted by offsets, the tensors tile the data section exactly (the first starts at
 *     0, each starts where the previous ends, the last ends at the end of the file).
 * A bad file gives WK_ERR_FORMAT naming the tensor and the field. The writer is
 * safetensors_write.c; the rules are in docs/semantics.md ("safetensors files").
 *
 * Allocation: wick's tables go through the allocation hook. jansson's parse tree uses jansson's
 * own allocator (malloc): json_set_alloc_funcs is process-global, so setting it would take over
 * the allocator of any other jansson user in the process. The tree is freed before open returns. */
#include "wk_core.h"
#include "st_dtypes.h"
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER 100000000ull /* the reference implementation's limit */

typedef unsigned long long ull;

typedef struct st_tensor {
    const char *name;  /* in the arena */
    int dt;            /* index into st_dtypes */
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    int64_t elems;
    uint64_t begin, end;
} st_tensor;

struct wk_safetensors {
    const uint8_t *map;
    uint64_t size, data_off;
    st_tensor *t;      /* in data order */
    int64_t nt;
    int64_t *by_name;  /* indices of t sorted by name */
    const char **meta; /* key, value, key, value, ... in the arena */
    int64_t nmeta;
    char *arena;
};

/* ------------------------------------------------------------------ mapping */
static void st_free(wk_safetensors *st)
{
    if (st->map)
        munmap((void *)st->map, (size_t)st->size);
    wk_free(st->t);
    wk_free(st->by_name);
    wk_free(st->meta);
    wk_free(st->arena);
    wk_free(st);
}

static wk_status map_file(wk_safetensors *st, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return wk_err(WK_ERR_IO, "wk_safetensors_open: cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return wk_err(WK_ERR_IO, "wk_safetensors_open: '%s' is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX || (uint64_t)sb.st_size > (uint64_t)INT64_MAX / 2) {
        close(fd);
        return wk_err(WK_ERR_IO, "wk_safetensors_open: '%s' is too large to map", path);
    }
    st->size = (uint64_t)sb.st_size;
    if (st->size > 0) {
        void *m = mmap(NULL, (size_t)st->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            return wk_err(WK_ERR_IO, "wk_safetensors_open: cannot map '%s': %s", path, strerror(e));
        }
        st->map = m;
    }
    close(fd);
    return WK_OK;
}

/* ------------------------------------------------------------------ header checks */
/* *v: a JSON integer in [0, INT64_MAX]. */
static wk_status get_count(int64_t *v, const json_t *j, const char *tname, const char *field)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': %s must hold non-negative integers", tname, field);
    *v = (int64_t)json_integer_value(j);
    return WK_OK;
}

/* t <- the entry `name` (a JSON object), checked on its own (offsets against data_len). */
static wk_status parse_tensor(st_tensor *t, const char *name, const json_t *e, uint64_t data_len)
{
    if (!json_is_object(e))
        return wk_err(WK_ERR_FORMAT, "tensor '%s': entry is not a JSON object", name);
    const json_t *jd = json_object_get(e, "dtype"), *js = json_object_get(e, "shape"),
                 *jo = json_object_get(e, "data_offsets");
    if (!jd || !js || !jo)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': missing \"%s\"", name,
                      !jd ? "dtype" : !js ? "shape" : "data_offsets");
    if (!json_is_string(jd))
        return wk_err(WK_ERR_FORMAT, "tensor '%s': dtype is not a string", name);
    t->dt = st_dtype_find(json_string_value(jd));
    if (t->dt < 0)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': unknown dtype \"%.32s\"", name,
                      json_string_value(jd));
    if (!json_is_array(js))
        return wk_err(WK_ERR_FORMAT, "tensor '%s': shape is not an array", name);
    size_t rank = json_array_size(js);
    if (rank > WK_MAX_RANK)
        return wk_err(WK_ERR_NOT_SUPPORTED, "tensor '%s': rank %zu (wick's limit is %d)", name,
                      rank, WK_MAX_RANK);
    t->rank = (int32_t)rank;
    for (int k = 0; k < WK_MAX_RANK; k++)
        t->dims[k] = 1;
    bool empty = false;
    for (size_t k = 0; k < rank; k++) {
        wk_status s = get_count(&t->dims[k], json_array_get(js, k), name, "shape");
        if (s)
            return s;
        empty = empty || t->dims[k] == 0;
    }
    uint64_t elems = empty ? 0 : 1;
    for (size_t k = 0; k < rank && !empty; k++) {
        uint64_t d = (uint64_t)t->dims[k];
        if (elems > (uint64_t)INT64_MAX / d)
            return wk_err(WK_ERR_FORMAT, "tensor '%s': element count of its shape overflows", name);
        elems *= d;
    }
    t->elems = (int64_t)elems;
    if (!json_is_array(jo) || json_array_size(jo) != 2)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': data_offsets is not an array of 2", name);
    int64_t b = 0, en = 0;
    wk_status s = get_count(&b, json_array_get(jo, 0), name, "data_offsets");
    if (!s)
        s = get_count(&en, json_array_get(jo, 1), name, "data_offsets");
    if (s)
        return s;
    t->begin = (uint64_t)b;
    t->end = (uint64_t)en;
    if (t->end < t->begin || t->end > data_len)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': data_offsets [%llu, %llu] out of range (data "
                      "section of %llu bytes)", name, (ull)t->begin, (ull)t->end, (ull)data_len);
    uint64_t bits = (uint64_t)st_dtypes[t->dt].bits;
    if (elems > UINT64_MAX / bits || (elems * bits) % 8 != 0 || elems * bits / 8 != t->end - t->begin)
        return wk_err(WK_ERR_FORMAT, "tensor '%s': %llu elements of %s do not fill data_offsets "
                      "[%llu, %llu] (%llu bytes)", name, (ull)elems, st_dtypes[t->dt].name,
                      (ull)t->begin, (ull)t->end, (ull)(t->end - t->begin));
    return WK_OK;
}

static int cmp_offsets(const void *pa, const void *pb)
{
    const st_tensor *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The tensors, sorted by offsets, must tile [0, data_len). */
static wk_status check_tiling(const wk_safetensors *st, uint64_t data_len)
{
    uint64_t at = 0;
    for (int64_t i = 0; i < st->nt; i++) {
        const st_tensor *t = &st->t[i];
        if (t->begin < at)
            return wk_err(WK_ERR_FORMAT, "tensor '%s': data_offsets [%llu, %llu] overlap tensor "
                          "'%s'", t->name, (ull)t->begin, (ull)t->end, st->t[i - 1].name);
        if (t->begin > at)
            return wk_err(WK_ERR_FORMAT, "tensor '%s': data_offsets [%llu, %llu] leave a gap "
                          "after byte %llu", t->name, (ull)t->begin, (ull)t->end, (ull)at);
        at = t->end;
    }
    if (at != data_len)
        return wk_err(WK_ERR_FORMAT, "the tensors end at byte %llu of a data section of %llu bytes",
                      (ull)at, (ull)data_len);
    return WK_OK;
}

/* idx[0..n) <- sorted by the names of t (a merge sort on indices: qsort's comparator could not
 * reach t without global state). tmp holds n entries. */
static void sort_by_name(int64_t *idx, int64_t *tmp, int64_t n, const st_tensor *t)
{
    if (n < 2)
        return;
    int64_t h = n / 2;
    sort_by_name(idx, tmp, h, t);
    sort_by_name(idx + h, tmp, n - h, t);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = strcmp(t[idx[j]].name, t[idx[i]].name) < 0 ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

/* Copies s (NUL-terminated) into the arena at *used; returns the copy. */
static const char *arena_put(wk_safetensors *st, size_t *used, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = st->arena + *used;
    memcpy(p, s, n);
    *used += n;
    return p;
}

static wk_status build(wk_safetensors *st, const json_t *root, uint64_t data_len)
{
    const json_t *meta = json_object_get(root, "__metadata__");
    size_t nt = json_object_size(root) - (meta ? 1 : 0), nm = 0, bytes = 0;
    const char *key;
    const json_t *v;
    if (meta) {
        if (!json_is_object(meta))
            return wk_err(WK_ERR_FORMAT, "__metadata__ is not a JSON object");
        json_object_foreach((json_t *)meta, key, v) {
            if (!json_is_string(v))
                return wk_err(WK_ERR_FORMAT, "__metadata__ value of '%s' is not a string", key);
            bytes += strlen(key) + json_string_length(v) + 2;
            nm++;
        }
    }
    json_object_foreach((json_t *)root, key, v)
        bytes += strlen(key) + 1;
    st->t = wk_calloc(nt ? nt : 1, sizeof *st->t);
    st->by_name = wk_calloc(2 * (nt ? nt : 1), sizeof *st->by_name);
    st->meta = wk_calloc(2 * (nm ? nm : 1), sizeof *st->meta);
    st->arena = wk_malloc(bytes ? bytes : 1);
    if (!st->t || !st->by_name || !st->meta || !st->arena)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "out of memory for the index of %zu tensors", nt);
    size_t used = 0;
    if (meta) {
        json_object_foreach((json_t *)meta, key, v) {
            st->meta[2 * st->nmeta] = arena_put(st, &used, key);
            st->meta[2 * st->nmeta + 1] = arena_put(st, &used, json_string_value(v));
            st->nmeta++;
        }
    }
    json_object_foreach((json_t *)root, key, v) {
        if (v == meta)
            continue;
        st_tensor *t = &st->t[st->nt];
        wk_status s = parse_tensor(t, key, v, data_len);
        if (s)
            return s;
        t->name = arena_put(st, &used, key);
        st->nt++;
    }
    qsort(st->t, (size_t)st->nt, sizeof *st->t, cmp_offsets);
    wk_status s = check_tiling(st, data_len);
    if (s)
        return s;
    for (int64_t i = 0; i < st->nt; i++)
        st->by_name[i] = i;
    sort_by_name(st->by_name, st->by_name + st->nt, st->nt, st->t);
    return WK_OK;
}

static wk_status parse(wk_safetensors *st)
{
    if (st->size < 8)
        return wk_err(WK_ERR_FORMAT, "file of %llu bytes is shorter than the 8-byte header length",
                      (ull)st->size);
    uint64_t n = 0;
    for (int k = 0; k < 8; k++)
        n |= (uint64_t)st->map[k] << (8 * k);
    if (n > ST_MAX_HEADER)
        return wk_err(WK_ERR_FORMAT, "header length %llu is over the limit of %llu bytes", (ull)n,
                      ST_MAX_HEADER);
    if (n > st->size - 8)
        return wk_err(WK_ERR_FORMAT, "header length %llu runs past the end of the file (%llu bytes "
                      "after the length)", (ull)n, (ull)(st->size - 8));
    if (n == 0 || st->map[8] != '{')
        return wk_err(WK_ERR_FORMAT, "header does not start with '{'");
    json_error_t je;
    json_t *root = json_loadb((const char *)st->map + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return wk_err(WK_ERR_FORMAT, "header JSON, at byte %llu: %s", (ull)(8 + (uint64_t)je.position),
                      je.text);
    st->data_off = 8 + n;
    wk_status s = json_is_object(root) ? build(st, root, st->size - st->data_off)
                                       : wk_err(WK_ERR_FORMAT, "header is not a JSON object");
    json_decref(root);
    return s;
}

/* ------------------------------------------------------------------ public: open, query */
wk_status wk_safetensors_open(wk_safetensors **out, const char *path)
{
    if (!out || !path)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_open: NULL %s", out ? "path" : "output");
    *out = NULL;
    wk_safetensors *st = wk_calloc(1, sizeof *st);
    if (!st)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_safetensors_open: out of memory");
    wk_status s = map_file(st, path);
    if (!s && (s = parse(st))) {
        char msg[768];
        snprintf(msg, sizeof msg, "%s", wk_last_error());
        wk_err(s, "wk_safetensors_open: '%s': %s", path, msg);
    }
    if (s) {
        st_free(st);
        return s;
    }
    wk_live_add(1);
    *out = st;
    return WK_OK;
}

void wk_safetensors_close(wk_safetensors *st)
{
    if (!st)
        return;
    st_free(st);
    wk_live_add(-1);
}

uint64_t wk_safetensors_file_size(const wk_safetensors *st) { return st ? st->size : 0; }
uint64_t wk_safetensors_data_offset(const wk_safetensors *st) { return st ? st->data_off : 0; }
int64_t wk_safetensors_tensor_count(const wk_safetensors *st) { return st ? st->nt : 0; }
int64_t wk_safetensors_metadata_count(const wk_safetensors *st) { return st ? st->nmeta : 0; }

wk_status wk_safetensors_tensor_info_get(wk_safetensors_tensor_info *out, const wk_safetensors *st,
                                         int64_t i)
{
    if (!out || !st)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_tensor_info_get: NULL %s",
                      out ? "file" : "output");
    if (i < 0 || i >= st->nt)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_safetensors_tensor_info_get: tensor %lld of %lld",
                      (long long)i, (long long)st->nt);
    const st_tensor *t = &st->t[i];
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype_name = st_dtypes[t->dt].name;
    out->has_dtype = st_dtypes[t->dt].wick >= 0;
    out->dtype = out->has_dtype ? (wk_dtype)st_dtypes[t->dt].wick : WK_DTYPE_U8;
    out->rank = t->rank;
    memcpy(out->dims, t->dims, sizeof out->dims);
    out->elems = t->elems;
    out->offset = t->begin;
    out->nbytes = t->end - t->begin;
    return WK_OK;
}

int64_t wk_safetensors_find_tensor(const wk_safetensors *st, const char *name)
{
    if (!st || !name)
        return -1;
    int64_t lo = 0, hi = st->nt;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->t[st->by_name[mid]].name, name);
        if (c == 0)
            return st->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

const void *wk_safetensors_tensor_data(const wk_safetensors *st, int64_t i)
{
    if (!st || i < 0 || i >= st->nt)
        return NULL;
    return st->map + st->data_off + st->t[i].begin;
}

wk_status wk_safetensors_metadata_get(const char **key, const char **value,
                                      const wk_safetensors *st, int64_t i)
{
    if (!key || !value || !st)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_metadata_get: NULL argument");
    if (i < 0 || i >= st->nmeta)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_safetensors_metadata_get: pair %lld of %lld",
                      (long long)i, (long long)st->nmeta);
    *key = st->meta[2 * i];
    *value = st->meta[2 * i + 1];
    return WK_OK;
}

const char *wk_safetensors_metadata_find(const wk_safetensors *st, const char *key)
{
    if (!st || !key)
        return NULL;
    for (int64_t i = 0; i < st->nmeta; i++)
        if (strcmp(st->meta[2 * i], key) == 0)
            return st->meta[2 * i + 1];
    return NULL;
}

wk_status wk_safetensors_load_tensor(wk_storage **out, const wk_safetensors *st, int64_t i,
                                     wk_device *dev, wk_dtype to)
{
    if (!out || !st || !dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_load_tensor: NULL %s",
                      !out ? "output" : !st ? "file" : "device");
    *out = NULL;
    if (i < 0 || i >= st->nt)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_safetensors_load_tensor: tensor %lld of %lld",
                      (long long)i, (long long)st->nt);
    if (!wk_dtype_valid(to))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_safetensors_load_tensor: unknown dtype %d", (int)to);
    const st_tensor *t = &st->t[i];
    int wd = st_dtypes[t->dt].wick;
    if (wd < 0)
        return wk_err(WK_ERR_NOT_SUPPORTED, "wk_safetensors_load_tensor: tensor '%s' has dtype %s, "
                      "which wick does not have", t->name, st_dtypes[t->dt].name);
    if ((uint64_t)t->elems > SIZE_MAX)
        return wk_err(WK_ERR_OVERFLOW, "wk_safetensors_load_tensor: tensor '%s' is too large", t->name);
    const void *src = st->map + st->data_off + t->begin;
    wk_storage *raw = NULL;
    wk_status s = wk_storage_from_host(&raw, dev, (wk_dtype)wd, src, (size_t)t->elems);
    if (s || (wk_dtype)wd == to) {
        *out = raw;
        return s;
    }
    wk_layout l;
    int64_t n = t->elems;
    wk_layout_contiguous(&l, 1, &n);
    s = wk_to_dtype(out, raw, &l, to);
    wk_storage_free(raw);
    return s;
}
