/* comm_oneshot.h: the one-shot all-reduce of small messages (kernels/comm.cu, whose header
 * describes the protocol) for the ranks of one communicator that live in this process, on GPUs
 * that read each other's memory. comm_nccl.c takes it for the all_reduce calls it accepts
 * (wk_oneshot_takes) and NCCL for the rest; tests/test_comm_oneshot.c drives it directly on the
 * simt device. Internal to src/comm. */
#ifndef WK_COMM_ONESHOT_H
#define WK_COMM_ONESHOT_H

#include "comm_impl.h"

#define WK_ONESHOT_MAX_RANKS 8
#define WK_ONESHOT_BLOCKS 16 /* blocks of every call (kernels/comm.cu: each counts the calls) */
/* The largest message taken (bytes): each rank's two slots hold one message each. */
#define WK_ONESHOT_MAX_BYTES ((size_t)256 << 10)

struct wk_oneshot_group; /* the ranks made together (comm_oneshot.c) */

typedef struct wk_oneshot {
    struct wk_oneshot_group *grp;
    wk_device *dev;
    int rank, nranks;
    void *area;          /* this rank's area (kernels/comm.cu), on dev */
    void *tab;           /* on dev: the nranks areas' addresses (u64) */
    size_t slot_bytes;
    int64_t head;        /* byte offset of slot 0 in an area */
    int64_t err_off;     /* byte offset of the error record in an area */
} wk_oneshot;

/* Phases of wk_oneshot_all_reduce: put this rank's input and flags, reduce (wait for the
 * peers', then fold), or both in one launch. */
enum { WK_ONESHOT_PUT = 1, WK_ONESHOT_REDUCE = 2, WK_ONESHOT_BOTH = 3 };

/* os[i] for rank i of n on devs[i] (GPU devices of one driver, all in this process): areas
 * allocated and zeroed, every device given access to every other's memory, the address tables
 * written. All or nothing: on failure (WK_ERR_NOT_SUPPORTED where two devices cannot reach each
 * other) nothing is left. 2 <= n <= WK_ONESHOT_MAX_RANKS; devs may repeat a device (simt). */
wk_status wk_oneshot_setup(wk_oneshot **os, wk_device *const *devs, int n);
/* Waits up to timeout_ms for the devices of o and of the ranks of its setup not freed yet (a
 * peer may still read o's area), then frees o; where one of them has not finished by then (a
 * kernel of another transport that a lost peer hangs), o's device memory is left allocated
 * rather than freed under it. NULL is a no-op. */
void wk_oneshot_free(wk_oneshot *o, int64_t timeout_ms);
/* 1 when the one-shot reduces count elements of dt with op: a float dtype (f32, f16, bf16,
 * f64, f8e4m3), any reduction, at most WK_ONESHOT_MAX_BYTES. */
bool wk_oneshot_takes(wk_dtype dt, wk_reduce_op op, size_t count);
/* Queues phase (WK_ONESHOT_*) of recv[0 .. count) = op over ranks of send[0 .. count) on o's
 * device (byte addresses of element 0; in place allowed). A wait for a peer longer than
 * timeout_ms ends the kernel and is recorded for wk_oneshot_status. */
wk_status wk_oneshot_all_reduce(wk_oneshot *o, void *recv, const void *send, size_t count,
                                wk_dtype dt, wk_reduce_op op, int64_t timeout_ms, int phase);
/* After o's device has finished the queued calls: WK_OK, or WK_ERR_TIMEOUT naming the rank a
 * call waited for in vain (the record stays: the communicator is failed from then on). */
wk_status wk_oneshot_status(wk_oneshot *o, int64_t timeout_ms);

#endif
