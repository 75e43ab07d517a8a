/* host_cache.c: the CPU backend's storage memory, with freed large blocks kept for reuse.
 *
 * A model's forward pass allocates and frees the same large activations every step. Through plain
 * malloc each such block is a fresh mmap: its pages fault in one by one and the kernel zeroes them
 * (the MiniLM example on the CPU took 150,000 page faults per batch, about a quarter of its time).
 * So a freed block of at least HC_MIN bytes is kept on a list and handed to the next request of
 * its size class (sizes rounded up to 1/8 of their power of two, so reuse wastes at most 12.5%).
 * The cache holds at most WICK_CPU_CACHE_MB mebibytes (read once; default 1024; 0 turns it off);
 * a block that would pass that is freed. Everything cached is given back when the last device,
 * storage or file handle closes and before wk_set_allocator switches hooks. The cache is used only
 * with the default allocator (a user's hook sees every allocation) and not in AddressSanitizer
 * builds (a reused block would hide a use after free).
 *
 * A cached block of HC_HUGE bytes or more (on Linux) starts on a 2 MiB boundary and is marked for
 * transparent huge pages (madvise MADV_HUGEPAGE; a no-op where THP is off): a large tensor then
 * takes one TLB entry per 2 MiB instead of per 4 KiB, which the memory-bound ops and random row
 * reads (an embedding table) feel. WICK_CPU_HUGEPAGES=0 (read once) turns this off.
 *
 * Each block carries a 64-byte header before the data (its size class and a list link), so the
 * data stays 16-byte aligned as malloc's is and a free needs no size. Contents of a reused block
 * are whatever it last held, as with malloc: storages that must be zero are zeroed by their op. */
#include "wk_core.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define HC_MIN ((size_t)1 << 20)
#define HC_HDR 64
#define HC_HUGE ((size_t)2 << 20)

typedef struct hc_hdr {
    size_t cls;          /* bytes of the whole block, header included (0: below HC_MIN, not cached) */
    struct hc_hdr *next; /* the cache list, while the block is cached */
} hc_hdr;
_Static_assert(sizeof(hc_hdr) <= HC_HDR, "the header fits its slot");

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static hc_hdr *g_list;
static size_t g_bytes, g_cap;
static int g_huge;

#if defined(__SANITIZE_ADDRESS__)
#define HC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HC_ASAN 1
#endif
#endif
#ifndef HC_ASAN
#define HC_ASAN 0
#endif

static void hc_init(void)
{
    const char *e = getenv("WICK_CPU_CACHE_MB");
    const long long mb = e ? atoll(e) : 1024;
    g_cap = HC_ASAN || mb <= 0 ? 0 : (size_t)mb << 20;
    const char *h = getenv("WICK_CPU_HUGEPAGES");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    g_huge = !(h && !strcmp(h, "0"));
#else
    (void)h;
#endif
}

/* A new block of cls bytes for the cache (the default allocator is in use): huge-page backed
 * where that applies, else from wk_malloc. Both are released by wk_free (the default free). */
static hc_hdr *hc_new(size_t cls)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (g_huge && cls >= HC_HUGE) {
        void *p = NULL;
        if (posix_memalign(&p, HC_HUGE, cls) != 0)
            return NULL;
        (void)madvise(p, cls / HC_HUGE * HC_HUGE, MADV_HUGEPAGE); /* advice: failure is harmless */
        return p;
    }
#endif
    return wk_malloc(cls);
}

/* The size class of a block of `total` bytes: rounded up to a multiple of 1/8 of its power of 2. */
static size_t hc_class(size_t total)
{
    size_t p = HC_MIN;
    while (p * 2 <= total && p * 2 > p)
        p *= 2;
    const size_t step = p / 8;
    return total > SIZE_MAX - step ? total : (total + step - 1) / step * step;
}

void *wk_host_alloc(size_t bytes)
{
    pthread_once(&g_once, hc_init);
    if (bytes > SIZE_MAX - HC_HDR)
        return NULL;
    const size_t total = bytes + HC_HDR;
    const int cache = g_cap > 0 && total >= HC_MIN && wk_alloc_is_default();
    const size_t cls = cache ? hc_class(total) : total;
    hc_hdr *h = NULL;
    if (cache) {
        pthread_mutex_lock(&g_mu);
        for (hc_hdr **pp = &g_list; *pp; pp = &(*pp)->next)
            if ((*pp)->cls == cls) {
                h = *pp;
                *pp = h->next;
                g_bytes -= cls;
                break;
            }
        pthread_mutex_unlock(&g_mu);
    }
    if (!h && !(h = cache ? hc_new(cls) : wk_malloc(cls)))
        return NULL;
    h->cls = cache ? cls : 0;
    h->next = NULL;
    return (char *)h + HC_HDR;
}

void wk_host_free(void *p)
{
    if (!p)
        return;
    hc_hdr *h = (hc_hdr *)(void *)((char *)p - HC_HDR);
    if (h->cls) {
        pthread_mutex_lock(&g_mu);
        const int keep = g_bytes + h->cls <= g_cap && wk_alloc_is_default();
        if (keep) {
            h->next = g_list;
            g_list = h;
            g_bytes += h->cls;
        }
        pthread_mutex_unlock(&g_mu);
        if (keep)
            return;
    }
    wk_free(h);
}

void wk_host_cache_flush(void)
{
    pthread_mutex_lock(&g_mu);
    hc_hdr *h = g_list;
    g_list = NULL;
    g_bytes = 0;
    pthread_mutex_unlock(&g_mu);
    while (h) {
        hc_hdr *next = h->next;
        wk_free(h);
        h = next;
    }
}

size_t wk_host_cache_bytes(void)
{
    pthread_mutex_lock(&g_mu);
    const size_t b = g_bytes;
    pthread_mutex_unlock(&g_mu);
    return b;
}
