/* cpu_sort.c: the CPU arg_sort_last_dim, every dtype: per row of the last dim, the u32 indices
 * that sort it ascending or descending. Stable (equal keys keep index order, in both
 * directions); -0 == +0; NaN sorts last ascending and first descending, NaNs in index order.
 *
 * Each element becomes an int64 key whose order is the wanted order: integers are their value;
 * a float is mapped through its f64 bits (non-negative: the bits; negative: minus the magnitude
 * bits, so -0 and +0 both give 0) and every NaN becomes INT64_MAX, above +inf. Then a stable
 * merge sort of (key, index) pairs per row (insertion sort on short runs, then bottom-up merges),
 * ascending or descending on the key. Many rows: rows in parallel; a few long rows: the runs
 * and the merges of one row in parallel. Scratch is one allocation up front. */
#include "cpu_elem.h"
#include <string.h>

typedef struct sort_item {
    int64_t key;
    uint32_t idx;
} sort_item;

#define SORT_RUN 16 /* insertion-sorted run length before merging */

static inline int64_t sort_key_double(double v)
{
    if (v != v)
        return INT64_MAX;
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    const int64_t mag = (int64_t)(u & 0x7fffffffffffffffull); /* <= 0x7ff0... for +-inf */
    return (u >> 63) ? -mag : mag;
}

/* ---- per-dtype keys */
#define DEF_KEY_INT(E, s, T, A, S, MIN, MAX) \
    static inline int64_t sort_key_##s(T v) { return (int64_t)v; }
WK_CPU_INT_TYPES(DEF_KEY_INT)
#define DEF_KEY_FLOAT(E, s, T, CT) \
    static inline int64_t sort_key_##s(T v) { return sort_key_double((double)wk_cpu_ld_##s(v)); }
WK_CPU_FLOAT_TYPES(DEF_KEY_FLOAT)

/* a strictly before b in the wanted order (asc: smaller key first; desc: larger first). */
static inline int sort_before(int64_t a, int64_t b, int asc) { return asc ? a < b : a > b; }

/* Stable insertion sort of it[s..e). */
static void sort_run(sort_item *it, int64_t s, int64_t e, int asc)
{
    for (int64_t i = s + 1; i < e; i++) {
        const sort_item v = it[i];
        int64_t j = i;
        for (; j > s && sort_before(v.key, it[j - 1].key, asc); j--)
            it[j] = it[j - 1];
        it[j] = v;
    }
}

/* Merges the sorted runs src[lo..mid) and src[mid..hi) into dst[lo..hi); on equal keys the left
 * run goes first (stability). */
static void sort_merge(sort_item *dst, const sort_item *src, int64_t lo, int64_t mid, int64_t hi,
                       int asc)
{
    int64_t i = lo, j = mid, k = lo;
    while (i < mid && j < hi) /* the right item goes first only if strictly before */
        dst[k++] = sort_before(src[j].key, src[i].key, asc) ? src[j++] : src[i++];
    while (i < mid)
        dst[k++] = src[i++];
    while (j < hi)
        dst[k++] = src[j++];
}

/* Sorts it[0..n) stably by key; tmp holds n items. Returns the buffer holding the result.
 * par: split the runs and each level's merges over the threads (one long row). */
static sort_item *sort_items(sort_item *it, sort_item *tmp, int64_t n, int asc, int par)
{
#pragma omp parallel for schedule(static) if (par)
    for (int64_t s = 0; s < n; s += SORT_RUN)
        sort_run(it, s, s + SORT_RUN < n ? s + SORT_RUN : n, asc);
    sort_item *src = it, *dst = tmp;
    for (int64_t w = SORT_RUN; w < n; w *= 2) {
#pragma omp parallel for schedule(static) if (par && n / (2 * w) > 1)
        for (int64_t lo = 0; lo < n; lo += 2 * w)
            sort_merge(dst, src, lo, lo + w < n ? lo + w : n, lo + 2 * w < n ? lo + 2 * w : n, asc);
        sort_item *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

typedef void (*sort_load_fn)(sort_item *it, const void *x, int64_t off, int64_t sx, int64_t d);
#define DEF_LOAD(E, s, T)                                                                      \
    static void sort_load_##s(sort_item *it, const void *xv, int64_t off, int64_t sx, int64_t d) \
    {                                                                                           \
        const T *x = (const T *)xv + off;                                                       \
        for (int64_t j = 0; j < d; j++)                                                         \
            it[j] = (sort_item){sort_key_##s(x[j * sx]), (uint32_t)j};                          \
    }
WK_DTYPE_LIST(DEF_LOAD)
#define LOAD_ENTRY(E, s, T) [WK_DTYPE_##E] = sort_load_##s,
static const sort_load_fn sort_loads[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(LOAD_ENTRY)};

/* out (u32, contiguous, dims of lx) = per row of the last dim, the sorting permutation.
 * lx->rank >= 1 and the last dim <= 2^32 (checked by the front end). */
wk_status wk_cpu_arg_sort(wk_device *dev, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, int ascending)
{
    (void)dev;
    if (!wk_dtype_valid(dt) || lx->rank < 1)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "cpu arg_sort_last_dim: bad call (%s, rank %d)",
                      wk_dtype_name(dt), (int)lx->rank);
    const int64_t d = lx->dims[lx->rank - 1];
    const int64_t n = wk_layout_elem_count(lx);
    if (n <= 0)
        return WK_OK;
    const int64_t rows = n / d, sx = lx->strides[lx->rank - 1];
    /* Many rows: rows in parallel, one sort per thread. A few long rows: one row at a time,
     * each sorted with all threads. */
    const int big = n >= WK_CPU_PAR_THRESHOLD;
    const int by_row = big && rows >= 2 * (int64_t)omp_get_max_threads();
    int64_t nt = by_row ? omp_get_max_threads() : 1;
    if ((uint64_t)d > SIZE_MAX / sizeof(sort_item) / 2 / (uint64_t)nt)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "arg_sort_last_dim: scratch for rows of %lld",
                      (long long)d);
    sort_item *scratch = wk_malloc((size_t)nt * 2 * (size_t)d * sizeof(sort_item));
    if (!scratch)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "arg_sort_last_dim: cannot allocate scratch for rows "
                      "of %lld", (long long)d);
    const sort_load_fn load = sort_loads[dt];
    uint32_t *o = out;
    if (by_row) {
#pragma omp parallel num_threads((int)nt)
        {
            sort_item *it = scratch + (size_t)omp_get_thread_num() * 2 * (size_t)d;
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; r++) {
                load(it, x, wk_layout_offset_of(lx, r * d), sx, d);
                const sort_item *res = sort_items(it, it + d, d, ascending, 0);
                for (int64_t j = 0; j < d; j++)
                    o[r * d + j] = res[j].idx;
            }
        }
    } else {
        for (int64_t r = 0; r < rows; r++) {
            load(scratch, x, wk_layout_offset_of(lx, r * d), sx, d);
            const sort_item *res = sort_items(scratch, scratch + d, d, ascending, big);
            for (int64_t j = 0; j < d; j++)
                o[r * d + j] = res[j].idx;
        }
    }
    wk_free(scratch);
    return WK_OK;
}
