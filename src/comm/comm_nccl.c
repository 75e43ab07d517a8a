/* comm_nccl.c: the NCCL (CUDA) and RCCL (ROCm) transport. The library is opened with dlopen at
 * first use (WICK_NCCL_LIB / WICK_RCCL_LIB: a file, or a directory holding libnccl.so.2 /
 * librccl.so.1; else the loader's search path) and its entry points looked up by name. The few
 * types are declared here from NCCL's public API (enum values, the 128-byte unique id, the
 * config struct as of 2.14, which later versions accept by its size and version fields); no
 * NCCL header is used.
 *
 * Communicators are non-blocking (config.blocking = 0): every call returns at once and its
 * progress is polled with ncclCommGetAsyncError, so init, group ends and wk_comm_synchronize can
 * give up after the communicator's timeout, abort it (ncclCommAbort) and return WK_ERR_TIMEOUT
 * instead of hanging. Collectives are queued on the device's wick stream. */
#include "comm_impl.h"
#include "gpu/gpu_driver.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- NCCL's public API, declared by value */
typedef int nc_result; /* ncclResult_t */
enum { NC_SUCCESS = 0, NC_INVALID_ARGUMENT = 4, NC_INVALID_USAGE = 5, NC_REMOTE_ERROR = 6,
       NC_IN_PROGRESS = 7 };
enum { NC_INT8 = 0, NC_UINT8 = 1, NC_INT32 = 2, NC_UINT32 = 3, NC_INT64 = 4, NC_UINT64 = 5,
       NC_FLOAT16 = 6, NC_FLOAT32 = 7, NC_FLOAT64 = 8, NC_BFLOAT16 = 9, NC_FLOAT8E4M3 = 10 };
typedef struct nc_unique_id {
    char internal[WK_COMM_ID_BYTES];
} nc_unique_id;
typedef void *nc_comm;
typedef struct nc_config { /* ncclConfig_t as of NCCL 2.14 */
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking, cga_cluster_size, min_ctas, max_ctas;
    const char *net_name;
} nc_config;
#define NC_VERSION(x, y, z) ((x) * 10000 + (y) * 100 + (z)) /* NCCL_VERSION for 2.9 and later */

typedef struct nc_api {
    nc_result (*GetVersion)(int *);
    nc_result (*GetUniqueId)(nc_unique_id *);
    nc_result (*CommInitRank)(nc_comm *, int, nc_unique_id, int);
    nc_result (*CommDestroy)(nc_comm);
    nc_result (*CommAbort)(nc_comm);
    nc_result (*CommGetAsyncError)(nc_comm, nc_result *);
    const char *(*GetErrorString)(nc_result);
    nc_result (*AllReduce)(const void *, void *, size_t, int, int, nc_comm, void *);
    nc_result (*AllGather)(const void *, void *, size_t, int, nc_comm, void *);
    nc_result (*ReduceScatter)(const void *, void *, size_t, int, int, nc_comm, void *);
    nc_result (*Broadcast)(const void *, void *, size_t, int, int, nc_comm, void *);
    nc_result (*Send)(const void *, size_t, int, int, nc_comm, void *);
    nc_result (*Recv)(void *, size_t, int, int, nc_comm, void *);
    nc_result (*GroupStart)(void);
    nc_result (*GroupEnd)(void);
    /* optional: NCCL 2.14+ (non-blocking communicators), 2.13+ (last error) */
    nc_result (*CommInitRankConfig)(nc_comm *, int, nc_unique_id, int, nc_config *);
    nc_result (*CommFinalize)(nc_comm);
    const char *(*GetLastError)(nc_comm);
} nc_api;

typedef struct nc_lib {
    const char *title;   /* "NCCL", "RCCL" */
    const char *env;     /* WICK_NCCL_LIB */
    const char *file;    /* libnccl.so.2 */
    const char *alt;     /* libnccl.so */
    bool rccl;
    pthread_once_t once;
    bool ok;
    int version;
    char desc[48];
    char reason[512];
    nc_api api;
} nc_lib;

static nc_lib libs[2] = {
    {.title = "NCCL", .env = "WICK_NCCL_LIB", .file = "libnccl.so.2", .alt = "libnccl.so",
     .once = PTHREAD_ONCE_INIT},
    {.title = "RCCL", .env = "WICK_RCCL_LIB", .file = "librccl.so.1", .alt = "librccl.so",
     .rccl = true, .once = PTHREAD_ONCE_INIT},
};

static void *open_lib(nc_lib *L)
{
    const char *p = getenv(L->env);
    char path[1024];
    if (p && *p) {
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            snprintf(path, sizeof path, "%s/%s", p, L->file);
        else
            snprintf(path, sizeof path, "%s", p);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(L->reason, sizeof L->reason, "%s not found: %s=%s: dlopen: %s", L->title,
                     L->env, p, e ? e : "?");
        }
        return h;
    }
    void *h = dlopen(L->file, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen(L->alt, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(L->reason, sizeof L->reason, "%s not found (dlopen %s: %s); set %s to its path",
                 L->title, L->file, e ? e : "?", L->env);
    }
    return h;
}

static void load(nc_lib *L)
{
    void *h = open_lib(L);
    if (!h)
        return;
    static const struct { size_t off; const char *sym; bool optional; } syms[] = {
#define S(f, s, o) {offsetof(nc_api, f), s, o}
        S(GetVersion, "ncclGetVersion", 0), S(GetUniqueId, "ncclGetUniqueId", 0),
        S(CommInitRank, "ncclCommInitRank", 0), S(CommDestroy, "ncclCommDestroy", 0),
        S(CommAbort, "ncclCommAbort", 0), S(CommGetAsyncError, "ncclCommGetAsyncError", 0),
        S(GetErrorString, "ncclGetErrorString", 0), S(AllReduce, "ncclAllReduce", 0),
        S(AllGather, "ncclAllGather", 0), S(ReduceScatter, "ncclReduceScatter", 0),
        S(Broadcast, "ncclBroadcast", 0), S(Send, "ncclSend", 0), S(Recv, "ncclRecv", 0),
        S(GroupStart, "ncclGroupStart", 0), S(GroupEnd, "ncclGroupEnd", 0),
        S(CommInitRankConfig, "ncclCommInitRankConfig", 1),
        S(CommFinalize, "ncclCommFinalize", 1), S(GetLastError, "ncclGetLastError", 1),
#undef S
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].sym);
        if (!p && !syms[i].optional) {
            snprintf(L->reason, sizeof L->reason, "%s: the library lacks %s (too old?)", L->title,
                     syms[i].sym);
            memset(&L->api, 0, sizeof L->api);
            return; /* the library stays open, as the GPU drivers do */
        }
        memcpy((char *)&L->api + syms[i].off, &p, sizeof p);
    }
    if (L->api.GetVersion(&L->version) != NC_SUCCESS)
        L->version = 0;
    snprintf(L->desc, sizeof L->desc, "%s %d.%d.%d", L->rccl ? "rccl" : "nccl",
             L->version / 10000, L->version / 100 % 100, L->version % 100);
    L->ok = true;
}

static void load_nccl(void) { load(&libs[0]); }
static void load_rccl(void) { load(&libs[1]); }

static nc_lib *lib_for(wk_backend_kind kind)
{
    nc_lib *L = kind == WK_BACKEND_ROCM ? &libs[1] : &libs[0];
    pthread_once(&L->once, kind == WK_BACKEND_ROCM ? load_rccl : load_nccl);
    return L;
}

static wk_status lib_check(nc_lib **out, wk_backend_kind kind, const char *op)
{
    nc_lib *L = lib_for(kind);
    if (!L->ok)
        return wk_err(WK_ERR_NO_DEVICE, "%s: %s", op, L->reason);
    *out = L;
    return WK_OK;
}

/* ---- one communicator */
typedef struct nc_rank {
    nc_lib *L;
    nc_comm comm; /* NULL once aborted */
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
    if (nr->comm) {
        void *stream;
        (void)bind_dev(c->dev, &stream);
        nr->L->api.CommAbort(nr->comm);
        nr->comm = NULL;
    }
}

/* WICK_NCCL_BLOCKING=1: blocking communicators (NCCL's default): lower host time per call,
 * but a peer that never joins or dies hangs the init or the enqueue (docs/semantics.md). */
static int blocking_wanted(void)
{
    const char *e = getenv("WICK_NCCL_BLOCKING");
    return e && !strcmp(e, "1");
}

static nc_config make_config(void)
{
    nc_config cfg = {.size = sizeof(nc_config), .magic = 0xcafebeef,
                     .version = NC_VERSION(2, 14, 0), .blocking = blocking_wanted(),
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
        nc_config cfg = make_config();
        r = L->api.CommInitRankConfig(&nr->comm, c->nranks, *id, c->rank, &cfg);
    } else {
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
    wk_status s = lib_check(&L, kind, "wk_comm_unique_id");
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
    wk_status s = lib_check(&L, c->dev->kind, "wk_comm_init_rank");
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
    if (s != WK_OK) {
        if (nr->comm)
            L->api.CommAbort(nr->comm);
        wk_free(nr);
        c->impl = NULL;
    }
    return s;
}

static wk_status nc_init_all(wk_comm **cs, int n)
{
    nc_lib *L = NULL;
    wk_status s = lib_check(&L, cs[0]->dev->kind, "wk_comm_init_all");
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
    }
    if (s != WK_OK)
        for (int i = 0; i < n; i++) {
            nc_rank *nr = cs[i]->impl;
            if (nr && nr->comm)
                L->api.CommAbort(nr->comm);
            wk_free(nr);
            cs[i]->impl = NULL;
        }
    return s;
}

static void nc_destroy(wk_comm *c, bool abort)
{
    nc_rank *nr = c->impl;
    if (!nr)
        return;
    const nc_lib *L = nr->L;
    if (nr->comm) {
        void *stream;
        (void)bind_dev(c->dev, &stream);
        bool aborted = abort;
        if (!aborted && L->api.CommFinalize) {
            nc_result r = L->api.CommFinalize(nr->comm);
            if (r == NC_SUCCESS || r == NC_IN_PROGRESS)
                r = poll_comm(L, nr->comm, wk_comm_now_ms() + c->timeout_ms);
            aborted = r != NC_SUCCESS;
        }
        if (aborted)
            L->api.CommAbort(nr->comm);
        else
            L->api.CommDestroy(nr->comm);
    }
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

static wk_status nc_run(wk_comm_op *ops, int n)
{
    const nc_lib *L = ((nc_rank *)ops[0].comm->impl)->L;
    wk_status s = WK_OK;
    for (int i = 0; i < n && s == WK_OK; i++)
        if (!((nc_rank *)ops[i].comm->impl)->comm)
            s = wk_err(WK_ERR_DEVICE, "%s: rank %d: the communicator was aborted",
                       wk_coll_name(ops[i].kind), ops[i].comm->rank);
    if (s != WK_OK)
        return s;
    L->api.GroupStart();
    for (int i = 0; i < n && s == WK_OK; i++) {
        void *stream = NULL;
        s = bind_dev(ops[i].comm->dev, &stream);
        if (s != WK_OK)
            break;
        nc_rank *nr = ops[i].comm->impl;
        nc_result r = issue(L, &ops[i], nr->comm, stream);
        if (r != NC_SUCCESS && r != NC_IN_PROGRESS)
            s = nc_fail(L, nr->comm, r, wk_coll_name(ops[i].kind), ops[i].comm->rank);
    }
    nc_result r = L->api.GroupEnd();
    if (s != WK_OK)
        return s;
    if (r != NC_SUCCESS && r != NC_IN_PROGRESS)
        return nc_fail(L, NULL, r, "ncclGroupEnd", ops[0].comm->rank);
    /* wait until NCCL has taken every op of the group (not until the transfers finish) */
    for (int i = 0; i < n; i++) {
        wk_comm *c = ops[i].comm;
        nc_rank *nr = c->impl;
        if (!nr->comm)
            continue;
        nc_result a = poll_comm(L, nr->comm, wk_comm_now_ms() + c->timeout_ms);
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
            wk_status e = nc_fail(L, nr->comm, a, wk_coll_name(ops[i].kind), c->rank);
            snprintf(msg, sizeof msg, "%s", wk_last_error());
            abort_rank(c, e, msg);
            if (s == WK_OK)
                s = wk_err(e, "%s", msg);
        }
    }
    return s;
}

/* Waits for the device's stream with the communicator's timeout, watching NCCL's async error. */
static wk_status nc_sync(wk_comm *c)
{
    nc_rank *nr = c->impl;
    const nc_lib *L = nr->L;
    wk_gpu_device *g = wk_gpu_dev(c->dev);
    if (!g->drv->query)
        return g->drv->sync(g->ctx);
    const int64_t deadline = wk_comm_now_ms() + c->timeout_ms;
    char msg[256];
    const int64_t t0 = now_us();
    for (;;) {
        nc_result a = NC_SUCCESS;
        if (nr->comm && L->api.CommGetAsyncError(nr->comm, &a) == NC_SUCCESS &&
            a != NC_SUCCESS && a != NC_IN_PROGRESS) {
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
            return WK_OK;
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
    return nr ? nr->L->desc : "nccl";
}

const wk_comm_tp wk_comm_nccl_transport = {
    .name = "nccl", .init_rank = nc_init_rank, .init_all = nc_init_all, .run = nc_run,
    .sync = nc_sync, .check_dtype = nc_check_dtype, .destroy = nc_destroy,
    .describe = nc_describe,
};
