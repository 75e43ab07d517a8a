/* gpu_blob.c: the embedded code objects as the driver takes them. They are embedded
 * zstd-compressed where the build had zstd (cmake/gpu.cmake: always for the AMD offload bundles,
 * whose every-gfx-target bundles compress about tenfold; for the NVIDIA fatbins when zstd was
 * found, else nvcc compressed them itself and they pass through). A compressed one is inflated
 * here, once per process and vendor, at the first load of its module. */
#include "gpu_driver.h"
#include "wk_core.h"
#include <pthread.h>
#include <string.h>
#ifdef WK_HAVE_ZSTD
#include <zstd.h>
#endif

/* A code object larger than this is a corrupt frame header, not a code object. */
#define WK_GPU_BLOB_MAX ((unsigned long long)1 << 30)

static pthread_mutex_t blob_mu = PTHREAD_MUTEX_INITIALIZER;
static void **blob_inflated; /* per embedded module and vendor (2 mi + hip): inflated, or NULL */
static size_t *blob_size;

#ifdef WK_HAVE_ZSTD
static wk_status inflate(const char *name, const char *vendor, const unsigned char *src, size_t n,
                         void **out, size_t *size)
{
    const unsigned long long want = ZSTD_getFrameContentSize(src, n);
    if (want == ZSTD_CONTENTSIZE_ERROR || want == ZSTD_CONTENTSIZE_UNKNOWN || want == 0 ||
        want > WK_GPU_BLOB_MAX)
        return wk_err(WK_ERR_INTERNAL, "module %s: the embedded %s code object is not a zstd "
                      "frame of known size", name, vendor);
    void *p = wk_malloc((size_t)want);
    if (!p)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "module %s: out of host memory inflating its %s code "
                      "object (%llu bytes)", name, vendor, want);
    const size_t got = ZSTD_decompress(p, (size_t)want, src, n);
    if (ZSTD_isError(got) || got != want) {
        wk_free(p);
        return wk_err(WK_ERR_INTERNAL, "module %s: inflating its %s code object: %s", name,
                      vendor, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output");
    }
    *out = p;
    *size = (size_t)want;
    return WK_OK;
}
#endif

wk_status wk_gpu_embedded_image(const void **image, size_t *size, wk_backend_kind kind, int mi)
{
    const wk_gpu_embedded *e = &wk_gpu_embedded_modules[mi];
    const bool cuda = kind == WK_BACKEND_CUDA;
    const unsigned char *p = cuda ? e->cuda : e->hip, *end = cuda ? e->cuda_end : e->hip_end;
    const char *vendor = cuda ? "CUDA" : "ROCm";
    *image = NULL;
    *size = 0;
    if (!p || !(cuda ? e->cuda_packed : e->hip_packed)) {
        *image = p;
        *size = p ? (size_t)(end - p) : 0;
        return WK_OK;
    }
#ifndef WK_HAVE_ZSTD
    return wk_err(WK_ERR_INTERNAL, "module %s: the %s code object is compressed but this build "
                  "has no zstd", e->name, vendor);
#else
    wk_status st = WK_OK;
    const int slot = 2 * mi + (cuda ? 0 : 1);
    pthread_mutex_lock(&blob_mu);
    if (!blob_inflated) {
        const size_t n = 2 * (size_t)wk_gpu_embedded_module_count;
        blob_inflated = wk_calloc(n, sizeof *blob_inflated);
        blob_size = wk_calloc(n, sizeof *blob_size);
        if (!blob_inflated || !blob_size) {
            wk_free(blob_inflated);
            wk_free(blob_size);
            blob_inflated = NULL;
            blob_size = NULL;
            st = wk_err(WK_ERR_OUT_OF_MEMORY, "gpu: out of host memory");
        }
    }
    if (st == WK_OK && !blob_inflated[slot])
        st = inflate(e->name, vendor, p, (size_t)(end - p), &blob_inflated[slot],
                     &blob_size[slot]);
    if (st == WK_OK) {
        *image = blob_inflated[slot];
        *size = blob_size[slot];
    }
    pthread_mutex_unlock(&blob_mu);
    return st;
#endif
}

void wk_gpu_embedded_release(void)
{
    pthread_mutex_lock(&blob_mu);
    if (blob_inflated)
        for (int i = 0; i < 2 * wk_gpu_embedded_module_count; i++)
            wk_free(blob_inflated[i]);
    wk_free(blob_inflated);
    wk_free(blob_size);
    blob_inflated = NULL;
    blob_size = NULL;
    pthread_mutex_unlock(&blob_mu);
}
