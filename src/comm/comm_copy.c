/* comm_copy.c: wk_storage_copy_between, a copy between the storages of any two devices of one
 * host. One device handle (or two CPU handles): the backend's own copy (wk_copy2d). Two devices of one GPU driver with a
 * peer copy (CUDA): cuMemcpyPeerAsync, direct where the devices reach each other. Otherwise
 * through host memory: the source read with its driver (after its stream's queued work), the
 * destination written with its driver, each waited for. */
#include "comm_impl.h"
#include "gpu/gpu_driver.h"
#include <string.h>

static bool on_gpu_driver(const wk_device *d) { return d->kind != WK_BACKEND_CPU; }

/* host <- dev's bytes at src (src: an address of dev's memory). */
static wk_status read_part(void *host, const wk_device *dev, const void *src, size_t bytes)
{
    if (!on_gpu_driver(dev)) {
        memcpy(host, src, bytes);
        return WK_OK;
    }
    wk_gpu_device *g = wk_gpu_dev(dev);
    wk_status s = g->drv->d2h(g->ctx, host, src, bytes);
    return s == WK_OK ? g->drv->sync(g->ctx) : s;
}

static wk_status write_part(const wk_device *dev, void *dst, const void *host, size_t bytes)
{
    if (!on_gpu_driver(dev)) {
        memcpy(dst, host, bytes);
        return WK_OK;
    }
    wk_gpu_device *g = wk_gpu_dev(dev);
    wk_status s = g->drv->h2d(g->ctx, dst, host, bytes);
    return s == WK_OK ? g->drv->sync(g->ctx) : s;
}

wk_status wk_storage_copy_between(wk_storage *dst, size_t doff, const wk_storage *src,
                                  size_t soff, size_t count)
{
    const char *op = "wk_storage_copy_between";
    if (!dst || !src)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", op, !dst ? "dst" : "src");
    if (dst->dtype != src->dtype)
        return wk_err(WK_ERR_DTYPE, "%s: dst is %s, src is %s", op, wk_dtype_name(dst->dtype),
                      wk_dtype_name(src->dtype));
    if (doff > dst->len || count > dst->len - doff || soff > src->len || count > src->len - soff)
        return wk_err(WK_ERR_LAYOUT, "%s: %zu elements at dst %zu (of %zu) / src %zu (of %zu) "
                      "pass a storage's end", op, count, doff, dst->len, soff, src->len);
    if (dst->readonly)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: dst is read-only", op);
    if (count == 0)
        return WK_OK;
    const bool cpu_pair = dst->dev->kind == WK_BACKEND_CPU && src->dev->kind == WK_BACKEND_CPU;
    if (dst->dev == src->dev || cpu_pair)
        return wk_copy2d(dst, src, 1, count, count, count, soff, doff);
    const size_t es = wk_dtype_size(dst->dtype), bytes = count * es;
    char *d = (char *)dst->data + doff * es;
    const char *s = (const char *)src->data + soff * es;
    if (!on_gpu_driver(dst->dev) && !on_gpu_driver(src->dev)) {
        memmove(d, s, bytes);
        return WK_OK;
    }
    if (on_gpu_driver(dst->dev) && on_gpu_driver(src->dev)) {
        wk_gpu_device *gd = wk_gpu_dev(dst->dev), *gs = wk_gpu_dev(src->dev);
        if (gd->drv == gs->drv && gd->drv->peer_copy)
            return gd->drv->peer_copy(gd->ctx, d, gs->ctx, s, bytes);
    }
    void *host = wk_malloc(bytes);
    if (!host)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: %zu bytes of host staging", op, bytes);
    wk_status st = read_part(host, src->dev, s, bytes);
    if (st == WK_OK)
        st = write_part(dst->dev, d, host, bytes);
    wk_free(host);
    return st;
}
