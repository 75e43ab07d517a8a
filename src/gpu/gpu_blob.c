/* gpu_blob.c: the embedded code objects as the driver takes them. The AMD offload bundles are
 * embedded zstd-compressed (cmake/gpu.cmake; a bundle of every gfx target is most of the
 * library's size and compresses about tenfold); they are inflated here, once per process, at
 * the first load of their module. NVIDIA fatbins are compressed by nvcc itself and pass through. */
#include "gpu_driver.h"
#include "wk_core.h"
#include <pthread.h>
#include <string.h>
#ifdef WK_HAVE_ZSTD
#include <zstd.h>
#endif

/* A bundle larger than this is a corrupt frame header, not a code object. */
#define WK_GPU_BLOB_MAX ((unsigned long long)1 << 30)

static pthread_mutex_t blob_mu = PTHREAD_MUTEX_INITIALIZER;
static void **blob_inflated; /* per embedded module: its inflated HIP bundle, or NULL */
static size_t *blob_size;

#ifdef WK_HAVE_ZSTD
static wk_status inflate(const wk_gpu_embedded *e, void **out, size_t *size)
{
    const size_t n = (size_t)(e->hip_end - e->hip);
    const unsigned long long want = ZSTD_getFrameContentSize(e->hip, n);
    if (want == ZSTD_CONTENTSIZE_ERROR || want == ZSTD_CONTENTSIZE_UNKNOWN || want == 0 ||
        want > WK_GPU_BLOB_MAX)
        return wk_err(WK_ERR_INTERNAL, "module %s: the embedded ROCm code object is not a "
                      "zstd frame of known size", e->name);
    void *p = wk_malloc((size_t)want);
    if (!p)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "module %s: out of host memory inflating its ROCm "
                      "code object (%llu bytes)", e->name, want);
    const size_t got = ZSTD_decompress(p, (size_t)want, e->hip, n);
    if (ZSTD_isError(got) || got != want) {
        wk_free(p);
        return wk_err(WK_ERR_INTERNAL, "module %s: inflating its ROCm code object: %s", e->name,
                      ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output");
    }
    *out = p;
    *size = (size_t)want;
    return WK_OK;
}
#endif

wk_status wk_gpu_embedded_image(const void **image, size_t *size, wk_backend_kind kind, int mi)
{
    const wk_gpu_embedded *e = &wk_gpu_embedded_modules[mi];
    *image = NULL;
    *size = 0;
    if (kind == WK_BACKEND_CUDA || !e->hip_packed) {
        const unsigned char *p = kind == WK_BACKEND_CUDA ? e->cuda : e->hip;
        const unsigned char *end = kind == WK_BACKEND_CUDA ? e->cuda_end : e->hip_end;
        *image = p;
        *size = p ? (size_t)(end - p) : 0;
        return WK_OK;
    }
#ifndef WK_HAVE_ZSTD
    return wk_err(WK_ERR_INTERNAL, "module %s: the ROCm code object is compressed but this build "
                  "has no zstd", e->name);
#else
    wk_status st = WK_OK;
    pthread_mutex_lock(&blob_mu);
    if (!blob_inflated) {
        const size_t n = (size_t)wk_gpu_embedded_module_count;
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
    if (st == WK_OK && !blob_inflated[mi])
        st = inflate(e, &blob_inflated[mi], &blob_size[mi]);
    if (st == WK_OK) {
        *image = blob_inflated[mi];
        *size = blob_size[mi];
    }
    pthread_mutex_unlock(&blob_mu);
    return st;
#endif
}

void wk_gpu_embedded_release(void)
{
    pthread_mutex_lock(&blob_mu);
    if (blob_inflated)
        for (int i = 0; i < wk_gpu_embedded_module_count; i++)
            wk_free(blob_inflated[i]);
    wk_free(blob_inflated);
    wk_free(blob_size);
    blob_inflated = NULL;
    blob_size = NULL;
    pthread_mutex_unlock(&blob_mu);
}
