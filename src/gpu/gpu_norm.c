/* gpu_norm.c: the GPU rms_norm and layer_norm, and the row driver they share with softmax
 * (gpu_softmax.c): kernels/norm.cu and kernels/softmax.cu, whose headers describe the kernels.
 *
 * The driver (wk_gpu_rowop) turns x into rows whose last dim has stride 1 (a copy into scratch
 * when it has not: a transposed or broadcast last dim), row r starting at koff(R, r) with R the
 * collapsed outer dims, and picks a plan:
 *   - 16-byte units possible (D a multiple of N = 16/size, every row start, out, alpha and
 *     beta 16-byte aligned) and the row fits in registers (D/N <= 256 * KV): a register kernel
 *     with groups of G threads per row, KV vectors each, KV in 2, 4, 8 (fewer for the 16- and
 *     8-bit types, so a thread keeps at most 32 widened values; 8 for bf16 in the norms, which
 *     widen bf16 at each use instead of keeping it), the (G, KV) of least padding (ties: the
 *     larger KV, more rows per block; for f32 softmax the smaller), as measured fastest
 *     (row_plan); the kernel: norm_<rms|layer>_<dt>_reg<KV> (one reduction per row: Chan's
 *     mean/variance merge for layer_norm), softmax_<dt>_online<KV> for the 16- and 8-bit types
 *     (one reduction: an online max/sum), softmax_<dt>_maxsum<KV> for f32 and f64 (two);
 *   - else the streaming kernel "_stream", 16-byte units when possible, scalar otherwise.
 * alpha/beta of another stride than 1 (e.g. broadcast) or misaligned are copied to scratch
 * first (D elements). Blocks loop over groups of rows, so the grid is capped. */
#include "gpu_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int32_t pow2_at_least(int64_t v) /* 1 .. 256 */
{
    int32_t g = 1;
    while (g < WK_GPU_BLOCK && g < v)
        g *= 2;
    return g;
}

/* The rows of x: ptr the first element, R the outer dims (row r starts at koff(R, r)). *tmp
 * receives the scratch copy (to free after the launches) when the last dim is not unit-strided. */
static wk_status rows_of(wk_device *dev, wk_dtype dt, const void *x, const wk_layout *lx,
                         const void **ptr, wk_klay1 *R, wk_layout *outer, void **tmp)
{
    const size_t esz = wk_dtype_size(dt);
    const int r = lx->rank;
    const int64_t D = lx->dims[r - 1], M = wk_layout_elem_count(lx) / D;
    *tmp = NULL;
    if (D > 1 && lx->strides[r - 1] != 1) {
        wk_status s = wk_gpu_scratch_alloc(dev, (size_t)(M * D) * esz, tmp);
        if (s != WK_OK)
            return s;
        s = wk_gpu_copy_strided(dev, dt, *tmp, 0, x, lx);
        if (s != WK_OK) {
            wk_gpu_scratch_free(dev, *tmp);
            *tmp = NULL;
            return s;
        }
        const wk_layout o = {.rank = 1, .dims = {M}, .strides = {D}};
        wk_gpu_klay1(R, outer, &o);
        *ptr = *tmp;
        return WK_OK;
    }
    wk_layout o = {.rank = r - 1};
    for (int k = 0; k < r - 1; k++) {
        o.dims[k] = lx->dims[k];
        o.strides[k] = lx->strides[k];
    }
    wk_gpu_klay1(R, outer, &o);
    *ptr = wk_gpu_at(x, lx->offset, esz);
    return WK_OK;
}

/* A rank-1 operand of D elements as a contiguous, 16-byte aligned pointer: itself when it is,
 * else a copy in scratch (*tmp, to free after the launches). */
static wk_status vec_operand(wk_device *dev, wk_dtype dt, const void *p, const wk_layout *l,
                             int64_t D, const void **ptr, void **tmp)
{
    const size_t esz = wk_dtype_size(dt);
    const void *at = wk_gpu_at(p, l->offset, esz);
    *tmp = NULL;
    if ((D <= 1 || l->strides[0] == 1) && (uintptr_t)at % 16 == 0) {
        *ptr = at;
        return WK_OK;
    }
    wk_status s = wk_gpu_scratch_alloc(dev, (size_t)D * esz, tmp);
    if (s == WK_OK)
        s = wk_gpu_copy_strided(dev, dt, *tmp, 0, p, l);
    if (s != WK_OK) {
        if (*tmp)
            wk_gpu_scratch_free(dev, *tmp);
        *tmp = NULL;
        return s;
    }
    *ptr = *tmp;
    return WK_OK;
}

/* WICK_ROWS_KV=2|4|8: only that KV in the register plan (where it fits the row); a
 * benchmarking switch, read per call (so that one process can compare). */
static int rows_kv_only(void)
{
    const char *e = getenv("WICK_ROWS_KV");
    return e ? atoi(e) : 0;
}

/* Register plan for nv 16-byte vectors per row: *G threads of *kv vectors; 0 if none fits.
 * Ties of padding go to the larger KV when large (fewer threads per row, more rows per block),
 * else to the smaller. */
static int reg_plan(int64_t nv, int kv_max, bool large, int32_t *G)
{
    int best = 0;
    int64_t waste = 0;
    const int only = rows_kv_only();
    for (int kv = 2; kv <= kv_max; kv *= 2) {
        if (only && kv != only)
            continue;
        const int32_t g = pow2_at_least(ceil_div(nv, kv));
        if ((int64_t)g * kv < nv)
            continue;
        const int64_t w = (int64_t)g * kv - nv;
        if (!best || w < waste || (large && w == waste)) {
            best = kv;
            waste = w;
            *G = g;
        }
    }
    return best;
}

/* The plan for M rows of D elements of op (SOFTMAX_LAST_DIM, RMS_NORM, LAYER_NORM) in dt, vec:
 * 16-byte units possible: the register kernel's KV (0: the streaming kernel), the group size *G
 * and the grid *blocks. The plans measured fastest on an H200 (docs/performance.md, "Memory-bound ops",
 * bench/gpu_compare_ops.py, 16384 x 4096): rms_norm and layer_norm in every dtype and softmax in
 * 16-bit types take the largest KV among equal paddings (fewer rows than multiprocessors: the
 * smallest) (layer_norm f32: 3668 GB/s at KV 8
 * against 3006 at KV 2; softmax bf16 1749 against 1410); f32 softmax keeps the smallest KV and
 * its two-reduction kernel (3215 GB/s against 3001 for the one-reduction one, 1842 at KV 8). */
static int row_plan(wk_device *dev, wk_op op, wk_dtype dt, int64_t M, int64_t D, bool vec,
                    int32_t *G, int64_t *blocks)
{
    const size_t esz = wk_dtype_size(dt);
    const int64_t N = (int64_t)(16 / esz);
    const bool softmax = op == WK_OP_SOFTMAX_LAST_DIM, f32_softmax = softmax && esz >= 4;
    /* KV at most 8 (f32, f64; bf16 in the norms, which keep its values as loaded: norm.cu's
     * nm_vals), else 2 * size: a thread holds at most 32 widened values */
    const int kv_max = esz >= 4 || (!softmax && dt == WK_DTYPE_BF16) ? 8 : (int)(2 * esz);
    *G = 1;
    /* Fewer rows than multiprocessors (a decode step's norm: one row of 4096): each row is a
     * latency chain, so ties go to the smaller KV, more threads per row (H100, the 8B Q4_0
     * model's tg128: 311.7 tok/s at KV 4 against 295.8 at KV 8, docs/performance.md "Decode
     * step"). */
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    const int kv = vec ? reg_plan(D / N, kv_max, !f32_softmax && M >= sm, G) : 0;
    if (!kv) /* streaming: about 4 units per thread and pass, at most a block per row */
        *G = pow2_at_least(ceil_div(vec ? D / N : D, 4));
    *blocks = ceil_div(M, WK_GPU_BLOCK / *G);
    if (*blocks > sm * 256)
        *blocks = sm * 256; /* the kernels loop over row groups */
    return kv;
}

wk_status wk_gpu_rowop(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                       const wk_layout *lx, const void *alpha, const wk_layout *la,
                       const void *beta, const wk_layout *lb, float eps)
{
    if (lx->rank < 1)
        return wk_err(WK_ERR_SHAPE, "gpu %s: x has rank 0", wk_op_name(op));
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    const int64_t D = lx->dims[lx->rank - 1], M = n / D, N = (int64_t)(16 / esz);
    const bool softmax = op == WK_OP_SOFTMAX_LAST_DIM, layer = op == WK_OP_LAYER_NORM;

    void *tx = NULL, *ta = NULL, *tb = NULL;
    const void *xp = NULL, *ap = NULL, *bp = NULL;
    wk_klay1 R;
    wk_layout outer;
    wk_status s = rows_of(dev, dt, x, lx, &xp, &R, &outer, &tx);
    if (s == WK_OK && !softmax)
        s = vec_operand(dev, dt, alpha, la, D, &ap, &ta);
    if (s == WK_OK && layer)
        s = vec_operand(dev, dt, beta, lb, D, &bp, &tb);
    if (s != WK_OK)
        goto done;

    bool vec = D % N == 0 && (uintptr_t)xp % 16 == 0 && (uintptr_t)out % 16 == 0 &&
               (uintptr_t)ap % 16 == 0 && (uintptr_t)bp % 16 == 0; /* NULL is aligned */
    for (int k = 0; k < outer.rank; k++)
        vec = vec && outer.strides[k] % N == 0;
    const bool f32_softmax = softmax && esz >= 4;
    int32_t G;
    int64_t blocks;
    const int kv = row_plan(dev, op, dt, M, D, vec, &G, &blocks);

    char name[48];
    const char *dn = wk_gpu_dtype_kname(dt);
    const char *kind = softmax ? "" : layer ? "layer_" : "rms_";
    const char *reg = !softmax ? "reg" : f32_softmax ? "maxsum" : "online";
    if (kv)
        snprintf(name, sizeof name, "%s%s%s_%s%d", softmax ? "softmax_" : "norm_", kind, dn, reg,
                 kv);
    else
        snprintf(name, sizeof name, "%s%s%s_stream", softmax ? "softmax_" : "norm_", kind, dn);
    int32_t v32 = vec ? 1 : 0; /* last argument: read by the "_stream" kernels only */
    int64_t Mv = M, Dv = D;
    if (softmax) {
        void *args[] = {&xp, &out, &Mv, &Dv, &G, &R, &v32};
        s = wk_gpu_run_early(dev, "softmax", name, (unsigned)blocks, 1, 1, args);
    } else {
        void *args[] = {&xp, &ap, &bp, &out, &Mv, &Dv, &G, &R, &eps, &v32};
        s = wk_gpu_run_early(dev, "norm", name, (unsigned)blocks, 1, 1, args);
    }
    /* both launched early: the kernels wait for the work before them (WK_GRID_WAIT) */
done: /* stream-ordered frees: after the launches that read them */
    if (tx)
        wk_gpu_scratch_free(dev, tx);
    if (ta)
        wk_gpu_scratch_free(dev, ta);
    if (tb)
        wk_gpu_scratch_free(dev, tb);
    return s;
}

/* out (contiguous, dims of lx) = op(x) over the last dim; op RMS_NORM (beta NULL) or
 * LAYER_NORM; alpha (and beta) rank 1 of dims (D), any stride (checked by the front end). */
wk_status wk_gpu_norm(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *alpha, const wk_layout *la,
                      const void *beta, const wk_layout *lb, float eps)
{
    const bool layer = op == WK_OP_LAYER_NORM;
    if ((op != WK_OP_RMS_NORM && !layer) || layer != (beta != NULL) || !alpha)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu norm: bad call (%s, %s)", wk_op_name(op),
                      wk_dtype_name(dt));
    return wk_gpu_rowop(dev, op, dt, out, x, lx, alpha, la, layer ? beta : NULL, lb, eps);
}

/* sum (contiguous) = x + r rounded, out = op(sum), op RMS_NORM (beta NULL) or LAYER_NORM. In one
 * kernel (norm.cu's norm_add_*, which takes the plan the norm kernel would take for sum, so out
 * is the same bits) where x and r are contiguous and aligned to a vector, dt is f32, f16 or bf16
 * and the register plan applies; elsewhere the binary add, then the norm of sum. r of another
 * dtype (rdt: f16 or bf16 under f32 x): norm_add_rms_f32_<rdt>_reg<KV> for rms_norm without
 * activations, elsewhere r converted to f32 first (exact: the same bits). */
/* The body of both entries: act NULL (wk_gpu_add_norm) or the activations of out
 * (wk_gpu_add_norm_act: norm_add_rms_act_f32_reg<kv> where the f32 register plan has G >= 8
 * threads per row, so that each 32-element block lies in 8 aligned lanes; elsewhere the unfused
 * way, then quantize_act on out: the same bits). */
static wk_status add_norm_run(wk_device *dev, wk_op op, wk_dtype dt, wk_dtype rdt, void *sum,
                              void *out, void *act, const void *x, const wk_layout *lx,
                              const void *r, const wk_layout *lr, const void *alpha,
                              const wk_layout *la, const void *beta, const wk_layout *lb, float eps)
{
    const bool layer = op == WK_OP_LAYER_NORM;
    if ((op != WK_OP_RMS_NORM && !layer) || layer != (beta != NULL) || !alpha || lx->rank < 1)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu add_norm: bad call (%s, %s)", wk_op_name(op),
                      wk_dtype_name(dt));
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt), rsz = wk_dtype_size(rdt);
    const int64_t D = lx->dims[lx->rank - 1], M = n / D, N = (int64_t)(16 / esz);
    const void *xp = wk_gpu_at(x, lx->offset, esz), *rp = wk_gpu_at(r, lr->offset, rsz);
    const bool mixed = rdt != dt; /* f32 x, a 16-bit r (checked by the front end) */
    const bool fusable = (dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16) &&
                         D % N == 0 && wk_layout_is_contiguous(lx) &&
                         wk_layout_is_contiguous(lr) &&
                         ((uintptr_t)xp | (uintptr_t)sum | (uintptr_t)out) % 16 == 0 &&
                         (uintptr_t)rp % (uintptr_t)(N * (int64_t)rsz) == 0 &&
                         (!mixed || (op == WK_OP_RMS_NORM && !act));
    int32_t G = 1;
    int64_t blocks = 0;
    const int kv = fusable ? row_plan(dev, op, dt, M, D, true, &G, &blocks) : 0;
    if (mixed && !kv) { /* r converted to x's dtype first: exact, so the same bits */
        void *tr = NULL;
        wk_layout lt;
        wk_status s = wk_layout_contiguous(&lt, lr->rank, lr->dims);
        if (s == WK_OK)
            s = wk_gpu_scratch_alloc(dev, (size_t)n * esz, &tr);
        if (s == WK_OK)
            s = wk_gpu_to_dtype(dev, rdt, dt, tr, r, lr);
        if (s == WK_OK)
            s = add_norm_run(dev, op, dt, dt, sum, out, act, x, lx, tr, &lt, alpha, la, beta, lb,
                             eps);
        if (tr)
            wk_gpu_scratch_free(dev, tr);
        return s;
    }
    if (!kv || (act && (dt != WK_DTYPE_F32 || G < 8 || D % 32 != 0))) {
        wk_status s = kv ? add_norm_run(dev, op, dt, dt, sum, out, NULL, x, lx, r, lr, alpha, la,
                                        beta, lb, eps)
                         : wk_gpu_binary(dev, WK_OP_ADD, dt, sum, x, lx, r, lr);
        wk_layout ls;
        if (s == WK_OK && !kv && (s = wk_layout_contiguous(&ls, lx->rank, lx->dims)) == WK_OK)
            s = wk_gpu_rowop(dev, op, dt, out, sum, &ls, alpha, la, beta, lb, eps);
        if (s == WK_OK && act)
            s = wk_gpu_quantize_act(dev, dt, act, out, M, D);
        return s;
    }
    void *ta = NULL, *tb = NULL;
    const void *ap = NULL, *bp = NULL;
    wk_status s = vec_operand(dev, dt, alpha, la, D, &ap, &ta);
    if (s == WK_OK && layer)
        s = vec_operand(dev, dt, beta, lb, D, &bp, &tb);
    if (s == WK_OK) {
        const wk_layout rows = {.rank = 1, .dims = {M}, .strides = {D}};
        wk_klay1 R;
        wk_layout outer;
        wk_gpu_klay1(&R, &outer, &rows);
        /* norm_add_<rms|layer>_<dt>_reg<kv>, norm_add_rms_f32_<rdt>_reg<kv> or
         * norm_add_rms_act_f32_reg<kv>, without snprintf (a decode op) */
        char name[48];
        const char rkv[5] = {'r', 'e', 'g', (char)('0' + kv), 0};
        const char *parts[7] = {"norm", "add", layer ? "layer" : "rms"};
        int np = 3;
        if (act)
            parts[np++] = "act";
        parts[np++] = wk_gpu_dtype_kname(dt);
        if (mixed)
            parts[np++] = wk_gpu_dtype_kname(rdt);
        parts[np++] = rkv;
        wk_gpu_kname(name, sizeof name, parts, np);
        int64_t Mv = M, Dv = D;
        if (act) {
            void *args[] = {&xp, &rp, &ap, &out, &sum, &act, &Mv, &Dv, &G, &R, &eps};
            wk_gpu_act_written(dev, act, (size_t)(M * D + M * D / 32 * 8));
            s = wk_gpu_run_early(dev, "norm", name, (unsigned)blocks, 1, 1, args);
        } else {
            void *args[] = {&xp, &rp, &ap, &bp, &out, &sum, &Mv, &Dv, &G, &R, &eps};
            s = wk_gpu_run_early(dev, "norm", name, (unsigned)blocks, 1, 1, args);
        }
    }
    if (ta)
        wk_gpu_scratch_free(dev, ta);
    if (tb)
        wk_gpu_scratch_free(dev, tb);
    return s;
}

wk_status wk_gpu_add_norm(wk_device *dev, wk_op op, wk_dtype dt, wk_dtype rdt, void *sum,
                          void *out, const void *x, const wk_layout *lx, const void *r,
                          const wk_layout *lr, const void *alpha, const wk_layout *la,
                          const void *beta, const wk_layout *lb, float eps)
{
    return add_norm_run(dev, op, dt, rdt, sum, out, NULL, x, lx, r, lr, alpha, la, beta, lb, eps);
}

/* wk_add_rms_norm_act: add_rms_norm and the activations of out (act). */
wk_status wk_gpu_add_norm_act(wk_device *dev, wk_dtype dt, wk_dtype rdt, void *sum, void *out,
                              void *act, const void *x, const wk_layout *lx, const void *r,
                              const wk_layout *lr, const void *alpha, const wk_layout *la,
                              float eps)
{
    return add_norm_run(dev, WK_OP_RMS_NORM, dt, rdt, sum, out, act, x, lx, r, lr, alpha, la, NULL,
                        NULL, eps);
}
