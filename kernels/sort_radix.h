/* sort_radix.h: the LSD radix sorts of arg_sort_last_dim (included by kernels/sort_radix.cu;
 * kernels/sort.cu states the order). Each element becomes an unsigned key of KB = 8, 16, 32 or 64
 * bits whose ascending order is the wanted order (sr_key: integers offset by their sign bit;
 * floats from their own bits, magnitude up from the middle for positives and down for negatives,
 * -0 and +0 both the middle, every NaN the largest key; descending: the key complemented within
 * its KB bits, so NaN comes first and ties stay in index order). A stable sort on 8-bit digits
 * from the lowest (KB / 8 passes) is then the CPU's order exactly.
 *
 * The tile rank (sr_rank): a block of 256 threads holds a tile of n <= 256 * er items, item i
 * of the tile at warp w = i / (er * ws), round r = i / ws % er, lane i % ws (ws: the warp
 * size, 32 or 64), so item order = (warp, round, lane) order. Per round each warp finds the
 * lanes with its digit by 8 ballots (match mask); the lowest of them adds the group's size to
 * its warp's running count of the digit, wc[w * 256 + digit] (shared atomic add, zeroed first),
 * and hands the count before the add (the digit's items in the warp's earlier rounds) to the
 * group by a shuffle; the item's rank in its warp = that count + its rank in the match mask.
 * After a barrier thread t (= digit t) sums its column over the warps, a block scan over digits
 * gives each digit's first slot base[d], and the column becomes exclusive slots per warp; the
 * item's slot = its warp's column entry + its rank in the warp. Slots are digit-major and
 * stable. Shared memory exchanged between lanes of a warp: only the running counts, through
 * atomics whose results the round's shuffle waits for.
 *
 * Kernels (blocks of 256 threads):
 *   sort_radix_block<4|8>_<dt>(x, out, D, rows, er, asc, sx, R)
 *       rows of D <= 256 * er <= SR_TILE: one row per block sorted in shared memory; the
 *       items stay in registers between passes and move through shared slots; er <= 4 or 8
 *       (the register arrays' bound: 4 keeps D <= 1024 within 64 registers).
 *   sort_radix_hist_<dt>(x, kin, hist, D, rows, T, shift, asc, sx, R)
 *   sort_radix_scan(hist, rows, T)
 *   sort_radix_scatter_<dt>(x, kin, iin, kout, iout, out, hist, D, rows, T, shift, asc, sx, R,
 *                           last)
 *       one pass over rows of any length cut into T = ceil(D / SR_TILE) tiles per row: hist
 *       counts each tile's digits (hist[(row * T + t) * 256 + d]); scan turns the counts into
 *       the row-relative first destination of each (tile, digit); scatter ranks the tile's
 *       items, orders them by slot in shared memory and stores them (key to kout, index to
 *       iout; on the last pass the index to out) in runs of one digit. The first pass reads
 *       the keys from x (kin, iin unused; index = column); later ones from kin/iin. */
#ifndef WK_SORT_RADIX_H
#define WK_SORT_RADIX_H

#define SR_E 8                      /* rounds (items per thread) of a tile, at most */
#define SR_TILE (WK_BLOCK * SR_E)   /* 2048 items per tile */

/* sr_popc: set bits; sr_low: the lowest set bit's index (m != 0) */
#if defined(WK_SIMT)
WK_DEV int sr_popc(uint64_t m) { return __builtin_popcountll(m); }
WK_DEV int sr_low(uint64_t m) { return __builtin_ctzll(m); }
#else
WK_DEV int sr_popc(uint64_t m) { return __popcll((unsigned long long)m); }
WK_DEV int sr_low(uint64_t m) { return __ffsll((long long)m) - 1; }
#endif

/* ---- keys: K the key type, KB its significant bits. */
template <int DT> struct sr_key;
#define SR_KEY(DT, KT, BITS, EXPR)                                                             \
    template <> struct sr_key<DT> {                                                            \
        typedef KT K;                                                                          \
        enum { KB = BITS };                                                                    \
        WK_DEV K get(typename wk_t<DT>::S v) { return EXPR; }                                  \
    };
/* A float of B bits given as raw bits u (sign bit B - 1): NaN -> all ones. */
WK_DEV uint32_t sr_fbits(uint32_t u, int B, bool nan)
{
    const uint32_t mid = 1u << (B - 1), mag = u & (mid - 1);
    if (nan)
        return mid | (mid - 1);
    return (u & mid) ? mid - mag : mid + mag;
}
SR_KEY(WK_DT_U8, uint32_t, 8, (uint32_t)v)
SR_KEY(WK_DT_U32, uint32_t, 32, v)
SR_KEY(WK_DT_I16, uint32_t, 16, (uint32_t)(uint16_t)v ^ 0x8000u)
SR_KEY(WK_DT_I32, uint32_t, 32, (uint32_t)v ^ 0x80000000u)
SR_KEY(WK_DT_I64, uint64_t, 64, (uint64_t)v ^ 0x8000000000000000ull)
SR_KEY(WK_DT_BF16, uint32_t, 16,
       sr_fbits(v, 16, wk_t<WK_DT_BF16>::ld(v) != wk_t<WK_DT_BF16>::ld(v)))
SR_KEY(WK_DT_F16, uint32_t, 16,
       sr_fbits(v, 16, wk_t<WK_DT_F16>::ld(v) != wk_t<WK_DT_F16>::ld(v)))
SR_KEY(WK_DT_F32, uint32_t, 32, so_fkey32(v))
SR_KEY(WK_DT_F64, uint64_t, 64, so_fkey64(v))
SR_KEY(WK_DT_F8E4M3, uint32_t, 8,
       sr_fbits(v, 8, wk_t<WK_DT_F8E4M3>::ld(v) != wk_t<WK_DT_F8E4M3>::ld(v)))
#undef SR_KEY

/* The key of x's element `col` of the row starting at xb (descending: complemented within KB
 * bits). */
template <int DT>
WK_DEV typename sr_key<DT>::K sr_load(const void *x, int64_t xb, int64_t col, int32_t asc,
                                      int64_t sx)
{
    typedef sr_key<DT> KY;
    typedef typename KY::K K;
    const K k = KY::get(((const typename wk_t<DT>::S *)x)[xb + col * sx]);
    const K mask = (K)(~(K)0 >> (8 * sizeof(K) - KY::KB));
    return asc ? k : (K)(~k & mask);
}

/* The lanes of the calling lane's warp whose `valid` is set and whose digit equals d. Every
 * lane of the warp must call it. */
WK_DEV uint64_t sr_match(uint32_t d, bool valid)
{
    uint64_t m = WK_BALLOT(valid);
#pragma unroll
    for (int b = 0; b < 8; b++) {
        const bool on = (d >> b) & 1u;
        const uint64_t bb = WK_BALLOT(on);
        m &= on ? bb : ~bb;
    }
    return m;
}

/* Exclusive prefix over the block's 256 values v (thread t's); sc: 256 + 16 u32 of shared
 * memory (the warps' totals in sc[0 .. 256 / ws)). A shuffle scan in each warp, the warps'
 * totals through shared memory. Synchronises. */
WK_DEV uint32_t sr_scan256(uint32_t v, uint32_t *sc)
{
    const int t = threadIdx.x, ws = warpSize, lane = t % ws, w = t / ws;
    uint32_t inc = v; /* inclusive prefix within the warp */
    for (int d = 1; d < ws; d <<= 1) {
        const uint32_t o = WK_SHFL_IDX(inc, lane >= d ? lane - d : lane);
        if (lane >= d)
            inc += o;
    }
    if (lane == ws - 1)
        sc[w] = inc;
    __syncthreads();
    uint32_t p = inc - v;
    for (int k = 0; k < w; k++)
        p += sc[k];
    __syncthreads(); /* before sc is used again */
    return p;
}

/* The tile rank (top of file): dg[r] the digits of this lane's items, n the tile's items.
 * Returns the slots in pos[r] (for items i < n) and each digit's first slot in base[256].
 * wc: 256 * WK_BLOCK / 32 u32, sc: 272 u32 (shared). Synchronises. wc is read until the
 * return: the caller's next barrier frees it. */
template <int ER>
WK_DEV void sr_rank(const uint32_t *dg, int n, int er, int *pos, uint32_t *wc, uint32_t *sc,
                    uint32_t *base)
{
    const int t = threadIdx.x, ws = warpSize, lane = t % ws, w = t / ws, nw = WK_BLOCK / ws;
    const uint64_t lt = (((uint64_t)1) << lane) - 1;
    for (int k = t; k < nw * 256; k += WK_BLOCK)
        wc[k] = 0;
    __syncthreads();
    uint32_t *mine = wc + w * 256; /* this warp's running count per digit */
    int rk[ER] = {0};
#pragma unroll
    for (int r = 0; r < ER; r++) {
        if (r < er) { /* uniform */
            const int i = (w * er + r) * ws + lane;
            const bool valid = i < n;
            const uint64_t m = sr_match(dg[r], valid);
            const int below = sr_popc(m & lt);
            /* the group's lowest lane adds the group to its digit's count and gets the count
             * of the warp's earlier rounds; a round's groups have distinct digits, and the
             * shuffle below waits for every leader's add before the next round's */
            uint32_t old = 0;
            if (valid && below == 0)
                old = atomicAdd(&mine[dg[r]], (unsigned)sr_popc(m));
            old = WK_SHFL_IDX(old, valid ? sr_low(m) : lane);
            rk[r] = (int)old + below;
        }
    }
    __syncthreads();
    /* thread t = digit t: the warps' counts -> exclusive slots (digit-major, warp order) */
    uint32_t tot = 0;
    for (int k = 0; k < nw; k++)
        tot += wc[k * 256 + t];
    uint32_t run = sr_scan256(tot, sc);
    base[t] = run;
    for (int k = 0; k < nw; k++) {
        const uint32_t c = wc[k * 256 + t];
        wc[k * 256 + t] = run;
        run += c;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < ER; r++) {
        if (r < er) {
            const int i = (w * er + r) * ws + lane;
            if (i < n)
                pos[r] = (int)mine[dg[r]] + rk[r];
        }
    }
}

/* Shared memory of the radix kernels: the slots (keys then indices), the warps' digit counts
 * of the rank, the scan scratch, the digit bases and (rscatter) the tile's destinations. */
#define SR_BUF_U64 (SR_TILE * 12 / 8) /* 24 KiB: SR_TILE * (8 + 4) bytes */
struct sr_smem {
    uint64_t buf[SR_BUF_U64];
    uint32_t wc[WK_BLOCK / 32 * 256], sc[272], base[256], dst[256];
};

template <int DT, int ER>
WK_DEV void sr_block(const void *x, void *out, int64_t D, int64_t rows, int32_t er, int32_t asc,
                     int64_t sx, const wk_klay<1> &R)
{
    typedef sr_key<DT> KY;
    typedef typename KY::K K;
    __shared__ sr_smem sm;
    K *sk = (K *)sm.buf;
    uint32_t *si = (uint32_t *)(sk + SR_TILE);
    const int t = threadIdx.x, ws = warpSize, lane = t % ws, w = t / ws, n = (int)D;
#pragma unroll 1
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) { /* uniform */
        K k[ER];
        uint32_t id[ER], dg[ER];
        int pos[ER] = {0};
        int64_t xb;
        wk_koff(R, row, &xb);
#pragma unroll
        for (int r = 0; r < ER; r++) {
            const int i = (w * er + r) * ws + lane;
            k[r] = 0;
            id[r] = (uint32_t)i;
            if (r < er && i < n)
                k[r] = sr_load<DT>(x, xb, i, asc, sx);
        }
#pragma unroll 1
        for (int sh = 0; sh < KY::KB; sh += 8) {
#pragma unroll
            for (int r = 0; r < ER; r++)
                dg[r] = (uint32_t)(k[r] >> sh) & 255u;
            sr_rank<ER>(dg, n, er, pos, sm.wc, sm.sc, sm.base);
#pragma unroll
            for (int r = 0; r < ER; r++) {
                const int i = (w * er + r) * ws + lane;
                if (r < er && i < n) {
                    sk[pos[r]] = k[r];
                    si[pos[r]] = id[r];
                }
            }
            __syncthreads();
#pragma unroll
            for (int r = 0; r < ER; r++) {
                const int i = (w * er + r) * ws + lane;
                if (r < er && i < n) {
                    k[r] = sk[i];
                    id[r] = si[i];
                }
            }
            __syncthreads(); /* before the next rank reuses the buffer */
        }
#pragma unroll
        for (int r = 0; r < ER; r++) {
            const int i = (w * er + r) * ws + lane;
            if (r < er && i < n)
                ((uint32_t *)out)[row * D + i] = id[r];
        }
    }
}

/* The keys of tile t of row `row` in the rank layout, and with idx non-NULL their column
 * indices: from x on the first pass, else from kin and iin. Returns the tile's items. */
template <int DT>
WK_DEV int sr_tile_keys(typename sr_key<DT>::K *k, uint32_t *idx, const void *x, const void *kin,
                        const uint32_t *iin, int64_t D, int64_t row, int64_t t, int32_t asc,
                        int64_t sx, const wk_klay<1> &R, int32_t first)
{
    typedef typename sr_key<DT>::K K;
    const int ws = warpSize, lane = threadIdx.x % ws, w = threadIdx.x / ws;
    const int64_t c0 = t * SR_TILE;
    const int n = (int)(D - c0 < SR_TILE ? D - c0 : SR_TILE);
    int64_t xb = 0;
    if (first)
        wk_koff(R, row, &xb);
#pragma unroll
    for (int r = 0; r < SR_E; r++) {
        const int i = (w * SR_E + r) * ws + lane;
        k[r] = 0;
        if (i < n) {
            if (first) {
                k[r] = sr_load<DT>(x, xb, c0 + i, asc, sx);
                if (idx)
                    idx[r] = (uint32_t)(c0 + i);
            } else {
                k[r] = ((const K *)kin)[row * D + c0 + i];
                if (idx)
                    idx[r] = iin[row * D + c0 + i];
            }
        }
    }
    return n;
}

/* Tile digit counts: one shared atomic add per item (the counts by warp match masks, one add
 * per run of equal digits, were slower on the H200: 62.1 against 76.5 GB/s, docs/performance.md
 * "Memory-bound ops"). */
template <int DT>
WK_DEV void sr_hist(const void *x, const void *kin, uint32_t *hist, int64_t D, int64_t rows,
                    int64_t T, int32_t shift, int32_t asc, int64_t sx, const wk_klay<1> &R)
{
    typedef typename sr_key<DT>::K K;
    __shared__ uint32_t h[256];
    const int t = threadIdx.x, ws = warpSize, lane = t % ws, w = t / ws;
#pragma unroll 1
    for (int64_t tile = blockIdx.x; tile < rows * T; tile += gridDim.x) { /* uniform */
        const int64_t row = tile / T;
        h[t] = 0;
        __syncthreads();
        K k[SR_E];
        const int n = sr_tile_keys<DT>(k, (uint32_t *)0, x, kin, (const uint32_t *)0, D, row,
                                       tile - row * T, asc, sx, R, shift == 0);
#pragma unroll
        for (int r = 0; r < SR_E; r++) {
            const int i = (w * SR_E + r) * ws + lane;
            if (i < n)
                atomicAdd(&h[(uint32_t)(k[r] >> shift) & 255u], 1u);
        }
        __syncthreads();
        hist[tile * 256 + t] = h[t];
        __syncthreads(); /* before the next tile clears h */
    }
}

/* hist of each row: counts -> row-relative first destinations, (tile, digit) in digit-major
 * then tile order. Thread t walks digit t's column, 8 independent loads at a time (the column
 * is T long: 98 for 200,000 elements; the loads hit L2, just written by sort_radix_hist). */
#define SR_SCAN_U 8
WK_DEV void sr_scan(uint32_t *hist, int64_t rows, int64_t T)
{
    __shared__ uint32_t sc[272];
    const int t = threadIdx.x;
#pragma unroll 1
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) { /* uniform */
        uint32_t *h = hist + row * T * 256 + t;
        uint32_t tot = 0, v[SR_SCAN_U];
#pragma unroll 1
        for (int64_t j = 0; j < T; j += SR_SCAN_U) {
#pragma unroll
            for (int u = 0; u < SR_SCAN_U; u++)
                v[u] = j + u < T ? h[(j + u) * 256] : 0u;
#pragma unroll
            for (int u = 0; u < SR_SCAN_U; u++)
                tot += v[u];
        }
        uint32_t run = sr_scan256(tot, sc);
#pragma unroll 1
        for (int64_t j = 0; j < T; j += SR_SCAN_U) {
#pragma unroll
            for (int u = 0; u < SR_SCAN_U; u++)
                v[u] = j + u < T ? h[(j + u) * 256] : 0u;
#pragma unroll
            for (int u = 0; u < SR_SCAN_U; u++) {
                if (j + u < T)
                    h[(j + u) * 256] = run;
                run += v[u];
            }
        }
    }
}

template <int DT>
WK_DEV void sr_scatter(const void *x, const void *kin, const uint32_t *iin, void *kout,
                       uint32_t *iout, uint32_t *out, const uint32_t *hist, int64_t D,
                       int64_t rows, int64_t T, int32_t shift, int32_t asc, int64_t sx,
                       const wk_klay<1> &R, int32_t last)
{
    typedef typename sr_key<DT>::K K;
    __shared__ sr_smem sm;
    K *sk = (K *)sm.buf;
    uint32_t *si = (uint32_t *)(sk + SR_TILE);
    const int t = threadIdx.x, ws = warpSize, lane = t % ws, w = t / ws;
    const int32_t first = shift == 0;
#pragma unroll 1
    for (int64_t tile = blockIdx.x; tile < rows * T; tile += gridDim.x) { /* uniform */
        const int64_t row = tile / T;
        K k[SR_E];
        uint32_t dg[SR_E], id[SR_E] = {0};
        int pos[SR_E] = {0};
        const int n = sr_tile_keys<DT>(k, id, x, kin, iin, D, row, tile - row * T, asc, sx, R,
                                       first);
#pragma unroll
        for (int r = 0; r < SR_E; r++)
            dg[r] = (uint32_t)(k[r] >> shift) & 255u;
        sm.dst[t] = hist[tile * 256 + t];
        sr_rank<SR_E>(dg, n, SR_E, pos, sm.wc, sm.sc, sm.base);
#pragma unroll
        for (int r = 0; r < SR_E; r++) {
            const int i = (w * SR_E + r) * ws + lane;
            if (i < n) {
                sk[pos[r]] = k[r];
                si[pos[r]] = id[r];
            }
        }
        __syncthreads();
        for (int s = t; s < n; s += WK_BLOCK) {
            const K key = sk[s];
            const uint32_t d = (uint32_t)(key >> shift) & 255u;
            const int64_t o = row * D + (int64_t)(sm.dst[d] + (uint32_t)s - sm.base[d]);
            if (last) {
                out[o] = si[s];
            } else {
                ((K *)kout)[o] = key;
                iout[o] = si[s];
            }
        }
        __syncthreads(); /* before the next tile reuses the buffer */
    }
}

#define WK_SORT_RADIX(dtn, DT)                                                                 \
    WK_KERNEL_MINB(4) sort_radix_block4_##dtn(const void *x, void *out, int64_t D, int64_t rows, \
                                         int32_t er, int32_t asc, int64_t sx, wk_klay<1> R)    \
    {                                                                                          \
        sr_block<DT, 4>(x, out, D, rows, er, asc, sx, R);                                      \
    }                                                                                          \
    WK_KERNEL_MINB(4) sort_radix_block8_##dtn(const void *x, void *out, int64_t D, int64_t rows, \
                                         int32_t er, int32_t asc, int64_t sx, wk_klay<1> R)    \
    {                                                                                          \
        sr_block<DT, 8>(x, out, D, rows, er, asc, sx, R);                                      \
    }                                                                                          \
    WK_KERNEL sort_radix_hist_##dtn(const void *x, const void *kin, uint32_t *hist, int64_t D, \
                                    int64_t rows, int64_t T, int32_t shift, int32_t asc,       \
                                    int64_t sx, wk_klay<1> R)                                  \
    {                                                                                          \
        sr_hist<DT>(x, kin, hist, D, rows, T, shift, asc, sx, R);                              \
    }                                                                                          \
    WK_KERNEL sort_radix_scatter_##dtn(const void *x, const void *kin, const uint32_t *iin,    \
                                       void *kout, uint32_t *iout, uint32_t *out,              \
                                       const uint32_t *hist, int64_t D, int64_t rows,          \
                                       int64_t T, int32_t shift, int32_t asc, int64_t sx,      \
                                       wk_klay<1> R, int32_t last)                             \
    {                                                                                          \
        sr_scatter<DT>(x, kin, iin, kout, iout, out, hist, D, rows, T, shift, asc, sx, R,      \
                       last);                                                                  \
    }
WK_SORT_RADIX(u8, WK_DT_U8)
WK_SORT_RADIX(u32, WK_DT_U32)
WK_SORT_RADIX(i16, WK_DT_I16)
WK_SORT_RADIX(i32, WK_DT_I32)
WK_SORT_RADIX(i64, WK_DT_I64)
WK_SORT_RADIX(bf16, WK_DT_BF16)
WK_SORT_RADIX(f16, WK_DT_F16)
WK_SORT_RADIX(f32, WK_DT_F32)
WK_SORT_RADIX(f64, WK_DT_F64)
WK_SORT_RADIX(f8e4m3, WK_DT_F8E4M3)
#undef WK_SORT_RADIX

WK_KERNEL sort_radix_scan(uint32_t *hist, int64_t rows, int64_t T) { sr_scan(hist, rows, T); }

#endif
