/* test_conv_ref.c: conv1d and conv2d on shapes chosen to reach every edge of the CPU's tiled
 * paths (cpu_conv_avx512.c: tiles of 8 output channels x 48 pixels, work items of 192 pixels,
 * or of 48 when K is large; and the im2col + gemm path), against a naive float64 convolution
 * written here:
 *   output channels and pixel counts that are not multiples of the tile, several work items,
 *   tiles that cross images, a few hundred and over a thousand taps,
 *   groups, stride 2 (and a different stride per dim), dilation, padding wider than the kernel,
 *   a kernel wider than the image, 1-pixel outputs, 1x1 kernels, a non-contiguous input;
 *   convs that read the input in place (cpu_conv_avx512_direct.c: wo < w, short last tiles,
 *   output rows outside the input);
 *   in f32, f64, f16 and bf16, on each path (WICK_CPU_CONV unset, "padded", then "gemm").
 * 1. Exact values: inputs and weights are multiples of 1/8 in [-2, 2] (exact in bf16 and f16),
 *    so every product is a multiple of 1/64 and every partial sum here is exact in f32: f32 and
 *    f64 must match the reference exactly; f16 and bf16 within the one rounding of the output
 *    (relative 2^-11 and 2^-8).
 * 2. Random values in [-1, 1]: f32 within (K + 2) * 2^-24 * sum |w*x| of the reference (K taps
 *    summed in f32, plus the rounding of x and w to f32), and the same bits on 1, 2 and 3
 *    threads (each output sums its taps in one fixed order).
 * The CPU device only: the paths and the thread counts are the CPU's.
 * Run: ctest -R test_conv_ref */
#include "testlib.h"
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static wk_device *g_dev;
static const char *g_spec, *g_path;

/* One case: a conv2d, or a conv1d when one_d (h = kh = 1; the W parameters are used). */
typedef struct conv_case {
    const char *name;
    int one_d;
    int64_t n, ci, h, w, co, kh, kw;
    int32_t sh, sw, ph, pw, dh, dw, g;
} conv_case;

static int64_t out_h(const conv_case *c)
{
    return (c->h + 2 * c->ph - c->dh * (c->kh - 1) - 1) / c->sh + 1;
}

static int64_t out_w(const conv_case *c)
{
    return (c->w + 2 * c->pw - c->dw * (c->kw - 1) - 1) / c->sw + 1;
}

/* ref [n, co, ho, wo] = the convolution of x [n, ci, h, w] by w [co, ci/g, kh, kw], and
 * mag = the sum of |w*x| over the same taps (for error bounds). Seven loops, nothing shared
 * with the library. */
static void conv_ref(double *ref, double *mag, const conv_case *c, const double *x, const double *w)
{
    const int64_t ho = out_h(c), wo = out_w(c), cig = c->ci / c->g, cog = c->co / c->g;
    for (int64_t b = 0; b < c->n; b++)
        for (int64_t o = 0; o < c->co; o++)
            for (int64_t oh = 0; oh < ho; oh++)
                for (int64_t ow = 0; ow < wo; ow++) {
                    double s = 0, m = 0;
                    for (int64_t i = 0; i < cig; i++)
                        for (int64_t kh = 0; kh < c->kh; kh++)
                            for (int64_t kw = 0; kw < c->kw; kw++) {
                                const int64_t ih = oh * c->sh - c->ph + kh * c->dh;
                                const int64_t iw = ow * c->sw - c->pw + kw * c->dw;
                                if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w)
                                    continue;
                                const int64_t ic = o / cog * cig + i;
                                const double p = w[((o * cig + i) * c->kh + kh) * c->kw + kw] *
                                                 x[((b * c->ci + ic) * c->h + ih) * c->w + iw];
                                s += p;
                                m += fabs(p);
                            }
                    const int64_t at = ((b * c->co + o) * ho + oh) * wo + ow;
                    ref[at] = s;
                    mag[at] = m;
                }
}

/* got = the library's conv of x and w (dtype dt); x is passed through a non-contiguous layout
 * (its last two dims stored transposed) when transposed. Returns 0 on success. */
static int conv_run(double *got, const conv_case *c, wk_dtype dt, const double *x,
                    const double *w, int transposed)
{
    const int64_t nx = c->n * c->ci * c->h * c->w, nw = c->co * (c->ci / c->g) * c->kh * c->kw;
    const int64_t nout = c->n * c->co * out_h(c) * out_w(c);
    double *xs = malloc((size_t)nx * sizeof(double));
    wk_layout lx, lw;
    if (c->one_d) {
        const int64_t dx[3] = {c->n, c->ci, c->w}, dw[3] = {c->co, c->ci / c->g, c->kw};
        lx = testlib_layout(3, dx), lw = testlib_layout(3, dw);
    } else {
        const int64_t dx[4] = {c->n, c->ci, c->h, c->w}, dw[4] = {c->co, c->ci / c->g, c->kh, c->kw};
        lx = testlib_layout(4, dx), lw = testlib_layout(4, dw);
    }
    /* transposed: the storage holds [.., last, second last]; the layout reads it back */
    const int r = lx.rank;
    const int64_t d0 = lx.dims[r - 2], d1 = lx.dims[r - 1];
    for (int64_t i = 0; i < nx; i++) {
        const int64_t blk = i / (d0 * d1), a = i / d1 % d0, b = i % d1;
        xs[transposed ? blk * d0 * d1 + b * d0 + a : i] = x[i];
    }
    if (transposed)
        lx.strides[r - 2] = 1, lx.strides[r - 1] = d0;
    wk_conv_params p = {.groups = c->g};
    const int i = c->one_d ? 0 : 1;
    p.stride[0] = c->sh, p.padding[0] = c->ph, p.dilation[0] = c->dh;
    p.stride[i] = c->sw, p.padding[i] = c->pw, p.dilation[i] = c->dw;
    wk_storage *sx = testlib_upload_f64(g_dev, dt, xs, (size_t)nx);
    wk_storage *sw = testlib_upload_f64(g_dev, dt, w, (size_t)nw), *so = NULL;
    int rc = 1;
    if (sx && sw) {
        const wk_status st = c->one_d ? wk_conv1d(&so, sx, &lx, sw, &lw, &p)
                                      : wk_conv2d(&so, sx, &lx, sw, &lw, &p);
        if (TEST_CHECK(st == WK_OK, "%s (%s): %s %s: %s (%s)", g_spec, g_path, c->name,
                       wk_dtype_name(dt), wk_status_string(st), wk_last_error()) &&
            TEST_CHECK(wk_storage_len(so) == (size_t)nout, "%s: %s output has %zu elements",
                       g_spec, c->name, wk_storage_len(so)))
            rc = testlib_download_f64(got, (size_t)nout, so);
    }
    wk_storage_free(so);
    wk_storage_free(sw);
    wk_storage_free(sx);
    free(xs);
    return rc;
}

/* got vs ref within tol_rel*|ref| + tol_mag*mag; reports the first miss. */
static void compare(const conv_case *c, const char *what, wk_dtype dt, const double *got,
                    const double *ref, const double *mag, int64_t n, double tol_rel, double tol_mag)
{
    for (int64_t i = 0; i < n; i++) {
        const double tol = tol_rel * fabs(ref[i]) + tol_mag * mag[i];
        if (!TEST_CHECK(fabs(got[i] - ref[i]) <= tol, "%s (%s): %s %s %s: element %lld is %.9g, want %.9g (tol %.3g)",
                        g_spec, g_path, c->name, what, wk_dtype_name(dt), (long long)i, got[i],
                        ref[i], tol))
            return;
    }
}

static const conv_case CASES[] = {
    /* name                          1d  n  ci   h   w  co kh kw sh sw ph pw dh dw g */
    {"2d k3 p1, 144 px, co 16",       0, 2, 16, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d co 11, ci 5, 9x23",          0, 1, 5, 9, 23, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d groups 3, cog 3",            0, 2, 6, 10, 10, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3},
    {"2d groups 2, cog 12",           0, 1, 4, 13, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 2},
    {"2d stride 2, 17x19",            0, 2, 4, 17, 19, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {"2d stride (2,1) dil (1,2)",     0, 1, 3, 15, 21, 9, 3, 3, 2, 1, 1, 2, 1, 2, 1},
    {"2d stride 3 groups 2",          0, 2, 4, 23, 29, 6, 2, 3, 3, 3, 0, 1, 1, 1, 2},
    {"2d dilation 2 p2",              0, 1, 3, 11, 14, 8, 3, 3, 1, 1, 2, 2, 2, 2, 1},
    {"2d padding 3 > kernel 2",       0, 2, 2, 5, 6, 5, 2, 2, 1, 1, 3, 3, 1, 1, 1},
    {"2d kernel 5 > image 3, p2",     0, 1, 3, 3, 3, 4, 5, 5, 1, 1, 2, 2, 1, 1, 1},
    {"2d 1-pixel output",             0, 3, 7, 5, 5, 9, 5, 5, 1, 1, 0, 0, 1, 1, 1},
    {"2d 1x1 kernel, padding 1",      0, 1, 6, 7, 9, 10, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {"2d 1x1 kernel, plain",          0, 2, 6, 7, 9, 10, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"2d kernel 1x3 / 3x1 pads",      0, 1, 3, 8, 9, 5, 1, 3, 1, 1, 0, 1, 1, 1, 1},
    {"2d 40x50, many blocks",         0, 1, 3, 40, 50, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d 41x45 stride 2, blocks",     0, 2, 3, 41, 45, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {"2d 1x1 image",                  0, 2, 3, 1, 1, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d 7x7 batch 5 (tiles cross)",  0, 5, 6, 7, 7, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d K 333",                      0, 2, 37, 9, 11, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d K 333 stride 2",             0, 2, 37, 9, 11, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {"2d K 1440 stride 2 (1 tile)",   0, 3, 160, 9, 9, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    /* the in-place masked path (cpu_conv_avx512_direct.c): wo < w, tails of 16 and 32 lanes,
     * output rows past the input (ph > kernel reach), dilation, tall kernels */
    {"2d k3 p0, wo < w, 30x60",       0, 2, 5, 30, 60, 12, 3, 3, 1, 1, 0, 0, 1, 1, 1},
    {"2d k3 p1 8x8, tail 16",         0, 3, 4, 8, 8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d k3 p(0,1), 6x20",            0, 3, 4, 6, 20, 9, 3, 3, 1, 1, 0, 1, 1, 1, 1},
    {"2d k3 p1, tail 32, co 20",      0, 2, 3, 4, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"2d k2 p(2,0) rows past input",  0, 2, 3, 9, 24, 7, 2, 2, 1, 1, 2, 0, 1, 1, 1},
    {"2d dil (2,3) k3 p(2,3)",        0, 1, 4, 12, 31, 10, 3, 3, 1, 1, 2, 3, 2, 3, 1},
    {"2d kernel 7x1 p(3,0) g 2",      0, 2, 6, 15, 17, 8, 7, 1, 1, 1, 3, 0, 1, 1, 2},
    {"1d k3 p1, L 1024 (tail 16)",    1, 2, 9, 1, 1024, 17, 1, 3, 1, 1, 0, 1, 1, 1, 1},
    {"1d k3 p1, L 100, co 13",        1, 3, 7, 1, 100, 13, 1, 3, 1, 1, 0, 1, 1, 1, 1},
    {"1d s2 d2 p3 groups 2",          1, 2, 8, 1, 257, 6, 1, 3, 1, 2, 0, 3, 1, 2, 2},
    {"1d k7 p3, L 500",               1, 1, 4, 1, 500, 16, 1, 7, 1, 1, 0, 3, 1, 1, 1},
    {"1d 1 output",                   1, 2, 5, 1, 4, 3, 1, 4, 1, 1, 0, 0, 1, 1, 1},
    {"1d groups = channels",          1, 1, 8, 1, 61, 8, 1, 3, 1, 1, 0, 1, 1, 1, 8},
    {"1d K 519",                      1, 2, 173, 1, 60, 9, 1, 3, 1, 1, 0, 1, 1, 1, 1},
    {"1d K 1500 L 20 (1 tile)",       1, 3, 500, 1, 20, 11, 1, 3, 1, 1, 0, 1, 1, 1, 1},
};
enum { NCASES = sizeof CASES / sizeof CASES[0] };

/* x and w of case c: multiples of 1/8 in [-2, 2] (exact), or random in [-1, 1]. */
static void fill(double *v, int64_t n, unsigned seed, int exact)
{
    uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t r = (uint32_t)(s >> 33);
        v[i] = exact ? (double)((int)(r % 33) - 16) / 8.0 : (double)r / 2147483648.0 * 2.0 - 1.0;
    }
}

static void test_case(const conv_case *c, int exact)
{
    const int64_t nx = c->n * c->ci * c->h * c->w, nw = c->co * (c->ci / c->g) * c->kh * c->kw;
    const int64_t nout = c->n * c->co * out_h(c) * out_w(c);
    double *x = malloc((size_t)nx * sizeof(double)), *w = malloc((size_t)nw * sizeof(double));
    double *ref = malloc((size_t)nout * 4 * sizeof(double));
    double *mag = ref + nout, *got = mag + nout, *got1 = got + nout;
    fill(x, nx, (unsigned)nx, exact);
    fill(w, nw, (unsigned)nw + 7, exact);
    conv_ref(ref, mag, c, x, w);
    if (exact) {
        const wk_dtype dts[4] = {WK_DTYPE_F32, WK_DTYPE_F64, WK_DTYPE_F16, WK_DTYPE_BF16};
        const double rel[4] = {0, 0, 0x1p-11, 0x1p-8};
        for (int d = 0; d < 4; d++)
            for (int t = 0; t < 2; t++)
                if (!conv_run(got, c, dts[d], x, w, t))
                    compare(c, t ? "strided x" : "", dts[d], got, ref, mag, nout, rel[d], 0);
    } else {
        /* the same bits on 1, 2 and 3 threads, and near the reference */
        const int nt0 = omp_get_max_threads();
        for (int nt = 1; nt <= 3; nt++) {
            omp_set_num_threads(nt);
            if (conv_run(nt == 1 ? got1 : got, c, WK_DTYPE_F32, x, w, 0))
                break;
            const double taps = (double)(c->ci / c->g * c->kh * c->kw);
            if (nt == 1)
                compare(c, "random", WK_DTYPE_F32, got1, ref, mag, nout, 0, (taps + 2) * 0x1p-24);
            else
                TEST_CHECK(!memcmp(got, got1, (size_t)nout * sizeof(double)),
                           "%s (%s): %s: %d threads give other bits than 1", g_spec, g_path,
                           c->name, nt);
        }
        omp_set_num_threads(nt0);
    }
    free(ref);
    free(w);
    free(x);
}

int main(void)
{
    const char *specs[TESTLIB_MAX_DEVICES];
    const int n = testlib_devices(specs);
    /* the CPU's paths: its default (the AVX-512F conv where the CPU has it: in place where it
     * fits), the AVX-512F conv on its padded copy of the input, then gemm */
    const char *paths[3] = {"default", "padded", "gemm"};
    for (int i = 0; i < n; i++) {
        g_spec = specs[i];
        if (strcmp(g_spec, "cpu") != 0)
            continue;
        if (!TEST_EQ_STATUS(wk_device_open(&g_dev, g_spec), WK_OK))
            continue;
        printf("device %s\n", g_spec);
        for (int pi = 0; pi < 3; pi++) {
            g_path = paths[pi];
            if (pi)
                setenv("WICK_CPU_CONV", paths[pi], 1);
            for (int c = 0; c < NCASES; c++)
                for (int exact = 1; exact >= 0; exact--)
                    test_case(&CASES[c], exact);
            unsetenv("WICK_CPU_CONV");
        }
        wk_device_close(g_dev);
        g_dev = NULL;
    }
    return testlib_summary();
}
