/* gpu_conv.c: the GPU convolutions (conv1d, conv_transpose1d, conv2d, conv_transpose2d) as
 * im2col / col2im kernels (kernels/conv.cu) around the shared GEMM (wk_gpu_gemm, gpu_matmul.c),
 * or, for some f16 / bf16 forward convolutions on the matrix units, as an implicit GEMM over an
 * NHWC copy of x (conv_nhwc_*; conv_nhwc_ok says where it runs).
 *
 * The 1-D ops are the 2-D ones with a height of 1 (as src/cpu/cpu_conv.c, the reference).
 * The GEMM runs in the "gemm type" gt: the dtype itself for f32/f64/f16/bf16 convolutions
 * (f16/bf16 accumulate in f32 inside the GEMM and round once), f32 for f8e4m3; the transposed
 * ops use f32 (f64 for f64) for every dtype, because their columns are summed again by col2im
 * and must not be rounded to 16 bits in between (the CPU keeps them in f32 too).
 *   conv:            per chunk of images, col [nb][C_in*KH*KW][Ho*Wo] = im2col(x) (the 16-byte
 *                    store kernel where im2col_vec_ok says it may run; skipped for
 *                    a 1x1 kernel with stride 1 and no padding: x is read in place), then per
 *                    group g: out[n, g*Cog .. , :] = W_g [Cog x Cin/G*KH*KW] @ col[n, g] as one
 *                    strided-batched GEMM over the images (or over the groups, per image, when
 *                    there are more groups than images); or, with one group and few
 *                    positions per image (conv_merge), as one GEMM over all the images of the
 *                    chunk (col as [q][nb*Ho*Wo]) followed by a strided copy of its
 *                    [C_out][nb][Ho*Wo] result into out.
 *   conv_transpose:  per chunk, col[n, g] [Cog*KH*KW x H*W] = W_g^T @ x[n, g] (GEMM), then the
 *                    gather col2im kernel sums each output pixel's taps in a fixed order.
 * Scratch is bounded: the batch runs in chunks of images whose columns fit CONV_SCRATCH_BYTES
 * (at least one image per chunk). The weight is read in place through the GEMM's strides when
 * its (C_in/G, KH, KW) dims collapse to one stride and its dtype is gt, else copied once. */
#include "gpu_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Column scratch per chunk of images (the 32x64x56x56 k3 f32 benchmark needs 231 MB: one
 * chunk). */
#ifndef CONV_SCRATCH_BYTES /* overridable so a test build can force many chunks */
#define CONV_SCRATCH_BYTES ((int64_t)1 << 30)
#endif
#define CONV_MAX_GRID_YZ 65535

/* Mirrors struct wk_conv_geom of kernels/conv.cu field for field (all int64). */
typedef struct conv_geom {
    int64_t ci, h, w;
    int64_t co, kh, kw;
    int64_t ho, wo;
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t xs[4];
    int64_t cis, crs; /* im2col's column layout: image and row strides (conv_forward sets them) */
} conv_geom;
_Static_assert(sizeof(conv_geom) == 20 * 8, "conv_geom mirrors wk_conv_geom");

/* One GEMM operand over (image, group): element (r, c) of the operand of image i and group g
 * is at p[i*img + g*grp + r*rs + c*cs] (elements of the GEMM type). */
typedef struct conv_opnd {
    const void *p;
    int64_t img, grp, rs, cs;
} conv_opnd;

/* The whole problem, in 2-D terms. */
typedef struct conv_job {
    wk_device *dev;
    wk_op op;
    wk_dtype dt, gt; /* storage dtype, GEMM dtype */
    int transposed;
    int64_t n, groups, cig, cog;
    conv_geom g;
    wk_layout x4, w4; /* as rank 4 */
    const wk_layout *lx, *lw; /* as given */
} conv_job;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* *st: the one stride of dims [from, 4) of l when they collapse to one (1 when they hold a
 * single element); false when they do not. */
static bool tail_stride(int64_t *st, const wk_layout *l, int from)
{
    wk_layout t = {.rank = 4 - from}, c;
    for (int k = from; k < 4; k++) {
        t.dims[k - from] = l->dims[k];
        t.strides[k - from] = l->strides[k];
    }
    wk_layout_collapse(&c, &t);
    if (c.rank > 1)
        return false;
    *st = c.rank == 1 ? c.strides[0] : 1;
    return true;
}

/* p[0 .. elems) of dtype dt = 0. */
static wk_status conv_zero(wk_device *dev, void *p, int64_t elems, wk_dtype dt)
{
    int64_t nbytes = elems * (int64_t)wk_dtype_size(dt);
    void *args[] = {&nbytes, &p};
    return wk_gpu_run(dev, "conv", "conv_zero", wk_gpu_blocks(dev, nbytes), 1, 1, args);
}

/* The GEMMs of one chunk of nb images: C_(i,g) = A_(i,g) B_(i,g), m x n x k each, as strided
 * batches over the images (one call per group) or, with more groups than images, over the
 * groups (one call per image). */
static wk_status conv_gemms(const conv_job *j, int64_t nb, int64_t m, int64_t n, int64_t k,
                            conv_opnd A, conv_opnd B, conv_opnd C)
{
    const size_t e = wk_dtype_size(j->gt);
    const bool by_img = nb >= j->groups;
    const int64_t calls = by_img ? j->groups : nb, batch = by_img ? nb : j->groups;
    for (int64_t i = 0; i < calls; i++) {
        const wk_gpu_gemm_args a = {
            .dt = j->gt, .batch = batch, .m = m, .n = n, .k = k,
            .a = wk_gpu_at(A.p, i * (by_img ? A.grp : A.img), e),
            .a_bs = by_img ? A.img : A.grp, .a_rs = A.rs, .a_cs = A.cs,
            .b = wk_gpu_at(B.p, i * (by_img ? B.grp : B.img), e),
            .b_bs = by_img ? B.img : B.grp, .b_rs = B.rs, .b_cs = B.cs,
            .c = wk_gpu_at(C.p, i * (by_img ? C.grp : C.img), e),
            .c_bs = by_img ? C.img : C.grp, .ldc = C.rs,
        };
        const wk_status s = wk_gpu_gemm(j->dev, &a);
        if (s != WK_OK)
            return s;
    }
    return WK_OK;
}

/* The weight as the GEMM's A operand of group g (image stride 0). Forward: A_g = W_g
 * [Cog x Cin/G*KH*KW]; transposed: A_g = W_g^T [Cog*KH*KW x Cin/G] of W_g [Cin/G x
 * Cog*KH*KW]. In place when the dtype is gt and dims 1..3 collapse, else converted into a
 * contiguous scratch *own (the caller frees it). */
static wk_status conv_weight(conv_opnd *A, void **own, const conv_job *j, const void *w)
{
    *own = NULL;
    int64_t s0 = j->w4.strides[0], st = 1;
    const void *p = wk_gpu_at(w, j->lw->offset, wk_dtype_size(j->dt));
    if (j->dt != j->gt || !tail_stride(&st, &j->w4, 1)) {
        const int64_t cnt = wk_layout_elem_count(j->lw);
        wk_status s = wk_gpu_scratch_alloc(j->dev, (size_t)cnt * wk_dtype_size(j->gt), own);
        if (s == WK_OK)
            s = wk_gpu_to_dtype(j->dev, j->dt, j->gt, *own, w, j->lw);
        if (s != WK_OK)
            return s;
        p = *own;
        s0 = j->w4.dims[1] * j->w4.dims[2] * j->w4.dims[3];
        st = 1;
    }
    const int64_t rows = j->transposed ? j->cig : j->cog; /* dim-0 rows of one group */
    *A = (conv_opnd){.p = p, .img = 0, .grp = rows * s0,
                     .rs = j->transposed ? st : s0, .cs = j->transposed ? s0 : st};
    return WK_OK;
}

/* *r = a * b * c, false on int64 overflow (scratch sizes of absurd shapes). */
static bool mul3(int64_t *r, int64_t a, int64_t b, int64_t c)
{
    int64_t t;
    return !__builtin_mul_overflow(a, b, &t) && !__builtin_mul_overflow(t, c, r);
}

static wk_status too_large(const conv_job *j)
{
    return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: the column scratch of one image overflows",
                  wk_op_name(j->op));
}

/* Images per chunk: as many as fit the scratch budget, at least 1, at most the grid's z. */
static int64_t conv_chunk(int64_t n, int64_t per_image_bytes)
{
    int64_t nb = per_image_bytes > 0 ? CONV_SCRATCH_BYTES / per_image_bytes : n;
    nb = min64(min64(nb, n), CONV_MAX_GRID_YZ);
    return nb < 1 ? 1 : nb;
}

/* Whether the fast im2col (conv_im2col_vec_*, kernels/conv.cu) may write col: V = 16 / gsz
 * positions per thread as one 16-byte store (V divides P, and with it the strides cis and crs,
 * which are multiples of P, and col is 16-byte aligned, so every col row starts aligned) and
 * all its 32-bit index math fits: ci*P/V (+ a block) and KK*crs below 2^31, and every offset in x of a tap, |ih|*xs2 + |iw|*xs3 with |ih| <= h + 2ph and
 * |iw| <= w + 2pw (the output size bounds (ho-1)*sh + (kh-1)*dh by h + 2ph - 1), as well as
 * the per-tap steps dh*xs2 and dw*xs3. */
static bool im2col_vec_ok(const conv_geom *g, size_t gsz, const void *col)
{
    const int64_t V = 16 / (int64_t)gsz, P = g->ho * g->wo, lim = INT32_MAX;
    int64_t a, b, kkp, dhs, dws;
    if (P % V != 0 || (uintptr_t)col % 16 != 0)
        return false;
    if (!mul3(&kkp, g->kh * g->kw, g->crs, 1) || kkp > lim ||
        g->ci > (lim - WK_GPU_BLOCK) / (P / V))
        return false;
    if (g->h + 2 * g->ph > lim || g->w + 2 * g->pw > lim || g->ho > lim || g->wo > lim)
        return false;
    if (!mul3(&a, g->h + 2 * g->ph, g->xs[2], 1) || !mul3(&b, g->w + 2 * g->pw, g->xs[3], 1) ||
        a > lim || b > lim || a + b > lim)
        return false;
    return mul3(&dhs, g->dh, g->xs[2], 1) && mul3(&dws, g->dw, g->xs[3], 1) && dhs <= lim &&
           dws <= lim;
}

/* Mirrors struct wk_cv_args of kernels/conv.cu. */
typedef struct cv_args {
    int64_t cig, cog, wrs, mtiles;
} cv_args;
#define CV_BN 128 /* positions per block of conv_nhwc_* */

/* The forward path WICK_CONV asks for (a benchmarking and testing switch; docs/performance.md):
 * im2col (never the implicit GEMM), nhwc (the implicit GEMM wherever it fits), merged / batched
 * (the column layout of the im2col path); unset or unknown: the default. */
typedef enum conv_mode { CONV_DEFAULT, CONV_IM2COL, CONV_NHWC, CONV_MERGED, CONV_BATCHED } conv_mode;
static conv_mode conv_env(void)
{
    static const char *const names[] = {"", "im2col", "nhwc", "merged", "batched"};
    const char *e = getenv("WICK_CONV");
    for (int i = 1; e && i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(e, names[i]))
            return (conv_mode)i;
    return CONV_DEFAULT;
}

/* What the implicit GEMM (conv_nhwc_*) needs: a forward f16 / bf16 convolution on the matrix
 * units (NVIDIA sm_80+ and the simt device), not empty (the general path has the early outs),
 * its geometry within the kernels' 32-bit row and column counters, and C_out tiles and groups
 * within the grid's y. */
static bool conv_nhwc_fits(const conv_job *j)
{
    const conv_geom *g = &j->g;
    if (j->transposed || j->dt != j->gt || (j->dt != WK_DTYPE_F16 && j->dt != WK_DTYPE_BF16) ||
        !wk_gpu_matrix_units(j->dev, j->dt))
        return false;
    if (j->n == 0 || j->cog == 0 || g->ho * g->wo == 0)
        return false;
    const int64_t lim = INT32_MAX / 4;
    if (g->h + 2 * g->ph > lim || g->w + 2 * g->pw > lim || (g->kh - 1) * g->dh > lim ||
        (g->kw - 1) * g->dw > lim)
        return false;
    const int64_t bm = j->cog <= 64 ? 64 : 128;
    return j->groups * ceil_div(j->cog, bm) <= CONV_MAX_GRID_YZ &&
           ceil_div(g->ho * g->wo, CV_BN) <= INT32_MAX;
}

/* Whether a chunk of images runs as one GEMM, W [C_out x q] @ col [q][nb*P], whose result
 * [C_out][nb][P] a strided copy (with the rounding to the storage dtype, if any) then puts in
 * place, instead of a strided batch of nb GEMMs of P columns each. With few output positions
 * per image the batch's GEMMs are too narrow for the vendor BLAS to fill the GPU: on the H200
 * (cuBLAS, batch 32) the 7x7 3x3 convolution of a ResNet-50 runs 3.1x faster in f16 (0.22x ->
 * 0.69x cuDNN) and 1.3x in f32, 14x14 about the same, and 28x28 slower (0.75x -> 0.58x in f16):
 * hence P <= CONV_MERGE_P. Not where x can be read in place (a 1x1 kernel, stride 1, no
 * padding: merging would add an im2col pass, and measured slower at 7x7: 0.50x -> 0.43x).
 * One group only; WICK_CONV=merged takes it wherever there is one group and more than one
 * image, WICK_CONV=batched never (docs/performance.md). */
#define CONV_MERGE_P 256
static bool conv_merge(const conv_job *j, int64_t P, bool direct)
{
    if (j->groups != 1 || j->n < 2)
        return false;
    const conv_mode mode = conv_env();
    if (mode == CONV_MERGED || mode == CONV_BATCHED)
        return mode == CONV_MERGED;
    return !direct && P <= CONV_MERGE_P;
}

/* Whether the implicit GEMM (conv_nhwc_*, kernels/conv.cu) runs this forward convolution:
 * conv_nhwc_fits, C_in / groups a multiple of 32 (a k tile is 32 channels of one tap), and x's
 * NHWC copy within the scratch budget. By default (on NVIDIA and the simt device) where it won
 * on the H200 beside im2col + cuBLAS (docs/performance.md, "Matmul and convolutions"): a kernel
 * of more than one tap and C_out / groups <= 64 (the 64-channel 3x3 layers of a ResNet: 0.60x
 * -> 0.69x cuDNN); wider outputs keep cuBLAS, which is faster there, 1x1 kernels read x in
 * place. WICK_CONV=nhwc takes it wherever it applies, WICK_CONV=im2col / merged / batched
 * never. */
static bool conv_nhwc_ok(const conv_job *j)
{
    const conv_geom *g = &j->g;
    const conv_mode mode = conv_env();
    if ((mode != CONV_DEFAULT && mode != CONV_NHWC) || !conv_nhwc_fits(j) || j->cig % 32 != 0)
        return false;
    if (mode != CONV_NHWC && (g->kh * g->kw == 1 || j->cog > 64))
        return false;
    int64_t xb;
    return mul3(&xb, j->n * g->h, g->w * g->ci, 2) && xb <= CONV_SCRATCH_BYTES;
}

/* The forward convolution by conv_nhwc_*: x copied to [N][H][W][C] and the weight to
 * [C_out][KH][KW][C_in/G] (two strided copies), then launches of at most 65535 images. */
static wk_status conv_nhwc(const conv_job *j, void *out, const void *x, const void *w)
{
    const conv_geom *g = &j->g;
    const size_t dsz = wk_dtype_size(j->dt);
    const int64_t P = g->ho * g->wo, bm = j->cog <= 64 ? 64 : 128, kk = g->kh * g->kw;
    const int64_t img = g->h * g->w * g->ci;
    void *xn = NULL, *wn = NULL;
    wk_status s = wk_gpu_scratch_alloc(j->dev, (size_t)(j->n * img) * dsz, &xn);
    if (s == WK_OK)
        s = wk_gpu_scratch_alloc(j->dev, (size_t)(g->co * kk * j->cig) * dsz, &wn);
    if (s == WK_OK) {
        const int64_t *xs = j->x4.strides, *ws = j->w4.strides;
        const wk_layout lx = {.rank = 4, .dims = {j->n, g->h, g->w, g->ci},
                              .strides = {xs[0], xs[2], xs[3], xs[1]}, .offset = j->lx->offset};
        const wk_layout lw = {.rank = 4, .dims = {g->co, g->kh, g->kw, j->cig},
                              .strides = {ws[0], ws[2], ws[3], ws[1]}, .offset = j->lw->offset};
        s = wk_gpu_copy_strided(j->dev, j->dt, xn, 0, x, &lx);
        if (s == WK_OK)
            s = wk_gpu_copy_strided(j->dev, j->dt, wn, 0, w, &lw);
    }
    cv_args a = {.cig = j->cig, .cog = j->cog, .wrs = kk * j->cig, .mtiles = ceil_div(j->cog, bm)};
    char name[32];
    snprintf(name, sizeof name, "conv_nhwc_%sx128_%s", bm == 64 ? "64" : "128",
             wk_gpu_dtype_kname(j->dt));
    wk_gpu_fn fn = NULL;
    if (s == WK_OK)
        s = wk_gpu_function(&fn, j->dev, "conv", name);
    const unsigned shmem = (unsigned)(4 * (bm + CV_BN) * 32 * 2); /* MC_ST (BM + BN) MC_BK */
    for (int64_t n0 = 0; s == WK_OK && n0 < j->n; n0 += CONV_MAX_GRID_YZ) {
        const int64_t nb = min64(CONV_MAX_GRID_YZ, j->n - n0);
        const void *xc = wk_gpu_at(xn, n0 * img, dsz);
        const void *wc = wn;
        void *oc = wk_gpu_at(out, n0 * g->co * P, dsz);
        void *args[] = {(void *)g, &xc, &wc, &oc, &a};
        s = wk_gpu_launch(j->dev, fn, (unsigned)ceil_div(P, CV_BN),
                          (unsigned)(j->groups * a.mtiles), (unsigned)nb, WK_GPU_BLOCK, 1, 1,
                          shmem, args);
    }
    if (wn)
        wk_gpu_scratch_free(j->dev, wn);
    if (xn)
        wk_gpu_scratch_free(j->dev, xn);
    return s;
}

static wk_status conv_forward(const conv_job *j, void *out, const void *x, const void *w)
{
    if (conv_nhwc_ok(j))
        return conv_nhwc(j, out, x, w);
    const conv_geom *g = &j->g;
    const size_t dsz = wk_dtype_size(j->dt), gsz = wk_dtype_size(j->gt);
    const int64_t KK = g->kh * g->kw, P = g->ho * g->wo, kdim = j->cig * KK;
    int64_t pix_st = 1;
    const bool in_place = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 &&
                          g->pw == 0 && j->dt == j->gt && tail_stride(&pix_st, &j->x4, 2) &&
                          pix_st == 1;
    const bool merge = conv_merge(j, P, in_place), direct = in_place && !merge;
    int64_t col_img = 0, img_bytes;
    const int64_t fout_img = j->dt != j->gt || merge ? g->co * P : 0;
    if ((!direct && !mul3(&col_img, g->ci, KK, P)) ||
        !mul3(&img_bytes, col_img + fout_img, (int64_t)gsz, 1))
        return too_large(j);
    const int64_t nb_max = conv_chunk(j->n, img_bytes);
    if (ceil_div(P, WK_GPU_BLOCK) > INT32_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %lld output positions need too large a grid",
                      wk_op_name(j->op), (long long)P);

    conv_opnd A;
    void *wown = NULL, *col = NULL, *fout = NULL;
    wk_status s = conv_weight(&A, &wown, j, w);
    if (s == WK_OK && col_img > 0)
        s = wk_gpu_scratch_alloc(j->dev, (size_t)(nb_max * col_img) * gsz, &col);
    if (s == WK_OK && fout_img > 0)
        s = wk_gpu_scratch_alloc(j->dev, (size_t)(nb_max * fout_img) * gsz, &fout);

    /* col's layout (kernels/conv.cu): [nb][q][P], or [q][nb][P] for one GEMM */
    conv_geom gc = *g;
    gc.cis = merge ? P : col_img;
    gc.crs = merge ? nb_max * P : P;
    const bool vec = col != NULL && im2col_vec_ok(&gc, gsz, col);
    const int64_t vec_threads = vec ? g->ci * (P / (int64_t)(16 / gsz)) : 0;
    char name[48];
    snprintf(name, sizeof name, "conv_im2col_%s%s_%s", vec ? "vec_" : "",
             wk_gpu_dtype_kname(j->dt), wk_gpu_dtype_kname(j->gt));
    for (int64_t n0 = 0; s == WK_OK && n0 < j->n; n0 += nb_max) {
        const int64_t nb = min64(nb_max, j->n - n0);
        const void *xc = wk_gpu_at(x, j->lx->offset + n0 * j->x4.strides[0], dsz);
        if (merge)
            gc.crs = nb * P;
        conv_opnd B;
        if (direct) { /* x itself: rows = channels, columns = pixels (stride 1) */
            B = (conv_opnd){xc, j->x4.strides[0], j->cig * j->x4.strides[1], j->x4.strides[1], 1};
        } else {
            void *args[] = {&gc, &xc, &col};
            if (vec) /* x: channel-major (channel, 16-byte slot of positions) */
                s = wk_gpu_run(j->dev, "conv", name, (unsigned)ceil_div(vec_threads, WK_GPU_BLOCK),
                               1, (unsigned)nb, args);
            else
                s = wk_gpu_run(j->dev, "conv", name, (unsigned)ceil_div(P, WK_GPU_BLOCK),
                               (unsigned)min64(g->ci, CONV_MAX_GRID_YZ), (unsigned)nb, args);
            B = (conv_opnd){col, gc.cis, kdim * gc.crs, gc.crs, 1};
        }
        void *oc = wk_gpu_at(out, n0 * g->co * P, dsz);
        if (merge) { /* one GEMM: C [co][nb*P] = W @ col [q][nb*P] */
            const conv_opnd C = {fout, 0, 0, nb * P, 1};
            if (s == WK_OK)
                s = conv_gemms(j, 1, j->cog, nb * P, kdim, A, B, C);
        } else {
            const conv_opnd C = {fout ? fout : oc, g->co * P, j->cog * P, P, 1};
            if (s == WK_OK)
                s = conv_gemms(j, nb, j->cog, P, kdim, A, B, C);
        }
        if (s == WK_OK && fout) { /* into out [nb][co][P], rounded once to the storage dtype */
            wk_layout lf;
            const int64_t cnt = nb * g->co * P;
            wk_layout_contiguous(&lf, 1, &cnt);
            if (merge)
                lf = (wk_layout){.rank = 3, .dims = {nb, g->co, P}, .strides = {P, nb * P, 1}};
            s = j->dt == j->gt ? wk_gpu_copy_strided(j->dev, j->dt, oc, 0, fout, &lf)
                               : wk_gpu_to_dtype(j->dev, j->gt, j->dt, oc, fout, &lf);
        }
    }
    /* stream-ordered frees: after the launches that use the buffers */
    if (fout)
        wk_gpu_scratch_free(j->dev, fout);
    if (col)
        wk_gpu_scratch_free(j->dev, col);
    if (wown)
        wk_gpu_scratch_free(j->dev, wown);
    return s;
}

static wk_status conv_transposed(const conv_job *j, void *out, const void *x, const void *w)
{
    const conv_geom *g = &j->g;
    const size_t dsz = wk_dtype_size(j->dt), gsz = wk_dtype_size(j->gt);
    const int64_t KK = g->kh * g->kw, HW = g->h * g->w, Po = g->ho * g->wo;
    const bool x_direct = j->dt == j->gt && wk_layout_is_contiguous(j->lx);
    const int64_t xc_img = x_direct ? 0 : g->ci * HW;
    int64_t col_img, img_bytes;
    if (!mul3(&col_img, g->co, KK, HW) || !mul3(&img_bytes, col_img + xc_img, (int64_t)gsz, 1))
        return too_large(j);
    const int64_t nb_max = conv_chunk(j->n, img_bytes);
    if (ceil_div(Po, WK_GPU_BLOCK) > INT32_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %lld output positions need too large a grid",
                      wk_op_name(j->op), (long long)Po);

    conv_opnd A;
    void *wown = NULL, *col = NULL, *xbuf = NULL;
    wk_status s = conv_weight(&A, &wown, j, w);
    if (s == WK_OK)
        s = wk_gpu_scratch_alloc(j->dev, (size_t)(nb_max * col_img) * gsz, &col);
    if (s == WK_OK && xc_img > 0)
        s = wk_gpu_scratch_alloc(j->dev, (size_t)(nb_max * xc_img) * gsz, &xbuf);

    char name[48];
    snprintf(name, sizeof name, "conv_col2im_%s_%s", wk_gpu_dtype_kname(j->gt),
             wk_gpu_dtype_kname(j->dt));
    for (int64_t n0 = 0; s == WK_OK && n0 < j->n; n0 += nb_max) {
        const int64_t nb = min64(nb_max, j->n - n0);
        const void *xc;
        if (x_direct) {
            xc = wk_gpu_at(x, j->lx->offset + n0 * g->ci * HW, dsz);
        } else { /* images n0 .. n0+nb of x, contiguous, in gt */
            wk_layout ln = *j->lx;
            ln.dims[0] = nb;
            ln.offset += n0 * ln.strides[0];
            s = wk_gpu_to_dtype(j->dev, j->dt, j->gt, xbuf, x, &ln);
            xc = xbuf;
        }
        const conv_opnd B = {xc, g->ci * HW, j->cig * HW, HW, 1};
        const conv_opnd C = {col, col_img, j->cog * KK * HW, HW, 1};
        if (s == WK_OK)
            s = conv_gemms(j, nb, j->cog * KK, HW, j->cig, A, B, C);
        if (s == WK_OK) {
            void *oc = wk_gpu_at(out, n0 * g->co * Po, dsz);
            void *args[] = {(void *)g, &col, &oc};
            s = wk_gpu_run(j->dev, "conv", name, (unsigned)ceil_div(Po, WK_GPU_BLOCK),
                           (unsigned)min64(g->co, CONV_MAX_GRID_YZ), (unsigned)nb, args);
        }
    }
    if (xbuf)
        wk_gpu_scratch_free(j->dev, xbuf);
    if (col)
        wk_gpu_scratch_free(j->dev, col);
    if (wown)
        wk_gpu_scratch_free(j->dev, wown);
    return s;
}

wk_status wk_gpu_conv(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *w, const wk_layout *lw,
                      const wk_conv_params *p)
{
    const int one_d = op == WK_OP_CONV1D || op == WK_OP_CONV_TRANSPOSE1D;
    const int transposed = op == WK_OP_CONV_TRANSPOSE1D || op == WK_OP_CONV_TRANSPOSE2D;
    conv_job j = {.dev = dev, .op = op, .dt = dt, .transposed = transposed, .lx = lx, .lw = lw};
    wk_layout_as_2d(&j.x4, lx);
    wk_layout_as_2d(&j.w4, lw);
    const int i = one_d ? 0 : 1; /* where the W parameters are */
    conv_geom *g = &j.g;
    *g = (conv_geom){
        .ci = j.x4.dims[1], .h = j.x4.dims[2], .w = j.x4.dims[3],
        .kh = j.w4.dims[2], .kw = j.w4.dims[3],
        .sh = one_d ? 1 : p->stride[0], .sw = p->stride[i],
        .ph = one_d ? 0 : p->padding[0], .pw = p->padding[i],
        .dh = one_d ? 1 : p->dilation[0], .dw = p->dilation[i],
        .xs = {j.x4.strides[0], j.x4.strides[1], j.x4.strides[2], j.x4.strides[3]},
    };
    j.n = j.x4.dims[0];
    j.groups = p->groups;
    if (transposed) {
        const int64_t oph = one_d ? 0 : p->output_padding[0], opw = p->output_padding[i];
        g->co = j.w4.dims[1] * j.groups;
        g->ho = (g->h - 1) * g->sh - 2 * g->ph + g->dh * (g->kh - 1) + oph + 1;
        g->wo = (g->w - 1) * g->sw - 2 * g->pw + g->dw * (g->kw - 1) + opw + 1;
        j.gt = dt == WK_DTYPE_F64 ? WK_DTYPE_F64 : WK_DTYPE_F32;
    } else {
        g->co = j.w4.dims[0];
        g->ho = (g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1;
        g->wo = (g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1;
        j.gt = dt == WK_DTYPE_F8E4M3 ? WK_DTYPE_F32 : dt;
    }
    j.cig = g->ci / j.groups;
    j.cog = g->co / j.groups;
    const int64_t total = j.n * g->co * g->ho * g->wo;
    if (total == 0)
        return WK_OK;
    /* empty sums (no input channels, or no input pixels to spread): zeros */
    if (j.cig == 0 || (transposed && g->h * g->w == 0))
        return conv_zero(dev, out, total, dt);
    return transposed ? conv_transposed(&j, out, x, w) : conv_forward(&j, out, x, w);
}
