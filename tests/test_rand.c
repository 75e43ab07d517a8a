/* test_rand.c: the counter-based random numbers (set_seed, rand_uniform, rand_normal).
 * Expected values: Philox4x32-10 known-answer vectors from the Random123 distribution
 * (kat_vectors: counter/key all 0, all 1s, and the pi digits), statistics of the uniform and
 * normal laws (mean, variance, range, with bounds of 6 standard errors), the stream rule of
 * wick.h (draw k continues where draw k-1 stopped; set_seed restarts), and, on every GPU present,
 * bit-identical samples to the CPU backend's for the same seed. */
#include "philox.h"
#include "testlib.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void philox_kat(void)
{
    static const uint32_t want[3][4] = {
        {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u},
    };
    wk_philox4 got[3] = {
        wk_philox4x32_10(0, 0, 0, 0, 0, 0),
        wk_philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u),
        wk_philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u),
    };
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 4; j++)
            TEST_CHECK(got[k].v[j] == want[k][j], "philox KAT %d word %d: %08x want %08x", k, j,
                       got[k].v[j], want[k][j]);
    /* the shared f64 log and cos against libm (they replace it so GPUs agree bit for bit) */
    double worst = 0;
    for (int i = 1; i <= 4096; i++) {
        double x = i / 4096.0, t = (i - 1) / 4096.0;
        worst = fmax(worst, fabs(wk_philox_log(x) - log(x)) / fmax(1.0, fabs(log(x))));
        worst = fmax(worst, fabs(wk_philox_cos2pi(t) - cos(2 * M_PI * t)));
    }
    TEST_CHECK(worst < 2e-15, "shared log/cos error %g (a few ulp)", worst);
}

/* n samples as doubles. */
static double *draw(wk_device *dev, int normal, wk_dtype dt, size_t n, double a, double b)
{
    wk_storage *s = NULL, *f = NULL;
    wk_layout l = testlib_layout1((int64_t)n);
    wk_status st = normal ? wk_rand_normal(&s, dev, dt, n, a, b) : wk_rand_uniform(&s, dev, dt, n, a, b);
    if (!TEST_CHECK(st == WK_OK, "rand %s: %s", wk_dtype_name(dt), wk_last_error()))
        return NULL;
    double *h = malloc(n * sizeof *h);
    TEST_EQ_STATUS(wk_to_dtype(&f, s, &l, WK_DTYPE_F64), WK_OK);
    testlib_download(h, n, f);
    wk_storage_free(s);
    wk_storage_free(f);
    return h;
}

static void stats(const char *spec, wk_device *dev)
{
    const wk_dtype dts[] = {WK_DTYPE_F32, WK_DTYPE_F64, WK_DTYPE_BF16, WK_DTYPE_F16};
    const size_t n = 200000;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        /* uniform on [-1, 3): mean 1, variance 16/12, every sample inside */
        double *u = draw(dev, 0, dts[d], n, -1.0, 3.0);
        double *z = draw(dev, 1, dts[d], n, 2.0, 0.5);
        if (!u || !z) {
            free(u);
            free(z);
            continue;
        }
        double su = 0, su2 = 0, sz = 0, sz2 = 0;
        int inside = 1;
        for (size_t i = 0; i < n; i++) {
            inside &= u[i] >= -1.0 && u[i] <= 3.0;
            su += u[i];
            su2 += (u[i] - 1) * (u[i] - 1);
            sz += z[i];
            sz2 += (z[i] - 2) * (z[i] - 2);
        }
        /* 6 standard errors: sd(mean) = sigma/sqrt(n); sd(var) ~ sigma^2 sqrt(2/n) (normal),
         * sigma^2 * sqrt(0.8/n) (uniform: kurtosis 1.8) */
        double se_u = sqrt(16.0 / 12 / n), se_z = 0.5 / sqrt((double)n);
        TEST_CHECK(inside, "%s %s uniform sample outside [-1, 3]", spec, wk_dtype_name(dts[d]));
        TEST_CHECK(fabs(su / n - 1.0) < 6 * se_u + 0.01 * (dts[d] == WK_DTYPE_BF16),
                   "%s %s uniform mean %g", spec, wk_dtype_name(dts[d]), su / n);
        TEST_CHECK(fabs(su2 / n - 16.0 / 12) < 6 * (16.0 / 12) * sqrt(0.8 / n) + 0.01,
                   "%s %s uniform variance %g", spec, wk_dtype_name(dts[d]), su2 / n);
        TEST_CHECK(fabs(sz / n - 2.0) < 6 * se_z + 0.01 * (dts[d] == WK_DTYPE_BF16),
                   "%s %s normal mean %g", spec, wk_dtype_name(dts[d]), sz / n);
        TEST_CHECK(fabs(sz2 / n - 0.25) < 6 * 0.25 * sqrt(2.0 / n) + 0.002,
                   "%s %s normal variance %g", spec, wk_dtype_name(dts[d]), sz2 / n);
        free(u);
        free(z);
    }
}

/* Draw 1000 then 24 after seed 7 equals the first 1024 of one draw after seed 7. */
static void stream_rule(const char *spec, wk_device *dev)
{
    TEST_EQ_STATUS(wk_device_set_seed(dev, 7), WK_OK);
    double *a = draw(dev, 0, WK_DTYPE_F32, 1000, 0, 1), *b = draw(dev, 0, WK_DTYPE_F32, 24, 0, 1);
    TEST_EQ_STATUS(wk_device_set_seed(dev, 7), WK_OK);
    double *c = draw(dev, 0, WK_DTYPE_F32, 1024, 0, 1);
    TEST_EQ_STATUS(wk_device_set_seed(dev, 8), WK_OK);
    double *d = draw(dev, 0, WK_DTYPE_F32, 1024, 0, 1);
    if (a && b && c && d) {
        TEST_CHECK(memcmp(a, c, 1000 * sizeof *a) == 0, "%s: draw continues the stream", spec);
        TEST_CHECK(memcmp(b, c + 1000, 24 * sizeof *b) == 0, "%s: second draw continues", spec);
        TEST_CHECK(memcmp(c, d, 1024 * sizeof *c) != 0, "%s: another seed, other numbers", spec);
        /* element 0 after seed 7, by the documented formula */
        wk_philox4 r = wk_philox_at(7, 0, 0);
        TEST_CHECK(c[0] == (double)(0.0f + 1.0f * wk_philox_u01_f32(r.v[0])),
                   "%s: element 0 is the documented one", spec);
    }
    free(a), free(b), free(c), free(d);
}

/* Every GPU backend draws the CPU's numbers, bit for bit. */
static void same_as_cpu(const char *spec, wk_device *dev, wk_device *cpu)
{
    const wk_dtype dts[] = {WK_DTYPE_F32, WK_DTYPE_F64, WK_DTYPE_BF16, WK_DTYPE_F16, WK_DTYPE_F8E4M3};
    const size_t n = 100003;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (int normal = 0; normal < 2; normal++) {
            wk_device_set_seed(dev, 1234567);
            wk_device_set_seed(cpu, 1234567);
            double *g = draw(dev, normal, dts[d], n, -0.5, 2.0);
            double *c = draw(cpu, normal, dts[d], n, -0.5, 2.0);
            if (g && c) {
                size_t bad = 0, first = n;
                for (size_t i = 0; i < n; i++)
                    if (memcmp(&g[i], &c[i], sizeof g[i]) != 0 && bad++ == 0)
                        first = i;
                TEST_CHECK(bad == 0, "%s %s %s: %zu of %zu differ from the CPU (first %zu: %.17g vs %.17g)",
                           spec, wk_dtype_name(dts[d]), normal ? "normal" : "uniform", bad, n,
                           first, first < n ? g[first] : 0.0, first < n ? c[first] : 0.0);
            }
            free(g);
            free(c);
        }
}

static void bad_input(wk_device *dev)
{
    wk_storage *s = NULL;
    TEST_EQ_STATUS(wk_rand_uniform(&s, dev, WK_DTYPE_I32, 4, 0, 1), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_rand_uniform(&s, dev, WK_DTYPE_F32, 4, 1, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_rand_normal(&s, dev, WK_DTYPE_F32, 4, 0, -1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_rand_normal(&s, dev, WK_DTYPE_F32, 4, NAN, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_rand_normal(NULL, dev, WK_DTYPE_F32, 4, 0, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_rand_normal(&s, NULL, WK_DTYPE_F32, 4, 0, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_device_set_seed(NULL, 1), WK_ERR_INVALID_ARGUMENT);
    TEST_CHECK(s == NULL, "no output on failure");
}

int main(void)
{
    philox_kat();
    const char *specs[TESTLIB_MAX_DEVICES];
    int n = testlib_devices(specs);
    wk_device *cpu = NULL;
    TEST_EQ_STATUS(wk_device_open(&cpu, "cpu"), WK_OK);
    for (int i = 0; i < n && cpu; i++) {
        wk_device *dev = NULL;
        if (!TEST_CHECK(wk_device_open(&dev, specs[i]) == WK_OK, "open %s: %s", specs[i], wk_last_error()))
            continue;
        printf("device %s\n", wk_device_name(dev));
        stats(specs[i], dev);
        stream_rule(specs[i], dev);
        bad_input(dev);
        if (i > 0)
            same_as_cpu(specs[i], dev, cpu);
        wk_device_close(dev);
    }
    wk_device_close(cpu);
    return testlib_summary();
}
