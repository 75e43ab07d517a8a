/* test_gpu_gemm.c: the GPU GEMM of src/gpu/gpu_matmul.c (wk_gpu_gemm, shared by matmul and the
 * convolutions), called directly, against a float64 triple loop on the host.
 *
 * Shapes: m, n, k from {1, 7, 15, 17, 33, 129, 130, 257} in odd combinations, k = 0 (zeros),
 * k = 300 (many k steps of both the FMA kernels' 8 and the matrix-unit kernels' 32, and a tail),
 * and shapes large enough for the portable kernels' 128 x 128 tiles; batch 3 (and 1). f16, bf16
 * and f8e4m3 take the matrix-unit kernels where the device has them (NVIDIA sm_80+ on mma.sync,
 * CDNA on MFMA for f16 / bf16, and the simt device through gpu.h's twins: with 64-lane warps
 * (ctest test_gpu_gemm_simt64) f16 and bf16 take CDNA's kernels), the FMA kernels elsewhere. Operand layouts: row-major,
 * transposed, strided (every other column, padded rows), batch stride 0 (one matrix for every
 * batch), a base one element off (no vector loads), and row-major and transposed with the
 * leading dimension padded to a multiple of 16 (vector loads on odd shapes: chunks cut by the
 * edge). C has padded rows (ldc > n) and a gap
 * between batches; the cells outside the product must keep their sentinel. Every case runs in
 * both modes: the vendor BLAS where present (cuBLAS / rocBLAS), and the portable kernel
 * (WK_OPTION_PORTABLE_GEMM), in f32 f64 f16 bf16, and f8e4m3 (portable kernel in both modes);
 * without a vendor library (the simt device) the two modes are the same and run once.
 * Tolerance: |got - want| <= 2 ((k + 2) u_acc + u_out) sum_k |a_ik b_kj| + tiny, the standard
 * bound of a k-term sum in precision u_acc (f64: 2^-53, else f32: 2^-24) rounded once to the
 * output (u_out = half an ulp of the dtype; below the normal range, half the smallest
 * subnormal, u_abs, instead). It also holds for the matrix units: their products of two f16 or
 * bf16 values are exact in f32, and each of their f32 additions (in whatever order and inner
 * rounding, truncation included) errs by less than 2 u_acc of the partial sum's magnitude.
 * WICK_TEST_QUICK=1 (the sanitizer runs of tools/device/mma.sh): the portable kernel only, in
 * f16, bf16 and f8e4m3 (the matrix-unit kernels), without the three 1300 x 1300 cases.
 * WICK_TEST_GEMM_DTYPES=f16,bf16 (dtype names, comma-separated) runs those dtypes only.
 * Skips (exit 0) when no CUDA or ROCm device is present. Run: ctest -R test_gpu_gemm */
#include "gpu/blas_api.h"
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* One element of dtype dt: store v (rounded to dt) at p[i]; read p[i] as a double. */
static void put(void *p, size_t i, wk_dtype dt, double v)
{
    switch (dt) {
    case WK_DTYPE_F64: ((double *)p)[i] = v; break;
    case WK_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case WK_DTYPE_F16: ((uint16_t *)p)[i] = wk_f32_to_f16((float)v); break;
    case WK_DTYPE_BF16: ((uint16_t *)p)[i] = wk_f32_to_bf16((float)v); break;
    default: ((uint8_t *)p)[i] = wk_f32_to_f8e4m3((float)v); break;
    }
}

static double get(const void *p, size_t i, wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_F64: return ((const double *)p)[i];
    case WK_DTYPE_F32: return ((const float *)p)[i];
    case WK_DTYPE_F16: return wk_f16_to_f32(((const uint16_t *)p)[i]);
    case WK_DTYPE_BF16: return wk_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return wk_f8e4m3_to_f32(((const uint8_t *)p)[i]);
    }
}

/* How an operand of rows x cols per batch is laid out in its buffer. */
enum { L_ROW, L_TRANS, L_STRIDED, L_BCAST, L_OFF1, L_PAD, L_PADT, L_COUNT };
static const char *const lname[] = {"row", "trans", "strided", "bcast", "off1", "pad", "padt"};

typedef struct opnd {
    int64_t bs, rs, cs, off, len;
    void *host;
    wk_storage *s;
} opnd;

static int opnd_make(opnd *o, wk_device *dev, wk_dtype dt, int lay, int64_t batch, int64_t rows,
                     int64_t cols)
{
    const int64_t one = rows * cols;
    *o = (opnd){.bs = one, .rs = cols, .cs = 1, .off = 0};
    switch (lay) {
    case L_TRANS: o->rs = 1, o->cs = rows; break;
    case L_STRIDED: o->cs = 2, o->rs = 2 * cols + 3, o->bs = rows * o->rs + 1, o->off = 2; break;
    case L_BCAST: o->bs = 0; break;
    case L_OFF1: o->off = 1; break;
    /* padded to a multiple of 16 elements plus 16: 16-byte aligned rows (columns) of odd length,
     * so the vector kernels meet chunks cut by the operand's edge */
    case L_PAD: o->rs = (cols + 15) / 16 * 16 + 16, o->bs = rows * o->rs; break;
    case L_PADT: o->rs = 1, o->cs = (rows + 15) / 16 * 16 + 16, o->bs = cols * o->cs; break;
    default: break;
    }
    o->len = o->off + (batch - 1) * o->bs + (rows - 1) * o->rs + (cols - 1) * o->cs + 1;
    if (rows == 0 || cols == 0)
        o->len = o->off + 1;
    const size_t esz = wk_dtype_size(dt);
    o->host = malloc((size_t)o->len * esz);
    if (!TEST_CHECK(o->host != NULL, "out of host memory"))
        return 0;
    for (int64_t i = 0; i < o->len; i++)
        put(o->host, (size_t)i, dt, rnd());
    o->s = testlib_upload(dev, dt, o->host, (size_t)o->len);
    return o->s != NULL;
}

static void opnd_free(opnd *o)
{
    wk_storage_free(o->s);
    free(o->host);
}

static double elem(const opnd *o, wk_dtype dt, int64_t z, int64_t r, int64_t c)
{
    return get(o->host, (size_t)(o->off + z * o->bs + r * o->rs + c * o->cs), dt);
}

static const double SENTINEL = -256.0; /* exact in every dtype tested, f8e4m3 included */

/* C_z (m x n, row stride ldc, batch stride c_bs) = A_z @ B_z, checked element by element. */
static void run_case(wk_device *dev, const char *mode, wk_dtype dt, int64_t batch, int64_t m,
                     int64_t n, int64_t k, int la_, int lb_)
{
    const size_t esz = wk_dtype_size(dt);
    const int64_t ldc = n + 3, c_bs = m * ldc + 5, clen = batch * c_bs;
    opnd A = {0}, B = {0};
    void *ch = malloc((size_t)clen * esz), *cg = malloc((size_t)clen * esz);
    wk_storage *cs = NULL;
    if (!TEST_CHECK(ch && cg, "out of host memory"))
        goto done;
    for (int64_t i = 0; i < clen; i++)
        put(ch, (size_t)i, dt, SENTINEL);
    if (!opnd_make(&A, dev, dt, la_, batch, m, k) || !opnd_make(&B, dev, dt, lb_, batch, k, n) ||
        !(cs = testlib_upload(dev, dt, ch, (size_t)clen)))
        goto done;
    wk_gpu_gemm_args g = {
        .dt = dt, .batch = batch, .m = m, .n = n, .k = k,
        .a = (const char *)A.s->data + A.off * (int64_t)esz, .a_bs = A.bs, .a_rs = A.rs,
        .a_cs = A.cs,
        .b = (const char *)B.s->data + B.off * (int64_t)esz, .b_bs = B.bs, .b_rs = B.rs,
        .b_cs = B.cs,
        .c = cs->data, .c_bs = c_bs, .ldc = ldc,
    };
    wk_status st = wk_gpu_gemm(dev, &g);
    if (!TEST_CHECK(st == WK_OK, "%s %s b%lld m%lld n%lld k%lld a=%s b=%s: %s (%s)", mode,
                    wk_dtype_name(dt), (long long)batch, (long long)m, (long long)n,
                    (long long)k, lname[la_], lname[lb_], wk_status_string(st), wk_last_error()))
        goto done;
    if (testlib_download(cg, (size_t)clen, cs))
        goto done;
    const double u_acc = dt == WK_DTYPE_F64 ? 0x1p-53 : 0x1p-24;
    const double u_out = dt == WK_DTYPE_F64 ? 0x1p-53 : dt == WK_DTYPE_F32 ? 0x1p-24
                         : dt == WK_DTYPE_F16 ? 0x1p-11 : dt == WK_DTYPE_BF16 ? 0x1p-8 : 0x1p-4;
    /* below the normal range the output's spacing is fixed: half its smallest subnormal */
    const double u_abs = dt == WK_DTYPE_F16 ? 0x1p-25 : dt == WK_DTYPE_F8E4M3 ? 0x1p-10 : 0x1p-200;
    int bad = 0;
    for (int64_t z = 0; z < batch && bad < 3; z++)
        for (int64_t i = 0; i < m && bad < 3; i++)
            for (int64_t j = 0; j < n && bad < 3; j++) {
                double sum = 0, mag = 0;
                for (int64_t q = 0; q < k; q++) {
                    const double p = elem(&A, dt, z, i, q) * elem(&B, dt, z, q, j);
                    sum += p;
                    mag += fabs(p);
                }
                const double tol = 2.0 * ((double)(k + 2) * u_acc + u_out) * mag + u_abs;
                const double got = get(cg, (size_t)(z * c_bs + i * ldc + j), dt);
                if (!TEST_CHECK(fabs(got - sum) <= tol,
                                "%s %s b%lld m%lld n%lld k%lld a=%s b=%s: C[%lld][%lld][%lld] = "
                                "%.17g, want %.17g (tol %.3g)", mode, wk_dtype_name(dt),
                                (long long)batch, (long long)m, (long long)n, (long long)k,
                                lname[la_], lname[lb_], (long long)z, (long long)i, (long long)j,
                                got, sum, tol))
                    bad++;
            }
    /* the padding of C: untouched */
    for (int64_t z = 0; z < batch && !bad; z++)
        for (int64_t i = 0; i < c_bs && !bad; i++) {
            const int64_t r = i / ldc, c = i % ldc;
            if ((r < m && c < n) || get(cg, (size_t)(z * c_bs + i), dt) == SENTINEL)
                continue;
            TEST_CHECK(0, "%s %s b%lld m%lld n%lld k%lld: write outside C at %lld of batch %lld",
                       mode, wk_dtype_name(dt), (long long)batch, (long long)m, (long long)n,
                       (long long)k, (long long)i, (long long)z);
            bad++;
        }
done:
    wk_storage_free(cs);
    opnd_free(&A);
    opnd_free(&B);
    free(ch);
    free(cg);
}

static int quick;              /* WICK_TEST_QUICK */
static const char *only_dtypes; /* WICK_TEST_GEMM_DTYPES: a comma-separated list, else all */

static int dtype_wanted(wk_dtype dt)
{
    if (!only_dtypes || !*only_dtypes)
        return 1;
    const char *name = wk_dtype_name(dt);
    const size_t n = strlen(name);
    for (const char *p = only_dtypes; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

static void run_device(wk_device *dev, const char *mode)
{
    static const int64_t shapes[][3] = {
        {1, 1, 1},     {7, 33, 130},  {257, 130, 33}, {33, 257, 7},   {130, 7, 257},
        {1, 257, 130}, {257, 1, 33},  {130, 130, 1},  {33, 33, 33},   {7, 33, 0},
        {15, 17, 129}, {129, 15, 17}, {17, 129, 15},  {1, 129, 17},   {129, 1, 300},
    };
    const wk_dtype dts[] = {WK_DTYPE_F32, WK_DTYPE_F64, WK_DTYPE_F16, WK_DTYPE_BF16,
                            WK_DTYPE_F8E4M3};
    for (int d = 0; d < 5; d++) {
        if ((quick && (dts[d] == WK_DTYPE_F32 || dts[d] == WK_DTYPE_F64)) || !dtype_wanted(dts[d]))
            continue;
        const int before = testlib_failed();
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int l = 0; l < L_COUNT; l++) /* each layout on A, and on B in a rotation */
                run_case(dev, mode, dts[d], 3, shapes[s][0], shapes[s][1], shapes[s][2], l,
                         (l + (int)s) % L_COUNT);
        /* one batch, and a problem with enough 128 x 128 tiles for the large configuration */
        run_case(dev, mode, dts[d], 1, 130, 257, 33, L_TRANS, L_ROW);
        run_case(dev, mode, dts[d], 1, 130, 257, 300, L_ROW, L_TRANS);
        run_case(dev, mode, dts[d], 2, 257, 130, 300, L_TRANS, L_ROW);
        /* k = 120: the last k tile of 32 ends inside its second 16-deep step (the pipelined
         * kernels read that step's fragments across the barrier) */
        run_case(dev, mode, dts[d], 1, 200, 300, 120, L_ROW, L_TRANS);
        /* both operands read along k with k a multiple of 16 (whole 16-byte chunks of f8e4m3
         * along k; k 160 is 5 k tiles of 32, k 48 one and a half) */
        run_case(dev, mode, dts[d], 2, 200, 136, 160, L_ROW, L_TRANS);
        run_case(dev, mode, dts[d], 1, 130, 257, 48, L_ROW, L_TRANS);
        /* k a multiple of 16 with an operand read along m or n: B, A, both (B broadcast over
         * the batch) */
        run_case(dev, mode, dts[d], 2, 200, 136, 160, L_ROW, L_ROW);
        run_case(dev, mode, dts[d], 2, 136, 200, 160, L_TRANS, L_PADT);
        run_case(dev, mode, dts[d], 3, 130, 150, 64, L_TRANS, L_BCAST);
        /* 144 large tiles with 4 k steps of 32: the large configuration on a 132-SM GPU */
        run_case(dev, mode, dts[d], 1, 1536, 1536, 100, L_ROW, L_TRANS);
        if (!quick) {
            run_case(dev, mode, dts[d], 3, 1300, 1300, 9, L_ROW, L_ROW);
            run_case(dev, mode, dts[d], 3, 1300, 1300, 9, L_TRANS, L_TRANS);
            run_case(dev, mode, dts[d], 3, 1300, 1300, 9, L_OFF1, L_STRIDED);
        }
        printf("%s %s: %s\n", mode, wk_dtype_name(dts[d]),
               testlib_failed() == before ? "ok" : "FAILED");
    }
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    int gpus = 0;
    const char *q = getenv("WICK_TEST_QUICK");
    quick = q && *q && strcmp(q, "0") != 0;
    only_dtypes = getenv("WICK_TEST_GEMM_DTYPES");
    const int portable0 = wk_get_option(WK_OPTION_PORTABLE_GEMM);
    for (int i = 0; i < n; i++) {
        if (strcmp(specs[i], "cpu") == 0)
            continue;
        wk_device *dev = NULL;
        if (!TEST_CHECK(wk_device_open(&dev, specs[i]) == WK_OK, "open %s: %s", specs[i],
                        wk_last_error()))
            continue;
        gpus++;
        wk_set_option(WK_OPTION_PORTABLE_GEMM, 0);
        const char *vendor = wk_gpu_blas_name(dev);
        printf("%s: %s; vendor library: %s\n", specs[i], wk_device_name(dev),
               vendor ? vendor : "none (the portable kernel serves both modes)");
        if (vendor && !quick)
            run_device(dev, vendor);
        wk_set_option(WK_OPTION_PORTABLE_GEMM, 1);
        run_device(dev, "portable");
        wk_set_option(WK_OPTION_PORTABLE_GEMM, portable0);
        wk_device_close(dev);
    }
    if (!gpus)
        printf("skip: no CUDA or ROCm device: test_gpu_gemm has nothing to run\n");
    return testlib_summary();
}
