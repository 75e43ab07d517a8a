/* cpu_backend.c: the CPU backend's vtable: one device ("cpu"), host memory through the allocation
 * hook, and the op entry points of cpu_ops.h. Ops run synchronously, multi-threaded with OpenMP. */
#include "cpu_ops.h"
#include "wk_core.h"
#include <omp.h>
#include <stdio.h>
#include <string.h>

static wk_status cpu_device_count(int *n, const char **reason)
{
    *n = 1;
    if (reason)
        *reason = "";
    return WK_OK;
}

static wk_status cpu_device_open(wk_device *dev, int ordinal)
{
    (void)ordinal;
    snprintf(dev->name, sizeof dev->name, "cpu (%d threads)", omp_get_max_threads());
    dev->impl = NULL;
    return WK_OK;
}

static void cpu_device_close(wk_device *dev) { (void)dev; }

static wk_status cpu_synchronize(wk_device *dev)
{
    (void)dev;
    return WK_OK; /* every op has finished when it returns */
}

static bool cpu_supports(const wk_device *dev, wk_op op, wk_dtype dt)
{
    (void)dev;
    /* Every defined op whose family this backend's vtable has. */
    return wk_op_defined(op, dt) && wk_backend_has_family(&wk_cpu_backend, op);
}

static wk_status cpu_alloc(wk_device *dev, size_t bytes, void **ptr)
{
    (void)dev;
    /* A 0-byte storage still gets a valid, unique pointer. */
    void *p = wk_host_alloc(bytes ? bytes : 1);
    if (!p)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "cpu: cannot allocate %zu bytes", bytes);
    *ptr = p;
    return WK_OK;
}

static void cpu_free(wk_device *dev, void *ptr)
{
    (void)dev;
    wk_host_free(ptr);
}

/* Host to host: upload, download and copy are all memcpy (non-overlapping by contract). */
static wk_status cpu_memcpy(wk_device *dev, void *dst, const void *src, size_t bytes)
{
    (void)dev;
    if (bytes)
        memcpy(dst, src, bytes);
    return WK_OK;
}

static wk_status cpu_memset_zero(wk_device *dev, void *dst, size_t bytes)
{
    (void)dev;
    if (bytes)
        memset(dst, 0, bytes);
    return WK_OK;
}

const wk_backend wk_cpu_backend = {
    .name = "cpu",
    .kind = WK_BACKEND_CPU,
    .device_count = cpu_device_count,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .synchronize = cpu_synchronize,
    .supports = cpu_supports,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .copy = cpu_memcpy,
    .memset_zero = cpu_memset_zero,
    .unary = wk_cpu_unary,
    .binary = wk_cpu_binary,
    .where_cond = wk_cpu_where_cond,
    .to_dtype = wk_cpu_to_dtype,
    .const_set = wk_cpu_const_set,
    .reduce = wk_cpu_reduce,
    .copy_strided = wk_cpu_copy_strided,
    .copy2d = wk_cpu_copy2d,
    .rand = wk_cpu_rand,
    .matmul = wk_cpu_matmul,
    .conv = wk_cpu_conv,
    /* @marker:linalg */
    .pool2d = wk_cpu_pool2d,
    .upsample = wk_cpu_upsample,
    /* @marker:image */
    .index = wk_cpu_index,
    /* @marker:index */
    .softmax = wk_cpu_softmax,
    .norm = wk_cpu_norm,
    .add_norm = wk_cpu_add_norm,
    .rope = wk_cpu_rope,
    .attention = wk_cpu_attention,
    .rope_kv = wk_cpu_rope_kv,
    .arg_sort = wk_cpu_arg_sort,
    /* @marker:fused */
    .supports_q = wk_cpu_supports_q,
    .dequantize = wk_cpu_dequantize,
    .qmatmul = wk_cpu_qmatmul,
    .quantize = wk_cpu_quantize,
    .qembedding = wk_cpu_qembedding,
    .quantize_act = wk_cpu_quantize_act,
    .qmatmul_act = wk_cpu_qmatmul_act,
};
