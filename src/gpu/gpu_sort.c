/* gpu_sort.c: the GPU arg_sort_last_dim, every dtype, rows of any length, through
 * kernels/sort.cu and kernels/sort_radix.h (the order, the keys and the kernels are described
 * there). Three paths by row length D:
 *   D <= 256          sort_block: a bitonic network per row in shared memory, several short
 *                     rows per block (P / p2 segments of p2 = the power of two >= D;
 *                     WICK_SORT_ROWS = bitonic | radix moves the line for rows <= 2048);
 *   256 < D <= 2048   sort_rblock4/8: one row per block, an LSD radix sort in shared memory
 *                     (KB / 8 passes of 8-bit digits; no global scratch);
 *   D > 2048          KB / 8 global LSD radix passes over tiles of 2048 items, each pass
 *                     sort_rhist (tile digit counts) + sort_rscan (per row: counts -> first
 *                     destinations) + sort_rscatter (stable tile rank, runs of one digit
 *                     stored together), ping-ponging keys and indices between two buffers;
 *                     the first pass reads x, the last writes the indices to out.
 * Why radix for rows of 257..2048 (reasoned, not yet measured; WICK_SORT_ROWS lets
 * tools/device/sort.sh time both): a 1024-element f32 row in a block of 256 threads takes 55
 * bitonic steps of 4 compare-exchanges of 64-bit items per thread; with the steps of partner
 * distance < 4 in registers and < 128 in warp shuffles, 6 steps still need a barrier and each
 * thread still runs about 1,700 instructions. The radix sort runs 4 passes of (4 rounds of 9
 * ballots, the 32-column count / scan / rewrite, the slot moves): about 1,600 instructions and
 * 28 barriers, the same order for f32, but 1 pass for u8/f8e4m3 and 2 for bf16/f16/i16 where
 * bitonic still takes 55 steps, and its stable rank is the long rows' own code (one piece of
 * order-keeping code to prove on warps of 32 and 64). The bitonic sort it replaces measured
 * 88 GB/s on 4096 x 1024 f32 (docs/performance.md).
 * KB: the bits of the dtype's radix key (8 u8/f8e4m3, 16 i16/bf16/f16, 32 u32/i32/f32,
 * 64 i64/f64). Scratch (long rows only): 2 key + 2 index buffers of n (none for 8-bit keys)
 * and the counts, 256 u32 per tile; stream-ordered, freed after the launches. */
#include "gpu_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SORT_TILE 2048 /* SR_TILE of kernels/sort_radix.h: items per radix tile */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static unsigned capped(const wk_device *dev, int64_t blocks)
{
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    if (blocks > sm * 256)
        blocks = sm * 256; /* the kernels loop over their work */
    return blocks < 1 ? 1u : (unsigned)blocks;
}

static int key_bits(wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_U8: case WK_DTYPE_F8E4M3: return 8;
    case WK_DTYPE_I16: case WK_DTYPE_BF16: case WK_DTYPE_F16: return 16;
    case WK_DTYPE_I64: case WK_DTYPE_F64: return 64;
    default: return 32;
    }
}

/* Rows of D <= SORT_TILE: the shared-memory radix sort (true) or the bitonic network.
 * WICK_SORT_ROWS = bitonic | radix forces one (a benchmarking switch, read per call, so that
 * one process can compare them); else bitonic for D <= 256 (several rows per block), radix
 * above. */
static bool rows_by_radix(int64_t D)
{
    const char *e = getenv("WICK_SORT_ROWS");
    if (e && strcmp(e, "bitonic") == 0)
        return false;
    if (e && strcmp(e, "radix") == 0)
        return true;
    return D > WK_GPU_BLOCK;
}

/* The global radix passes (D > SORT_TILE): see the top of the file. */
static wk_status sort_radix(wk_device *dev, wk_dtype dt, void *out, const void *xp, int64_t D,
                            int64_t M, int64_t sx, int32_t asc, wk_klay1 *R)
{
    const int64_t n = M * D;
    int64_t T = ceil_div(D, SORT_TILE);
    const int kb = key_bits(dt);
    const size_t ksz = kb == 64 ? 8 : 4;
    if ((uint64_t)n > SIZE_MAX / 4 / (ksz + 4) || (uint64_t)(M * T) > SIZE_MAX / 4 / 1024)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "gpu arg_sort_last_dim: scratch for %lld rows of "
                      "%lld", (long long)M, (long long)D);
    /* one pass (8-bit keys) reads x and writes out: no key or index buffers */
    const size_t kbytes = kb > 8 ? (size_t)n * ksz : 0, ibytes = kb > 8 ? (size_t)n * 4 : 0;
    void *scratch = NULL;
    wk_status s = wk_gpu_scratch_alloc(dev, 2 * (kbytes + ibytes) + (size_t)(M * T) * 1024,
                                       &scratch);
    if (s != WK_OK)
        return s;
    void *kin = scratch, *kout = wk_gpu_at(scratch, (int64_t)kbytes, 1);
    void *iin = wk_gpu_at(scratch, (int64_t)(2 * kbytes), 1);
    void *iout = wk_gpu_at(scratch, (int64_t)(2 * kbytes + ibytes), 1);
    void *hist = wk_gpu_at(scratch, (int64_t)(2 * (kbytes + ibytes)), 1);
    char hname[32], cname[32];
    snprintf(hname, sizeof hname, "sort_rhist_%s", wk_gpu_dtype_kname(dt));
    snprintf(cname, sizeof cname, "sort_rscatter_%s", wk_gpu_dtype_kname(dt));
    const unsigned tiles = capped(dev, M * T), rows = capped(dev, M);
    for (int32_t shift = 0; shift < kb && s == WK_OK; shift += 8) {
        int32_t last = shift + 8 >= kb;
        void *hargs[] = {&xp, &kin, &hist, &D, &M, &T, &shift, &asc, &sx, R};
        s = wk_gpu_run(dev, "sort", hname, tiles, 1, 1, hargs);
        if (s != WK_OK)
            break;
        void *sargs[] = {&hist, &M, &T};
        s = wk_gpu_run(dev, "sort", "sort_rscan", rows, 1, 1, sargs);
        if (s != WK_OK)
            break;
        void *cargs[] = {&xp,   &kin, &iin, &kout, &iout, &out, &hist, &D,
                         &M,    &T,   &shift, &asc, &sx,  R,    &last};
        s = wk_gpu_run(dev, "sort", cname, tiles, 1, 1, cargs);
        void *t = kin;
        kin = kout;
        kout = t;
        t = iin;
        iin = iout;
        iout = t;
    }
    wk_gpu_scratch_free(dev, scratch); /* stream-ordered: after the kernels that use it */
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
    int32_t asc = ascending ? 1 : 0;

    wk_layout o = {.rank = r - 1}, outer;
    for (int k = 0; k < r - 1; k++) {
        o.dims[k] = lx->dims[k];
        o.strides[k] = lx->strides[k];
    }
    wk_klay1 R;
    wk_gpu_klay1(&R, &outer, &o);
    const void *xp = wk_gpu_at(x, lx->offset, wk_dtype_size(dt));

    if (D > SORT_TILE)
        return sort_radix(dev, dt, out, xp, D, M, sx, asc, &R);
    char name[32];
    if (rows_by_radix(D)) { /* one row per block, er = ceil(D / 256) rounds */
        int32_t er = (int32_t)ceil_div(D, WK_GPU_BLOCK);
        snprintf(name, sizeof name, "sort_rblock%d_%s", er <= 4 ? 4 : 8, wk_gpu_dtype_kname(dt));
        void *args[] = {&xp, &out, &D, &M, &er, &asc, &sx, &R};
        return wk_gpu_run(dev, "sort", name, capped(dev, M), 1, 1, args);
    }

    /* bitonic segments of p2 = 2^lp2 >= D slots, P / p2 per block */
    const bool k64 = dt == WK_DTYPE_I64 || dt == WK_DTYPE_F64;
    const size_t isz = k64 ? 16 : 8; /* bytes per item */
    int32_t lp2 = 0;
    while (((int64_t)1 << lp2) < D)
        lp2++;
    const int64_t p2 = (int64_t)1 << lp2;
    int64_t cpr = 1, nseg = M;
    int32_t P = (int32_t)(p2 > WK_GPU_BLOCK ? p2 : WK_GPU_BLOCK);
    void *none = NULL;
    snprintf(name, sizeof name, "sort_block_%s", wk_gpu_dtype_kname(dt));
    wk_gpu_fn fn;
    wk_status s = wk_gpu_function(&fn, dev, "sort", name);
    if (s == WK_OK) {
        void *args[] = {&xp, &out, &none, &D, &nseg, &cpr, &lp2, &P, &asc, &sx, &R};
        s = wk_gpu_launch(dev, fn, capped(dev, ceil_div(nseg, P / p2)), 1, 1, WK_GPU_BLOCK, 1, 1,
                          (unsigned)((size_t)P * isz), args);
    }
    return s;
}
