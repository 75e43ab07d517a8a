/* comm_impl.h: the communicator room (src/comm), internal. Above src/core, src/cpu and src/gpu
 * (it reads a GPU device's stream through the driver interface); nothing below includes it.
 *   comm.c        the public front end: argument checks, groups, dispatch to a transport
 *   comm_cpu.c    the CPU transport: ranks of one process meet in shared memory
 *   comm_reduce.c the CPU reductions, one dtype table, rank order fixed
 *   comm_nccl.c   the NCCL / RCCL transport (modes: guarded, non-blocking, blocking)
 *   comm_nccl_lib.c, comm_nccl.h  NCCL / RCCL opened with dlopen, our own declarations
 *   comm_copy.c   wk_storage_copy_between */
#ifndef WK_COMM_IMPL_H
#define WK_COMM_IMPL_H

#include "backend.h"
#include "wick_comm.h"
#include "wk_core.h"
#include <stdbool.h>

typedef enum wk_coll_kind {
    WK_COLL_ALL_REDUCE,
    WK_COLL_ALL_GATHER,
    WK_COLL_REDUCE_SCATTER,
    WK_COLL_BROADCAST,
    WK_COLL_SEND,
    WK_COLL_RECV
} wk_coll_kind;
const char *wk_coll_name(wk_coll_kind k);

/* One checked collective (or one side of a send/recv), as queued by a group. Addresses are
 * byte addresses (host or device) of element 0 of the part used. */
typedef struct wk_comm_op {
    wk_coll_kind kind;
    wk_comm *comm;
    wk_dtype dt;
    wk_reduce_op red;
    int peer;           /* broadcast: root; send/recv: the other rank */
    const void *send;   /* NULL for recv, and for broadcast off the root */
    void *recv;         /* NULL for send */
    size_t count;       /* as the API counts it (all_gather: per rank; reduce_scatter: recv) */
    /* the CPU transport's completion record */
    bool done;
    wk_status status;
    char msg[256];
} wk_comm_op;

typedef struct wk_comm_tp wk_comm_tp;

struct wk_comm {
    const wk_comm_tp *tp;
    wk_device *dev;
    int rank, nranks;
    int64_t timeout_ms;
    wk_status failed;     /* sticky: the first failure of the communicator, or WK_OK */
    char failed_msg[256];
    void *impl;           /* the transport's state */
};

struct wk_comm_tp {
    const char *name;
    /* Fills c->impl for rank c->rank of c->nranks. Waits for all ranks up to c->timeout_ms. */
    wk_status (*init_rank)(wk_comm *c, const wk_comm_id *id);
    /* Fills comms[i]->impl for every i (ranks 0..n-1, devices set). All or nothing. */
    wk_status (*init_all)(wk_comm **comms, int n);
    /* Runs n ops of this transport as one group; sets each op's outcome; returns the first
     * failure (message set). */
    wk_status (*run)(wk_comm_op *ops, int n);
    wk_status (*sync)(wk_comm *c);
    /* WK_OK if the transport moves (reduce: and reduces) dtype dt on c; else the status. */
    wk_status (*check_dtype)(const wk_comm *c, wk_dtype dt, int red, const char *op); /* red: a wk_reduce_op, -1 none */
    /* Frees c->impl; abort: do not wait for peers or queued work. */
    void (*destroy)(wk_comm *c, bool abort);
    const char *(*describe)(const wk_comm *c);
};

extern const wk_comm_tp wk_comm_cpu_transport;  /* comm_cpu.c */
extern const wk_comm_tp wk_comm_nccl_transport; /* comm_nccl.c: CUDA (NCCL) and ROCm (RCCL) */

/* comm_cpu.c */
wk_status wk_comm_cpu_unique_id(wk_comm_id *out);
/* comm_nccl.c */
wk_status wk_comm_nccl_unique_id(wk_comm_id *out, wk_backend_kind kind);

/* comm_reduce.c: acc[i] = acc[i] op x[i] for i < n, computed and rounded as docs/semantics.md
 * says (reduced-precision floats: in f32, rounded to the dtype at each step; integers wrap). */
void wk_comm_reduce_into(void *acc, const void *x, size_t n, wk_dtype dt, wk_reduce_op op);
/* acc[i] = acc[i] / nranks (WK_REDUCE_AVG's last step). */
void wk_comm_avg_finish(void *acc, size_t n, wk_dtype dt, int nranks);
/* 1 if the CPU transport reduces dtype dt (every wick dtype but i16, as NCCL). */
bool wk_comm_reducible(wk_dtype dt);

/* comm.c: marks c failed with (s, message) if it has not failed yet. */
void wk_comm_mark_failed(wk_comm *c, wk_status s, const char *msg);
/* Monotonic milliseconds. */
int64_t wk_comm_now_ms(void);

#endif
