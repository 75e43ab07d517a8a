/* comm_nccl.h: NCCL's (and RCCL's) public API as comm_nccl.c uses it, declared by value from
 * NCCL's documentation (enum values, the 128-byte unique id, the config struct as of 2.14, which
 * later versions accept by its size and version fields; no NCCL header is used), and the
 * library record that comm_nccl_lib.c fills when it opens the library. Internal to src/comm. */
#ifndef WK_COMM_NCCL_H
#define WK_COMM_NCCL_H

#include "comm_impl.h"
#include <pthread.h>
#include <stddef.h>

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
    nc_result (*CommSplit)(nc_comm, int, int, nc_comm *, nc_config *); /* 2.18+ */
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

/* The library for kind (CUDA: NCCL, ROCm: RCCL), opened at the first call (WICK_NCCL_LIB /
 * WICK_RCCL_LIB: a file, or a directory holding libnccl.so.2 / librccl.so.1; else the loader's
 * search path), its entry points looked up by name. WK_ERR_NO_DEVICE, naming the library and
 * why, when it cannot be opened or lacks an entry point; `op` names the caller in the message. */
wk_status wk_nccl_lib(nc_lib **out, wk_backend_kind kind, const char *op);

#endif
