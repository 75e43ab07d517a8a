/* layout.c: layout algebra (public helpers), validation against a storage, and the collapse and
 * walker helpers that backends use for strided paths. */
#include "wk_core.h"
#include <stdio.h>
#include <string.h>

static bool rank_ok(int32_t r) { return r >= 0 && r <= WK_MAX_RANK; }

/* n = product of dims; false on overflow past INT64_MAX. dims are >= 0. A dim of 0 makes the
 * count 0 whatever the others are (so the answer does not depend on the order of the dims). */
static bool checked_count(const int64_t *dims, int32_t rank, int64_t *n)
{
    for (int32_t k = 0; k < rank; k++)
        if (dims[k] == 0) {
            *n = 0;
            return true;
        }
    int64_t c = 1;
    for (int32_t k = 0; k < rank; k++)
        if (__builtin_mul_overflow(c, dims[k], &c))
            return false;
    *n = c;
    return true;
}

wk_status wk_layout_contiguous(wk_layout *out, int32_t rank, const int64_t *dims)
{
    if (!out || (rank > 0 && !dims))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_contiguous: NULL argument");
    if (!rank_ok(rank))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_contiguous: rank %d outside 0..%d",
                      (int)rank, WK_MAX_RANK);
    for (int32_t k = 0; k < rank; k++)
        if (dims[k] < 0)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_contiguous: dim %d is %lld < 0",
                          (int)k, (long long)dims[k]);
    int64_t n;
    if (!checked_count(dims, rank, &n))
        return wk_err(WK_ERR_OVERFLOW, "wk_layout_contiguous: element count overflows");
    wk_layout l;
    memset(&l, 0, sizeof l);
    l.rank = rank;
    int64_t s = 1;
    for (int32_t k = rank - 1; k >= 0; k--) {
        l.dims[k] = dims[k];
        l.strides[k] = s;
        /* a dim of 0 empties the layout but its neighbours' strides must still be numbers */
        if (k > 0 && __builtin_mul_overflow(s, dims[k] ? dims[k] : 1, &s))
            return wk_err(WK_ERR_OVERFLOW, "wk_layout_contiguous: strides overflow");
    }
    *out = l;
    return WK_OK;
}

static wk_status check_in(const wk_layout *l, const char *fn)
{
    if (!l)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL layout", fn);
    if (!rank_ok(l->rank))
        return wk_err(WK_ERR_LAYOUT, "%s: rank %d outside 0..%d", fn, (int)l->rank, WK_MAX_RANK);
    return WK_OK;
}

wk_status wk_layout_transpose(wk_layout *out, const wk_layout *l, int32_t d0, int32_t d1)
{
    wk_status st = check_in(l, "wk_layout_transpose");
    if (st)
        return st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_transpose: NULL output");
    if (d0 < 0 || d0 >= l->rank || d1 < 0 || d1 >= l->rank)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_layout_transpose: dims (%d, %d) for rank %d",
                      (int)d0, (int)d1, (int)l->rank);
    wk_layout t = *l;
    t.dims[d0] = l->dims[d1];
    t.dims[d1] = l->dims[d0];
    t.strides[d0] = l->strides[d1];
    t.strides[d1] = l->strides[d0];
    *out = t;
    return WK_OK;
}

wk_status wk_layout_narrow(wk_layout *out, const wk_layout *l, int32_t dim, int64_t start,
                           int64_t len)
{
    wk_status st = check_in(l, "wk_layout_narrow");
    if (st)
        return st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_narrow: NULL output");
    if (dim < 0 || dim >= l->rank)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE, "wk_layout_narrow: dim %d for rank %d", (int)dim,
                      (int)l->rank);
    if (start < 0 || len < 0 || start > l->dims[dim] || len > l->dims[dim] - start)
        return wk_err(WK_ERR_INDEX_OUT_OF_RANGE,
                      "wk_layout_narrow: range [%lld, %lld+%lld) outside dim %d of size %lld",
                      (long long)start, (long long)start, (long long)len, (int)dim,
                      (long long)l->dims[dim]);
    wk_layout t = *l;
    t.dims[dim] = len;
    if (wk_layout_elem_count(&t) == 0) { /* addresses nothing: the offset stays where it was, */
        *out = t;                        /* so a valid empty view stays valid */
        return WK_OK;
    }
    int64_t shift;
    if (__builtin_mul_overflow(start, l->strides[dim], &shift) ||
        __builtin_add_overflow(l->offset, shift, &t.offset))
        return wk_err(WK_ERR_OVERFLOW, "wk_layout_narrow: offset %lld + %lld * stride %lld overflows",
                      (long long)l->offset, (long long)start, (long long)l->strides[dim]);
    *out = t;
    return WK_OK;
}

wk_status wk_layout_broadcast(wk_layout *out, const wk_layout *l, int32_t rank, const int64_t *dims)
{
    wk_status st = check_in(l, "wk_layout_broadcast");
    if (st)
        return st;
    if (!out || (rank > 0 && !dims))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_broadcast: NULL argument");
    if (!rank_ok(rank) || rank < l->rank)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_broadcast: rank %d (source rank %d)",
                      (int)rank, (int)l->rank);
    wk_layout t;
    memset(&t, 0, sizeof t);
    t.rank = rank;
    t.offset = l->offset;
    int32_t lead = rank - l->rank;
    for (int32_t k = 0; k < rank; k++) {
        if (dims[k] < 0)
            return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_layout_broadcast: dim %d is negative", (int)k);
        t.dims[k] = dims[k];
        if (k < lead) {
            t.strides[k] = 0;
        } else if (l->dims[k - lead] == dims[k]) {
            t.strides[k] = l->strides[k - lead];
        } else if (l->dims[k - lead] == 1) {
            t.strides[k] = 0;
        } else {
            return wk_err(WK_ERR_SHAPE, "wk_layout_broadcast: dim %d of size %lld cannot become %lld",
                          (int)(k - lead), (long long)l->dims[k - lead], (long long)dims[k]);
        }
    }
    *out = t;
    return WK_OK;
}

int64_t wk_layout_elem_count(const wk_layout *l)
{
    if (!l || !rank_ok(l->rank))
        return 0;
    for (int32_t k = 0; k < l->rank; k++)
        if (l->dims[k] <= 0)
            return 0;
    int64_t n = 1;
    for (int32_t k = 0; k < l->rank; k++)
        if (__builtin_mul_overflow(n, l->dims[k], &n))
            return -1; /* no valid layout gets here: wk_layout_check refuses the overflow */
    return n;
}

int wk_layout_is_contiguous(const wk_layout *l)
{
    if (!l || !rank_ok(l->rank))
        return 0;
    bool empty = false;
    for (int32_t k = 0; k < l->rank; k++) {
        if (l->dims[k] < 0)
            return 0;
        empty |= l->dims[k] == 0;
    }
    if (empty)
        return 1; /* no element is addressed (wk_layout_contiguous gives such dims any strides) */
    int64_t s = 1;
    for (int32_t k = l->rank - 1; k >= 0; k--) {
        if (l->dims[k] != 1 && l->strides[k] != s)
            return 0;
        if (__builtin_mul_overflow(s, l->dims[k], &s))
            return 0; /* not a layout of any storage */
    }
    return 1;
}

const char *wk_layout_str(char *buf, size_t cap, const wk_layout *l)
{
    if (!l) {
        snprintf(buf, cap, "(null)");
        return buf;
    }
    if (!rank_ok(l->rank)) {
        snprintf(buf, cap, "<rank %d>", (int)l->rank);
        return buf;
    }
    size_t used = 0;
    int w = snprintf(buf, cap, "[");
    for (int pass = 0; pass < 2 && w >= 0; pass++) {
        const int64_t *v = pass ? l->strides : l->dims;
        for (int32_t k = 0; k < l->rank && w >= 0; k++) {
            used += (size_t)w;
            if (used >= cap)
                return buf;
            w = snprintf(buf + used, cap - used, "%s%lld", k ? "," : "", (long long)v[k]);
        }
        used += (size_t)w;
        if (used >= cap)
            return buf;
        w = snprintf(buf + used, cap - used, pass ? "]+%lld" : "]/[",
                     pass ? (long long)l->offset : 0LL);
    }
    return buf;
}

wk_status wk_layout_check(const wk_layout *l, size_t len, const char *op, const char *what)
{
    char b[256];
    if (!l)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL layout for %s", op, what);
    if (!rank_ok(l->rank))
        return wk_err(WK_ERR_LAYOUT, "%s: %s has rank %d outside 0..%d", op, what, (int)l->rank,
                      WK_MAX_RANK);
    if (l->offset < 0)
        return wk_err(WK_ERR_LAYOUT, "%s: %s %s has a negative offset", op, what,
                      wk_layout_str(b, sizeof b, l));
    for (int32_t k = 0; k < l->rank; k++)
        if (l->dims[k] < 0 || l->strides[k] < 0)
            return wk_err(WK_ERR_LAYOUT, "%s: %s %s has a negative dim or stride", op, what,
                          wk_layout_str(b, sizeof b, l));
    int64_t n;
    if (!checked_count(l->dims, l->rank, &n))
        return wk_err(WK_ERR_OVERFLOW, "%s: %s %s: element count overflows", op, what,
                      wk_layout_str(b, sizeof b, l));
    if (n == 0) {
        if ((uint64_t)l->offset > (uint64_t)len)
            return wk_err(WK_ERR_LAYOUT, "%s: %s %s: offset past the storage of %zu elements", op,
                          what, wk_layout_str(b, sizeof b, l), len);
        return WK_OK;
    }
    /* highest addressed element, with overflow checks */
    uint64_t hi = (uint64_t)l->offset;
    for (int32_t k = 0; k < l->rank; k++) {
        uint64_t d = (uint64_t)(l->dims[k] - 1), s = (uint64_t)l->strides[k];
        if (s && d > (UINT64_MAX / 2 - hi) / s)
            return wk_err(WK_ERR_LAYOUT, "%s: %s %s addresses past any storage", op, what,
                          wk_layout_str(b, sizeof b, l));
        hi += d * s;
    }
    if (hi >= (uint64_t)len)
        return wk_err(WK_ERR_LAYOUT,
                      "%s: %s %s addresses element %llu of a storage of %zu elements", op, what,
                      wk_layout_str(b, sizeof b, l), (unsigned long long)hi, len);
    return WK_OK;
}

int wk_layout_same_dims(const wk_layout *a, const wk_layout *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int32_t k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k])
            return 0;
    return 1;
}

void wk_layout_collapse_n(wk_layout *out, const wk_layout *const *in, int n)
{
    const wk_layout *l0 = in[0];
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].offset = in[i]->offset;
    }
    for (int32_t k = 0; k < l0->rank; k++)
        if (l0->dims[k] == 0) { /* empty: one dim of size 0 */
            for (int i = 0; i < n; i++) {
                out[i].rank = 1;
                out[i].dims[0] = 0;
                out[i].strides[0] = 1;
            }
            return;
        }
    int32_t r = 0;
    for (int32_t k = 0; k < l0->rank; k++) {
        int64_t d = l0->dims[k];
        if (d == 1)
            continue;
        bool merge = r > 0;
        for (int i = 0; i < n && merge; i++) { /* stride * d may pass INT64_MAX: then no merge */
            int64_t span;
            merge = !__builtin_mul_overflow(in[i]->strides[k], d, &span) &&
                    out[i].strides[r - 1] == span;
        }
        if (merge) {
            for (int i = 0; i < n; i++) {
                out[i].dims[r - 1] *= d;
                out[i].strides[r - 1] = in[i]->strides[k];
            }
        } else {
            for (int i = 0; i < n; i++) {
                out[i].dims[r] = d;
                out[i].strides[r] = in[i]->strides[k];
            }
            r++;
        }
    }
    for (int i = 0; i < n; i++)
        out[i].rank = r;
}

void wk_layout_collapse(wk_layout *out, const wk_layout *l)
{
    const wk_layout *in[1] = {l};
    wk_layout_collapse_n(out, in, 1);
}

void wk_walker_init(wk_walker *w, const wk_layout *l, int64_t start)
{
    w->rank = l->rank;
    w->off = l->offset;
    for (int k = l->rank - 1; k >= 0; k--) {
        int64_t d = l->dims[k] > 0 ? l->dims[k] : 1;
        w->dims[k] = d;
        w->strides[k] = l->strides[k];
        int64_t q = start / d;
        w->idx[k] = start - q * d;
        w->off += w->idx[k] * l->strides[k];
        start = q;
    }
}

void wk_layout_as_2d(wk_layout *o, const wk_layout *l)
{
    *o = *l;
    if (l->rank == 3) {
        o->rank = 4;
        o->dims[3] = l->dims[2];
        o->strides[3] = l->strides[2];
        o->dims[2] = 1;
        o->strides[2] = 0;
    }
}

bool wk_layout_injective(const wk_layout *l)
{
    int64_t s[WK_MAX_RANK], d[WK_MAX_RANK];
    int r = 0;
    for (int k = 0; k < l->rank; k++)
        if (l->dims[k] == 0)
            return true; /* no elements (the strides of an empty layout are not checked) */
    for (int k = 0; k < l->rank; k++)
        if (l->dims[k] > 1) {
            s[r] = l->strides[k];
            d[r++] = l->dims[k];
        }
    for (int i = 1; i < r; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && s[j] < s[j - 1]; j--) {
            const int64_t ts = s[j], td = d[j];
            s[j] = s[j - 1];
            d[j] = d[j - 1];
            s[j - 1] = ts;
            d[j - 1] = td;
        }
    int64_t span = 1; /* elements reached so far + 1 */
    for (int k = 0; k < r; k++) {
        if (s[k] < span)
            return false;
        int64_t reach;
        if (__builtin_mul_overflow(s[k], d[k] - 1, &reach) ||
            __builtin_add_overflow(span, reach, &span))
            return k == r - 1; /* past INT64_MAX: no larger stride can clear it */
    }
    return true;
}
