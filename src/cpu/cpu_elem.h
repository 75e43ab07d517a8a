/* cpu_elem.h: small helpers for the CPU backend's elementwise loops: per-dtype load/store of the
 * float types through their compute type (fpconv.h rounding), the float->int saturating rule,
 * dtype sub-lists for macro instantiation, and the parallel row driver that walks any layouts.
 * Internal to src/cpu. */
#ifndef WK_CPU_ELEM_H
#define WK_CPU_ELEM_H

#include "cpu_ops.h"
#include "wk_core.h"
#include <omp.h>

/* ---- WK_CPU_CLONES: compile a hot loop also for AVX2 and AVX-512 (x86-64-v4) and pick the
 * best at load time (GCC target_clones, an ifunc). The library is built for baseline x86-64
 * (SSE2), where narrowing and widening conversions vectorise poorly; these loops are integer
 * code or single IEEE operations without contraction (-ffp-contract=off), so every clone gives
 * the same bits. Elsewhere it expands to nothing. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && defined(__x86_64__) && \
    defined(__ELF__)
#define WK_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define WK_CPU_CLONES
#endif

/* ---- WK_CPU_PREFETCH(p): ask for the cache line WK_CPU_PF_BYTES after the byte at p. The
 * hardware prefetcher stops at each 4 KiB page, so a kernel called once per row (a sum over rows
 * of 1024 f32 is one call per page) otherwise waits for memory at every row start: prefetching
 * made such sums ~1.4x faster here. The address is formed as an integer (it may lie past the end
 * of the buffer; a prefetch never faults). */
#define WK_CPU_PF_BYTES 2048
#if defined(__GNUC__)
#define WK_CPU_PREFETCH(p) __builtin_prefetch((const void *)((uintptr_t)(p) + WK_CPU_PF_BYTES))
#else
#define WK_CPU_PREFETCH(p) ((void)0)
#endif

/* ---- dtype sub-lists, in the order of WK_DTYPE_LIST (dtype_list.h).
 * Float types: X(ENUM, short, storage type, compute type). bf16/f16/f8e4m3 compute in f32 and
 * round once on store; f32 and f64 compute natively. */
#define WK_CPU_FLOAT_TYPES(X)          \
    X(BF16, bf16, uint16_t, float)     \
    X(F16, f16, uint16_t, float)       \
    X(F32, f32, float, float)          \
    X(F64, f64, double, double)        \
    X(F8E4M3, f8e4m3, uint8_t, float)

/* Integer types: X(ENUM, short, storage type, arithmetic type, is_signed, min, max).
 * Arithmetic is done in an unsigned type at least as wide as int, so that wrapping is defined
 * (a uint16_t product would promote to int and could overflow). */
#define WK_CPU_INT_TYPES(X)                                       \
    X(U8, u8, uint8_t, uint32_t, 0, 0, UINT8_MAX)                 \
    X(U32, u32, uint32_t, uint32_t, 0, 0, UINT32_MAX)             \
    X(I16, i16, int16_t, uint32_t, 1, INT16_MIN, INT16_MAX)       \
    X(I32, i32, int32_t, uint32_t, 1, INT32_MIN, INT32_MAX)       \
    X(I64, i64, int64_t, uint64_t, 1, INT64_MIN, INT64_MAX)

/* ---- load a float type into its compute type, store with one rounding. */
static inline float wk_cpu_ld_bf16(uint16_t v) { return wk_fp_bf16_to_f32(v); }
static inline uint16_t wk_cpu_st_bf16(float v) { return wk_fp_f32_to_bf16(v); }
static inline float wk_cpu_ld_f16(uint16_t v) { return wk_fp_f16_to_f32(v); }
static inline uint16_t wk_cpu_st_f16(float v) { return wk_fp_f32_to_f16(v); }
static inline float wk_cpu_ld_f8e4m3(uint8_t v) { return wk_fp_f8e4m3_to_f32(v); }
static inline uint8_t wk_cpu_st_f8e4m3(float v) { return wk_fp_f32_to_f8e4m3(v); }
static inline float wk_cpu_ld_f32(float v) { return v; }
static inline float wk_cpu_st_f32(float v) { return v; }
static inline double wk_cpu_ld_f64(double v) { return v; }
static inline double wk_cpu_st_f64(double v) { return v; }

/* ---- float -> integer, the saturating rule of docs/semantics.md (Rust's `as`): NaN -> 0,
 * truncation toward zero, out of range (inf included) -> min/max. Written out because an
 * out-of-range float->int conversion is UB in C. lo and hi+1 are exact doubles for every type. */
#define WK_CPU_DEF_SAT(E, s, T, A, S, MIN, MAX)                  \
    static inline T wk_cpu_sat_##s(double v)                     \
    {                                                            \
        if (v != v)                                              \
            return 0;                                            \
        if (v <= (double)(MIN))                                  \
            return (T)(MIN);                                     \
        if (v >= ((double)((MAX) / 2 + 1)) * 2.0)                \
            return (T)(MAX);                                     \
        return (T)v;                                             \
    }
WK_CPU_INT_TYPES(WK_CPU_DEF_SAT)
#undef WK_CPU_DEF_SAT

/* ---- the row driver.
 * A row function processes n elements: out is contiguous (element size osz), input k starts at
 * in[k] and steps by step[k] elements. ctx is the op's private data. */
typedef void (*wk_cpu_row_fn)(void *out, const void *const *in, const int64_t *step, int64_t n,
                              const void *ctx);
/* cpu_unary.c: the row function of the gated binary ops (SWIGLU, GEGLU, GEGLU_ERF: act(a) * b)
 * for float dtype dt (NULL for the others), act through the same vector math as wk_cpu_unary's
 * (so f32 equals unary then mul, bit for bit); its ctx is the wk_op. */
wk_cpu_row_fn wk_cpu_glu_row(wk_dtype dt);

#define WK_CPU_MAX_IN 3
#define WK_CPU_MIN_CHUNK 4096

/* Number of parallel chunks for n elements: 1 below the threshold, else a few per thread. */
static inline int64_t wk_cpu_chunks(int64_t n)
{
    if (n < WK_CPU_PAR_THRESHOLD)
        return 1;
    int64_t c = (int64_t)omp_get_max_threads() * 4;
    if (c > n / WK_CPU_MIN_CHUNK)
        c = n / WK_CPU_MIN_CHUNK;
    return c < 1 ? 1 : c;
}

/* Runs fn over every element of nin (1..3) input layouts of equal dims, writing out contiguously
 * in row-major order. base[k] is input k's storage base, isz[k] its element size. All contiguous:
 * one row per chunk. Otherwise the layouts are collapsed jointly and walked; the innermost dim is
 * one row (a chunk may start or end inside a row). Results do not depend on the chunking. */
static inline void wk_cpu_for_rows(void *out, size_t osz, int nin, const void *const *base,
                                   const size_t *isz, const wk_layout *const *lay,
                                   wk_cpu_row_fn fn, const void *ctx)
{
    const int64_t n = wk_layout_elem_count(lay[0]);
    if (n <= 0)
        return;
    const int64_t nchunks = wk_cpu_chunks(n);
    const int64_t chunk = (n + nchunks - 1) / nchunks;
    char *o = (char *)out;

    bool contig = true;
    for (int k = 0; k < nin; k++)
        contig = contig && wk_layout_is_contiguous(lay[k]);
    if (contig) {
#pragma omp parallel for schedule(static) if (nchunks > 1)
        for (int64_t c = 0; c < nchunks; c++) {
            const int64_t s = c * chunk;
            const int64_t e = s + chunk < n ? s + chunk : n;
            const void *in[WK_CPU_MAX_IN];
            int64_t step[WK_CPU_MAX_IN];
            for (int k = 0; k < nin; k++) {
                in[k] = (const char *)base[k] + (size_t)(lay[k]->offset + s) * isz[k];
                step[k] = 1;
            }
            if (s < e)
                fn(o + (size_t)s * osz, in, step, e - s, ctx);
        }
        return;
    }

    wk_layout col[WK_CPU_MAX_IN];
    wk_layout_collapse_n(col, lay, nin);
    if (col[0].rank == 0) /* one element: a row of one */
        for (int k = 0; k < nin; k++) {
            col[k].rank = 1;
            col[k].dims[0] = 1;
            col[k].strides[0] = 0;
        }
    const int r = col[0].rank;
    const int64_t inner = col[0].dims[r - 1];

#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t s = c * chunk;
        const int64_t e = s + chunk < n ? s + chunk : n;
        wk_walker w[WK_CPU_MAX_IN];
        const void *in[WK_CPU_MAX_IN];
        int64_t step[WK_CPU_MAX_IN];
        for (int k = 0; k < nin; k++) {
            wk_walker_init(&w[k], &col[k], s);
            step[k] = col[k].strides[r - 1];
        }
        for (int64_t i = s; i < e;) {
            int64_t cnt = inner - w[0].idx[r - 1];
            if (cnt > e - i)
                cnt = e - i;
            for (int k = 0; k < nin; k++)
                in[k] = (const char *)base[k] + (size_t)w[k].off * isz[k];
            fn(o + (size_t)i * osz, in, step, cnt, ctx);
            i += cnt;
            if (i < e)
                for (int k = 0; k < nin; k++) { /* to the row's last element, then one more */
                    w[k].off += step[k] * (cnt - 1);
                    w[k].idx[r - 1] += cnt - 1;
                    wk_walker_next(&w[k]);
                }
        }
    }
}

#endif
