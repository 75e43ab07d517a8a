/* alloc.c: the one host-allocation hook (wk_set_allocator, in handles.c, switches it). Nothing
 * here calls up: the host cache and the live-handle count sit above it. */
#include "wk_core.h"
#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t bytes, void *user) { (void)user; return malloc(bytes); }
static void default_free(void *p, void *user) { (void)user; free(p); }

static wk_allocator wk_hook = {default_alloc, default_free, NULL};

bool wk_alloc_is_default(void) { return wk_hook.alloc == default_alloc; }

void wk_alloc_set_hook(const wk_allocator *a)
{
    if (a)
        wk_hook = *a;
    else
        wk_hook = (wk_allocator){default_alloc, default_free, NULL};
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
