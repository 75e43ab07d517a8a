/* gpu_alloc.c: the per-device caching allocator of the GPU backend (device memory).
 *
 * cuMemAlloc/hipMalloc cost tens of microseconds and cuMemFree synchronizes, which would
 * dominate small ops. Freed blocks are kept in a free list sorted by size and handed out again
 * for requests of about the same size (a block serves a request of rounded size r if it is no
 * larger than r + r/8). Reuse needs no event: every op, copy and free of a device runs on its one
 * stream, so work queued after the reuse runs after work queued before the free.
 * Sizes are rounded to 4 steps per power of two (min 512 B, steps of at most 2 MiB), so similar
 * sizes share blocks while waste stays below 25% (a few MiB for large tensors).
 * On out-of-memory the cache is returned to the driver and the allocation retried once.
 * WICK_GPU_NO_CACHE=1 (read at device open) makes every free a real free, so tools such as
 * compute-sanitizer see the true bounds of every buffer. */
#include "gpu_driver.h"
#include "wk_core.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct blk {
    void *ptr;
    size_t size;
    const void *pin; /* the graph that owns the block until it is freed (gpu_graph.c), or NULL */
} blk;

struct wk_gpu_alloc {
    pthread_mutex_t mu;
    bool caching;
    blk *cache;      /* free blocks, sorted by (size, ptr) */
    size_t ncache, cache_cap;
    blk *live;       /* blocks handed out: open addressing on ptr, NULL = empty slot */
    size_t nlive, live_cap; /* live_cap is a power of two */
    /* Graph capture (gpu_graph.c): blocks handed out while capture_owner is set are pinned to
     * it; a pinned block, or any block freed during a capture, is parked (neither cached nor
     * freed) until the graph is freed, so a replay never writes memory that was handed out again
     * after the capture. */
    const void *capture_owner;
    blk *parked;
    size_t nparked, parked_cap;
    wk_gpu_mem_stats stats;
};

#define MIN_BLOCK 512u
#define MAX_STEP ((size_t)2 << 20)

/* The size class of a request: false if it overflows. */
static bool round_size(size_t n, size_t *out)
{
    if (n <= MIN_BLOCK) {
        *out = MIN_BLOCK;
        return true;
    }
    size_t p = 1;
    while (p <= n / 2)
        p *= 2;
    size_t step = p / 4;
    step = step < MIN_BLOCK ? MIN_BLOCK : step > MAX_STEP ? MAX_STEP : step;
    if (n > SIZE_MAX - step)
        return false;
    *out = (n + step - 1) / step * step;
    return true;
}

/* ---- live blocks: pointer -> size (linear probing, backward-shift deletion) */
static size_t live_home(const struct wk_gpu_alloc *A, const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p >> 8;
    h *= 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (A->live_cap - 1);
}

static size_t live_find(const struct wk_gpu_alloc *A, const void *p)
{
    if (!A->live_cap)
        return SIZE_MAX;
    for (size_t i = live_home(A, p);; i = (i + 1) & (A->live_cap - 1)) {
        if (A->live[i].ptr == p)
            return i;
        if (!A->live[i].ptr)
            return SIZE_MAX;
    }
}

static void live_put(struct wk_gpu_alloc *A, blk b)
{
    size_t i = live_home(A, b.ptr);
    while (A->live[i].ptr)
        i = (i + 1) & (A->live_cap - 1);
    A->live[i] = b;
    A->nlive++;
}

/* Room for one more live block (load <= 1/2). false: out of host memory. */
static bool live_reserve(struct wk_gpu_alloc *A)
{
    if (2 * (A->nlive + 1) <= A->live_cap)
        return true;
    size_t cap = A->live_cap ? 2 * A->live_cap : 256;
    blk *old = A->live;
    size_t old_cap = A->live_cap;
    blk *t = wk_calloc(cap, sizeof *t);
    if (!t)
        return false;
    A->live = t;
    A->live_cap = cap;
    A->nlive = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].ptr)
            live_put(A, old[i]);
    wk_free(old);
    return true;
}

static void live_remove_at(struct wk_gpu_alloc *A, size_t i)
{
    size_t mask = A->live_cap - 1;
    for (size_t j = (i + 1) & mask; A->live[j].ptr; j = (j + 1) & mask) {
        size_t k = live_home(A, A->live[j].ptr);
        /* The entry at j may move back to i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            A->live[i] = A->live[j];
            i = j;
        }
    }
    A->live[i].ptr = NULL;
    A->nlive--;
}

/* ---- cached blocks: sorted array */
static bool blk_less(blk a, blk b)
{
    return a.size < b.size || (a.size == b.size && (uintptr_t)a.ptr < (uintptr_t)b.ptr);
}

/* First index whose block is not less than key. */
static size_t cache_lower(const struct wk_gpu_alloc *A, blk key)
{
    size_t lo = 0, hi = A->ncache;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (blk_less(A->cache[mid], key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool cache_insert(struct wk_gpu_alloc *A, blk b)
{
    if (A->ncache == A->cache_cap) {
        size_t cap = A->cache_cap ? 2 * A->cache_cap : 64;
        blk *t = wk_malloc(cap * sizeof *t);
        if (!t)
            return false;
        if (A->ncache)
            memcpy(t, A->cache, A->ncache * sizeof *t);
        wk_free(A->cache);
        A->cache = t;
        A->cache_cap = cap;
    }
    size_t i = cache_lower(A, b);
    memmove(A->cache + i + 1, A->cache + i, (A->ncache - i) * sizeof *A->cache);
    A->cache[i] = b;
    A->ncache++;
    A->stats.cached_bytes += b.size;
    return true;
}

/* Takes a cached block of size in [size, size + size/8]; false if none. */
static bool cache_take(struct wk_gpu_alloc *A, size_t size, blk *out)
{
    size_t i = cache_lower(A, (blk){NULL, size, NULL});
    if (i == A->ncache || A->cache[i].size > size + size / 8)
        return false;
    *out = A->cache[i];
    memmove(A->cache + i, A->cache + i + 1, (A->ncache - i - 1) * sizeof *A->cache);
    A->ncache--;
    A->stats.cached_bytes -= out->size;
    return true;
}

/* ---- parked blocks (graph capture) */
static bool park(struct wk_gpu_alloc *A, blk b)
{
    if (A->nparked == A->parked_cap) {
        size_t cap = A->parked_cap ? 2 * A->parked_cap : 16;
        blk *t = wk_malloc(cap * sizeof *t);
        if (!t)
            return false;
        if (A->nparked)
            memcpy(t, A->parked, A->nparked * sizeof *t);
        wk_free(A->parked);
        A->parked = t;
        A->parked_cap = cap;
    }
    A->parked[A->nparked++] = b;
    return true;
}

void wk_gpu_alloc_capture(wk_gpu_device *g, const void *owner)
{
    struct wk_gpu_alloc *A = g->alloc;
    pthread_mutex_lock(&A->mu);
    A->capture_owner = owner;
    pthread_mutex_unlock(&A->mu);
}

void wk_gpu_alloc_release(wk_gpu_device *g, const void *owner)
{
    struct wk_gpu_alloc *A = g->alloc;
    blk *gone = NULL;
    size_t ngone = 0;
    pthread_mutex_lock(&A->mu);
    for (size_t i = 0; i < A->live_cap; i++)
        if (A->live[i].ptr && A->live[i].pin == owner)
            A->live[i].pin = NULL; /* still held by a storage: an ordinary block from now on */
    for (size_t i = 0; i < A->nparked;) {
        blk b = A->parked[i];
        if (b.pin != owner) {
            i++;
            continue;
        }
        A->parked[i] = A->parked[--A->nparked];
        b.pin = NULL;
        if (A->caching && cache_insert(A, b))
            continue;
        /* not cached: freed below, outside the lock (the caller has synchronized) */
        blk *t = wk_malloc((ngone + 1) * sizeof *t);
        if (!t) {
            park(A, b); /* cannot fail: the slot was just vacated */
            A->parked[A->nparked - 1].pin = NULL; /* stays parked, owned by nobody */
            continue;
        }
        if (ngone)
            memcpy(t, gone, ngone * sizeof *t);
        wk_free(gone);
        gone = t;
        gone[ngone++] = b;
    }
    pthread_mutex_unlock(&A->mu);
    for (size_t i = 0; i < ngone; i++)
        g->drv->mem_free(g->ctx, gone[i].ptr);
    wk_free(gone);
}

/* ---- public */
wk_status wk_gpu_alloc_create(wk_gpu_device *g)
{
    struct wk_gpu_alloc *A = wk_calloc(1, sizeof *A);
    if (!A)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", g->drv->name);
    if (pthread_mutex_init(&A->mu, NULL) != 0) {
        wk_free(A);
        return wk_err(WK_ERR_INTERNAL, "%s: pthread_mutex_init failed", g->drv->name);
    }
    A->caching = !g->no_cache;
    g->alloc = A;
    return WK_OK;
}

void wk_gpu_alloc_destroy(wk_gpu_device *g)
{
    struct wk_gpu_alloc *A = g->alloc;
    if (!A)
        return;
    (void)g->drv->sync(g->ctx);
    for (size_t i = 0; i < A->ncache; i++)
        g->drv->mem_free(g->ctx, A->cache[i].ptr);
    for (size_t i = 0; i < A->live_cap; i++)
        if (A->live[i].ptr) /* storages the caller did not free: the device is going away */
            g->drv->mem_free(g->ctx, A->live[i].ptr);
    for (size_t i = 0; i < A->nparked; i++)
        g->drv->mem_free(g->ctx, A->parked[i].ptr);
    wk_free(A->parked);
    wk_free(A->cache);
    wk_free(A->live);
    pthread_mutex_destroy(&A->mu);
    wk_free(A);
    g->alloc = NULL;
}

void wk_gpu_mem_release_cache(wk_gpu_device *g)
{
    struct wk_gpu_alloc *A = g->alloc;
    pthread_mutex_lock(&A->mu);
    blk *taken = A->cache;
    size_t n = A->ncache;
    A->cache = NULL;
    A->ncache = A->cache_cap = 0;
    A->stats.cached_bytes = 0;
    pthread_mutex_unlock(&A->mu);
    if (!n) {
        wk_free(taken);
        return;
    }
    /* Cached blocks are free in stream order only: let queued work finish before a real free. */
    (void)g->drv->sync(g->ctx);
    for (size_t i = 0; i < n; i++)
        g->drv->mem_free(g->ctx, taken[i].ptr);
    wk_free(taken);
}

wk_status wk_gpu_mem_alloc(wk_gpu_device *g, size_t bytes, void **ptr)
{
    struct wk_gpu_alloc *A = g->alloc;
    size_t size;
    if (!round_size(bytes, &size))
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", g->drv->name, bytes);
    blk b = {NULL, size, NULL};

    pthread_mutex_lock(&A->mu);
    const void *owner = A->capture_owner;
    if (A->caching && cache_take(A, size, &b)) {
        b.pin = owner;
        if (!live_reserve(A)) { /* keep the block cached, report the host failure */
            cache_insert(A, b);
            pthread_mutex_unlock(&A->mu);
            return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", g->drv->name);
        }
        live_put(A, b);
        A->stats.cache_hits++;
        A->stats.live_bytes += b.size;
        pthread_mutex_unlock(&A->mu);
        *ptr = b.ptr;
        return WK_OK;
    }
    pthread_mutex_unlock(&A->mu);

    /* A new block from the driver (outside the lock: it may take a while). */
    wk_status st = g->drv->mem_alloc(g->ctx, &b.ptr, size);
    b.pin = owner;
    if (st == WK_ERR_OUT_OF_MEMORY && !owner) { /* (releasing the cache synchronizes: not in a capture) */
        pthread_mutex_lock(&A->mu);
        A->stats.oom_retries++;
        pthread_mutex_unlock(&A->mu);
        wk_gpu_mem_release_cache(g);
        st = g->drv->mem_alloc(g->ctx, &b.ptr, size);
    }
    if (st != WK_OK) {
        if (st != WK_ERR_OUT_OF_MEMORY)
            return st;
        size_t free_b = 0, total_b = 0;
        (void)g->drv->mem_info(g->ctx, &free_b, &total_b);
        return wk_err(WK_ERR_OUT_OF_MEMORY,
                      "%s:%d: out of device memory allocating %zu bytes (%zu of %zu bytes free)",
                      g->drv->name, g->ordinal, bytes, free_b, total_b);
    }
    pthread_mutex_lock(&A->mu);
    if (!live_reserve(A)) {
        pthread_mutex_unlock(&A->mu);
        g->drv->mem_free(g->ctx, b.ptr);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory", g->drv->name);
    }
    live_put(A, b);
    A->stats.driver_allocs++;
    A->stats.live_bytes += b.size;
    pthread_mutex_unlock(&A->mu);
    *ptr = b.ptr;
    return WK_OK;
}

void wk_gpu_mem_free(wk_gpu_device *g, void *ptr)
{
    struct wk_gpu_alloc *A = g->alloc;
    if (!ptr)
        return;
    pthread_mutex_lock(&A->mu);
    size_t i = live_find(A, ptr);
    if (i == SIZE_MAX) { /* not ours: a caller bug; never free what we did not allocate */
        pthread_mutex_unlock(&A->mu);
        return;
    }
    blk b = A->live[i];
    live_remove_at(A, i);
    A->stats.live_bytes -= b.size;
    if (b.pin || A->capture_owner) {
        if (!b.pin)
            b.pin = A->capture_owner;
        if (park(A, b)) {
            pthread_mutex_unlock(&A->mu);
            return;
        }
        /* out of host memory to park it: keep it handed out (a leak until the device closes,
         * never a block a replay could overwrite) */
        live_put(A, b);
        A->stats.live_bytes += b.size;
        pthread_mutex_unlock(&A->mu);
        return;
    }
    bool cached = A->caching && cache_insert(A, b);
    pthread_mutex_unlock(&A->mu);
    if (!cached) {
        /* A real free: queued work may still use the block. */
        (void)g->drv->sync(g->ctx);
        g->drv->mem_free(g->ctx, b.ptr);
    }
}

void wk_gpu_mem_stats_get(wk_gpu_device *g, wk_gpu_mem_stats *out)
{
    struct wk_gpu_alloc *A = g->alloc;
    pthread_mutex_lock(&A->mu);
    *out = A->stats;
    pthread_mutex_unlock(&A->mu);
}

/* Scratch memory for ops: the same allocator (stream-ordered like everything else). */
wk_status wk_gpu_scratch_alloc(wk_device *dev, size_t bytes, void **ptr)
{
    return wk_gpu_mem_alloc(wk_gpu_dev(dev), bytes, ptr);
}

void wk_gpu_scratch_free(wk_device *dev, void *ptr) { wk_gpu_mem_free(wk_gpu_dev(dev), ptr); }

wk_status wk_gpu_bind(wk_device *dev, void **stream)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    return g->drv->bind(g->ctx, stream);
}

/* The device's completion counters (gpu_impl.h): a direct driver allocation, zeroed in stream
 * order. */
wk_status wk_gpu_counters(wk_device *dev, uint32_t **ctr)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    const size_t bytes = WK_GPU_COUNTERS * sizeof(uint32_t);
    pthread_mutex_lock(&g->error_mu);
    wk_status st = WK_OK;
    if (!g->counters) {
        void *p = NULL;
        st = g->drv->mem_alloc(g->ctx, &p, bytes);
        if (st == WK_OK && (st = g->drv->memset_zero(g->ctx, p, bytes)) != WK_OK)
            g->drv->mem_free(g->ctx, p);
        else if (st == WK_OK)
            g->counters = p;
    }
    pthread_mutex_unlock(&g->error_mu);
    if (st == WK_OK)
        *ctr = g->counters;
    return st;
}

/* The device's error record (gpu_impl.h): a direct driver allocation, zeroed in stream order. */
wk_status wk_gpu_error_word(wk_device *dev, uint32_t **word)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    pthread_mutex_lock(&g->error_mu);
    wk_status st = WK_OK;
    if (!g->error_word) {
        void *p = NULL;
        st = g->drv->mem_alloc(g->ctx, &p, 2 * sizeof(uint32_t));
        if (st == WK_OK && (st = g->drv->memset_zero(g->ctx, p, 2 * sizeof(uint32_t))) != WK_OK)
            g->drv->mem_free(g->ctx, p);
        else if (st == WK_OK)
            g->error_word = p;
    }
    pthread_mutex_unlock(&g->error_mu);
    if (st == WK_OK)
        *word = g->error_word;
    return st;
}
