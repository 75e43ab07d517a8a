/* gpu_upsample.c: the GPU upsample_nearest1d/2d and upsample_bilinear2d through
 * kernels/upsample.cu (x read through its strides; nearest: one thread per output element, or
 * with an exact x2 width and x1/x2 height over unit-stride rows V inputs per item, vector loads
 * and stores, near2_width; bilinear: 1 or 4 outputs per thread, geometry reused over planes).
 * Semantics = src/cpu/cpu_upsample.c; the per-dim ratios are computed here with the CPU's
 * expressions and precision (f64 for nearest; the compute type for bilinear) and passed to the
 * kernel, so both sides start from the same bits. */
#include "gpu_ops.h"
#include <stdio.h>

#define UP_MAX_GRID_YZ 65535

/* Mirrors struct wk_up_geom of kernels/upsample.cu (8-byte fields only). */
typedef struct up_geom {
    int64_t n, c, ih, iw, oh, ow;
    int64_t xs[4];
    int64_t ac;
    double rh, rw;
} up_geom;
_Static_assert(sizeof(up_geom) == 13 * 8, "up_geom mirrors wk_up_geom");

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The bilinear ratio of one dim in the compute type (f32, or f64 when f64), widened to double
 * (exact): src/cpu/cpu_upsample.c, lin_table. */
static double bil_ratio(bool f64, int64_t in, int64_t out, int ac, double scale)
{
    if (f64) {
        if (ac)
            return out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0;
        return scale > 0 ? 1.0 / scale : (double)in / (double)out;
    }
    if (ac)
        return out > 1 ? (double)((float)(in - 1) / (float)(out - 1)) : 0.0;
    return scale > 0 ? (double)(float)(1.0 / scale) : (double)((float)in / (float)out);
}

/* The nearest fast path (kernels/upsample.cu, up_near2_b<B>_v<V>): 0 when it does not apply,
 * else V, the inputs per thread (8 / es when x's rows allow 8-byte loads, else 1). It needs
 * ow == 2 * iw and oh == ih or 2 * ih (then the CPU's f64 source index is exactly ow >> 1 and
 * oh / (oh / ih): the ratio is 0.5 or 1, exact), unit inner stride, and out aligned for the
 * stores (2 * V * es bytes: 16 when vectorised). */
static int64_t near2_width(const up_geom *g, int64_t es, const void *xp, const void *out)
{
    if (g->ow != 2 * g->iw || (g->oh != g->ih && g->oh != 2 * g->ih) ||
        (g->xs[3] != 1 && g->iw != 1))
        return 0;
    const int64_t vw = 8 / es;
    const uint64_t xa = (uint64_t)(uintptr_t)xp | (uint64_t)(g->xs[0] * es) |
                        (uint64_t)(g->xs[1] * es) | (uint64_t)(g->xs[2] * es);
    const int64_t v = g->iw % vw == 0 && xa % 8 == 0 ? vw : 1;
    return (uint64_t)(uintptr_t)out % (uint64_t)(2 * v * es) == 0 ? v : 0;
}

/* The near2 kernel with (n, c, ih) folded into one row index r = (n * C + c) * IH + ih at
 * r * xs[2] when x's strides allow it (xs[1] == IH * xs[2] unless C == 1, xs[0] == C * IH *
 * xs[2] unless N == 1): the output rows fold the same way (oh = fh * ih). */
static void near2_fold(up_geom *g)
{
    if ((g->c == 1 || g->xs[1] == g->ih * g->xs[2]) &&
        (g->n == 1 || g->xs[0] == g->c * g->ih * g->xs[2])) {
        const int64_t fh = g->oh / g->ih;
        g->ih *= g->n * g->c;
        g->oh = fh * g->ih;
        g->n = g->c = 1;
    }
}

/* Planes per launch of the bilinear kernels: grid y (channels) sized so that the device gets
 * about 16 blocks per multiprocessor and each thread reuses its geometry over the rest. */
static unsigned bil_grid_y(wk_device *dev, int64_t gx, int64_t gz, int64_t c)
{
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    const int64_t want = (sm * 16 + gx * gz - 1) / (gx * gz);
    return (unsigned)min64(min64(c, UP_MAX_GRID_YZ), want > 1 ? want : 1);
}

/* out (N, C, OH, OW) contiguous from x (N, C, H, W), or (N, C, OW) from (N, C, L). */
wk_status wk_gpu_upsample(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, const int64_t *out_dims, int align_corners,
                          double scale_h, double scale_w)
{
    const bool one_d = op == WK_OP_UPSAMPLE_NEAREST1D;
    const bool bil = op == WK_OP_UPSAMPLE_BILINEAR2D;
    if ((!one_d && op != WK_OP_UPSAMPLE_NEAREST2D && !bil) || lx->rank != (one_d ? 3 : 4))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu upsample: op %s on %s rank %d",
                      wk_op_name(op), wk_dtype_name(dt), (int)lx->rank);
    /* a 1-D input is (N, C, 1, L) */
    up_geom g = {.n = lx->dims[0], .c = lx->dims[1], .ac = align_corners};
    if (one_d) {
        g.ih = 1;
        g.iw = lx->dims[2];
        g.oh = 1;
        g.ow = out_dims[0];
        g.xs[0] = lx->strides[0];
        g.xs[1] = lx->strides[1];
        g.xs[2] = 0;
        g.xs[3] = lx->strides[2];
    } else {
        g.ih = lx->dims[2];
        g.iw = lx->dims[3];
        g.oh = out_dims[0];
        g.ow = out_dims[1];
        for (int k = 0; k < 4; k++)
            g.xs[k] = lx->strides[k];
    }
    const int64_t P = g.oh * g.ow;
    if (g.n == 0 || g.c == 0 || P == 0)
        return WK_OK;
    if (P > INT32_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: a plane of %lld outputs is past 2^31",
                      wk_op_name(op), (long long)P);
    char name[48];
    if (bil) {
        const bool f64 = dt == WK_DTYPE_F64;
        g.rh = bil_ratio(f64, g.ih, g.oh, align_corners, scale_h);
        g.rw = bil_ratio(f64, g.iw, g.ow, align_corners, scale_w);
        snprintf(name, sizeof name, "up_bilinear_%s", wk_gpu_dtype_kname(dt));
    } else { /* Candle's nearest scale, in f64 as the CPU computes it */
        g.rh = (double)g.ih / (double)g.oh;
        g.rw = (double)g.iw / (double)g.ow;
        snprintf(name, sizeof name, "up_nearest_b%d", (int)wk_dtype_size(dt));
    }
    const void *xp = wk_gpu_at(x, lx->offset, wk_dtype_size(dt));
    void *args[] = {&g, &xp, &out};
    const int64_t es = (int64_t)wk_dtype_size(dt);
    const int64_t v = bil ? 0 : near2_width(&g, es, xp, out);
    if (v > 0) {
        snprintf(name, sizeof name, "up_near2_b%d_v%lld", (int)es, (long long)v);
        near2_fold(&g);
        return wk_gpu_run(dev, "upsample", name, wk_gpu_blocks(dev, g.n * g.c * g.ih * g.iw / v),
                          1, 1, args);
    }
    const unsigned gz = (unsigned)min64(g.n, UP_MAX_GRID_YZ);
    if (bil) { /* 4 outputs per thread (f32, f64, bf16: upsample.cu) where rows and out allow
                  whole vector stores */
        const int64_t al = 4 * es < 16 ? 4 * es : 16;
        const bool v4dt = dt == WK_DTYPE_F32 || dt == WK_DTYPE_F64 || dt == WK_DTYPE_BF16;
        const int64_t vb =
            v4dt && g.ow % 4 == 0 && (uint64_t)(uintptr_t)out % (uint64_t)al == 0 ? 4 : 1;
        if (vb == 4)
            snprintf(name, sizeof name, "up_bilinear4_%s", wk_gpu_dtype_kname(dt));
        const int64_t gx = (P / vb + WK_GPU_BLOCK - 1) / WK_GPU_BLOCK;
        return wk_gpu_run(dev, "upsample", name, (unsigned)gx, bil_grid_y(dev, gx, gz, g.c), gz,
                          args);
    }
    return wk_gpu_run(dev, "upsample", name, (unsigned)((P + WK_GPU_BLOCK - 1) / WK_GPU_BLOCK),
                      (unsigned)min64(g.c, UP_MAX_GRID_YZ), gz, args);
}
