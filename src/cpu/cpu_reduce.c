/* cpu_reduce.c: the CPU sum, min, max, argmin, argmax over any set of dims (docs/semantics.md
 * "Reductions").
 *
 * lx is split into a "kept" layout (the dims not reduced, in order, with lx's offset) and a
 * "reduced" layout (the reduced dims in ascending order, offset 0); both are collapsed, which
 * keeps their row-major orders. The output, keepdim-contiguous, is row-major over the kept dims;
 * output o reduces the elements at kept_offset(o) + reduced_offset(i), i row-major over the
 * reduced dims, which is also the index argmin/argmax report.
 *
 * Float sums accumulate in double for every float dtype and round once to the dtype; integer
 * sums wrap (uint64_t accumulator, truncated). min/max/argmin/argmax find one element (the first
 * NaN, else the first extreme), so min/max copy its bits exactly.
 *
 * Threads: many outputs -> split the outputs; few outputs with a large reduced extent -> split
 * each output's reduced range, then combine the per-thread parts in thread order (a NaN or a
 * tie goes to the lower part, so the first-index rule holds). */
#include "cpu_elem.h"
#include <omp.h>
#include <string.h>

/* The partial result of reducing a range of one output's reduced elements. */
typedef struct red_part {
    double fsum;   /* float sums */
    uint64_t isum; /* integer sums (wrapping) */
    double kf;     /* min/max/arg*: key of the chosen element (float dtypes, exact) */
    int64_t ki;    /* ... (integer dtypes) */
    int64_t idx;   /* row-major index of the chosen element in the reduced dims */
    int64_t off;   /* its element offset in x */
    int nan;       /* the chosen element is NaN */
    int empty;     /* the range held no element */
} red_part;

static const red_part red_part_init = {0.0, 0, 0.0, 0, 0, 0, 0, 1};

/* f64 -> f32 rounding to odd: truncate, then set the last bit if inexact. Rounding that result
 * to bf16/f16/f8e4m3 (at most 11 significant bits, f32 has 24) equals rounding the double once,
 * so float sums of reduced dtypes round once. Out-of-range values go to FLT_MAX (odd), which
 * each reduced type still rounds to its own inf or saturation. */
static float red_f64_to_f32_odd(double d)
{
    const float f = (float)d;
    if (d != d || (double)f == d)
        return f;
    uint32_t u = wk_fp_bits(f);
    const double af = (double)(f < 0 ? -f : f), ad = d < 0 ? -d : d;
    if (af > ad)
        u -= 1u; /* one step toward zero in magnitude (inf -> FLT_MAX) */
    return wk_fp_from_bits(u | 1u);
}

/* ---- per-dtype traits
 * RED_SUM_T/LOAD: accumulator type and element -> accumulator; RED_SUM_PUT/OUT: part <-> sum;
 * RED_KEY_T/KEY: exact comparison key; RED_ISNAN; RED_KEY_PUT: store the key in a part. */
#define RED_INT_TRAITS(n, T, U)                                                                \
    typedef uint64_t red_sum_t_##n;                                                            \
    typedef int64_t red_key_t_##n;                                                             \
    static inline uint64_t red_sum_load_##n(T v) { return (uint64_t)v; }                      \
    static inline void red_sum_put_##n(red_part *p, uint64_t a) { p->isum = a; }              \
    static inline T red_sum_out_##n(const red_part *p) { return (T)(U)p->isum; }              \
    static inline int64_t red_key_##n(T v) { return (int64_t)v; }                             \
    static inline int red_isnan_##n(int64_t k) { return (void)k, 0; }                         \
    static inline void red_key_put_##n(red_part *p, int64_t k) { p->ki = k; }
/* KT: key type (float, or double for f64); TOF: element -> KT. */
#define RED_FLOAT_TRAITS(n, T, KT, TOF, FROMD)                                                 \
    typedef double red_sum_t_##n;                                                              \
    typedef KT red_key_t_##n;                                                                  \
    static inline double red_sum_load_##n(T v) { return (double)TOF(v); }                     \
    static inline void red_sum_put_##n(red_part *p, double a) { p->fsum = a; }                \
    static inline T red_sum_out_##n(const red_part *p) { return FROMD(p->fsum); }             \
    static inline KT red_key_##n(T v) { return TOF(v); }                                      \
    static inline int red_isnan_##n(KT k) { return k != k; }                                  \
    static inline void red_key_put_##n(red_part *p, KT k) { p->kf = (double)k; }

#define RED_ID(v) (v)
#define RED_TO_BF16(d) wk_fp_f32_to_bf16(red_f64_to_f32_odd(d))
#define RED_TO_F16(d) wk_fp_f32_to_f16(red_f64_to_f32_odd(d))
#define RED_TO_F8(d) wk_fp_f32_to_f8e4m3(red_f64_to_f32_odd(d))
#define RED_TO_F32(d) ((float)(d))
RED_INT_TRAITS(u8, uint8_t, uint8_t)
RED_INT_TRAITS(u32, uint32_t, uint32_t)
RED_INT_TRAITS(i16, int16_t, uint16_t) /* (int16_t)(uint16_t): modulo 2^16 in GCC/Clang */
RED_INT_TRAITS(i32, int32_t, uint32_t)
RED_INT_TRAITS(i64, int64_t, uint64_t)
RED_FLOAT_TRAITS(bf16, uint16_t, float, wk_fp_bf16_to_f32, RED_TO_BF16)
RED_FLOAT_TRAITS(f16, uint16_t, float, wk_fp_f16_to_f32, RED_TO_F16)
RED_FLOAT_TRAITS(f32, float, float, RED_ID, RED_TO_F32)
RED_FLOAT_TRAITS(f64, double, double, RED_ID, RED_ID)
RED_FLOAT_TRAITS(f8e4m3, uint8_t, float, wk_fp_f8e4m3_to_f32, RED_TO_F8)

/* ---- kernels: reduce elements [i0, i1) of the reduced layout rl (offset 0) into parts.
 * Row kernels: one output (nb == 1) at kept offset base; the reduced run is walked inner.
 * Column kernels: nb <= RED_COLS consecutive outputs at base, base+1, ... (the kept innermost
 * dim has stride 1): the reduced elements are walked outer and the nb outputs inner, so each
 * step reads one contiguous run instead of nb far-apart elements (sum over a leading dim). */
#define RED_COLS 128
typedef void (*red_kernel_fn)(red_part *pt, int64_t nb, const void *x, int64_t base,
                              const wk_layout *rl, int64_t i0, int64_t i1);
typedef void (*red_put_fn)(void *out, int64_t o, const red_part *pt);

/* rl is contiguous (rank 0: one element; rank 1 stride 1). */
static int red_contig(const wk_layout *rl)
{
    return rl->rank == 0 || (rl->rank == 1 && rl->strides[0] == 1);
}

/* One element of a row arg kernel: the first NaN stops the scan; otherwise a strictly better
 * key replaces the best (ties keep the first). */
#define RED_VISIT(n, CMP, i, o)                                                                \
    do {                                                                                       \
        const red_key_t_##n k_ = red_key_##n(x[o]);                                            \
        if (red_isnan_##n(k_)) {                                                               \
            best = k_;                                                                         \
            bi = (i);                                                                          \
            bo = (o);                                                                          \
            pt->nan = 1;                                                                       \
            goto done;                                                                         \
        }                                                                                      \
        if (bi < 0 || k_ CMP best) {                                                           \
            best = k_;                                                                         \
            bi = (i);                                                                          \
            bo = (o);                                                                          \
        }                                                                                      \
    } while (0)

/* Contiguous rows are reduced RED_LANES elements at a time into RED_LANES independent lanes,
 * so that the loops are not one latency-bound chain and vectorise (with WK_CPU_CLONES, for
 * AVX2/AVX-512 too) without reassociating anything; min/max work in blocks of RED_BLK. */
#define RED_LANES 32
#define RED_BLK 1024
/* Prefetch the lines WK_CPU_PF_BYTES ahead of the RED_LANES elements at q + i. */
#define RED_PREFETCH(q, i, T)                                                                  \
    for (int pf_ = 0; pf_ < (int)(RED_LANES * sizeof(T)); pf_ += 64)                           \
    WK_CPU_PREFETCH((const char *)((q) + (i)) + pf_)

/* The extreme of the cnt keys at q (cnt a multiple of RED_LANES, at most RED_BLK) into *m, the
 * index of its first occurrence into *at, and whether one of the keys is NaN (then *m and *at
 * are meaningless). Lane j sees elements j, j + RED_LANES, ... and keeps its first extreme
 * (strict CMP); the lanes combine to the extreme with the smallest index, which is the element
 * the scalar rule would end on (-0 == +0: ties keep the first). */
#define RED_BLK_DEFINE(n, T, NAME, CMP)                                                        \
    WK_CPU_CLONES static int red_blk_##NAME##_##n(red_key_t_##n *m, int64_t *at, const T *q,  \
                                                  int32_t cnt)                                 \
    {                                                                                          \
        red_key_t_##n l[RED_LANES];                                                            \
        int32_t li[RED_LANES];                                                                 \
        int32_t nan[RED_LANES];                                                                \
        for (int j = 0; j < RED_LANES; j++) {                                                  \
            l[j] = red_key_##n(q[j]);                                                          \
            li[j] = j;                                                                         \
            nan[j] = red_isnan_##n(l[j]);                                                      \
        }                                                                                      \
        for (int32_t k = RED_LANES; k < cnt; k += RED_LANES) {                                 \
            RED_PREFETCH(q, k, T);                                                             \
            /* new lanes, then copied: unconditional stores (blends); `l[j] = c ? v : l[j]`   \
             * becomes a masked store behind a branch, twice as slow */                        \
            red_key_t_##n nl[RED_LANES];                                                       \
            int32_t nli[RED_LANES];                                                            \
            _Pragma("omp simd") for (int j = 0; j < RED_LANES; j++) {                          \
                const red_key_t_##n v = red_key_##n(q[k + j]);                                 \
                const int c = v CMP l[j];                                                      \
                nan[j] |= red_isnan_##n(v);                                                    \
                nl[j] = c ? v : l[j];                                                          \
                nli[j] = c ? k + j : li[j];                                                    \
            }                                                                                  \
            _Pragma("omp simd") for (int j = 0; j < RED_LANES; j++) {                          \
                l[j] = nl[j];                                                                  \
                li[j] = nli[j];                                                                \
            }                                                                                  \
        }                                                                                      \
        int any = 0;                                                                           \
        red_key_t_##n r = l[0];                                                                \
        int32_t ri = li[0];                                                                    \
        for (int j = 0; j < RED_LANES; j++) {                                                  \
            any |= nan[j];                                                                     \
            if (l[j] CMP r || (l[j] == r && li[j] < ri)) {                                     \
                r = l[j];                                                                      \
                ri = li[j];                                                                    \
            }                                                                                  \
        }                                                                                      \
        *m = r;                                                                                \
        *at = ri;                                                                              \
        return any;                                                                            \
    }

#define RED_ARG_DEFINE(n, T, NAME, CMP)                                                        \
    static void red_##NAME##_##n(red_part *pt, int64_t nb, const void *xv, int64_t base,      \
                                 const wk_layout *rl, int64_t i0, int64_t i1)                  \
    {                                                                                          \
        (void)nb;                                                                              \
        const T *x = (const T *)xv;                                                            \
        red_key_t_##n best = 0;                                                                \
        int64_t bi = -1, bo = 0;                                                               \
        if (red_contig(rl)) {                                                                  \
            /* Blocks of up to RED_BLK: one with a NaN is scanned by the exact rule (it stops   \
             * at the first NaN); otherwise, if its extreme beats best, the rule would end on   \
             * that extreme's first occurrence, so that one is taken; if it does not, the block \
             * changes nothing. */                                                             \
            int64_t i = i0;                                                                    \
            while (i1 - i >= RED_LANES) {                                                      \
                const int32_t cnt = (int32_t)(i1 - i >= RED_BLK ? RED_BLK                      \
                                              : (i1 - i) / RED_LANES * RED_LANES);             \
                red_key_t_##n m_;                                                              \
                int64_t at_;                                                                   \
                if (red_blk_##NAME##_##n(&m_, &at_, x + base + i, cnt)) {                      \
                    for (int64_t k = i; k < i + cnt; k++)                                      \
                        RED_VISIT(n, CMP, k, base + k);                                        \
                } else if (bi < 0 || m_ CMP best) {                                            \
                    best = m_;                                                                 \
                    bi = i + at_;                                                              \
                    bo = base + i + at_;                                                       \
                }                                                                              \
                i += cnt;                                                                      \
            }                                                                                  \
            for (; i < i1; i++)                                                                \
                RED_VISIT(n, CMP, i, base + i);                                                \
        } else if (rl->rank == 1) {                                                            \
            const int64_t s = rl->strides[0];                                                  \
            for (int64_t i = i0; i < i1; i++)                                                  \
                RED_VISIT(n, CMP, i, base + i * s);                                            \
        } else if (i0 < i1) {                                                                  \
            wk_walker w;                                                                       \
            wk_walker_init(&w, rl, i0);                                                        \
            for (int64_t i = i0; i < i1; i++, wk_walker_next(&w))                              \
                RED_VISIT(n, CMP, i, base + w.off);                                            \
        }                                                                                      \
    done:                                                                                      \
        pt->empty = bi < 0;                                                                    \
        pt->idx = bi < 0 ? 0 : bi;                                                             \
        pt->off = bo;                                                                          \
        red_key_put_##n(pt, best);                                                             \
    }                                                                                          \
    static void red_col##NAME##_##n(red_part *pt, int64_t nb, const void *xv, int64_t base,   \
                                    const wk_layout *rl, int64_t i0, int64_t i1)               \
    {                                                                                          \
        const T *x = (const T *)xv;                                                            \
        red_key_t_##n best[RED_COLS];                                                          \
        int64_t bi[RED_COLS];                                                                  \
        int nan[RED_COLS];                                                                     \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            bi[b] = -1;                                                                        \
            nan[b] = 0;                                                                        \
            best[b] = 0;                                                                       \
        }                                                                                      \
        wk_walker w;                                                                           \
        wk_walker_init(&w, rl, i0);                                                            \
        for (int64_t i = i0; i < i1; i++, wk_walker_next(&w)) {                                \
            const T *q = x + base + w.off;                                                     \
            for (int64_t b = 0; b < nb; b++) {                                                 \
                if (nan[b])                                                                    \
                    continue;                                                                  \
                const red_key_t_##n k_ = red_key_##n(q[b]);                                    \
                if (red_isnan_##n(k_)) {                                                       \
                    nan[b] = 1;                                                                \
                    best[b] = k_;                                                              \
                    bi[b] = i;                                                                 \
                } else if (bi[b] < 0 || k_ CMP best[b]) {                                      \
                    best[b] = k_;                                                              \
                    bi[b] = i;                                                                 \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            pt[b].empty = bi[b] < 0;                                                           \
            pt[b].nan = nan[b];                                                                \
            pt[b].idx = bi[b] < 0 ? 0 : bi[b];                                                 \
            pt[b].off = bi[b] < 0 ? 0 : base + b + wk_layout_offset_of(rl, bi[b]);             \
            red_key_put_##n(&pt[b], best[b]);                                                  \
        }                                                                                      \
    }

/* Sum of the contiguous run q[i0..i1) into *acc in RED_LANES accumulators (for f32: f32 -> f64
 * widening adds), added pairwise at the end: a fixed order, independent of the threads. No
 * software prefetch here: the hardware's stream prefetch keeps up, and the extra instructions
 * cost 20% of a row sum that runs near the memory's speed (32 lanes: four chains of adds). */
#define RED_SUMROW_DEFINE(E, n, T)                                                             \
    WK_CPU_CLONES static void red_sumrow_##n(red_sum_t_##n *acc, const T *q, int64_t i0,      \
                                             int64_t i1)                                       \
    {                                                                                          \
        red_sum_t_##n a[RED_LANES] = {0};                                                      \
        int64_t i = i0;                                                                        \
        for (; i + RED_LANES <= i1; i += RED_LANES) {                                          \
            _Pragma("omp simd") for (int j = 0; j < RED_LANES; j++)                            \
                a[j] += red_sum_load_##n(q[i + j]);                                            \
        }                                                                                      \
        for (int j = 0; i < i1; i++, j++)                                                      \
            a[j] += red_sum_load_##n(q[i]);                                                    \
        for (int w = RED_LANES / 2; w >= 1; w /= 2)                                            \
            for (int j = 0; j < w; j++)                                                        \
                a[j] += a[j + w];                                                              \
        *acc = a[0];                                                                           \
    }
WK_DTYPE_LIST(RED_SUMROW_DEFINE)
#undef RED_SUMROW_DEFINE

#define RED_DEFINE(E, n, T)                                                                    \
    static void red_sum_##n(red_part *pt, int64_t nb, const void *xv, int64_t base,           \
                            const wk_layout *rl, int64_t i0, int64_t i1)                       \
    {                                                                                          \
        (void)nb;                                                                              \
        const T *x = (const T *)xv;                                                            \
        red_sum_t_##n a0 = 0;                                                                  \
        if (red_contig(rl)) {                                                                  \
            red_sumrow_##n(&a0, x + base, i0, i1);                                             \
        } else if (rl->rank == 1) {                                                            \
            const int64_t s = rl->strides[0];                                                  \
            for (int64_t i = i0; i < i1; i++)                                                  \
                a0 += red_sum_load_##n(x[base + i * s]);                                       \
        } else if (i0 < i1) {                                                                  \
            wk_walker w;                                                                       \
            wk_walker_init(&w, rl, i0);                                                        \
            for (int64_t i = i0; i < i1; i++, wk_walker_next(&w))                              \
                a0 += red_sum_load_##n(x[base + w.off]);                                       \
        }                                                                                      \
        red_sum_put_##n(pt, a0);                                                               \
        pt->empty = i0 >= i1;                                                                  \
    }                                                                                          \
    static void red_colsum_##n(red_part *pt, int64_t nb, const void *xv, int64_t base,        \
                               const wk_layout *rl, int64_t i0, int64_t i1)                    \
    {                                                                                          \
        const T *x = (const T *)xv;                                                            \
        red_sum_t_##n acc[RED_COLS];                                                           \
        for (int64_t b = 0; b < nb; b++)                                                       \
            acc[b] = 0;                                                                        \
        wk_walker w;                                                                           \
        wk_walker_init(&w, rl, i0);                                                            \
        for (int64_t i = i0; i < i1; i++, wk_walker_next(&w)) {                                \
            const T *q = x + base + w.off;                                                     \
            for (int64_t b = 0; b < nb; b++)                                                   \
                acc[b] += red_sum_load_##n(q[b]);                                              \
        }                                                                                      \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            red_sum_put_##n(&pt[b], acc[b]);                                                   \
            pt[b].empty = i0 >= i1;                                                            \
        }                                                                                      \
    }                                                                                          \
    static void red_put_sum_##n(void *out, int64_t o, const red_part *pt)                     \
    {                                                                                          \
        ((T *)out)[o] = red_sum_out_##n(pt);                                                   \
    }                                                                                          \
    RED_BLK_DEFINE(n, T, min, <)                                                               \
    RED_BLK_DEFINE(n, T, max, >)                                                               \
    RED_ARG_DEFINE(n, T, min, <)                                                               \
    RED_ARG_DEFINE(n, T, max, >)
WK_DTYPE_LIST(RED_DEFINE)
#undef RED_DEFINE

#define RED_ROW(E, n, T)                                                                       \
    {{red_sum_##n, red_min_##n, red_max_##n},                                                  \
     {red_colsum_##n, red_colmin_##n, red_colmax_##n},                                         \
     red_put_sum_##n},
static const struct {
    red_kernel_fn row[3], col[3]; /* sum, min, max */
    red_put_fn put_sum;
} red_table[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(RED_ROW)};
#undef RED_ROW

/* ---- combining and writing */

/* acc = acc then p (p covers later indices than acc). */
static void red_combine(red_part *acc, const red_part *p, wk_op op, int is_int)
{
    if (op == WK_OP_SUM) {
        acc->fsum += p->fsum;
        acc->isum += p->isum;
        return;
    }
    if (p->empty || acc->nan)
        return;
    int take;
    if (acc->empty || p->nan)
        take = 1;
    else if (op == WK_OP_MIN || op == WK_OP_ARGMIN)
        take = is_int ? p->ki < acc->ki : p->kf < acc->kf;
    else
        take = is_int ? p->ki > acc->ki : p->kf > acc->kf;
    if (take)
        *acc = *p;
}

/* What to compute and how the outputs are grouped into tasks. */
typedef struct red_plan {
    wk_op op;
    size_t es; /* element size of x */
    const void *x;
    void *out;
    red_kernel_fn kern;
    red_put_fn put_sum;
    wk_layout kc, rc; /* collapsed kept (offset of lx) and reduced (offset 0) layouts */
    int col;          /* column mode: a task is a block of RED_COLS outputs along kc's last dim */
    wk_layout kouter; /* column mode: kc without its last dim */
    int64_t D, bpr;   /* column mode: kc's last dim, blocks per row */
    int64_t n_out, n_red, ntasks;
} red_plan;

/* Task t: outputs [*o0, *o0 + *nb), the first at kept offset *base. */
static void red_task(const red_plan *p, int64_t t, int64_t *o0, int64_t *nb, int64_t *base)
{
    if (!p->col) {
        *o0 = t;
        *nb = 1;
        *base = wk_layout_offset_of(&p->kc, t);
        return;
    }
    const int64_t row = t / p->bpr, j0 = (t % p->bpr) * RED_COLS;
    *o0 = row * p->D + j0;
    *nb = p->D - j0 < RED_COLS ? p->D - j0 : RED_COLS;
    *base = wk_layout_offset_of(&p->kouter, row) + j0;
}

static void red_write(const red_plan *p, int64_t o, const red_part *pt)
{
    switch (p->op) {
    case WK_OP_SUM:
        p->put_sum(p->out, o, pt);
        break;
    case WK_OP_MIN:
    case WK_OP_MAX:
        memcpy((uint8_t *)p->out + (size_t)o * p->es,
               (const uint8_t *)p->x + (size_t)pt->off * p->es, p->es);
        break;
    default: /* argmin, argmax */
        ((uint32_t *)p->out)[o] = (uint32_t)pt->idx;
        break;
    }
}

/* [*b, *e): this thread's share of n items (static split). */
static void red_thread_range(int64_t n, int64_t *b, int64_t *e)
{
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t q = n / nt, r = n % nt;
    *b = t * q + (t < r ? t : r);
    *e = *b + q + (t < r ? 1 : 0);
}

/* Threads split the tasks; each output is reduced whole by one thread. */
static void red_by_output(const red_plan *p, int par)
{
#pragma omp parallel if (par)
    {
        int64_t b, e;
        red_thread_range(p->ntasks, &b, &e);
        if (b < e && !p->col) { /* one output per task: walk the kept offsets */
            wk_walker w;
            wk_walker_init(&w, &p->kc, b);
            for (int64_t o = b; o < e; o++, wk_walker_next(&w)) {
                red_part pt = red_part_init;
                p->kern(&pt, 1, p->x, w.off, &p->rc, 0, p->n_red);
                red_write(p, o, &pt);
            }
        } else if (b < e) {
            red_part pts[RED_COLS];
            for (int64_t t = b; t < e; t++) {
                int64_t o0, nb, base;
                red_task(p, t, &o0, &nb, &base);
                for (int64_t j = 0; j < nb; j++)
                    pts[j] = red_part_init;
                p->kern(pts, nb, p->x, base, &p->rc, 0, p->n_red);
                for (int64_t j = 0; j < nb; j++)
                    red_write(p, o0 + j, &pts[j]);
            }
        }
    }
}

/* Threads split every task's reduced range; parts ([thread][output]) combine in thread
 * order. */
static wk_status red_by_range(const red_plan *p, int is_int)
{
    const int nt = omp_get_max_threads();
    const int64_t n_out = p->n_out;
    red_part *parts = wk_malloc((size_t)n_out * (size_t)nt * sizeof *parts);
    if (!parts)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "reduce: no memory for %lld partial results",
                      (long long)n_out * nt);
    for (int64_t i = 0; i < n_out * nt; i++)
        parts[i] = red_part_init;
#pragma omp parallel num_threads(nt)
    {
        int64_t b, e;
        red_thread_range(p->n_red, &b, &e);
        red_part *mine = parts + (int64_t)omp_get_thread_num() * n_out;
        for (int64_t t = 0; t < p->ntasks && b < e; t++) {
            int64_t o0, nb, base;
            red_task(p, t, &o0, &nb, &base);
            p->kern(mine + o0, nb, p->x, base, &p->rc, b, e);
        }
    }
    for (int64_t o = 0; o < n_out; o++) {
        red_part acc = red_part_init;
        for (int t = 0; t < nt; t++)
            red_combine(&acc, &parts[t * n_out + o], p->op, is_int);
        red_write(p, o, &acc);
    }
    wk_free(parts);
    return WK_OK;
}

/* out (keepdim-contiguous; dtype dt, or u32 for argmin/argmax) = op of x over the dims set in
 * dims_mask. */
wk_status wk_cpu_reduce(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, uint32_t dims_mask)
{
    wk_layout kl, rl;
    memset(&kl, 0, sizeof kl);
    memset(&rl, 0, sizeof rl);
    kl.offset = lx->offset;
    for (int k = 0; k < lx->rank; k++) {
        wk_layout *dst = ((dims_mask >> k) & 1u) ? &rl : &kl;
        dst->dims[dst->rank] = lx->dims[k];
        dst->strides[dst->rank] = lx->strides[k];
        dst->rank++;
    }
    const int64_t n_out = wk_layout_elem_count(&kl), n_red = wk_layout_elem_count(&rl);
    const int is_arg = op == WK_OP_ARGMIN || op == WK_OP_ARGMAX;
    if (n_out == 0)
        return WK_OK;
    if (rl.rank == 0) { /* no dim reduced: a copy (index 0 for arg*) */
        if (is_arg) {
            memset(out, 0, (size_t)n_out * sizeof(uint32_t));
            return WK_OK;
        }
        return wk_cpu_copy_strided(dev, dt, out, 0, x, lx);
    }
    if (n_red == 0) {
        if (op != WK_OP_SUM) /* the front end rejects these */
            return wk_err(WK_ERR_SHAPE, "reduce %s: empty reduced extent", wk_op_name(op));
        memset(out, 0, (size_t)n_out * wk_dtype_size(dt)); /* all-zero bits are 0 in every dtype */
        return WK_OK;
    }
    int which;
    switch (op) {
    case WK_OP_SUM: which = 0; break;
    case WK_OP_MIN:
    case WK_OP_ARGMIN: which = 1; break;
    case WK_OP_MAX:
    case WK_OP_ARGMAX: which = 2; break;
    default:
        return wk_err(WK_ERR_INTERNAL, "reduce: op %s is not a reduction", wk_op_name(op));
    }

    red_plan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.es = wk_dtype_size(dt);
    p.x = x;
    p.out = out;
    p.put_sum = red_table[dt].put_sum;
    p.n_out = n_out;
    p.n_red = n_red;
    wk_layout_collapse(&p.kc, &kl);
    wk_layout_collapse(&p.rc, &rl);
    /* Column mode when consecutive outputs are adjacent in x and the reduced run is not. */
    const int kr = p.kc.rank;
    p.col = kr >= 1 && p.kc.strides[kr - 1] == 1 && p.kc.dims[kr - 1] >= 4 && !red_contig(&p.rc);
    if (p.col) {
        p.kouter = p.kc;
        p.kouter.rank = kr - 1;
        p.D = p.kc.dims[kr - 1];
        p.bpr = (p.D + RED_COLS - 1) / RED_COLS;
        p.ntasks = wk_layout_elem_count(&p.kouter) * p.bpr;
        p.kern = red_table[dt].col[which];
    } else {
        p.ntasks = n_out;
        p.kern = red_table[dt].row[which];
    }

    const int64_t total = n_out * n_red; /* = elem_count(lx), fits */
    const int nt = omp_get_max_threads();
    if (total > WK_CPU_PAR_THRESHOLD && nt > 1 && p.ntasks < 4 * (int64_t)nt && n_red >= 4096)
        return red_by_range(&p, wk_dtype_is_int(dt));
    red_by_output(&p, total > WK_CPU_PAR_THRESHOLD);
    return WK_OK;
}
