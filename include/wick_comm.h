/* wick_comm.h: collectives between devices (several GPUs of one host or of many hosts, or several
 * CPU "ranks" in one process), over NCCL on NVIDIA, RCCL on AMD and wick's own shared-memory
 * transport on the CPU (and the simt device). The rules (ranks, ordering, reduction order,
 * dtypes, timeouts, what fails how) are in docs/semantics.md, "Communicators".
 *
 *   wk_comm_id id;  wk_comm_unique_id(&id, WK_BACKEND_CUDA);   // rank 0, then share the bytes
 *   wk_comm *c;     wk_comm_init_rank(&c, dev, nranks, &id, rank, 0);
 *   wk_comm_all_reduce(c, x, 0, x, 0, n, WK_REDUCE_SUM);      // in place, on dev's stream
 *   wk_comm_synchronize(c);                                   // waits, with the timeout
 *   wk_comm_destroy(c);
 *
 * NCCL (libnccl.so.2) and RCCL (librccl.so.1) are opened with dlopen at first use; WICK_NCCL_LIB /
 * WICK_RCCL_LIB name another file (or a directory holding it). Nothing here links them. */
#ifndef WICK_COMM_H
#define WICK_COMM_H

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The rendezvous token of one communicator: made once (by rank 0) and handed to every rank
 * (through whatever channel the program has: MPI, a file, a socket; within one process, memory).
 * 128 bytes, as NCCL's ncclUniqueId. A CPU id is valid only within the process that made it. */
#define WK_COMM_ID_BYTES 128
typedef struct wk_comm_id {
    unsigned char bytes[WK_COMM_ID_BYTES];
} wk_comm_id;

typedef struct wk_comm wk_comm;

/* Reductions. Explicit values, append-only. */
typedef enum wk_reduce_op {
    WK_REDUCE_SUM = 0,
    WK_REDUCE_PROD = 1,
    WK_REDUCE_MIN = 2,
    WK_REDUCE_MAX = 3,
    WK_REDUCE_AVG = 4 /* the sum divided by the number of ranks (docs/semantics.md) */
} wk_reduce_op;
#define WK_REDUCE_OP_COUNT 5

/* Timeouts in milliseconds. 0 passed to an init function means the default: the environment
 * variable WICK_COMM_TIMEOUT_MS when set (read at each init), else WK_COMM_DEFAULT_TIMEOUT_MS. */
#define WK_COMM_DEFAULT_TIMEOUT_MS 300000

/* out: a fresh id for communicators of backend kind (CUDA: ncclGetUniqueId; ROCM: RCCL's; CPU and
 * SIMT: a process-local token). WK_ERR_NO_DEVICE naming the library when NCCL/RCCL is missing. */
WK_API wk_status wk_comm_unique_id(wk_comm_id *out, wk_backend_kind kind);

/* out: rank `rank` (0 <= rank < nranks) of the communicator named by id, on dev. Every rank
 * calls it (each on its own thread or process) with the same id and nranks; the call returns
 * when all nranks have joined, or fails with WK_ERR_TIMEOUT after timeout_ms (0: the default).
 * The communicator holds a reference on dev. */
WK_API wk_status wk_comm_init_rank(wk_comm **out, wk_device *dev, int nranks, const wk_comm_id *id,
                                   int rank, int64_t timeout_ms);
/* comms[i]: rank i of one communicator over devs[i], i < n, made by one thread (NCCL: a group
 * of ncclCommInitRankConfig). n >= 1; the devices of one backend. On failure nothing is made. */
WK_API wk_status wk_comm_init_all(wk_comm **comms, wk_device *const *devs, int n,
                                  int64_t timeout_ms);
/* Frees the communicator (NCCL: ncclCommFinalize + ncclCommDestroy, or ncclCommAbort once the
 * communicator has failed or when finalising times out). Waits for its queued work first.
 * NULL is a no-op. */
WK_API void wk_comm_destroy(wk_comm *c);
/* Frees it without waiting for peers or queued work (NCCL: ncclCommAbort). NULL is a no-op. */
WK_API void wk_comm_abort(wk_comm *c);

/* The time a call may wait for peers (ms > 0) on this communicator from now on. */
WK_API wk_status wk_comm_set_timeout(wk_comm *c, int64_t ms);
WK_API int64_t wk_comm_timeout(const wk_comm *c);
WK_API int wk_comm_rank(const wk_comm *c);   /* -1 for NULL */
WK_API int wk_comm_size(const wk_comm *c);   /* -1 for NULL */
WK_API wk_device *wk_comm_device(const wk_comm *c);
/* "nccl 2.27.3", "rccl 2.20.5", "cpu": the transport under c. Never NULL. */
WK_API const char *wk_comm_transport(const wk_comm *c);

/* ---- collectives. Every rank calls the same collectives in the same order with the same
 * count (and dtype, op, root). Arguments are (storage, element offset); count elements of the
 * storage's dtype are used from the offset on, so a part of a storage can take part. The send
 * and receive storages have the same dtype and sit on the communicator's device. In place:
 * send and recv may be the same storage at the same offset (all_gather: send at recv offset +
 * rank * count; reduce_scatter: recv at send offset + rank * count).
 * On a GPU the collective is queued on the device's stream after the ops queued before it, and
 * later ops see its result; errors of the transfer itself surface at wk_comm_synchronize. On the
 * CPU it has completed when the call returns. */

/* recv[roff .. +count) = op over ranks of send[soff .. +count). */
WK_API wk_status wk_comm_all_reduce(wk_comm *c, wk_storage *recv, size_t roff,
                                    const wk_storage *send, size_t soff, size_t count,
                                    wk_reduce_op op);
/* recv[roff + r*count .. +count) = send[soff .. +count) of rank r, for every rank r. */
WK_API wk_status wk_comm_all_gather(wk_comm *c, wk_storage *recv, size_t roff,
                                    const wk_storage *send, size_t soff, size_t count);
/* recv[roff .. +count) on rank r = op over ranks of send[soff + r*count .. +count). */
WK_API wk_status wk_comm_reduce_scatter(wk_comm *c, wk_storage *recv, size_t roff,
                                        const wk_storage *send, size_t soff, size_t count,
                                        wk_reduce_op op);
/* recv[roff .. +count) = send[soff .. +count) of rank root. send is read on the root only (it
 * may be NULL on the other ranks). */
WK_API wk_status wk_comm_broadcast(wk_comm *c, wk_storage *recv, size_t roff,
                                   const wk_storage *send, size_t soff, size_t count, int root);
/* Point to point: the k-th send from rank a to rank b pairs with the k-th recv of b from a; both
 * have the same count and dtype. A rank that sends and receives at once (a ring exchange) puts
 * both in one group (wk_comm_group_start/end), else it may wait for itself until the timeout. */
WK_API wk_status wk_comm_send(wk_comm *c, const wk_storage *send, size_t off, size_t count,
                              int peer);
WK_API wk_status wk_comm_recv(wk_comm *c, wk_storage *recv, size_t off, size_t count, int peer);

/* Groups (per thread, nestable): between start and the matching end, collectives and sends /
 * receives are checked and queued, not run; the outermost end runs them together (NCCL:
 * ncclGroupStart/End). One thread can thus drive every rank of an init_all communicator, or
 * post a send and a receive at once. An argument error is returned by the call that queues;
 * the first failure of the run by group_end. */
WK_API wk_status wk_comm_group_start(void);
WK_API wk_status wk_comm_group_end(void);

/* Waits until every collective queued on c has finished: WK_OK, or the communicator's failure
 * (WK_ERR_TIMEOUT when a peer did not take part within the timeout; the communicator is then
 * aborted and every later call on it returns that status). */
WK_API wk_status wk_comm_synchronize(wk_comm *c);

/* ---- copies between devices of one host */
/* dst[doff .. +count) = src[soff .. +count): same dtype, any two devices (CPU, CUDA, ROCm,
 * simt). Between two CUDA devices a peer copy (direct where the devices can access each other,
 * cuMemcpyPeerAsync); otherwise through host memory. Returns when the copy is done (it waits
 * for the work queued on src's device first). */
WK_API wk_status wk_storage_copy_between(wk_storage *dst, size_t doff, const wk_storage *src,
                                         size_t soff, size_t count);

#ifdef __cplusplus
}
#endif
#endif /* WICK_COMM_H */
