/* alloc.c: the one host-allocation hook, and the count of live handles that guards switching it. */
#include "wk_core.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t bytes, void *user) { (void)user; return malloc(bytes); }
static void default_free(void *p, void *user) { (void)user; free(p); }

static wk_allocator wk_hook = {default_alloc, default_free, NULL};
static atomic_int wk_live;

/* When the last handle closes, the cached CPU blocks (host_cache.c) are given back. */
void wk_live_add(int delta)
{
    if (atomic_fetch_add(&wk_live, delta) + delta == 0)
        wk_host_cache_flush();
}

bool wk_alloc_is_default(void) { return wk_hook.alloc == default_alloc; }

wk_status wk_set_allocator(const wk_allocator *a)
{
    if (atomic_load(&wk_live) != 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT,
                      "wk_set_allocator: %d device/storage handles are still alive",
                      atomic_load(&wk_live));
    if (a && (!a->alloc || !a->free))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_set_allocator: alloc and free must both be set");
    wk_host_cache_flush(); /* blocks of the old hook go back to it */
    if (a)
        wk_hook = *a;
    else
        wk_hook = (wk_allocator){default_alloc, default_free, NULL};
    return WK_OK;
}

void *wk_malloc(size_t bytes) { return wk_hook.alloc(bytes ? bytes : 1, wk_hook.user); }

void *wk_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = wk_malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void wk_free(void *p)
{
    if (p)
        wk_hook.free(p, wk_hook.user);
}
