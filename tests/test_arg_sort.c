/* test_arg_sort.c: arg_sort_last_dim on every device and dtype against a reference written here:
 * per row, qsort of (value, index) pairs under the documented total order (ascending: smaller
 * value first, NaN last; descending: larger first, NaN first; -0 == +0; equal values and NaNs
 * in index order), the values decoded from their bits by this file's own decoders. Row lengths
 * cover every path of the GPU backend (bitonic rows <= 256, the warp sort up to 1024 for 32-bit
 * keys, the shared-memory radix sort up to 2048, the global radix passes beyond): 1, 2, 255,
 * 256, 257, 1000, 2048, 2049, 4095, 4097 and 200,000, row counts 1, 2, 3, 5, 7, 13 (not
 * multiples of anything), contiguous and transposed; warp_cases forces the warp sort at its
 * edges. Data: few distinct values (many ties, NaN, -0, +0, infinities), all keys equal, or
 * random bit patterns.
 * Run: ctest -R test_arg_sort (WICK_TEST_DEVICES picks the devices; WICK_TEST_QUICK=1 keeps one
 * of the 200,000-element rows). */
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec;

/* ---- decoders of the stored bits (independent of wick's fpconv) */
static double dec_f16(uint16_t h)
{
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -24);
    else
        v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}
static double dec_bf16(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double dec_f8(uint8_t b) /* e4m3fn: bias 7, no infinities, S.1111.111 = NaN */
{
    const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v;
    if (e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexp(m, -9);
    else
        v = ldexp(8 + m, e - 10);
    return s ? -v : v;
}

/* element i of a host buffer of dtype dt as a double (integers exact up to 2^53; i64 keeps
 * its own int64 value in *iv). */
static double value(wk_dtype dt, const void *p, size_t i, int64_t *iv)
{
    *iv = 0;
    switch (dt) {
    case WK_DTYPE_U8: return *iv = ((const uint8_t *)p)[i];
    case WK_DTYPE_U32: return (double)(*iv = ((const uint32_t *)p)[i]);
    case WK_DTYPE_I16: return *iv = ((const int16_t *)p)[i];
    case WK_DTYPE_I32: return *iv = ((const int32_t *)p)[i];
    case WK_DTYPE_I64: return (double)(*iv = ((const int64_t *)p)[i]);
    case WK_DTYPE_BF16: return dec_bf16(((const uint16_t *)p)[i]);
    case WK_DTYPE_F16: return dec_f16(((const uint16_t *)p)[i]);
    case WK_DTYPE_F32: return ((const float *)p)[i];
    case WK_DTYPE_F64: return ((const double *)p)[i];
    case WK_DTYPE_F8E4M3: return dec_f8(((const uint8_t *)p)[i]);
    default: return 0;
    }
}

typedef struct item {
    double v;
    int64_t iv;
    uint32_t idx;
} item;
static int g_asc, g_int;

static int cmp_item(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    int c = 0; /* <0: a first by value */
    if (g_int) {
        c = a->iv < b->iv ? -1 : a->iv > b->iv;
        if (!g_asc)
            c = -c;
    } else {
        const int an = isnan(a->v), bn = isnan(b->v);
        if (an || bn)
            c = an && bn ? 0 : (an ? 1 : -1); /* NaN largest */
        else
            c = a->v < b->v ? -1 : a->v > b->v; /* -0 == +0 */
        if (!g_asc)
            c = -c;
    }
    return c ? c : (a->idx < b->idx ? -1 : a->idx > b->idx);
}

static uint64_t g_rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* n elements of dt: ties = 1: a few values (ties, NaN, -0, +0, inf); ties = 2: all keys equal
 * (integers one value, floats -0 and +0 mixed: one value in the order); else random bits. */
static void fill(wk_dtype dt, void *p, size_t n, int ties)
{
    static const double set[8] = {0.0, -0.0, 1.5, -2.0, NAN, 3.0, INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        if (ties == 2) /* bits r >> 61 pick set[0] or set[1] */
            r = (r >> 63) << 61;
        const uint64_t rq = ties == 2 ? 0 : r; /* integers' tie values */
        const double t = set[r >> 61];
        switch (dt) {
        case WK_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)(ties ? rq % 3 : r); break;
        case WK_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)(ties ? rq % 3 * 0x7fffffffu : r); break;
        case WK_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)(ties ? (int)(rq % 5) - 2 : (int)(r & 0xffff)); break;
        case WK_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(ties ? (int)(rq % 5) - 2 : (int32_t)r); break;
        case WK_DTYPE_I64: ((int64_t *)p)[i] = ties ? (int64_t)(rq % 5) - 2 : (int64_t)r; break;
        case WK_DTYPE_BF16: { /* ties: the f32 bits of the set, truncated */
            float f = (float)t;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)p)[i] = (uint16_t)(ties ? u >> 16 : r);
            break;
        }
        case WK_DTYPE_F16: {
            static const uint16_t hs[8] = {0x0000, 0x8000, 0x3e00, 0xc000, 0x7e00, 0x4200, 0x7c00, 0xfc00};
            ((uint16_t *)p)[i] = (uint16_t)(ties ? hs[r >> 61] : r);
            break;
        }
        case WK_DTYPE_F32: {
            float f = (float)t;
            if (!ties) {
                const uint32_t u = (uint32_t)r;
                memcpy(&f, &u, 4);
            }
            ((float *)p)[i] = f;
            break;
        }
        case WK_DTYPE_F64: {
            double d = t;
            if (!ties)
                memcpy(&d, &r, 8);
            ((double *)p)[i] = d;
            break;
        }
        case WK_DTYPE_F8E4M3: {
            static const uint8_t bs[8] = {0x00, 0x80, 0x3c, 0xc0, 0x7f, 0x44, 0xff, 0x7e};
            ((uint8_t *)p)[i] = (uint8_t)(ties ? bs[r >> 61] : r);
            break;
        }
        default: break;
        }
    }
}

/* The reference permutation of x (rows x d, row r element j at x[r * rs + j * cs]). */
static void reference(uint32_t *want, wk_dtype dt, const void *x, int64_t rows, int64_t d,
                      int64_t rs, int64_t cs, int asc, item *it)
{
    g_asc = asc;
    g_int = dt == WK_DTYPE_U8 || dt == WK_DTYPE_U32 || dt == WK_DTYPE_I16 ||
            dt == WK_DTYPE_I32 || dt == WK_DTYPE_I64;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < d; j++) {
            it[j].v = value(dt, x, (size_t)(r * rs + j * cs), &it[j].iv);
            it[j].idx = (uint32_t)j;
        }
        qsort(it, (size_t)d, sizeof *it, cmp_item);
        for (int64_t j = 0; j < d; j++)
            want[r * d + j] = it[j].idx;
    }
}

/* One case: rows x d of dt (transposed: stored as d x rows), both directions. */
static void run_case(wk_dtype dt, int64_t rows, int64_t d, int transposed, int ties)
{
    if (!wk_device_supports(g_dev, WK_OP_ARG_SORT_LAST_DIM, dt))
        return;
    const size_t n = (size_t)(rows * d), es = wk_dtype_size(dt);
    void *x = malloc(n * es);
    uint32_t *got = malloc(n * 4), *want = malloc(n * 4);
    item *it = malloc((size_t)d * sizeof *it);
    wk_storage *s = NULL;
    if (!TEST_CHECK(x && got && want && it, "out of host memory"))
        goto done;
    fill(dt, x, n, ties);
    s = testlib_upload(g_dev, dt, x, n);
    const int64_t dims[2] = {rows, d};
    wk_layout l = testlib_layout(2, dims);
    if (transposed) {
        l.strides[0] = 1;
        l.strides[1] = rows;
    }
    for (int asc = 0; s && asc < 2; asc++) {
        reference(want, dt, x, rows, d, l.strides[0], l.strides[1], asc, it);
        wk_storage *o = NULL;
        const wk_status st = wk_arg_sort_last_dim(&o, s, &l, asc);
        if (TEST_CHECK(st == WK_OK, "%s: arg_sort %s %lld x %lld: %s (%s)", g_spec,
                       wk_dtype_name(dt), (long long)rows, (long long)d, wk_status_string(st),
                       wk_last_error()) &&
            !testlib_download(got, n, o)) {
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < n; i++)
                if (got[i] != want[i] && !bad++)
                    first = i;
            TEST_CHECK(bad == 0,
                       "%s: arg_sort %s %lld x %lld%s (%s, %s): %zu wrong, first at %zu "
                       "(got %u, want %u)",
                       g_spec, wk_dtype_name(dt), (long long)rows, (long long)d,
                       transposed ? " transposed" : "", asc ? "asc" : "desc",
                       ties ? "ties" : "random bits", bad, first, got[first], want[first]);
        }
        wk_storage_free(o);
    }
done:
    wk_storage_free(s);
    free(x);
    free(got);
    free(want);
    free(it);
}

/* The warp sort (kernels/sort_warp.h) at its edges, forced for every row of D <= 1024 with
 * WICK_SORT_ROWS=warp (read per call; other dtypes and devices keep their own paths): D at the
 * slot counts' edges (1, 31, 32, 33, 255, 256, 257, 512, 513, 1023, 1024, and 1025 past the
 * path), 1 row, 9 and 17 (8 rows per block: the last block part full), random bits, a few
 * values with NaN and +-0, all keys equal; one transposed case. quick (the sanitizer runs):
 * the f32 cases only. */
static void warp_cases(int quick)
{
    static const int64_t ds[] = {1, 31, 32, 33, 255, 256, 257, 512, 513, 1023, 1024, 1025};
    static const int64_t rs[] = {1, 9, 17};
    static const wk_dtype dts[] = {WK_DTYPE_F32, WK_DTYPE_BF16, WK_DTYPE_I32, WK_DTYPE_U8,
                                   WK_DTYPE_F16, WK_DTYPE_F8E4M3, WK_DTYPE_U32, WK_DTYPE_I16};
    setenv("WICK_SORT_ROWS", "warp", 1);
    for (size_t k = 0; k < sizeof ds / sizeof ds[0]; k++)
        for (int ties = 0; ties < 3; ties++)
            run_case(WK_DTYPE_F32, rs[(k + (size_t)ties) % 3], ds[k], 0, ties);
    for (size_t k = 0; !quick && k < sizeof dts / sizeof dts[0]; k++)
        for (int ties = 0; ties < 3; ties++)
            run_case(dts[k], 9, ds[(k * 3 + (size_t)ties) % 12], 0, ties);
    run_case(WK_DTYPE_F32, 9, 1000, 1, 1);
    if (!quick)
        run_case(WK_DTYPE_F32, 4097, 64, 0, 0); /* many rows: blocks loop over row sets */
    unsetenv("WICK_SORT_ROWS");
}

int main(void)
{
    static const int64_t shapes[][2] = {{7, 1},    {5, 2},    {3, 255},  {2, 256},  {5, 257},
                                        {13, 1000}, {3, 2048}, {2, 2049}, {3, 4095}, {2, 4097}};
    /* WICK_TEST_QUICK=1 (the sanitizer runs of tools/device/sort.sh): one 200,000-row case */
    const char *qe = getenv("WICK_TEST_QUICK");
    const int quick = qe && *qe && strcmp(qe, "0") != 0;
    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    for (int i = 0; i < nd; i++) {
        g_spec = specs[i];
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        for (int dt = 0; dt < WK_DTYPE_COUNT; dt++)
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
                run_case((wk_dtype)dt, shapes[k][0], shapes[k][1], 0, (int)((k + (size_t)dt) & 1));
        for (int ties = 0; ties < 2; ties++) { /* strided rows through every path */
            run_case(WK_DTYPE_F32, 7, 200, 1, ties);
            run_case(WK_DTYPE_F32, 5, 1500, 1, ties);
            run_case(WK_DTYPE_F32, 3, 5000, 1, ties);
            run_case(WK_DTYPE_F64, 3, 3000, 1, ties);
        }
        warp_cases(quick);
        run_case(WK_DTYPE_F32, 1, 200000, 0, 0); /* the long rows of the benchmark */
        if (!quick) {
            run_case(WK_DTYPE_F32, 2, 200000, 0, 1);
            run_case(WK_DTYPE_I64, 1, 200000, 0, 0);
            run_case(WK_DTYPE_BF16, 1, 200000, 0, 1);
        }
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
