/* st_pytool.c: the C half of the safetensors compatibility test with the Python package
 * (tests/python/safetensors_compat.py drives it; ctest safetensors_python). Public API only.
 *   st_pytool write FILE   writes the fixed content below (compat_content in the script)
 *   st_pytool dump FILE    prints what the reader sees, one line per item, every string in hex:
 *                          M <key> <value>
 *                          T <name> <DTYPE> <dim,dim,...|-> <offset> <bytes> */
#include "wick.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hex(const void *p, size_t n)
{
    const unsigned char *b = p;
    if (n == 0)
        fputc('-', stdout);
    for (size_t i = 0; i < n; i++)
        printf("%02x", b[i]);
}

static int cmd_dump(const char *path)
{
    wk_safetensors *st = NULL;
    wk_status s = wk_safetensors_open(&st, path);
    if (s) {
        fprintf(stderr, "st_pytool: %s\n", wk_last_error());
        return 1;
    }
    for (int64_t i = 0; i < wk_safetensors_metadata_count(st); i++) {
        const char *k, *v;
        wk_safetensors_metadata_get(&k, &v, st, i);
        printf("M ");
        hex(k, strlen(k));
        printf(" ");
        hex(v, strlen(v));
        printf("\n");
    }
    for (int64_t i = 0; i < wk_safetensors_tensor_count(st); i++) {
        wk_safetensors_tensor_info ti;
        wk_safetensors_tensor_info_get(&ti, st, i);
        printf("T ");
        hex(ti.name, strlen(ti.name));
        printf(" %s ", ti.dtype_name);
        for (int k = 0; k < ti.rank; k++)
            printf("%s%lld", k ? "," : "", (long long)ti.dims[k]);
        printf("%s %llu ", ti.rank ? "" : "-", (unsigned long long)ti.offset);
        hex(wk_safetensors_tensor_data(st, i), (size_t)ti.nbytes);
        printf("\n");
    }
    wk_safetensors_close(st);
    return 0;
}

/* The content: tensor k holds bytes (i * 7 + k * 13 + 1) & 255. Same table in the script. */
static const struct {
    const char *name;
    wk_dtype dt;
    int rank;
    int64_t dims[3];
} content[] = {
    {"w.u8", WK_DTYPE_U8, 1, {5}},         {"w.u32", WK_DTYPE_U32, 2, {2, 3}},
    {"w.i16", WK_DTYPE_I16, 1, {4}},       {"w.i32", WK_DTYPE_I32, 3, {1, 2, 2}},
    {"w.i64", WK_DTYPE_I64, 1, {3}},       {"w.bf16", WK_DTYPE_BF16, 2, {2, 2}},
    {"w.f16", WK_DTYPE_F16, 1, {7}},       {"w.f32", WK_DTYPE_F32, 2, {2, 3}},
    {"w.f64", WK_DTYPE_F64, 1, {2}},       {"w.f8", WK_DTYPE_F8E4M3, 1, {9}},
    {"scalar", WK_DTYPE_F32, 0, {0}},      {"empty", WK_DTYPE_F16, 2, {0, 3}},
    {"na\xc3\xafve.\xe5\x90\x8d", WK_DTYPE_U8, 1, {2}},
};
#define NCONTENT ((int)(sizeof content / sizeof content[0]))

static int cmd_write(const char *path)
{
    static unsigned char bytes[NCONTENT][64];
    wk_safetensors_writer *w = NULL;
    wk_status s = wk_safetensors_writer_new(&w);
    for (int k = 0; k < NCONTENT && !s; k++) {
        uint64_t n = wk_dtype_size(content[k].dt);
        for (int d = 0; d < content[k].rank; d++)
            n *= (uint64_t)content[k].dims[d];
        for (uint64_t i = 0; i < n; i++)
            bytes[k][i] = (unsigned char)((i * 7 + (uint64_t)k * 13 + 1) & 255);
        s = wk_safetensors_writer_add_tensor(w, content[k].name, content[k].dt, content[k].rank,
                                             content[k].dims, bytes[k], n);
    }
    if (!s)
        s = wk_safetensors_writer_add_metadata(w, "format", "wick \xe2\x9c\x93");
    if (!s)
        s = wk_safetensors_writer_write(w, path);
    wk_safetensors_writer_free(w);
    if (s)
        fprintf(stderr, "st_pytool: %s\n", wk_last_error());
    return s ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return cmd_dump(argv[2]);
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        return cmd_write(argv[2]);
    fprintf(stderr, "usage: st_pytool dump|write FILE\n");
    return 2;
}
