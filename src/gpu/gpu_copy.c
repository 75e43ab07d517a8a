/* gpu_copy.c: the GPU const_set, copy_strided_src and copy2d, through kernels/copy.cu. They move
 * raw bits: kernels are chosen by a byte size, widened here to the largest unit (up to 16
 * bytes) that divides every size, stride, offset and address of a contiguous run. A 2-D (or
 * batched) transpose takes the shared-memory tiled kernel. */
#include "gpu_ops.h"
#include <stdio.h>
#include <string.h>

/* The largest of 16, 8, 4, 2, 1 that divides every value of v[0..n). */
static size_t unit_of(const uint64_t *v, int n)
{
    uint64_t all = 0;
    for (int i = 0; i < n; i++)
        all |= v[i];
    size_t u = 16;
    while (u > 1 && (all & (u - 1)) != 0)
        u /= 2;
    return u;
}

/* Every element of base addressed by l becomes *value (one element of dt, host memory). */
wk_status wk_gpu_const_set(wk_device *dev, wk_dtype dt, void *base, const wk_layout *l,
                           const void *value)
{
    int64_t n = wk_layout_elem_count(l);
    if (n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    uint64_t v = 0; /* the element's bits in the low bytes (little-endian hosts) */
    memcpy(&v, value, esz);
    void *yp = wk_gpu_at(base, l->offset, esz);
    char name[32];

    wk_klay1 k;
    wk_layout col;
    wk_gpu_klay1(&k, &col, l);
    if (col.rank == 0 || (col.rank == 1 && col.strides[0] == 1)) {
        snprintf(name, sizeof name, "const_set_c%zu", esz);
        void *args[] = {&n, &yp, &v};
        return wk_gpu_run(dev, "copy", name, wk_gpu_blocks(dev, (n * (int64_t)esz + 15) / 16), 1,
                          1, args);
    }
    snprintf(name, sizeof name, "const_set_s%zu", esz);
    void *args[] = {&n, &k, &yp, &v};
    return wk_gpu_run(dev, "copy", name, wk_gpu_blocks(dev, n), 1, 1, args);
}

/* A collapsed layout that is a (batch of) transposed matrices: the second-to-last dim is the
 * contiguous one, the last is strided, both long enough for 32x32 tiles to pay. */
static bool is_transpose(const wk_layout *c)
{
    const int r = c->rank;
    if (r < 2 || r > 3)
        return false;
    return c->strides[r - 2] == 1 && c->strides[r - 1] > 1 && c->dims[r - 2] >= 16 &&
           c->dims[r - 1] >= 16;
}

static unsigned clamp_grid(int64_t v, int64_t max)
{
    return (unsigned)(v < 1 ? 1 : v > max ? max : v);
}

/* dst[dst_offset + i] = x[element i of lx]. */
wk_status wk_gpu_copy_strided(wk_device *dev, wk_dtype dt, void *dst, size_t dst_offset,
                              const void *x, const wk_layout *lx)
{
    int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    const void *xp = wk_gpu_at(x, lx->offset, esz);
    void *yp = wk_gpu_at(dst, (int64_t)dst_offset, esz);
    char name[32];

    wk_klay1 k;
    wk_layout c;
    wk_gpu_klay1(&k, &c, lx);
    if (c.rank == 0 || (c.rank == 1 && c.strides[0] == 1)) { /* one contiguous run */
        const uint64_t bytes = (uint64_t)n * esz;
        const uint64_t v[3] = {bytes, (uint64_t)(uintptr_t)xp, (uint64_t)(uintptr_t)yp};
        const size_t u = unit_of(v, 3);
        int64_t units = (int64_t)(bytes / u);
        snprintf(name, sizeof name, "copy_u%zu", u);
        void *args[] = {&units, &xp, &yp};
        return wk_gpu_run(dev, "copy", name, wk_gpu_blocks(dev, units), 1, 1, args);
    }
    if (is_transpose(&c)) {
        const int r = c.rank;
        int64_t nb = r == 3 ? c.dims[0] : 1, sb = r == 3 ? c.strides[0] : 0;
        int64_t na = c.dims[r - 2], nc = c.dims[r - 1], sc = c.strides[r - 1];
        snprintf(name, sizeof name, "copy_t%zu", esz);
        void *args[] = {&nb, &na, &nc, &sb, &sc, &xp, &yp};
        return wk_gpu_run(dev, "copy", name, clamp_grid((nc + 63) / 64, INT32_MAX),
                          clamp_grid((na + 63) / 64, 65535), clamp_grid(nb, 65535), args);
    }
    snprintf(name, sizeof name, "copy_s%zu", esz);
    void *args[] = {&n, &k, &xp, &yp};
    return wk_gpu_run(dev, "copy", name, wk_gpu_blocks(dev, n), 1, 1, args);
}

/* dst[dst_offset + i*dst_stride1 + j] = src[src_offset + i*src_stride1 + j], i < d1, j < d2. */
wk_status wk_gpu_copy2d(wk_device *dev, wk_dtype dt, void *dst, const void *src, size_t d1,
                        size_t d2, size_t src_stride1, size_t dst_stride1, size_t src_offset,
                        size_t dst_offset)
{
    if (d1 == 0 || d2 == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    const void *xp = wk_gpu_at(src, (int64_t)src_offset, esz);
    void *yp = wk_gpu_at(dst, (int64_t)dst_offset, esz);
    /* strides matter only between rows */
    const size_t ss = d1 > 1 ? src_stride1 : 0, ds = d1 > 1 ? dst_stride1 : 0;
    const uint64_t v[5] = {(uint64_t)d2 * esz, (uint64_t)ss * esz, (uint64_t)ds * esz,
                           (uint64_t)(uintptr_t)xp, (uint64_t)(uintptr_t)yp};
    const size_t u = unit_of(v, 5);
    int64_t rows = (int64_t)d1, cols = (int64_t)(d2 * esz / u);
    int64_t sst = (int64_t)(ss * esz / u), dst_ = (int64_t)(ds * esz / u);
    char name[32];
    snprintf(name, sizeof name, "copy2d_u%zu", u);
    void *args[] = {&rows, &cols, &sst, &dst_, &xp, &yp};
    return wk_gpu_run(dev, "copy", name, wk_gpu_blocks(dev, rows * cols), 1, 1, args);
}
