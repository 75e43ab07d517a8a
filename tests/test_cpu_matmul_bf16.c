/* test_cpu_matmul_bf16.c: the CPU's bf16 gemm on AVX512-BF16 (src/cpu/cpu_matmul_bf16.c), through
 * wk_matmul on the "cpu" device, against references computed here:
 *   1. a float64 triple loop over the same bf16 inputs: every element within the bound of
 *      docs/semantics.md (Matmul): |got - ref| <= 2^-8 |ref| + (1 + 2^-8) * g_k * sum |a b|,
 *      g_k = k u / (1 - k u), u = 2^-24 (k f32 roundings of exact products, then one bf16 rounding);
 *   2. the chain vdpbf16ps defines (Intel SDM; checked on this project's AMD EPYC), written in
 *      scalar C: s = +0; for each k pair q: s = fl(s + a[2q+1] b[2q+1]); s = fl(s + a[2q] b[2q]);
 *      out = bf16(s). The inputs here are normal and their products too, so no flush happens and
 *      the result must be the same bits.
 * Shapes with edges: m, n, k over 1 2 3 17 31 33 64 65 257 (odd k included), each operand
 * row-major, transposed, row-major with a padded row stride and an offset, or strided both ways;
 * batched with a stride-0 batch (one gemm per thread and all threads per gemm); and the same bits
 * with 1, 2 and 3 OpenMP threads. Skips (passes) on a CPU without AVX512-BF16, where bf16 matmul
 * keeps the sgemm path, or with WICK_CPU_BF16GEMM=off.
 * Run: ctest -R test_cpu_matmul_bf16 */
#include "cpu/cpu_ops.h"
#include "fpconv.h"
#include "testlib.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static uint64_t g_rng = 0x9e3779b97f4a7c15u;

/* A bf16 in [-2, 2), never subnormal, about one in sixteen an exact zero. */
static uint16_t rand_bf16(void)
{
    g_rng = g_rng * 6364136223846793005u + 1442695040888963407u;
    const uint32_t r = (uint32_t)(g_rng >> 33);
    if ((r & 15) == 0)
        return 0;
    return wk_fp_f32_to_bf16(((float)(r >> 8) / 4194304.0f - 1.0f) * 2.0f);
}

static float bf(uint16_t h)
{
    return wk_fp_bf16_to_f32(h);
}

/* How an operand of rows x cols sits in its storage. */
enum { ROW, TRANS, PADDED, STRIDED, KINDS };
static const char *kind_name[] = {"row-major", "transposed", "padded+offset", "strided"};

/* Fills l (rank 2) and returns the storage length for a rows x cols matrix of kind kd. */
static size_t make_layout(wk_layout *l, int kd, int64_t rows, int64_t cols)
{
    *l = testlib_layout2(rows, cols);
    switch (kd) {
    case TRANS: l->strides[0] = 1, l->strides[1] = rows; return (size_t)(rows * cols);
    case PADDED: l->strides[0] = cols + 3, l->offset = 5; return (size_t)(5 + rows * (cols + 3));
    case STRIDED: l->strides[0] = 2 * cols + 1, l->strides[1] = 2; return (size_t)(rows * (2 * cols + 1));
    default: return (size_t)(rows * cols);
    }
}

static uint16_t at(const uint16_t *x, const wk_layout *l, int64_t i, int64_t j)
{
    const int r = l->rank;
    return x[l->offset + i * l->strides[r - 2] + j * l->strides[r - 1]];
}

/* Checks c (m x n bf16) = a @ b (element layouts la, lb, rank 2 views); what names the case.
 * Returns the number of wrong elements. */
static int check_product(const char *what, const uint16_t *c, const uint16_t *a, const wk_layout *la,
                         const uint16_t *b, const wk_layout *lb, int64_t m, int64_t n, int64_t k)
{
    const double u = 0x1p-24, g = (double)k * u / (1.0 - (double)k * u);
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            /* volatile: GCC 12.2 at -O3 vectorizes this in-order reduction of two statements per
             * iteration into wrong sums (a 10-line reproducer gives -32 for 30 on small
             * integers; -fno-tree-loop-vectorize or -O2 give 30) */
            volatile float s = 0.0f;
            for (int64_t p = 0; p < k; p++) {
                const double prod = (double)bf(at(a, la, i, p)) * (double)bf(at(b, lb, p, j));
                ref += prod, mag += fabs(prod);
            }
            /* the chain: the odd k of a pair first; an odd k's last pair is (0 * 0, a b) */
            for (int64_t p = 0; p + 1 < k; p += 2) {
                s += bf(at(a, la, i, p + 1)) * bf(at(b, lb, p + 1, j));
                s += bf(at(a, la, i, p)) * bf(at(b, lb, p, j));
            }
            if (k & 1)
                s += bf(at(a, la, i, k - 1)) * bf(at(b, lb, k - 1, j));
            const uint16_t want = wk_fp_f32_to_bf16(s), got = c[i * n + j];
            const double err = fabs((double)bf(got) - ref);
            const double bound = 0x1p-8 * fabs(ref) + (1 + 0x1p-8) * g * mag;
            if (got != want || !(err <= bound)) {
                if (bad++ < 3)
                    TEST_CHECK(0, "%s: c[%lld][%lld] = %a, chain %a, f64 %a (error %.3g, bound %.3g)",
                               what, (long long)i, (long long)j, (double)bf(got), (double)bf(want),
                               ref, err, bound);
            }
        }
    return bad;
}

/* out (bf16 host copy, caller frees) = a @ b through wk_matmul; NULL on failure (recorded). */
static uint16_t *run(const uint16_t *a, size_t na, const wk_layout *la, const uint16_t *b, size_t nb,
                     const wk_layout *lb, size_t nout, const char *what)
{
    wk_storage *sa = testlib_upload(g_dev, WK_DTYPE_BF16, a, na);
    wk_storage *sb = testlib_upload(g_dev, WK_DTYPE_BF16, b, nb), *so = NULL;
    uint16_t *c = NULL;
    if (sa && sb) {
        const wk_status st = wk_matmul(&so, sa, la, sb, lb);
        if (TEST_CHECK(st == WK_OK, "%s: %s (%s)", what, wk_status_string(st), wk_last_error()) &&
            TEST_CHECK(wk_storage_len(so) == nout, "%s: %zu elements", what, wk_storage_len(so))) {
            c = malloc(nout * 2);
            if (testlib_download(c, nout, so)) {
                free(c);
                c = NULL;
            }
        }
    }
    wk_storage_free(so);
    wk_storage_free(sb);
    wk_storage_free(sa);
    return c;
}

static uint16_t *rand_buf(size_t n)
{
    uint16_t *x = malloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        x[i] = rand_bf16();
    return x;
}

/* One 2-D product m x k @ k x n with operand kinds ka, kb. */
static void case2d(int64_t m, int64_t n, int64_t k, int ka, int kb)
{
    wk_layout la, lb;
    const size_t na = make_layout(&la, ka, m, k), nb = make_layout(&lb, kb, k, n);
    uint16_t *a = rand_buf(na), *b = rand_buf(nb);
    char what[160];
    snprintf(what, sizeof what, "%lldx%lld (%s) @ %lldx%lld (%s)", (long long)m, (long long)k,
             kind_name[ka], (long long)k, (long long)n, kind_name[kb]);
    uint16_t *c = run(a, na, &la, b, nb, &lb, (size_t)(m * n), what);
    if (c)
        TEST_CHECK(check_product(what, c, a, &la, b, &lb, m, n, k) == 0, "%s", what);
    free(c);
    free(b);
    free(a);
}

static const int64_t sizes[] = {1, 2, 3, 17, 31, 33, 64, 65, 257};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

static void test_shapes(void)
{
    const int f0 = testlib_failed();
    int cases = 0;
    /* every m, n, k; the operand kinds cycle so each pair of kinds meets many shapes */
    for (int im = 0; im < NSIZES; im++)
        for (int in = 0; in < NSIZES; in++)
            for (int ik = 0; ik < NSIZES; ik++, cases++)
                case2d(sizes[im], sizes[in], sizes[ik], (im + ik) % KINDS, (in + 2 * ik + im) % KINDS);
    /* every pair of kinds on a few shapes with all the edges */
    for (int ka = 0; ka < KINDS; ka++)
        for (int kb = 0; kb < KINDS; kb++) {
            case2d(33, 65, 17, ka, kb), case2d(65, 31, 257, ka, kb), case2d(3, 257, 64, ka, kb);
            cases += 3;
        }
    printf("shapes: %d products, %s\n", cases, testlib_failed() == f0 ? "ok" : "FAILED");
}

/* nbat gemms: a [nbat, m, k] row-major, b [nbat, k, n] with batch stride 0 (one b for all). */
static void case_batched(int64_t nbat, int64_t m, int64_t n, int64_t k)
{
    const size_t na = (size_t)(nbat * m * k), nb = (size_t)(k * n), nout = (size_t)(nbat * m * n);
    uint16_t *a = rand_buf(na), *b = rand_buf(nb);
    wk_layout la = testlib_layout(3, (int64_t[]){nbat, m, k}), lb = testlib_layout(3, (int64_t[]){nbat, k, n});
    lb.strides[0] = 0;
    char what[160];
    snprintf(what, sizeof what, "batched %lld x (%lldx%lld @ %lldx%lld, b batch stride 0)",
             (long long)nbat, (long long)m, (long long)k, (long long)k, (long long)n);
    uint16_t *c = run(a, na, &la, b, nb, &lb, nout, what);
    if (c) {
        const wk_layout l2a = testlib_layout2(m, k), l2b = testlib_layout2(k, n);
        int bad = 0;
        for (int64_t i = 0; i < nbat; i++)
            bad += check_product(what, c + i * m * n, a + i * m * k, &l2a, b, &l2b, m, n, k);
        TEST_CHECK(bad == 0, "%s: %d wrong elements", what, bad);
    }
    free(c);
    free(b);
    free(a);
}

/* The same bits with 1, 2 and 3 threads: a product split over the threads, and many small ones. */
static void test_threads(void)
{
    struct { int64_t nbat, m, n, k; } sh[] = {{1, 257, 255, 513}, {7, 17, 33, 65}, {2, 200, 96, 301}};
    for (int s = 0; s < 3; s++) {
        const int64_t nbat = sh[s].nbat, m = sh[s].m, n = sh[s].n, k = sh[s].k;
        const size_t na = (size_t)(nbat * m * k), nb = (size_t)(nbat * k * n), nout = (size_t)(nbat * m * n);
        uint16_t *a = rand_buf(na), *b = rand_buf(nb), *c[3] = {NULL, NULL, NULL};
        const wk_layout la = testlib_layout(3, (int64_t[]){nbat, m, k});
        const wk_layout lb = testlib_layout(3, (int64_t[]){nbat, k, n});
        const int saved = omp_get_max_threads();
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            c[t] = run(a, na, &la, b, nb, &lb, nout, "threads");
        }
        omp_set_num_threads(saved);
        if (c[0] && c[1] && c[2])
            TEST_CHECK(!memcmp(c[0], c[1], nout * 2) && !memcmp(c[0], c[2], nout * 2),
                       "%lld x %lldx%lldx%lld: 1, 2 and 3 threads give different bits",
                       (long long)nbat, (long long)m, (long long)n, (long long)k);
        for (int t = 0; t < 3; t++)
            free(c[t]);
        free(b);
        free(a);
    }
}

int main(void)
{
    if (!wk_cpu_bf16gemm_on()) {
        printf("skip: test_cpu_matmul_bf16: bf16 matmul takes the sgemm path here (no AVX512-BF16 "
               "in this CPU or this build, or WICK_CPU_BF16GEMM=off)\n");
        return testlib_summary();
    }
    if (!TEST_EQ_STATUS(wk_device_open(&g_dev, "cpu"), WK_OK))
        return testlib_summary();
    test_shapes();
    case_batched(5, 17, 33, 31);  /* small: one gemm per thread */
    case_batched(3, 65, 66, 129); /* large: all threads on each gemm */
    case_batched(2, 1, 257, 3);
    test_threads();
    wk_device_close(g_dev);
    return testlib_summary();
}
