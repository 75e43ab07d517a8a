/* test_cpu_fdot.c: the CPU's product with float weights (src/cpu/cpu_fdot.h: W of F32, F16 or
 * BF16, x not quantized), through wk_cpu_fmatmul (the work of wk_qmatmul for these types).
 *   1. Against a float64 reference computed here: x (as its dtype holds it) times W decoded
 *      exactly, summed in double. Bound per output, derived from the order of cpu_fdot.h for
 *      m <= 8: each of the 16 lane chains has at most ceil(k / 16) fmaf roundings of at most
 *      2^-24 of its running sum (<= S = sum_i |x_i w_i|), the tree 4 additions: (k / 16 + 5) 2^-24 S;
 *      for m > 8 the gemm's f32 sums in any order: k 2^-24 S; plus one rounding to dt (u |out|).
 *   2. Bit identity for m <= 8: the scalar, AVX2 and AVX-512 paths (those this CPU runs) and 1 and
 *      2 threads give the same bits, NaN where NaN; the public wk_qmatmul gives them too.
 *      The AMX-BF16 product (m >= 16, F16/BF16 W, where the CPU has it): each product within
 *      2^-15 of exact (2^9 of the 2^-24 units) plus 1.5 k roundings of the tile's f32 sums.
 *   3. Non-finite values: an inf in W or x makes its outputs inf or NaN exactly as the f64 sum
 *      does (+inf, -inf, or NaN for inf - inf and inf * 0), on every path but the AMX-BF16
 *      product, where they are NaN.
 *   4. m > 8: wk_qmatmul on 1 thread gives the bits it gives on 2.
 * Shapes: m in {1, 2, 5, 8} (decode) and {9, 33} (the gemm), k in {1, 15, 16, 17, 48, 100, 1000}
 * (tails of the 16 lanes), n in {1, 7, 40}; and 530 x 70 x 1100, 13 x 33 x 2050 (the blocks of
 * the AVX-512 product of many rows). Run: ctest -R test_cpu_fdot (seconds). */
#include "cpu/cpu_fdot.h"
#include "cpu/cpu_qdot.h"
#include "testlib.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rs = 99u;
static double urand(void)
{
    rs ^= rs << 13, rs ^= rs >> 17, rs ^= rs << 5;
    return (double)rs / 2147483648.0 - 1.0;
}

static int same(float a, float b)
{
    return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a);
}

/* x (m, k) of dt, W (n, k) of qt; nonfinite: an inf in W row 0 (at the last element) and a -inf
 * in x row 1 (at the first). */
static void one_case(wk_device *cpu, wk_qtype qt, wk_dtype dt, int64_t m, int64_t n, int64_t k,
                     int nonfinite)
{
    const size_t wes = qt == WK_QTYPE_F32 ? 4 : 2, xes = dt == WK_DTYPE_F32 ? 4 : 2;
    unsigned char *w = malloc((size_t)(n * k) * wes), *x = malloc((size_t)(m * k) * xes);
    double *wd = malloc(sizeof(double) * (size_t)(n * k)), *xd = malloc(sizeof(double) * (size_t)(m * k));
    float *got = malloc(sizeof(float) * (size_t)(m * n)), *want = malloc(sizeof(float) * (size_t)(m * n));
    uint16_t *oh = malloc(sizeof(uint16_t) * (size_t)(m * n));
    wk_storage *xs = NULL, *ws = NULL, *os = NULL;
    char what[128];
    snprintf(what, sizeof what, "%s W, %s x, m=%lld n=%lld k=%lld%s", wk_qtype_name(qt),
             wk_dtype_name(dt), (long long)m, (long long)n, (long long)k,
             nonfinite ? ", inf in W and x" : "");
    if (!TEST_CHECK(w && x && wd && xd && got && want && oh, "out of memory"))
        goto out;
    for (int64_t i = 0; i < n * k; i++) {
        float v = (float)urand();
        if (nonfinite && i == k - 1)
            v = INFINITY;
        if (qt == WK_QTYPE_F32)
            memcpy(w + 4 * i, &v, 4), wd[i] = v;
        else {
            const uint16_t h = qt == WK_QTYPE_F16 ? wk_f32_to_f16(v) : wk_f32_to_bf16(v);
            memcpy(w + 2 * i, &h, 2);
            wd[i] = qt == WK_QTYPE_F16 ? wk_f16_to_f32(h) : wk_bf16_to_f32(h);
        }
    }
    for (int64_t i = 0; i < m * k; i++) {
        float v = (float)urand();
        if (nonfinite && m > 1 && i == k)
            v = -INFINITY;
        if (dt == WK_DTYPE_F32)
            memcpy(x + 4 * i, &v, 4), xd[i] = v;
        else {
            const uint16_t h = dt == WK_DTYPE_F16 ? wk_f32_to_f16(v) : wk_f32_to_bf16(v);
            memcpy(x + 2 * i, &h, 2);
            xd[i] = dt == WK_DTYPE_F16 ? wk_f16_to_f32(h) : wk_bf16_to_f32(h);
        }
    }
    /* 2. every path (m <= 8 chooses by WICK_CPU_QDOT: run each via the rows functions) */
    int first = 1;
    static const wk_fdot_rows_fn FN[3] = {wk_fdot_rows_scalar, wk_fdot_rows_avx2, wk_fdot_rows_avx512};
    static const int LEVEL[3] = {WK_QDOT_SCALAR, WK_QDOT_AVX2, WK_QDOT_AVX512};
    float *xf = malloc(sizeof(float) * (size_t)(m * k));
    if (!xf)
        goto out;
    for (int64_t i = 0; i < m * k; i++)
        xf[i] = (float)xd[i];
    for (int p = 0; p < 3 && m <= 8; p++) {
        if (!wk_cpu_qdot_can(LEVEL[p]))
            continue;
        for (int th = 1; th <= 2; th++) {
            omp_set_num_threads(th);
#pragma omp parallel for schedule(static)
            for (int64_t j = 0; j < n; j += 4)
                FN[p]((int)qt, got, xf, (int)m, w, n, k, j, j + 4 < n ? j + 4 : n);
            if (first) {
                memcpy(want, got, sizeof(float) * (size_t)(m * n));
                first = 0;
                continue;
            }
            size_t i = 0;
            while (i < (size_t)(m * n) && same(got[i], want[i]))
                i++;
            TEST_CHECK(i == (size_t)(m * n), "%s: path %d, %d threads: out[%zu] = %a, first path %a",
                       what, p, th, i, i < (size_t)(m * n) ? (double)got[i] : 0.0,
                       i < (size_t)(m * n) ? (double)want[i] : 0.0);
        }
    }
    free(xf);
    omp_set_num_threads(2);
    /* the public op (f32 decode: the same bits as the paths) */
    const wk_layout lx = testlib_layout2(m, k);
    xs = testlib_upload(cpu, dt, x, (size_t)(m * k));
    ws = testlib_upload(cpu, WK_DTYPE_U8, w, (size_t)(n * k) * wes);
    if (!xs || !ws || !TEST_EQ_STATUS(wk_qmatmul(&os, xs, &lx, ws, qt, n, k), WK_OK))
        goto out;
    if (dt == WK_DTYPE_F32) {
        if (testlib_download(got, (size_t)(m * n), os))
            goto out;
    } else {
        if (testlib_download(oh, (size_t)(m * n), os))
            goto out;
        for (int64_t i = 0; i < m * n; i++)
            got[i] = dt == WK_DTYPE_F16 ? wk_f16_to_f32(oh[i]) : wk_bf16_to_f32(oh[i]);
    }
    if (m > 8) { /* the product of many rows: the same bits on 1 thread as on 2 */
        wk_storage *o1 = NULL;
        float *g1 = malloc(sizeof(float) * (size_t)(m * n));
        uint16_t *h1 = malloc(sizeof(uint16_t) * (size_t)(m * n));
        omp_set_num_threads(1);
        const wk_status st = wk_qmatmul(&o1, xs, &lx, ws, qt, n, k);
        omp_set_num_threads(2);
        if (TEST_CHECK(g1 && h1, "out of memory") && TEST_EQ_STATUS(st, WK_OK)) {
            int diff = 0;
            if (dt == WK_DTYPE_F32) {
                if (!testlib_download(g1, (size_t)(m * n), o1))
                    for (int64_t i = 0; i < m * n; i++)
                        diff += !same(g1[i], got[i]);
            } else if (!testlib_download(h1, (size_t)(m * n), o1)) {
                diff = memcmp(h1, oh, sizeof(uint16_t) * (size_t)(m * n)) != 0;
            }
            TEST_CHECK(!diff, "%s: wk_qmatmul on 1 thread differs from 2 threads", what);
        }
        wk_storage_free(o1), free(g1), free(h1);
    }
    if (m <= 8 && dt == WK_DTYPE_F32 && getenv("WICK_CPU_QDOT") == NULL) {
        size_t i = 0;
        while (i < (size_t)(m * n) && same(got[i], want[i]))
            i++;
        TEST_CHECK(i == (size_t)(m * n), "%s: wk_qmatmul out[%zu] = %a, the paths %a", what, i,
                   i < (size_t)(m * n) ? (double)got[i] : 0.0,
                   i < (size_t)(m * n) ? (double)want[i] : 0.0);
    }
    /* 1. and 3. against the f64 sum; the AMX-BF16 product (16 rows or more of an F16/BF16 W on
     * a CPU with it): each product within 2^-15 of exact, the tile's f32 sums of 3 terms per pair
     * of k, any non-finite input NaN (cpu_fgemm_amx.c) */
    const int bf16x = qt != WK_QTYPE_F32 && m >= 16 && wk_cpu_qdot_path() == WK_QDOT_AMX &&
                      wk_fgemm_amx_ready();
    const double u = dt == WK_DTYPE_BF16 ? 0x1p-8 : dt == WK_DTYPE_F16 ? 0x1p-11 : 0x1p-24;
    const double rounds = bf16x ? 1.5 * (double)k + 4 + 0x1p9 : m <= 8 ? (double)(k / 16) + 6 : (double)k + 1;
    for (int64_t r = 0, bad = 0; r < m && !bad; r++)
        for (int64_t j = 0; j < n && !bad; j++) {
            double s = 0, sa = 0;
            for (int64_t i = 0; i < k; i++)
                s += xd[r * k + i] * wd[j * k + i], sa += fabs(xd[r * k + i] * wd[j * k + i]);
            const double g = got[r * n + j];
            if (!isfinite(s) || isnan(s)) {
                bad = !TEST_CHECK((isnan(s) && isnan(g)) || g == s || (bf16x && isnan(g)),
                                  "%s: out[%lld,%lld] = %g, want %g", what, (long long)r,
                                  (long long)j, g, s);
                continue;
            }
            const double tol = rounds * 0x1p-24 * sa + u * fabs(s) + 1e-30;
            bad = !TEST_CHECK(fabs(g - s) <= tol, "%s: out[%lld,%lld] = %.9g, want %.9g (tol %.3g)",
                              what, (long long)r, (long long)j, g, s, tol);
        }
out:
    wk_storage_free(xs), wk_storage_free(ws), wk_storage_free(os);
    free(w), free(x), free(wd), free(xd), free(got), free(want), free(oh);
}

int main(void)
{
    wk_device *cpu;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    static const wk_qtype QT[3] = {WK_QTYPE_F32, WK_QTYPE_F16, WK_QTYPE_BF16};
    static const wk_dtype DT[3] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16};
    static const int64_t MS[] = {1, 2, 5, 8, 9, 33}, KS[] = {1, 15, 16, 17, 48, 100, 1000}, NS[] = {1, 7, 40};
    for (int q = 0; q < 3; q++) {
        for (int mi = 0; mi < 6; mi++)
            for (int ki = 0; ki < 7; ki++)
                for (int ni = 0; ni < 3; ni++)
                    one_case(cpu, QT[q], WK_DTYPE_F32, MS[mi], NS[ni], KS[ki], 0);
        for (int d = 1; d < 3; d++)
            one_case(cpu, QT[q], DT[d], 5, 7, 100, 0), one_case(cpu, QT[q], DT[d], 33, 7, 100, 0);
        for (int mi = 0; mi < 6; mi++)
            one_case(cpu, QT[q], WK_DTYPE_F32, MS[mi], 7, 17, 1);
        /* the AVX-512 product's blocks: x rows past 528 (a second block), k past its chunk of
         * 1024, weight rows past a panel of 32 with a tail; rows 13 (a partial group of 12) */
        one_case(cpu, QT[q], WK_DTYPE_F32, 530, 70, 1100, 0);
        one_case(cpu, QT[q], WK_DTYPE_F32, 13, 33, 2050, 0);
        one_case(cpu, QT[q], WK_DTYPE_F32, 13, 33, 100, 1);
    }
    wk_device_close(cpu);
    return testlib_summary();
}
