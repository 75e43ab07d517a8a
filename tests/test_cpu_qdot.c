/* test_cpu_qdot.c: the CPU's quantized matrix product on integers (src/cpu/cpu_qdot.h: x of any
 * number of rows quantized to int8 blocks of 32, integer block dot products, the terms of
 * cpu_qdot.h in f32), every block type, decode (m <= 8) and prefill (m > 8) shapes.
 *   1. Against a float64 reference computed here from the documented rule (docs/semantics.md,
 *      wk_qmatmul): x quantized by this file's own code (d = amax / 127, round half away from
 *      zero with C's roundf, clamp +-127; blocks with amax < 2^-60 gridded on x * 2^64; a block
 *      holding NaN or +-inf makes its row's outputs NaN), W decoded by the independent reference
 *      decoder (tests/reference/ref_quant.c), sums in f64. Bound per output (derived from the
 *      terms of cpu_qdot.h): sub-block u contributes t_u terms (1 to 4) whose sizes sum to at most
 *      M_u = |d_u| sum_i |c_i| (|w_i| + max_u |w|) (the min terms are at most the sub-block's
 *      largest |w| times the codes); each term's scale (F * K) * dx is rounded once (2^-24 of the
 *      term) and each fmaf rounds the running sum once (2^-24 of at most the sum of the M so
 *      far), so the error is at most 2^-24 sum_u (M_u + t_u R_u), R_u = M_0 + ... + M_u, plus one
 *      rounding of the result to dt and 2^-149 per operation below f32's normal range. Tight for
 *      a few sub-blocks: one x code off by one moves an output by |d_u w_i|, far above it.
 *   2. Against the unquantized f64 dot product, the parity class PT_QDOT: nmse <= 3e-4.
 *   3. Bit identity: every code path this CPU runs (scalar, avx2, avx512, amx) and 1 and 2 threads
 *      give the same bits (NaN where NaN); every row of x gives the bits it gives alone (a call
 *      of one row), so no row depends on the others; and wk_qmatmul (the public op) gives those
 *      bits.
 * Shapes: m in {1, 2, 3, 8} and {9, 16, 17, 33}, k of 1, 3 and 7 blocks (K types: of 256), n in {5,
 * 37} (not a multiple of the 4- and 16-row groups), and prefill shapes past the AMX product's
 * chunks (more than 128 sub-blocks, more than 128 weight rows, 20 rows). x patterns: random; all
 * zeros; adversarial blocks (all equal, 1e30, subnormal 1e-40, zeros, a lone nonzero); NaN and
 * +inf in one block of a row. W: random values quantized, and raw bytes 0xff with finite float
 * scales (every code and integer sub-scale at its largest: the integer sums at their bounds, x
 * adversarial and random).
 * Run: ctest -R test_cpu_qdot (seconds, also under the sanitizers) */
#include "cpu/cpu_qdot.h"
#include "cpu/cpu_qdot_types.h"
#include "ref_quant.h"
#include "testlib.h"
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static const wk_qtype QTS[] = {WK_QTYPE_Q4_0, WK_QTYPE_Q4_1, WK_QTYPE_Q5_0, WK_QTYPE_Q5_1,
                               WK_QTYPE_Q8_0, WK_QTYPE_Q8_1, WK_QTYPE_Q2_K, WK_QTYPE_Q3_K,
                               WK_QTYPE_Q4_K, WK_QTYPE_Q5_K, WK_QTYPE_Q6_K, WK_QTYPE_Q8_K};
enum { X_RANDOM, X_ZEROS, X_ADVERSARIAL, X_NONFINITE };
static const char *const XNAMES[] = {"random", "zeros", "adversarial", "nonfinite"};

static uint32_t rng = 2463534242u;
static double urand(void) /* in [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return (double)rng / 2147483648.0 - 1.0;
}

/* x (m, k): the pattern; adversarial blocks cycle through 6 kinds by block index + row */
static void make_x(float *x, int pat, int64_t m, int64_t k)
{
    for (int64_t r = 0; r < m; r++)
        for (int64_t i = 0; i < k; i++) {
            const int64_t b = i / 32;
            double v = urand() * 2.0;
            if (pat == X_ZEROS)
                v = 0;
            else if (pat == X_ADVERSARIAL)
                switch ((b + r) % 6) {
                case 0: v = 0.375; break;           /* all equal */
                case 1: v *= 1e30; break;           /* huge */
                case 2: v *= 1e-40; break;          /* f32 subnormals */
                case 3: v = 0; break;               /* zeros */
                case 4: v = i % 32 == 5 ? -3.0 : 0; break; /* one nonzero */
                default: break;
                }
            x[r * k + i] = (float)v;
        }
    if (pat == X_NONFINITE) {
        x[k / 2] = NAN;                   /* row 0: a NaN in a middle block */
        if (m > 1)
            x[k + k - 1] = INFINITY;      /* row 1: +inf in the last block */
        if (m > 2)
            x[2 * k] = -INFINITY;         /* row 2: -inf in the first block */
    }
}

/* This test's quantization of one block of 32 (the documented rule): codes c, scale *d;
 * returns 0 for a block holding NaN or an infinity. */
static int quant_block(const float *v, int *c, double *d)
{
    float amax = 0;
    for (int e = 0; e < 32; e++) {
        if (!isfinite(v[e]))
            return 0;
        amax = fmaxf(amax, fabsf(v[e]));
    }
    const float two64 = 18446744073709551616.0f;
    const int tiny = amax < 0x1p-60f;
    const float sc = tiny ? two64 : 1.0f;
    const float ds = amax * sc / 127.0f;
    const float id = amax > 0 ? 1.0f / ds : 0.0f;
    *d = tiny ? (double)(ds * 0x1p-64f) : (double)ds;
    for (int e = 0; e < 32; e++) {
        const float q = roundf(v[e] * sc * id);
        c[e] = (int)fmaxf(-127.0f, fminf(127.0f, q));
    }
    return 1;
}

/* W (n, k) of qt with every byte 0xff but the float scales (d = 2^-6, min 2^-8; q8_k d = 2^-6):
 * every code and integer sub-scale at its largest magnitude, the sums at their bounds (the int16
 * pair sums of the AVX2 path: 2 * 2 * 63 * 127 for q6_k); *wd decoded by the reference decoder. */
static unsigned char *make_w_max(wk_qtype qt, int64_t n, int64_t k, double *wd)
{
    const qd_type ty = qd_type_of((int)qt);
    const size_t nb = (size_t)(n * k / ref_qblock_elems(qt)), nw = (size_t)(n * k);
    unsigned char *q = malloc(nb * (size_t)ty.bytes);
    float *wf = malloc(nw * sizeof *wf);
    if (!TEST_CHECK(q && wf, "out of host memory")) {
        free(q), free(wf);
        return NULL;
    }
    memset(q, 0xff, nb * (size_t)ty.bytes);
    for (size_t b = 0; b < nb; b++) {
        unsigned char *p = q + b * (size_t)ty.bytes;
        if (ty.sgn && ty.sub == 8) {
            const float d = 0.015625f;
            memcpy(p, &d, 4);
        } else {
            p[ty.dof] = 0x00, p[ty.dof + 1] = 0x24;
            if (ty.eof >= 0)
                p[ty.eof] = 0x00, p[ty.eof + 1] = 0x1C;
        }
    }
    if (!TEST_EQ_STATUS(ref_dequantize(wf, WK_DTYPE_F32, qt, q, (int64_t)nw), WK_OK)) {
        free(q), free(wf);
        return NULL;
    }
    for (size_t i = 0; i < nw; i++)
        wd[i] = wf[i];
    free(wf);
    return q;
}

/* W (n, k) of qt: random values (an offset per row, so the affine types' mins matter) quantized
 * by wk_quantize; *wd the decoded values (reference decoder). Returns the bytes. */
static unsigned char *make_w(wk_device *cpu, wk_qtype qt, int64_t n, int64_t k, double *wd)
{
    const size_t nw = (size_t)(n * k);
    double *src = malloc(nw * sizeof *src);
    float *wf = malloc(nw * sizeof *wf);
    const size_t qb = (size_t)(n * k / ref_qblock_elems(qt) * ref_qblock_bytes(qt));
    unsigned char *q = malloc(qb);
    wk_storage *s = NULL, *sq = NULL;
    if (!TEST_CHECK(src && wf && q, "out of host memory"))
        goto fail;
    for (size_t i = 0; i < nw; i++)
        src[i] = urand() + 0.3 * (double)((int64_t)i / k % 3);
    s = testlib_upload_f64(cpu, WK_DTYPE_F32, src, nw);
    const wk_layout lw = testlib_layout2(n, k);
    if (!s || !TEST_EQ_STATUS(wk_quantize(&sq, qt, s, &lw), WK_OK) ||
        !TEST_EQ_STATUS(wk_storage_to_host(q, qb, sq), WK_OK) ||
        !TEST_EQ_STATUS(ref_dequantize(wf, WK_DTYPE_F32, qt, q, (int64_t)nw), WK_OK))
        goto fail;
    for (size_t i = 0; i < nw; i++)
        wd[i] = wf[i];
    wk_storage_free(s), wk_storage_free(sq), free(src), free(wf);
    return q;
fail:
    wk_storage_free(s), wk_storage_free(sq), free(src), free(wf), free(q);
    return NULL;
}

/* bits equal, or both NaN */
static int same(float a, float b)
{
    return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a);
}

static void one_case(wk_device *cpu, wk_qtype qt, wk_dtype dt, int64_t m, int64_t n, int64_t k,
                     int pat, int wsat)
{
    const size_t nx = (size_t)(m * k), no = (size_t)(m * n);
    double *wd = malloc((size_t)(n * k) * sizeof *wd);
    float *x = malloc(nx * sizeof *x), *want = malloc(no * sizeof *want);
    float *got = malloc(no * sizeof *got);
    uint16_t *xh = malloc(nx * sizeof *xh), *oh = malloc(no * sizeof *oh);
    int *codes = malloc(nx * sizeof *codes);
    double *xd = malloc((size_t)(m * (k / 32)) * sizeof *xd);
    int *ok = malloc((size_t)(m * (k / 32)) * sizeof *ok);
    unsigned char *w = NULL;
    wk_storage *xs = NULL, *ws = NULL, *os = NULL;
    if (!TEST_CHECK(wd && x && want && got && xh && oh && codes && xd && ok, "out of host memory"))
        goto out;
    w = wsat ? make_w_max(qt, n, k, wd) : make_w(cpu, qt, n, k, wd);
    if (!w)
        goto out;
    make_x(x, pat, m, k);
    /* x as dt holds it */
    for (size_t i = 0; i < nx; i++) {
        if (dt == WK_DTYPE_F16)
            xh[i] = wk_f32_to_f16(x[i]), x[i] = wk_f16_to_f32(xh[i]);
        else if (dt == WK_DTYPE_BF16)
            xh[i] = wk_f32_to_bf16(x[i]), x[i] = wk_bf16_to_f32(xh[i]);
    }
    const void *xin = dt == WK_DTYPE_F32 ? (const void *)x : (const void *)xh;
    for (int64_t b = 0; b < m * (k / 32); b++)
        ok[b] = quant_block(x + b * 32, codes + b * 32, xd + b);

    /* 3. every path, 1 and 2 threads: the same bits; the first result is `want` */
    char what[160];
    snprintf(what, sizeof what, "%s %s m=%lld n=%lld k=%lld x %s%s", wk_qtype_name(qt),
             wk_dtype_name(dt), (long long)m, (long long)n, (long long)k, XNAMES[pat],
             wsat ? ", W bytes 0xff" : "");
    int first = 1;
    for (int p = WK_QDOT_SCALAR; p <= WK_QDOT_AMX; p++)
        for (int th = 1; th <= 2 && wk_cpu_qdot_can(p); th++) {
            omp_set_num_threads(th);
            void *o = dt == WK_DTYPE_F32 ? (void *)got : (void *)oh;
            if (!TEST_EQ_STATUS(wk_cpu_qdot(p, qt, dt, o, xin, m, w, n, k), WK_OK))
                goto out;
            if (dt != WK_DTYPE_F32)
                for (size_t i = 0; i < no; i++)
                    got[i] = dt == WK_DTYPE_F16 ? wk_f16_to_f32(oh[i]) : wk_bf16_to_f32(oh[i]);
            if (first) {
                memcpy(want, got, no * sizeof *got);
                first = 0;
                continue;
            }
            size_t i = 0;
            while (i < no && same(got[i], want[i]))
                i++;
            TEST_CHECK(i == no, "%s: path %s, %d threads: out[%zu] = %a, scalar path %a", what,
                       wk_cpu_qdot_name(p), th, i, i < no ? got[i] : 0.0, i < no ? want[i] : 0.0);
        }
    omp_set_num_threads(2);
    /* ... every row alone gives its bits (on the best path: rows of many-row calls take the AMX
     * product there, single rows the AVX-512 functions) */
    for (int64_t r = 0; r < m && m > 1 && !first; r++) {
        const int p = wk_cpu_qdot_path() == WK_QDOT_EXACT ? WK_QDOT_SCALAR : wk_cpu_qdot_path();
        const void *xr = dt == WK_DTYPE_F32 ? (const void *)(x + r * k) : (const void *)(xh + r * k);
        void *o = dt == WK_DTYPE_F32 ? (void *)got : (void *)oh;
        if (!TEST_EQ_STATUS(wk_cpu_qdot(p, qt, dt, o, xr, 1, w, n, k), WK_OK))
            goto out;
        int64_t j = 0;
        while (j < n && same(dt == WK_DTYPE_F32 ? got[j]
                             : dt == WK_DTYPE_F16 ? wk_f16_to_f32(oh[j]) : wk_bf16_to_f32(oh[j]),
                             want[r * n + j]))
            j++;
        if (!TEST_CHECK(j == n, "%s: row %lld alone, out[%lld] differs from the %lld-row call", what,
                        (long long)r, (long long)j, (long long)m))
            break;
    }
    memcpy(got, want, no * sizeof *got);
    /* ... and the public op, on the path this process picked */
    if (wk_cpu_qdot_path() != WK_QDOT_EXACT) {
        const wk_layout lx = testlib_layout2(m, k);
        const size_t qb = (size_t)(n * k / ref_qblock_elems(qt) * ref_qblock_bytes(qt));
        xs = testlib_upload(cpu, dt, xin, nx);
        ws = testlib_upload(cpu, WK_DTYPE_U8, w, qb);
        if (xs && ws && TEST_EQ_STATUS(wk_qmatmul(&os, xs, &lx, ws, qt, n, k), WK_OK)) {
            double *g = malloc(no * sizeof *g);
            if (g && !testlib_download_f64(g, no, os)) {
                size_t i = 0;
                while (i < no && same((float)g[i], want[i]))
                    i++;
                TEST_CHECK(i == no, "%s: wk_qmatmul out[%zu] = %a, wk_cpu_qdot %a", what, i,
                           i < no ? g[i] : 0.0, i < no ? want[i] : 0.0);
            }
            free(g);
        }
    }

    /* 1. and 2. against the references */
    const double ulp = dt == WK_DTYPE_BF16 ? 0x1p-8 : dt == WK_DTYPE_F16 ? 0x1p-11 : 0x1p-24;
    const double sub = dt == WK_DTYPE_F16 ? 0x1p-25 : dt == WK_DTYPE_BF16 ? 0x1p-134 : 0x1p-150;
    double e2 = 0, s2 = 0;
    int bad = 0;
    /* terms per sub-block (cpu_qdot.h): 2 scale terms for the types with a scale per half, 1 else;
     * min terms: 2 for q2_k, 1 for q4_1, q5_1, q4_k, q5_k */
    const qd_type ty = qd_type_of((int)qt);
    const int tu = (ty.ints == 2 ? 2 : 1) + (ty.eof < 0 ? 0 : ty.ints == 2 ? 2 : 1);
    for (int64_t r = 0; r < m && !bad; r++)
        for (int64_t j = 0; j < n && !bad; j++) {
            const double *wr = wd + j * k;
            double s = 0, mag = 0, exact = 0, run = 0;
            int nan = 0;
            for (int64_t u = 0; u < k / 32; u++) {
                const int64_t b = r * (k / 32) + u;
                double wmax = 0, su = 0, mu = 0;
                nan |= !ok[b];
                for (int i = 0; i < 32; i++)
                    wmax = fmax(wmax, fabs(wr[u * 32 + i]));
                for (int i = 0; i < 32 && ok[b]; i++) {
                    su += codes[b * 32 + i] * wr[u * 32 + i];
                    mu += abs(codes[b * 32 + i]) * (fabs(wr[u * 32 + i]) + wmax);
                }
                s += xd[b] * su;
                run += xd[b] * mu;
                mag += xd[b] * mu + tu * run;
            }
            for (int64_t i = 0; i < k; i++)
                exact += (double)x[r * k + i] * wr[i];
            const double g = got[r * n + j];
            if (nan) {
                bad = !TEST_CHECK(isnan(g), "%s: out[%lld,%lld] = %g, want NaN (x block NaN/inf)",
                                  what, (long long)r, (long long)j, g);
                continue;
            }
            const double tol = 0x1p-24 * mag + ulp * fabs(s) + sub + 4.0 * (double)k * 0x1p-149;
            bad = !TEST_CHECK(fabs(g - s) <= tol, "%s: out[%lld,%lld] = %.9g, want %.9g (tol %.3g)",
                              what, (long long)r, (long long)j, g, s, tol);
            e2 += (g - exact) * (g - exact);
            s2 += exact * exact;
        }
    if (!bad && s2 > 0)
        TEST_CHECK(e2 <= 3e-4 * s2, "%s: nmse %.3g against the unquantized dot, bound 3e-4", what,
                   e2 / s2);
out:
    wk_storage_free(xs), wk_storage_free(ws), wk_storage_free(os);
    free(wd), free(x), free(want), free(got), free(xh), free(oh), free(codes), free(xd), free(ok);
    free(w);
}

int main(void)
{
    wk_device *cpu;
    if (!TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK))
        return testlib_summary();
    printf("paths:");
    for (int p = WK_QDOT_SCALAR; p <= WK_QDOT_AMX; p++)
        printf(" %s%s", wk_cpu_qdot_name(p), wk_cpu_qdot_can(p) ? "" : " (not on this CPU)");
    printf("; wk_qmatmul uses %s\n", wk_cpu_qdot_name(wk_cpu_qdot_path()));
    static const int64_t MS[] = {1, 2, 3, 8, 9, 16, 17, 33};
    for (size_t q = 0; q < sizeof QTS / sizeof QTS[0]; q++) {
        const int64_t be = ref_qblock_elems(QTS[q]);
        for (size_t mi = 0; mi < 8; mi++)
            for (int64_t nb = 1; nb <= 7; nb += 2 + 2 * (nb == 3))
                for (int64_t n = 5; n <= 37; n += 32)
                    one_case(cpu, QTS[q], WK_DTYPE_F32, MS[mi], n, nb * be, X_RANDOM, 0);
        for (int pat = X_ZEROS; pat <= X_NONFINITE; pat++)
            for (int64_t mi = 0; mi < 8; mi += 3)
                one_case(cpu, QTS[q], WK_DTYPE_F32, MS[mi], 37, 7 * be, pat, 0);
        one_case(cpu, QTS[q], WK_DTYPE_F16, 3, 19, 3 * be, X_RANDOM, 0);
        one_case(cpu, QTS[q], WK_DTYPE_F16, 17, 19, 3 * be, X_RANDOM, 0);
        one_case(cpu, QTS[q], WK_DTYPE_BF16, 8, 19, 3 * be, X_ADVERSARIAL, 0);
        one_case(cpu, QTS[q], WK_DTYPE_BF16, 33, 19, 3 * be, X_ADVERSARIAL, 0);
        one_case(cpu, QTS[q], WK_DTYPE_BF16, 2, 19, be, X_NONFINITE, 0);
        one_case(cpu, QTS[q], WK_DTYPE_F32, 8, 37, 3 * be, X_ADVERSARIAL, 1);
        one_case(cpu, QTS[q], WK_DTYPE_F32, 3, 21, 3 * be, X_RANDOM, 1);
        one_case(cpu, QTS[q], WK_DTYPE_F32, 24, 37, 3 * be, X_RANDOM, 1);
        /* prefill: more than 128 sub-blocks (the AMX product's chunk) and 128 weight rows */
        one_case(cpu, QTS[q], WK_DTYPE_F32, 20, 133, (be == 256 ? 17 : 136) * be, X_RANDOM, 0);
    }
    wk_device_close(cpu);
    return testlib_summary();
}
