/* storage.c: typed buffers on a device: allocation, host transfers, clone, free. */
#include "backend.h"
#include "wk_core.h"
#include "api.h"
#include <stdio.h>
#include <string.h>

wk_status wk_storage_new(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n, const char *op)
{
    size_t es = wk_dtype_size(dtype);
    if (n > (size_t)INT64_MAX / (es ? es : 1))
        return wk_err(WK_ERR_OVERFLOW, "%s: %zu elements of %s overflow", op, n,
                      wk_dtype_name(dtype));
    wk_storage *s = wk_calloc(1, sizeof *s);
    if (!s)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    wk_status st = dev->be->alloc(dev, n * es, &s->data);
    if (st != WK_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", wk_last_error());
        wk_free(s);
        return wk_err(st, "%s: %zu elements of %s: %s", op, n, wk_dtype_name(dtype), why);
    }
    s->dev = dev;
    s->dtype = dtype;
    s->len = n;
    atomic_init(&s->refs, 1);
    wk_device_retain(dev);
    wk_live_add(1);
    *out = s;
    return WK_OK;
}

void wk_storage_free(wk_storage *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) > 1)
        return;
    wk_device *dev = s->dev;
    if (s->release)
        s->release(s->release_ctx);
    else
        dev->be->free(dev, s->data);
    wk_free(s);
    wk_live_add(-1);
    wk_device_release(dev);
}

wk_status wk_check_writable(const wk_storage *s, const char *op)
{
    if (s && s->readonly)
        return wk_err(WK_ERR_INVALID_ARGUMENT,
                      "%s: the destination is read-only (imported with DLPack's read-only flag)", op);
    return WK_OK;
}

static wk_status check_new(wk_storage **out, wk_device *dev, wk_dtype dtype, const char *op)
{
    if (!out || !dev)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s", op, out ? "device" : "output");
    if (!wk_dtype_valid(dtype))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d", op, (int)dtype);
    return WK_OK;
}

wk_status wk_storage_alloc_uninit(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n)
{
    wk_status st = check_new(out, dev, dtype, "wk_storage_alloc_uninit");
    if (st)
        return st;
    return wk_storage_new(out, dev, dtype, n, "wk_storage_alloc_uninit");
}

wk_status wk_storage_zeros(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n)
{
    wk_status st = check_new(out, dev, dtype, "wk_storage_zeros");
    if (st)
        return st;
    wk_storage *s;
    st = wk_storage_new(&s, dev, dtype, n, "wk_storage_zeros");
    if (st)
        return st;
    st = dev->be->memset_zero(dev, s->data, n * wk_dtype_size(dtype));
    if (st) {
        wk_storage_free(s);
        return st;
    }
    *out = s;
    return WK_OK;
}

wk_status wk_storage_from_host(wk_storage **out, wk_device *dev, wk_dtype dtype, const void *src,
                               size_t n)
{
    wk_status st = check_new(out, dev, dtype, "wk_storage_from_host");
    if (st)
        return st;
    if (!src && n > 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_storage_from_host: NULL source for %zu elements", n);
    wk_storage *s;
    st = wk_storage_new(&s, dev, dtype, n, "wk_storage_from_host");
    if (st)
        return st;
    if (n > 0)
        st = dev->be->upload(dev, s->data, src, n * wk_dtype_size(dtype));
    if (st) {
        wk_storage_free(s);
        return st;
    }
    *out = s;
    return WK_OK;
}

wk_status wk_storage_to_host(void *dst, size_t n, const wk_storage *s)
{
    if (!s || (!dst && n > 0))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_storage_to_host: NULL %s", s ? "destination" : "storage");
    if (n != s->len)
        return wk_err(WK_ERR_SHAPE, "wk_storage_to_host: asked for %zu elements of a %s storage of %zu",
                      n, wk_dtype_name(s->dtype), s->len);
    if (n == 0)
        return WK_OK;
    return s->dev->be->download(s->dev, dst, s->data, n * wk_dtype_size(s->dtype));
}

wk_status wk_storage_clone(wk_storage **out, const wk_storage *s)
{
    if (!out || !s)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_storage_clone: NULL %s", out ? "storage" : "output");
    wk_storage *c;
    wk_status st = wk_storage_new(&c, s->dev, s->dtype, s->len, "wk_storage_clone");
    if (st)
        return st;
    if (s->len > 0)
        st = s->dev->be->copy(s->dev, c->data, s->data, s->len * wk_dtype_size(s->dtype));
    if (st) {
        wk_storage_free(c);
        return st;
    }
    *out = c;
    return WK_OK;
}

wk_dtype wk_storage_dtype(const wk_storage *s) { return s ? s->dtype : WK_DTYPE_U8; }
size_t wk_storage_len(const wk_storage *s) { return s ? s->len : 0; }
wk_device *wk_storage_device(const wk_storage *s) { return s ? s->dev : NULL; }
