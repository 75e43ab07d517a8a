/* dlpack.c: DLPack 1.x export and import of wick storages (include/wick_dlpack.h), zero-copy,
 * for the CPU, CUDA and ROCm devices; and the storage facts interop needs (references, base
 * address, read-only flag, the device's stream). Tests: tests/test_dlpack.c. */
#include "wick_dlpack.h"
#include "backend.h"
#include "wk_core.h"
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(DLDataType) == 4, "DLDataType is 4 bytes");
_Static_assert(sizeof(DLDevice) == 8, "DLDevice is 8 bytes");

/* ---------------------------------------------------------------- storage facts */
void wk_storage_retain(wk_storage *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
}

void *wk_storage_data(const wk_storage *s) { return s ? s->data : NULL; }

int wk_storage_is_readonly(const wk_storage *s) { return s && s->readonly ? 1 : 0; }

wk_status wk_device_stream(void **stream, wk_device *dev)
{
    if (!stream || !dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_device_stream: NULL %s", stream ? "device" : "output");
    *stream = NULL;
    return dev->be->stream ? dev->be->stream(dev, stream) : WK_OK;
}

/* ---------------------------------------------------------------- devices and dtypes */
wk_status wk_dlpack_device(DLDevice *out, const wk_device *dev)
{
    if (!out || !dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_dlpack_device: NULL %s", out ? "device" : "output");
    static const DLDeviceType types[WK_BACKEND_COUNT] = {kDLCPU, kDLCUDA, kDLROCM};
    out->device_type = types[dev->kind];
    out->device_id = dev->kind == WK_BACKEND_CPU ? 0 : dev->ordinal;
    return WK_OK;
}

/* One row per wick dtype, in wk_dtype order. */
static const DLDataType dl_types[WK_DTYPE_COUNT] = {
    [WK_DTYPE_U8] = {kDLUInt, 8, 1},     [WK_DTYPE_U32] = {kDLUInt, 32, 1},
    [WK_DTYPE_I16] = {kDLInt, 16, 1},    [WK_DTYPE_I32] = {kDLInt, 32, 1},
    [WK_DTYPE_I64] = {kDLInt, 64, 1},    [WK_DTYPE_BF16] = {kDLBfloat, 16, 1},
    [WK_DTYPE_F16] = {kDLFloat, 16, 1},  [WK_DTYPE_F32] = {kDLFloat, 32, 1},
    [WK_DTYPE_F64] = {kDLFloat, 64, 1},  [WK_DTYPE_F8E4M3] = {kDLFloat8_e4m3fn, 8, 1},
};

wk_status wk_dlpack_dtype(DLDataType *out, wk_dtype dt)
{
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_dlpack_dtype: NULL output");
    if (!wk_dtype_valid(dt))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_dlpack_dtype: unknown dtype %d", (int)dt);
    *out = dl_types[dt];
    return WK_OK;
}

wk_status wk_dlpack_to_dtype(wk_dtype *out, DLDataType t)
{
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_dlpack_to_dtype: NULL output");
    if (t.lanes == 1) {
        if (t.code == kDLBool && t.bits == 8) {
            *out = WK_DTYPE_U8;
            return WK_OK;
        }
        for (int d = 0; d < WK_DTYPE_COUNT; d++)
            if (dl_types[d].code == t.code && dl_types[d].bits == t.bits) {
                *out = (wk_dtype)d;
                return WK_OK;
            }
    }
    return wk_err(WK_ERR_DTYPE,
                  "DLPack: no wick dtype for (code %u, bits %u, lanes %u); wick has u8 u32 i16 "
                  "i32 i64 bf16 f16 f32 f64 f8e4m3 (e4m3fn) and bool as u8, one lane",
                  (unsigned)t.code, (unsigned)t.bits, (unsigned)t.lanes);
}

/* ---------------------------------------------------------------- export */
/* One allocation per exported tensor: the managed struct first (so the deleter's argument is the
 * block), then the reference it holds and the shape/strides arrays it points into. */
typedef struct export_v {
    DLManagedTensorVersioned mt;
    wk_storage *s;
    int64_t shape[WK_MAX_RANK], strides[WK_MAX_RANK];
} export_v;
typedef struct export_l {
    DLManagedTensor mt;
    wk_storage *s;
    int64_t shape[WK_MAX_RANK], strides[WK_MAX_RANK];
} export_l;

static void export_v_delete(DLManagedTensorVersioned *self)
{
    export_v *e = (export_v *)self;
    wk_storage_free(e->s);
    wk_free(e);
}

static void export_l_delete(DLManagedTensor *self)
{
    export_l *e = (export_l *)self;
    wk_storage_free(e->s);
    wk_free(e);
}

/* Fills t (pointing into shape/strides) for (s, l), after checking them. */
static wk_status export_fill(DLTensor *t, int64_t *shape, int64_t *strides, wk_storage *s,
                             const wk_layout *l, const char *op)
{
    wk_status st;
    if (!s)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage", op);
    if ((st = wk_layout_check(l, s->len, op, "the exported view")))
        return st;
    memset(t, 0, sizeof *t);
    wk_dlpack_device(&t->device, s->dev);
    t->dtype = dl_types[s->dtype];
    t->ndim = l->rank;
    for (int32_t k = 0; k < l->rank; k++) {
        shape[k] = l->dims[k];
        strides[k] = l->strides[k];
    }
    t->shape = shape;
    t->strides = strides;
    if (wk_layout_elem_count(l) > 0) { /* DLPack: an empty tensor has data NULL */
        t->data = s->data;
        t->byte_offset = (uint64_t)l->offset * (uint64_t)wk_dtype_size(s->dtype);
    }
    return WK_OK;
}

wk_status wk_dlpack_export(DLManagedTensorVersioned **out, wk_storage *s, const wk_layout *l)
{
    const char *op = "wk_dlpack_export";
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", op);
    export_v *e = wk_calloc(1, sizeof *e);
    if (!e)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    wk_status st = export_fill(&e->mt.dl_tensor, e->shape, e->strides, s, l, op);
    if (st) {
        wk_free(e);
        return st;
    }
    e->mt.version.major = DLPACK_MAJOR_VERSION;
    e->mt.version.minor = DLPACK_MINOR_VERSION;
    e->mt.manager_ctx = e;
    e->mt.deleter = export_v_delete;
    e->mt.flags = s->readonly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
    e->s = s;
    wk_storage_retain(s);
    *out = &e->mt;
    return WK_OK;
}

wk_status wk_dlpack_export_legacy(DLManagedTensor **out, wk_storage *s, const wk_layout *l)
{
    const char *op = "wk_dlpack_export_legacy";
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", op);
    if (s && s->readonly)
        return wk_err(WK_ERR_NOT_SUPPORTED,
                      "%s: the storage is read-only and the unversioned DLManagedTensor cannot say "
                      "so; export it with wk_dlpack_export (DLPack 1.x) or clone it first", op);
    export_l *e = wk_calloc(1, sizeof *e);
    if (!e)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    wk_status st = export_fill(&e->mt.dl_tensor, e->shape, e->strides, s, l, op);
    if (st) {
        wk_free(e);
        return st;
    }
    e->mt.manager_ctx = e;
    e->mt.deleter = export_l_delete;
    e->s = s;
    wk_storage_retain(s);
    *out = &e->mt;
    return WK_OK;
}

/* ---------------------------------------------------------------- import */
static const char *dl_device_name(int32_t type)
{
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return "a device type wick does not run on";
    }
}

/* The device check: t's device must be dev. */
static wk_status import_device(const DLTensor *t, const wk_device *dev, const char *op)
{
    const int32_t type = (int32_t)t->device.device_type;
    wk_backend_kind kind;
    switch (type) {
    case kDLCPU: case kDLCUDAHost: case kDLROCMHost: kind = WK_BACKEND_CPU; break;
    case kDLCUDA: kind = WK_BACKEND_CUDA; break;
    case kDLROCM: kind = WK_BACKEND_ROCM; break;
    default:
        return wk_err(WK_ERR_NOT_SUPPORTED,
                      "%s: device type %d (%s) is not supported; wick imports kDLCPU, kDLCUDA and "
                      "kDLROCM memory (and pinned host memory as the CPU's)",
                      op, (int)type, dl_device_name(type));
    }
    const int id = kind == WK_BACKEND_CPU ? 0 : t->device.device_id;
    const int ord = dev->kind == WK_BACKEND_CPU ? 0 : dev->ordinal;
    if (kind != dev->kind || id != ord)
        return wk_err(WK_ERR_DEVICE_MISMATCH,
                      "%s: the tensor lives on %s:%d but the target device is %s:%d (%s); open "
                      "the tensor's device, or copy the tensor there first",
                      op, dl_device_name(type), (int)t->device.device_id,
                      wk_backend_name(dev->kind), ord, dev->name);
    return WK_OK;
}

/* The layout reading t from base = data + byte_offset, and the storage length (elements) that
 * covers every element it reaches. */
static wk_status import_layout(wk_layout *l, size_t *len, const DLTensor *t, size_t es,
                               const char *op)
{
    if (t->ndim < 0 || t->ndim > WK_MAX_RANK)
        return wk_err(t->ndim < 0 ? WK_ERR_SHAPE : WK_ERR_NOT_SUPPORTED,
                      "%s: ndim %d outside wick's 0..%d", op, (int)t->ndim, WK_MAX_RANK);
    if (t->ndim > 0 && !t->shape)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL shape for ndim %d", op, (int)t->ndim);
    memset(l, 0, sizeof *l);
    l->rank = t->ndim;
    int64_t row = 1; /* row-major strides when t->strides is NULL */
    for (int32_t k = t->ndim - 1; k >= 0; k--) {
        const int64_t d = t->shape[k];
        if (d < 0)
            return wk_err(WK_ERR_SHAPE, "%s: dim %d is %lld < 0", op, (int)k, (long long)d);
        const int64_t s = t->strides ? t->strides[k] : row;
        if (s < 0)
            return wk_err(WK_ERR_LAYOUT,
                          "%s: dim %d has stride %lld; wick layouts need strides >= 0 (make the "
                          "tensor contiguous first)", op, (int)k, (long long)s);
        l->dims[k] = d;
        l->strides[k] = s;
        if (d > 0 && row > INT64_MAX / d)
            row = INT64_MAX; /* only the NULL-strides case reads it; the check below catches it */
        else
            row *= d;
    }
    for (int32_t k = 0; k < l->rank; k++)
        if (l->dims[k] == 0) { /* empty (checked per dim: the product may overflow) */
            *len = 0;
            return WK_OK;
        }
    /* the highest element reached, with overflow checks, in elements and then bytes */
    uint64_t hi = 0;
    for (int32_t k = 0; k < l->rank; k++) {
        const uint64_t d = (uint64_t)(l->dims[k] - 1), s = (uint64_t)l->strides[k];
        if (s && d > ((uint64_t)INT64_MAX / es - hi - 1) / s)
            return wk_err(WK_ERR_OVERFLOW, "%s: the view's extent overflows", op);
        hi += d * s;
    }
    *len = (size_t)(hi + 1);
    return WK_OK;
}

/* The import shared by both structs. On failure, nothing of t is kept. */
static wk_status import_tensor(wk_storage **out, wk_layout *lout, wk_device *dev, const DLTensor *t,
                               bool readonly, void (*release)(void *), void *ctx, const char *op)
{
    wk_status st;
    if (!out || !lout || !dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", op,
                      !out ? "output" : !lout ? "layout output" : "device");
    wk_dtype dt;
    if ((st = import_device(t, dev, op)))
        return st;
    if ((st = wk_dlpack_to_dtype(&dt, t->dtype))) {
        char why[400];
        snprintf(why, sizeof why, "%s", wk_last_error());
        return wk_err(st, "%s: %s", op, why);
    }
    const size_t es = wk_dtype_size(dt);
    wk_layout l;
    size_t len = 0;
    if ((st = import_layout(&l, &len, t, es, op)))
        return st;
    char *base = NULL;
    if (len > 0) {
        if (!t->data)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL data for %zu elements", op, len);
        base = (char *)t->data + t->byte_offset;
        if ((uintptr_t)base % es != 0)
            return wk_err(WK_ERR_LAYOUT,
                          "%s: data + byte_offset (%p + %llu) is not aligned to the %zu-byte "
                          "element size of %s", op, t->data, (unsigned long long)t->byte_offset,
                          es, wk_dtype_name(dt));
    }
    wk_storage *s = wk_calloc(1, sizeof *s);
    if (!s)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    s->dev = dev;
    s->dtype = dt;
    s->len = len;
    s->data = base;
    atomic_init(&s->refs, 1);
    s->readonly = readonly;
    s->release = release;
    s->release_ctx = ctx;
    wk_device_retain(dev);
    wk_live_add(1);
    *out = s;
    *lout = l;
    return WK_OK;
}

static void release_v(void *ctx)
{
    DLManagedTensorVersioned *t = ctx;
    if (t->deleter)
        t->deleter(t);
}

static void release_l(void *ctx)
{
    DLManagedTensor *t = ctx;
    if (t->deleter)
        t->deleter(t);
}

wk_status wk_dlpack_import(wk_storage **out, wk_layout *lout, wk_device *dev,
                           DLManagedTensorVersioned *t)
{
    const char *op = "wk_dlpack_import";
    if (!t)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL tensor", op);
    if (t->version.major != DLPACK_MAJOR_VERSION)
        return wk_err(WK_ERR_NOT_SUPPORTED,
                      "%s: DLPack major version %u; wick reads version %d (the caller keeps the "
                      "tensor and must call its deleter)",
                      op, (unsigned)t->version.major, DLPACK_MAJOR_VERSION);
    return import_tensor(out, lout, dev, &t->dl_tensor,
                         (t->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0, release_v, t, op);
}

wk_status wk_dlpack_import_legacy(wk_storage **out, wk_layout *lout, wk_device *dev,
                                  DLManagedTensor *t)
{
    const char *op = "wk_dlpack_import_legacy";
    if (!t)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL tensor", op);
    return import_tensor(out, lout, dev, &t->dl_tensor, false, release_l, t, op);
}
