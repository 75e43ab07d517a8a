/* testlib.c: the tiny test library (see testlib.h). Single-threaded by design. */
#include "testlib.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int g_passed, g_failed;

int testlib_check(int cond, const char *file, int line, const char *fmt, ...)
{
    if (cond) {
        g_passed++;
        return 1;
    }
    g_failed++;
    printf("FAIL %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    return 0;
}

int testlib_eq_int(long long a, long long b, const char *as, const char *bs, const char *file,
                   int line)
{
    return testlib_check(a == b, file, line, "%s == %s: got %lld (0x%llx), expected %lld (0x%llx)",
                         as, bs, a, (unsigned long long)a, b, (unsigned long long)b);
}

int testlib_eq_status(wk_status got, wk_status want, const char *expr, const char *file, int line)
{
    if (got == want)
        return testlib_check(1, file, line, "ok");
    return testlib_check(0, file, line, "%s: got %s, expected %s (last error: \"%s\")", expr,
                         wk_status_string(got), wk_status_string(want), wk_last_error());
}

int testlib_near(double a, double b, double tol, const char *as, const char *bs, const char *file,
                 int line)
{
    int ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= tol;
    return testlib_check(ok, file, line, "%s ~ %s: got %.17g, expected %.17g (tol %g)", as, bs, a,
                         b, tol);
}

int testlib_failed(void) { return g_failed; }

int testlib_summary(void)
{
    fflush(stdout);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    fflush(stdout);
    return g_failed ? 1 : 0;
}

int testlib_devices(const char *specs[TESTLIB_MAX_DEVICES])
{
    static char names[TESTLIB_MAX_DEVICES][32];
    static int printed;
    int n = 0;
    /* WICK_TEST_DEVICES="cpu,simt:1": exactly these (e.g. the simt device, never listed
     * otherwise) */
    const char *want = getenv("WICK_TEST_DEVICES");
    if (want && *want) {
        for (const char *p = want; *p && n < TESTLIB_MAX_DEVICES;) {
            size_t len = strcspn(p, ",");
            if (len > 0 && len < sizeof names[n]) {
                memcpy(names[n], p, len);
                names[n][len] = 0;
                specs[n] = names[n];
                n++;
            }
            p += len + (p[len] == ',');
        }
        return n;
    }
    specs[n++] = "cpu";
    const wk_backend_kind gpus[2] = {WK_BACKEND_CUDA, WK_BACKEND_ROCM};
    for (int g = 0; g < 2; g++) {
        int count = 0;
        const char *reason = NULL;
        wk_status s = wk_backend_device_count(&count, &reason, gpus[g]);
        if (s != WK_OK || count <= 0) {
            if (!printed)
                printf("skip: %s unavailable: %s\n", wk_backend_name(gpus[g]),
                       s != WK_OK ? wk_last_error() : (reason && *reason ? reason : "no device"));
            continue;
        }
        for (int i = 0; i < count && n < TESTLIB_MAX_DEVICES; i++) {
            snprintf(names[n], sizeof names[n], "%s:%d", wk_backend_name(gpus[g]), i);
            specs[n] = names[n];
            n++;
        }
    }
    printed = 1;
    fflush(stdout);
    return n;
}

wk_storage *testlib_upload(wk_device *dev, wk_dtype dtype, const void *src, size_t n)
{
    wk_storage *s = NULL;
    wk_status st = wk_storage_from_host(&s, dev, dtype, src, n);
    if (st != WK_OK) {
        testlib_check(0, __FILE__, __LINE__, "upload of %zu %s: %s (%s)", n, wk_dtype_name(dtype),
                      wk_status_string(st), wk_last_error());
        return NULL;
    }
    return s;
}

int testlib_download(void *dst, size_t n, const wk_storage *s)
{
    wk_status st = wk_storage_to_host(dst, n, s);
    if (st != WK_OK) {
        testlib_check(0, __FILE__, __LINE__, "download of %zu: %s (%s)", n, wk_status_string(st),
                      wk_last_error());
        return 1;
    }
    return 0;
}

wk_layout testlib_layout(int32_t rank, const int64_t *dims)
{
    wk_layout l;
    memset(&l, 0, sizeof l);
    l.rank = rank;
    int64_t stride = 1;
    for (int k = rank - 1; k >= 0; k--) {
        l.dims[k] = dims[k];
        l.strides[k] = stride;
        /* wraps (unsigned) for the deliberately overflowing layouts of the bad-input tests */
        stride = (int64_t)((uint64_t)stride * (uint64_t)(dims[k] > 0 ? dims[k] : 1));
    }
    return l;
}

wk_layout testlib_layout1(int64_t n) { return testlib_layout(1, &n); }

wk_layout testlib_layout2(int64_t d0, int64_t d1)
{
    const int64_t d[2] = {d0, d1};
    return testlib_layout(2, d);
}

/* One float element of dtype dt at index i of buf, as a double, and back (testlib.h). */
double testlib_f64_of(const void *buf, size_t i, wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_F64: return ((const double *)buf)[i];
    case WK_DTYPE_F32: return ((const float *)buf)[i];
    case WK_DTYPE_F16: return wk_f16_to_f32(((const uint16_t *)buf)[i]);
    case WK_DTYPE_BF16: return wk_bf16_to_f32(((const uint16_t *)buf)[i]);
    default: return wk_f8e4m3_to_f32(((const uint8_t *)buf)[i]);
    }
}

void testlib_f64_to(void *buf, size_t i, wk_dtype dt, double v)
{
    switch (dt) {
    case WK_DTYPE_F64: ((double *)buf)[i] = v; break;
    case WK_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case WK_DTYPE_F16: ((uint16_t *)buf)[i] = wk_f32_to_f16((float)v); break;
    case WK_DTYPE_BF16: ((uint16_t *)buf)[i] = wk_f32_to_bf16((float)v); break;
    default: ((uint8_t *)buf)[i] = wk_f32_to_f8e4m3((float)v); break;
    }
}

wk_storage *testlib_upload_f64(wk_device *dev, wk_dtype dtype, const double *v, size_t n)
{
    void *buf = malloc(n * wk_dtype_size(dtype) + 1);
    if (!TEST_CHECK(buf && wk_dtype_is_float(dtype), "testlib_upload_f64: %s", wk_dtype_name(dtype))) {
        free(buf);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        testlib_f64_to(buf, i, dtype, v[i]);
    wk_storage *s = testlib_upload(dev, dtype, buf, n);
    free(buf);
    return s;
}

int testlib_download_f64(double *v, size_t n, const wk_storage *s)
{
    wk_dtype dt = wk_storage_dtype(s);
    void *buf = malloc(n * wk_dtype_size(dt) + 1);
    if (!TEST_CHECK(buf && wk_dtype_is_float(dt), "testlib_download_f64: %s", wk_dtype_name(dt))) {
        free(buf);
        return 1;
    }
    int rc = testlib_download(buf, n, s);
    for (size_t i = 0; !rc && i < n; i++)
        v[i] = testlib_f64_of(buf, i, dt);
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- file-reader test helpers */
_Atomic long testlib_live, testlib_allocs, testlib_fail_at;

void *testlib_count_alloc(size_t bytes, void *user)
{
    (void)user;
    long k = atomic_fetch_add(&testlib_allocs, 1) + 1;
    if (atomic_load(&testlib_fail_at) == k)
        return NULL;
    void *p = malloc(bytes);
    if (p)
        atomic_fetch_add(&testlib_live, 1);
    return p;
}

void testlib_count_free(void *p, void *user)
{
    (void)user;
    if (p)
        atomic_fetch_sub(&testlib_live, 1);
    free(p);
}

char testlib_dir[64];

const char *testlib_tmp_path(const char *name)
{
    static char bufs[8][128];
    static int next;
    char *p = bufs[next++ % 8];
    snprintf(p, sizeof bufs[0], "%s/%s", testlib_dir, name);
    return p;
}

void testlib_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    TEST_CHECK(f != NULL, "cannot create %s", path);
    if (!f)
        return;
    TEST_CHECK(n == 0 || fwrite(p, 1, n, f) == n, "short write to %s", path);
    fclose(f);
}

uint8_t *testlib_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(len > 0 ? (size_t)len : 1);
    *n = p && fread(p, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return p;
}
