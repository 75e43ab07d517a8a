/* test_dlpack.c: DLPack exchange (include/wick_dlpack.h) on every device present.
 *   - the ABI: sizes and field offsets of our DLPack declarations, as in dlpack.h 1.1 on LP64;
 *   - the dtype table both ways (hand-written from the DLPack type codes);
 *   - export: pointer, byte offset, shape, strides, device, flags of a narrowed transposed view;
 *     the view outlives the storage's owner (reference counting) and its deleter releases it;
 *   - import: a hand-built tensor over host memory, read through an op (affine) with hand-computed
 *     results, the deleter called exactly once when the last reference goes; round trips
 *     export -> import keep the pointer; legacy structs; NULL strides; empty tensors;
 *   - read-only: flag in and out, in-place ops refuse, legacy export refuses;
 *   - every error path with its exact status, and the tensor left with its owner on failure.
 * Run: ctest -R test_dlpack */
#include "testlib.h"
#include "wick_dlpack.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const char *g_spec;

/* ---- the ABI: offsets of dlpack.h 1.1 on LP64 (8-byte pointers), written out by hand */
static void test_abi(void)
{
    TEST_EQ_INT(sizeof(DLPackVersion), 8);
    TEST_EQ_INT(sizeof(DLDevice), 8);
    TEST_EQ_INT(offsetof(DLDevice, device_id), 4);
    TEST_EQ_INT(sizeof(DLDataType), 4);
    TEST_EQ_INT(offsetof(DLDataType, bits), 1);
    TEST_EQ_INT(offsetof(DLDataType, lanes), 2);
    TEST_EQ_INT(sizeof(DLTensor), 48);
    TEST_EQ_INT(offsetof(DLTensor, data), 0);
    TEST_EQ_INT(offsetof(DLTensor, device), 8);
    TEST_EQ_INT(offsetof(DLTensor, ndim), 16);
    TEST_EQ_INT(offsetof(DLTensor, dtype), 20);
    TEST_EQ_INT(offsetof(DLTensor, shape), 24);
    TEST_EQ_INT(offsetof(DLTensor, strides), 32);
    TEST_EQ_INT(offsetof(DLTensor, byte_offset), 40);
    TEST_EQ_INT(sizeof(DLManagedTensor), 64);
    TEST_EQ_INT(offsetof(DLManagedTensor, manager_ctx), 48);
    TEST_EQ_INT(offsetof(DLManagedTensor, deleter), 56);
    TEST_EQ_INT(sizeof(DLManagedTensorVersioned), 80);
    TEST_EQ_INT(offsetof(DLManagedTensorVersioned, manager_ctx), 8);
    TEST_EQ_INT(offsetof(DLManagedTensorVersioned, deleter), 16);
    TEST_EQ_INT(offsetof(DLManagedTensorVersioned, flags), 24);
    TEST_EQ_INT(offsetof(DLManagedTensorVersioned, dl_tensor), 32);
    /* the values that cross the ABI */
    TEST_EQ_INT(kDLCPU, 1);
    TEST_EQ_INT(kDLCUDA, 2);
    TEST_EQ_INT(kDLCUDAHost, 3);
    TEST_EQ_INT(kDLROCM, 10);
    TEST_EQ_INT(kDLROCMHost, 11);
    TEST_EQ_INT(kDLBfloat, 4);
    TEST_EQ_INT(kDLBool, 6);
    TEST_EQ_INT(kDLFloat8_e4m3fn, 10);
    TEST_EQ_INT(DLPACK_FLAG_BITMASK_READ_ONLY, 1);
}

/* ---- dtypes: wick dtype -> (code, bits), from the DLPack codes (Int 0, UInt 1, Float 2,
 * Bfloat 4, Float8_e4m3fn 10) */
static void test_dtypes(void)
{
    static const struct { wk_dtype dt; uint8_t code, bits; } table[] = {
        {WK_DTYPE_U8, 1, 8},   {WK_DTYPE_U32, 1, 32},  {WK_DTYPE_I16, 0, 16},
        {WK_DTYPE_I32, 0, 32}, {WK_DTYPE_I64, 0, 64},  {WK_DTYPE_BF16, 4, 16},
        {WK_DTYPE_F16, 2, 16}, {WK_DTYPE_F32, 2, 32},  {WK_DTYPE_F64, 2, 64},
        {WK_DTYPE_F8E4M3, 10, 8},
    };
    TEST_EQ_INT(sizeof table / sizeof table[0], WK_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        DLDataType t;
        wk_dtype back = WK_DTYPE_COUNT;
        if (TEST_EQ_STATUS(wk_dlpack_dtype(&t, table[i].dt), WK_OK)) {
            TEST_CHECK(t.code == table[i].code && t.bits == table[i].bits && t.lanes == 1,
                       "%s -> (%u, %u, %u)", wk_dtype_name(table[i].dt), t.code, t.bits, t.lanes);
            TEST_EQ_STATUS(wk_dlpack_to_dtype(&back, t), WK_OK);
            TEST_EQ_INT(back, table[i].dt);
        }
    }
    wk_dtype d;
    TEST_EQ_STATUS(wk_dlpack_to_dtype(&d, (DLDataType){kDLBool, 8, 1}), WK_OK);
    TEST_EQ_INT(d, WK_DTYPE_U8);
    /* what wick lacks */
    TEST_EQ_STATUS(wk_dlpack_to_dtype(&d, (DLDataType){kDLFloat, 32, 4}), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_dlpack_to_dtype(&d, (DLDataType){kDLComplex, 64, 1}), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_dlpack_to_dtype(&d, (DLDataType){kDLInt, 8, 1}), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_dlpack_to_dtype(&d, (DLDataType){kDLUInt, 64, 1}), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_dlpack_to_dtype(&d, (DLDataType){kDLFloat8_e5m2, 8, 1}), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_dlpack_to_dtype(&d, (DLDataType){kDLFloat8_e4m3, 8, 1}), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_dlpack_dtype(&(DLDataType){0}, (wk_dtype)77), WK_ERR_INVALID_ARGUMENT);
}

/* ---- export of a narrowed, transposed view */
static void test_export(wk_device *dev)
{
    /* s: 0..11 as a (3, 4) f32 matrix; view: columns 1..2 of its transpose = (2, 3) with strides
     * (1, 4) and offset 1: [[1, 5, 9], [2, 6, 10]] */
    float v[12];
    for (int i = 0; i < 12; i++)
        v[i] = (float)i;
    wk_storage *s = testlib_upload(dev, WK_DTYPE_F32, v, 12);
    if (!s)
        return;
    wk_layout l = testlib_layout2(3, 4), t, n;
    TEST_EQ_STATUS(wk_layout_transpose(&t, &l, 0, 1), WK_OK);
    TEST_EQ_STATUS(wk_layout_narrow(&n, &t, 0, 1, 2), WK_OK);
    DLDevice want_dev;
    TEST_EQ_STATUS(wk_dlpack_device(&want_dev, dev), WK_OK);
    TEST_CHECK(want_dev.device_type == (wk_device_backend(dev) == WK_BACKEND_CPU ? kDLCPU
                                        : wk_device_backend(dev) == WK_BACKEND_CUDA ? kDLCUDA
                                                                                   : kDLROCM),
               "%s: device type %d", g_spec, (int)want_dev.device_type);

    DLManagedTensorVersioned *mt = NULL;
    if (!TEST_EQ_STATUS(wk_dlpack_export(&mt, s, &n), WK_OK)) {
        wk_storage_free(s);
        return;
    }
    const DLTensor *x = &mt->dl_tensor;
    TEST_EQ_INT(mt->version.major, 1);
    TEST_EQ_INT(mt->flags, 0);
    TEST_CHECK(x->data == wk_storage_data(s), "%s: export keeps the pointer", g_spec);
    TEST_EQ_INT(x->byte_offset, 4);
    TEST_EQ_INT(x->ndim, 2);
    TEST_CHECK(x->shape[0] == 2 && x->shape[1] == 3, "%s: shape", g_spec);
    TEST_CHECK(x->strides[0] == 1 && x->strides[1] == 4, "%s: strides", g_spec);
    TEST_CHECK(x->dtype.code == kDLFloat && x->dtype.bits == 32 && x->dtype.lanes == 1, "dtype");
    TEST_CHECK(x->device.device_type == want_dev.device_type &&
               x->device.device_id == want_dev.device_id, "%s: device", g_spec);
    /* the owner frees its storage; the view still holds the memory (read it back on the CPU) */
    wk_storage_free(s);
    if (x->device.device_type == kDLCPU) {
        const float *p = (const float *)((const char *)x->data + x->byte_offset);
        const float want[2][3] = {{1, 5, 9}, {2, 6, 10}};
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                TEST_CHECK(p[i * x->strides[0] + j * x->strides[1]] == want[i][j],
                           "exported (%d, %d) = %g, expected %g", i, j,
                           p[i * x->strides[0] + j * x->strides[1]], want[i][j]);
    }
    /* import the export back into wick: same memory, the view's values through an op */
    wk_storage *back = NULL, *y = NULL;
    wk_layout lb;
    if (TEST_EQ_STATUS(wk_dlpack_import(&back, &lb, dev, mt), WK_OK)) {
        TEST_CHECK((char *)wk_storage_data(back) == (char *)x->data + 4, "%s: round trip pointer",
                   g_spec);
        /* the storage spans elements 1..10 of the original: 10 elements, layout offset 0 */
        TEST_EQ_INT(wk_storage_len(back), 10);
        TEST_CHECK(lb.rank == 2 && lb.dims[0] == 2 && lb.dims[1] == 3 && lb.strides[0] == 1 &&
                   lb.strides[1] == 4 && lb.offset == 0, "%s: imported layout", g_spec);
        /* y = 2x + 1 over [[1, 5, 9], [2, 6, 10]] */
        if (TEST_EQ_STATUS(wk_affine(&y, back, &lb, 2.0, 1.0), WK_OK)) {
            float got[6];
            const float want[6] = {3, 11, 19, 5, 13, 21};
            if (!testlib_download(got, 6, y))
                for (int i = 0; i < 6; i++)
                    TEST_CHECK(got[i] == want[i], "%s: affine of the round trip [%d] = %g, "
                               "expected %g", g_spec, i, got[i], want[i]);
        }
        wk_storage_free(y);
        wk_storage_free(back); /* calls mt's deleter, which drops the last reference */
    } else {
        mt->deleter(mt);
    }

    /* legacy export: same facts, its own deleter */
    s = testlib_upload(dev, WK_DTYPE_F32, v, 12);
    DLManagedTensor *lt = NULL;
    if (s && TEST_EQ_STATUS(wk_dlpack_export_legacy(&lt, s, &n), WK_OK)) {
        TEST_CHECK(lt->dl_tensor.data == wk_storage_data(s) && lt->dl_tensor.byte_offset == 4 &&
                   lt->dl_tensor.strides[1] == 4, "%s: legacy export", g_spec);
        lt->deleter(lt); /* before the owner's free this time */
    }
    /* an empty view: data NULL, shape kept */
    wk_layout e = testlib_layout2(0, 4);
    mt = NULL;
    if (s && TEST_EQ_STATUS(wk_dlpack_export(&mt, s, &e), WK_OK)) {
        TEST_CHECK(mt->dl_tensor.data == NULL && mt->dl_tensor.shape[0] == 0 &&
                   mt->dl_tensor.shape[1] == 4, "%s: empty export", g_spec);
        mt->deleter(mt);
    }
    /* bad exports */
    wk_layout bad = testlib_layout2(4, 4); /* 16 elements of a 12-element storage */
    TEST_EQ_STATUS(wk_dlpack_export(&mt, s, &bad), WK_ERR_LAYOUT);
    TEST_EQ_STATUS(wk_dlpack_export(&mt, NULL, &l), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_export(NULL, s, &l), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_export(&mt, s, NULL), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_export_legacy(&lt, s, &bad), WK_ERR_LAYOUT);
    wk_storage_free(s);
}

/* ---- a tensor owned by "another framework": host memory and a counting deleter */
typedef struct foreign {
    DLManagedTensorVersioned mt;
    DLManagedTensor legacy;
    int64_t shape[WK_MAX_RANK + 1], strides[WK_MAX_RANK + 1];
    int deleted; /* deleter calls */
    double data[16];
} foreign;

static void foreign_delete(DLManagedTensorVersioned *self)
{
    ((foreign *)self->manager_ctx)->deleted++;
}

static void foreign_delete_legacy(DLManagedTensor *self)
{
    ((foreign *)self->manager_ctx)->deleted++;
}

/* f: a (2, 3) f64 view of data with strides (3, 1) and byte offset 8 (element 1): [[1..3], [4..6]] */
static void foreign_init(foreign *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 16; i++)
        f->data[i] = i;
    f->shape[0] = 2;
    f->shape[1] = 3;
    f->strides[0] = 3;
    f->strides[1] = 1;
    DLTensor t = {.data = f->data, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 64, 1},
                  .shape = f->shape, .strides = f->strides, .byte_offset = 8};
    f->mt.version = (DLPackVersion){1, 1};
    f->mt.manager_ctx = f;
    f->mt.deleter = foreign_delete;
    f->mt.dl_tensor = t;
    f->legacy.dl_tensor = t;
    f->legacy.manager_ctx = f;
    f->legacy.deleter = foreign_delete_legacy;
}

static void expect_sum_rows(wk_storage *s, const wk_layout *l, const double *want, int n,
                            const char *what)
{
    wk_storage *r = NULL;
    const int32_t dims[1] = {1};
    if (!TEST_EQ_STATUS(wk_reduce(&r, WK_OP_SUM, s, l, dims, 1), WK_OK))
        return;
    double got[4];
    if (!testlib_download(got, (size_t)n, r))
        for (int i = 0; i < n; i++)
            TEST_CHECK(got[i] == want[i], "%s: row sum %d = %g, expected %g", what, i, got[i],
                       want[i]);
    wk_storage_free(r);
}

static void test_import_cpu(wk_device *cpu)
{
    foreign f;
    foreign_init(&f);
    wk_storage *s = NULL;
    wk_layout l;
    if (TEST_EQ_STATUS(wk_dlpack_import(&s, &l, cpu, &f.mt), WK_OK)) {
        TEST_CHECK(wk_storage_data(s) == &f.data[1], "import: base is data + byte_offset");
        TEST_EQ_INT(wk_storage_len(s), 6);
        TEST_EQ_INT(wk_storage_dtype(s), WK_DTYPE_F64);
        TEST_EQ_INT(wk_storage_is_readonly(s), 0);
        expect_sum_rows(s, &l, (const double[]){6, 15}, 2, "import"); /* 1+2+3, 4+5+6 */
        /* writes go to the foreign memory: const_set row 1 to 7 */
        wk_layout row;
        TEST_EQ_STATUS(wk_layout_narrow(&row, &l, 0, 1, 1), WK_OK);
        const double seven = 7;
        TEST_EQ_STATUS(wk_const_set(s, &row, &seven), WK_OK);
        TEST_CHECK(f.data[3] == 3 && f.data[4] == 7 && f.data[5] == 7 && f.data[6] == 7,
                   "import: const_set wrote the lender's memory (%g %g %g %g)", f.data[3],
                   f.data[4], f.data[5], f.data[6]);
        /* two references: the deleter runs on the last free only */
        wk_storage_retain(s);
        wk_storage_free(s);
        TEST_EQ_INT(f.deleted, 0);
        wk_storage_free(s);
    }
    TEST_EQ_INT(f.deleted, 1);

    /* legacy import, NULL strides (row-major) */
    foreign_init(&f);
    f.legacy.dl_tensor.strides = NULL;
    if (TEST_EQ_STATUS(wk_dlpack_import_legacy(&s, &l, cpu, &f.legacy), WK_OK)) {
        TEST_CHECK(l.strides[0] == 3 && l.strides[1] == 1, "NULL strides are row-major");
        expect_sum_rows(s, &l, (const double[]){6, 15}, 2, "legacy import");
        wk_storage_free(s);
    }
    TEST_EQ_INT(f.deleted, 1);

    /* broadcast (stride 0) and a rank-0 scalar */
    foreign_init(&f);
    f.strides[0] = 0; /* both rows read elements 1..3 */
    if (TEST_EQ_STATUS(wk_dlpack_import(&s, &l, cpu, &f.mt), WK_OK)) {
        TEST_EQ_INT(wk_storage_len(s), 3);
        expect_sum_rows(s, &l, (const double[]){6, 6}, 2, "broadcast import");
        wk_storage_free(s);
    }
    foreign_init(&f);
    f.mt.dl_tensor.ndim = 0;
    if (TEST_EQ_STATUS(wk_dlpack_import(&s, &l, cpu, &f.mt), WK_OK)) {
        double one = 0;
        TEST_EQ_INT(l.rank, 0);
        TEST_EQ_INT(wk_storage_len(s), 1);
        if (!testlib_download(&one, 1, s))
            TEST_CHECK(one == 1, "scalar import = %g, expected 1", one);
        wk_storage_free(s);
    }
    /* an empty tensor: data may be NULL */
    foreign_init(&f);
    f.shape[0] = 0;
    f.mt.dl_tensor.data = NULL;
    if (TEST_EQ_STATUS(wk_dlpack_import(&s, &l, cpu, &f.mt), WK_OK)) {
        TEST_EQ_INT(wk_storage_len(s), 0);
        TEST_EQ_INT(wk_layout_elem_count(&l), 0);
        wk_storage_free(s);
    }
    TEST_EQ_INT(f.deleted, 1);
    /* pinned host memory is the CPU's */
    foreign_init(&f);
    f.mt.dl_tensor.device = (DLDevice){kDLCUDAHost, 0};
    if (TEST_EQ_STATUS(wk_dlpack_import(&s, &l, cpu, &f.mt), WK_OK))
        wk_storage_free(s);
}

static void test_readonly(wk_device *cpu)
{
    foreign f;
    foreign_init(&f);
    f.mt.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    wk_storage *s = NULL, *src = NULL, *ids = NULL;
    wk_layout l;
    if (!TEST_EQ_STATUS(wk_dlpack_import(&s, &l, cpu, &f.mt), WK_OK))
        return;
    TEST_EQ_INT(wk_storage_is_readonly(s), 1);
    expect_sum_rows(s, &l, (const double[]){6, 15}, 2, "read-only import"); /* reads work */
    const double one = 1;
    TEST_EQ_STATUS(wk_const_set(s, &l, &one), WK_ERR_INVALID_ARGUMENT);
    src = testlib_upload_f64(cpu, WK_DTYPE_F64, (const double[]){9, 9, 9}, 3);
    const wk_layout l3 = testlib_layout1(3);
    TEST_EQ_STATUS(wk_copy_strided_src(s, 0, src, &l3), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_copy2d(s, src, 1, 3, 3, 3, 0, 0), WK_ERR_INVALID_ARGUMENT);
    const uint32_t idv[3] = {0, 1, 2};
    ids = testlib_upload(cpu, WK_DTYPE_U32, idv, 3);
    wk_layout l13 = testlib_layout2(1, 3), ld = testlib_layout2(2, 3);
    TEST_EQ_STATUS(wk_scatter_set(s, &ld, ids, &l13, src, &l13, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_scatter_add_set(s, &ld, ids, &l13, src, &l13, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_CHECK(strstr(wk_last_error(), "read-only") != NULL, "message: %s", wk_last_error());
    TEST_CHECK(f.data[1] == 1 && f.data[6] == 6, "read-only memory untouched");
    /* out-of-place ops are fine, and re-export carries the flag; legacy export refuses */
    DLManagedTensorVersioned *mt = NULL;
    if (TEST_EQ_STATUS(wk_dlpack_export(&mt, s, &l), WK_OK)) {
        TEST_EQ_INT(mt->flags & DLPACK_FLAG_BITMASK_READ_ONLY, 1);
        mt->deleter(mt);
    }
    DLManagedTensor *lt = NULL;
    TEST_EQ_STATUS(wk_dlpack_export_legacy(&lt, s, &l), WK_ERR_NOT_SUPPORTED);
    wk_storage_free(ids);
    wk_storage_free(src);
    wk_storage_free(s);
    TEST_EQ_INT(f.deleted, 1);
}

/* Each bad tensor: the exact status, and the tensor still the caller's (deleter not called). */
static void expect_refused(wk_device *dev, foreign *f, wk_status want, const char *what)
{
    wk_storage *s = (wk_storage *)0x1;
    wk_layout l;
    const wk_status got = wk_dlpack_import(&s, &l, dev, &f->mt);
    TEST_CHECK(got == want, "%s: status %d, expected %d (%s)", what, (int)got, (int)want,
               wk_last_error());
    TEST_CHECK(s == (wk_storage *)0x1, "%s: nothing written on failure", what);
    TEST_CHECK(f->deleted == 0, "%s: the deleter stays the caller's", what);
    TEST_CHECK(wk_last_error()[0] != 0, "%s: a message", what);
}

static void test_import_errors(wk_device *cpu)
{
    foreign f;
    wk_storage *s;
    wk_layout l;
    foreign_init(&f);
    f.mt.version.major = 2;
    expect_refused(cpu, &f, WK_ERR_NOT_SUPPORTED, "major version 2");
    foreign_init(&f);
    f.mt.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 2};
    expect_refused(cpu, &f, WK_ERR_DTYPE, "two lanes");
    foreign_init(&f);
    f.mt.dl_tensor.dtype = (DLDataType){kDLComplex, 128, 1};
    expect_refused(cpu, &f, WK_ERR_DTYPE, "complex");
    foreign_init(&f);
    f.mt.dl_tensor.device = (DLDevice){kDLVulkan, 0};
    expect_refused(cpu, &f, WK_ERR_NOT_SUPPORTED, "vulkan");
    foreign_init(&f);
    f.mt.dl_tensor.device = (DLDevice){kDLCUDA, 0};
    expect_refused(cpu, &f, WK_ERR_DEVICE_MISMATCH, "cuda tensor into the cpu");
    foreign_init(&f);
    f.mt.dl_tensor.device = (DLDevice){kDLROCM, 1};
    expect_refused(cpu, &f, WK_ERR_DEVICE_MISMATCH, "rocm tensor into the cpu");
    foreign_init(&f);
    f.strides[1] = -1;
    expect_refused(cpu, &f, WK_ERR_LAYOUT, "negative stride");
    foreign_init(&f);
    f.shape[0] = -2;
    expect_refused(cpu, &f, WK_ERR_SHAPE, "negative dim");
    foreign_init(&f);
    f.mt.dl_tensor.ndim = WK_MAX_RANK + 1;
    for (int k = 0; k <= WK_MAX_RANK; k++)
        f.shape[k] = 1, f.strides[k] = 1;
    expect_refused(cpu, &f, WK_ERR_NOT_SUPPORTED, "rank 9");
    foreign_init(&f);
    f.mt.dl_tensor.byte_offset = 4; /* half an f64 */
    expect_refused(cpu, &f, WK_ERR_LAYOUT, "misaligned byte offset");
    foreign_init(&f);
    f.mt.dl_tensor.data = NULL;
    expect_refused(cpu, &f, WK_ERR_INVALID_ARGUMENT, "NULL data");
    foreign_init(&f);
    f.mt.dl_tensor.shape = NULL;
    expect_refused(cpu, &f, WK_ERR_INVALID_ARGUMENT, "NULL shape");
    foreign_init(&f);
    f.shape[0] = INT64_MAX / 2;
    f.strides[0] = 4;
    expect_refused(cpu, &f, WK_ERR_OVERFLOW, "extent overflow");
    foreign_init(&f);
    TEST_EQ_STATUS(wk_dlpack_import(&s, &l, cpu, NULL), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_import(NULL, &l, cpu, &f.mt), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_import(&s, NULL, cpu, &f.mt), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_import(&s, &l, NULL, &f.mt), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_import_legacy(&s, &l, cpu, NULL), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_INT(f.deleted, 0);
    void *stream = (void *)0x1;
    TEST_EQ_STATUS(wk_device_stream(&stream, cpu), WK_OK);
    TEST_CHECK(stream == NULL, "the CPU has no stream");
    TEST_EQ_STATUS(wk_device_stream(NULL, cpu), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_dlpack_device(NULL, cpu), WK_ERR_INVALID_ARGUMENT);
    TEST_CHECK(wk_storage_data(NULL) == NULL && wk_storage_is_readonly(NULL) == 0, "NULL facts");
    wk_storage_retain(NULL); /* a no-op */
}

/* The consumer may hold an export past the owner's storage and device: the device stays open
 * until the deleter drops the last reference (valgrind / ASan see no use after free). */
static void test_export_outlives_device(void)
{
    wk_device *dev = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&dev, "cpu"), WK_OK))
        return;
    const int32_t v[3] = {4, 5, 6};
    wk_storage *s = testlib_upload(dev, WK_DTYPE_I32, v, 3);
    const wk_layout l = testlib_layout1(3);
    DLManagedTensorVersioned *mt = NULL;
    if (s && TEST_EQ_STATUS(wk_dlpack_export(&mt, s, &l), WK_OK)) {
        wk_storage_free(s);
        wk_device_close(dev); /* the export still holds both */
        const int32_t *p = mt->dl_tensor.data;
        TEST_CHECK(p[0] == 4 && p[2] == 6, "export readable after its device was closed");
        mt->deleter(mt); /* frees the storage, then closes the device */
    } else {
        wk_storage_free(s);
        wk_device_close(dev);
    }
}

/* On a GPU: its stream exists, export names the device, and a GPU tensor is refused by the CPU. */
static void test_gpu(wk_device *dev, wk_device *cpu)
{
    void *stream = NULL;
    TEST_EQ_STATUS(wk_device_stream(&stream, dev), WK_OK);
    TEST_CHECK(stream != NULL, "%s: a stream", g_spec);
    wk_storage *s = testlib_upload_f64(dev, WK_DTYPE_F32, (const double[]){1, 2, 3, 4}, 4);
    const wk_layout l = testlib_layout1(4);
    DLManagedTensorVersioned *mt = NULL;
    if (s && TEST_EQ_STATUS(wk_dlpack_export(&mt, s, &l), WK_OK)) {
        TEST_EQ_INT(mt->dl_tensor.device.device_id, wk_device_ordinal(dev));
        wk_storage *c = NULL;
        wk_layout lc;
        TEST_EQ_STATUS(wk_dlpack_import(&c, &lc, cpu, mt), WK_ERR_DEVICE_MISMATCH);
        mt->deleter(mt);
    }
    wk_storage_free(s);
}

int main(void)
{
    test_abi();
    test_dtypes();
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    wk_device *cpu = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    test_import_cpu(cpu);
    test_readonly(cpu);
    test_import_errors(cpu);
    test_export_outlives_device();
    for (int i = 0; i < n; i++) {
        wk_device *dev = NULL;
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[i]), WK_OK))
            continue;
        test_export(dev);
        if (wk_device_backend(dev) != WK_BACKEND_CPU)
            test_gpu(dev, cpu);
        wk_device_close(dev);
    }
    wk_device_close(cpu);
    return testlib_summary();
}
