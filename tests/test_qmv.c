/* test_qmv.c: the decode matrix-vector path of wk_qmatmul (x with 1..8 rows against a GGML
 * block-quantized W), on every device, every block type, every row count 1..8 and, on a GPU,
 * every kernel of kernels/qmv.cu forced in turn (WICK_QMV = warp, warp2, warp4, split, stream,
 * chunks, mma, rowpair, words, words4), then the default choice (src/gpu/gpu_quant.c qmv_pick):
 * warp and split have kernels for 1 row, warp2 and warp4 for 1 and 8, stream and chunks for 1
 * row where they apply, words and words4 for 1 row of Q4_0 and Q8_0 with an even number of
 * blocks per row, mma one for 1..8 rows of the 32-element types, rowpair for 2 and 4; a kernel
 * that cannot run a case runs qmv_pick's fallback (warp2 at 1 and 8 rows, rowpair at 2 and 4).
 * x and out in f32, f16 and bf16. On a GPU also 9 and 16 rows (qmm: W dequantized to x's dtype
 * in chunks under WICK_QMM_CHUNK_MIB, each chunk through the GEMM), within the same bound.
 * Expected values: f64 sums of x times W decoded by the independent reference decoder
 * (tests/reference/ref_quant.c).
 *
 * Bound per output element (derived, not fitted): with s = sum x_i w_i and sa = sum |x_i w_i|,
 *   |got - s| <= ulp(dt) |s| + 1e-5 sa                    (f32 sums, rounding to dt)
 *              + sum over blocks b of amax_b / 254 * sum_{i in b} |w_i|   (x quantized)
 * (ulp: 2^-24 f32, 2^-11 f16, 2^-8 bf16) the last term because the GPU kernels and the CPU's
 * decode path (not WICK_CPU_QDOT=exact) quantize x to int8 per block of 32 (scale amax / 127,
 * so each element moves by at most half a step); the integer dot products are exact. For bf16,
 * x is first rounded to bf16 (the values compared are those of the uploaded bf16 x). Also: a
 * NaN in x makes its row's outputs NaN; n not a multiple of any group's column count, k of
 * one block (fewer sub-blocks than lanes) and k = 2048 (several trips per lane). Float weights
 * (F32, F16, BF16 in any pairing with x) too: pmv_case (on a GPU also with the k-split kernels
 * forced: WICK_QMV = pmv_k2, pmv_k4). */
#include "ref_quant.h"
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const wk_qtype QTS[] = {WK_QTYPE_Q4_0, WK_QTYPE_Q4_1, WK_QTYPE_Q5_0, WK_QTYPE_Q5_1,
                               WK_QTYPE_Q8_0, WK_QTYPE_Q8_1, WK_QTYPE_Q2_K, WK_QTYPE_Q3_K,
                               WK_QTYPE_Q4_K, WK_QTYPE_Q5_K, WK_QTYPE_Q6_K, WK_QTYPE_Q8_K};

static uint32_t rng_state = 12345u;
static double urand(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return ((double)(rng_state >> 8) / 16777216.0) * 2.0 - 1.0;
}

/* x patterns of qmv_case: random blocks of different scales; one NaN; and the adversarial
 * rows of issue 13: a large offset with a small spread (1e4 + 1e-2 u), a constant row, values
 * at the edge of the dtype's range (near its maximum; subnormals and +-0), and +inf / -inf /
 * NaN at the first, last and a middle position of different rows. */
enum { X_RANDOM, X_NAN, X_OFFSET, X_CONST, X_HUGE, X_TINY, X_NONFINITE };

static double x_value(int xpat, wk_dtype dt, int64_t r, int64_t i, int64_t k)
{
    const double big = dt == WK_DTYPE_F16 ? 60000.0 : dt == WK_DTYPE_BF16 ? 3.0e38 : 3.0e38;
    const double tiny = dt == WK_DTYPE_F16 ? 5.9604644775390625e-8 : 1.0e-39; /* subnormal */
    switch (xpat) {
    case X_OFFSET: return 1e4 + 1e-2 * urand();
    case X_CONST: return 3.815;
    case X_HUGE: return big * (0.5 + 0.5 * fabs(urand())) * (i % 2 ? -1 : 1) / (double)k;
    case X_TINY: return i % 3 == 0 ? (i % 2 ? -0.0 : 0.0) : tiny * (double)(1 + i % 5) * (r % 2 ? -1 : 1);
    case X_NONFINITE: {
        const int64_t at = r % 3 == 0 ? 0 : r % 3 == 1 ? k - 1 : k / 2;
        return i == at ? (r % 3 == 0 ? INFINITY : r % 3 == 1 ? -INFINITY : NAN) : urand();
    }
    default: return urand() * (1 + (double)(i % 7)); /* blocks of different scales */
    }
}

/* Weight patterns: quantized random values, or (Q4_0 and Q8_0, whose blocks start with their
 * f16 scale) blocks whose scale is cycled through the f16 maximum, the smallest normal, the
 * smallest subnormal and 0, every other block with all quants equal. */
enum { W_RANDOM, W_SCALES };

/* One case: W (n, k) of qt quantized on the CPU from random values, x (m, k) of dt on dev. */
static void qmv_case(wk_device *dev, wk_device *cpu, wk_qtype qt, wk_dtype dt, int64_t m,
                     int64_t n, int64_t k, const char *variant, int xpat, int wpat)
{
    const size_t nx = (size_t)(m * k), nw = (size_t)(n * k), no = (size_t)(m * n);
    double *xv = malloc(nx * sizeof(double)), *wd = malloc(nw * sizeof(double));
    double *wsrc = malloc(nw * sizeof(double)), *got = malloc(no * sizeof(double));
    float *wdf = malloc(nw * sizeof(float));
    wk_storage *wf = NULL, *wq = NULL, *wqd = NULL, *xs = NULL, *o = NULL;
    unsigned char *qbytes = NULL;
    if (!TEST_CHECK(xv && wd && wsrc && got && wdf, "out of host memory"))
        goto out;
    for (size_t i = 0; i < nw; i++)
        wsrc[i] = urand();
    for (size_t i = 0; i < nx; i++)
        xv[i] = x_value(xpat, dt, (int64_t)i / k, (int64_t)i % k, k);
    if (xpat == X_NAN)
        xv[(size_t)(m - 1) * (size_t)k + (size_t)k / 2] = NAN;
    wf = testlib_upload_f64(cpu, WK_DTYPE_F32, wsrc, nw);
    const wk_layout lw = testlib_layout(2, (const int64_t[]){n, k});
    if (!wf || !TEST_EQ_STATUS(wk_quantize(&wq, qt, wf, &lw), WK_OK))
        goto out;
    const size_t qb = (size_t)(n * k / ref_qblock_elems(qt) * ref_qblock_bytes(qt));
    qbytes = malloc(qb);
    if (!TEST_CHECK(qbytes != NULL, "out of host memory") ||
        !TEST_EQ_STATUS(wk_storage_to_host(qbytes, qb, wq), WK_OK))
        goto out;
    if (wpat == W_SCALES) {
        static const unsigned char scales[4][2] = {{0xFF, 0x7B}, {0x00, 0x04}, {0x01, 0x00}, {0, 0}};
        const size_t bb = (size_t)ref_qblock_bytes(qt);
        for (size_t b = 0; b < qb / bb; b++) {
            memcpy(qbytes + b * bb, scales[b % 4], 2);
            if (b % 2)
                memset(qbytes + b * bb + 2, qt == WK_QTYPE_Q8_0 ? 0x7F : 0x3C, bb - 2);
        }
    }
    if (!TEST_EQ_STATUS(ref_dequantize(wdf, WK_DTYPE_F32, qt, qbytes, (int64_t)nw), WK_OK))
        goto out;
    for (size_t i = 0; i < nw; i++)
        wd[i] = wdf[i];
    wqd = testlib_upload(dev, WK_DTYPE_U8, qbytes, qb);
    xs = testlib_upload_f64(dev, dt, xv, nx);
    if (!wqd || !xs || testlib_download_f64(xv, nx, xs)) /* x as stored in dt */
        goto out;
    const wk_layout lx = testlib_layout(2, (const int64_t[]){m, k});
    if (!TEST_EQ_STATUS(wk_qmatmul(&o, xs, &lx, wqd, qt, n, k), WK_OK) ||
        testlib_download_f64(got, no, o))
        goto out;
    /* x is quantized to int8 blocks on the GPUs and, for these rows <= 8, on the CPU unless
     * WICK_CPU_QDOT=exact (docs/semantics.md) */
    const char *qenv = getenv("WICK_CPU_QDOT");
    const int gpu = wk_device_backend(dev) != WK_BACKEND_CPU || !qenv || strcmp(qenv, "exact") != 0;
    const double ulp = dt == WK_DTYPE_BF16 ? 1.0 / 256 : dt == WK_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 16777216;
    int bad = 0;
    for (int64_t r = 0; r < m && !bad; r++) {
        const double *x = xv + r * k;
        int row_nonfinite = 0;
        for (int64_t i = 0; i < k; i++)
            row_nonfinite |= !isfinite(x[i]);
        for (int64_t j = 0; j < n && !bad; j++) {
            const double *w = wd + j * k;
            double s = 0, sa = 0;
            for (int64_t i = 0; i < k; i++) {
                s += x[i] * w[i];
                sa += fabs(x[i] * w[i]);
            }
            /* a NaN or infinity in x: the int8 path makes the row NaN (docs/semantics.md); the
             * CPU's exact path gives what the float sum gives (NaN, or the infinity) */
            if (row_nonfinite) {
                const double g = got[r * n + j];
                bad = !TEST_CHECK(gpu || isnan(s) ? isnan(g) : g == s,
                                  "qmv %s %s m=%lld variant %s: out[%lld,%lld] = %g, want %g",
                                  wk_qtype_name(qt), wk_dtype_name(dt), (long long)m, variant,
                                  (long long)r, (long long)j, g, gpu ? NAN : s);
                continue;
            }
            /* + the absolute spacing near 0: half of dt's smallest subnormal for the final
             * rounding, and f32's (2^-149) for each product and sum that lands below f32's
             * normal range */
            const double sub = dt == WK_DTYPE_F16 ? 0x1p-25 : dt == WK_DTYPE_BF16 ? 0x1p-134 : 0;
            double tol = ulp * fabs(s) + 1e-5 * sa + sub + 2.0 * (double)k * 0x1p-149;
            for (int64_t b0 = 0; gpu && b0 < k; b0 += 32) {
                double amax = 0, sw = 0;
                for (int64_t i = b0; i < b0 + 32; i++) {
                    amax = fmax(amax, fabs(x[i]));
                    sw += fabs(w[i]);
                }
                /* + the scale's own rounding when amax / 127 is an f32 subnormal */
                tol += amax / 254.0 * sw * (1 + 1e-6) + 128.0 * 0x1p-150 * sw;
            }
            /* past f16's range the output rounds to an infinity (65520 and up: fpconv.h) */
            const double lim = dt == WK_DTYPE_F16 ? 65520.0 : 3.4028235677973366e38;
            const double g = got[r * n + j];
            const int ok = fabs(s) - tol >= lim ? g == copysign(INFINITY, s)
                           : fabs(g - s) <= tol || (fabs(s) + tol >= lim && g == copysign(INFINITY, s));
            bad = !TEST_CHECK(ok,
                              "qmv %s %s m=%lld n=%lld k=%lld variant %s: out[%lld,%lld] = %.9g, "
                              "want %.9g (tol %.3g)", wk_qtype_name(qt), wk_dtype_name(dt),
                              (long long)m, (long long)n, (long long)k, variant, (long long)r,
                              (long long)j, got[r * n + j], s, tol);
        }
    }
out:
    wk_storage_free(o);
    wk_storage_free(xs);
    wk_storage_free(wqd);
    wk_storage_free(wq);
    wk_storage_free(wf);
    free(qbytes);
    free(xv);
    free(wd);
    free(wsrc);
    free(got);
    free(wdf);
}

/* Float weights (WK_QTYPE_F32/F16/BF16, GPU kernels pmv<R>_<w>_<x>): W (n, k) of wt and x
 * (m, k) of dt hold values exact in their types (uploaded, then read back); expected: the f64
 * sum; bound: ulp(dt) |s| for the rounding to dt plus (k + 32) 2^-24 sa for f32 sums in any
 * order; a NaN in x or an infinity in W gives what the f64 sum gives. k = 515 runs the
 * element-wise path (rows not 16-byte multiples), 1024 the vector one, 2600 its trips of 4
 * chunks and the single chunks after them. */
static void pmv_case(wk_device *dev, wk_qtype wt, wk_dtype dt, int64_t m, int64_t n, int64_t k,
                     int with_nan)
{
    const wk_dtype wdt = wt == WK_QTYPE_F32 ? WK_DTYPE_F32 : wt == WK_QTYPE_F16 ? WK_DTYPE_F16
                                                                                : WK_DTYPE_BF16;
    const size_t nx = (size_t)(m * k), nw = (size_t)(n * k), no = (size_t)(m * n);
    double *xv = malloc(nx * sizeof(double)), *wv = malloc(nw * sizeof(double));
    double *got = malloc(no * sizeof(double));
    wk_storage *ws = NULL, *wb = NULL, *xs = NULL, *o = NULL;
    void *wbytes = malloc(nw * wk_dtype_size(wdt));
    if (!TEST_CHECK(xv && wv && got && wbytes, "out of host memory"))
        goto out;
    for (size_t i = 0; i < nw; i++)
        wv[i] = urand();
    for (size_t i = 0; i < nx; i++)
        xv[i] = urand() * (1 + (double)(i % 7));
    /* the decoders' edge cases in W: an f16 subnormal, -0, the f16 maximum, an infinity */
    wv[0] = 3 * 5.9604644775390625e-8;
    wv[1] = -0.0;
    wv[(size_t)k + 2] = -65504.0;
    if (with_nan) {
        xv[(size_t)(m - 1) * (size_t)k + (size_t)k / 2] = NAN;
        wv[(size_t)(n - 1) * (size_t)k + 1] = INFINITY;
    }
    ws = testlib_upload_f64(dev, wdt, wv, nw);
    xs = testlib_upload_f64(dev, dt, xv, nx);
    if (!ws || !xs || testlib_download_f64(wv, nw, ws) || testlib_download_f64(xv, nx, xs) ||
        !TEST_EQ_STATUS(wk_storage_to_host(wbytes, nw, ws), WK_OK))
        goto out;
    wb = testlib_upload(dev, WK_DTYPE_U8, wbytes, nw * wk_dtype_size(wdt)); /* raw bytes, as GGUF */
    const wk_layout lx = testlib_layout(2, (const int64_t[]){m, k});
    if (!wb || !TEST_EQ_STATUS(wk_qmatmul(&o, xs, &lx, wb, wt, n, k), WK_OK) ||
        testlib_download_f64(got, no, o))
        goto out;
    const double ulp = dt == WK_DTYPE_BF16 ? 1.0 / 256 : dt == WK_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 16777216;
    int bad = 0;
    for (int64_t r = 0; r < m && !bad; r++) {
        const double *x = xv + r * k;
        int row_nan = 0;
        for (int64_t i = 0; i < k; i++)
            row_nan |= isnan(x[i]);
        for (int64_t j = 0; j < n && !bad; j++) {
            const double *w = wv + j * k, g = got[r * n + j];
            double s = 0, sa = 0;
            for (int64_t i = 0; i < k; i++) {
                s += x[i] * w[i];
                sa += fabs(x[i] * w[i]);
            }
            const double tol = ulp * fabs(s) + (double)(k + 32) / 16777216.0 * sa;
            /* past f16's range the output rounds to an infinity (65520 and up: fpconv.h) */
            const double lim = dt == WK_DTYPE_F16 ? 65520.0 : INFINITY;
            const int ok = row_nan || isnan(s) ? isnan(g)
                           : isinf(s) || fabs(s) - tol >= lim ? g == copysign(INFINITY, s)
                           : fabs(g - s) <= tol || (fabs(s) + tol >= lim && g == copysign(INFINITY, s));
            bad = !TEST_CHECK(ok,
                              "pmv %s x %s m=%lld n=%lld k=%lld: out[%lld,%lld] = %.9g, want "
                              "%.9g (tol %.3g)", wk_qtype_name(wt), wk_dtype_name(dt),
                              (long long)m, (long long)n, (long long)k, (long long)r,
                              (long long)j, g, row_nan ? NAN : s, tol);
        }
    }
out:
    wk_storage_free(o);
    wk_storage_free(xs);
    wk_storage_free(wb);
    wk_storage_free(ws);
    free(wbytes);
    free(xv);
    free(wv);
    free(got);
}

/* WICK_TEST_QMV_VARIANTS=mma,chunks (for the sanitizer runs): only these kernels of the loop
 * over all of them; unset: every one. */
static int variant_wanted(const char *v)
{
    const char *e = getenv("WICK_TEST_QMV_VARIANTS");
    if (!e || !*e)
        return 1;
    const size_t n = strlen(v);
    for (const char *p = e; *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p))
        if (strncmp(p, v, n) == 0 && (p[n] == ',' || p[n] == 0))
            return 1;
    return 0;
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int nd = testlib_devices(specs);
    wk_device *cpu;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    static const char *const gpu_variants[] = {"warp",  "warp2",   "warp4", "split",
                                               "stream", "chunks", "mma",   "rowpair",
                                               "words", "words4", "default"};
    /* WICK_TEST_QUICK=1 (for the sanitizer runs of tools/device/decode.sh): rows 1, 3 and 8 */
    const char *quick_env = getenv("WICK_TEST_QUICK");
    const int quick = quick_env && *quick_env && *quick_env != '0';
    for (int d = 0; d < nd; d++) {
        wk_device *dev;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[d]), WK_OK))
            continue;
        const int gpu = wk_device_backend(dev) != WK_BACKEND_CPU;
        const int nvar = gpu ? (int)(sizeof gpu_variants / sizeof gpu_variants[0]) : 1;
        for (int v = 0; v < nvar; v++) {
            if (gpu && !variant_wanted(gpu_variants[v]))
                continue;
            setenv("WICK_QMV", gpu_variants[v], 1);
            for (size_t q = 0; q < sizeof QTS / sizeof QTS[0]; q++) {
                const wk_qtype qt = QTS[q];
                const int64_t be = ref_qblock_elems(qt);
                /* words runs Q4_0 and Q8_0 only (the others would run warp2, tested above) */
                if (!strncmp(gpu_variants[v], "words", 5) && qt != WK_QTYPE_Q4_0 &&
                    qt != WK_QTYPE_Q8_0)
                    continue;
                for (int64_t m = 1; m <= 8; m += quick ? (m == 1 ? 2 : 5) : 1) {
                    qmv_case(dev, cpu, qt, WK_DTYPE_F32, m, 37, 2048, gpu_variants[v], X_RANDOM, W_RANDOM);
                    qmv_case(dev, cpu, qt, WK_DTYPE_F32, m, 5, be, gpu_variants[v], X_RANDOM, W_RANDOM);
                }
                /* k = 2304: 72 sub-blocks, stream's tile of 64 and a partial one (rows of a
                 * multiple of 16 bytes for Q4_0..Q5_1, Q8_0, Q4_K, Q5_K; warp2 runs for the
                 * rest) */
                qmv_case(dev, cpu, qt, WK_DTYPE_F32, 1, 21, 2304, gpu_variants[v], X_RANDOM, W_RANDOM);
                qmv_case(dev, cpu, qt, WK_DTYPE_BF16, 3, 19, 512, gpu_variants[v], X_RANDOM, W_RANDOM);
                qmv_case(dev, cpu, qt, WK_DTYPE_F16, 8, 19, 512, gpu_variants[v], X_RANDOM, W_RANDOM);
                qmv_case(dev, cpu, qt, WK_DTYPE_F32, 2, 11, 512, gpu_variants[v], X_NAN, W_RANDOM);
                /* adversarial x on 1, 2, 3 and 8 blocks, every float dtype */
                static const wk_dtype ADT[] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16};
                for (int xp = X_OFFSET; xp <= X_NONFINITE; xp++)
                    for (int di = 0; di < 3; di++)
                        for (int64_t nb = 1; nb <= 8; nb = nb == 3 ? 8 : nb + 1)
                            qmv_case(dev, cpu, qt, ADT[di], xp == X_NONFINITE ? 3 : 2, 9, nb * be,
                                     gpu_variants[v], xp, W_RANDOM);
                if (qt == WK_QTYPE_Q4_0 || qt == WK_QTYPE_Q8_0) {
                    for (int64_t m = 1; m <= 8; m += 7)
                        qmv_case(dev, cpu, qt, WK_DTYPE_F32, m, 16, 8 * be, gpu_variants[v], X_RANDOM, W_SCALES);
                    /* k = 8256: 258 blocks, an even count (words runs), more than two trips
                     * of 128 lanes for the first lanes; x in f16 */
                    qmv_case(dev, cpu, qt, WK_DTYPE_F16, 1, 13, 8256, gpu_variants[v], X_RANDOM, W_RANDOM);
                }
            }
        }
        /* chunks (one row of x): rows of one chunk of 256 (k 256), 9 (k 2304: two rows per
         * round of 32 lanes, some idle), 17 (k 4352: one row per round) and 70 (k 17920: three
         * rounds); n = 5000 and 2500 give groups several units each on a GPU of up to 156
         * multiprocessors (the grid is at most 2 blocks of 8 groups per multiprocessor); odd n
         * leaves the last unit of two rows with one; the types without chunks run warp2 */
        setenv("WICK_QMV", "chunks", 1);
        for (size_t q = 0; gpu && variant_wanted("chunks") && q < sizeof QTS / sizeof QTS[0]; q++) {
            qmv_case(dev, cpu, QTS[q], WK_DTYPE_F32, 1, 45, 256, "chunks", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, QTS[q], WK_DTYPE_F16, 1, 33, 2304, "chunks", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, QTS[q], WK_DTYPE_F32, 1, 6, 17920, "chunks", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, QTS[q], WK_DTYPE_BF16, 1, 5000, 256, "chunks", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, QTS[q], WK_DTYPE_F32, 1, 2500, 4352, "chunks", X_RANDOM, W_RANDOM);
        }
        /* mma (the 32-element types): blocks of 16 weight rows, 8 warps over k in chunks of
         * 256: n = 100 (the last block of rows partial), k of 1, 9 and 17 chunks (warps without
         * a chunk, a second trip), 5 to 8 rows of x */
        static const wk_qtype TTS[] = {WK_QTYPE_Q4_0, WK_QTYPE_Q4_1, WK_QTYPE_Q5_0,
                                       WK_QTYPE_Q5_1, WK_QTYPE_Q8_0};
        setenv("WICK_QMV", "mma", 1);
        for (size_t q = 0; gpu && variant_wanted("mma") && q < sizeof TTS / sizeof TTS[0]; q++) {
            qmv_case(dev, cpu, TTS[q], WK_DTYPE_F32, 5, 100, 9 * 256, "mma", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, TTS[q], WK_DTYPE_F16, 8, 100, 17 * 256, "mma", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, TTS[q], WK_DTYPE_BF16, 7, 33, 256, "mma", X_RANDOM, W_RANDOM);
        }
        unsetenv("WICK_QMV");
        static const wk_qtype PTS[] = {WK_QTYPE_F32, WK_QTYPE_F16, WK_QTYPE_BF16};
        static const wk_dtype PDS[] = {WK_DTYPE_F32, WK_DTYPE_F16, WK_DTYPE_BF16};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                for (int64_t m = 1; m <= 8; m += quick ? (m == 1 ? 2 : 5) : 1) {
                    pmv_case(dev, PTS[a], PDS[b], m, 37, 1024, 0);
                    pmv_case(dev, PTS[a], PDS[b], m, 19, 515, 0);
                }
                /* 4-chunk trips, then single chunks: 2600 = 2 x 1024 + 552 (16-bit W), 5 x 512
                 * + 40 (f32 W) */
                pmv_case(dev, PTS[a], PDS[b], 1, 21, 2600, 0);
                pmv_case(dev, PTS[a], PDS[b], 6, 21, 2600, 0);
                pmv_case(dev, PTS[a], PDS[b], 3, 5, 64, 1);
                /* the one-row kernels with k split over 2 and 4 warps per pair of weight rows
                 * (GPUs; the default's choice for one row and k >= 2048), forced: 4-chunk
                 * trips then single chunks (9000), n past a block's rows, element loads without
                 * 16-byte rows (515), a NaN and an infinity (64) */
                static const char *const splits[] = {"pmv_k2", "pmv_k4"};
                for (int sp = 0; gpu && sp < 2; sp++) {
                    if (!variant_wanted(splits[sp]))
                        continue;
                    setenv("WICK_QMV", splits[sp], 1);
                    pmv_case(dev, PTS[a], PDS[b], 1, 37, 9000, 0);
                    pmv_case(dev, PTS[a], PDS[b], 1, 19, 515, 0);
                    pmv_case(dev, PTS[a], PDS[b], 1, 5, 64, 1);
                    unsetenv("WICK_QMV");
                }
            }
        /* more than 8 rows on a GPU (qmm: W dequantized to x's dtype in chunks, each through
         * the GEMM), the cap at 1 MiB: W of 300 rows of 4 KiB (f16 x k 2048, f32 x k 1024) in
         * chunks of 256 and 44 rows; 100 rows of 16 KiB (f32 x k 4096), where 128 rows exceed
         * the cap, in chunks of 64 and 36 */
        if (gpu) {
            setenv("WICK_QMM_CHUNK_MIB", "1", 1);
            qmv_case(dev, cpu, WK_QTYPE_Q4_0, WK_DTYPE_F16, 9, 300, 2048, "qmm", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, WK_QTYPE_Q4_K, WK_DTYPE_F32, 16, 300, 1024, "qmm", X_RANDOM, W_RANDOM);
            qmv_case(dev, cpu, WK_QTYPE_Q8_0, WK_DTYPE_F32, 9, 100, 4096, "qmm", X_RANDOM, W_RANDOM);
            unsetenv("WICK_QMM_CHUNK_MIB");
        }
        wk_device_close(dev);
    }
    wk_device_close(cpu);
    return testlib_summary();
}
