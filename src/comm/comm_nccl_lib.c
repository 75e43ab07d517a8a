/* comm_nccl_lib.c: opens NCCL (CUDA) or RCCL (ROCm) with dlopen at first use and looks up
 * the entry points comm_nccl.c calls (comm_nccl.h). */
#include "comm_nccl.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
        S(CommSplit, "ncclCommSplit", 1),
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

wk_status wk_nccl_lib(nc_lib **out, wk_backend_kind kind, const char *op)
{
    nc_lib *L = lib_for(kind);
    if (!L->ok)
        return wk_err(WK_ERR_NO_DEVICE, "%s: %s", op, L->reason);
    *out = L;
    return WK_OK;
}
