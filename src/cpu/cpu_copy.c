/* cpu_copy.c: the CPU in-place movement ops: const_set (fill a strided layout with one value),
 * copy_strided (gather a strided layout into a contiguous range) and copy2d (Candle's row copy).
 * Elements are moved as raw bits, so only the element size (1, 2, 4, 8 bytes) matters. */
#include "cpu_ops.h"
#include "wk_core.h"
#include <omp.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Square tile edge of the blocked (transpose-like) copy. */
#define COPY_TILE 32

/* [*b, *e): this thread's share of n items (static split). */
static void copy_thread_range(int64_t n, int64_t *b, int64_t *e)
{
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t q = n / nt, r = n % nt;
    *b = t * q + (t < r ? t : r);
    *e = *b + q + (t < r ? 1 : 0);
}

/* out: l without its first `drop_inner` innermost dims (the walker over the rows of l). */
static void copy_outer(wk_layout *out, const wk_layout *l, int drop_inner)
{
    *out = *l;
    out->rank = l->rank - drop_inner;
}

/* 1 if no two elements of l share an address, by a sufficient test: with the dims sorted by
 * stride, each stride is at least the span of all the smaller ones. l has no dim of size 1. */
static int copy_no_overlap(const wk_layout *l)
{
    int64_t s[WK_MAX_RANK], d[WK_MAX_RANK];
    int r = l->rank;
    for (int k = 0; k < r; k++) {
        s[k] = l->strides[k];
        d[k] = l->dims[k];
    }
    for (int i = 1; i < r; i++) /* insertion sort, ascending stride */
        for (int j = i; j > 0 && s[j] < s[j - 1]; j--) {
            int64_t ts = s[j], td = d[j];
            s[j] = s[j - 1];
            d[j] = d[j - 1];
            s[j - 1] = ts;
            d[j - 1] = td;
        }
    int64_t span = 1; /* elements from the first to one past the last, inner dims */
    for (int k = 0; k < r; k++) {
        if (s[k] < span)
            return 0;
        span = s[k] * (d[k] - 1) + span;
    }
    return 1;
}

/* ---- const_set: typed by element size. Each thread takes a range of elements and walks rows
 * (the innermost dim of the collapsed layout) with a tight loop. */
#define CSET_DEFINE(T)                                                                         \
    static void cset_##T(T *p, const wk_layout *c, T v, int64_t n, int par)                   \
    {                                                                                          \
        const int r = c->rank;                                                                 \
        const int64_t d = r ? c->dims[r - 1] : 1, s = r ? c->strides[r - 1] : 0;              \
        wk_layout outer;                                                                       \
        copy_outer(&outer, c, r ? 1 : 0);                                                      \
        _Pragma("omp parallel if (par)")                                                       \
        {                                                                                      \
            int64_t b, e;                                                                      \
            copy_thread_range(n, &b, &e);                                                      \
            if (b < e) {                                                                       \
                wk_walker w;                                                                   \
                wk_walker_init(&w, &outer, b / d);                                             \
                int64_t col = b % d;                                                           \
                for (int64_t i = b; i < e;) {                                                  \
                    const int64_t len = d - col < e - i ? d - col : e - i;                     \
                    T *q = p + w.off + col * s;                                                \
                    if (s == 1)                                                                \
                        for (int64_t j = 0; j < len; j++)                                      \
                            q[j] = v;                                                          \
                    else                                                                       \
                        for (int64_t j = 0; j < len; j++)                                      \
                            q[j * s] = v;                                                      \
                    i += len;                                                                  \
                    col = 0;                                                                   \
                    wk_walker_next(&w);                                                        \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
CSET_DEFINE(uint8_t)
CSET_DEFINE(uint16_t)
CSET_DEFINE(uint32_t)
CSET_DEFINE(uint64_t)
#undef CSET_DEFINE

/* In place: every element of base addressed by l becomes *value (raw bits of one dt). */
wk_status wk_cpu_const_set(wk_device *dev, wk_dtype dt, void *base, const wk_layout *l,
                           const void *value)
{
    (void)dev;
    if (wk_layout_elem_count(l) == 0)
        return WK_OK;
    /* A stride-0 dim only revisits the same addresses: drop it, so that threads never write
     * one address twice (a data race even with equal values). The order of the writes does
     * not matter, so sort the dims by decreasing stride (a transposed layout becomes a
     * contiguous one) before collapsing. */
    wk_layout nz = *l;
    nz.rank = 0;
    for (int k = 0; k < l->rank; k++) {
        if (l->strides[k] == 0)
            continue;
        int j = nz.rank++;
        for (; j > 0 && nz.strides[j - 1] < l->strides[k]; j--) {
            nz.dims[j] = nz.dims[j - 1];
            nz.strides[j] = nz.strides[j - 1];
        }
        nz.dims[j] = l->dims[k];
        nz.strides[j] = l->strides[k];
    }
    wk_layout c;
    wk_layout_collapse(&c, &nz);
    const int64_t n = wk_layout_elem_count(&c);
    const int par = n > WK_CPU_PAR_THRESHOLD && copy_no_overlap(&c);
    switch (wk_dtype_size(dt)) {
    case 1: {
        uint8_t v;
        memcpy(&v, value, 1);
        if (c.rank == 1 && c.strides[0] == 1 && !par) {
            memset((uint8_t *)base + c.offset, v, (size_t)n);
            return WK_OK;
        }
        cset_uint8_t((uint8_t *)base, &c, v, n, par);
        return WK_OK;
    }
    case 2: {
        uint16_t v;
        memcpy(&v, value, 2);
        cset_uint16_t((uint16_t *)base, &c, v, n, par);
        return WK_OK;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, value, 4);
        cset_uint32_t((uint32_t *)base, &c, v, n, par);
        return WK_OK;
    }
    case 8: {
        uint64_t v;
        memcpy(&v, value, 8);
        cset_uint64_t((uint64_t *)base, &c, v, n, par);
        return WK_OK;
    }
    default:
        return wk_err(WK_ERR_INTERNAL, "const_set: dtype %s has no element size",
                      wk_dtype_name(dt));
    }
}

/* ---- copy_strided, row case: the innermost dim of c is copied as a run (memcpy when its
 * stride is 1, a strided gather otherwise); threads split the elements. */
#define CROW_DEFINE(T)                                                                         \
    static void crow_##T(T *dst, const T *src, const wk_layout *c, int64_t n, int par)        \
    {                                                                                          \
        const int r = c->rank;                                                                 \
        const int64_t d = c->dims[r - 1], s = c->strides[r - 1];                               \
        wk_layout outer;                                                                       \
        copy_outer(&outer, c, 1);                                                              \
        _Pragma("omp parallel if (par)")                                                       \
        {                                                                                      \
            int64_t b, e;                                                                      \
            copy_thread_range(n, &b, &e);                                                      \
            if (b < e) {                                                                       \
                wk_walker w;                                                                   \
                wk_walker_init(&w, &outer, b / d);                                             \
                int64_t col = b % d;                                                           \
                for (int64_t i = b; i < e;) {                                                  \
                    const int64_t len = d - col < e - i ? d - col : e - i;                     \
                    const T *q = src + w.off + col * s;                                        \
                    if (s == 1)                                                                \
                        memcpy(dst + i, q, (size_t)len * sizeof(T));                           \
                    else                                                                       \
                        for (int64_t j = 0; j < len; j++)                                      \
                            dst[i + j] = q[j * s];                                             \
                    i += len;                                                                  \
                    col = 0;                                                                   \
                    wk_walker_next(&w);                                                        \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }

/* ---- copy_strided, transpose-like case (the second-innermost stride is the smaller): the
 * last two dims (R rows, C cols) are copied in COPY_TILE x COPY_TILE tiles so that both the
 * reads and the writes of a tile stay in cache. A task is one band of tile rows of one outer
 * index. */
#define CTILE_DEFINE(T)                                                                        \
    static void ctile_##T(T *dst, const T *src, const wk_layout *c, int par)                  \
    {                                                                                          \
        const int r = c->rank;                                                                 \
        const int64_t R = c->dims[r - 2], C = c->dims[r - 1];                                  \
        const int64_t sr = c->strides[r - 2], sc = c->strides[r - 1];                          \
        wk_layout outer;                                                                       \
        copy_outer(&outer, c, 2);                                                              \
        const int64_t bands = (R + COPY_TILE - 1) / COPY_TILE;                                 \
        const int64_t tasks = wk_layout_elem_count(&outer) * bands;                            \
        _Pragma("omp parallel for schedule(static) if (par)")                                  \
        for (int64_t t = 0; t < tasks; t++) {                                                  \
            const int64_t o = t / bands, i0 = (t % bands) * COPY_TILE;                         \
            const int64_t i1 = i0 + COPY_TILE < R ? i0 + COPY_TILE : R;                        \
            const T *s0 = src + wk_layout_offset_of(&outer, o);                                \
            T *d0 = dst + o * R * C;                                                           \
            for (int64_t j0 = 0; j0 < C; j0 += COPY_TILE) {                                    \
                const int64_t j1 = j0 + COPY_TILE < C ? j0 + COPY_TILE : C;                    \
                for (int64_t i = i0; i < i1; i++)                                              \
                    for (int64_t j = j0; j < j1; j++)                                          \
                        d0[i * C + j] = s0[i * sr + j * sc];                                   \
            }                                                                                  \
        }                                                                                      \
    }

/* ---- the transpose proper (4-byte elements, the second-innermost source stride 1): each
 * COPY_TILE x COPY_TILE tile moves as 4x4 blocks through SSE registers, four contiguous source
 * columns in, four contiguous destination rows out (_MM_TRANSPOSE4_PS only moves bits). */
#if defined(__SSE2__)
static void ctile_t32(uint32_t *dst, const uint32_t *src, const wk_layout *c, int par)
{
    const int r = c->rank;
    const int64_t R = c->dims[r - 2], C = c->dims[r - 1], sc = c->strides[r - 1];
    wk_layout outer;
    copy_outer(&outer, c, 2);
    const int64_t bands = (R + COPY_TILE - 1) / COPY_TILE;
    const int64_t tasks = wk_layout_elem_count(&outer) * bands;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t o = t / bands, i0 = (t % bands) * COPY_TILE;
        const int64_t i1 = i0 + COPY_TILE < R ? i0 + COPY_TILE : R;
        const uint32_t *s0 = src + wk_layout_offset_of(&outer, o);
        uint32_t *d0 = dst + o * R * C;
        for (int64_t j0 = 0; j0 < C; j0 += COPY_TILE) {
            const int64_t j1 = j0 + COPY_TILE < C ? j0 + COPY_TILE : C;
            int64_t i = i0;
            for (; i + 4 <= i1; i += 4) {
                int64_t j = j0;
                for (; j + 4 <= j1; j += 4) {
                    __m128 a = _mm_loadu_ps((const float *)(s0 + i + j * sc));
                    __m128 b = _mm_loadu_ps((const float *)(s0 + i + (j + 1) * sc));
                    __m128 e = _mm_loadu_ps((const float *)(s0 + i + (j + 2) * sc));
                    __m128 f = _mm_loadu_ps((const float *)(s0 + i + (j + 3) * sc));
                    _MM_TRANSPOSE4_PS(a, b, e, f);
                    _mm_storeu_ps((float *)(d0 + i * C + j), a);
                    _mm_storeu_ps((float *)(d0 + (i + 1) * C + j), b);
                    _mm_storeu_ps((float *)(d0 + (i + 2) * C + j), e);
                    _mm_storeu_ps((float *)(d0 + (i + 3) * C + j), f);
                }
                for (; j < j1; j++)
                    for (int64_t k = 0; k < 4; k++)
                        d0[(i + k) * C + j] = s0[i + k + j * sc];
            }
            for (; i < i1; i++)
                for (int64_t j = j0; j < j1; j++)
                    d0[i * C + j] = s0[i + j * sc];
        }
    }
}
#endif

#define COPY_DEFINE(T) CROW_DEFINE(T) CTILE_DEFINE(T)
COPY_DEFINE(uint8_t)
COPY_DEFINE(uint16_t)
COPY_DEFINE(uint32_t)
COPY_DEFINE(uint64_t)
#undef COPY_DEFINE
#undef CROW_DEFINE
#undef CTILE_DEFINE

/* dst[dst_offset + i] = x[element i of lx], i < elem_count(lx), element units. */
wk_status wk_cpu_copy_strided(wk_device *dev, wk_dtype dt, void *dst, size_t dst_offset,
                              const void *x, const wk_layout *lx)
{
    (void)dev;
    const size_t es = wk_dtype_size(dt);
    const int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    wk_layout c;
    wk_layout_collapse(&c, lx);
    uint8_t *d = (uint8_t *)dst + dst_offset * es;
    const uint8_t *s = (const uint8_t *)x;
    if (c.rank == 0 || (c.rank == 1 && c.strides[0] == 1)) {
        memmove(d, s + (size_t)c.offset * es, (size_t)n * es); /* dst may alias x */
        return WK_OK;
    }
    /* Threads only when the source cannot overlap the destination range. */
    const int par = n > WK_CPU_PAR_THRESHOLD && dst != x;
    const int tile = c.rank >= 2 && c.strides[c.rank - 2] < c.strides[c.rank - 1];
#define COPY_CALL(T)                                                                           \
    do {                                                                                       \
        if (tile)                                                                              \
            ctile_##T((T *)d, (const T *)s, &c, par);                                          \
        else                                                                                   \
            crow_##T((T *)d, (const T *)s, &c, n, par);                                        \
    } while (0)
    switch (es) {
    case 1: COPY_CALL(uint8_t); break;
    case 2: COPY_CALL(uint16_t); break;
    case 4:
#if defined(__SSE2__)
        if (tile && c.strides[c.rank - 2] == 1) {
            ctile_t32((uint32_t *)d, (const uint32_t *)s, &c, par);
            break;
        }
#endif
        COPY_CALL(uint32_t);
        break;
    case 8: COPY_CALL(uint64_t); break;
    default:
        return wk_err(WK_ERR_INTERNAL, "copy_strided: dtype %s has no element size",
                      wk_dtype_name(dt));
    }
#undef COPY_CALL
    return WK_OK;
}

/* Candle's copy2d: for i < d1, d2 elements from src[src_offset + i*src_stride1] to
 * dst[dst_offset + i*dst_stride1]. Rows in order, so a copy within one storage behaves as the
 * sequential loop (memmove per row). */
wk_status wk_cpu_copy2d(wk_device *dev, wk_dtype dt, void *dst, const void *src, size_t d1,
                        size_t d2, size_t src_stride1, size_t dst_stride1, size_t src_offset,
                        size_t dst_offset)
{
    (void)dev;
    const size_t es = wk_dtype_size(dt);
    if (d1 == 0 || d2 == 0)
        return WK_OK;
    uint8_t *d = (uint8_t *)dst + dst_offset * es;
    const uint8_t *s = (const uint8_t *)src + src_offset * es;
    const size_t row = d2 * es;
    if (dst == src) {
        for (size_t i = 0; i < d1; i++)
            memmove(d + i * dst_stride1 * es, s + i * src_stride1 * es, row);
        return WK_OK;
    }
    /* Rows may be written by different threads only if they do not overlap. */
    const int par = d1 > 1 && d1 * d2 > (size_t)WK_CPU_PAR_THRESHOLD && dst_stride1 >= d2;
    const int64_t rows = (int64_t)d1;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t i = 0; i < rows; i++)
        memcpy(d + (size_t)i * dst_stride1 * es, s + (size_t)i * src_stride1 * es, row);
    return WK_OK;
}

wk_status wk_cpu_rows_contiguous(wk_device *dev, wk_dtype dt, const void *x, const wk_layout *lx,
                                 void **tmp, wk_layout *lt, const char *op)
{
    const int64_t d = lx->dims[lx->rank - 1];
    const int64_t n = wk_layout_elem_count(lx);
    *tmp = NULL;
    if (lx->strides[lx->rank - 1] == 1 || d <= 1 || n / d <= 1)
        return WK_OK;
    void *t = wk_malloc((size_t)n * wk_dtype_size(dt));
    if (!t)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: cannot allocate %lld elements of %s for a "
                      "contiguous copy", op, (long long)n, wk_dtype_name(dt));
    wk_status st = wk_cpu_copy_strided(dev, dt, t, 0, x, lx);
    if (!st)
        st = wk_layout_contiguous(lt, lx->rank, lx->dims);
    if (st) {
        wk_free(t);
        return st;
    }
    *tmp = t;
    return WK_OK;
}
