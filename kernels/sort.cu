/* sort.cu: arg_sort_last_dim (candle-nn), every dtype, rows of any length; module "sort" (the
 * bitonic and warp sorts), with module "sort_radix" (kernels/sort_radix.cu: the radix sorts; a
 * module of their own, so that run-time compilation of the two runs side by side).
 *
 * Order (docs/semantics.md, = src/cpu/cpu_sort.c): stable (ties keep index order in both
 * directions), -0 == +0, NaN last ascending and first descending, NaNs in index order. Each
 * element becomes an unsigned key whose order is the wanted order (so_key: integers offset by
 * their sign bit, floats through their magnitude bits with -0 -> +0, NaN -> the largest key;
 * descending: the key inverted, so NaN becomes the smallest), and an item is the pair
 * (key, column index) compared lexicographically. Items are distinct, so ANY correct sort of
 * them yields the one stable order: the unstable networks below give the CPU's result exactly.
 * Keys of 32 bits (u8 u32 i16 i32 bf16 f16 f32 f8e4m3) pack with the index into one uint64
 * (key in the high half: one integer compare); i64/f64 items are {key, index} pairs of uint64.
 *
 * Kernels (blocks of 256 threads):
 *   sort_bitonic_<k32|k64>(x, out, dst, D, nseg, cpr, lp2, P, asc, sx, R, dt)
 *       each row is cut into cpr segments of p2 = 2^lp2 slots; a block sorts P / p2 segments
 *       (P = max(p2, 256) slots, dynamic shared memory) with a bitonic network (log2(p2)
 *       (log2(p2) + 1) / 2 compare steps; steps whose partners lie in one thread's E = P/256
 *       consecutive slots run in registers, the rest in shared memory), slots past the row's
 *       end holding sentinels that sort last. cpr == 1: the row's indices go straight to out
 *       (u32); else the sorted chunk's items go to dst (scratch, row r at dst + r*D). x row r
 *       starts at koff(R, r), element j at + j*sx. src/gpu/gpu_sort.c uses it for rows of
 *       D <= 256 only (cpr = 1, several rows per block). One kernel per key width (k32: the
 *       dtypes of 32-bit keys, k64: i64 and f64), the dtype dt read at run time by the load
 *       of the keys (kernels/sort_keys.h so_key_rt): the network, which is the code, is the
 *       same for every dtype of a width (one copy instead of eight: about a seventh of the
 *       module's compile time and code for every GPU target).
 *   the warp sorts (rows of D <= 1024, 32-bit keys): kernels/sort_warp.h.
 *   the radix sorts (rows of D > 256): kernels/sort_radix.h, in module "sort_radix". */
#include "sort_keys.h"

#define SO_EM 8                     /* outputs per thread in a merge */
#define SO_TILE (WK_BLOCK * SO_EM) /* outputs per merge block */

/* ---- items: (key, index), compared lexicographically; the sentinel is above every item
 * (an index never reaches 2^32 - 1 in a row that needs padding, and an equal pair would
 * carry the same index anyway). */
struct so_pair {
    uint64_t k, i;
};
template <class K> struct so_item;
template <> struct so_item<uint32_t> {
    typedef uint64_t T;
    WK_DEV T make(uint32_t k, uint32_t i) { return ((uint64_t)k << 32) | i; }
    WK_DEV bool less(const T &a, const T &b) { return a < b; }
    WK_DEV uint32_t idx(const T &a) { return (uint32_t)a; }
    WK_DEV T sentinel(void) { return ~0ull; }
};
template <> struct so_item<uint64_t> {
    typedef so_pair T;
    WK_DEV T make(uint64_t k, uint32_t i)
    {
        T t;
        t.k = k;
        t.i = i;
        return t;
    }
    WK_DEV bool less(const T &a, const T &b) { return a.k < b.k || (a.k == b.k && a.i < b.i); }
    WK_DEV uint32_t idx(const T &a) { return (uint32_t)a.i; }
    WK_DEV T sentinel(void)
    {
        T t;
        t.k = ~0ull;
        t.i = ~0ull;
        return t;
    }
};

/* a, b in ascending order when up, descending otherwise. */
template <class IT> WK_DEV void so_cas(typename IT::T &a, typename IT::T &b, bool up)
{
    if (up ? IT::less(b, a) : IT::less(a, b)) {
        const typename IT::T t = a;
        a = b;
        b = t;
    }
}

/* The register steps (j < EE) of bitonic stage k: thread tid's EE consecutive slots
 * [tid*EE, tid*EE + EE) hold every partner i ^ j of its own slots. p2: the segment size (the
 * last stage of a segment sorts it ascending). The caller synchronises afterwards. */
template <class IT, int EE>
WK_DEV void so_regs(typename IT::T *S, int tid, int k, int p2)
{
    typedef typename IT::T T;
    T r[EE];
    const int base = tid * EE;
#pragma unroll
    for (int e = 0; e < EE; e++)
        r[e] = S[base + e];
#pragma unroll
    for (int j = EE / 2; j >= 1; j >>= 1) {
        if (j < k) { /* stage k has the steps j = k/2 .. 1 */
#pragma unroll
            for (int e = 0; e < EE; e++) {
                const int pe = e ^ j;
                if (pe > e) {
                    const int i = base + e;
                    so_cas<IT>(r[e], r[pe], k == p2 || (i & k) == 0);
                }
            }
        }
    }
#pragma unroll
    for (int e = 0; e < EE; e++)
        S[base + e] = r[e];
}

WK_SHARED_DYN(uint64_t, so_dyn); /* sort_bitonic's slots: P items */

template <class K>
WK_DEV void so_block(const void *x, void *out, void *dst, int64_t D, int64_t nseg, int64_t cpr,
                     int32_t lp2, int32_t P, int32_t asc, int64_t sx, const wk_klay<1> &R, int dt)
{
    typedef so_item<K> IT;
    typedef typename IT::T T;
    T *sm = (T *)so_dyn;
    const int tid = threadIdx.x;
    const int p2 = 1 << lp2, E = P / WK_BLOCK; /* P = max(p2, 256), a power of two */
    const int64_t spb = P >> lp2;              /* segments per block */
#pragma unroll 1
    for (int64_t blk = blockIdx.x; blk * spb < nseg; blk += gridDim.x) { /* uniform */
#pragma unroll 1
        for (int i = tid; i < P; i += WK_BLOCK) {
            const int64_t seg = blk * spb + (i >> lp2);
            T it = IT::sentinel();
            if (seg < nseg) {
                const int64_t row = seg / cpr;
                const int64_t pos = (seg - row * cpr) * p2 + (i & (p2 - 1));
                if (pos < D) {
                    int64_t base;
                    wk_koff(R, row, &base);
                    const K k = so_key_rt<K>::at(x, base + pos * sx, dt);
                    it = IT::make(asc ? k : (K)~k, (uint32_t)pos);
                }
            }
            sm[i] = it;
        }
        __syncthreads();
#pragma unroll 1
        for (int k = 2; k <= p2; k <<= 1) {
#pragma unroll 1
            for (int j = k >> 1; j >= E; j >>= 1) { /* partners in other threads */
#pragma unroll 1
                for (int q = tid; q < P / 2; q += WK_BLOCK) {
                    const int i = ((q & ~(j - 1)) << 1) | (q & (j - 1)); /* bit j of i clear */
                    so_cas<IT>(sm[i], sm[i + j], k == p2 || (i & k) == 0);
                }
                __syncthreads();
            }
            if (E > 1) {
                switch (E) {
                case 2: so_regs<IT, 2>(sm, tid, k, p2); break;
                case 4: so_regs<IT, 4>(sm, tid, k, p2); break;
                case 8: so_regs<IT, 8>(sm, tid, k, p2); break;
                /* 16 only for packed items (P <= 2048 for pairs) */
                default: so_regs<IT, (sizeof(T) > 8 ? 8 : 16)>(sm, tid, k, p2); break;
                }
                __syncthreads();
            }
        }
#pragma unroll 1
        for (int i = tid; i < P; i += WK_BLOCK) {
            const int64_t seg = blk * spb + (i >> lp2);
            if (seg < nseg) {
                const int64_t row = seg / cpr;
                const int64_t pos = (seg - row * cpr) * p2 + (i & (p2 - 1));
                if (pos < D) {
                    if (cpr == 1)
                        ((uint32_t *)out)[row * D + pos] = IT::idx(sm[i]);
                    else
                        ((T *)dst)[row * D + pos] = sm[i];
                }
            }
        }
        __syncthreads(); /* before the next segments overwrite the slots */
    }
}

#include "sort_warp.h"

/* one kernel per key width: k32 for u8 u32 i16 i32 bf16 f16 f32 f8e4m3, k64 for i64 f64 */
#define WK_SORT_BLOCK(kn, K)                                                                   \
    WK_KERNEL sort_bitonic_##kn(const void *x, void *out, void *dst, int64_t D, int64_t nseg,  \
                                int64_t cpr, int32_t lp2, int32_t P, int32_t asc, int64_t sx,  \
                                wk_klay<1> R, int32_t dt)                                      \
    {                                                                                          \
        so_block<K>(x, out, dst, D, nseg, cpr, lp2, P, asc, sx, R, dt);                        \
    }
WK_SORT_BLOCK(k32, uint32_t)
WK_SORT_BLOCK(k64, uint64_t)
