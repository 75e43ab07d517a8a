/* comm.c: the communicator front end (include/wick_comm.h). Every argument is checked here,
 * once, for every transport; a collective becomes a wk_comm_op that runs at once (a group of
 * one) or waits in the calling thread's group until the outermost wk_comm_group_end. */
#include "comm_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t wk_comm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *wk_coll_name(wk_coll_kind k)
{
    static const char *const names[] = {"all_reduce", "all_gather", "reduce_scatter",
                                        "broadcast", "send", "recv"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

void wk_comm_mark_failed(wk_comm *c, wk_status s, const char *msg)
{
    if (c->failed != WK_OK)
        return;
    c->failed = s;
    snprintf(c->failed_msg, sizeof c->failed_msg, "%s", msg);
}

static int64_t default_timeout(void)
{
    const char *v = getenv("WICK_COMM_TIMEOUT_MS");
    if (v && *v) {
        char *end = NULL;
        long long ms = strtoll(v, &end, 10);
        if (end && *end == '\0' && ms > 0)
            return ms;
    }
    return WK_COMM_DEFAULT_TIMEOUT_MS;
}

static const wk_comm_tp *transport_of(wk_backend_kind kind)
{
    switch (kind) {
    case WK_BACKEND_CPU:
    case WK_BACKEND_SIMT: return &wk_comm_cpu_transport;
    case WK_BACKEND_CUDA:
    case WK_BACKEND_ROCM: return &wk_comm_nccl_transport;
    }
    return NULL;
}

wk_status wk_comm_unique_id(wk_comm_id *out, wk_backend_kind kind)
{
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_unique_id: NULL output");
    if (!transport_of(kind))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_unique_id: unknown backend kind %d",
                      (int)kind);
    memset(out, 0, sizeof *out);
    if (transport_of(kind) == &wk_comm_cpu_transport)
        return wk_comm_cpu_unique_id(out);
    return wk_comm_nccl_unique_id(out, kind);
}

static wk_status new_comm(wk_comm **out, wk_device *dev, int nranks, int rank, int64_t timeout_ms)
{
    wk_comm *c = wk_calloc(1, sizeof *c);
    if (!c)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm: out of host memory");
    c->tp = transport_of(dev->kind);
    c->dev = dev;
    c->rank = rank;
    c->nranks = nranks;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : default_timeout();
    *out = c;
    return WK_OK;
}

wk_status wk_comm_init_rank(wk_comm **out, wk_device *dev, int nranks, const wk_comm_id *id,
                            int rank, int64_t timeout_ms)
{
    if (!out || !dev || !id)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_rank: NULL %s",
                      !out ? "output" : !dev ? "device" : "id");
    *out = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return wk_err(WK_ERR_INVALID_ARGUMENT,
                      "wk_comm_init_rank: rank %d of %d ranks (need 0 <= rank < nranks)", rank,
                      nranks);
    if (timeout_ms < 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_rank: negative timeout %lld ms",
                      (long long)timeout_ms);
    wk_comm *c = NULL;
    wk_status s = new_comm(&c, dev, nranks, rank, timeout_ms);
    if (s != WK_OK)
        return s;
    s = c->tp->init_rank(c, id);
    if (s != WK_OK) {
        wk_free(c);
        return s;
    }
    wk_device_retain(dev);
    wk_live_add(1);
    *out = c;
    return WK_OK;
}

wk_status wk_comm_init_all(wk_comm **comms, wk_device *const *devs, int n, int64_t timeout_ms)
{
    if (!comms || !devs)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_all: NULL %s",
                      !comms ? "comms" : "devs");
    if (n < 1 || timeout_ms < 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_all: %s",
                      n < 1 ? "n < 1" : "negative timeout");
    for (int i = 0; i < n; i++) {
        comms[i] = NULL;
        if (!devs[i])
            return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_all: devs[%d] is NULL", i);
        if (transport_of(devs[i]->kind) != transport_of(devs[0]->kind))
            return wk_err(WK_ERR_DEVICE_MISMATCH,
                          "wk_comm_init_all: devs[0] is %s but devs[%d] is %s", devs[0]->name, i,
                          devs[i]->name);
        if (transport_of(devs[0]->kind) == &wk_comm_nccl_transport)
            for (int j = 0; j < i; j++)
                if (wk_device_same(devs[i], devs[j]))
                    return wk_err(WK_ERR_INVALID_ARGUMENT,
                                  "wk_comm_init_all: devs[%d] and devs[%d] are the same GPU "
                                  "(NCCL needs one rank per GPU)", j, i);
    }
    wk_status s = WK_OK;
    for (int i = 0; i < n && s == WK_OK; i++)
        s = new_comm(&comms[i], devs[i], n, i, timeout_ms);
    if (s == WK_OK)
        s = comms[0]->tp->init_all(comms, n);
    if (s != WK_OK) {
        for (int i = 0; i < n; i++) {
            wk_free(comms[i]);
            comms[i] = NULL;
        }
        return s;
    }
    for (int i = 0; i < n; i++) {
        wk_device_retain(devs[i]);
        wk_live_add(1);
    }
    return WK_OK;
}

static void comm_free(wk_comm *c, bool abort)
{
    if (!c)
        return;
    c->tp->destroy(c, abort || c->failed != WK_OK);
    wk_device_release(c->dev);
    wk_free(c);
    wk_live_add(-1);
}

void wk_comm_destroy(wk_comm *c) { comm_free(c, false); }
void wk_comm_abort(wk_comm *c) { comm_free(c, true); }

wk_status wk_comm_set_timeout(wk_comm *c, int64_t ms)
{
    if (!c || ms <= 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_set_timeout: %s",
                      !c ? "NULL communicator" : "the timeout must be > 0 ms");
    c->timeout_ms = ms;
    return WK_OK;
}

int64_t wk_comm_timeout(const wk_comm *c) { return c ? c->timeout_ms : -1; }
int wk_comm_rank(const wk_comm *c) { return c ? c->rank : -1; }
int wk_comm_size(const wk_comm *c) { return c ? c->nranks : -1; }
wk_device *wk_comm_device(const wk_comm *c) { return c ? c->dev : NULL; }
const char *wk_comm_transport(const wk_comm *c) { return c ? c->tp->describe(c) : "?"; }

/* ---------------------------------------------------------------- argument checks */
static wk_status check_comm(const wk_comm *c, const char *op)
{
    if (!c)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL communicator", op);
    if (c->failed != WK_OK)
        return wk_err(c->failed, "%s: rank %d: the communicator failed earlier: %s", op, c->rank,
                      c->failed_msg);
    return WK_OK;
}

/* s[off .. off + n) (n = count * mult elements) on the communicator's device. */
static wk_status check_part(const wk_comm *c, const wk_storage *s, size_t off, size_t count,
                            size_t mult, const char *op, const char *what, bool write)
{
    if (!s)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL %s storage", op, what);
    /* as for ops (api_check.c): CPU handles share memory; a GPU handle owns its stream, so the
     * storage must come from the communicator's own handle or the work would not be ordered */
    const bool cpu_pair = s->dev->kind == WK_BACKEND_CPU && c->dev->kind == WK_BACKEND_CPU;
    if (s->dev != c->dev && !cpu_pair)
        return wk_err(WK_ERR_DEVICE_MISMATCH, "%s: the %s storage is on %s, the communicator "
                      "(rank %d) on %s (another device handle)", op, what, s->dev->name, c->rank,
                      c->dev->name);
    if (mult && count > SIZE_MAX / mult)
        return wk_err(WK_ERR_OVERFLOW, "%s: %zu x %zu elements overflow", op, count, mult);
    size_t n = count * mult;
    if (off > s->len || n > s->len - off)
        return wk_err(WK_ERR_LAYOUT, "%s: %s elements [%zu, %zu + %zu) pass the storage's end "
                      "(%zu elements)", op, what, off, off, n, s->len);
    if (write && s->readonly)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: the %s storage is read-only", op, what);
    return WK_OK;
}

static wk_status check_dtype(const wk_comm *c, wk_dtype dt, int red, const char *op)
{
    if (red >= 0 && !wk_comm_reducible(dt))
        return wk_err(WK_ERR_DTYPE, "%s: no reduction for %s (NCCL has no 16-bit integer type)",
                      op, wk_dtype_name(dt));
    return c->tp->check_dtype(c, dt, red, op);
}

static char *addr(const wk_storage *s, size_t off)
{
    return s ? (char *)s->data + off * wk_dtype_size(s->dtype) : NULL;
}

/* ---------------------------------------------------------------- groups and running */
typedef struct group_state {
    int depth;
    wk_comm_op *ops;
    int n, cap;
    wk_status first; /* the first argument error inside the group */
} group_state;
static _Thread_local group_state grp;

static wk_status run_ops(wk_comm_op *ops, int n)
{
    wk_status first = WK_OK;
    char msg[1024] = "";
    const wk_comm_tp *tps[] = {&wk_comm_nccl_transport, &wk_comm_cpu_transport};
    for (int t = 0; t < 2; t++) {
        /* the ops of one transport keep their order; ops of the other are held aside */
        int m = 0;
        for (int i = 0; i < n; i++)
            m += ops[i].comm->tp == tps[t];
        if (!m)
            continue;
        wk_comm_op *sub = ops;
        wk_comm_op *buf = NULL;
        if (m != n) {
            buf = wk_malloc((size_t)m * sizeof *buf);
            if (!buf)
                return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm_group_end: out of host memory");
            for (int i = 0, k = 0; i < n; i++)
                if (ops[i].comm->tp == tps[t])
                    buf[k++] = ops[i];
            sub = buf;
        }
        wk_status s = tps[t]->run(sub, m);
        if (s != WK_OK && first == WK_OK) {
            first = s;
            snprintf(msg, sizeof msg, "%s", wk_last_error());
        }
        wk_free(buf);
    }
    if (first != WK_OK)
        return wk_err(first, "%s", msg);
    return WK_OK;
}

static wk_status submit(const wk_comm_op *op)
{
    if (grp.depth == 0) {
        wk_comm_op one = *op;
        return run_ops(&one, 1);
    }
    if (grp.n == grp.cap) {
        int cap = grp.cap ? grp.cap * 2 : 16;
        wk_comm_op *p = wk_malloc((size_t)cap * sizeof *p);
        if (!p)
            return wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory queueing in a group",
                          wk_coll_name(op->kind));
        if (grp.n)
            memcpy(p, grp.ops, (size_t)grp.n * sizeof *p);
        wk_free(grp.ops);
        grp.ops = p;
        grp.cap = cap;
    }
    grp.ops[grp.n++] = *op;
    return WK_OK;
}

wk_status wk_comm_group_start(void)
{
    if (grp.depth == 0)
        grp.first = WK_OK;
    grp.depth++;
    return WK_OK;
}

wk_status wk_comm_group_end(void)
{
    if (grp.depth == 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_group_end: no group is open on this thread");
    if (--grp.depth > 0)
        return WK_OK;
    wk_status s = grp.n ? run_ops(grp.ops, grp.n) : WK_OK;
    wk_free(grp.ops);
    grp.ops = NULL;
    grp.n = grp.cap = 0;
    if (s == WK_OK && grp.first != WK_OK)
        return wk_err(grp.first, "wk_comm_group_end: a call of the group was refused (%s); the "
                      "others ran", wk_status_string(grp.first));
    return s;
}

/* Records an argument error made inside a group (returned by the call itself, too). */
static wk_status arg_fail(wk_status s)
{
    if (grp.depth > 0 && grp.first == WK_OK)
        grp.first = s;
    return s;
}

static wk_status collective(wk_comm *c, wk_coll_kind kind, wk_storage *recv, size_t roff,
                            const wk_storage *send, size_t soff, size_t count, wk_reduce_op red,
                            int peer)
{
    const char *op = wk_coll_name(kind);
    wk_status s = check_comm(c, op);
    if (s != WK_OK)
        return arg_fail(s);
    const bool reduce = kind == WK_COLL_ALL_REDUCE || kind == WK_COLL_REDUCE_SCATTER;
    if (reduce && (unsigned)red >= WK_REDUCE_OP_COUNT)
        return arg_fail(wk_err(WK_ERR_INVALID_ARGUMENT, "%s: unknown reduction %d", op, (int)red));
    if ((kind == WK_COLL_BROADCAST || kind == WK_COLL_SEND || kind == WK_COLL_RECV) &&
        (peer < 0 || peer >= c->nranks))
        return arg_fail(wk_err(WK_ERR_INVALID_ARGUMENT, "%s: %s %d is not a rank of %d", op,
                               kind == WK_COLL_BROADCAST ? "root" : "peer", peer, c->nranks));
    const size_t n = (size_t)c->nranks;
    const bool need_send = kind != WK_COLL_RECV && (kind != WK_COLL_BROADCAST || peer == c->rank);
    if (need_send) {
        s = check_part(c, send, soff, count, kind == WK_COLL_REDUCE_SCATTER ? n : 1, op, "send",
                       false);
        if (s != WK_OK)
            return arg_fail(s);
    } else if (kind == WK_COLL_BROADCAST) {
        send = NULL;
    }
    if (kind != WK_COLL_SEND) {
        s = check_part(c, recv, roff, count, kind == WK_COLL_ALL_GATHER ? n : 1, op, "recv", true);
        if (s != WK_OK)
            return arg_fail(s);
    }
    if (send && recv && send->dtype != recv->dtype)
        return arg_fail(wk_err(WK_ERR_DTYPE, "%s: send is %s but recv is %s", op,
                               wk_dtype_name(send->dtype), wk_dtype_name(recv->dtype)));
    const wk_dtype dt = recv ? recv->dtype : send->dtype;
    s = check_dtype(c, dt, reduce ? (int)red : -1, op);
    if (s != WK_OK)
        return arg_fail(s);
    wk_comm_op o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.comm = c;
    o.dt = dt;
    o.red = red;
    o.peer = peer;
    o.send = addr(send, soff);
    o.recv = kind == WK_COLL_SEND ? NULL : addr(recv, roff);
    o.count = count;
    return submit(&o);
}

wk_status wk_comm_all_reduce(wk_comm *c, wk_storage *recv, size_t roff, const wk_storage *send,
                             size_t soff, size_t count, wk_reduce_op op)
{
    return collective(c, WK_COLL_ALL_REDUCE, recv, roff, send, soff, count, op, 0);
}

wk_status wk_comm_all_gather(wk_comm *c, wk_storage *recv, size_t roff, const wk_storage *send,
                             size_t soff, size_t count)
{
    return collective(c, WK_COLL_ALL_GATHER, recv, roff, send, soff, count, WK_REDUCE_SUM, 0);
}

wk_status wk_comm_reduce_scatter(wk_comm *c, wk_storage *recv, size_t roff, const wk_storage *send,
                                 size_t soff, size_t count, wk_reduce_op op)
{
    return collective(c, WK_COLL_REDUCE_SCATTER, recv, roff, send, soff, count, op, 0);
}

wk_status wk_comm_broadcast(wk_comm *c, wk_storage *recv, size_t roff, const wk_storage *send,
                            size_t soff, size_t count, int root)
{
    return collective(c, WK_COLL_BROADCAST, recv, roff, send, soff, count, WK_REDUCE_SUM, root);
}

wk_status wk_comm_send(wk_comm *c, const wk_storage *send, size_t off, size_t count, int peer)
{
    return collective(c, WK_COLL_SEND, NULL, 0, send, off, count, WK_REDUCE_SUM, peer);
}

wk_status wk_comm_recv(wk_comm *c, wk_storage *recv, size_t off, size_t count, int peer)
{
    return collective(c, WK_COLL_RECV, recv, off, NULL, 0, count, WK_REDUCE_SUM, peer);
}

wk_status wk_comm_synchronize(wk_comm *c)
{
    wk_status s = check_comm(c, "wk_comm_synchronize");
    if (s != WK_OK)
        return s;
    return c->tp->sync(c);
}
