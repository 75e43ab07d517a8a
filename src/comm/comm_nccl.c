/* comm_nccl.c: the NCCL (CUDA) and RCCL (ROCm) transport, through the library that
 * comm_nccl_lib.c opens (comm_nccl.h).
 *
 * The init is non-blocking (config.blocking = 0): it returns at once and its progress is polled
 * with ncclCommGetAsyncError, so a rank that never joins ends in WK_ERR_TIMEOUT, the
 * communicator aborted (ncclCommAbort), instead of a hang. What the calls after it use depends
 * on the mode (WICK_NCCL_BLOCKING, see nc_mode): by default each communicator is then split into
 * a blocking one, connected before the init returns, so that a collective enqueues in the
 * calling thread (a non-blocking communicator hands every group to a new NCCL thread: ~25 us a
 * call). wk_comm_synchronize waits for the stream with the timeout in every mode. Collectives
 * are queued on the device's wick stream. */
#include "comm_nccl.h"
#include "comm_oneshot.h"
#include "gpu/gpu_driver.h"
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- one communicator */
typedef struct nc_rank {
    nc_lib *L;
    nc_comm comm;  /* NULL once aborted */
    nc_comm p2p;   /* guarded mode: the non-blocking communicator that send/recv use (comm is
                    * its blocking split); NULL otherwise (comm serves every call) */
    nc_comm child; /* guarded mode: the blocking split of comm while it is made (NCCL writes it
                    * from its own thread when the split ends) */
    bool blocking; /* comm was made with config.blocking = 1 */
    wk_oneshot *os; /* the one-shot all-reduce (comm_oneshot.h) for the calls it takes, or NULL */
    char desc[96];  /* wk_comm_transport's answer when os is set */
} nc_rank;

static wk_status nc_fail(const nc_lib *L, nc_comm comm, nc_result r, const char *what, int rank)
{
    const char *last = comm && L->api.GetLastError ? L->api.GetLastError(comm) : NULL;
    wk_status s = r == NC_INVALID_ARGUMENT || r == NC_INVALID_USAGE ? WK_ERR_INVALID_ARGUMENT
                                                                     : WK_ERR_DEVICE;
    return wk_err(s, "%s: %s (rank %d): %s%s%s", L->desc, what, rank, L->api.GetErrorString(r),
                  last && *last ? ": " : "", last ? last : "");
}

/* One wait step of a poll that began at t0 (CLOCK_MONOTONIC microseconds): yield the processor
 * for the first 20 ms (a collective or a stream usually ends within that, and a sleep would add
 * up to its whole length to every call), then sleep 100 us at a time. */
static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void backoff(int64_t t0)
{
    if (now_us() - t0 < 20000) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 100000L};
    nanosleep(&ts, NULL);
}

/* Polls comm until its pending work (init, a group's enqueue, finalize) is no longer in
 * progress, or deadline passes (then it returns NC_IN_PROGRESS). */
static nc_result poll_comm(const nc_lib *L, nc_comm comm, int64_t deadline)
{
    nc_result a = NC_IN_PROGRESS;
    const int64_t t0 = now_us();
    for (;;) {
        nc_result q = L->api.CommGetAsyncError(comm, &a);
        if (q != NC_SUCCESS)
            return q; /* the query itself failed: report that */
        if (a != NC_IN_PROGRESS)
            return a;
        if (wk_comm_now_ms() >= deadline)
            return NC_IN_PROGRESS;
        backoff(t0);
    }
}

static wk_status bind_dev(wk_device *dev, void **stream)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    return g->drv->bind(g->ctx, stream);
}

static void abort_rank(wk_comm *c, wk_status s, const char *msg)
{
    nc_rank *nr = c->impl;
    wk_comm_mark_failed(c, s, msg);
    void *stream;
    if (nr->comm || nr->p2p)
        (void)bind_dev(c->dev, &stream);
    if (nr->comm)
        nr->L->api.CommAbort(nr->comm);
    if (nr->p2p)
        nr->L->api.CommAbort(nr->p2p);
    nr->comm = nr->p2p = NULL;
}

/* The communicators' mode, read at each init from WICK_NCCL_BLOCKING (docs/semantics.md):
 *   unset   guarded: a non-blocking init (timeout), then a blocking communicator split from it;
 *   "0"     non-blocking throughout: every enqueue is polled against the timeout too;
 *   "1"     blocking throughout (NCCL's default): the init waits without a timeout. */
typedef enum { NC_GUARDED, NC_NONBLOCKING, NC_BLOCKING } nc_mode;

static nc_mode mode_wanted(void)
{
    const char *e = getenv("WICK_NCCL_BLOCKING");
    return !e || !*e ? NC_GUARDED : !strcmp(e, "1") ? NC_BLOCKING : NC_NONBLOCKING;
}

static nc_config make_config(int blocking)
{
    nc_config cfg = {.size = sizeof(nc_config), .magic = 0xcafebeef,
                     .version = NC_VERSION(2, 14, 0), .blocking = blocking,
                     .cga_cluster_size = INT_MIN,
                     .min_ctas = INT_MIN, .max_ctas = INT_MIN, .net_name = NULL};
    return cfg;
}

/* Starts rank c's init (inside or outside a group). */
static wk_status start_init(wk_comm *c, nc_lib *L, const nc_unique_id *id)
{
    void *stream;
    wk_status s = bind_dev(c->dev, &stream);
    if (s != WK_OK)
        return s;
    nc_rank *nr = c->impl;
    nc_result r;
    if (L->api.CommInitRankConfig) {
        nr->blocking = mode_wanted() == NC_BLOCKING;
        nc_config cfg = make_config(nr->blocking);
        r = L->api.CommInitRankConfig(&nr->comm, c->nranks, *id, c->rank, &cfg);
    } else {
        nr->blocking = true;
        r = L->api.CommInitRank(&nr->comm, c->nranks, *id, c->rank); /* blocking: no timeout */
    }
    if (r != NC_SUCCESS && r != NC_IN_PROGRESS)
        return nc_fail(L, nr->comm, r, "ncclCommInitRankConfig", c->rank);
    return WK_OK;
}

/* Waits for the init of ranks[0..n) to finish; on timeout or error aborts them all. */
static wk_status finish_init(wk_comm **cs, int n, nc_lib *L)
{
    const int64_t deadline = wk_comm_now_ms() + cs[0]->timeout_ms;
    wk_status s = WK_OK;
    for (int i = 0; i < n && s == WK_OK; i++) {
        nc_rank *nr = cs[i]->impl;
        if (!nr->comm) {
            s = wk_err(WK_ERR_DEVICE, "%s: init of rank %d made no communicator", L->desc,
                       cs[i]->rank);
            break;
        }
        nc_result a = poll_comm(L, nr->comm, deadline);
        if (a == NC_IN_PROGRESS)
            s = wk_err(WK_ERR_TIMEOUT, "wk_comm_init: %s: rank %d of %d: the ranks did not all "
                       "join within %lld ms; aborted", L->desc, cs[i]->rank, cs[i]->nranks,
                       (long long)cs[i]->timeout_ms);
        else if (a != NC_SUCCESS)
            s = nc_fail(L, nr->comm, a, "init", cs[i]->rank);
    }
    if (s != WK_OK)
        for (int i = 0; i < n; i++) {
            nc_rank *nr = cs[i]->impl;
            if (nr && nr->comm) {
                void *stream;
                (void)bind_dev(cs[i]->dev, &stream);
                L->api.CommAbort(nr->comm);
                nr->comm = NULL;
            }
        }
    return s;
}

static nc_result issue(const nc_lib *L, const wk_comm_op *op, nc_comm comm, void *stream);

/* Waits until dev's stream is idle or deadline (ms) passes: WK_OK, WK_ERR_TIMEOUT or the
 * driver's failure. */
static wk_status stream_idle(wk_device *dev, int64_t deadline)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    if (!g->drv->query)
        return g->drv->sync(g->ctx);
    const int64_t t0 = now_us();
    for (;;) {
        bool idle = false;
        wk_status s = g->drv->query(g->ctx, &idle);
        if (s != WK_OK || idle)
            return s;
        if (wk_comm_now_ms() >= deadline)
            return WK_ERR_TIMEOUT;
        backoff(t0);
    }
}

/* Guarded mode, after a non-blocking init that every rank of cs[0..n) joined: each rank's
 * communicator is split (same ranks, same order) into a blocking one for the collectives, and
 * each collective at a few sizes on the new ones connects the algorithms NCCL picks (NCCL
 * connects an algorithm at its first call; done here, while every rank is in the init, so that
 * a later call on them does not wait for a peer in the enqueue). The non-blocking parent stays
 * for send/recv, whose connections NCCL makes per peer at first use (polled with the timeout,
 * as in non-blocking mode). Without ncclCommSplit (NCCL < 2.18) the ranks keep the non-blocking
 * communicators for everything. On failure the caller aborts every rank's communicators. */
static wk_status to_blocking(wk_comm **cs, int n, nc_lib *L)
{
    if (!L->api.CommSplit || mode_wanted() != NC_GUARDED || ((nc_rank *)cs[0]->impl)->blocking)
        return WK_OK;
    /* f32 elements, 4 B .. 32 MiB in all; each rank's buffer holds nranks x (total / nranks) */
    static const size_t sizes[] = {1, (size_t)1 << 16, (size_t)1 << 23};
    const size_t nsz = sizeof sizes / sizeof sizes[0];
    wk_storage **one = wk_calloc((size_t)n, sizeof *one);
    wk_status s = one ? WK_OK : wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm_init: out of host memory");
    for (int i = 0; i < n && s == WK_OK; i++)
        s = wk_storage_zeros(&one[i], cs[i]->dev, WK_DTYPE_F32, sizes[nsz - 1]);
    const int64_t deadline = wk_comm_now_ms() + cs[0]->timeout_ms;
    if (s == WK_OK) {
        /* the split runs as the parents' job: non-blocking, polled on them like their init */
        nc_config cfg = make_config(1);
        nc_result r = NC_SUCCESS;
        L->api.GroupStart();
        for (int i = 0; i < n && (r == NC_SUCCESS || r == NC_IN_PROGRESS); i++) {
            void *stream;
            if ((s = bind_dev(cs[i]->dev, &stream)) != WK_OK)
                break;
            nc_rank *nr = cs[i]->impl;
            r = L->api.CommSplit(nr->comm, 0, cs[i]->rank, &nr->child, &cfg);
        }
        nc_result re = L->api.GroupEnd();
        if (s == WK_OK && (r != NC_SUCCESS && r != NC_IN_PROGRESS))
            s = nc_fail(L, NULL, r, "ncclCommSplit", cs[0]->rank);
        else if (s == WK_OK && re != NC_SUCCESS && re != NC_IN_PROGRESS)
            s = nc_fail(L, NULL, re, "ncclGroupEnd (split)", cs[0]->rank);
        for (int i = 0; i < n && s == WK_OK; i++) {
            nc_rank *nr = cs[i]->impl;
            const nc_result a = poll_comm(L, nr->comm, deadline);
            if (a == NC_IN_PROGRESS)
                s = wk_err(WK_ERR_TIMEOUT, "wk_comm_init: %s: rank %d of %d: the split into a "
                           "blocking communicator did not end within %lld ms; aborted", L->desc,
                           cs[i]->rank, cs[i]->nranks, (long long)cs[i]->timeout_ms);
            else if (a != NC_SUCCESS)
                s = nc_fail(L, nr->comm, a, "ncclCommSplit", cs[i]->rank);
            else if (!nr->child)
                s = wk_err(WK_ERR_DEVICE, "%s: ncclCommSplit (rank %d) made no communicator",
                           L->desc, cs[i]->rank);
        }
    }
    static const wk_coll_kind kinds[] = {WK_COLL_ALL_REDUCE, WK_COLL_ALL_GATHER,
                                         WK_COLL_REDUCE_SCATTER, WK_COLL_BROADCAST};
    for (size_t k = 0; k < nsz * 4 && s == WK_OK; k++) {
        /* in place, zeros: all_gather and reduce_scatter take count per rank */
        const wk_coll_kind kind = kinds[k % 4];
        const size_t total = sizes[k / 4];
        const bool per_rank = kind == WK_COLL_ALL_GATHER || kind == WK_COLL_REDUCE_SCATTER;
        const size_t nr = (size_t)cs[0]->nranks; /* the communicator's ranks (n: those here) */
        const size_t count = per_rank ? (total / nr > 0 ? total / nr : 1) : total;
        nc_result r = NC_SUCCESS;
        L->api.GroupStart();
        for (int i = 0; i < n && (r == NC_SUCCESS || r == NC_IN_PROGRESS); i++) {
            void *stream;
            if ((s = bind_dev(cs[i]->dev, &stream)) != WK_OK)
                break;
            char *base = one[i]->data, *part = base + (size_t)cs[i]->rank * count * 4;
            const wk_comm_op op = {
                .kind = kind, .comm = cs[i], .dt = WK_DTYPE_F32, .red = WK_REDUCE_SUM, .peer = 0,
                .send = kind == WK_COLL_ALL_GATHER ? part : base,
                .recv = kind == WK_COLL_REDUCE_SCATTER ? part : base, .count = count};
            r = issue(L, &op, ((nc_rank *)cs[i]->impl)->child, stream);
        }
        const nc_result re = L->api.GroupEnd();
        if (s == WK_OK && (r != NC_SUCCESS || re != NC_SUCCESS))
            s = nc_fail(L, ((nc_rank *)cs[0]->impl)->child, r != NC_SUCCESS ? r : re,
                        "connecting collectives", cs[0]->rank);
        for (int i = 0; i < n && s == WK_OK; i++)
            if ((s = stream_idle(cs[i]->dev, deadline)) == WK_ERR_TIMEOUT)
                s = wk_err(s, "wk_comm_init: %s: rank %d of %d: the connecting %s did not "
                           "finish within %lld ms; aborted", L->desc, cs[i]->rank, cs[i]->nranks,
                           wk_coll_name(kind), (long long)cs[i]->timeout_ms);
    }
    for (int i = 0; i < n && one; i++)
        wk_storage_free(one[i]);
    wk_free(one);
    if (s == WK_OK) /* the children take the collectives, the parents keep send/recv */
        for (int i = 0; i < n; i++) {
            nc_rank *nr = cs[i]->impl;
            nr->p2p = nr->comm;
            nr->comm = nr->child;
            nr->child = NULL;
            nr->blocking = true;
        }
    return s; /* on failure the caller aborts comm and child */
}

/* A fresh NCCL unique id. */
static wk_status new_id(const nc_lib *L, nc_unique_id *id)
{
    memset(id, 0, sizeof *id);
    nc_result r = L->api.GetUniqueId(id);
    return r == NC_SUCCESS ? WK_OK : nc_fail(L, NULL, r, "ncclGetUniqueId", 0);
}

wk_status wk_comm_nccl_unique_id(wk_comm_id *out, wk_backend_kind kind)
{
    nc_lib *L = NULL;
    wk_status s = wk_nccl_lib(&L, kind, "wk_comm_unique_id");
    nc_unique_id id;
    if (s == WK_OK)
        s = new_id(L, &id);
    if (s == WK_OK)
        memcpy(out->bytes, id.internal, sizeof id.internal);
    return s;
}

static wk_status nc_init_rank(wk_comm *c, const wk_comm_id *id)
{
    nc_lib *L = NULL;
    wk_status s = wk_nccl_lib(&L, c->dev->kind, "wk_comm_init_rank");
    if (s != WK_OK)
        return s;
    static const char cpu_magic[16] = "wick cpu commid";
    if (memcmp(id->bytes, cpu_magic, sizeof cpu_magic) == 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_rank: a CPU id given to a %s "
                      "device (make it with wk_comm_unique_id for this backend)", c->dev->name);
    nc_rank *nr = wk_calloc(1, sizeof *nr);
    if (!nr)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm_init_rank: out of host memory");
    nr->L = L;
    c->impl = nr;
    nc_unique_id nid;
    memcpy(nid.internal, id->bytes, sizeof nid.internal);
    s = start_init(c, L, &nid);
    if (s == WK_OK)
        s = finish_init(&c, 1, L);
    if (s == WK_OK)
        s = to_blocking(&c, 1, L);
    if (s != WK_OK) {
        if (nr->comm) /* first: its abort ends NCCL's jobs on it, the split's included */
            L->api.CommAbort(nr->comm);
        if (nr->child)
            L->api.CommAbort(nr->child);
        wk_free(nr);
        c->impl = NULL;
    }
    return s;
}

/* The one-shot all-reduce for the ranks of cs (one process), unless WICK_COMM_ONESHOT=0 or the
 * GPUs cannot reach each other's memory (then NCCL takes every call, as before). */
static void oneshot_setup(wk_comm **cs, int n)
{
    const char *e = getenv("WICK_COMM_ONESHOT");
    if ((e && !strcmp(e, "0")) || n < 2 || n > WK_ONESHOT_MAX_RANKS)
        return;
    wk_device *devs[WK_ONESHOT_MAX_RANKS];
    wk_oneshot *os[WK_ONESHOT_MAX_RANKS];
    for (int i = 0; i < n; i++)
        devs[i] = cs[i]->dev;
    if (wk_oneshot_setup(os, devs, n) != WK_OK)
        return; /* NCCL alone */
    for (int i = 0; i < n; i++) {
        nc_rank *nr = cs[i]->impl;
        nr->os = os[i];
        snprintf(nr->desc, sizeof nr->desc, "%s + one-shot all_reduce <= %zu KiB", nr->L->desc,
                 WK_ONESHOT_MAX_BYTES >> 10);
    }
}

static wk_status nc_init_all(wk_comm **cs, int n)
{
    nc_lib *L = NULL;
    wk_status s = wk_nccl_lib(&L, cs[0]->dev->kind, "wk_comm_init_all");
    nc_unique_id id;
    if (s == WK_OK)
        s = new_id(L, &id);
    if (s != WK_OK)
        return s;
    for (int i = 0; i < n && s == WK_OK; i++) {
        nc_rank *nr = wk_calloc(1, sizeof *nr);
        if (!nr)
            s = wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm_init_all: out of host memory");
        else
            nr->L = L;
        cs[i]->impl = nr;
    }
    if (s == WK_OK) {
        L->api.GroupStart();
        for (int i = 0; i < n && s == WK_OK; i++)
            s = start_init(cs[i], L, &id);
        const nc_result r = L->api.GroupEnd();
        if (s == WK_OK && r != NC_SUCCESS && r != NC_IN_PROGRESS)
            s = nc_fail(L, NULL, r, "ncclGroupEnd (init)", 0);
        if (s == WK_OK)
            s = finish_init(cs, n, L);
        if (s == WK_OK)
            s = to_blocking(cs, n, L);
    }
    if (s == WK_OK)
        oneshot_setup(cs, n);
    if (s != WK_OK)
        for (int i = 0; i < n; i++) {
            nc_rank *nr = cs[i]->impl;
            if (nr && nr->comm) /* first: its abort ends NCCL's jobs on it */
                L->api.CommAbort(nr->comm);
            if (nr && nr->child)
                L->api.CommAbort(nr->child);
            wk_free(nr);
            cs[i]->impl = NULL;
        }
    return s;
}

/* Finalizes and destroys comm, or aborts it (abort set, or the finalize failed or timed out). */
static void close_comm(const nc_lib *L, nc_comm comm, bool abort, int64_t timeout_ms)
{
    if (!abort && L->api.CommFinalize) {
        nc_result r = L->api.CommFinalize(comm);
        if (r == NC_SUCCESS || r == NC_IN_PROGRESS)
            r = poll_comm(L, comm, wk_comm_now_ms() + timeout_ms);
        abort = r != NC_SUCCESS;
    }
    if (abort)
        L->api.CommAbort(comm);
    else
        L->api.CommDestroy(comm);
}

static void nc_destroy(wk_comm *c, bool abort)
{
    nc_rank *nr = c->impl;
    if (!nr)
        return;
    const nc_lib *L = nr->L;
    if (nr->comm || nr->p2p) {
        void *stream;
        (void)bind_dev(c->dev, &stream);
        /* a blocking finalize would wait without a timeout for work that a lost peer hangs */
        if (!abort && nr->blocking &&
            stream_idle(c->dev, wk_comm_now_ms() + c->timeout_ms) != WK_OK)
            abort = true;
        if (nr->comm)
            close_comm(L, nr->comm, abort, c->timeout_ms);
        if (nr->p2p)
            close_comm(L, nr->p2p, abort, c->timeout_ms);
    }
    wk_oneshot_free(nr->os, c->timeout_ms); /* its kernels end within the timeout */
    wk_free(nr);
    c->impl = NULL;
}

/* ---- collectives */
static int nc_dtype(const nc_lib *L, wk_dtype dt)
{
    switch (dt) {
    case WK_DTYPE_U8: return NC_UINT8;
    case WK_DTYPE_U32: return NC_UINT32;
    case WK_DTYPE_I32: return NC_INT32;
    case WK_DTYPE_I64: return NC_INT64;
    case WK_DTYPE_F16: return NC_FLOAT16;
    case WK_DTYPE_F32: return NC_FLOAT32;
    case WK_DTYPE_F64: return NC_FLOAT64;
    case WK_DTYPE_BF16: return L->version >= NC_VERSION(2, 10, 0) ? NC_BFLOAT16 : -1;
    /* RCCL's fp8 types are the FNUZ variants on some GPUs: not wick's OCP E4M3FN */
    case WK_DTYPE_F8E4M3: return !L->rccl && L->version >= NC_VERSION(2, 24, 0) ? NC_FLOAT8E4M3 : -1;
    case WK_DTYPE_I16: return -1;
    }
    return -1;
}

static wk_status nc_check_dtype(const wk_comm *c, wk_dtype dt, int red, const char *op)
{
    const nc_rank *nr = c->impl;
    /* NCCL 2.28 fails an f8e4m3 avg (seen on a one-rank communicator, as an async error that
     * leaves the communicator unusable): refused here, before NCCL sees it */
    if (red == WK_REDUCE_AVG && dt == WK_DTYPE_F8E4M3)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %s: no avg for f8e4m3 (sum, then scale)", op,
                      nr->L->desc);
    if (red >= 0 && nc_dtype(nr->L, dt) < 0)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %s has no %s reduction (needs NCCL 2.24 for "
                      "f8e4m3, 2.10 for bf16; RCCL: no OCP fp8)", op, nr->L->desc,
                      wk_dtype_name(dt));
    return WK_OK;
}

/* Issues one op (inside the group). Data movement goes as bytes (any dtype). */
static nc_result issue(const nc_lib *L, const wk_comm_op *op, nc_comm comm, void *stream)
{
    const nc_api *a = &L->api;
    const size_t bytes = op->count * wk_dtype_size(op->dt);
    const int red[] = {0 /* sum */, 1 /* prod */, 3 /* min */, 2 /* max */, 4 /* avg */};
    switch (op->kind) {
    case WK_COLL_ALL_REDUCE:
        return a->AllReduce(op->send, op->recv, op->count, nc_dtype(L, op->dt), red[op->red], comm,
                            stream);
    case WK_COLL_REDUCE_SCATTER:
        return a->ReduceScatter(op->send, op->recv, op->count, nc_dtype(L, op->dt), red[op->red],
                                comm, stream);
    case WK_COLL_ALL_GATHER: return a->AllGather(op->send, op->recv, bytes, NC_UINT8, comm, stream);
    case WK_COLL_BROADCAST:
        return a->Broadcast(op->send, op->recv, bytes, NC_UINT8, op->peer, comm, stream);
    case WK_COLL_SEND: return a->Send(op->send, bytes, NC_UINT8, op->peer, comm, stream);
    case WK_COLL_RECV: return a->Recv(op->recv, bytes, NC_UINT8, op->peer, comm, stream);
    }
    return NC_INVALID_ARGUMENT;
}

/* The communicator that runs op: send/recv go through the non-blocking one in guarded mode. */
static nc_comm op_comm(const wk_comm_op *op)
{
    const nc_rank *nr = op->comm->impl;
    const bool p2p = op->kind == WK_COLL_SEND || op->kind == WK_COLL_RECV;
    return p2p && nr->p2p ? nr->p2p : nr->comm;
}

/* 1 for the ops that run in the second NCCL group: send/recv on a non-blocking communicator
 * beside blocking ones (NCCL takes no group that mixes the two kinds). */
static int op_part(const wk_comm_op *op)
{
    return op_comm(op) == ((const nc_rank *)op->comm->impl)->p2p;
}

/* Runs the ops of part `part` of ops[0..n) as one NCCL group and waits until NCCL has taken
 * them (a non-blocking communicator's group is polled with the timeout). */
static wk_status run_part(const nc_lib *L, wk_comm_op *ops, int n, int part)
{
    wk_status s = WK_OK;
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= op_part(&ops[i]) == part;
    if (!any)
        return WK_OK;
    L->api.GroupStart();
    for (int i = 0; i < n && s == WK_OK; i++) {
        if (op_part(&ops[i]) != part)
            continue;
        void *stream = NULL;
        s = bind_dev(ops[i].comm->dev, &stream);
        if (s != WK_OK)
            break;
        nc_result r = issue(L, &ops[i], op_comm(&ops[i]), stream);
        if (r != NC_SUCCESS && r != NC_IN_PROGRESS)
            s = nc_fail(L, op_comm(&ops[i]), r, wk_coll_name(ops[i].kind), ops[i].comm->rank);
    }
    nc_result r = L->api.GroupEnd();
    if (s != WK_OK)
        return s;
    if (r != NC_SUCCESS && r != NC_IN_PROGRESS)
        return nc_fail(L, NULL, r, "ncclGroupEnd", ops[0].comm->rank);
    /* wait until NCCL has taken every op of the group (not until the transfers finish) */
    for (int i = 0; i < n; i++) {
        if (op_part(&ops[i]) != part)
            continue;
        wk_comm *c = ops[i].comm;
        nc_comm comm = op_comm(&ops[i]);
        if (!comm)
            continue;
        nc_result a = poll_comm(L, comm, wk_comm_now_ms() + c->timeout_ms);
        if (a == NC_SUCCESS)
            continue;
        char msg[256];
        if (a == NC_IN_PROGRESS) {
            snprintf(msg, sizeof msg, "%s (rank %d): %s did not take the call within %lld ms; "
                     "the communicator is aborted", wk_coll_name(ops[i].kind), c->rank, L->desc,
                     (long long)c->timeout_ms);
            abort_rank(c, WK_ERR_TIMEOUT, msg);
            if (s == WK_OK)
                s = wk_err(WK_ERR_TIMEOUT, "%s", msg);
        } else {
            wk_status e = nc_fail(L, comm, a, wk_coll_name(ops[i].kind), c->rank);
            snprintf(msg, sizeof msg, "%s", wk_last_error());
            abort_rank(c, e, msg);
            if (s == WK_OK)
                s = wk_err(e, "%s", msg);
        }
    }
    return s;
}

/* 1 when op goes to the one-shot all-reduce */
static bool op_oneshot(const wk_comm_op *op)
{
    const nc_rank *nr = op->comm->impl;
    return nr->os && op->kind == WK_COLL_ALL_REDUCE && wk_oneshot_takes(op->dt, op->red, op->count);
}

/* The ops in their order: each one-shot all-reduce launched on its device's stream; each run of
 * NCCL ops between them as one NCCL group, its collectives first, then (guarded mode) its sends
 * and receives: every rank issues its parts in that order, so no rank waits in one part for a
 * peer that is in the other. */
static wk_status nc_run(wk_comm_op *ops, int n)
{
    const nc_lib *L = ((nc_rank *)ops[0].comm->impl)->L;
    for (int i = 0; i < n; i++)
        if (!((nc_rank *)ops[i].comm->impl)->comm)
            return wk_err(WK_ERR_DEVICE, "%s: rank %d: the communicator was aborted",
                          wk_coll_name(ops[i].kind), ops[i].comm->rank);
    wk_status s = WK_OK;
    for (int i = 0; i < n && s == WK_OK;) {
        if (op_oneshot(&ops[i])) {
            wk_comm_op *op = &ops[i++];
            s = wk_oneshot_all_reduce(((nc_rank *)op->comm->impl)->os, op->recv, op->send,
                                      op->count, op->dt, op->red, op->comm->timeout_ms,
                                      WK_ONESHOT_BOTH);
            continue;
        }
        int j = i;
        while (j < n && !op_oneshot(&ops[j]))
            j++;
        s = run_part(L, ops + i, j - i, 0);
        if (s == WK_OK)
            s = run_part(L, ops + i, j - i, 1);
        i = j;
    }
    return s;
}

/* Once c's stream is idle: WK_OK, or the failure a one-shot call of c recorded (a peer that did
 * not take part within the timeout), the communicator then aborted. */
static wk_status oneshot_check(wk_comm *c)
{
    const nc_rank *nr = c->impl;
    const wk_status s = nr->os ? wk_oneshot_status(nr->os, c->timeout_ms) : WK_OK;
    if (s == WK_OK)
        return WK_OK;
    char msg[256];
    snprintf(msg, sizeof msg, "%s", wk_last_error());
    abort_rank(c, s, msg);
    return wk_err(s, "%s", msg);
}

/* Waits for the device's stream with the communicator's timeout, watching NCCL's async error. */
static wk_status nc_sync(wk_comm *c)
{
    nc_rank *nr = c->impl;
    const nc_lib *L = nr->L;
    wk_gpu_device *g = wk_gpu_dev(c->dev);
    if (!g->drv->query) {
        const wk_status s = g->drv->sync(g->ctx);
        return s != WK_OK ? s : oneshot_check(c);
    }
    const int64_t deadline = wk_comm_now_ms() + c->timeout_ms;
    char msg[256];
    const int64_t t0 = now_us();
    for (;;) {
        nc_result a = NC_SUCCESS, b = NC_SUCCESS;
        if (nr->comm && L->api.CommGetAsyncError(nr->comm, &a) == NC_SUCCESS && nr->p2p &&
            (a == NC_SUCCESS || a == NC_IN_PROGRESS))
            (void)L->api.CommGetAsyncError(nr->p2p, &b);
        if (a == NC_SUCCESS || a == NC_IN_PROGRESS)
            a = b;
        if (a != NC_SUCCESS && a != NC_IN_PROGRESS) {
            wk_status e = nc_fail(L, nr->comm, a, "wk_comm_synchronize: async error", c->rank);
            snprintf(msg, sizeof msg, "%s", wk_last_error());
            abort_rank(c, e, msg);
            return wk_err(e, "%s", msg);
        }
        bool idle = false;
        wk_status s = g->drv->query(g->ctx, &idle);
        if (s != WK_OK)
            return s;
        if (idle)
            return oneshot_check(c);
        if (wk_comm_now_ms() >= deadline) {
            snprintf(msg, sizeof msg, "wk_comm_synchronize (rank %d): the stream did not finish "
                     "within %lld ms (a peer missing?); the communicator is aborted", c->rank,
                     (long long)c->timeout_ms);
            abort_rank(c, WK_ERR_TIMEOUT, msg);
            return wk_err(WK_ERR_TIMEOUT, "%s", msg);
        }
        backoff(t0);
    }
}

static const char *nc_describe(const wk_comm *c)
{
    const nc_rank *nr = c->impl;
    return !nr ? "nccl" : nr->os ? nr->desc : nr->L->desc;
}

const wk_comm_tp wk_comm_nccl_transport = {
    .name = "nccl", .init_rank = nc_init_rank, .init_all = nc_init_all, .run = nc_run,
    .sync = nc_sync, .check_dtype = nc_check_dtype, .destroy = nc_destroy,
    .describe = nc_describe,
};
