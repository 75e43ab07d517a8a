/* handles.c: the count of live handles (devices, storages, open files, communicators). When the
 * last one closes, the host cache (host_cache.c) gives its blocks back; the allocation hook
 * (alloc.c) may be switched only while none is alive (wk_set_allocator). It sits above both, so
 * neither calls the other back. */
#include "wk_core.h"
#include <stdatomic.h>

static atomic_int wk_live;

void wk_live_add(int delta)
{
    if (atomic_fetch_add(&wk_live, delta) + delta == 0)
        wk_host_cache_flush();
}

wk_status wk_set_allocator(const wk_allocator *a)
{
    if (atomic_load(&wk_live) != 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT,
                      "wk_set_allocator: %d device/storage handles are still alive",
                      atomic_load(&wk_live));
    if (a && (!a->alloc || !a->free))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_set_allocator: alloc and free must both be set");
    wk_host_cache_flush(); /* blocks of the old hook go back to it */
    wk_alloc_set_hook(a);
    return WK_OK;
}
