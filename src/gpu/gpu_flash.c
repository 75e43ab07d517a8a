/* gpu_flash.c: attention over many query tokens (prefill) on the matrix units, through
 * kernels/flash.cu (its header comment describes the kernel). wk_gpu_attention hands a call
 * here when wk_gpu_flash_fits says the kernel takes it; otherwise the decode kernels of
 * kernels/attn.h run it (any dtype, D, Lq and alignment). */
#include "gpu_ops.h"
#include <stdlib.h>
#include <string.h>

/* Mirrors struct flash_geom of kernels/flash.cu field for field (all int64: no padding). */
typedef struct flash_geom {
    int64_t nb, hq, hkv, lq, lk;
    int64_t qs[3], ks[3], vs[3];
    int64_t causal;
} flash_geom;
_Static_assert(sizeof(flash_geom) == 15 * 8, "flash_geom layout");

#define FLASH_BR 128     /* query rows per block (kernels/flash.cu FL_BR) */
#define FLASH_MIN_LQ 64  /* fewer query tokens: the decode kernels (their split over keys fills
                          * the GPU; one block of 128 rows per head would not) */

bool wk_gpu_flash_fits(const wk_attn_args *a)
{
    const char *e = getenv("WICK_ATTN_FLASH"); /* 0: never (benchmarks, comparisons) */
    if (e && !strcmp(e, "0"))
        return false;
    if (a->lens || a->qdt != a->kvdt || (a->qdt != WK_DTYPE_F16 && a->qdt != WK_DTYPE_BF16))
        return false;
    const wk_layout *lq = a->lq, *lk = a->lk, *lv = a->lv;
    const int64_t d = lq->dims[3];
    if ((d != 64 && d != 128) || lq->dims[2] < FLASH_MIN_LQ ||
        (lq->dims[2] + FLASH_BR - 1) / FLASH_BR > 65535 || lq->dims[0] > 65535 ||
        lq->dims[1] > 65535)
        return false;
    return wk_gpu_rows_aligned(wk_gpu_at(a->q, lq->offset, 2), lq, 2, 4) &&
           wk_gpu_rows_aligned(wk_gpu_at(a->k, lk->offset, 2), lk, 2, 16) &&
           wk_gpu_rows_aligned(wk_gpu_at(a->v, lv->offset, 2), lv, 2, 16);
}

/* The kernel of kernels/flash.cu for a call that wk_gpu_flash_fits takes (measurements:
 * docs/performance.md, "Prefill", H200, causal, GQA 4:1, L 2048-8192): D 64 takes
 * flash_<dt>_64_2buf (two shared buffers each for K and V, two blocks per SM: 0.77-0.97x
 * PyTorch's flash backend where the one-buffer kernel ran 0.58-0.77x) on NVIDIA and the simt
 * device; AMD, where it is not compiled, and WICK_ATTN_FLASH=1buf (a benchmarking switch) take
 * the one-buffer flash_<dt>_64; D 128 takes flash_<dt>_128 (two blocks per SM would spill). */
static void flash_pick(char *name, size_t cap, wk_device *dev, wk_dtype dt, int64_t d)
{
    const char *e = getenv("WICK_ATTN_FLASH");
    const bool amd = strncmp(wk_gpu_arch(dev), "gfx", 3) == 0;
    const bool two = d == 64 && !amd && !(e && !strcmp(e, "1buf"));
    const char *parts[4] = {"flash", wk_gpu_dtype_kname(dt), d == 64 ? "64" : "128", "2buf"};
    wk_gpu_kname(name, cap, parts, two ? 4 : 3);
}

wk_status wk_gpu_flash(wk_device *dev, const wk_attn_args *a)
{
    const wk_layout *lq = a->lq, *lk = a->lk, *lv = a->lv;
    const void *q = wk_gpu_at(a->q, lq->offset, 2);
    const void *k = wk_gpu_at(a->k, lk->offset, 2), *v = wk_gpu_at(a->v, lv->offset, 2);
    flash_geom g = {
        .nb = lq->dims[0], .hq = lq->dims[1], .hkv = lk->dims[1], .lq = lq->dims[2],
        .lk = lk->dims[2],
        .qs = {lq->strides[0], lq->strides[1], lq->strides[2]},
        .ks = {lk->strides[0], lk->strides[1], lk->strides[2]},
        .vs = {lv->strides[0], lv->strides[1], lv->strides[2]},
        .causal = a->causal != 0,
    };
    float scale = a->scale;
    void *out = a->out;
    char name[32];
    flash_pick(name, sizeof name, dev, a->qdt, lq->dims[3]);
    void *args[] = {&q, &k, &v, &out, &g, &scale};
    return wk_gpu_run(dev, "flash", name, (unsigned)g.hq, (unsigned)((g.lq + FLASH_BR - 1) / FLASH_BR),
                      (unsigned)g.nb, args);
}
