/* test_host_cache.c: the cache of large freed CPU blocks (src/core/host_cache.c), its cap
 * (WICK_CPU_CACHE_MB, set to 8 here before the first use), and when it lets go: the last handle
 * closing, wk_set_allocator, and a user's allocator (which must see every allocation); blocks
 * of 2 MiB or more on 2 MiB boundaries for transparent huge pages.
 * In AddressSanitizer builds the cache is off by design: every free must then really free.
 * Run: ctest -R test_host_cache */
#include "core/wk_core.h"
#include "testlib.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif

#define MIB ((size_t)1 << 20)

static size_t g_allocs, g_frees;
static void *count_alloc(size_t n, void *u) { (void)u; g_allocs++; return malloc(n); }
static void count_free(void *p, void *u) { (void)u; g_frees++; free(p); }

int main(void)
{
    setenv("WICK_CPU_CACHE_MB", "8", 1);
    wk_device *dev = NULL;
    if (!TEST_EQ_STATUS(wk_device_open(&dev, "cpu"), WK_OK)) /* one live handle: no flushes */
        return testlib_summary();

    /* 1. a freed 3 MiB block is kept (class 3.25 MiB: 3 MiB + the header, rounded up to 1/8 of
     *    2 MiB) and handed to the next request of that class, whose size may differ a little */
    char *p = wk_host_alloc(3 * MIB);
    TEST_CHECK(p && (uintptr_t)p % 16 == 0, "16-byte aligned data");
    memset(p, 0x5a, 3 * MIB); /* the whole block is writable */
    wk_host_free(p);
    const size_t cls = 3 * MIB + MIB / 4;
    TEST_CHECK(wk_host_cache_bytes() == (ASAN ? 0 : cls), "cached after free: %zu bytes, want %zu",
               wk_host_cache_bytes(), ASAN ? 0 : cls);
    char *q = wk_host_alloc(3 * MIB + 4096);
    if (!ASAN)
        TEST_CHECK(q == p, "the same class reuses the block (%p, %p)", (void *)q, (void *)p);
    TEST_CHECK(wk_host_cache_bytes() == 0, "taken out of the cache");
    char *r = wk_host_alloc(5 * MIB); /* another class: a new block */
    TEST_CHECK(r && r != q, "another class gets another block");
    memset(r, 1, 5 * MIB);
#if defined(__linux__)
    /* a cached block of 2 MiB or more starts on a 2 MiB boundary (its 64-byte header first), so
     * that transparent huge pages can back it (WICK_CPU_HUGEPAGES unset: on) */
    if (!ASAN)
        TEST_CHECK(((uintptr_t)r - 64) % (2 * MIB) == 0 && ((uintptr_t)q - 64) % (2 * MIB) == 0,
                   "blocks of 2 MiB or more on 2 MiB boundaries (%p, %p)", (void *)q, (void *)r);
#endif

    /* 2. small blocks are not cached */
    char *s = wk_host_alloc(1000);
    TEST_CHECK(s && (uintptr_t)s % 16 == 0, "small: 16-byte aligned");
    wk_host_free(s);
    TEST_CHECK(wk_host_cache_bytes() == 0, "a 1000-byte block is not cached");

    /* 3. the cap: 8 MiB holds q's 3.25 MiB and r's 5.5 MiB class only one at a time */
    wk_host_free(q);
    wk_host_free(r);
    TEST_CHECK(wk_host_cache_bytes() == (ASAN ? 0 : cls), "cap 8 MiB: %zu bytes cached, want %zu",
               wk_host_cache_bytes(), ASAN ? 0 : cls);

    /* 4. through storages: a freed storage's memory serves the next one of its size */
    wk_storage *a = NULL, *b = NULL;
    TEST_EQ_STATUS(wk_storage_alloc_uninit(&a, dev, WK_DTYPE_F32, 600000), WK_OK);
    wk_storage_free(a);
    const size_t cls2 = 2 * MIB + MIB / 2; /* 2.4 MB + the header, in 1/8 steps of 2 MiB */
    TEST_CHECK(wk_host_cache_bytes() == (ASAN ? 0 : cls + cls2), "a freed storage is cached: %zu bytes",
               wk_host_cache_bytes());
    TEST_EQ_STATUS(wk_storage_zeros(&b, dev, WK_DTYPE_F32, 600000), WK_OK);
    float *v = malloc(600000 * sizeof *v);
    if (b && v && !testlib_download(v, 600000, b)) {
        int nz = 0;
        for (int i = 0; i < 600000; i++)
            nz += v[i] != 0.0f;
        TEST_CHECK(nz == 0, "wk_storage_zeros zeroes a reused block (%d nonzero)", nz);
    }
    free(v);
    wk_storage_free(b);

    /* 5. the last handle closing gives everything back */
    wk_device_close(dev);
    TEST_CHECK(wk_host_cache_bytes() == 0, "flushed when the last handle closed (%zu left)",
               wk_host_cache_bytes());

    /* 6. with a user's allocator nothing is cached: the hook sees the free */
    const wk_allocator al = {count_alloc, count_free, NULL};
    TEST_EQ_STATUS(wk_set_allocator(&al), WK_OK);
    char *t = wk_host_alloc(2 * MIB);
    wk_host_free(t);
    TEST_CHECK(g_allocs == 1 && g_frees == 1 && wk_host_cache_bytes() == 0,
               "user allocator: %zu allocs, %zu frees, %zu cached", g_allocs, g_frees,
               wk_host_cache_bytes());
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);

    /* 7. wk_set_allocator gives cached blocks back to the hook they came from */
    char *u = wk_host_alloc(2 * MIB);
    wk_host_free(u);
    TEST_EQ_STATUS(wk_set_allocator(&al), WK_OK);
    TEST_CHECK(wk_host_cache_bytes() == 0, "flushed by wk_set_allocator");
    TEST_CHECK(g_frees == 1, "the default hook's block did not go to the user's free");
    TEST_EQ_STATUS(wk_set_allocator(NULL), WK_OK);
    return testlib_summary();
}
