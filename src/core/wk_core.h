/* wk_core.h: helpers shared by the front end and every backend: errors, the allocation hook,
 * dtype facts, layout algebra. Internal. */
#ifndef WK_CORE_H
#define WK_CORE_H

#include "wick.h"
#include "dtype_list.h"
#include "fpconv.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors: set the thread's message and return s (printf-style). */
wk_status wk_err(wk_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wk_err_clear(void);

/* ---- the allocation hook (host memory; alloc.c). */
void *wk_malloc(size_t bytes);
void *wk_calloc(size_t n, size_t size);
void wk_free(void *p);
/* 1 while the hook is the default (malloc/free). */
bool wk_alloc_is_default(void);
/* The hook wk_set_allocator installs (NULL: the default); only handles.c calls it. */
void wk_alloc_set_hook(const wk_allocator *a);
/* handles.c: live device, storage, file and communicator handles (wk_set_allocator refuses to
 * switch while any is alive; the last one to close empties the host cache). */
void wk_live_add(int delta);
/* host_cache.c: CPU storage memory through the hook, large freed blocks kept for reuse (up to
 * WICK_CPU_CACHE_MB); wk_host_free takes only pointers from wk_host_alloc. */
void *wk_host_alloc(size_t bytes);
void wk_host_free(void *p);
void wk_host_cache_flush(void);
size_t wk_host_cache_bytes(void);

/* ---- dtypes */
static inline bool wk_dtype_valid(wk_dtype d) { return (unsigned)d < WK_DTYPE_COUNT; }
static inline bool wk_dtype_is_int(wk_dtype d)
{
    return d == WK_DTYPE_U8 || d == WK_DTYPE_U32 || d == WK_DTYPE_I16 || d == WK_DTYPE_I32 ||
           d == WK_DTYPE_I64;
}
static inline bool wk_dtype_is_signed_int(wk_dtype d)
{
    return d == WK_DTYPE_I16 || d == WK_DTYPE_I32 || d == WK_DTYPE_I64;
}

/* ---- layouts */
/* "[2,3]/[3,1]+0" : dims, strides, offset, for messages. Returns buf. */
const char *wk_layout_str(char *buf, size_t cap, const wk_layout *l);
/* Checks rank, dims >= 0, strides >= 0, offset >= 0, count overflow, and that every addressed
 * element lies in [0, len). Sets the error (naming `what`) and returns it on failure. */
wk_status wk_layout_check(const wk_layout *l, size_t len, const char *op, const char *what);
/* 1 if a and b have the same rank and dims. */
int wk_layout_same_dims(const wk_layout *a, const wk_layout *b);

/* A layout with adjacent dims merged where memory allows (dims of size 1 dropped, a dim and its
 * inner neighbour merged when stride[k] == stride[k+1] * dims[k+1]). Same elements in the same
 * row-major order; rank may shrink to 0. For the strided paths of backends. */
void wk_layout_collapse(wk_layout *out, const wk_layout *l);
/* Several layouts of equal dims collapsed jointly (a dim pair merges only if it merges in all).
 * n <= 4. */
void wk_layout_collapse_n(wk_layout *out, const wk_layout *const *in, int n);

/* true if no two elements of l share an address (a sufficient test: the dims of size > 1
 * sorted by stride, each stride reaches past the span of the smaller ones). */
bool wk_layout_injective(const wk_layout *l);

/* l (rank 3: N, C, L) as rank 4 (N, C, 1, L), the 1-D convolutions seen as 2-D ones; rank-4
 * layouts are copied unchanged. */
void wk_layout_as_2d(wk_layout *o, const wk_layout *l);

/* Offset (elements) of linear row-major element i of l. Slow; for references and tails. */
static inline int64_t wk_layout_offset_of(const wk_layout *l, int64_t i)
{
    int64_t off = l->offset;
    for (int k = l->rank - 1; k >= 0; k--) {
        int64_t d = l->dims[k];
        int64_t q = i / d;
        off += (i - q * d) * l->strides[k];
        i = q;
    }
    return off;
}

/* Multi-index walker over a layout in row-major order: next offset in O(1) amortised. */
typedef struct wk_walker {
    int32_t rank;
    int64_t idx[WK_MAX_RANK];
    int64_t dims[WK_MAX_RANK];
    int64_t strides[WK_MAX_RANK];
    int64_t off;
} wk_walker;
/* Positions the walker at linear element `start` of l. */
void wk_walker_init(wk_walker *w, const wk_layout *l, int64_t start);
/* The offset only ever moves between addressed elements (past the last one it wraps to the
 * first), so it cannot overflow for any valid layout, whatever the strides of size-1 dims. */
static inline void wk_walker_next(wk_walker *w)
{
    for (int k = w->rank - 1; k >= 0; k--) {
        if (++w->idx[k] < w->dims[k]) {
            w->off += w->strides[k];
            return;
        }
        w->off -= w->strides[k] * (w->dims[k] - 1);
        w->idx[k] = 0;
    }
}

#endif
