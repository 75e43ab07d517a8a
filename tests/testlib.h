/* testlib.h: the tiny test library every tests/test_*.c uses. No framework: checks record a pass
 * or a failure (printed with file:line and a message), testlib_summary() prints one final line
 * "N passed, N failed" and returns the exit code for main.
 *
 *   int main(void) {
 *       TEST_EQ_STATUS(wk_device_open(&dev, "cpu"), WK_OK);
 *       TEST_NEAR(y[0], 2.718281828459045, 1e-6);
 *       return testlib_summary();
 *   }
 */
#ifndef WICK_TESTLIB_H
#define WICK_TESTLIB_H

#include "wick.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Records cond; on failure prints "FAIL file:line: <message>". Returns cond (0 or 1). */
int testlib_check(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int testlib_eq_int(long long a, long long b, const char *as, const char *bs, const char *file,
                   int line);
int testlib_eq_status(wk_status got, wk_status want, const char *expr, const char *file, int line);
/* Passes if both are NaN, or a == b (infinities included), or |a - b| <= tol. */
int testlib_near(double a, double b, double tol, const char *as, const char *bs, const char *file,
                 int line);

#define TEST_CHECK(cond, ...) testlib_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define TEST_EQ_INT(a, b) testlib_eq_int((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
#define TEST_EQ_STATUS(expr, expected) testlib_eq_status((expr), (expected), #expr, __FILE__, __LINE__)
#define TEST_NEAR(a, b, tol) \
    testlib_near((double)(a), (double)(b), (double)(tol), #a, #b, __FILE__, __LINE__)

/* Prints "N passed, N failed" alone on the last line; returns 0 if nothing failed, else 1. */
int testlib_summary(void);
/* Counts so far (for tests that want to report per section). */
int testlib_failed(void);

/* ---- devices */
#define TESTLIB_MAX_DEVICES 32
/* Fills specs with "cpu" followed by "cuda:N" and "rocm:N" for every device present and returns
 * how many. For a backend with no device prints "skip: <backend> unavailable: <reason>" (once
 * per process). The strings are static. */
int testlib_devices(const char *specs[TESTLIB_MAX_DEVICES]);

/* ---- small helpers for tests */
/* out: a storage of n elements of dtype on dev holding src (raw host values); NULL on failure
 * (recorded as a failed check). */
wk_storage *testlib_upload(wk_device *dev, wk_dtype dtype, const void *src, size_t n);
/* dst <- s (n elements); records a failed check and returns non-zero on failure. */
int testlib_download(void *dst, size_t n, const wk_storage *s);
/* Float values as doubles, converted to/from a float dtype (f64 f32 f16 bf16 f8e4m3) with the
 * public scalar conversions; for known-answer tests whose values are exact in the dtype. */
wk_storage *testlib_upload_f64(wk_device *dev, wk_dtype dtype, const double *v, size_t n);
/* v <- s as doubles (s of a float dtype); non-zero on failure (recorded). */
int testlib_download_f64(double *v, size_t n, const wk_storage *s);
/* Element i of host memory buf holding values of float dtype dt, as a double; and v stored
 * there (rounded to dt with the public scalar conversions). */
double testlib_f64_of(const void *buf, size_t i, wk_dtype dt);
void testlib_f64_to(void *buf, size_t i, wk_dtype dt, double v);
/* A contiguous layout of the given dims (rank 0..8). */
wk_layout testlib_layout(int32_t rank, const int64_t *dims);
/* 1-D / 2-D contiguous layouts. */
wk_layout testlib_layout1(int64_t n);
wk_layout testlib_layout2(int64_t d0, int64_t d1);


/* ---- the file-reader tests' helpers (test_gguf, test_safetensors): a counting allocation hook for
 * wk_set_allocator (live blocks, calls so far, and the call number that fails: 0 never) and files
 * in a temporary directory (testlib_dir, made with mkdtemp by the test). */
extern _Atomic long testlib_live, testlib_allocs, testlib_fail_at;
void *testlib_count_alloc(size_t bytes, void *user);
void testlib_count_free(void *p, void *user);
extern char testlib_dir[64];
/* testlib_dir/name, in one of 8 rotating buffers (so a few paths can be held at once). */
const char *testlib_tmp_path(const char *name);
void testlib_write_file(const char *path, const void *p, size_t n);
/* *n bytes of the file at path (malloc'd), or NULL. */
uint8_t *testlib_read_file(const char *path, size_t *n);

#endif
