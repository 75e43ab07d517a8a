/* device.c: backend registry and device handles ("cpu", "cuda:N", "rocm:N", "auto"). */
#include "backend.h"
#include "wk_core.h"
#include <stdlib.h>
#include <string.h>

/* TEMPORARY while src/gpu lands: weak, so the CPU half links alone. */
extern const wk_backend wk_cuda_backend __attribute__((weak));
extern const wk_backend wk_rocm_backend __attribute__((weak));

static wk_status unbuilt_count(int *n, const char **reason)
{
    *n = 0;
    *reason = "not built into this library";
    return WK_OK;
}
static const wk_backend wk_unbuilt_cuda = {.name = "cuda", .kind = WK_BACKEND_CUDA,
                                           .device_count = unbuilt_count};
static const wk_backend wk_unbuilt_rocm = {.name = "rocm", .kind = WK_BACKEND_ROCM,
                                           .device_count = unbuilt_count};

const wk_backend *wk_backend_for(wk_backend_kind kind)
{
    switch (kind) {
    case WK_BACKEND_CPU: return &wk_cpu_backend;
    case WK_BACKEND_CUDA: return &wk_cuda_backend ? &wk_cuda_backend : &wk_unbuilt_cuda;
    case WK_BACKEND_ROCM: return &wk_rocm_backend ? &wk_rocm_backend : &wk_unbuilt_rocm;
    }
    return NULL;
}

const char *wk_backend_name(wk_backend_kind kind)
{
    switch (kind) {
    case WK_BACKEND_CPU: return "cpu";
    case WK_BACKEND_CUDA: return "cuda";
    case WK_BACKEND_ROCM: return "rocm";
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
        {"cpu", WK_BACKEND_CPU}, {"cuda", WK_BACKEND_CUDA}, {"rocm", WK_BACKEND_ROCM}};
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
                      "wk_device_open: bad spec \"%.64s\" (want cpu, cuda:N, rocm:N or auto)", spec);
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
    wk_live_add(1);
    *out = dev;
    return WK_OK;
}

void wk_device_close(wk_device *dev)
{
    if (!dev)
        return;
    dev->be->device_close(dev);
    wk_free(dev);
    wk_live_add(-1);
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

int wk_device_supports(const wk_device *dev, wk_op op, wk_dtype dtype)
{
    if (!dev || !wk_op_defined(op, dtype))
        return 0;
    return dev->be->supports(dev, op, dtype) ? 1 : 0;
}
