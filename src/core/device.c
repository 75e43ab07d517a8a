/* device.c: backend registry and device handles ("cpu", "cuda:N", "rocm:N", "simt:N", "auto"). */
#include "backend.h"
#include "wk_core.h"
#include <stdlib.h>
#include <string.h>

const wk_backend *wk_backend_for(wk_backend_kind kind)
{
    switch (kind) {
    case WK_BACKEND_CPU: return &wk_cpu_backend;
    case WK_BACKEND_CUDA: return &wk_cuda_backend;
    case WK_BACKEND_ROCM: return &wk_rocm_backend;
    case WK_BACKEND_SIMT: return &wk_simt_backend;
    }
    return NULL;
}

bool wk_backend_has_family(const wk_backend *be, wk_op op)
{
    switch (op) {
    case WK_OP_EXP: case WK_OP_LOG: case WK_OP_SIN: case WK_OP_COS: case WK_OP_TANH:
    case WK_OP_ABS: case WK_OP_NEG: case WK_OP_RECIP: case WK_OP_SQR: case WK_OP_SQRT:
    case WK_OP_GELU: case WK_OP_GELU_ERF: case WK_OP_ERF: case WK_OP_RELU: case WK_OP_SILU:
    case WK_OP_FLOOR: case WK_OP_CEIL: case WK_OP_ROUND: case WK_OP_SIGN: case WK_OP_SIGMOID:
    case WK_OP_AFFINE: case WK_OP_POWF: case WK_OP_ELU:
        return be->unary != NULL;
    case WK_OP_ADD: case WK_OP_SUB: case WK_OP_MUL: case WK_OP_DIV: case WK_OP_MAXIMUM:
    case WK_OP_MINIMUM: case WK_OP_SWIGLU: case WK_OP_GEGLU: case WK_OP_GEGLU_ERF:
    case WK_OP_EQ: case WK_OP_NE: case WK_OP_LT: case WK_OP_LE: case WK_OP_GT: case WK_OP_GE:
        return be->binary != NULL;
    case WK_OP_WHERE_COND: return be->where_cond != NULL;
    case WK_OP_TO_DTYPE: return be->to_dtype != NULL;
    case WK_OP_CONST_SET: return be->const_set != NULL;
    case WK_OP_ZEROS: return be->memset_zero != NULL;
    case WK_OP_SUM: case WK_OP_MIN: case WK_OP_MAX: case WK_OP_ARGMIN: case WK_OP_ARGMAX:
        return be->reduce != NULL;
    case WK_OP_COPY_STRIDED: return be->copy_strided != NULL;
    case WK_OP_COPY2D: return be->copy2d != NULL;
    case WK_OP_RAND_UNIFORM: case WK_OP_RAND_NORMAL: return be->rand != NULL;
    case WK_OP_MATMUL: return be->matmul != NULL;
    case WK_OP_CONV1D: case WK_OP_CONV_TRANSPOSE1D: case WK_OP_CONV2D: case WK_OP_CONV_TRANSPOSE2D:
        return be->conv != NULL;
    case WK_OP_AVG_POOL2D: case WK_OP_MAX_POOL2D: return be->pool2d != NULL;
    case WK_OP_UPSAMPLE_NEAREST1D: case WK_OP_UPSAMPLE_NEAREST2D: case WK_OP_UPSAMPLE_BILINEAR2D:
        return be->upsample != NULL;
    case WK_OP_INDEX_SELECT: case WK_OP_GATHER: case WK_OP_SCATTER_SET: case WK_OP_SCATTER_ADD_SET:
    case WK_OP_INDEX_ADD:
        return be->index != NULL;
    case WK_OP_SOFTMAX_LAST_DIM: return be->softmax != NULL;
    case WK_OP_RMS_NORM: case WK_OP_LAYER_NORM: return be->norm != NULL;
    case WK_OP_ADD_RMS_NORM: case WK_OP_ADD_LAYER_NORM: return be->add_norm != NULL;
    case WK_OP_ROPE: case WK_OP_ROPE_I: case WK_OP_ROPE_THD: return be->rope != NULL;
    case WK_OP_ARG_SORT_LAST_DIM: return be->arg_sort != NULL;
    case WK_OP_DEQUANTIZE: return be->dequantize != NULL && be->supports_q != NULL;
    case WK_OP_QMATMUL: return be->qmatmul != NULL && be->supports_q != NULL;
    case WK_OP_QEMBEDDING: return be->qembedding != NULL && be->supports_q != NULL;
    case WK_OP_DECODE_ATTENTION: return be->attention != NULL;
    case WK_OP_ROPE_KV_APPEND: return be->rope_kv != NULL;
    case WK_OP_QUANTIZE_ACT: return be->quantize_act != NULL;
    case WK_OP_ADD_RMS_NORM_ACT: return be->quantize_act != NULL && be->add_norm != NULL;
    case WK_OP_QMATMUL_ACT: return be->qmatmul_act != NULL && be->supports_q != NULL;
    case WK_OP_BINARY_ACT: return be->quantize_act != NULL && be->binary != NULL;
    }
    return false;
}

const char *wk_backend_name(wk_backend_kind kind)
{
    switch (kind) {
    case WK_BACKEND_CPU: return "cpu";
    case WK_BACKEND_CUDA: return "cuda";
    case WK_BACKEND_ROCM: return "rocm";
    case WK_BACKEND_SIMT: return "simt";
    }
    return "?";
}

wk_status wk_backend_device_count(int *n, const char **reason, wk_backend_kind kind)
{
    const wk_backend *be = wk_backend_for(kind);
    if (!n || !be)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_backend_device_count: %s",
                      n ? "unknown backend kind" : "NULL output");
    const char *why = "";
    *n = 0;
    wk_status st = be->device_count(n, &why);
    if (st != WK_OK) {
        *n = 0;
        if (!why || !*why)
            why = wk_last_error();
    }
    if (reason)
        *reason = why ? why : "";
    return WK_OK;
}

/* "cuda:3" -> kind, ordinal. Returns false if malformed. */
static bool parse_spec(const char *spec, wk_backend_kind *kind, int *ordinal)
{
    static const struct { const char *name; wk_backend_kind kind; } names[] = {
        {"cpu", WK_BACKEND_CPU}, {"cuda", WK_BACKEND_CUDA}, {"rocm", WK_BACKEND_ROCM},
        {"simt", WK_BACKEND_SIMT}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = strlen(names[i].name);
        if (strncmp(spec, names[i].name, len) != 0)
            continue;
        const char *rest = spec + len;
        *kind = names[i].kind;
        *ordinal = 0;
        if (*rest == '\0')
            return true;
        if (*rest != ':' || rest[1] < '0' || rest[1] > '9')
            return false;
        char *end;
        long v = strtol(rest + 1, &end, 10);
        if (*end != '\0' || v > 1 << 20)
            return false;
        *ordinal = (int)v;
        return true;
    }
    return false;
}

wk_status wk_device_open(wk_device **out, const char *spec)
{
    if (!out || !spec)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_device_open: NULL %s", out ? "spec" : "output");
    wk_backend_kind kind = WK_BACKEND_CPU;
    int ordinal = 0;
    if (strcmp(spec, "auto") == 0) {
        int n = 0;
        if (wk_backend_device_count(&n, NULL, WK_BACKEND_CUDA) == WK_OK && n > 0)
            kind = WK_BACKEND_CUDA;
        else if (wk_backend_device_count(&n, NULL, WK_BACKEND_ROCM) == WK_OK && n > 0)
            kind = WK_BACKEND_ROCM;
    } else if (!parse_spec(spec, &kind, &ordinal)) {
        return wk_err(WK_ERR_INVALID_ARGUMENT,
                      "wk_device_open: bad spec \"%.64s\" (want cpu, cuda:N, rocm:N, simt:N or auto)", spec);
    }
    const wk_backend *be = wk_backend_for(kind);
    int n = 0;
    const char *why = "";
    if (wk_backend_device_count(&n, &why, kind) != WK_OK || ordinal >= n) {
        if (n == 0)
            return wk_err(WK_ERR_NO_DEVICE, "wk_device_open(\"%.64s\"): %s unavailable: %s", spec,
                          be->name, why && *why ? why : "no devices");
        return wk_err(WK_ERR_NO_DEVICE, "wk_device_open(\"%.64s\"): only %d %s device(s)", spec, n,
                      be->name);
    }
    wk_device *dev = wk_calloc(1, sizeof *dev);
    if (!dev)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_device_open: out of host memory");
    dev->be = be;
    dev->kind = kind;
    dev->ordinal = ordinal;
    dev->rng_seed = 299792458u; /* the documented default seed (wick.h) */
    wk_status st = be->device_open(dev, ordinal);
    if (st != WK_OK) {
        wk_free(dev);
        return st;
    }
    atomic_init(&dev->refs, 1);
    atomic_init(&dev->closed, false);
    wk_live_add(1);
    *out = dev;
    return WK_OK;
}

void wk_device_retain(wk_device *dev) { atomic_fetch_add(&dev->refs, 1); }

void wk_device_release(wk_device *dev)
{
    if (atomic_fetch_sub(&dev->refs, 1) > 1)
        return;
    dev->be->device_close(dev);
    wk_free(dev);
    wk_live_add(-1);
}

/* The opener's reference goes once: a second close of a handle that storages keep alive is
 * ignored instead of freeing the device under them. */
void wk_device_close(wk_device *dev)
{
    if (dev && !atomic_exchange(&dev->closed, true))
        wk_device_release(dev);
}

wk_backend_kind wk_device_backend(const wk_device *dev) { return dev ? dev->kind : WK_BACKEND_CPU; }
int wk_device_ordinal(const wk_device *dev) { return dev ? dev->ordinal : -1; }
const char *wk_device_name(const wk_device *dev) { return dev ? dev->name : "(null)"; }

int wk_device_same(const wk_device *a, const wk_device *b)
{
    return a && b && a->kind == b->kind && a->ordinal == b->ordinal;
}

wk_status wk_device_synchronize(wk_device *dev)
{
    if (!dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_device_synchronize: NULL device");
    return dev->be->synchronize(dev);
}

wk_code_source wk_device_code_source(const wk_device *dev)
{
    return dev && dev->be->code_source ? dev->be->code_source(dev) : WK_CODE_BUILTIN;
}

wk_status wk_device_warmup(wk_device *dev, int threads)
{
    if (!dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_device_warmup: NULL device");
    return dev->be->warmup ? dev->be->warmup(dev, threads) : WK_OK;
}

int wk_device_supports(const wk_device *dev, wk_op op, wk_dtype dtype)
{
    if (!dev || !wk_op_defined(op, dtype))
        return 0;
    return dev->be->supports(dev, op, dtype) ? 1 : 0;
}
