/* test_comm.c: communicators (include/wick_comm.h) against references computed here.
 *   test_comm                    CPU ranks in this process (CI): every collective x reduction x
 *                                dtype, 1..4 ranks, odd counts and offsets, in place, ranks on
 *                                their own threads (init_rank) and one thread driving all ranks
 *                                (init_all + group); bad input; failure injection (a rank that
 *                                never joins: WK_ERR_TIMEOUT within the timeout, no hang, no leak)
 *   test_comm --device cuda      the same on cuda:0..N-1 through NCCL (skips, saying why, with
 *                                fewer than 2 GPUs or no NCCL), plus the GPU failure injection
 *   test_comm --device simt      the CPU transport over simt:0 handles
 * References: integers exactly (wrapping), floats folded in rank order 0, 1, ... in the dtype
 * (docs/semantics.md), which the CPU must match bit for bit. On GPUs the data are small integers
 * held in every dtype, whose sums, products, minima and maxima are exact in any order, so NCCL
 * must match bit for bit too, except float averages (NCCL scales before it adds): within a
 * rounding of the dtype. */
#include "testlib.h"
#include "wick_comm.h"
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 4
enum { K_AR, K_AG, K_RS, K_BC, K_P2P, K_COUNT };
static const char *const kname[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                    "send/recv"};
static const char *const oname[] = {"sum", "prod", "min", "max", "avg"};

static wk_backend_kind g_kind = WK_BACKEND_CPU;
static bool g_gpu;           /* NCCL: small-integer data only, float avg within a rounding */
static int64_t g_timeout = 20000;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- element access */
static bool is_float(wk_dtype dt) { return wk_dtype_is_float(dt) != 0; }
static bool is_signed(wk_dtype dt)
{
    return dt == WK_DTYPE_I16 || dt == WK_DTYPE_I32 || dt == WK_DTYPE_I64;
}

static uint64_t geti(wk_dtype dt, const unsigned char *p, size_t i)
{
    switch (dt) {
    case WK_DTYPE_U8: return p[i];
    case WK_DTYPE_U32: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case WK_DTYPE_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); return (uint64_t)(int64_t)v; }
    case WK_DTYPE_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return (uint64_t)(int64_t)v; }
    case WK_DTYPE_I64: { uint64_t v; memcpy(&v, p + 8 * i, 8); return v; }
    default: return 0;
    }
}

static void seti(wk_dtype dt, unsigned char *p, size_t i, uint64_t v)
{
    size_t es = wk_dtype_size(dt);
    for (size_t b = 0; b < es; b++) /* little-endian truncation to the width */
        p[es * i + b] = (unsigned char)(v >> (8 * b));
}

static double getf(wk_dtype dt, const unsigned char *p, size_t i)
{
    switch (dt) {
    case WK_DTYPE_F32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case WK_DTYPE_F64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
    case WK_DTYPE_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return wk_f16_to_f32(v); }
    case WK_DTYPE_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return wk_bf16_to_f32(v); }
    case WK_DTYPE_F8E4M3: return wk_f8e4m3_to_f32(p[i]);
    default: return 0;
    }
}

/* Stores v rounded to the dtype (f64: as is; the others through f32, exact for f32 values). */
static void setf(wk_dtype dt, unsigned char *p, size_t i, double v)
{
    switch (dt) {
    case WK_DTYPE_F32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); break; }
    case WK_DTYPE_F64: memcpy(p + 8 * i, &v, 8); break;
    case WK_DTYPE_F16: { uint16_t h = wk_f32_to_f16((float)v); memcpy(p + 2 * i, &h, 2); break; }
    case WK_DTYPE_BF16: { uint16_t h = wk_f32_to_bf16((float)v); memcpy(p + 2 * i, &h, 2); break; }
    case WK_DTYPE_F8E4M3: p[i] = wk_f32_to_f8e4m3((float)v); break;
    default: break;
    }
}

/* acc[i] = acc[i] op x[j], the documented step: integers wrap; f64 in f64; the rest in f32 and
 * rounded to the dtype. */
static void ref_step(wk_dtype dt, wk_reduce_op op, unsigned char *acc, size_t i,
                     const unsigned char *x, size_t j)
{
    if (!is_float(dt)) {
        uint64_t a = geti(dt, acc, i), b = geti(dt, x, j), r = a;
        bool lt = is_signed(dt) ? (int64_t)b < (int64_t)a : b < a;
        switch (op) {
        case WK_REDUCE_SUM: case WK_REDUCE_AVG: r = a + b; break;
        case WK_REDUCE_PROD: r = a * b; break;
        case WK_REDUCE_MIN: r = lt ? b : a; break;
        case WK_REDUCE_MAX: r = (!lt && b != a) ? b : a; break;
        }
        seti(dt, acc, i, r);
        return;
    }
    double a = getf(dt, acc, i), b = getf(dt, x, j), r = a;
    switch (op) {
    case WK_REDUCE_SUM: case WK_REDUCE_AVG:
        r = dt == WK_DTYPE_F64 ? a + b : (double)((float)a + (float)b); break;
    case WK_REDUCE_PROD:
        r = dt == WK_DTYPE_F64 ? a * b : (double)((float)a * (float)b); break;
    case WK_REDUCE_MIN: r = b < a ? b : a; break;
    case WK_REDUCE_MAX: r = b > a ? b : a; break;
    }
    setf(dt, acc, i, r);
}

static void ref_avg(wk_dtype dt, unsigned char *acc, size_t i, int n)
{
    if (!is_float(dt)) {
        uint64_t s = geti(dt, acc, i);
        seti(dt, acc, i, is_signed(dt) ? (uint64_t)((int64_t)s / n) : s / (uint64_t)n);
    } else if (dt == WK_DTYPE_F64) {
        setf(dt, acc, i, getf(dt, acc, i) / n);
    } else {
        setf(dt, acc, i, (double)((float)getf(dt, acc, i) / (float)n));
    }
}

/* ---------------------------------------------------------------- data */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Element i of a buffer tagged (seed, who): small integers (|v| <= 2, or 0..3 unsigned) when
 * small, else full-width random integers / fractions in [-1, 1). */
static void fill(wk_dtype dt, unsigned char *p, size_t n, uint64_t seed, int who, bool small)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t h = mix(seed * 1315423911u + (uint64_t)who * 2654435761u + i);
        if (!is_float(dt))
            seti(dt, p, i, small ? (is_signed(dt) ? h % 5 - 2 : h % 4) : h);
        else
            setf(dt, p, i, small ? (double)((int)(h % 5) - 2)
                                 : (double)(int64_t)(h >> 40) / (double)(1 << 23) - 1.0);
    }
}

/* ---------------------------------------------------------------- one case */
typedef struct rank_io {
    wk_storage *send, *recv;   /* recv == send in place */
    unsigned char *init_s, *init_r, *out;
    size_t slen, rlen, soff, roff;
    wk_status st, st_sync;
    char msg[240]; /* the rank thread's last error (errors are per thread) */
} rank_io;

typedef struct kase {
    int kind;
    wk_dtype dt;
    wk_reduce_op op;
    size_t count, soff, roff;
    int root;
    bool inplace, small;
    uint64_t seed;
    int n;
    wk_comm **comms;
    wk_device **devs;
    rank_io io[MAXR];
} kase;

static size_t mult_s(const kase *k) { return k->kind == K_RS ? (size_t)k->n : 1; }
static size_t mult_r(const kase *k) { return k->kind == K_AG ? (size_t)k->n : 1; }

static void prepare(kase *k, int r)
{
    rank_io *io = &k->io[r];
    const size_t es = wk_dtype_size(k->dt), c = k->count;
    io->soff = k->soff;
    io->roff = k->roff;
    io->slen = k->soff + mult_s(k) * c + 5;
    io->rlen = k->roff + mult_r(k) * c + 5;
    if (k->inplace) {
        /* one storage: all_gather sends from its own slot, reduce_scatter receives in it */
        if (k->kind == K_AG)
            io->soff = k->roff + (size_t)r * c;
        if (k->kind == K_RS)
            io->roff = k->soff + (size_t)r * c;
        if (k->kind == K_AR || k->kind == K_BC)
            io->soff = io->roff = k->roff;
        io->slen = io->rlen = (io->slen > io->rlen ? io->slen : io->rlen) + k->roff + k->soff;
    }
    io->init_s = malloc(io->slen * es + 1);
    io->init_r = malloc(io->rlen * es + 1);
    io->out = malloc(io->rlen * es + 1);
    fill(k->dt, io->init_s, io->slen, k->seed, r, k->small);
    if (k->inplace)
        memcpy(io->init_r, io->init_s, io->rlen * es);
    else
        fill(k->dt, io->init_r, io->rlen, k->seed, 100 + r, k->small);
    io->send = testlib_upload(k->devs[r], k->dt, io->init_s, io->slen);
    io->recv = k->inplace ? io->send : testlib_upload(k->devs[r], k->dt, io->init_r, io->rlen);
}

static wk_status issue(kase *k, int r)
{
    rank_io *io = &k->io[r];
    wk_comm *c = k->comms[r];
    switch (k->kind) {
    case K_AR: return wk_comm_all_reduce(c, io->recv, io->roff, io->send, io->soff, k->count, k->op);
    case K_AG: return wk_comm_all_gather(c, io->recv, io->roff, io->send, io->soff, k->count);
    case K_RS: return wk_comm_reduce_scatter(c, io->recv, io->roff, io->send, io->soff, k->count, k->op);
    case K_BC:
        return wk_comm_broadcast(c, io->recv, io->roff, r == k->root ? io->send : NULL, io->soff,
                                 k->count, k->root);
    default: {
        wk_status s = wk_comm_send(c, io->send, io->soff, k->count, (r + 1) % k->n);
        wk_status s2 = wk_comm_recv(c, io->recv, io->roff, k->count, (r + k->n - 1) % k->n);
        return s != WK_OK ? s : s2;
    }
    }
}

typedef struct targ {
    kase *k;
    int r;
} targ;

static void *rank_thread(void *p)
{
    targ *t = p;
    kase *k = t->k;
    if (k->kind == K_P2P)
        wk_comm_group_start();
    k->io[t->r].st = issue(k, t->r);
    if (k->kind == K_P2P) {
        wk_status s = wk_comm_group_end();
        if (k->io[t->r].st == WK_OK)
            k->io[t->r].st = s;
    }
    k->io[t->r].st_sync = wk_comm_synchronize(k->comms[t->r]);
    if (k->io[t->r].st != WK_OK || k->io[t->r].st_sync != WK_OK)
        snprintf(k->io[t->r].msg, sizeof k->io[t->r].msg, "%s", wk_last_error());
    return NULL;
}

/* Runs k: threaded (one thread per rank) or grouped (this thread issues every rank in one
 * group). Then checks every rank's whole recv storage. Returns 0 if skipped as unsupported. */
static void expected(const kase *k, int r, unsigned char *e)
{
    const rank_io *io = &k->io[r];
    const size_t es = wk_dtype_size(k->dt), c = k->count;
    memcpy(e, io->init_r, io->rlen * es);
    switch (k->kind) {
    case K_AR:
    case K_RS: {
        const size_t base = k->kind == K_AR ? 0 : (size_t)r * c;
        for (size_t i = 0; i < c; i++) {
            memcpy(e + (io->roff + i) * es, k->io[0].init_s + (k->io[0].soff + base + i) * es, es);
            for (int q = 1; q < k->n; q++)
                ref_step(k->dt, k->op, e, io->roff + i, k->io[q].init_s, k->io[q].soff + base + i);
            if (k->op == WK_REDUCE_AVG)
                ref_avg(k->dt, e, io->roff + i, k->n);
        }
        break;
    }
    case K_AG:
        for (int q = 0; q < k->n; q++)
            memcpy(e + (io->roff + (size_t)q * c) * es, k->io[q].init_s + k->io[q].soff * es, c * es);
        break;
    case K_BC:
        memcpy(e + io->roff * es, k->io[k->root].init_s + k->io[k->root].soff * es, c * es);
        break;
    default: {
        const rank_io *from = &k->io[(r + k->n - 1) % k->n];
        memcpy(e + io->roff * es, from->init_s + from->soff * es, c * es);
    }
    }
}

static int g_skipped_f8;

static void run_case(kase *k, bool grouped, const char *mode)
{
    for (int r = 0; r < k->n; r++)
        prepare(k, r);
    if (grouped) {
        wk_comm_group_start();
        for (int r = 0; r < k->n; r++)
            k->io[r].st = issue(k, r);
        wk_status s = wk_comm_group_end();
        for (int r = 0; r < k->n; r++) {
            if (k->io[r].st == WK_OK)
                k->io[r].st = s;
            k->io[r].st_sync = wk_comm_synchronize(k->comms[r]);
        }
    } else {
        pthread_t th[MAXR];
        targ ta[MAXR];
        for (int r = 0; r < k->n; r++) {
            ta[r] = (targ){k, r};
            pthread_create(&th[r], NULL, rank_thread, &ta[r]);
        }
        for (int r = 0; r < k->n; r++)
            pthread_join(th[r], NULL);
    }
    const size_t es = wk_dtype_size(k->dt);
    char what[200];
    snprintf(what, sizeof what, "%s %s %s n=%d count=%zu soff=%zu roff=%zu%s%s (%s)",
             kname[k->kind], wk_dtype_name(k->dt),
             k->kind == K_AR || k->kind == K_RS ? oname[k->op] : "", k->n, k->count, k->soff,
             k->roff, k->inplace ? " in place" : "", k->small ? "" : " random", mode);
    bool unsupported = g_gpu && k->dt == WK_DTYPE_F8E4M3 && k->io[0].st == WK_ERR_NOT_SUPPORTED;
    if (unsupported)
        g_skipped_f8++;
    for (int r = 0; r < k->n && !unsupported; r++) {
        rank_io *io = &k->io[r];
        if (!TEST_CHECK(io->st == WK_OK && io->st_sync == WK_OK, "%s rank %d: %s / %s: %s", what,
                        r, wk_status_string(io->st), wk_status_string(io->st_sync),
                        grouped ? wk_last_error() : io->msg))
            continue;
        if (testlib_download(io->out, io->rlen, io->recv))
            continue;
        unsigned char *e = malloc(io->rlen * es + 1);
        expected(k, r, e);
        bool ok = memcmp(e, io->out, io->rlen * es) == 0;
        size_t bad = 0;
        if (!ok && g_gpu && k->op == WK_REDUCE_AVG && is_float(k->dt) &&
            (k->kind == K_AR || k->kind == K_RS)) {
            /* NCCL's float average: x * (1/n) summed; within 2 roundings of the dtype */
            const double eps = k->dt == WK_DTYPE_F64 ? 0x1p-52 : k->dt == WK_DTYPE_F32 ? 0x1p-23
                               : k->dt == WK_DTYPE_F16 ? 0x1p-10 : k->dt == WK_DTYPE_BF16 ? 0x1p-7
                                                                                        : 0x1p-3;
            ok = true;
            for (size_t i = 0; i < io->rlen; i++) {
                double a = getf(k->dt, io->out, i), b = getf(k->dt, e, i);
                if (fabs(a - b) > 4 * eps * fmax(fabs(b), 1.0)) {
                    ok = false;
                    bad = i;
                    break;
                }
            }
        } else if (!ok) {
            while (bad < io->rlen && !memcmp(e + bad * es, io->out + bad * es, es))
                bad++;
        }
        if (!ok) {
            double g = is_float(k->dt) ? getf(k->dt, io->out, bad) : (double)(int64_t)geti(k->dt, io->out, bad);
            double x = is_float(k->dt) ? getf(k->dt, e, bad) : (double)(int64_t)geti(k->dt, e, bad);
            TEST_CHECK(0, "%s rank %d: element %zu of recv: got %.9g, expected %.9g", what, r, bad,
                       g, x);
        } else {
            TEST_CHECK(1, "ok");
        }
        free(e);
    }
    for (int r = 0; r < k->n; r++) {
        rank_io *io = &k->io[r];
        if (io->recv != io->send)
            wk_storage_free(io->recv);
        wk_storage_free(io->send);
        free(io->init_s);
        free(io->init_r);
        free(io->out);
        memset(io, 0, sizeof *io);
    }
}

/* ---------------------------------------------------------------- communicators */
typedef struct init_arg {
    wk_device *dev;
    int n, r;
    const wk_comm_id *id;
    int64_t timeout;
    wk_comm *comm;
    wk_status st;
    double ms;
} init_arg;

static void *init_thread(void *p)
{
    init_arg *a = p;
    double t0 = now_ms();
    a->st = wk_comm_init_rank(&a->comm, a->dev, a->n, a->id, a->r, a->timeout);
    a->ms = now_ms() - t0;
    return NULL;
}

/* comms[0..n) over devs by n threads calling wk_comm_init_rank with one id. */
static bool init_threaded(wk_comm **comms, wk_device **devs, int n)
{
    wk_comm_id id;
    if (TEST_EQ_STATUS(wk_comm_unique_id(&id, g_kind), WK_OK) != 1)
        return false;
    pthread_t th[MAXR];
    init_arg a[MAXR];
    for (int r = 0; r < n; r++) {
        a[r] = (init_arg){.dev = devs[r], .n = n, .r = r, .id = &id, .timeout = g_timeout};
        pthread_create(&th[r], NULL, init_thread, &a[r]);
    }
    bool ok = true;
    for (int r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        comms[r] = a[r].comm;
        ok &= TEST_CHECK(a[r].st == WK_OK, "init_rank %d of %d: %s", r, n,
                         wk_status_string(a[r].st)) == 1;
    }
    return ok;
}

static void run_all_cases(wk_comm **comms, wk_device **devs, int n, bool grouped)
{
    static const size_t counts[] = {1, 7, 33, 130, 0, 1001};
    static const size_t offs[] = {0, 3, 1, 0, 5};
    const char *mode = grouped ? "init_all + group" : "threads + init_rank";
    int ci = 0;
    for (int kind = 0; kind < K_COUNT; kind++)
        for (int d = 0; d < WK_DTYPE_COUNT; d++) {
            const wk_dtype dt = (wk_dtype)d;
            const bool reduce = kind == K_AR || kind == K_RS;
            if (reduce && dt == WK_DTYPE_I16)
                continue; /* no NCCL type: refused (test_bad_input) */
            for (int op = 0; op < (reduce ? WK_REDUCE_OP_COUNT : 1); op++)
                for (int variant = 0; variant < (g_gpu || !reduce ? 1 : 2); variant++, ci++) {
                    kase k;
                    memset(&k, 0, sizeof k);
                    k.kind = kind;
                    k.dt = dt;
                    k.op = (wk_reduce_op)op;
                    k.count = counts[ci % 6];
                    k.soff = offs[ci % 5];
                    k.roff = offs[(ci + 2) % 5];
                    k.root = ci % n;
                    k.inplace = kind != K_P2P && ci % 3 == 0;
                    /* variant 1 (CPU): random full-width data, where the order of the fold shows */
                    k.small = variant == 0 ? (op == WK_REDUCE_PROD || is_float(dt) || ci % 2) : false;
                    if (variant == 1 && op == WK_REDUCE_PROD && !is_float(dt))
                        k.small = false; /* wrapping products */
                    k.seed = (uint64_t)ci * 7919u + (uint64_t)n;
                    k.n = n;
                    k.comms = comms;
                    k.devs = devs;
                    run_case(&k, grouped, mode);
                }
        }
    /* one large all_reduce, f32 sum of random fractions: the rank order shows in every bit */
    kase k;
    memset(&k, 0, sizeof k);
    k.kind = K_AR, k.dt = WK_DTYPE_F32, k.op = WK_REDUCE_SUM, k.count = 100003, k.soff = 1;
    k.roff = 2, k.small = g_gpu, k.seed = 77, k.n = n, k.comms = comms, k.devs = devs;
    run_case(&k, grouped, mode);
}

static void test_collectives(wk_device **devs, int maxn)
{
    for (int n = 1; n <= maxn; n++) {
        int before = testlib_failed();
        wk_comm *comms[MAXR] = {0};
        if (init_threaded(comms, devs, n)) {
            TEST_EQ_INT(wk_comm_size(comms[0]), n);
            TEST_EQ_INT(wk_comm_rank(comms[n - 1]), n - 1);
            run_all_cases(comms, devs, n, false);
        }
        for (int r = 0; r < n; r++)
            wk_comm_destroy(comms[r]);
        if (TEST_EQ_STATUS(wk_comm_init_all(comms, devs, n, g_timeout), WK_OK))
            run_all_cases(comms, devs, n, true);
        if (n == 1)
            printf("transport: %s\n", wk_comm_transport(comms[0]));
        for (int r = 0; r < n; r++)
            wk_comm_destroy(comms[r]);
        printf("collectives, %d rank(s): %s\n", n, testlib_failed() == before ? "ok" : "FAILED");
    }
    if (g_skipped_f8)
        printf("skip: %d f8e4m3 reduction cases: %s\n", g_skipped_f8,
               "refused as WK_ERR_NOT_SUPPORTED (avg on NCCL; any on NCCL < 2.24 and RCCL)");
}

/* ---------------------------------------------------------------- bad input */
static void test_bad_input(wk_device **devs, wk_device *other)
{
    wk_comm *c[2] = {0};
    wk_comm_id id;
    memset(&id, 0, sizeof id);
    TEST_EQ_STATUS(wk_comm_unique_id(NULL, g_kind), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_unique_id(&id, (wk_backend_kind)77), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_rank(&c[0], devs[0], 0, &id, 0, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_rank(&c[0], devs[0], 2, &id, 2, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_rank(&c[0], devs[0], 2, &id, -1, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_rank(&c[0], devs[0], 2, NULL, 0, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_rank(&c[0], NULL, 2, &id, 0, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_rank(&c[0], devs[0], 2, &id, 0, -5), WK_ERR_INVALID_ARGUMENT);
    if (!g_gpu) /* an id of zeros is not a CPU id */
        TEST_EQ_STATUS(wk_comm_init_rank(&c[0], devs[0], 2, &id, 0, 100), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_all(NULL, devs, 2, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_init_all(c, devs, 0, 0), WK_ERR_INVALID_ARGUMENT);
    wk_device *nodev[2] = {devs[0], NULL};
    TEST_EQ_STATUS(wk_comm_init_all(c, nodev, 2, 0), WK_ERR_INVALID_ARGUMENT);
    if (g_gpu) {
        wk_device *same[2] = {devs[0], devs[0]};
        TEST_EQ_STATUS(wk_comm_init_all(c, same, 2, 0), WK_ERR_INVALID_ARGUMENT);
    }
    TEST_EQ_STATUS(wk_comm_group_end(), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_set_timeout(NULL, 5), WK_ERR_INVALID_ARGUMENT);

    if (TEST_EQ_STATUS(wk_comm_init_all(c, devs, 2, g_timeout), WK_OK) != 1)
        return;
    TEST_EQ_STATUS(wk_comm_set_timeout(c[0], 0), WK_ERR_INVALID_ARGUMENT);
    float host[16] = {0};
    int16_t h16[16] = {0};
    wk_storage *f = testlib_upload(devs[0], WK_DTYPE_F32, host, 16);
    wk_storage *f1 = testlib_upload(devs[1], WK_DTYPE_F32, host, 16);
    wk_storage *i = testlib_upload(devs[0], WK_DTYPE_I32, host, 16);
    wk_storage *s16 = testlib_upload(devs[0], WK_DTYPE_I16, h16, 16);
    TEST_EQ_STATUS(wk_comm_all_reduce(NULL, f, 0, f, 0, 4, WK_REDUCE_SUM), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], NULL, 0, f, 0, 4, WK_REDUCE_SUM), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, NULL, 0, 4, WK_REDUCE_SUM), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, i, 0, 4, WK_REDUCE_SUM), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, f, 0, 4, (wk_reduce_op)9), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 13, f, 0, 4, WK_REDUCE_SUM), WK_ERR_LAYOUT);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, f, 17, 0, WK_REDUCE_SUM), WK_ERR_LAYOUT);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, f, 0, SIZE_MAX, WK_REDUCE_SUM), WK_ERR_LAYOUT);
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], s16, 0, s16, 0, 4, WK_REDUCE_SUM), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_comm_reduce_scatter(c[0], s16, 0, s16, 0, 4, WK_REDUCE_MAX), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_comm_all_gather(c[0], f, 0, f, 0, 9), WK_ERR_LAYOUT);     /* 2 x 9 > 16 */
    TEST_EQ_STATUS(wk_comm_reduce_scatter(c[0], f, 0, f, 0, 9, WK_REDUCE_SUM), WK_ERR_LAYOUT);
    TEST_EQ_STATUS(wk_comm_reduce_scatter(c[0], f, 0, f, 0, SIZE_MAX / 2 + 1, WK_REDUCE_SUM),
                   WK_ERR_OVERFLOW);
    TEST_EQ_STATUS(wk_comm_broadcast(c[0], f, 0, f, 0, 4, 2), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_broadcast(c[0], f, 0, NULL, 0, 4, 0), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_send(c[0], f, 0, 4, 5), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_recv(c[0], f, 0, 4, -1), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_comm_recv(c[0], f, 14, 4, 1), WK_ERR_LAYOUT);
    /* a storage of rank 1's device given to rank 0 (on the CPU every handle is one device) */
    if (g_gpu)
        TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f1, 0, f1, 0, 4, WK_REDUCE_SUM), WK_ERR_DEVICE_MISMATCH);
    if (other) {
        wk_storage *o = testlib_upload(other, WK_DTYPE_F32, host, 16);
        TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, o, 0, 4, WK_REDUCE_SUM), WK_ERR_DEVICE_MISMATCH);
        TEST_EQ_STATUS(wk_comm_all_gather(c[0], o, 0, f, 0, 4), WK_ERR_DEVICE_MISMATCH);
        wk_storage_free(o);
    } else {
        printf("skip: no second kind of device for the device-mismatch case\n");
    }
    /* an argument error inside a group: refused at once, reported again by group_end */
    wk_comm_group_start();
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, i, 0, 4, WK_REDUCE_SUM), WK_ERR_DTYPE);
    TEST_EQ_STATUS(wk_comm_group_end(), WK_ERR_DTYPE);

    if (!g_gpu) {
        /* ranks that disagree (only the CPU transport can see it; NCCL's behaviour is undefined) */
        wk_storage *f1b = testlib_upload(devs[1], WK_DTYPE_F32, host, 16);
        wk_storage *i1 = testlib_upload(devs[1], WK_DTYPE_I32, host, 16);
        wk_comm_group_start();
        TEST_EQ_STATUS(wk_comm_all_reduce(c[0], f, 0, f, 0, 4, WK_REDUCE_SUM), WK_OK);
        TEST_EQ_STATUS(wk_comm_all_reduce(c[1], f1b, 0, f1b, 0, 5, WK_REDUCE_SUM), WK_OK);
        TEST_EQ_STATUS(wk_comm_group_end(), WK_ERR_SHAPE);
        TEST_CHECK(strstr(wk_last_error(), "count") != NULL, "message names the count: %s",
                   wk_last_error());
        wk_comm_group_start();
        wk_comm_all_reduce(c[0], f, 0, f, 0, 4, WK_REDUCE_SUM);
        wk_comm_all_reduce(c[1], i1, 0, i1, 0, 4, WK_REDUCE_SUM);
        TEST_EQ_STATUS(wk_comm_group_end(), WK_ERR_DTYPE);
        wk_comm_group_start();
        wk_comm_all_reduce(c[0], f, 0, f, 0, 4, WK_REDUCE_SUM);
        wk_comm_all_reduce(c[1], f1b, 0, f1b, 0, 4, WK_REDUCE_MAX);
        TEST_EQ_STATUS(wk_comm_group_end(), WK_ERR_INVALID_ARGUMENT);
        wk_comm_group_start();
        wk_comm_send(c[0], f, 0, 3, 1);
        wk_comm_recv(c[1], f1b, 0, 4, 0);
        TEST_EQ_STATUS(wk_comm_group_end(), WK_ERR_SHAPE);
        /* the communicator still works after such a refusal */
        wk_comm_group_start();
        wk_comm_all_reduce(c[0], f, 0, f, 0, 4, WK_REDUCE_SUM);
        wk_comm_all_reduce(c[1], f1b, 0, f1b, 0, 4, WK_REDUCE_SUM);
        TEST_EQ_STATUS(wk_comm_group_end(), WK_OK);
        wk_storage_free(f1b);
        wk_storage_free(i1);
    }
    wk_storage_free(f);
    wk_storage_free(f1);
    wk_storage_free(i);
    wk_storage_free(s16);
    wk_comm_destroy(c[0]);
    wk_comm_destroy(c[1]);
    wk_comm_destroy(NULL);
    wk_comm_abort(NULL);
}

/* ---------------------------------------------------------------- copies between devices */
static void test_copy_between(wk_device **devs, int ndev, wk_device *other)
{
    float a[40], b[40], z[40] = {0};
    for (int k = 0; k < 40; k++)
        a[k] = (float)k * 0.5f + 1.0f;
    wk_device *pairs[4][2] = {{devs[0], devs[ndev > 1 ? 1 : 0]}, {devs[0], other},
                              {other, devs[0]}, {devs[0], devs[0]}};
    for (int p = 0; p < 4; p++) {
        if (!pairs[p][0] || !pairs[p][1])
            continue;
        wk_storage *src = testlib_upload(pairs[p][0], WK_DTYPE_F32, a, 40);
        wk_storage *dst = testlib_upload(pairs[p][1], WK_DTYPE_F32, z, 40);
        TEST_EQ_STATUS(wk_storage_copy_between(dst, 5, src, 3, 30), WK_OK);
        if (!testlib_download(b, 40, dst))
            for (int k = 0; k < 40; k++)
                TEST_CHECK(b[k] == (k >= 5 && k < 35 ? a[k - 2] : 0.0f),
                           "copy_between %s -> %s: element %d = %g", wk_device_name(pairs[p][0]),
                           wk_device_name(pairs[p][1]), k, b[k]);
        TEST_EQ_STATUS(wk_storage_copy_between(dst, 11, src, 0, 30), WK_ERR_LAYOUT);
        TEST_EQ_STATUS(wk_storage_copy_between(dst, 0, src, 11, 30), WK_ERR_LAYOUT);
        TEST_EQ_STATUS(wk_storage_copy_between(NULL, 0, src, 0, 3), WK_ERR_INVALID_ARGUMENT);
        TEST_EQ_STATUS(wk_storage_copy_between(dst, 0, src, 0, 0), WK_OK);
        wk_storage *i = testlib_upload(pairs[p][1], WK_DTYPE_I32, z, 40);
        TEST_EQ_STATUS(wk_storage_copy_between(i, 0, src, 0, 3), WK_ERR_DTYPE);
        wk_storage_free(i);
        wk_storage_free(src);
        wk_storage_free(dst);
    }
}

/* ---------------------------------------------------------------- failure injection */
typedef struct coll_arg {
    wk_comm *c;
    wk_storage *s;
    wk_status st, st2;
    double ms;
} coll_arg;

static void *coll_thread(void *p)
{
    coll_arg *a = p;
    double t0 = now_ms();
    a->st = wk_comm_all_reduce(a->c, a->s, 0, a->s, 0, 8, WK_REDUCE_SUM);
    a->st2 = wk_comm_synchronize(a->c);
    a->ms = now_ms() - t0;
    return NULL;
}

/* CPU: a rank that never joins the init, then one that never joins a collective. */
static void test_failures_cpu(wk_device **devs)
{
    const int64_t to = 200;
    /* 1. init: 3 ranks expected, 2 come */
    wk_comm_id id;
    TEST_EQ_STATUS(wk_comm_unique_id(&id, g_kind), WK_OK);
    pthread_t th[3];
    init_arg a[3];
    for (int r = 0; r < 2; r++) {
        a[r] = (init_arg){.dev = devs[r], .n = 3, .r = r, .id = &id, .timeout = to};
        pthread_create(&th[r], NULL, init_thread, &a[r]);
    }
    for (int r = 0; r < 2; r++) {
        pthread_join(th[r], NULL);
        TEST_EQ_STATUS(a[r].st, WK_ERR_TIMEOUT);
        TEST_CHECK(a[r].comm == NULL, "no communicator after a failed init");
        TEST_CHECK(a[r].ms >= to * 0.9 && a[r].ms < to + 2000, "init gave up after %.0f ms (timeout %lld)",
                   a[r].ms, (long long)to);
    }
    printf("failure: init with a rank missing: WK_ERR_TIMEOUT after %.0f ms\n", a[0].ms);
    /* the same rank twice */
    a[0] = (init_arg){.dev = devs[0], .n = 2, .r = 0, .id = &id, .timeout = to};
    pthread_create(&th[0], NULL, init_thread, &a[0]);
    struct timespec pause = {0, 50 * 1000000L};
    nanosleep(&pause, NULL);
    wk_comm *dup = NULL;
    TEST_EQ_STATUS(wk_comm_init_rank(&dup, devs[0], 2, &id, 0, to), WK_ERR_INVALID_ARGUMENT);
    pthread_join(th[0], NULL);
    TEST_EQ_STATUS(a[0].st, WK_ERR_TIMEOUT);

    /* 2. a collective that rank 2 never joins */
    wk_comm *c[3];
    wk_device *d3[3] = {devs[0], devs[1], devs[2]};
    if (TEST_EQ_STATUS(wk_comm_init_all(c, d3, 3, to), WK_OK) != 1)
        return;
    TEST_EQ_INT(wk_comm_timeout(c[0]), to);
    float host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    coll_arg ca[3];
    for (int r = 0; r < 2; r++) {
        ca[r] = (coll_arg){.c = c[r], .s = testlib_upload(devs[r], WK_DTYPE_F32, host, 8)};
        pthread_create(&th[r], NULL, coll_thread, &ca[r]);
    }
    for (int r = 0; r < 2; r++) {
        pthread_join(th[r], NULL);
        TEST_EQ_STATUS(ca[r].st, WK_ERR_TIMEOUT);
        TEST_EQ_STATUS(ca[r].st2, WK_ERR_TIMEOUT);
        TEST_CHECK(ca[r].ms < to + 2000, "the collective gave up after %.0f ms", ca[r].ms);
    }
    /* the inputs are untouched, and the communicator stays failed (at once, no waiting) */
    float back[8];
    if (!testlib_download(back, 8, ca[0].s))
        TEST_CHECK(memcmp(back, host, sizeof host) == 0, "a timed-out all_reduce wrote nothing");
    double t0 = now_ms();
    TEST_EQ_STATUS(wk_comm_all_reduce(c[0], ca[0].s, 0, ca[0].s, 0, 8, WK_REDUCE_SUM), WK_ERR_TIMEOUT);
    TEST_EQ_STATUS(wk_comm_synchronize(c[1]), WK_ERR_TIMEOUT);
    ca[2] = (coll_arg){.c = c[2], .s = testlib_upload(devs[2], WK_DTYPE_F32, host, 8)};
    coll_thread(&ca[2]); /* the late rank finds the communicator aborted */
    TEST_EQ_STATUS(ca[2].st, WK_ERR_TIMEOUT);
    TEST_CHECK(now_ms() - t0 < 100, "calls on an aborted communicator return at once");
    printf("failure: all_reduce with a rank missing: WK_ERR_TIMEOUT after %.0f ms: %s\n", ca[0].ms,
           wk_last_error());
    for (int r = 0; r < 3; r++) {
        wk_storage_free(ca[r].s);
        wk_comm_destroy(c[r]);
    }
    /* 3. a send nobody receives (one rank of two, no group) */
    if (TEST_EQ_STATUS(wk_comm_init_all(c, d3, 2, to), WK_OK) != 1)
        return;
    wk_storage *s = testlib_upload(devs[0], WK_DTYPE_F32, host, 8);
    t0 = now_ms();
    TEST_EQ_STATUS(wk_comm_send(c[0], s, 0, 8, 1), WK_ERR_TIMEOUT);
    TEST_CHECK(now_ms() - t0 < to + 2000, "send gave up in time");
    wk_storage_free(s);
    wk_comm_destroy(c[0]);
    wk_comm_destroy(c[1]);
}

/* GPU: NCCL init with a rank missing, then a collective with a rank missing, then a send that
 * is never received. */
static void test_failures_gpu(wk_device **devs)
{
    const int64_t to = 3000;
    wk_comm_id id;
    if (TEST_EQ_STATUS(wk_comm_unique_id(&id, g_kind), WK_OK) != 1)
        return;
    init_arg a = {.dev = devs[0], .n = 2, .r = 0, .id = &id, .timeout = to};
    init_thread(&a);
    TEST_EQ_STATUS(a.st, WK_ERR_TIMEOUT);
    TEST_CHECK(a.ms < to + 5000, "NCCL init gave up after %.0f ms", a.ms);
    printf("failure (gpu): init with a rank missing: %s after %.0f ms\n", wk_status_string(a.st), a.ms);
    wk_comm *c[2];
    if (TEST_EQ_STATUS(wk_comm_init_all(c, devs, 2, to), WK_OK) != 1)
        return;
    float host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    wk_storage *s = testlib_upload(devs[0], WK_DTYPE_F32, host, 8);
    double t0 = now_ms();
    wk_status st = wk_comm_all_reduce(c[0], s, 0, s, 0, 8, WK_REDUCE_SUM);
    if (st == WK_OK)
        st = wk_comm_synchronize(c[0]);
    double ms = now_ms() - t0;
    TEST_EQ_STATUS(st, WK_ERR_TIMEOUT);
    TEST_CHECK(ms < to + 5000, "the NCCL all_reduce gave up after %.0f ms", ms);
    printf("failure (gpu): all_reduce with a rank missing: %s after %.0f ms: %s\n",
           wk_status_string(st), ms, wk_last_error());
    TEST_EQ_STATUS(wk_comm_synchronize(c[0]), WK_ERR_TIMEOUT); /* sticky */
    wk_comm_abort(c[1]);
    wk_comm_destroy(c[0]); /* aborted already: frees */
    /* a send whose receiver never posts it (the first send/recv of the communicators, so NCCL
     * connects the pair at this call) */
    if (TEST_EQ_STATUS(wk_comm_init_all(c, devs, 2, to), WK_OK) == 1) {
        t0 = now_ms();
        st = wk_comm_send(c[0], s, 0, 8, 1);
        if (st == WK_OK)
            st = wk_comm_synchronize(c[0]);
        ms = now_ms() - t0;
        TEST_EQ_STATUS(st, WK_ERR_TIMEOUT);
        TEST_CHECK(ms < to + 5000, "the NCCL send gave up after %.0f ms", ms);
        printf("failure (gpu): send never received: %s after %.0f ms: %s\n", wk_status_string(st),
               ms, wk_last_error());
        wk_comm_abort(c[1]);
        wk_comm_destroy(c[0]);
    }
    wk_storage_free(s);
}

static void test_simt_ranks(void)
{
    int n = 0;
    wk_backend_device_count(&n, NULL, WK_BACKEND_SIMT);
    if (n < 1) {
        printf("skip: simt device not built\n");
        return;
    }
    wk_device *d[2] = {0};
    wk_device_open(&d[0], "simt:0");
    wk_device_open(&d[1], "simt:0");
    wk_comm *c[2];
    if (TEST_EQ_STATUS(wk_comm_init_all(c, d, 2, g_timeout), WK_OK) == 1) {
        float x0[5] = {1, 2, 3, 4, 5}, x1[5] = {10, 20, 30, 40, 50}, y[5];
        wk_storage *s0 = testlib_upload(d[0], WK_DTYPE_F32, x0, 5);
        wk_storage *s1 = testlib_upload(d[1], WK_DTYPE_F32, x1, 5);
        wk_comm_group_start();
        wk_comm_all_reduce(c[0], s0, 0, s0, 0, 5, WK_REDUCE_MAX);
        wk_comm_all_reduce(c[1], s1, 0, s1, 0, 5, WK_REDUCE_MAX);
        TEST_EQ_STATUS(wk_comm_group_end(), WK_OK);
        if (!testlib_download(y, 5, s0))
            for (int k = 0; k < 5; k++)
                TEST_CHECK(y[k] == x1[k], "simt all_reduce max [%d] = %g", k, y[k]);
        wk_storage_free(s0);
        wk_storage_free(s1);
        wk_comm_destroy(c[0]);
        wk_comm_destroy(c[1]);
    }
    wk_device_close(d[0]);
    wk_device_close(d[1]);
}

int main(int argc, char **argv)
{
    const char *which = "cpu";
    for (int k = 1; k < argc; k++)
        if (!strcmp(argv[k], "--device") && k + 1 < argc)
            which = argv[++k];
    int ndev = MAXR;
    const char *spec = "cpu";
    if (!strcmp(which, "cuda") || !strcmp(which, "rocm")) {
        g_kind = !strcmp(which, "cuda") ? WK_BACKEND_CUDA : WK_BACKEND_ROCM;
        g_gpu = true;
        const char *why = "";
        wk_backend_device_count(&ndev, &why, g_kind);
        if (ndev < 2) {
            printf("skip: test_comm --device %s needs 2 GPUs, found %d%s%s\n", which, ndev,
                   *why ? ": " : "", why);
            return 0;
        }
        wk_comm_id id;
        if (wk_comm_unique_id(&id, g_kind) == WK_ERR_NO_DEVICE) {
            printf("skip: %s\n", wk_last_error());
            return 0;
        }
        ndev = ndev > MAXR ? MAXR : ndev;
    } else if (!strcmp(which, "simt")) {
        g_kind = WK_BACKEND_SIMT;
        spec = "simt:0";
    } else if (strcmp(which, "cpu")) {
        printf("usage: test_comm [--device cpu|cuda|rocm|simt]\n");
        return 2;
    }
    wk_device *devs[MAXR] = {0};
    for (int r = 0; r < ndev; r++) {
        char name[32];
        snprintf(name, sizeof name, g_gpu ? "%s:%d" : "%s", g_gpu ? which : spec, r);
        if (TEST_EQ_STATUS(wk_device_open(&devs[r], name), WK_OK) != 1)
            return testlib_summary();
    }
    printf("test_comm on %d x %s\n", ndev, wk_device_name(devs[0]));
    wk_device *other = NULL; /* a device of another kind, for the mismatch and copy cases */
    int nsimt = 0;
    wk_backend_device_count(&nsimt, NULL, WK_BACKEND_SIMT);
    wk_device_open(&other, g_kind == WK_BACKEND_CPU ? (nsimt ? "simt:0" : "") : "cpu");

    double t0 = now_ms();
    test_collectives(devs, ndev);
    test_bad_input(devs, other);
    test_copy_between(devs, ndev, other);
    if (g_kind == WK_BACKEND_CPU)
        test_simt_ranks();
    if (g_gpu)
        test_failures_gpu(devs);
    else
        test_failures_cpu(devs);
    printf("test_comm: %.1f s\n", (now_ms() - t0) / 1e3);
    wk_device_close(other);
    for (int r = 0; r < ndev; r++)
        wk_device_close(devs[r]);
    return testlib_summary();
}
