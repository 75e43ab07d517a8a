/* wick_dlpack.h: sharing wick storages with other frameworks (PyTorch, NumPy, CuPy, JAX, ...)
 * through DLPack 1.x, zero-copy, plus the few storage facts an interop layer needs.
 *
 * The DLPack structs below are wick's own declarations of the public DLPack 1.1 ABI
 * (github.com/dmlc/dlpack, include/dlpack/dlpack.h): same names, same field order, same sizes,
 * checked by tests/test_dlpack.c. They sit behind dlpack.h's own include guard, so a program may
 * include the official dlpack.h before or after this header and get one set of declarations.
 *
 * Ownership, in one paragraph:
 *   - export (wk_dlpack_export*) hands out a new managed tensor that holds one reference on the
 *     storage (wk_storage_retain); the consumer calls its deleter exactly once, which drops that
 *     reference. The storage may be freed by its owner, and its device closed, before or after:
 *     the memory (and the device) live until both are done. Export does not synchronize: work queued on the device's stream may still be
 *     running (see "streams").
 *   - import (wk_dlpack_import*) takes ownership of the managed tensor on success only: the
 *     returned storage views its memory (no copy) and calls the tensor's deleter once, when the
 *     last reference to the storage is freed. On failure nothing is taken: the caller still owns
 *     the tensor and must call its deleter (the rule for a major version wick does not know too).
 *
 * Streams (the DLPack Python protocol, __dlpack__(stream=...)): wick queues all work of a GPU
 * device on one non-blocking stream, returned by wk_device_stream. A producer asked for a tensor
 * on a consumer's stream must make its pending writes visible on that stream; wick's Python
 * package does it by synchronizing the device (a host wait; never wrong, sometimes slower than an
 * event). As a consumer, wick passes wk_device_stream's value to the producer's __dlpack__ so the
 * producer orders its work before wick's.
 *
 * Threads: a storage's references may be taken and dropped from any thread; everything else
 * follows wick.h's rules. */
#ifndef WICK_DLPACK_H
#define WICK_DLPACK_H

#include "wick.h"

/* ---------------------------------------------------------------- the DLPack 1.1 ABI */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* A C enum: the size of an int (32 bits on every platform wick builds for). */
typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
    kDLMAIA = 17,
    kDLTrn = 18
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U,
    kDLBool = 6U,
    kDLFloat8_e3m4 = 7U,
    kDLFloat8_e4m3 = 8U,
    kDLFloat8_e4m3b11fnuz = 9U,
    kDLFloat8_e4m3fn = 10U,
    kDLFloat8_e4m3fnuz = 11U,
    kDLFloat8_e5m2 = 12U,
    kDLFloat8_e5m2fnuz = 13U,
    kDLFloat8_e8m0fnu = 14U,
    kDLFloat6_e2m3fn = 15U,
    kDLFloat6_e3m2fn = 16U,
    kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

typedef struct {
    uint8_t code;   /* a DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

/* A view: element i (multi-index) at (char *)data + byte_offset + sum_k i[k] * strides[k] * size.
 * strides in elements; NULL strides (allowed before DLPack 1.2) mean row-major. */
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

/* The unversioned ("legacy") managed tensor of DLPack < 1.0. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif
#endif /* DLPACK_DLPACK_H_ */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- storage facts for interop */
/* Adds a reference: the storage is released by the wk_storage_free that drops the last one.
 * NULL is a no-op. */
WK_API void wk_storage_retain(wk_storage *s);
/* The storage's base address: host memory on the CPU, a device address on a GPU (element i of a
 * layout l is at base + (l.offset + ...) * wk_dtype_size). NULL for NULL or an empty import. */
WK_API void *wk_storage_data(const wk_storage *s);
/* 1 if the storage was imported with DLPack's read-only flag: in-place ops (wk_const_set,
 * wk_copy_strided_src, wk_copy2d, wk_scatter_set, wk_scatter_add_set) refuse it with
 * WK_ERR_INVALID_ARGUMENT. 0 otherwise. */
WK_API int wk_storage_is_readonly(const wk_storage *s);
/* *stream: the native stream the device's work is queued on (CUstream on CUDA, hipStream_t on
 * ROCm), the device made current in the calling thread; NULL on the CPU. */
WK_API wk_status wk_device_stream(void **stream, wk_device *dev);

/* ---------------------------------------------------------------- DLPack */
/* out: the DLPack device of dev (kDLCPU 0, kDLCUDA N, kDLROCM N). */
WK_API wk_status wk_dlpack_device(DLDevice *out, const wk_device *dev);
/* out: the DLPack dtype of dt, lanes 1: u8 u32 -> kDLUInt, i16 i32 i64 -> kDLInt, f16 f32 f64 ->
 * kDLFloat, bf16 -> kDLBfloat, f8e4m3 -> kDLFloat8_e4m3fn (OCP E4M3FN, as wick's). */
WK_API wk_status wk_dlpack_dtype(DLDataType *out, wk_dtype dt);
/* out: the wick dtype of a DLPack dtype: the inverse of wk_dlpack_dtype, plus kDLBool (8 bits)
 * as u8. Anything else (lanes != 1, complex, other widths, other fp8 kinds) is WK_ERR_DTYPE. */
WK_API wk_status wk_dlpack_to_dtype(wk_dtype *out, DLDataType t);

/* out: a DLPack 1.1 view of (s, l), no copy: data = wk_storage_data(s), byte_offset =
 * l->offset * element size, shape and strides from l (strides may be 0), flags READ_ONLY when s
 * is read-only. Holds a reference on s until its deleter runs. An empty view has data NULL. */
WK_API wk_status wk_dlpack_export(DLManagedTensorVersioned **out, wk_storage *s, const wk_layout *l);
/* The same as an unversioned DLManagedTensor. A read-only storage is refused
 * (WK_ERR_NOT_SUPPORTED): the old struct cannot say so. */
WK_API wk_status wk_dlpack_export_legacy(DLManagedTensor **out, wk_storage *s, const wk_layout *l);

/* out, lout: a storage on dev viewing t's memory (no copy) and the layout that reads t's
 * elements (offset 0; the storage spans exactly the elements the view reaches). dev must be the
 * tensor's device: kDLCPU (or pinned host memory, kDLCUDAHost / kDLROCMHost) for the CPU,
 * kDLCUDA / kDLROCM with device_id = the ordinal for a GPU (else WK_ERR_DEVICE_MISMATCH; other
 * device types WK_ERR_NOT_SUPPORTED). Statuses: major version other than 1 WK_ERR_NOT_SUPPORTED;
 * a dtype wick lacks WK_ERR_DTYPE; ndim > WK_MAX_RANK WK_ERR_NOT_SUPPORTED; a negative dim
 * WK_ERR_SHAPE; a negative stride, or data + byte_offset not aligned to the element size,
 * WK_ERR_LAYOUT; a size that overflows WK_ERR_OVERFLOW. READ_ONLY makes a read-only storage.
 * On success t belongs to the storage (see "Ownership"); on failure it is untouched. */
WK_API wk_status wk_dlpack_import(wk_storage **out, wk_layout *lout, wk_device *dev,
                                  DLManagedTensorVersioned *t);
/* The same for an unversioned DLManagedTensor (never read-only). */
WK_API wk_status wk_dlpack_import_legacy(wk_storage **out, wk_layout *lout, wk_device *dev,
                                         DLManagedTensor *t);

#ifdef __cplusplus
}
#endif
#endif /* WICK_DLPACK_H */
