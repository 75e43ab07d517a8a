/* sort_warp.h: arg_sort_last_dim for rows of D <= 1024 with 32-bit keys (u8 u32 i16 i32 bf16
 * f16 f32 f8e4m3), one row per group of 32 lanes, the row in registers (included by
 * kernels/sort.cu, which states the order, the keys and the items).
 *
 * A group holds P = 32 * E slots, E per lane (E = 8, 16 or 32; P >= D), slot p = lane * E + e
 * in register e of lane `lane`; slots past the row's end hold the sentinel (above every item).
 * A bitonic network on the items (key << 32 | index: distinct, so the sort's result is the one
 * stable order) sorts the slots ascending: of its log2(P) (log2(P) + 1) / 2 steps, those of
 * partner distance j < E run inside a lane (registers only), those of j >= E exchange register
 * e with lane lane ^ (j / E) by shuffles (xor masks < 32: the exchange stays in the group on
 * warps of 32 and of 64, so a 64-lane wave sorts two rows). No shared memory and no barrier
 * during the sort. E = 32: 40 register steps and 15 shuffle steps.
 * A sorting network may start from any arrangement, so the row is loaded striped (element
 * e * 32 + lane into register e: coalesced) and, once sorted, the indices go through shared
 * memory (skewed by one word per 32: no bank conflicts either way) to coalesced stores.
 *
 * The keys are read in a loop (not unrolled) into the group's shared words, then from there
 * into the registers: the dtype dt is a run-time argument (kernels/sort_keys.h so_key_rt), so
 * one kernel per E serves the eight dtypes (each lane reads back the words it wrote itself).
 *
 * Kernels (blocks of 256 threads = 8 groups = 8 rows):
 *   sort_warp<E>(x, out, D, rows, asc, sx, R, dt)
 *       row r of x starts at koff(R, r), element j at + j*sx; out row r at out + r*D (u32).
 *       D <= 32 * E. The row loop is uniform over the block (groups past the last row sort
 *       sentinels and store nothing), so every lane takes part in every shuffle. */
#ifndef WK_SORT_WARP_H
#define WK_SORT_WARP_H

#define SW_G (WK_BLOCK / 32)          /* groups (rows) per block */
#define SW_PAD(p) ((p) + ((p) >> 5))  /* the skewed shared-memory word of slot p */

/* a, b (slots p < q of one lane) in ascending order when up, descending otherwise. The
 * items differ unless both are sentinels, where the swap changes nothing. */
WK_DEV void sw_cas(uint64_t &a, uint64_t &b, bool up)
{
    const bool sw = (b < a) == up;
    const uint64_t lo = sw ? b : a, hi = sw ? a : b;
    a = lo;
    b = hi;
}

/* Bitonic stage k (2 .. P) of a lane's E registers, base = lane * E (the slot of v[0]). */
template <int E> WK_DEV void sw_stage(uint64_t *v, int lane, int k)
{
    const int base = lane * E;
    /* steps of partner distance j >= E: partner lane lane ^ (j / E), same register */
#pragma unroll
    for (int j = 512; j >= E; j >>= 1) {
        if (j < k) { /* stage k has the steps k/2 .. 1; uniform */
            const int m = j / E;
            /* slot bit k is the same for every register of the lane (k > j >= E) */
            const bool up = (base & k) == 0, lower = (lane & m) == 0;
            const bool keep_min = up == lower;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const uint64_t o = WK_SHFL_XOR(v[e], m);
                v[e] = ((o < v[e]) == keep_min) ? o : v[e];
            }
        }
    }
    /* steps j < E: partners in the lane's own registers */
#pragma unroll
    for (int j = E / 2; j >= 1; j >>= 1) {
        if (j < k) {
#pragma unroll
            for (int e = 0; e < E; e++) {
                if ((e & j) == 0) {
                    const bool up = ((base + e) & k) == 0; /* k < E: per register, else per lane */
                    sw_cas(v[e], v[e | j], up);
                }
            }
        }
    }
}

template <int E>
WK_DEV void sw_rows(const void *x, void *out, int64_t D, int64_t rows, int32_t asc, int64_t sx,
                    const wk_klay<1> &R, int dt)
{
    const int P = 32 * E;
    __shared__ uint32_t sw_sm[SW_G * SW_PAD(32 * E)];
    const int t = threadIdx.x, g = t >> 5, lane = t & 31;
    const int n = (int)D;
    uint32_t *sm = sw_sm + g * SW_PAD(P);
#pragma unroll 1
    for (int64_t r0 = (int64_t)blockIdx.x * SW_G; r0 < rows; r0 += (int64_t)gridDim.x * SW_G) {
        const int64_t row = r0 + g; /* r0: uniform over the block */
        const bool live = row < rows;
        int64_t xb = 0;
        if (live) {
            wk_koff(R, row, &xb);
#pragma unroll 1
            for (int c = lane; c < n; c += 32) /* striped: coalesced */
                sm[SW_PAD(c)] = so_key_rt<uint32_t>::at(x, xb + c * sx, dt);
        }
        uint64_t v[E];
#pragma unroll
        for (int e = 0; e < E; e++) {
            const int c = e * 32 + lane; /* the words this lane wrote */
            v[e] = ~0ull;
            if (live && c < n) {
                const uint32_t k = sm[SW_PAD(c)];
                v[e] = ((uint64_t)(asc ? k : ~k) << 32) | (uint32_t)c;
            }
        }
        __syncthreads(); /* every key read before the sorted indices overwrite the words */
#pragma unroll
        for (int k = 2; k <= P; k <<= 1)
            sw_stage<E>(v, lane, k);
#pragma unroll
        for (int e = 0; e < E; e++)
            sm[SW_PAD(lane * E + e)] = (uint32_t)v[e];
        __syncthreads();
        if (live) {
            uint32_t *o = (uint32_t *)out + row * D;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const int p = e * 32 + lane;
                if (p < n)
                    o[p] = sm[SW_PAD(p)];
            }
        }
        __syncthreads(); /* before the next rows overwrite sm */
    }
}

#define WK_SORT_WARP(E)                                                                        \
    WK_KERNEL_MINB(2) sort_warp##E(const void *x, void *out, int64_t D, int64_t rows,          \
                                   int32_t asc, int64_t sx, wk_klay<1> R, int32_t dt)          \
    {                                                                                          \
        sw_rows<E>(x, out, D, rows, asc, sx, R, dt);                                           \
    }
WK_SORT_WARP(8)
WK_SORT_WARP(16)
WK_SORT_WARP(32)
#undef WK_SORT_WARP

#endif
