/* fuzz_safetensors.c: the safetensors reader on fuzzer-made files. The input is the whole file,
 * opened through the public API (wk_safetensors_open on an in-memory file); when the open
 * succeeds, every metadata pair and tensor is walked and every tensor wick has a dtype for is
 * loaded on the CPU. Contracts checked besides memory safety (ASan/UBSan): a failed open sets no
 * handle and gives WK_ERR_FORMAT, WK_ERR_NOT_SUPPORTED (rank past WK_MAX_RANK) or
 * WK_ERR_OUT_OF_MEMORY (the harness's allocation cap) with a message; the tensors tile the data
 * section in order (each begins where the previous ends, the last at the end of the file); names
 * and metadata keys find themselves; nbytes is elements x dtype size; a loaded tensor holds
 * exactly the file's bytes. */
#include "fuzz.h"
#include <string.h>

static wk_device *g_cpu;
static volatile unsigned g_sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_cap_allocations((size_t)64 << 20);
    if (wk_device_open(&g_cpu, "cpu") != WK_OK)
        abort();
    return 0;
}

static void walk_metadata(const wk_safetensors *st)
{
    const int64_t n = wk_safetensors_metadata_count(st);
    FUZZ_CHECK(n >= 0, "metadata count %lld", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        const char *k = NULL, *v = NULL;
        FUZZ_CHECK(wk_safetensors_metadata_get(&k, &v, st, i) == WK_OK, "metadata %lld", (long long)i);
        FUZZ_CHECK(k && v, "metadata pair %lld", (long long)i);
        const char *found = wk_safetensors_metadata_find(st, k);
        FUZZ_CHECK(found != NULL, "metadata key '%s' not found", k);
        g_sink += (unsigned)strlen(found) + (unsigned)strlen(v);
    }
    const char *k, *v;
    FUZZ_CHECK(wk_safetensors_metadata_get(&k, &v, st, n) != WK_OK, "metadata past the end");
}

static void walk_tensors(const wk_safetensors *st, uint64_t fsize)
{
    const int64_t nt = wk_safetensors_tensor_count(st);
    const uint64_t base = wk_safetensors_data_offset(st);
    FUZZ_CHECK(base >= 8 && base <= fsize, "data offset %llu of %llu", (unsigned long long)base,
               (unsigned long long)fsize);
    uint64_t next = 0;
    for (int64_t i = 0; i < nt; i++) {
        wk_safetensors_tensor_info ti;
        FUZZ_CHECK(wk_safetensors_tensor_info_get(&ti, st, i) == WK_OK, "tensor info %lld", (long long)i);
        FUZZ_CHECK(wk_safetensors_find_tensor(st, ti.name) == i, "tensor '%s' does not find itself",
                   ti.name);
        FUZZ_CHECK(ti.rank >= 0 && ti.rank <= WK_MAX_RANK, "rank %d", ti.rank);
        FUZZ_CHECK(ti.offset == next, "tensor '%s' at %llu, the previous ends at %llu", ti.name,
                   (unsigned long long)ti.offset, (unsigned long long)next);
        FUZZ_CHECK(ti.nbytes <= fsize - base - ti.offset, "tensor '%s' past the end", ti.name);
        next = ti.offset + ti.nbytes;
        int64_t elems = 1;
        for (int k = 0; k < ti.rank; k++) {
            FUZZ_CHECK(ti.dims[k] >= 0, "dim %d", k);
            elems = ti.dims[k] == 0 || elems == 0 ? 0 : elems * ti.dims[k];
        }
        FUZZ_CHECK(elems == ti.elems, "elems %lld, product %lld", (long long)ti.elems,
                   (long long)elems);
        const unsigned char *data = wk_safetensors_tensor_data(st, i);
        FUZZ_CHECK(data != NULL || ti.nbytes == 0, "tensor data");
        for (uint64_t b = 0; b < ti.nbytes; b += 61) /* touch the bytes (outside the map: SEGV) */
            g_sink += data[b];
        if (!ti.has_dtype)
            continue;
        FUZZ_CHECK((uint64_t)ti.elems * wk_dtype_size(ti.dtype) == ti.nbytes, "nbytes %llu",
                   (unsigned long long)ti.nbytes);
        wk_storage *s = NULL;
        const wk_status got = wk_safetensors_load_tensor(&s, st, i, g_cpu, ti.dtype);
        if (got == WK_ERR_OUT_OF_MEMORY) { /* the harness's cap */
            FUZZ_CHECK(s == NULL, "failed load set the handle");
            continue;
        }
        FUZZ_CHECK(got == WK_OK, "load tensor %lld: %s", (long long)i, wk_status_string(got));
        const size_t bytes = wk_storage_len(s) * wk_dtype_size(wk_storage_dtype(s));
        FUZZ_CHECK(bytes == ti.nbytes, "loaded %zu bytes of %llu", bytes,
                   (unsigned long long)ti.nbytes);
        unsigned char *back = malloc(bytes ? bytes : 1);
        if (back) {
            FUZZ_CHECK(wk_storage_to_host(back, wk_storage_len(s), s) == WK_OK, "download");
            FUZZ_CHECK(bytes == 0 || memcmp(back, data, bytes) == 0, "loaded bytes differ");
            free(back);
        }
        wk_storage_free(s);
    }
    FUZZ_CHECK(next == fsize - base, "the tensors end at %llu of a %llu-byte data section",
               (unsigned long long)next, (unsigned long long)(fsize - base));
    wk_safetensors_tensor_info ti;
    FUZZ_CHECK(wk_safetensors_tensor_info_get(&ti, st, nt) == WK_ERR_INDEX_OUT_OF_RANGE,
               "tensor past the end");
    FUZZ_CHECK(wk_safetensors_tensor_data(st, nt) == NULL && wk_safetensors_tensor_data(st, -1) == NULL,
               "data past the end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_cpu)
        LLVMFuzzerInitialize(NULL, NULL);
    const char *path = fuzz_memfile(data, size);
    if (!path)
        return 0;
    wk_safetensors *st = (wk_safetensors *)(uintptr_t)1; /* must be reset to NULL on failure */
    const wk_status got = wk_safetensors_open(&st, path);
    if (got != WK_OK) {
        FUZZ_CHECK(got == WK_ERR_FORMAT || got == WK_ERR_NOT_SUPPORTED || got == WK_ERR_OUT_OF_MEMORY,
                   "open: %s", wk_status_string(got));
        FUZZ_CHECK(st == NULL, "failed open left a handle");
        FUZZ_CHECK(wk_last_error()[0] != '\0', "no message");
        return 0;
    }
    const uint64_t fsize = wk_safetensors_file_size(st);
    FUZZ_CHECK(fsize == size, "file size %llu of %zu", (unsigned long long)fsize, size);
    walk_metadata(st);
    walk_tensors(st, fsize);
    wk_safetensors_close(st);
    return 0;
}
