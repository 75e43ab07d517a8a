/* test_conv_nhwc.c: the implicit-GEMM forward convolution (kernels/conv.cu conv_nhwc_*, chosen
 * by src/gpu/gpu_conv.c conv_nhwc_ok) on every GPU device of WICK_TEST_DEVICES (the CPU is
 * skipped: the path is the GPU's).
 *
 * For f16 and bf16 and conv2d shapes with C_in / groups a multiple of 32 that cover both block
 * tiles (C_out/groups <= 64 and > 64, with partial tiles), partial position tiles, stride,
 * padding, dilation, rectangular kernels, groups, a 1x1 kernel and an input read through padded
 * strides: with WICK_CONV=nhwc (k in (kh, kw, c) order) the result must equal, bit for bit, the
 * portable GEMM (wk_matmul) of the weight and the columns laid out here in that order, which
 * also shows that it ran (the other paths sum in (c, kh, kw) order), and stay within the bound of
 * a k-term f32 sum rounded once of a float64 reference: |got - want| <= (2 (k + 2) 2^-24 +
 * 2 u_out) sum |w x| + 2^-24 (u_out: half an ulp of the dtype, relative), as test_gpu_gemm.
 * Where the default rule takes it (more than one tap, C_out / groups <= 64), the default path
 * must give the same bits.
 * Run: WICK_TEST_DEVICES=simt:0 ctest -R test_conv_nhwc (ctest runs it on simt:0 and simt:1
 * where the simt device is built; on NVIDIA with tools/device scripts). */
#include "testlib.h"
#include "gpu/gpu_driver.h"
#include "gpu/gpu_impl.h"
#include "wk_core.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x243f6a8885a308d3ull;
static double rnd(void) /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double round_to(wk_dtype dt, double v)
{
    return dt == WK_DTYPE_F16 ? wk_f16_to_f32(wk_f32_to_f16((float)v))
                              : wk_bf16_to_f32(wk_f32_to_bf16((float)v));
}

typedef struct shape {
    const char *name;
    int64_t n, ci, h, w, co, kh, kw;
    int32_t sh, sw, ph, pw, dh, dw, groups;
    int64_t wpad;  /* extra elements at the end of each row of x (a strided input) */
    int by_default; /* whether the default rule takes the implicit GEMM */
} shape;

static const shape SHAPES[] = {
    {"3x3 p1, C_out 136 (tile 128, partial), k 576", 1, 64, 15, 17, 136, 3, 3, 1, 1, 1, 1, 1, 1,
     1, 0, 0},
    {"3x3 p1, C_in 32, C_out 24 (tile 64), P 99", 2, 32, 9, 11, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0,
     1},
    {"3x3 s2 p1, groups 2 of 64, C_out 80", 1, 128, 10, 9, 80, 3, 3, 2, 2, 1, 1, 1, 1, 2, 0, 1},
    {"3x2 p(2,1) d2, C_in 32, C_out 64, strided x", 2, 32, 12, 9, 64, 3, 2, 1, 1, 2, 1, 2, 2, 1,
     2, 1},
    {"1x1, C_in 64, C_out 136, strided x", 2, 64, 6, 7, 136, 1, 1, 1, 1, 0, 0, 1, 1, 1, 3, 0},
};

/* out <- conv2d with WICK_CONV=mode (NULL: unset, the default path). */
static wk_storage *run(const char *mode, const wk_storage *sx, const wk_layout *lx,
                       const wk_storage *sw, const wk_layout *lw, const wk_conv_params *p)
{
    if (mode)
        setenv("WICK_CONV", mode, 1);
    wk_storage *so = NULL;
    const wk_status st = wk_conv2d(&so, sx, lx, sw, lw, p);
    unsetenv("WICK_CONV");
    TEST_CHECK(st == WK_OK, "conv2d (WICK_CONV=%s): %s (%s)", mode ? mode : "", wk_status_string(st),
               wk_last_error());
    return st == WK_OK ? so : NULL;
}

/* The NHWC form against the portable GEMM of W' [n][g][cog][K] (broadcast over n) and the
 * columns C' [n][g][K][P], both with k = (kh KW + kw) cig + c, built here from x and w. */
static void run_nhwc(wk_device *dev, const char *spec, const shape *s, wk_dtype dt,
                     const double *x, const double *w, const double *want, const double *mag,
                     int64_t ho, int64_t wo, const wk_storage *sx, const wk_layout *lx,
                     const wk_storage *sw, const wk_layout *lw, const wk_conv_params *p)
{
    const int64_t g = s->groups, cig = s->ci / g, cog = s->co / g, kk = s->kh * s->kw;
    const int64_t K = kk * cig, P = ho * wo, rw = s->w + s->wpad;
    const size_t nw = (size_t)(g * cog * K), nc = (size_t)(s->n * g * K * P);
    const size_t no = (size_t)(s->n * s->co * P);
    double *wt = malloc(nw * sizeof *wt), *ct = malloc(nc * sizeof *ct);
    double *got = malloc(no * sizeof *got), *ref = malloc(no * sizeof *ref);
    for (int64_t co = 0; co < g * cog; co++)
        for (int64_t a = 0; a < s->kh; a++)
            for (int64_t b = 0; b < s->kw; b++)
                for (int64_t c = 0; c < cig; c++)
                    wt[co * K + (a * s->kw + b) * cig + c] = w[((co * cig + c) * s->kh + a) * s->kw + b];
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t gr = 0; gr < g; gr++)
            for (int64_t a = 0; a < s->kh; a++)
                for (int64_t b = 0; b < s->kw; b++)
                    for (int64_t c = 0; c < cig; c++)
                        for (int64_t q = 0; q < P; q++) {
                            const int64_t ih = q / wo * s->sh - s->ph + a * s->dh;
                            const int64_t iw = q % wo * s->sw - s->pw + b * s->dw;
                            const bool in = ih >= 0 && ih < s->h && iw >= 0 && iw < s->w;
                            ct[((n * g + gr) * K + (a * s->kw + b) * cig + c) * P + q] =
                                in ? x[((n * s->ci + gr * cig + c) * s->h + ih) * rw + iw] : 0;
                        }
    wk_storage *swt = testlib_upload_f64(dev, dt, wt, nw), *sct = testlib_upload_f64(dev, dt, ct, nc);
    const wk_layout la = {.rank = 4, .dims = {s->n, g, cog, K}, .strides = {0, cog * K, K, 1}};
    const wk_layout lb = {.rank = 4, .dims = {s->n, g, K, P}, .strides = {g * K * P, K * P, P, 1}};
    wk_storage *om = NULL;
    TEST_CHECK(wk_set_option(WK_OPTION_PORTABLE_GEMM, 1) == WK_OK, "portable GEMM option");
    const wk_status st = swt && sct ? wk_matmul(&om, swt, &la, sct, &lb) : WK_ERR_OUT_OF_MEMORY;
    wk_set_option(WK_OPTION_PORTABLE_GEMM, 0);
    TEST_CHECK(st == WK_OK, "%s %s %s: matmul of the NHWC-ordered columns: %s (%s)", spec, s->name,
               wk_dtype_name(dt), wk_status_string(st), wk_last_error());
    const double uo = dt == WK_DTYPE_F16 ? 1.0 / 2048 : 1.0 / 256;
    const double ua = 2.0 * ((double)K + 2) * ldexp(1, -24) + 2 * uo;
    for (int pass = 0; pass < (s->by_default ? 2 : 1); pass++) { /* WICK_CONV=nhwc, default */
        const char *mode = pass ? NULL : "nhwc", *what = pass ? "the default path" : "nhwc";
        wk_storage *on = run(mode, sx, lx, sw, lw, p);
        if (on && om && !testlib_download_f64(got, no, on) && !testlib_download_f64(ref, no, om)) {
            size_t bad = 0, diff = 0;
            for (size_t i = 0; i < no; i++) {
                if (memcmp(&got[i], &ref[i], sizeof got[i]) != 0 && diff++ < 3)
                    printf("  %s %s %s: element %zu %s %.9g, GEMM in (kh, kw, c) order %.9g\n",
                           spec, s->name, wk_dtype_name(dt), i, what, got[i], ref[i]);
                if (!(fabs(got[i] - want[i]) <= ua * mag[i] + ldexp(1, -24)) && bad++ < 3)
                    printf("  %s %s %s: element %zu %s %.9g, want %.9g\n", spec, s->name,
                           wk_dtype_name(dt), i, what, got[i], want[i]);
            }
            TEST_CHECK(diff == 0, "%s %s %s: %zu of %zu elements of %s differ from the portable "
                       "GEMM in (kh, kw, c) order", spec, s->name, wk_dtype_name(dt), diff, no,
                       what);
            TEST_CHECK(bad == 0, "%s %s %s: %zu of %zu elements of %s outside the bound", spec,
                       s->name, wk_dtype_name(dt), bad, no, what);
        }
        wk_storage_free(on);
    }
    wk_storage_free(om);
    wk_storage_free(swt);
    wk_storage_free(sct);
    free(wt), free(ct), free(got), free(ref);
}

static void run_shape(wk_device *dev, const char *spec, const shape *s, wk_dtype dt)
{
    const int64_t cig = s->ci / s->groups, cog = s->co / s->groups, kk = s->kh * s->kw;
    const int64_t ho = (s->h + 2 * s->ph - s->dh * (s->kh - 1) - 1) / s->sh + 1;
    const int64_t wo = (s->w + 2 * s->pw - s->dw * (s->kw - 1) - 1) / s->sw + 1;
    const int64_t rw = s->w + s->wpad; /* x's row stride */
    const size_t nx = (size_t)(s->n * s->ci * s->h * rw), nw = (size_t)(s->co * cig * kk);
    const size_t no = (size_t)(s->n * s->co * ho * wo);
    double *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
    double *want = malloc(no * sizeof *want), *mag = malloc(no * sizeof *mag);
    for (size_t i = 0; i < nx; i++)
        x[i] = round_to(dt, rnd());
    for (size_t i = 0; i < nw; i++)
        w[i] = round_to(dt, rnd() * 0.5);
    /* float64 reference */
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t co = 0; co < s->co; co++)
            for (int64_t oh = 0; oh < ho; oh++)
                for (int64_t ow = 0; ow < wo; ow++) {
                    const int64_t gr = co / cog;
                    double acc = 0, m = 0;
                    for (int64_t c = 0; c < cig; c++)
                        for (int64_t a = 0; a < s->kh; a++)
                            for (int64_t b = 0; b < s->kw; b++) {
                                const int64_t ih = oh * s->sh - s->ph + a * s->dh;
                                const int64_t iw = ow * s->sw - s->pw + b * s->dw;
                                if (ih < 0 || ih >= s->h || iw < 0 || iw >= s->w)
                                    continue;
                                const double xv =
                                    x[((n * s->ci + gr * cig + c) * s->h + ih) * rw + iw];
                                const double wv = w[((co * cig + c) * s->kh + a) * s->kw + b];
                                acc += xv * wv;
                                m += fabs(xv * wv);
                            }
                    const size_t o = (size_t)(((n * s->co + co) * ho + oh) * wo + ow);
                    want[o] = acc;
                    mag[o] = m;
                }

    wk_storage *sx = testlib_upload_f64(dev, dt, x, nx), *sw = testlib_upload_f64(dev, dt, w, nw);
    const wk_layout lx = {.rank = 4,
                          .dims = {s->n, s->ci, s->h, s->w},
                          .strides = {s->ci * s->h * rw, s->h * rw, rw, 1}};
    const wk_layout lw = {.rank = 4,
                          .dims = {s->co, cig, s->kh, s->kw},
                          .strides = {cig * kk, kk, s->kw, 1}};
    const wk_conv_params p = {.stride = {s->sh, s->sw}, .padding = {s->ph, s->pw},
                              .dilation = {s->dh, s->dw}, .groups = s->groups};
    if (sx && sw)
        run_nhwc(dev, spec, s, dt, x, w, want, mag, ho, wo, sx, &lx, sw, &lw, &p);
    wk_storage_free(sx);
    wk_storage_free(sw);
    free(x), free(w), free(want), free(mag);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    int ran = 0;
    for (int d = 0; d < n; d++) {
        if (!strcmp(specs[d], "cpu"))
            continue;
        wk_device *dev = NULL;
        if (!TEST_EQ_STATUS(wk_device_open(&dev, specs[d]), WK_OK))
            continue;
        const wk_dtype dts[2] = {WK_DTYPE_F16, WK_DTYPE_BF16};
        if (!wk_gpu_matrix_units(dev, WK_DTYPE_F16)) {
            printf("skip: %s has no matrix-unit path (the implicit GEMM is not built for it)\n",
                   specs[d]);
        } else {
            for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
                for (int t = 0; t < 2; t++)
                    run_shape(dev, specs[d], &SHAPES[i], dts[t]);
            ran = 1;
        }
        wk_device_close(dev);
    }
    if (!ran)
        printf("skip: no GPU device with matrix units in WICK_TEST_DEVICES\n");
    return testlib_summary();
}
