/* st_dtypes.h: the dtypes of the safetensors format (the names its header uses), shared by the
 * reader (safetensors.c) and the writer (safetensors_write.c). Internal. */
#ifndef WK_ST_DTYPES_H
#define WK_ST_DTYPES_H

#include "wick.h"
#include <string.h>

/* name: as in the header; bits: per element; wick: the wk_dtype it loads as, or -1; order: the
 * position in the reference implementation's Dtype enum, whose writer puts tensors of larger
 * order first (then by name). The Python package 0.8 knows these
 * (the order checked against its writer; F6's place is not observable there and never written). */
static const struct {
    const char *name;
    int bits;
    int wick;
    int order;
} st_dtypes[] = {
    {"BOOL", 8, WK_DTYPE_U8, 0},
    {"F4", 4, -1, 1},
    {"F6_E2M3", 6, -1, 2},
    {"F6_E3M2", 6, -1, 3},
    {"U8", 8, WK_DTYPE_U8, 4},
    {"I8", 8, -1, 5},
    {"F8_E5M2", 8, -1, 6},
    {"F8_E4M3", 8, WK_DTYPE_F8E4M3, 7},
    {"F8_E8M0", 8, -1, 8},
    {"F8_E4M3FNUZ", 8, -1, 9},
    {"F8_E5M2FNUZ", 8, -1, 10},
    {"I16", 16, WK_DTYPE_I16, 11},
    {"U16", 16, -1, 12},
    {"F16", 16, WK_DTYPE_F16, 13},
    {"BF16", 16, WK_DTYPE_BF16, 14},
    {"I32", 32, WK_DTYPE_I32, 15},
    {"U32", 32, WK_DTYPE_U32, 16},
    {"F32", 32, WK_DTYPE_F32, 17},
    {"C64", 64, -1, 18},
    {"F64", 64, WK_DTYPE_F64, 19},
    {"I64", 64, WK_DTYPE_I64, 20},
    {"U64", 64, -1, 21},
};
#define ST_DTYPE_COUNT ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

/* Index in st_dtypes of the header name s, or -1. */
static inline int st_dtype_find(const char *s)
{
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (strcmp(st_dtypes[i].name, s) == 0)
            return i;
    return -1;
}

/* Index in st_dtypes of the entry a wick dtype is written as (BOOL is never written). */
static inline int st_dtype_of_wick(wk_dtype d)
{
    for (int i = 1; i < ST_DTYPE_COUNT; i++)
        if (st_dtypes[i].wick == (int)d)
            return i;
    return -1;
}

#endif
