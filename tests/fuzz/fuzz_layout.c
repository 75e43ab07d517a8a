/* fuzz_layout.c: the layout validator and the layout algebra on fuzzer-made layouts.
 * wk_layout_check (src/core/layout.c), which every op trusts before it addresses memory, is
 * compared with an independent oracle written here in 128-bit arithmetic: it must accept exactly
 * the layouts whose every addressed element lies inside the storage. For accepted layouts with
 * few elements, every element is walked three ways (wk_walker, wk_layout_offset_of, the
 * collapsed layout) and the offsets must agree and lie inside the storage; wk_layout_injective
 * and wk_layout_is_contiguous are checked against the walked offsets. The public helpers
 * (contiguous, transpose, narrow, broadcast, elem_count, is_contiguous) run on the same
 * unvalidated input (UBSan catches overflow) and their results are checked against the source. */
#include "fuzz.h"
#include "wk_core.h"
#include <string.h>

typedef __int128 i128;
enum { WALK_MAX = 4096 };

static wk_layout read_layout(fz *f)
{
    wk_layout l;
    memset(&l, 0, sizeof l);
    const uint8_t mode = fz_u8(f);
    const uint8_t r = fz_u8(f);
    l.rank = (r & 0xF0) == 0xF0 ? (int32_t)(int8_t)r : r % (WK_MAX_RANK + 1);
    for (int k = 0; k < WK_MAX_RANK; k++) {
        l.dims[k] = mode & 1 ? fz_i64_edgy(f, 7) : (int64_t)(fz_u8(f) % 6);
        l.strides[k] = mode & 2 ? fz_i64_edgy(f, 40) : (int64_t)(fz_u8(f) % 13);
    }
    l.offset = mode & 4 ? fz_i64_edgy(f, 64) : (int64_t)(fz_u8(f) % 16);
    if (mode & 8) /* contiguous strides over the chosen dims (saturating) */
        for (int k = l.rank - 1, s = 1; k >= 0 && k < WK_MAX_RANK; k--) {
            l.strides[k] = s;
            s = l.dims[k] > 0 && l.dims[k] < 1000 && s < 1000000 ? s * (int)l.dims[k] : s;
        }
    if (mode & 16) { /* a pair of dims swapped (a transposed view) */
        const int a = fz_u8(f) % WK_MAX_RANK, b = fz_u8(f) % WK_MAX_RANK;
        const int64_t td = l.dims[a], ts = l.strides[a];
        l.dims[a] = l.dims[b];
        l.strides[a] = l.strides[b];
        l.dims[b] = td;
        l.strides[b] = ts;
    }
    return l;
}

/* The oracle: is l valid for a storage of len elements? (saturating 128-bit arithmetic) */
static bool oracle_valid(const wk_layout *l, size_t len)
{
    if (l->rank < 0 || l->rank > WK_MAX_RANK || l->offset < 0)
        return false;
    bool zero = false;
    i128 n = 1;
    for (int k = 0; k < l->rank; k++) {
        if (l->dims[k] < 0 || l->strides[k] < 0)
            return false;
        zero |= l->dims[k] == 0;
        if (n <= (i128)INT64_MAX)
            n *= l->dims[k] ? l->dims[k] : 1;
    }
    if (zero)
        return (i128)l->offset <= (i128)len;
    if (n > (i128)INT64_MAX)
        return false; /* the element count overflows */
    i128 hi = l->offset;
    for (int k = 0; k < l->rank && hi < ((i128)1 << 100); k++)
        hi += (i128)(l->dims[k] - 1) * l->strides[k];
    return hi < (i128)len && hi <= (i128)INT64_MAX; /* offsets are int64 everywhere */
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Walks a valid layout with n <= WALK_MAX elements three ways. */
static void walk_valid(const wk_layout *l, size_t len, int64_t n)
{
    static int64_t offs[WALK_MAX];
    wk_walker w;
    wk_walker_init(&w, l, 0);
    wk_layout c;
    wk_layout_collapse(&c, l);
    FUZZ_CHECK(wk_layout_elem_count(&c) == n, "collapse changed the count %lld -> %lld",
               (long long)n, (long long)wk_layout_elem_count(&c));
    wk_walker wc;
    wk_walker_init(&wc, &c, 0);
    for (int64_t i = 0; i < n; i++) {
        const int64_t o = wk_layout_offset_of(l, i);
        FUZZ_CHECK(o >= 0 && (uint64_t)o < len, "element %lld at %lld, storage %zu", (long long)i,
                   (long long)o, len);
        FUZZ_CHECK(w.off == o, "walker %lld, offset_of %lld at %lld", (long long)w.off, (long long)o,
                   (long long)i);
        FUZZ_CHECK(wc.off == o, "collapsed walker %lld, offset_of %lld at %lld", (long long)wc.off,
                   (long long)o, (long long)i);
        FUZZ_CHECK(wk_layout_offset_of(&c, i) == o, "collapsed offset_of");
        offs[i] = o;
        wk_walker_next(&w);
        wk_walker_next(&wc);
    }
    /* walkers started mid-way agree too */
    if (n > 1) {
        const int64_t s = n / 2;
        wk_walker_init(&w, l, s);
        FUZZ_CHECK(w.off == offs[s], "walker started at %lld", (long long)s);
    }
    if (wk_layout_is_contiguous(l))
        for (int64_t i = 0; i < n; i++)
            FUZZ_CHECK(offs[i] == l->offset + i, "contiguous layout: element %lld at %lld",
                       (long long)i, (long long)offs[i]);
    const bool inj = wk_layout_injective(l);
    qsort(offs, (size_t)n, sizeof offs[0], cmp_i64);
    bool distinct = true;
    for (int64_t i = 1; i < n; i++)
        distinct &= offs[i] != offs[i - 1];
    FUZZ_CHECK(!inj || distinct, "wk_layout_injective said yes, but two elements share an address");
}

static void check_helpers(fz *f, const wk_layout *l, size_t len, bool valid)
{
    wk_layout o;
    /* transpose: same validity */
    const int32_t d0 = (int32_t)(int8_t)fz_u8(f) % 10, d1 = (int32_t)(int8_t)fz_u8(f) % 10;
    if (wk_layout_transpose(&o, l, d0, d1) == WK_OK)
        FUZZ_CHECK((wk_layout_check(&o, len, "fuzz", "t") == WK_OK) == valid, "transpose changed validity");
    /* narrow: a valid layout stays valid */
    const int32_t dim = (int32_t)(int8_t)fz_u8(f) % 10;
    const int64_t start = fz_i64_edgy(f, 6), nlen = fz_i64_edgy(f, 6);
    if (wk_layout_narrow(&o, l, dim, start, nlen) == WK_OK && valid)
        FUZZ_CHECK(wk_layout_check(&o, len, "fuzz", "n") == WK_OK, "narrow of a valid layout is invalid");
    /* broadcast: a valid layout stays valid (stride 0 adds no address) */
    int64_t dims[WK_MAX_RANK + 2];
    const int32_t rank = (int32_t)(fz_u8(f) % (WK_MAX_RANK + 2));
    for (int k = 0; k < rank; k++)
        dims[k] = fz_u8(f) & 1 ? fz_i64_edgy(f, 6) : (k - (rank - l->rank) >= 0 && k - (rank - l->rank) < WK_MAX_RANK ? l->dims[k - (rank - l->rank)] : 1);
    if (wk_layout_broadcast(&o, l, rank, dims) == WK_OK && valid) {
        const wk_status st = wk_layout_check(&o, len, "fuzz", "b");
        FUZZ_CHECK(st == WK_OK || st == WK_ERR_OVERFLOW, "broadcast of a valid layout: %s", wk_status_string(st));
    }
    /* contiguous: valid for exactly its element count */
    if (wk_layout_contiguous(&o, rank, dims) == WK_OK) {
        const int64_t n = wk_layout_elem_count(&o);
        FUZZ_CHECK(wk_layout_is_contiguous(&o), "contiguous layout not contiguous");
        FUZZ_CHECK(wk_layout_check(&o, (size_t)n, "fuzz", "c") == WK_OK, "contiguous layout invalid for its count");
        if (n > 0)
            FUZZ_CHECK(wk_layout_check(&o, (size_t)n - 1, "fuzz", "c") != WK_OK, "contiguous layout valid for count - 1");
    }
    (void)wk_layout_elem_count(l);
    (void)wk_layout_is_contiguous(l);
    char buf[64];
    wk_layout_str(buf, sizeof buf, l);
    wk_layout_str(buf, 7, l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = fz_make(data, size);
    const wk_layout l = read_layout(&f);
    const uint8_t lm = fz_u8(&f);
    size_t len = lm < 200 ? (size_t)fz_u16(&f) % 5000 : (size_t)fz_u64(&f);
    const wk_status st = wk_layout_check(&l, len, "fuzz", "x");
    const bool valid = st == WK_OK;
    FUZZ_CHECK(valid == oracle_valid(&l, len), "wk_layout_check said %s, the oracle %s",
               wk_status_string(st), oracle_valid(&l, len) ? "valid" : "invalid");
    if (!valid) {
        FUZZ_CHECK(st == WK_ERR_LAYOUT || st == WK_ERR_OVERFLOW, "status %s", wk_status_string(st));
        FUZZ_CHECK(wk_last_error()[0] != '\0', "no message");
    } else {
        const int64_t n = wk_layout_elem_count(&l);
        if (n <= WALK_MAX)
            walk_valid(&l, len, n);
        /* a second layout of the same dims, collapsed jointly, walks the same way */
        wk_layout m = read_layout(&f);
        m.rank = l.rank;
        memcpy(m.dims, l.dims, sizeof m.dims);
        if (n <= WALK_MAX && wk_layout_check(&m, (size_t)1 << 40, "fuzz", "m") == WK_OK) {
            const wk_layout *in[2] = {&l, &m};
            wk_layout out[2];
            wk_layout_collapse_n(out, in, 2);
            FUZZ_CHECK(out[0].rank == out[1].rank, "joint collapse ranks differ");
            for (int64_t i = 0; i < n; i++) {
                FUZZ_CHECK(wk_layout_offset_of(&out[0], i) == wk_layout_offset_of(&l, i), "joint collapse 0");
                FUZZ_CHECK(wk_layout_offset_of(&out[1], i) == wk_layout_offset_of(&m, i), "joint collapse 1");
            }
        }
        if (l.rank == 3 || l.rank == 4) {
            wk_layout o;
            wk_layout_as_2d(&o, &l);
            FUZZ_CHECK(o.rank == 4 && wk_layout_check(&o, len, "fuzz", "2d") == WK_OK, "as_2d");
        }
    }
    check_helpers(&f, &l, len, valid);
    return 0;
}
