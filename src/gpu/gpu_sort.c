/* gpu_sort.c: the GPU arg_sort_last_dim, every dtype, rows of any length, through
 * kernels/sort.cu (the order, the items and the kernels are described there).
 *
 * A row of D elements is cut into segments of p2 = the power of two >= D, at most the chunk C
 * (4096 packed (key, index) items of 8 bytes; 2048 pairs of 16 bytes for i64/f64), so a
 * segment fits in 32 KiB of shared memory; sort_block sorts P / p2 segments per block
 * (P = max(p2, 256)). A row that fits (D <= C) is done then: its indices go to out. Longer rows
 * go to scratch as sorted runs of C items and take ceil(log2(D / C)) merge passes of doubling
 * run width (sort_part finds the tiles' merge-path splits, sort_merge merges), ping-ponging
 * between two item buffers, the last pass writing the indices. Scratch: 2 * n items plus two
 * int64 splits per 2048-output tile; stream-ordered, freed after the launches. */
#include "gpu_ops.h"
#include <stdio.h>

#define SORT_TILE 2048 /* SO_TILE of kernels/sort.cu: outputs per merge block */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static unsigned capped(const wk_device *dev, int64_t blocks)
{
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    if (blocks > sm * 256)
        blocks = sm * 256; /* the kernels loop over their work */
    return blocks < 1 ? 1u : (unsigned)blocks;
}

/* The merge passes over rows of D items in sorted runs of w0 (scratch in buf[0]); the indices
 * end in out. */
static wk_status sort_merges(wk_device *dev, bool k64, void *out, void *buf0, void *buf1,
                             int64_t *splits, int64_t M, int64_t D, int64_t w0)
{
    char pname[24], mname[24];
    snprintf(pname, sizeof pname, "sort_part_%s", k64 ? "k64" : "k32");
    snprintf(mname, sizeof mname, "sort_merge_%s", k64 ? "k64" : "k32");
    const int64_t tiles = M * ceil_div(D, SORT_TILE);
    void *src = buf0, *dst = buf1;
    wk_status s = WK_OK;
    for (int64_t w = w0; w < D && s == WK_OK; w *= 2) {
        int32_t last = 2 * w >= D;
        int64_t Dv = D, Mv = M, wv = w;
        void *pargs[] = {&src, &splits, &Dv, &Mv, &wv};
        s = wk_gpu_run(dev, "sort", pname, wk_gpu_blocks(dev, tiles * 2), 1, 1, pargs);
        if (s != WK_OK)
            break;
        void *margs[] = {&src, &dst, &out, &splits, &Dv, &Mv, &wv, &last};
        s = wk_gpu_run(dev, "sort", mname, capped(dev, tiles), 1, 1, margs);
        void *t = src;
        src = dst;
        dst = t;
    }
    return s;
}

/* out (u32, contiguous, dims of lx) = per row of the last dim, the sorting permutation
 * (stable; NaN last ascending, first descending). lx->rank >= 1, D <= 2^32 (front end). */
wk_status wk_gpu_arg_sort(wk_device *dev, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, int ascending)
{
    if (!wk_dtype_valid(dt) || lx->rank < 1)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "gpu arg_sort_last_dim: bad call (%s, rank %d)",
                      wk_dtype_name(dt), (int)lx->rank);
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    const int r = lx->rank;
    int64_t D = lx->dims[r - 1], M = n / D, sx = lx->strides[r - 1];
    const bool k64 = dt == WK_DTYPE_I64 || dt == WK_DTYPE_F64;
    const size_t isz = k64 ? 16 : 8; /* bytes per item */
    const int64_t C = k64 ? 2048 : 4096;

    /* segments of p2 = 2^lp2 slots */
    int32_t lp2 = 0;
    while (((int64_t)1 << lp2) < D && ((int64_t)1 << lp2) < C)
        lp2++;
    const int64_t p2 = (int64_t)1 << lp2;
    int64_t cpr = ceil_div(D, p2), nseg = M * cpr;
    int32_t P = (int32_t)(p2 > WK_GPU_BLOCK ? p2 : WK_GPU_BLOCK);
    int32_t asc = ascending ? 1 : 0;

    wk_layout o = {.rank = r - 1}, outer;
    for (int k = 0; k < r - 1; k++) {
        o.dims[k] = lx->dims[k];
        o.strides[k] = lx->strides[k];
    }
    wk_klay1 R;
    wk_gpu_klay1(&R, &outer, &o);
    const void *xp = wk_gpu_at(x, lx->offset, wk_dtype_size(dt));

    void *scratch = NULL, *buf0 = NULL, *buf1 = NULL;
    int64_t *splits = NULL;
    wk_status s;
    if (cpr > 1) {
        const int64_t tiles = M * ceil_div(D, SORT_TILE);
        if ((uint64_t)n > SIZE_MAX / 4 / isz || (uint64_t)tiles > SIZE_MAX / 64)
            return wk_err(WK_ERR_OUT_OF_MEMORY, "gpu arg_sort_last_dim: scratch for %lld rows of "
                          "%lld", (long long)M, (long long)D);
        const size_t items = (size_t)n * isz;
        s = wk_gpu_scratch_alloc(dev, 2 * items + (size_t)tiles * 2 * sizeof(int64_t), &scratch);
        if (s != WK_OK)
            return s;
        buf0 = scratch;
        buf1 = wk_gpu_at(scratch, (int64_t)items, 1);
        splits = (int64_t *)wk_gpu_at(scratch, (int64_t)(2 * items), 1);
    }

    char name[32];
    snprintf(name, sizeof name, "sort_block_%s", wk_gpu_dtype_kname(dt));
    wk_gpu_fn fn;
    s = wk_gpu_function(&fn, dev, "sort", name);
    if (s == WK_OK) {
        void *args[] = {&xp, &out, &buf0, &D, &nseg, &cpr, &lp2, &P, &asc, &sx, &R};
        s = wk_gpu_launch(dev, fn, capped(dev, ceil_div(nseg, P / p2)), 1, 1, WK_GPU_BLOCK, 1, 1,
                          (unsigned)((size_t)P * isz), args);
    }
    if (s == WK_OK && cpr > 1)
        s = sort_merges(dev, k64, out, buf0, buf1, splits, M, D, p2);
    if (scratch)
        wk_gpu_scratch_free(dev, scratch); /* stream-ordered: after the kernels that use it */
    return s;
}
