/* comm_oneshot.c: the one-shot all-reduce's host side (comm_oneshot.h): the areas, the peer
 * access between the devices, the address tables, the launches of kernels/comm.cu and the
 * reading of its timeout record. */
#include "comm_oneshot.h"
#include "gpu/gpu_driver.h"
#include "gpu/gpu_ops.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

/* The ranks of one setup: a rank's area is freed only once no live peer's kernel can read it. */
typedef struct wk_oneshot_group {
    pthread_mutex_t mu;
    int live;
    wk_oneshot *os[WK_ONESHOT_MAX_RANKS]; /* NULL once freed */
} wk_oneshot_group;

/* The area's layout (kernels/comm.cu): epoch[BLOCKS], flag[MAX_RANKS][BLOCKS], err[4], slots. */
#define EPOCH_BYTES (8 * WK_ONESHOT_BLOCKS)
#define FLAG_BYTES (8 * WK_ONESHOT_MAX_RANKS * WK_ONESHOT_BLOCKS)
#define ERR_OFF (EPOCH_BYTES + FLAG_BYTES)
#define HEAD (((ERR_OFF + 16) + 255) / 256 * 256)

bool wk_oneshot_takes(wk_dtype dt, wk_reduce_op op, size_t count)
{
    const bool flt = dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16 ||
                     dt == WK_DTYPE_F64 || dt == WK_DTYPE_F8E4M3;
    return flt && (int)op >= 0 && (int)op < WK_REDUCE_OP_COUNT &&
           count <= WK_ONESHOT_MAX_BYTES / wk_dtype_size(dt);
}

/* frees o (its device memory too unless keep) */
static void release(wk_oneshot *o, bool keep)
{
    wk_gpu_device *g = wk_gpu_dev(o->dev);
    if (o->area && !keep)
        g->drv->mem_free(g->ctx, o->area);
    if (o->tab && !keep)
        g->drv->mem_free(g->ctx, o->tab);
    wk_free(o);
}

/* 1 once g's stream has finished its work, polled until deadline (ms; wk_comm_now_ms) */
static bool idle_by(wk_gpu_device *g, int64_t deadline)
{
    if (!g->drv->query) {
        (void)g->drv->sync(g->ctx); /* finished, or failed: over either way */
        return true;
    }
    for (;;) {
        bool idle = false;
        if (g->drv->query(g->ctx, &idle) != WK_OK || idle)
            return true; /* an error of that work: it is over */
        if (wk_comm_now_ms() >= deadline)
            return false;
        sched_yield();
    }
}

void wk_oneshot_free(wk_oneshot *o, int64_t timeout_ms)
{
    if (!o)
        return;
    wk_oneshot_group *grp = o->grp;
    const int64_t deadline = wk_comm_now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
    bool idle = true;
    pthread_mutex_lock(&grp->mu);
    for (int p = 0; p < o->nranks; p++) /* this rank's kernels and the live peers' */
        if (grp->os[p])
            idle &= idle_by(wk_gpu_dev(grp->os[p]->dev), deadline);
    grp->os[o->rank] = NULL;
    const int left = --grp->live;
    release(o, !idle);
    pthread_mutex_unlock(&grp->mu);
    if (!left) {
        pthread_mutex_destroy(&grp->mu);
        wk_free(grp);
    }
}

wk_status wk_oneshot_setup(wk_oneshot **os, wk_device *const *devs, int n)
{
    if (n < 2 || n > WK_ONESHOT_MAX_RANKS)
        return wk_err(WK_ERR_NOT_SUPPORTED, "one-shot all-reduce: %d ranks (2 to %d)", n,
                      WK_ONESHOT_MAX_RANKS);
    wk_status s = WK_OK;
    uint64_t addr[WK_ONESHOT_MAX_RANKS];
    for (int i = 0; i < n; i++)
        os[i] = NULL;
    wk_oneshot_group *grp = wk_calloc(1, sizeof *grp);
    if (!grp)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "one-shot all-reduce: out of host memory");
    pthread_mutex_init(&grp->mu, NULL);
    for (int i = 0; i < n && s == WK_OK; i++) {
        wk_gpu_device *g = wk_gpu_dev(devs[i]);
        if (g->props.timer_khz <= 0) {
            s = wk_err(WK_ERR_NOT_SUPPORTED, "one-shot all-reduce: %s has no kernel timer rate",
                       devs[i]->name);
            break;
        }
        wk_oneshot *o = wk_calloc(1, sizeof *o);
        if (!o) {
            s = wk_err(WK_ERR_OUT_OF_MEMORY, "one-shot all-reduce: out of host memory");
            break;
        }
        os[i] = o;
        o->grp = grp, o->dev = devs[i], o->rank = i, o->nranks = n;
        o->slot_bytes = WK_ONESHOT_MAX_BYTES, o->head = HEAD, o->err_off = ERR_OFF;
        const size_t bytes = (size_t)HEAD + 2 * o->slot_bytes;
        s = g->drv->mem_alloc(g->ctx, &o->area, bytes);
        if (s == WK_OK)
            s = g->drv->mem_alloc(g->ctx, &o->tab, sizeof addr);
        if (s == WK_OK)
            s = g->drv->memset_zero(g->ctx, o->area, bytes);
        addr[i] = (uint64_t)(uintptr_t)o->area;
    }
    /* every device reaches every other's area */
    for (int i = 0; i < n && s == WK_OK; i++)
        for (int j = 0; j < n && s == WK_OK; j++) {
            wk_gpu_device *gi = wk_gpu_dev(devs[i]), *gj = wk_gpu_dev(devs[j]);
            if (i == j || gi == gj)
                continue;
            if (gi->drv != gj->drv || !gi->drv->peer_access)
                s = wk_err(WK_ERR_NOT_SUPPORTED, "one-shot all-reduce: %s cannot reach %s's "
                           "memory", devs[i]->name, devs[j]->name);
            else
                s = gi->drv->peer_access(gi->ctx, gj->ctx);
        }
    for (int i = 0; i < n && s == WK_OK; i++) {
        wk_gpu_device *g = wk_gpu_dev(devs[i]);
        s = g->drv->h2d(g->ctx, os[i]->tab, addr, (size_t)n * sizeof addr[0]);
        if (s == WK_OK)
            s = g->drv->sync(g->ctx);
    }
    if (s != WK_OK) {
        for (int i = 0; i < n; i++)
            if (os[i]) {
                release(os[i], false);
                os[i] = NULL;
            }
        pthread_mutex_destroy(&grp->mu);
        wk_free(grp);
        return s;
    }
    grp->live = n;
    for (int i = 0; i < n; i++)
        grp->os[i] = os[i];
    return WK_OK;
}

wk_status wk_oneshot_all_reduce(wk_oneshot *o, void *recv, const void *send, size_t count,
                                wk_dtype dt, wk_reduce_op op, int64_t timeout_ms, int phase)
{
    if (!wk_oneshot_takes(dt, op, count) || phase < WK_ONESHOT_PUT || phase > WK_ONESHOT_BOTH)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "one-shot all-reduce: %zu elements of %s, "
                      "reduction %d, phase %d not taken", count, wk_dtype_name(dt), (int)op,
                      phase);
    wk_gpu_device *g = wk_gpu_dev(o->dev);
    char name[32];
    snprintf(name, sizeof name, "oneshot_%s", wk_gpu_dtype_kname(dt));
    const void *tab = o->tab;
    int nranks = o->nranks, rank = o->rank, opi = (int)op, maxb = WK_ONESHOT_BLOCKS,
        maxr = WK_ONESHOT_MAX_RANKS, ph = phase;
    int64_t n = (int64_t)count, head = o->head, slot = (int64_t)o->slot_bytes;
    uint64_t timeout = (uint64_t)(timeout_ms > 0 ? timeout_ms : 1) * (uint64_t)g->props.timer_khz;
    void *args[] = {&tab, &nranks, &rank, &send, &recv, &n, &opi, &maxb, &maxr, &head, &slot,
                    &timeout, &ph};
    return wk_gpu_run(o->dev, "comm", name, WK_ONESHOT_BLOCKS, 1, 1, args);
}

wk_status wk_oneshot_status(wk_oneshot *o, int64_t timeout_ms)
{
    wk_gpu_device *g = wk_gpu_dev(o->dev);
    uint32_t err[4] = {0, 0, 0, 0};
    wk_status s = g->drv->d2h(g->ctx, err, (const char *)o->area + o->err_off, sizeof err);
    if (s != WK_OK)
        return s;
    if (err[0])
        return wk_err(WK_ERR_TIMEOUT, "all_reduce (rank %d): rank %u did not take part within "
                      "%lld ms (one-shot all-reduce, block %u); the communicator is aborted",
                      o->rank, err[1], (long long)timeout_ms, err[2]);
    return WK_OK;
}
