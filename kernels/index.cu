/* index.cu: index_select, gather, scatter_set, scatter_add_set, index_add (module "index").
 *
 * Semantics: docs/semantics.md "Indexing", equal to src/cpu/cpu_index.c. Ids are u8, u32 or
 * i64; the id dtype's maximum is Candle's "none" sentinel (a zero element when reading, nothing
 * when writing); any other id outside [0, limit) is never used for an access: the element is
 * skipped (a read yields 0) and the id is recorded with wk_kerr in the device's error record
 * (word), reported by the host at the next synchronizing call.
 *
 * The host (src/gpu/gpu_index.c) folds every layout offset into the pointers and describes the
 * op as an iteration over dims (the ids' dims, or the output's) with up to three strided
 * operands of those dims: the indexed operand with its stride along `dim` replaced by 0 (the
 * id times `dstep` is added instead), the plain operand and the ids. Kernels:
 *   index_read_<ids>_<B>(n, L2{src, ids}, src, ids, out, dstep, limit, word, code)
 *       select and gather: out[i] = src[off0 + id * dstep] (contiguous out), B-byte elements;
 *   index_rows_<ids>_<B>(total, V, nids, S, ids, istep, src, out, limit, word, code)
 *       index_select from a contiguous src seen as (outer, S, V units of B bytes): out row
 *       (o, j) = src row (o, ids[j * istep]); B up to 16 (vector loads);
 *   index_gather_rows_<ids>_<B>(n4, L4, srow, dstep, src, ids, out, limit, word, code)
 *       gather along the last dim with contiguous ids of rows of L = 4 * L4: 4 positions per
 *       thread (vector id load and store), src row r at r * srow;
 *   index_check_<ids>(n, L1, ids, limit, word, code)
 *       validates ids alone (an empty output must still report a bad id);
 *   index_walk_set_<ids>_<B> / index_walk_add_<ids>_<dt>(ns, len, L3{dst, src, ids}, dst, src,
 *       ids, dstep, sstep, istep, limit, word, code)
 *       the ordered path: one thread per slice (every dim but `dim`), walking the len positions
 *       along dim in order, so duplicates resolve as on the CPU (last write wins; adds in
 *       row-major order, rounding at each add);
 *   index_elem_set_<ids>_<B> / index_elem_add_<ids>_<dt>(n, serial, L3, dst, src, ids, dstep,
 *       limit, word, code)
 *       one position per thread with atomic adds (serial = 0), or every position in row-major
 *       order on one thread (serial = 1: a destination whose elements alias).
 * Float adds compute in f32 (f64 for f64) and round to the storage type at each add; integer
 * adds wrap. Atomics: f32/f64 atomicAdd, u32/i32/i64 integer atomicAdd (wrapping), 1- and 2-byte
 * types by compare-and-swap on the enclosing aligned 32-bit word. */
#include "gpu.h"

/* ---- ids: the stored type S, and of a stored value the raw value, whether it is the sentinel
 * and whether it is negative */
template <int IDT> struct wk_idt;
template <> struct wk_idt<WK_DT_U8> {
    typedef uint8_t S;
    WK_DEV uint64_t val(S v, bool *sent, bool *neg)
    {
        *sent = v == 0xffu;
        *neg = false;
        return v;
    }
};
template <> struct wk_idt<WK_DT_U32> {
    typedef uint32_t S;
    WK_DEV uint64_t val(S v, bool *sent, bool *neg)
    {
        *sent = v == 0xffffffffu;
        *neg = false;
        return v;
    }
};
template <> struct wk_idt<WK_DT_I64> {
    typedef int64_t S;
    WK_DEV uint64_t val(S v, bool *sent, bool *neg)
    {
        *sent = v == (int64_t)0x7fffffffffffffffll;
        *neg = v < 0;
        return (uint64_t)v;
    }
};

/* Of the stored id v: 1 with *id in [0, limit) for a valid id, 0 for the sentinel, -1 for an
 * id out of range (recorded in the error record; the caller must not use it). */
template <int IDT>
WK_DEV int wk_id_of(typename wk_idt<IDT>::S v, int64_t limit, uint32_t *word, uint32_t code,
                    int64_t *id)
{
    bool sent, neg;
    const uint64_t raw = wk_idt<IDT>::val(v, &sent, &neg);
    if (sent)
        return 0;
    if (neg || raw >= (uint64_t)limit) {
        wk_kerr(word, code, raw);
        return -1;
    }
    *id = (int64_t)raw;
    return 1;
}

/* The same of the id at ids[o]. */
template <int IDT>
WK_DEV int wk_id_get(const void *ids, int64_t o, int64_t limit, uint32_t *word, uint32_t code,
                     int64_t *id)
{
    return wk_id_of<IDT>(((const typename wk_idt<IDT>::S *)ids)[o], limit, word, code, id);
}

/* ---- reads: index_select (generic layouts) and gather */
template <int IDT, int B>
WK_DEV void wk_index_read(int64_t n, const wk_klay<2> &L, const void *__restrict__ src,
                          const void *__restrict__ ids, void *__restrict__ out, int64_t dstep,
                          int64_t limit, uint32_t *word, uint32_t code)
{
    typedef typename wk_bits<B>::T T;
    const T *s = (const T *)src;
    T *o = (T *)out;
    const int64_t nt = wk_nthreads();
    /* 4 positions per thread and step: the id loads, then the value loads, then the stores,
     * so several dependent load chains are in flight per thread */
    for (int64_t i0 = wk_tid(); i0 < n; i0 += 4 * nt) {
        int64_t so[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t i = i0 + u * nt;
            so[u] = -1;
            if (i < n) {
                int64_t off[2], id;
                wk_koff(L, i, off);
                if (wk_id_get<IDT>(ids, off[1], limit, word, code, &id) > 0)
                    so[u] = off[0] + id * dstep;
            }
        }
        T v[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            v[u] = so[u] >= 0 ? s[so[u]] : (T)0;
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (i0 + u * nt < n)
                o[i0 + u * nt] = v[u];
    }
}


/* gather along the last dim with contiguous ids (R rows of L, L % 4 == 0) from src rows
 * r * srow (+ id * dstep): a thread takes 4 adjacent positions of one row, loads their 4 ids as
 * one access (two for i64), issues the 4 src loads, and stores the 4 values as one access (two
 * for 8-byte elements). The host guarantees ids and out aligned to their 4-element widths (16
 * bytes at most). Bad ids: as wk_index_read (zero, recorded). */
template <int IDT, int B>
WK_DEV void wk_gather_rows(int64_t n4, int64_t L4, int64_t srow, int64_t dstep,
                           const void *__restrict__ src, const void *__restrict__ ids,
                           void *__restrict__ out, int64_t limit, uint32_t *word, uint32_t code)
{
    typedef typename wk_bits<B>::T T;
    typedef typename wk_idt<IDT>::S IS;
    const T *s = (const T *)src;
    const bool small = n4 <= 0xffffffffll; /* 32-bit division for the row */
    for (int64_t t = wk_tid(); t < n4; t += wk_nthreads()) {
        const int64_t r = small ? (int64_t)((uint32_t)t / (uint32_t)L4) : t / L4;
        IS iv[4];
        wk_ldv<IS, 4>((const IS *)ids + 4 * t, iv);
        int64_t so[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int64_t id;
            so[u] = wk_id_of<IDT>(iv[u], limit, word, code, &id) > 0 ? r * srow + id * dstep : -1;
        }
        T v[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            v[u] = so[u] >= 0 ? s[so[u]] : (T)0;
        const int E = 4 * B > 16 ? 16 / B : 4;
#pragma unroll
        for (int k = 0; k < 4 / E; k++) {
            wk_pack<T, E> p;
#pragma unroll
            for (int e = 0; e < E; e++)
                p.v[e] = v[k * E + e];
            ((wk_pack<T, E> *)out + (4 / E) * t)[k].raw = p.raw;
        }
    }
}

/* B zero bytes as one unit of wk_raw<B>. */
template <int B> WK_DEV typename wk_raw<B>::T wk_zero_unit(void)
{
    wk_pack<uint8_t, B> p;
#pragma unroll
    for (int k = 0; k < B; k++)
        p.v[k] = 0;
    return p.raw;
}

/* index_select of whole rows: src is (outer, S, V units), out (outer, nids, V units); unit u of
 * out is row r = u / V, column c = u % V, with r = o * nids + j. */
template <int IDT, int B>
WK_DEV void wk_index_rows(int64_t total, int64_t V, int64_t nids, int64_t S,
                          const void *__restrict__ ids, int64_t istep,
                          const void *__restrict__ src, void *__restrict__ out, uint32_t *word,
                          uint32_t code)
{
    typedef typename wk_raw<B>::T T;
    const T *s = (const T *)src;
    T *o = (T *)out;
    const int64_t nt = wk_nthreads();
    const bool small = total <= 0xffffffffll; /* 32-bit divisions (r < total, V, nids >= 1) */
    for (int64_t u0 = wk_tid(); u0 < total; u0 += 4 * nt) {
        int64_t so[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t uu = u0 + u * nt;
            so[u] = -1;
            if (uu < total) {
                int64_t r, c, ob, j, id;
                if (small) {
                    const uint32_t r32 = (uint32_t)uu / (uint32_t)V;
                    const uint32_t o32 = r32 / (uint32_t)nids;
                    r = r32;
                    c = (int64_t)((uint32_t)uu - r32 * (uint32_t)V);
                    ob = o32;
                    j = (int64_t)(r32 - o32 * (uint32_t)nids);
                } else {
                    r = uu / V;
                    c = uu - r * V;
                    ob = r / nids;
                    j = r - ob * nids;
                }
                if (wk_id_get<IDT>(ids, j * istep, S, word, code, &id) > 0)
                    so[u] = (ob * S + id) * V + c;
            }
        }
        T v[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            v[u] = so[u] >= 0 ? s[so[u]] : wk_zero_unit<B>();
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (u0 + u * nt < total)
                o[u0 + u * nt] = v[u];
    }
}

template <int IDT>
WK_DEV void wk_index_check(int64_t n, const wk_klay<1> &L, const void *ids, int64_t limit,
                           uint32_t *word, uint32_t code)
{
    for (int64_t i = wk_tid(); i < n; i += wk_nthreads()) {
        int64_t off, id;
        wk_koff(L, i, &off);
        wk_id_get<IDT>(ids, off, limit, word, code, &id);
    }
}

/* ---- writes: the element operations */
/* Copy of B-byte elements (scatter_set). */
template <int B> struct wk_op_set {
    typedef typename wk_bits<B>::T T;
    WK_DEV void apply(void *dst, int64_t d, const void *src, int64_t s)
    {
        ((T *)dst)[d] = ((const T *)src)[s];
    }
    WK_DEV void apply_atomic(void *dst, int64_t d, const void *src, int64_t s)
    {
        apply(dst, d, src, s); /* never launched in parallel: duplicates would race */
    }
};

/* a + b in the storage type: f32 (f64) compute rounded once; integers wrap (unsigned 64-bit
 * arithmetic, truncated on store). */
template <int DT, bool INT> struct wk_add2;
template <int DT> struct wk_add2<DT, true> {
    typedef typename wk_t<DT>::S S;
    WK_DEV S f(S a, S b)
    {
        return (S)((uint64_t)wk_t<DT>::ld(a) + (uint64_t)wk_t<DT>::ld(b));
    }
};
template <int DT> struct wk_add2<DT, false> {
    typedef typename wk_t<DT>::S S;
    WK_DEV S f(S a, S b) { return wk_t<DT>::st(wk_t<DT>::ld(a) + wk_t<DT>::ld(b)); }
};
template <int DT> WK_DEV typename wk_t<DT>::S wk_add(typename wk_t<DT>::S a,
                                                      typename wk_t<DT>::S b)
{
    return wk_add2<DT, wk_t<DT>::is_int != 0>::f(a, b);
}

/* Atomic *p += x for 1- and 2-byte types: compare-and-swap on the aligned 32-bit word that
 * holds the element (the other bytes are written back unchanged). */
template <int DT> WK_DEV void wk_atomic_add_narrow(typename wk_t<DT>::S *p, typename wk_t<DT>::S x)
{
    typedef typename wk_t<DT>::S S;
    typedef typename wk_bits<sizeof(S)>::T U; /* the same bits, unsigned */
    const uintptr_t a = (uintptr_t)p;
    unsigned int *w = (unsigned int *)(a & ~(uintptr_t)3);
    const unsigned int sh = (unsigned int)(a & 3u) * 8u;
    const unsigned int mask = (sizeof(S) == 1 ? 0xffu : 0xffffu) << sh;
    unsigned int old = *w, assumed;
    do {
        assumed = old;
        const S cur = (S)(U)((assumed & mask) >> sh);
        const unsigned int bits = ((unsigned int)(U)wk_add<DT>(cur, x) << sh) & mask;
        old = atomicCAS(w, assumed, (assumed & ~mask) | bits);
    } while (old != assumed);
}

template <int DT> struct wk_atomic {
    WK_DEV void add(typename wk_t<DT>::S *p, typename wk_t<DT>::S x)
    {
        wk_atomic_add_narrow<DT>(p, x);
    }
};
template <> struct wk_atomic<WK_DT_F32> {
    WK_DEV void add(float *p, float x) { atomicAdd(p, x); }
};
template <> struct wk_atomic<WK_DT_F64> {
    WK_DEV void add(double *p, double x) { atomicAdd(p, x); }
};
template <> struct wk_atomic<WK_DT_U32> {
    WK_DEV void add(uint32_t *p, uint32_t x) { atomicAdd((unsigned int *)p, (unsigned int)x); }
};
template <> struct wk_atomic<WK_DT_I32> {
    WK_DEV void add(int32_t *p, int32_t x)
    {
        atomicAdd((unsigned int *)(void *)p, (unsigned int)x); /* wraps */
    }
};
template <> struct wk_atomic<WK_DT_I64> {
    WK_DEV void add(int64_t *p, int64_t x)
    {
        atomicAdd((unsigned long long *)(void *)p, (unsigned long long)x); /* wraps */
    }
};

/* Add of DT elements (scatter_add_set, index_add). */
template <int DT> struct wk_op_add {
    typedef typename wk_t<DT>::S S;
    WK_DEV void apply(void *dst, int64_t d, const void *src, int64_t s)
    {
        S *p = (S *)dst + d;
        *p = wk_add<DT>(*p, ((const S *)src)[s]);
    }
    WK_DEV void apply_atomic(void *dst, int64_t d, const void *src, int64_t s)
    {
        wk_atomic<DT>::add((S *)dst + d, ((const S *)src)[s]);
    }
};

/* The ordered path: thread t owns slice t (offsets off[0..2] of dst, src and ids at position 0
 * along dim) and walks the len positions along dim in order. */
template <class OP, int IDT>
WK_DEV void wk_index_walk(int64_t ns, int64_t len, const wk_klay<3> &L, void *dst,
                          const void *src, const void *ids, int64_t dstep, int64_t sstep,
                          int64_t istep, int64_t limit, uint32_t *word, uint32_t code)
{
    for (int64_t t = wk_tid(); t < ns; t += wk_nthreads()) {
        int64_t off[3];
        wk_koff(L, t, off);
#pragma unroll 1
        for (int64_t j = 0; j < len; j++) {
            int64_t id;
            if (wk_id_get<IDT>(ids, off[2] + j * istep, limit, word, code, &id) > 0)
                OP::apply(dst, off[0] + id * dstep, src, off[1] + j * sstep);
        }
    }
}

/* Per position: atomics across the grid, or (serial) every position in row-major order on the
 * first thread of the grid. */
template <class OP, int IDT>
WK_DEV void wk_index_elem(int64_t n, int32_t serial, const wk_klay<3> &L, void *dst,
                          const void *src, const void *ids, int64_t dstep, int64_t limit,
                          uint32_t *word, uint32_t code)
{
    const int64_t t = wk_tid();
    if (serial && t != 0)
        return;
    const int64_t step = serial ? 1 : wk_nthreads();
    for (int64_t i = t; i < n; i += step) {
        int64_t off[3], id;
        wk_koff(L, i, off);
        if (wk_id_get<IDT>(ids, off[2], limit, word, code, &id) > 0) {
            if (serial)
                OP::apply(dst, off[0] + id * dstep, src, off[1]);
            else
                OP::apply_atomic(dst, off[0] + id * dstep, src, off[1]);
        }
    }
}

/* ---- kernels */
#define WK_IDX_ARGS_W                                                                          \
    int64_t ns, int64_t len, wk_klay<3> L, void *dst, const void *src, const void *ids,        \
        int64_t dstep, int64_t sstep, int64_t istep, int64_t limit, uint32_t *word, uint32_t code
#define WK_IDX_ARGS_E                                                                          \
    int64_t n, int32_t serial, wk_klay<3> L, void *dst, const void *src, const void *ids,      \
        int64_t dstep, int64_t limit, uint32_t *word, uint32_t code

/* Per ids dtype IN (name) / ID (id) and element bytes B. */
#define WK_IDX_BYTES(IN, ID, B)                                                                \
    WK_KERNEL index_read_##IN##_##B(int64_t n, wk_klay<2> L, const void *src, const void *ids, \
                                    void *out, int64_t dstep, int64_t limit, uint32_t *word,   \
                                    uint32_t code)                                             \
    {                                                                                          \
        wk_index_read<ID, B>(n, L, src, ids, out, dstep, limit, word, code);                   \
    }                                                                                          \
    WK_KERNEL index_gather_rows_##IN##_##B(int64_t n4, int64_t L4, int64_t srow, int64_t dstep, \
                                           const void *src, const void *ids, void *out,        \
                                           int64_t limit, uint32_t *word, uint32_t code)       \
    {                                                                                          \
        wk_gather_rows<ID, B>(n4, L4, srow, dstep, src, ids, out, limit, word, code);          \
    }                                                                                          \
    WK_KERNEL index_walk_set_##IN##_##B(WK_IDX_ARGS_W)                                         \
    {                                                                                          \
        wk_index_walk<wk_op_set<B>, ID>(ns, len, L, dst, src, ids, dstep, sstep, istep, limit, \
                                        word, code);                                           \
    }                                                                                          \
    WK_KERNEL index_elem_set_##IN##_##B(WK_IDX_ARGS_E)                                         \
    {                                                                                          \
        wk_index_elem<wk_op_set<B>, ID>(n, serial, L, dst, src, ids, dstep, limit, word,       \
                                        code);                                                 \
    }
/* KDECL: the row copies of B >= 2 bytes fit 32 registers (ptxas sm_90: 31-32, no spills), so 8
 * blocks of 256 (2048 threads, 4 x 16-byte loads each in flight) reside per multiprocessor
 * instead of 6 at their free 34; B = 1 would spill at 32 and keeps the plain bound. */
#define WK_IDX_ROWS(IN, ID, B, KDECL)                                                          \
    KDECL index_rows_##IN##_##B(int64_t total, int64_t V, int64_t nids, int64_t S,             \
                                    const void *ids, int64_t istep, const void *src,           \
                                    void *out, uint32_t *word, uint32_t code)                  \
    {                                                                                          \
        wk_index_rows<ID, B>(total, V, nids, S, ids, istep, src, out, word, code);             \
    }
/* Per ids dtype and value dtype DN (name) / DT (id). */
#define WK_IDX_ADD(IN, ID, DN, DT)                                                             \
    WK_KERNEL index_walk_add_##IN##_##DN(WK_IDX_ARGS_W)                                        \
    {                                                                                          \
        wk_index_walk<wk_op_add<DT>, ID>(ns, len, L, dst, src, ids, dstep, sstep, istep,       \
                                         limit, word, code);                                   \
    }                                                                                          \
    WK_KERNEL index_elem_add_##IN##_##DN(WK_IDX_ARGS_E)                                        \
    {                                                                                          \
        wk_index_elem<wk_op_add<DT>, ID>(n, serial, L, dst, src, ids, dstep, limit, word,      \
                                         code);                                                \
    }
#define WK_IDX_PER_ID(IN, ID)                                                                  \
    WK_KERNEL index_check_##IN(int64_t n, wk_klay<1> L, const void *ids, int64_t limit,        \
                               uint32_t *word, uint32_t code)                                  \
    {                                                                                          \
        wk_index_check<ID>(n, L, ids, limit, word, code);                                      \
    }                                                                                          \
    WK_IDX_BYTES(IN, ID, 1)                                                                    \
    WK_IDX_BYTES(IN, ID, 2)                                                                    \
    WK_IDX_BYTES(IN, ID, 4)                                                                    \
    WK_IDX_BYTES(IN, ID, 8)                                                                    \
    WK_IDX_ROWS(IN, ID, 1, WK_KERNEL)                                                          \
    WK_IDX_ROWS(IN, ID, 2, WK_KERNEL_MINB(8))                                                  \
    WK_IDX_ROWS(IN, ID, 4, WK_KERNEL_MINB(8))                                                  \
    WK_IDX_ROWS(IN, ID, 8, WK_KERNEL_MINB(8))                                                  \
    WK_IDX_ROWS(IN, ID, 16, WK_KERNEL_MINB(8))                                                 \
    WK_IDX_ADD(IN, ID, u8, WK_DT_U8)                                                           \
    WK_IDX_ADD(IN, ID, u32, WK_DT_U32)                                                         \
    WK_IDX_ADD(IN, ID, i16, WK_DT_I16)                                                         \
    WK_IDX_ADD(IN, ID, i32, WK_DT_I32)                                                         \
    WK_IDX_ADD(IN, ID, i64, WK_DT_I64)                                                         \
    WK_IDX_ADD(IN, ID, bf16, WK_DT_BF16)                                                       \
    WK_IDX_ADD(IN, ID, f16, WK_DT_F16)                                                         \
    WK_IDX_ADD(IN, ID, f32, WK_DT_F32)                                                         \
    WK_IDX_ADD(IN, ID, f64, WK_DT_F64)                                                         \
    WK_IDX_ADD(IN, ID, f8e4m3, WK_DT_F8E4M3)

WK_IDX_PER_ID(u8, WK_DT_U8)
WK_IDX_PER_ID(u32, WK_DT_U32)
WK_IDX_PER_ID(i64, WK_DT_I64)
