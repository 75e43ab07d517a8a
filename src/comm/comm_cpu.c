/* comm_cpu.c: the CPU transport. Ranks are CPU (or simt) device handles of one process; they
 * meet in a "clique" found by the id's bytes in a process-wide registry.
 *
 * A collective is posted, not run in lock step: rank r's k-th collective goes into round k of
 * the clique; the rank that completes a round (the last to post) runs it for every rank, under
 * the clique's mutex, folding the ranks in order 0, 1, ..., n-1 into a scratch buffer and then
 * copying the result out (so in-place calls are safe). The k-th send from a to b pairs with the
 * k-th recv of b from a; whichever comes second copies. Posting never blocks, so one thread can
 * drive every rank inside a group; then each posted op is waited for, up to the communicator's
 * timeout. A wait that times out aborts the clique: every op still pending on it fails with
 * WK_ERR_TIMEOUT and its waiters wake at once; every later call on it fails the same way. */
#include "comm_impl.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char cpu_magic[16] = "wick cpu commid";

typedef struct cpu_round {
    uint64_t seq;
    int posted;
    struct cpu_round *next;
    wk_comm_op *ops[]; /* one per rank, NULL until posted */
} cpu_round;

typedef struct cpu_p2p {
    int src, dst;
    uint64_t seq;
    bool is_send;
    wk_comm_op *op;
    struct cpu_p2p *next;
} cpu_p2p;

typedef struct cpu_clique {
    unsigned char key[WK_COMM_ID_BYTES];
    int nranks;
    /* under reg_mu: the rendezvous and the references */
    int joined, refs;
    bool in_registry;
    wk_status init_failed;
    char init_why[256];
    pthread_cond_t init_cv;
    struct cpu_clique *next;
    /* under mu: the collectives */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    wk_status broken;
    char why[256];
    cpu_round *rounds;
    cpu_p2p *p2p;
    bool have[]; /* rank joined */
} cpu_clique;

typedef struct cpu_rank {
    cpu_clique *q;
    uint64_t coll_seq;
    uint64_t *send_seq, *recv_seq; /* per peer */
} cpu_rank;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static cpu_clique *registry;
static atomic_ulong id_counter;

wk_status wk_comm_cpu_unique_id(wk_comm_id *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t v[4] = {(uint64_t)getpid(), atomic_fetch_add(&id_counter, 1) + 1,
                     (uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec};
    memcpy(out->bytes, cpu_magic, sizeof cpu_magic);
    memcpy(out->bytes + sizeof cpu_magic, v, sizeof v);
    return WK_OK;
}

static void deadline_ts(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a))
        return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int r = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return r;
}

static cpu_clique *clique_new(const unsigned char *key, int nranks)
{
    cpu_clique *q = wk_calloc(1, sizeof *q + (size_t)nranks * sizeof(bool));
    if (!q)
        return NULL;
    if (cond_init_monotonic(&q->init_cv)) {
        wk_free(q);
        return NULL;
    }
    if (cond_init_monotonic(&q->cv)) {
        pthread_cond_destroy(&q->init_cv);
        wk_free(q);
        return NULL;
    }
    pthread_mutex_init(&q->mu, NULL);
    memcpy(q->key, key, WK_COMM_ID_BYTES);
    q->nranks = nranks;
    return q;
}

static void clique_free(cpu_clique *q)
{
    pthread_cond_destroy(&q->init_cv);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    wk_free(q);
}

static void registry_remove(cpu_clique *q) /* reg_mu held */
{
    for (cpu_clique **p = &registry; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    q->in_registry = false;
}

static void unref(cpu_clique *q) /* reg_mu held */
{
    if (--q->refs == 0)
        clique_free(q);
}

static wk_status rank_new(cpu_rank **out, int nranks)
{
    cpu_rank *rk = wk_calloc(1, sizeof *rk);
    if (rk) {
        rk->send_seq = wk_calloc((size_t)nranks, sizeof(uint64_t));
        rk->recv_seq = wk_calloc((size_t)nranks, sizeof(uint64_t));
    }
    if (!rk || !rk->send_seq || !rk->recv_seq) {
        if (rk) {
            wk_free(rk->send_seq);
            wk_free(rk->recv_seq);
        }
        wk_free(rk);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm_init: out of host memory");
    }
    *out = rk;
    return WK_OK;
}

static void rank_free(cpu_rank *rk)
{
    wk_free(rk->send_seq);
    wk_free(rk->recv_seq);
    wk_free(rk);
}

/* ---------------------------------------------------------------- init */
static wk_status join(cpu_clique **out, const wk_comm *c, const wk_comm_id *id)
{
    cpu_clique *q = registry;
    while (q && memcmp(q->key, id->bytes, WK_COMM_ID_BYTES) != 0)
        q = q->next;
    if (q && q->nranks != c->nranks)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_rank: rank %d says %d ranks, an "
                      "earlier rank of this id said %d", c->rank, c->nranks, q->nranks);
    if (q && q->have[c->rank])
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_rank: rank %d joined this id twice",
                      c->rank);
    if (!q) {
        q = clique_new(id->bytes, c->nranks);
        if (!q)
            return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm_init_rank: out of host memory");
        q->in_registry = true;
        q->next = registry;
        registry = q;
    }
    q->have[c->rank] = true;
    q->joined++;
    q->refs++;
    *out = q;
    return WK_OK;
}

static void missing_ranks(char *buf, size_t cap, const cpu_clique *q, wk_comm_op *const *ops)
{
    size_t o = 0;
    buf[0] = 0;
    for (int r = 0; r < q->nranks && o + 12 < cap; r++)
        if (ops ? !ops[r] : !q->have[r])
            o += (size_t)snprintf(buf + o, cap - o, "%s%d", o ? "," : "", r);
}

static wk_status cpu_init_rank(wk_comm *c, const wk_comm_id *id)
{
    if (memcmp(id->bytes, cpu_magic, sizeof cpu_magic) != 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "wk_comm_init_rank: the id was not made by "
                      "wk_comm_unique_id for the CPU (or simt) in this process");
    cpu_rank *rk = NULL;
    wk_status s = rank_new(&rk, c->nranks);
    if (s != WK_OK)
        return s;
    pthread_mutex_lock(&reg_mu);
    cpu_clique *q = NULL;
    s = join(&q, c, id);
    if (s != WK_OK) {
        pthread_mutex_unlock(&reg_mu);
        rank_free(rk);
        return s;
    }
    if (q->joined == q->nranks) {
        registry_remove(q);
        pthread_cond_broadcast(&q->init_cv);
    }
    struct timespec dl;
    deadline_ts(&dl, c->timeout_ms);
    while (q->joined < q->nranks && q->init_failed == WK_OK) {
        if (pthread_cond_timedwait(&q->init_cv, &reg_mu, &dl) == ETIMEDOUT &&
            q->joined < q->nranks && q->init_failed == WK_OK) {
            char miss[160];
            missing_ranks(miss, sizeof miss, q, NULL);
            q->init_failed = WK_ERR_TIMEOUT;
            snprintf(q->init_why, sizeof q->init_why,
                     "wk_comm_init_rank: %d of %d ranks joined within %lld ms (missing: %s)",
                     q->joined, q->nranks, (long long)c->timeout_ms, miss);
            registry_remove(q);
            pthread_cond_broadcast(&q->init_cv);
        }
    }
    if (q->init_failed != WK_OK) {
        s = wk_err(q->init_failed, "%s (rank %d)", q->init_why, c->rank);
        unref(q);
        pthread_mutex_unlock(&reg_mu);
        rank_free(rk);
        return s;
    }
    pthread_mutex_unlock(&reg_mu);
    rk->q = q;
    c->impl = rk;
    return WK_OK;
}

static wk_status cpu_init_all(wk_comm **comms, int n)
{
    wk_comm_id id;
    wk_comm_cpu_unique_id(&id);
    cpu_clique *q = clique_new(id.bytes, n);
    if (!q)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "wk_comm_init_all: out of host memory");
    for (int i = 0; i < n; i++) {
        cpu_rank *rk = NULL;
        wk_status s = rank_new(&rk, n);
        if (s != WK_OK) {
            for (int j = 0; j < i; j++) {
                rank_free(comms[j]->impl);
                comms[j]->impl = NULL;
            }
            clique_free(q);
            return s;
        }
        rk->q = q;
        comms[i]->impl = rk;
        q->have[i] = true;
    }
    q->joined = q->refs = n;
    return WK_OK;
}

static void cpu_destroy(wk_comm *c, bool abort)
{
    (void)abort; /* nothing is ever left queued: every call waits for its ops */
    cpu_rank *rk = c->impl;
    if (!rk)
        return;
    pthread_mutex_lock(&reg_mu);
    unref(rk->q);
    pthread_mutex_unlock(&reg_mu);
    rank_free(rk);
    c->impl = NULL;
}

/* ---------------------------------------------------------------- running */
static void complete(wk_comm_op *op, wk_status s, const char *msg)
{
    op->done = true;
    op->status = s;
    snprintf(op->msg, sizeof op->msg, "%s", s == WK_OK ? "" : msg);
}

/* Fails every pending op of q with (s, msg) and marks q broken (q->mu held). */
static void clique_break(cpu_clique *q, wk_status s, const char *msg)
{
    if (q->broken == WK_OK) {
        q->broken = s;
        snprintf(q->why, sizeof q->why, "%s", msg);
    }
    while (q->rounds) {
        cpu_round *r = q->rounds;
        q->rounds = r->next;
        for (int i = 0; i < q->nranks; i++)
            if (r->ops[i])
                complete(r->ops[i], q->broken, q->why);
        wk_free(r);
    }
    while (q->p2p) {
        cpu_p2p *p = q->p2p;
        q->p2p = p->next;
        complete(p->op, q->broken, q->why);
        wk_free(p);
    }
    pthread_cond_broadcast(&q->cv);
}

/* The ops of one round must agree: same kind, dtype, count, reduction and root. */
static wk_status round_check(char *msg, size_t cap, wk_comm_op *const *ops, int n, uint64_t seq)
{
    const wk_comm_op *a = ops[0];
    for (int r = 1; r < n; r++) {
        const wk_comm_op *b = ops[r];
        const char *what = NULL;
        wk_status s = WK_ERR_INVALID_ARGUMENT;
        char detail[96] = "";
        if (b->kind != a->kind) {
            what = "collective";
            snprintf(detail, sizeof detail, "%s vs %s", wk_coll_name(a->kind), wk_coll_name(b->kind));
        } else if (b->dt != a->dt) {
            what = "dtype", s = WK_ERR_DTYPE;
            snprintf(detail, sizeof detail, "%s vs %s", wk_dtype_name(a->dt), wk_dtype_name(b->dt));
        } else if (b->count != a->count) {
            what = "count", s = WK_ERR_SHAPE;
            snprintf(detail, sizeof detail, "%zu vs %zu", a->count, b->count);
        } else if (b->red != a->red && (a->kind == WK_COLL_ALL_REDUCE || a->kind == WK_COLL_REDUCE_SCATTER)) {
            what = "reduction";
            snprintf(detail, sizeof detail, "%d vs %d", (int)a->red, (int)b->red);
        } else if (b->peer != a->peer && a->kind == WK_COLL_BROADCAST) {
            what = "root";
            snprintf(detail, sizeof detail, "%d vs %d", a->peer, b->peer);
        }
        if (what) {
            snprintf(msg, cap, "%s #%llu: ranks 0 and %d disagree on the %s (%s); nothing was "
                     "written", wk_coll_name(a->kind), (unsigned long long)seq, r, what, detail);
            return s;
        }
    }
    return WK_OK;
}

static void round_run(cpu_clique *q, cpu_round *rd)
{
    const int n = q->nranks;
    wk_comm_op *const *ops = rd->ops;
    char msg[256] = "";
    wk_status s = round_check(msg, sizeof msg, ops, n, rd->seq);
    const wk_comm_op *a = ops[0];
    const size_t es = wk_dtype_size(a->dt), cnt = a->count, bytes = cnt * es;
    unsigned char *tmp = NULL;
    if (s == WK_OK && bytes) {
        size_t tb = a->kind == WK_COLL_ALL_GATHER || a->kind == WK_COLL_REDUCE_SCATTER
                        ? bytes * (size_t)n : bytes;
        tmp = wk_malloc(tb);
        if (!tmp) {
            s = WK_ERR_OUT_OF_MEMORY;
            snprintf(msg, sizeof msg, "%s: out of host memory (%zu bytes of scratch)",
                     wk_coll_name(a->kind), tb);
        }
    }
    if (s == WK_OK && bytes) {
        switch (a->kind) {
        case WK_COLL_ALL_REDUCE:
        case WK_COLL_REDUCE_SCATTER: {
            const size_t m = a->kind == WK_COLL_ALL_REDUCE ? cnt : cnt * (size_t)n;
            memcpy(tmp, ops[0]->send, m * es);
            for (int r = 1; r < n; r++)
                wk_comm_reduce_into(tmp, ops[r]->send, m, a->dt, a->red);
            if (a->red == WK_REDUCE_AVG)
                wk_comm_avg_finish(tmp, m, a->dt, n);
            for (int r = 0; r < n; r++)
                memcpy(ops[r]->recv, tmp + (a->kind == WK_COLL_ALL_REDUCE ? 0 : (size_t)r * bytes),
                       bytes);
            break;
        }
        case WK_COLL_ALL_GATHER:
            for (int r = 0; r < n; r++)
                memcpy(tmp + (size_t)r * bytes, ops[r]->send, bytes);
            for (int r = 0; r < n; r++)
                memcpy(ops[r]->recv, tmp, bytes * (size_t)n);
            break;
        case WK_COLL_BROADCAST:
            memcpy(tmp, ops[a->peer]->send, bytes);
            for (int r = 0; r < n; r++)
                memcpy(ops[r]->recv, tmp, bytes);
            break;
        case WK_COLL_SEND:
        case WK_COLL_RECV: break; /* not in rounds */
        }
    }
    wk_free(tmp);
    for (int r = 0; r < n; r++)
        complete(ops[r], s, msg);
}

static void post_collective(cpu_clique *q, cpu_rank *rk, wk_comm_op *op)
{
    const uint64_t seq = rk->coll_seq++;
    cpu_round **pp = &q->rounds;
    while (*pp && (*pp)->seq != seq)
        pp = &(*pp)->next;
    cpu_round *rd = *pp;
    if (!rd) {
        rd = wk_calloc(1, sizeof *rd + (size_t)q->nranks * sizeof(wk_comm_op *));
        if (!rd) {
            complete(op, WK_ERR_OUT_OF_MEMORY, "out of host memory posting a collective");
            return;
        }
        rd->seq = seq;
        *pp = rd;
    }
    rd->ops[op->comm->rank] = op;
    if (++rd->posted < q->nranks)
        return;
    *pp = rd->next;
    round_run(q, rd);
    wk_free(rd);
    pthread_cond_broadcast(&q->cv);
}

static void p2p_run(wk_comm_op *snd, wk_comm_op *rcv)
{
    char msg[256] = "";
    wk_status s = WK_OK;
    if (snd->dt != rcv->dt) {
        s = WK_ERR_DTYPE;
        snprintf(msg, sizeof msg, "send %d -> %d: sent %s, received as %s", snd->comm->rank,
                 rcv->comm->rank, wk_dtype_name(snd->dt), wk_dtype_name(rcv->dt));
    } else if (snd->count != rcv->count) {
        s = WK_ERR_SHAPE;
        snprintf(msg, sizeof msg, "send %d -> %d: %zu elements sent, %zu expected",
                 snd->comm->rank, rcv->comm->rank, snd->count, rcv->count);
    } else if (snd->count) {
        memmove(rcv->recv, snd->send, snd->count * wk_dtype_size(snd->dt));
    }
    complete(snd, s, msg);
    complete(rcv, s, msg);
}

static void post_p2p(cpu_clique *q, cpu_rank *rk, wk_comm_op *op)
{
    const bool is_send = op->kind == WK_COLL_SEND;
    const int me = op->comm->rank;
    const int src = is_send ? me : op->peer, dst = is_send ? op->peer : me;
    const uint64_t seq = is_send ? rk->send_seq[op->peer]++ : rk->recv_seq[op->peer]++;
    for (cpu_p2p **pp = &q->p2p; *pp; pp = &(*pp)->next) {
        cpu_p2p *p = *pp;
        if (p->src == src && p->dst == dst && p->seq == seq && p->is_send != is_send) {
            *pp = p->next;
            p2p_run(is_send ? op : p->op, is_send ? p->op : op);
            wk_free(p);
            pthread_cond_broadcast(&q->cv);
            return;
        }
    }
    cpu_p2p *p = wk_calloc(1, sizeof *p);
    if (!p) {
        complete(op, WK_ERR_OUT_OF_MEMORY, "out of host memory posting a send/recv");
        return;
    }
    *p = (cpu_p2p){.src = src, .dst = dst, .seq = seq, .is_send = is_send, .op = op, .next = q->p2p};
    q->p2p = p;
}

/* The message of a wait that timed out on op (q->mu held). */
static void timeout_msg(char *buf, size_t cap, const cpu_clique *q, const wk_comm_op *op,
                        const cpu_rank *rk)
{
    const wk_comm *c = op->comm;
    if (op->kind == WK_COLL_SEND || op->kind == WK_COLL_RECV) {
        snprintf(buf, cap, "%s (rank %d, peer %d): no matching %s within %lld ms; the "
                 "communicator is aborted", wk_coll_name(op->kind), c->rank, op->peer,
                 op->kind == WK_COLL_SEND ? "recv" : "send", (long long)c->timeout_ms);
        return;
    }
    char miss[160] = "?";
    for (const cpu_round *r = q->rounds; r; r = r->next)
        for (int i = 0; i < q->nranks; i++)
            if (r->ops[i] == op)
                missing_ranks(miss, sizeof miss, q, r->ops);
    (void)rk;
    snprintf(buf, cap, "%s (rank %d): ranks %s did not take part within %lld ms; the "
             "communicator is aborted", wk_coll_name(op->kind), c->rank, miss,
             (long long)c->timeout_ms);
}

static wk_status cpu_run(wk_comm_op *ops, int n)
{
    for (int i = 0; i < n; i++) {
        cpu_rank *rk = ops[i].comm->impl;
        cpu_clique *q = rk->q;
        pthread_mutex_lock(&q->mu);
        if (q->broken != WK_OK)
            complete(&ops[i], q->broken, q->why);
        else if (ops[i].kind == WK_COLL_SEND || ops[i].kind == WK_COLL_RECV)
            post_p2p(q, rk, &ops[i]);
        else
            post_collective(q, rk, &ops[i]);
        pthread_mutex_unlock(&q->mu);
    }
    const int64_t t0 = wk_comm_now_ms();
    wk_status first = WK_OK;
    int first_i = -1;
    for (int i = 0; i < n; i++) {
        wk_comm_op *op = &ops[i];
        cpu_rank *rk = op->comm->impl;
        cpu_clique *q = rk->q;
        const int64_t left = op->comm->timeout_ms - (wk_comm_now_ms() - t0);
        struct timespec dl;
        deadline_ts(&dl, left > 0 ? left : 0);
        pthread_mutex_lock(&q->mu);
        while (!op->done) {
            if (pthread_cond_timedwait(&q->cv, &q->mu, &dl) == ETIMEDOUT && !op->done) {
                char msg[256];
                timeout_msg(msg, sizeof msg, q, op, rk);
                clique_break(q, WK_ERR_TIMEOUT, msg);
            }
        }
        if (q->broken != WK_OK)
            wk_comm_mark_failed(op->comm, q->broken, q->why);
        pthread_mutex_unlock(&q->mu);
        if (op->status != WK_OK && first == WK_OK) {
            first = op->status;
            first_i = i;
        }
    }
    if (first != WK_OK)
        return wk_err(first, "%s", ops[first_i].msg);
    return WK_OK;
}

static wk_status cpu_sync(wk_comm *c)
{
    cpu_rank *rk = c->impl;
    pthread_mutex_lock(&rk->q->mu);
    if (rk->q->broken != WK_OK)
        wk_comm_mark_failed(c, rk->q->broken, rk->q->why);
    pthread_mutex_unlock(&rk->q->mu);
    if (c->failed != WK_OK)
        return wk_err(c->failed, "wk_comm_synchronize: rank %d: %s", c->rank, c->failed_msg);
    return WK_OK;
}

static wk_status cpu_check_dtype(const wk_comm *c, wk_dtype dt, int red, const char *op)
{
    (void)c, (void)dt, (void)red, (void)op;
    return WK_OK; /* every dtype moves; reductions were checked by the front end */
}

static const char *cpu_describe(const wk_comm *c)
{
    (void)c;
    return "cpu (shared memory)";
}

const wk_comm_tp wk_comm_cpu_transport = {
    .name = "cpu", .init_rank = cpu_init_rank, .init_all = cpu_init_all, .run = cpu_run,
    .sync = cpu_sync, .check_dtype = cpu_check_dtype, .destroy = cpu_destroy,
    .describe = cpu_describe,
};
