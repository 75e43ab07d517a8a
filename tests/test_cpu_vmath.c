/* test_cpu_vmath.c: the CPU backend's vector math (src/cpu/cpu_vmath.h, SLEEF underneath).
 *   1. Accuracy: every function on every kernel this CPU can run (AVX-512F, AVX2, scalar) against
 *      a long-double evaluation of the formula of docs/semantics.md: SLEEF's documented bounds
 *      (exp log sin cos tanh erf pow: 1.0 ulp; erfc inside gelu_erf: 1.5 ulp) plus one rounding
 *      per arithmetic step of the compositions, and NaN/inf/zero cases exactly. f32 gelu_erf (our
 *      own kernel, not SLEEF's erfc) on bit patterns spread over every sign and exponent against
 *      GELU_ERF_ULP; `test_cpu_vmath --exhaustive` runs it over all 2^32 inputs and prints the
 *      maximum error of each kernel (minutes).
 *   1b. The bf16 kernels and the 16-bit tables: every bf16 (f16) input gives the f32 kernel's
 *      result rounded to bf16 (f16), bit for bit.
 *   2. Determinism: an element's result does not depend on its position in the array or on the
 *      array's length (tails are computed as padded vectors), and wk_unary gives the same bits on
 *      1 and 2 threads.
 * Run: ctest -R test_cpu_vmath */
#include "core/fpconv.h"
#include "cpu/cpu_vmath.h"
#include "testlib.h"
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef void (*k32)(wk_vm_fn, float *, const float *, int64_t, float);
typedef void (*k64)(wk_vm_fn, double *, const double *, int64_t, double);
typedef void (*kb)(wk_vm_fn, uint16_t *, const uint16_t *, int64_t, float);
typedef struct kern {
    const char *name;
    k32 f32;
    k64 f64;
    int ok; /* this CPU runs it */
    kb bf16;
} kern;

static const char *const names[WK_VM_COUNT] = {"exp",  "log",      "sin",  "cos",     "tanh", "erf",
                                               "gelu", "gelu_erf", "silu", "sigmoid", "pow",  "elu"};

/* The formula in long double. */
static long double ref(wk_vm_fn f, long double x, long double p)
{
    switch (f) {
    case WK_VM_EXP: return expl(x);
    case WK_VM_LOG: return logl(x);
    case WK_VM_SIN: return sinl(x);
    case WK_VM_COS: return cosl(x);
    case WK_VM_TANH: return tanhl(x);
    case WK_VM_ERF: return erfl(x);
    case WK_VM_GELU:
        return 0.5L * x * (1.0L + tanhl(0.79788456080286535588L * (x + 0.044715L * x * x * x)));
    case WK_VM_GELU_ERF: return 0.5L * x * erfcl(-x / 1.41421356237309504880L);
    case WK_VM_SILU: return x / (1.0L + expl(-x));
    case WK_VM_SIGMOID: return 1.0L / (1.0L + expl(-x));
    case WK_VM_POW: return powl(x, p);
    case WK_VM_ELU: return x > 0 ? x : p * (expl(x) - 1.0L);
    default: return 0;
    }
}

/* Allowed error of f at x, in units of eps * scale: plain SLEEF functions are within 1 ulp of the
 * result; the compositions add one rounding per step, and gelu's 1 + tanh and elu's exp - 1 cancel,
 * so their error is bounded relative to |x| (the size of the terms) rather than the result.
 * These bounds describe the formula evaluated in the working precision (the scalar libm code
 * this replaced has the same ones). */
static double allowed(wk_vm_fn f, long double x, long double r, double eps)
{
    const double ar = fabs((double)r), ax = fabs((double)x);
    switch (f) {
    case WK_VM_GELU: return 4 * eps * ar + 2 * eps * ax;
    case WK_VM_ELU: return 3 * eps * ar + 2 * eps * (ax < 1 ? 1 : ax);
    /* the rounding of -x / sqrt(2) (relative eps) moves erfc(t) by 2 t^2 eps relative */
    case WK_VM_GELU_ERF: return (4 + ax * ax) * eps * ar;
    case WK_VM_SILU:
    case WK_VM_SIGMOID: return 4 * eps * ar;
    case WK_VM_SIN:
    case WK_VM_COS: return eps * ar + eps * 1e-3; /* near a zero the absolute error counts */
    default: return 1.0 * eps * ar + DBL_MIN;
    }
}

#define NX 4099 /* not a multiple of any vector width: a tail in every kernel */

static void inputs(double *x, wk_vm_fn f, int n)
{
    const int pos = f == WK_VM_LOG || f == WK_VM_POW;
    for (int i = 0; i < n; i++) {
        const double t = (double)i / (n - 1); /* 0..1 */
        x[i] = pos ? 1e-3 + 60.0 * t * t : -12.0 + 24.0 * t;
    }
    x[0] = 0.0, x[1] = -0.0, x[2] = INFINITY, x[3] = -INFINITY, x[4] = NAN;
    if (f == WK_VM_EXP || f == WK_VM_SIGMOID || f == WK_VM_SILU)
        x[5] = 100.0, x[6] = -100.0; /* overflow, underflow */
}

static void check_kernel(const kern *k, wk_vm_fn f)
{
    static double xd[NX], yd[NX];
    static float xf[NX], yf[NX];
    const double p = f == WK_VM_POW ? 2.5 : f == WK_VM_ELU ? 0.7 : 0.0;
    inputs(xd, f, NX);
    for (int i = 0; i < NX; i++)
        xf[i] = (float)xd[i];
    k->f32(f, yf, xf, NX, (float)p);
    k->f64(f, yd, xd, NX, p);
    int bad32 = 0, bad64 = 0;
    for (int i = 0; i < NX; i++) {
        const long double r32 = ref(f, xf[i], (float)p), r64 = ref(f, xd[i], p);
        const double w32 = (double)(float)r32, w64 = (double)r64;
        if (isnan(w32) != isnan(yf[i]) ||
            (!isnan(w32) && (isinf(w32) || isinf(yf[i]) ? w32 != yf[i]
                                                        : fabs(yf[i] - (double)r32) >
                                                              allowed(f, xf[i], r32, FLT_EPSILON) + FLT_MIN)))
            bad32 += TEST_CHECK(0, "%s f32 %s(%.9g) = %.9g, want %.9g", k->name, names[f], xf[i],
                                yf[i], w32) ? 0 : 1;
        if (isnan(w64) != isnan(yd[i]) ||
            (!isnan(w64) && (isinf(w64) || isinf(yd[i]) ? w64 != yd[i]
                                                        : fabsl(yd[i] - r64) >
                                                              allowed(f, xd[i], r64, DBL_EPSILON) + DBL_MIN)))
            bad64 += TEST_CHECK(0, "%s f64 %s(%.17g) = %.17g, want %.17g", k->name, names[f], xd[i],
                                yd[i], w64) ? 0 : 1;
        if (bad32 + bad64 > 4)
            return;
    }
    TEST_CHECK(1, "%s %s", k->name, names[f]);
}

/* The bf16 kernel (bf16 in and out, converted in registers) against the same ISA's f32 kernel
 * on every one of the 65536 bf16 inputs, rounded by the library's scalar bf16 conversion (ties
 * to even, NaN kept NaN): the same bits, tails included (n = 65536 - 3). */
static void check_bf16(const kern *k, wk_vm_fn f)
{
    enum { N = 65536 - 3 };
    static uint16_t xb[N], yb[N];
    static float xf[N], yf[N];
    const float p = f == WK_VM_POW ? 2.5f : f == WK_VM_ELU ? 0.7f : 0.0f;
    for (int i = 0; i < N; i++) {
        xb[i] = (uint16_t)(i * 7 + 3);
        xf[i] = wk_fp_bf16_to_f32(xb[i]);
    }
    k->bf16(f, yb, xb, N, p);
    k->f32(f, yf, xf, N, p);
    int bad = 0;
    for (int i = 0; i < N && bad < 3; i++) {
        const uint16_t want = wk_fp_f32_to_bf16(yf[i]);
        const int both_nan = isnan(yf[i]) && isnan(wk_fp_bf16_to_f32(yb[i]));
        if (yb[i] != want && !both_nan)
            bad += !TEST_CHECK(0, "%s bf16 %s(0x%04x) = 0x%04x, want 0x%04x", k->name, names[f],
                               xb[i], yb[i], want);
    }
    if (!bad)
        TEST_CHECK(1, "%s bf16 %s", k->name, names[f]);
}

/* The 16-bit tables (wk_vm_table16, what wk_unary uses for bf16 and f16) against the dispatched
 * f32 kernel on every input, rounded by the library's conversions: the same bits. */
static void check_tables(void)
{
    static float x[65536], y[65536];
    for (int h = 0; h < 2; h++)
        for (int f = 0; f < WK_VM_COUNT; f++) {
            const uint16_t *t = wk_vm_table16((wk_vm_fn)f, h);
            if (f == WK_VM_POW || f == WK_VM_ELU) {
                TEST_CHECK(t == NULL, "no table for %s (a parameter)", names[f]);
                continue;
            }
            if (!TEST_CHECK(t != NULL, "%s table for %s", h ? "f16" : "bf16", names[f]))
                continue;
            for (int i = 0; i < 65536; i++)
                x[i] = h ? wk_fp_f16_to_f32((uint16_t)i) : wk_fp_bf16_to_f32((uint16_t)i);
            wk_vm_f32((wk_vm_fn)f, y, x, 65536, 0.0f);
            int bad = 0;
            for (int i = 0; i < 65536 && bad < 3; i++) {
                const uint16_t want = h ? wk_fp_f32_to_f16(y[i]) : wk_fp_f32_to_bf16(y[i]);
                if (t[i] != want)
                    bad += !TEST_CHECK(0, "%s table %s(0x%04x) = 0x%04x, want 0x%04x",
                                       h ? "f16" : "bf16", names[f], i, t[i], want);
            }
            if (!bad)
                TEST_CHECK(1, "table");
        }
}

/* The same values at every offset inside arrays of every length up to 40 give the same bits. */
static void check_position(const kern *k, wk_vm_fn f)
{
    float x[64], y[64], base[40], bx[40];
    for (int i = 0; i < 40; i++)
        bx[i] = (float)(0.37 * i - 7.1);
    k->f32(f, base, bx, 40, 1.5f);
    for (int len = 1; len <= 40; len++)
        for (int off = 0; off + len <= 40; off += 3) {
            memcpy(x, bx + off, (size_t)len * sizeof(float));
            k->f32(f, y, x, len, 1.5f);
            if (memcmp(y, base + off, (size_t)len * sizeof(float)) != 0) {
                TEST_CHECK(0, "%s %s: bits depend on position (len %d, offset %d)", k->name,
                           names[f], len, off);
                return;
            }
        }
    TEST_CHECK(1, "position");
}

/* wk_unary on 1 and 2 threads: identical bits (2^18 elements: above the parallel threshold). */
static void check_threads(void)
{
    wk_device *dev = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&dev, "cpu"), WK_OK))
        return;
    const size_t n = 1u << 18;
    float *x = malloc(n * sizeof *x), *y1 = malloc(n * sizeof *y1), *y2 = malloc(n * sizeof *y2);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((double)(i % 1000) * 0.011 - 5.0);
    wk_storage *sx = testlib_upload(dev, WK_DTYPE_F32, x, n);
    const wk_layout l = testlib_layout1((int64_t)n);
    const wk_op ops[] = {WK_OP_EXP, WK_OP_GELU_ERF, WK_OP_TANH, WK_OP_SILU};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        wk_storage *a = NULL, *b = NULL;
        omp_set_num_threads(1);
        TEST_EQ_STATUS(wk_unary(&a, ops[k], sx, &l), WK_OK);
        omp_set_num_threads(2);
        TEST_EQ_STATUS(wk_unary(&b, ops[k], sx, &l), WK_OK);
        if (a && b && !testlib_download(y1, n, a) && !testlib_download(y2, n, b))
            TEST_CHECK(memcmp(y1, y2, n * sizeof *y1) == 0, "%s: 1 and 2 threads differ",
                       wk_op_name(ops[k]));
        wk_storage_free(a);
        wk_storage_free(b);
    }
    wk_storage_free(sx);
    wk_device_close(dev);
    free(x), free(y1), free(y2);
}

/* The ulp error of y against the f32 result r (a double): |y - r| in units of r's f32 ulp,
 * subnormal spacing (2^-149) at the bottom. */
static double ulp_err32(float y, double r)
{
    const double ar = fabs(r);
    int e;
    frexp(ar, &e); /* ar = m 2^e, m in [0.5, 1) */
    const double ulp = ar < FLT_MIN ? 0x1p-149 : ldexp(1.0, e - 24);
    return fabs((double)y - r) / ulp;
}

/* gelu_erf on f32 (the kernel of our own, docs/semantics.md: GELU_ERF_ULP ulp) on `step`-spaced
 * bit patterns of every sign and exponent, against a double evaluation (erfc's own error and the
 * rounding of x/sqrt 2 in double are below 1e-13 relative, far under an f32 ulp). step = 1 visits
 * all 2^32 inputs (test_cpu_vmath --exhaustive). Returns the largest error seen. */
#define GELU_ERF_ULP 6.0
static double sweep_gelu_erf(const kern *k, uint32_t step, float *worst, uint64_t *differ)
{
    enum { B = 4096 };
    static float x[B], y[B], ys[B];
    double mx = 0;
    uint64_t bits = 0;
    while (bits < (1ull << 32)) {
        int n = 0;
        for (; n < B && bits < (1ull << 32); n++, bits += step) {
            const uint32_t u = (uint32_t)bits;
            memcpy(&x[n], &u, 4);
        }
        k->f32(WK_VM_GELU_ERF, y, x, n, 0.0f);
        wk_vm_f32_scalar(WK_VM_GELU_ERF, ys, x, n, 0.0f);
        for (int i = 0; i < n; i++) {
            *differ += !(isnan(y[i]) && isnan(ys[i])) && memcmp(&y[i], &ys[i], 4) != 0;
            const double r = 0.5 * (double)x[i] * erfc(-(double)x[i] * 0.70710678118654752440);
            if (isnan(r) || isinf(r)) {
                if (!(isnan(r) ? isnan(y[i]) : (double)y[i] == r) && mx < INFINITY)
                    mx = INFINITY, *worst = x[i];
                continue;
            }
            const double e = ulp_err32(y[i], r);
            if (e > mx || isnan(e))
                mx = isnan(e) ? INFINITY : e, *worst = x[i];
        }
    }
    return mx;
}

static void check_gelu_erf_f32(const kern *k, uint32_t step)
{
    float worst = 0;
    uint64_t differ = 0;
    const double mx = sweep_gelu_erf(k, step, &worst, &differ);
    TEST_CHECK(mx <= GELU_ERF_ULP, "%s f32 gelu_erf: %.3f ulp at x = %a (bound %.1f; %u-spaced bit patterns)",
               k->name, mx, (double)worst, GELU_ERF_ULP, step);
    /* every step of the kernel is one IEEE operation rounded once, so all ISAs agree bit for bit */
    TEST_CHECK(differ == 0, "%s f32 gelu_erf: %llu results differ from the scalar kernel's bits",
               k->name, (unsigned long long)differ);
    printf("%s f32 gelu_erf over %s: max %.3f ulp at x = %a (%.9g), %llu differ from scalar\n",
           k->name, step == 1 ? "all 2^32 inputs" : "spaced inputs", mx, (double)worst,
           (double)worst, (unsigned long long)differ);
}

int main(int argc, char **argv)
{
    const int exhaustive = argc > 1 && !strcmp(argv[1], "--exhaustive");
    kern ks[3] = {{"scalar", wk_vm_f32_scalar, wk_vm_f64_scalar, 1, wk_vm_bf16_scalar},
                  {"avx2", NULL, NULL, 0, NULL}, {"avx512f", NULL, NULL, 0, NULL}};
#if defined(__x86_64__) && defined(__GNUC__)
    ks[1] = (kern){"avx2", wk_vm_f32_avx2, wk_vm_f64_avx2,
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), wk_vm_bf16_avx2};
    ks[2] = (kern){"avx512f", wk_vm_f32_avx512, wk_vm_f64_avx512, __builtin_cpu_supports("avx512f"),
                   wk_vm_bf16_avx512};
#endif
    printf("vector math in use: %s\n", wk_vm_isa());
    for (int k = 0; k < 3; k++) {
        if (!ks[k].ok) {
            printf("skip: %s kernels (this CPU lacks the ISA)\n", ks[k].name);
            continue;
        }
        check_gelu_erf_f32(&ks[k], exhaustive ? 1 : 4099);
        if (exhaustive)
            continue;
        for (int f = 0; f < WK_VM_COUNT; f++) {
            check_kernel(&ks[k], (wk_vm_fn)f);
            check_position(&ks[k], (wk_vm_fn)f);
            check_bf16(&ks[k], (wk_vm_fn)f);
        }
    }
    if (exhaustive)
        return testlib_summary();
    check_threads();
    check_tables();
    return testlib_summary();
}
