/* gpu_pool.c: the GPU avg_pool2d / max_pool2d through kernels/pool.cu (one thread per output
 * element, x read through its strides; the unit-inner-stride variant for the common
 * contiguous case; for a 2x2 window of stride 2 over aligned rows, 4 outputs per thread with
 * vector loads and stores). Semantics = src/cpu/cpu_pool.c. */
#include "gpu_ops.h"
#include <stdio.h>

#define POOL_MAX_GRID_YZ 65535

/* Mirrors struct wk_pool_geom of kernels/pool.cu (all int64). */
typedef struct pool_geom {
    int64_t n, c, oh, ow, kh, kw, sh, sw;
    int64_t xs[4];
} pool_geom;
_Static_assert(sizeof(pool_geom) == 12 * 8, "pool_geom mirrors wk_pool_geom");

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Whether the 2x2 stride-2 fast path applies (kernels/pool.cu, pool_<kind>_<dt>_22: 4 outputs
 * per thread from 8 adjacent inputs of each of 2 rows): unit inner stride, ow % 4 == 0, x and
 * its row starts aligned to the load width, out to the store width. */
static bool pool22_fits(const pool_geom *g, int64_t es, const void *xp, const void *out)
{
    if (g->kh != 2 || g->kw != 2 || g->sh != 2 || g->sw != 2 || g->xs[3] != 1 || g->ow % 4 != 0)
        return false;
    const uint64_t ld = (uint64_t)(8 * es < 16 ? 8 * es : 16);
    const uint64_t st = (uint64_t)(4 * es < 16 ? 4 * es : 16);
    const uint64_t xa = (uint64_t)(uintptr_t)xp | (uint64_t)(g->xs[0] * es) |
                        (uint64_t)(g->xs[1] * es) | (uint64_t)(g->xs[2] * es);
    return xa % ld == 0 && (uint64_t)(uintptr_t)out % st == 0;
}

/* out (N, C, OH, OW) contiguous = the pool of x (N, C, H, W), any layout. */
wk_status wk_gpu_pool2d(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, const wk_pool_params *p)
{
    if ((op != WK_OP_AVG_POOL2D && op != WK_OP_MAX_POOL2D) || lx->rank != 4)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu pool2d: op %s on %s rank %d", wk_op_name(op),
                      wk_dtype_name(dt), (int)lx->rank);
    pool_geom g = {
        .n = lx->dims[0], .c = lx->dims[1],
        .oh = (lx->dims[2] - p->kernel[0]) / p->stride[0] + 1,
        .ow = (lx->dims[3] - p->kernel[1]) / p->stride[1] + 1,
        .kh = p->kernel[0], .kw = p->kernel[1], .sh = p->stride[0], .sw = p->stride[1],
        .xs = {lx->strides[0], lx->strides[1], lx->strides[2], lx->strides[3]},
    };
    const int64_t P = g.oh * g.ow;
    if (g.n == 0 || g.c == 0 || P == 0)
        return WK_OK;
    if (P > INT32_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: a plane of %lld outputs is past 2^31",
                      wk_op_name(op), (long long)P);
    const void *xp = wk_gpu_at(x, lx->offset, wk_dtype_size(dt));
    char name[48];
    if (pool22_fits(&g, (int64_t)wk_dtype_size(dt), xp, out)) {
        snprintf(name, sizeof name, "pool_%s_%s_22", op == WK_OP_AVG_POOL2D ? "avg" : "max",
                 wk_gpu_dtype_kname(dt));
        void *args[] = {&g, &xp, &out};
        return wk_gpu_run(dev, "pool", name, wk_gpu_blocks(dev, g.n * g.c * g.oh * g.ow / 4), 1,
                          1, args);
    }
    snprintf(name, sizeof name, "pool_%s_%s_%s", op == WK_OP_AVG_POOL2D ? "avg" : "max",
             wk_gpu_dtype_kname(dt), g.xs[3] == 1 ? "u" : "s");
    void *args[] = {&g, &xp, &out};
    return wk_gpu_run(dev, "pool", name, (unsigned)((P + WK_GPU_BLOCK - 1) / WK_GPU_BLOCK),
                      (unsigned)min64(g.c, POOL_MAX_GRID_YZ), (unsigned)min64(g.n, POOL_MAX_GRID_YZ),
                      args);
}
