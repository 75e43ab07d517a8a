/* test_cpu_gemm.c: the CPU gemm that matmul and the convolutions share (src/cpu/cpu_gemm.c), which
 * cuts a large gemm into row or column blocks over the OpenMP threads, OpenBLAS running on each
 * calling thread.
 *   1. Values: f32 and f64 against a long-double triple loop written here, for every transpose
 *      pairing, on shapes that are cut along m (m >= n) and along n, with extents that are not
 *      multiples of the 16-row blocks, and on shapes too small to cut: within k * eps * sum |a b|.
 *   2. Same bits on 1, 2 and 3 threads and from inside a parallel region (where the blocks run
 *      one after the other on the calling thread): the blocks follow from the shape alone.
 *   3. Through wk_matmul: a batched product (batches spread over threads) and a single large one
 *      (cut), each equal to the reference and to its 1-thread bits.
 * Run: ctest -R test_cpu_gemm */
#include "cpu/cpu_ops.h"
#include "testlib.h"
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) /* in [-1, 1) */
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) * 0x1p-52 - 1.0;
}

typedef struct shape {
    int64_t m, n, k;
} shape;

/* op(x)[r][c] of an R x C op(x): x stored R x C, or (trans) C x R. */
static double at(const double *x, int trans, int64_t r, int64_t c, int64_t R, int64_t C)
{
    return trans ? x[c * R + r] : x[r * C + c];
}

static void check_case(wk_dtype ct, shape s, int ta, int tb)
{
    const int64_t m = s.m, n = s.n, k = s.k;
    double *ad = malloc((size_t)(m * k) * sizeof *ad), *bd = malloc((size_t)(k * n) * sizeof *bd);
    for (int64_t i = 0; i < m * k; i++)
        ad[i] = ct == WK_DTYPE_F32 ? (double)(float)urand() : urand();
    for (int64_t i = 0; i < k * n; i++)
        bd[i] = ct == WK_DTYPE_F32 ? (double)(float)urand() : urand();
    const size_t es = wk_dtype_size(ct);
    char *a = malloc((size_t)(m * k) * es), *b = malloc((size_t)(k * n) * es);
    char *c[5];
    for (int v = 0; v < 5; v++)
        c[v] = malloc((size_t)(m * n) * es);
    for (int64_t i = 0; i < m * k; i++)
        ct == WK_DTYPE_F32 ? (void)(((float *)a)[i] = (float)ad[i]) : (void)(((double *)a)[i] = ad[i]);
    for (int64_t i = 0; i < k * n; i++)
        ct == WK_DTYPE_F32 ? (void)(((float *)b)[i] = (float)bd[i]) : (void)(((double *)b)[i] = bd[i]);
    const int64_t lda = ta ? m : k, ldb = tb ? k : n;
    /* v = 0..2: 1, 2, 3 threads; v = 3: inside a parallel region of 2; v = 4: 2 threads again */
    for (int v = 0; v < 5; v++) {
        if (v == 3) {
            omp_set_num_threads(2);
#pragma omp parallel num_threads(2)
            {
#pragma omp single
                wk_cpu_gemm(ct, ta, tb, m, n, k, a, lda, b, ldb, c[v], n);
            }
            continue;
        }
        omp_set_num_threads(v == 4 ? 2 : v + 1);
        wk_cpu_gemm(ct, ta, tb, m, n, k, a, lda, b, ldb, c[v], n);
    }
    omp_set_num_threads(2);
    const double eps = ct == WK_DTYPE_F32 ? FLT_EPSILON : DBL_EPSILON;
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 3; i++)
        for (int64_t j = 0; j < n && bad < 3; j++) {
            long double ref = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                const long double t = (long double)at(ad, ta, i, p, m, k) * at(bd, tb, p, j, k, n);
                ref += t;
                mag += fabsl(t);
            }
            const double got = ct == WK_DTYPE_F32 ? ((float *)c[0])[i * n + j] : ((double *)c[0])[i * n + j];
            if (fabsl(got - ref) > (long double)(k + 1) * eps * mag + 1e-300)
                bad += TEST_CHECK(0, "%s %lldx%lldx%lld ta %d tb %d: c[%lld][%lld] = %.17g, want %.17Lg",
                                  wk_dtype_name(ct), (long long)m, (long long)n, (long long)k, ta, tb,
                                  (long long)i, (long long)j, got, ref)
                           ? 0
                           : 1;
        }
    if (!bad)
        TEST_CHECK(1, "values");
    for (int v = 1; v < 5; v++)
        TEST_CHECK(memcmp(c[0], c[v], (size_t)(m * n) * es) == 0,
                   "%s %lldx%lldx%lld ta %d tb %d: bits differ from 1 thread (variant %d)",
                   wk_dtype_name(ct), (long long)m, (long long)n, (long long)k, ta, tb, v);
    for (int v = 0; v < 5; v++)
        free(c[v]);
    free(a), free(b), free(ad), free(bd);
}

/* wk_matmul of f32 a (nb x m x k) @ b (nb x k x n) on 1 and 2 threads: the reference and the
 * same bits (batches spread over threads when nb > 1, the single gemm cut when nb = 1). */
static void check_matmul(wk_device *dev, int64_t nb, int64_t m, int64_t n, int64_t k)
{
    const int64_t na = nb * m * k, nbb = nb * k * n, nc = nb * m * n;
    float *a = malloc((size_t)na * 4), *b = malloc((size_t)nbb * 4);
    float *c1 = malloc((size_t)nc * 4), *c2 = malloc((size_t)nc * 4);
    for (int64_t i = 0; i < na; i++)
        a[i] = (float)urand();
    for (int64_t i = 0; i < nbb; i++)
        b[i] = (float)urand();
    wk_storage *sa = testlib_upload(dev, WK_DTYPE_F32, a, (size_t)na);
    wk_storage *sb = testlib_upload(dev, WK_DTYPE_F32, b, (size_t)nbb);
    const int64_t da[3] = {nb, m, k}, db[3] = {nb, k, n};
    wk_layout la, lb;
    wk_layout_contiguous(&la, 3, da);
    wk_layout_contiguous(&lb, 3, db);
    for (int t = 1; t <= 2; t++) {
        wk_storage *so = NULL;
        omp_set_num_threads(t);
        if (TEST_EQ_STATUS(wk_matmul(&so, sa, &la, sb, &lb), WK_OK))
            testlib_download(t == 1 ? c1 : c2, (size_t)nc, so);
        wk_storage_free(so);
    }
    omp_set_num_threads(2);
    int bad = 0;
    for (int64_t z = 0; z < nb && !bad; z++)
        for (int64_t i = 0; i < m && !bad; i++)
            for (int64_t j = 0; j < n && !bad; j++) {
                double ref = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    const double t = (double)a[(z * m + i) * k + p] * b[(z * k + p) * n + j];
                    ref += t, mag += fabs(t);
                }
                if (fabs(c1[(z * m + i) * n + j] - ref) > (double)(k + 1) * FLT_EPSILON * mag)
                    bad = !TEST_CHECK(0, "matmul %lld x %lldx%lldx%lld: [%lld][%lld][%lld] = %.9g, want %.9g",
                                      (long long)nb, (long long)m, (long long)n, (long long)k,
                                      (long long)z, (long long)i, (long long)j, c1[(z * m + i) * n + j], ref);
            }
    if (!bad)
        TEST_CHECK(1, "matmul values");
    TEST_CHECK(memcmp(c1, c2, (size_t)nc * 4) == 0, "matmul %lld x %lldx%lldx%lld: 1 and 2 threads differ",
               (long long)nb, (long long)m, (long long)n, (long long)k);
    wk_storage_free(sa), wk_storage_free(sb);
    free(a), free(b), free(c1), free(c2);
}

int main(void)
{
    printf("gemm threading: %s\n", wk_cpu_gemm_threading());
    const shape shapes[] = {
        {517, 131, 67}, /* cut along m, 517 not a multiple of 16 */
        {96, 700, 41},  /* cut along n */
        {33, 35, 200},  /* too small to cut (231,000 < 2^18 products): one call */
        {2, 2000, 90},  /* m of 2: cut along n */
        {1000, 17, 20}, /* n of 17 */
        {64, 64, 64},   /* exactly at the threshold */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 4; t++) {
            check_case(WK_DTYPE_F32, shapes[i], t & 1, t >> 1);
            check_case(WK_DTYPE_F64, shapes[i], t & 1, t >> 1);
        }
    wk_device *dev = NULL;
    if (TEST_EQ_STATUS(wk_device_open(&dev, "cpu"), WK_OK)) {
        check_matmul(dev, 1, 300, 260, 70);  /* one gemm, cut */
        check_matmul(dev, 12, 40, 33, 50);   /* batches spread over threads */
        check_matmul(dev, 3, 200, 100, 40);  /* 3 batches on 2 threads: each cut */
        wk_device_close(dev);
    }
    return testlib_summary();
}
