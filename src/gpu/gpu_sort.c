/* gpu_sort.c: the GPU arg_sort_last_dim, every dtype, rows of any length, through
 * kernels/sort.cu (module "sort") and kernels/sort_radix.cu (module "sort_radix"), where the
 * order, the keys and the kernels are described. Four paths by row length D:
 *   D <= 256          sort_bitonic: a bitonic network per row in shared memory, several short
 *                     rows per block (P / p2 segments of p2 = the power of two >= D);
 *   256 < D <= 1024   32-bit keys: sort_warp8/16/32: one row per 32 lanes, a bitonic network
 *                     in registers (8 rows per block; no barrier during the sort);
 *   D <= 2048         other rows: sort_radix_block4/8: one row per block, an LSD radix sort in
 *                     shared memory (KB / 8 passes of 8-bit digits; no global scratch);
 *   D > 2048          KB / 8 global LSD radix passes over tiles of 2048 items, each pass
 *                     sort_radix_hist (tile digit counts) + sort_radix_scan (per row: counts ->
 *                     first destinations) + sort_radix_scatter (stable tile rank, runs of one
 *                     digit stored together), ping-ponging keys and indices between two
 *                     buffers; the first pass reads x, the last writes the indices to out.
 * The choice is rows_by (rows of D <= 2048) and the length (measurements: docs/performance.md,
 * "Memory-bound ops"). WICK_SORT_ROWS = bitonic | warp | radix forces one of the first three for rows <=
 * 2048 (warp only where it applies): a benchmarking switch, read per call, for
 * tools/device/sort.sh.
 * Why the warp sort for rows of 257..1024 with 32-bit keys (reasoned before measuring;
 * tools/device/sort.sh times it beside the radix sort): a 1024-element f32 row takes 4 radix
 * passes of 7 barriers each and shared-memory traffic per item per pass (about 157 us for 4096
 * rows on the H200); the bitonic network on 64-bit items in one group's registers takes 40
 * register steps (16 compare-exchanges of 7 instructions per lane) and 15 shuffle steps (32
 * exchanges of ~6), about 8,000 instructions per lane, no barrier: 4096 rows are 4096 warps of
 * that, ~35 us at the H200's issue rate. 64-bit keys would need 96 registers for the items alone,
 * so i64/f64 keep the radix sort. The bitonic block sort (several rows per block, no wasted
 * lanes) stays for D <= 256.
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

/* The kernel family for rows of D <= SORT_TILE. WICK_SORT_ROWS = bitonic | radix | warp forces
 * one where it applies (a benchmarking switch, read per call, so that one process can compare
 * them; warp applies to D <= 1024 with 32-bit keys, else the default stands); by default the
 * bitonic block sort for D <= 256 (several rows per block), the warp sort for D <= 1024 with
 * 32-bit keys (H200, 4096 x 1024 f32: 209 GB/s, 1.93x PyTorch, where the shared-memory radix
 * sort ran 121 GB/s), the shared-memory radix sort above. */
typedef enum { ROWS_BITONIC, ROWS_WARP, ROWS_RADIX } rows_kind;

static rows_kind rows_by(int64_t D, wk_dtype dt)
{
    const bool warp_ok = D <= 1024 && key_bits(dt) <= 32;
    const char *e = getenv("WICK_SORT_ROWS");
    if (e && strcmp(e, "bitonic") == 0)
        return ROWS_BITONIC;
    if (e && strcmp(e, "radix") == 0)
        return ROWS_RADIX;
    if (e && strcmp(e, "warp") == 0 && warp_ok)
        return ROWS_WARP;
    if (D <= WK_GPU_BLOCK)
        return ROWS_BITONIC;
    return warp_ok ? ROWS_WARP : ROWS_RADIX;
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
    snprintf(hname, sizeof hname, "sort_radix_hist_%s", wk_gpu_dtype_kname(dt));
    snprintf(cname, sizeof cname, "sort_radix_scatter_%s", wk_gpu_dtype_kname(dt));
    const unsigned tiles = capped(dev, M * T), rows = capped(dev, M);
    for (int32_t shift = 0; shift < kb && s == WK_OK; shift += 8) {
        int32_t last = shift + 8 >= kb;
        void *hargs[] = {&xp, &kin, &hist, &D, &M, &T, &shift, &asc, &sx, R};
        s = wk_gpu_run(dev, "sort_radix", hname, tiles, 1, 1, hargs);
        if (s != WK_OK)
            break;
        void *sargs[] = {&hist, &M, &T};
        s = wk_gpu_run(dev, "sort_radix", "sort_radix_scan", rows, 1, 1, sargs);
        if (s != WK_OK)
            break;
        void *cargs[] = {&xp,   &kin, &iin, &kout, &iout, &out, &hist, &D,
                         &M,    &T,   &shift, &asc, &sx,  R,    &last};
        s = wk_gpu_run(dev, "sort_radix", cname, tiles, 1, 1, cargs);
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
    int32_t asc = ascending ? 1 : 0, dtc = (int32_t)dt; /* the warp and bitonic sorts' dtype */

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
    const rows_kind kind = rows_by(D, dt);
    if (kind == ROWS_WARP) { /* 8 rows per block, E = 8, 16 or 32 slots per lane */
        const int E = D <= 256 ? 8 : D <= 512 ? 16 : 32;
        snprintf(name, sizeof name, "sort_warp%d", E);
        void *args[] = {&xp, &out, &D, &M, &asc, &sx, &R, &dtc};
        return wk_gpu_run(dev, "sort", name, capped(dev, ceil_div(M, WK_GPU_BLOCK / 32)), 1, 1,
                          args);
    }
    if (kind == ROWS_RADIX) { /* one row per block, er = ceil(D / 256) rounds */
        int32_t er = (int32_t)ceil_div(D, WK_GPU_BLOCK);
        snprintf(name, sizeof name, "sort_radix_block%d_%s", er <= 4 ? 4 : 8,
                 wk_gpu_dtype_kname(dt));
        void *args[] = {&xp, &out, &D, &M, &er, &asc, &sx, &R};
        return wk_gpu_run(dev, "sort_radix", name, capped(dev, M), 1, 1, args);
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
    snprintf(name, sizeof name, "sort_bitonic_%s", k64 ? "k64" : "k32");
    wk_gpu_fn fn;
    wk_status s = wk_gpu_function(&fn, dev, "sort", name);
    if (s == WK_OK) {
        void *args[] = {&xp, &out, &none, &D, &nseg, &cpr, &lp2, &P, &asc, &sx, &R, &dtc};
        s = wk_gpu_launch(dev, fn, capped(dev, ceil_div(nseg, P / p2)), 1, 1, WK_GPU_BLOCK, 1, 1,
                          (unsigned)((size_t)P * isz), args);
    }
    return s;
}
