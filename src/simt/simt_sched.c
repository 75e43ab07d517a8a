/* simt_sched.c: launches of the simt device. Every block of the grid runs in turn on the calling
 * thread; its threads are fibers (lanes) with stacks of their own, scheduled cooperatively:
 * a lane runs until it reaches a synchronisation point (__syncthreads, a warp operation) or
 * ends, then the scheduler picks the next. Between synchronisation points the lanes run in an
 * order shuffled by the launch's seed, so code that silently relies on lockstep execution sees
 * its assumption broken.
 *
 * A warp operation completes when every lane of the warp present in the block has reached one
 * of its kind; a barrier, when every thread of the block has. (Call sites are not compared: the
 * compiler may duplicate one source-level barrier into several.) The hazards:
 *   - a lane at a warp operation while another lane of its warp has exited, waits at a
 *     barrier or is at another warp operation;
 *   - a thread at __syncthreads while another has exited or waits at another __syncthreads;
 * end the launch with WK_ERR_DEVICE and a message naming kernel, block and threads (never a
 * hang). Out-of-bounds accesses and shared-memory races are found by simt_mem.c and reported
 * through wk_simt_hazard too. */
#include "simt_rt.h"
#include "wk_core.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define WK_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WK_SIMT_ASAN 1
#endif
#endif
#if defined(WK_SIMT_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define STACK_BYTES ((size_t)512 << 10) /* per lane; reserved, committed as touched */
#define TOP_BYTES ((size_t)16 << 10)    /* the top of it, where the scheduler's frames lie */
#define MAX_THREADS 1024

enum { L_RUN, L_BAR, L_WARP, L_DONE };
enum { OP_SHFL_DOWN = 1, OP_BALLOT = 2, OP_SHFL_XOR = 3, OP_SHFL_IDX = 4 };

typedef struct lane {
    wk_simt_lane pub; /* first: wk_simt_self points here */
    int id;           /* linear thread id in the block */
    int state;
    int op;           /* the warp operation or barrier it waits at */
    const void *site; /* its call site */
    uint64_t val, res;
    int delta;
    char *stack;      /* STACK_BYTES, a guard page at the bottom */
#if defined(__x86_64__)
    void *sp;
#else
    ucontext_t uc;
#endif
#if defined(WK_SIMT_ASAN)
    void *fake;
#endif
} lane;

/* ---- the state of the running launch (launches are serialised by simt.c) */
wk_simt_lane *wk_simt_self;
wk_simt_uint3 wk_simt_block_idx, wk_simt_block_dim, wk_simt_grid_dim;
int wk_simt_warp_size = 32;

static lane *lanes[MAX_THREADS]; /* created on first need, kept */
static lane *cur;                /* running lane, NULL in the scheduler */
static const wk_simt_kernel *run_k;
static void **run_args;
static int nthreads;
static bool hazard, abort_block;
int wk_simt_mem_fault;
static char hazard_msg[640];
#if defined(__x86_64__)
static void *sched_sp;
#else
static ucontext_t sched_uc;
#endif
#if defined(WK_SIMT_ASAN)
static const void *sched_bottom;
static size_t sched_size;
static void *sched_fake;
#endif

int wk_simt_lane_id(void) { return cur ? cur->id : -1; }

/* ---------------------------------------------------------------- context switch */
#if defined(__x86_64__)
void wk_simt_swap(void **save, void *to);
void wk_simt_entry(void);
/* Saves the callee-saved registers, MXCSR and the x87 control word on the current stack, stores
 * the stack pointer in *save and resumes the context saved at `to`. A fresh context's frame
 * returns into wk_simt_entry, which calls r13(r12). */
__asm__(".text\n"
        ".globl wk_simt_swap\n.hidden wk_simt_swap\n.type wk_simt_swap,@function\n"
        "wk_simt_swap:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size wk_simt_swap, .-wk_simt_swap\n"
        ".globl wk_simt_entry\n.hidden wk_simt_entry\n.type wk_simt_entry,@function\n"
        "wk_simt_entry:\n"
        "  movq %r12, %rdi\n  callq *%r13\n  ud2\n"
        ".size wk_simt_entry, .-wk_simt_entry\n"
        ".section .note.GNU-stack,\"\",@progbits\n.text\n");
#endif

static void lane_main(lane *l);

#if !defined(__x86_64__)
static void lane_main_uc(unsigned lo, unsigned hi)
{
    lane_main((lane *)(((uintptr_t)hi << 32) | lo));
}
#endif

/* A fresh context for l that starts in lane_main(l). */
static void lane_reset(lane *l)
{
#if defined(WK_SIMT_ASAN)
    /* Frames left on the stack keep their redzones poisoned. A lane that ended (L_DONE)
     * returned from the kernel, so only the scheduler's frames at the top can remain; any other
     * (a new lane, or one dropped in an aborted block) gets the whole stack unpoisoned. That
     * whole-stack unpoisoning for every lane of every block (64 KiB of shadow each) was half of
     * the time of the parity matrix on simt in the ASan build. */
    if (l->state == L_DONE)
        ASAN_UNPOISON_MEMORY_REGION(l->stack + STACK_BYTES - TOP_BYTES, TOP_BYTES);
    else
        ASAN_UNPOISON_MEMORY_REGION(l->stack, STACK_BYTES);
#endif
#if defined(__x86_64__)
    uint64_t *top = (uint64_t *)(l->stack + STACK_BYTES);
    uint64_t *sp = top - 8;
    sp[0] = 0x1f80u | ((uint64_t)0x037fu << 32); /* MXCSR, x87 control word: the defaults */
    sp[1] = 0;                                   /* r15 */
    sp[2] = 0;                                   /* r14 */
    sp[3] = (uint64_t)(uintptr_t)lane_main;      /* r13 */
    sp[4] = (uint64_t)(uintptr_t)l;              /* r12 */
    sp[5] = 0;                                   /* rbx */
    sp[6] = 0;                                   /* rbp */
    sp[7] = (uint64_t)(uintptr_t)wk_simt_entry;  /* return address */
    l->sp = sp;
#else
    getcontext(&l->uc);
    l->uc.uc_stack.ss_sp = l->stack + 4096;
    l->uc.uc_stack.ss_size = STACK_BYTES - 4096;
    l->uc.uc_link = NULL;
    uintptr_t v = (uintptr_t)l;
    makecontext(&l->uc, (void (*)(void))lane_main_uc, 2, (unsigned)(v & 0xffffffffu),
                (unsigned)(v >> 32));
#endif
}

/* Scheduler -> lane l, until it blocks or ends. */
static void to_lane(lane *l)
{
    cur = l;
    wk_simt_self = &l->pub;
#if defined(WK_SIMT_ASAN)
    __sanitizer_start_switch_fiber(&sched_fake, l->stack + 4096, STACK_BYTES - 4096);
#endif
#if defined(__x86_64__)
    wk_simt_swap(&sched_sp, l->sp);
#else
    swapcontext(&sched_uc, &l->uc);
#endif
#if defined(WK_SIMT_ASAN)
    __sanitizer_finish_switch_fiber(sched_fake, NULL, NULL);
#endif
    cur = NULL;
}

/* Lane -> scheduler; returns when the scheduler resumes the lane. `ending`: never resumed. */
static void to_sched(lane *l, bool ending)
{
#if defined(WK_SIMT_ASAN)
    __sanitizer_start_switch_fiber(ending ? NULL : &l->fake, sched_bottom, sched_size);
#else
    (void)ending;
#endif
#if defined(__x86_64__)
    wk_simt_swap(&l->sp, sched_sp);
#else
    swapcontext(&l->uc, &sched_uc);
#endif
#if defined(WK_SIMT_ASAN)
    __sanitizer_finish_switch_fiber(l->fake, NULL, NULL);
#endif
}

static void lane_main(lane *l)
{
#if defined(WK_SIMT_ASAN)
    __sanitizer_finish_switch_fiber(NULL, &sched_bottom, &sched_size);
#endif
    run_k->run(run_args);
    l->state = L_DONE;
    to_sched(l, true);
    __builtin_trap(); /* a finished lane is never resumed */
}

static wk_status lanes_ensure(int n)
{
    for (int i = 0; i < n; i++) {
        if (lanes[i])
            continue;
        lane *l = wk_calloc(1, sizeof *l);
        if (!l)
            return wk_err(WK_ERR_OUT_OF_MEMORY, "simt: out of host memory");
        void *s = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s == MAP_FAILED) {
            wk_free(l);
            return wk_err(WK_ERR_OUT_OF_MEMORY, "simt: cannot map a lane stack");
        }
        mprotect(s, 4096, PROT_NONE); /* an overflow faults instead of corrupting */
        l->stack = s;
        lanes[i] = l;
    }
    return WK_OK;
}

/* ---------------------------------------------------------------- hazards */
static void tid_str(char *buf, size_t n, int id)
{
    const unsigned bx = wk_simt_block_dim.x, by = wk_simt_block_dim.y;
    snprintf(buf, n, "thread (%u,%u,%u) [warp %d lane %d]", (unsigned)id % bx,
             (unsigned)id / bx % by, (unsigned)id / (bx * by), id / wk_simt_warp_size,
             id % wk_simt_warp_size);
}

void wk_simt_hazard(const char *fmt, ...)
{
    if (hazard)
        return;
    hazard = true;
    char who[96] = "";
    if (cur) {
        char t[80];
        tid_str(t, sizeof t, cur->id);
        snprintf(who, sizeof who, " %s", t);
    }
    int k = snprintf(hazard_msg, sizeof hazard_msg, "simt: kernel %s, block (%u,%u,%u)%s: ",
                     run_k ? run_k->name : "?", wk_simt_block_idx.x, wk_simt_block_idx.y,
                     wk_simt_block_idx.z, who);
    if (k < 0 || (size_t)k >= sizeof hazard_msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hazard_msg + k, sizeof hazard_msg - (size_t)k, fmt, ap);
    va_end(ap);
}

/* A hazard found by the scheduler (no lane running): the block cannot go on. */
static void sched_hazard(const lane *a, const lane *b, const char *what)
{
    char ta[80], tb[80];
    tid_str(ta, sizeof ta, a->id);
    tid_str(tb, sizeof tb, b->id);
    wk_simt_hazard("%s: %s %s, but %s %s", what, ta,
                   a->state == L_BAR ? "waits at __syncthreads" : "is at a warp operation", tb,
                   b->state == L_DONE   ? "has exited"
                   : b->state == L_BAR  ? "waits at __syncthreads"
                                        : "is at a warp operation of another kind");
    abort_block = true;
}

/* ---------------------------------------------------------------- synchronisation */
void wk_simt_syncthreads(void)
{
    lane *l = cur;
    l->state = L_BAR;
    l->site = __builtin_return_address(0);
    to_sched(l, false);
}

static uint64_t warp_op(int op, uint64_t v, int delta, const void *site)
{
    lane *l = cur;
    l->state = L_WARP;
    l->op = op;
    l->site = site;
    l->val = v;
    l->delta = delta;
    to_sched(l, false);
    return l->res;
}

uint64_t wk_simt_shfl_down(uint64_t v, int delta)
{
    return warp_op(OP_SHFL_DOWN, v, delta, __builtin_return_address(0));
}

uint64_t wk_simt_shfl_xor(uint64_t v, int mask)
{
    return warp_op(OP_SHFL_XOR, v, mask, __builtin_return_address(0));
}

uint64_t wk_simt_shfl_idx(uint64_t v, int src)
{
    return warp_op(OP_SHFL_IDX, v, src, __builtin_return_address(0));
}

uint64_t wk_simt_ballot(int pred)
{
    return warp_op(OP_BALLOT, (uint64_t)(pred != 0), 0, __builtin_return_address(0));
}

/* Completes warp w's operation if every lane of it waits there; false if it cannot yet. */
static bool warp_resolve(int w)
{
    const int W = wk_simt_warp_size, lo = w * W, hi = lo + W < nthreads ? lo + W : nthreads;
    lane *first = NULL;
    for (int i = lo; i < hi; i++)
        if (lanes[i]->state == L_WARP) {
            first = lanes[i];
            break;
        }
    if (!first)
        return false;
    for (int i = lo; i < hi; i++) {
        lane *l = lanes[i];
        if (l->state == L_RUN)
            return false;
        if (l->state != L_WARP || l->op != first->op) {
            sched_hazard(first, l, "warp operation not reached by every lane of the warp");
            return false;
        }
    }
    uint64_t ballot = 0;
    for (int i = lo; i < hi; i++)
        ballot |= (lanes[i]->val & 1u) << (i - lo);
    for (int i = lo; i < hi; i++) {
        lane *l = lanes[i];
        if (l->op == OP_BALLOT) {
            l->res = ballot;
        } else if (l->op == OP_SHFL_IDX) { /* CUDA's __shfl_sync: the source lane modulo W */
            const long src = (long)(((unsigned)l->delta) % (unsigned)W);
            l->res = lo + src < hi ? lanes[lo + src]->val : l->val;
        } else if (l->op == OP_SHFL_XOR) {
            const long src = (long)((i - lo) ^ l->delta); /* outside the warp (or block): own */
            l->res = l->delta >= 0 && src < W && lo + src < hi ? lanes[lo + src]->val : l->val;
        } else {
            const long src = (long)(i - lo) + l->delta; /* past the warp (or block): own value */
            l->res = l->delta >= 0 && src < W && lo + src < hi ? lanes[lo + src]->val : l->val;
        }
        l->state = L_RUN;
    }
    return true;
}

/* Releases the block's barrier if every thread waits at it. */
static bool barrier_resolve(void)
{
    lane *first = NULL;
    for (int i = 0; i < nthreads; i++) {
        if (lanes[i]->state == L_RUN || lanes[i]->state == L_WARP)
            return false;
        if (!first && lanes[i]->state == L_BAR)
            first = lanes[i];
    }
    if (!first)
        return false;
    for (int i = 0; i < nthreads; i++) {
        lane *l = lanes[i];
        if (l->state == L_DONE) {
            sched_hazard(first, l, "barrier not reached by every thread of the block");
            return false;
        }
    }
    for (int i = 0; i < nthreads; i++)
        lanes[i]->state = L_RUN;
    wk_simt_race_epoch();
    return true;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void run_block(uint64_t seed)
{
    static int order[MAX_THREADS];
    for (int i = 0; i < nthreads; i++) {
        lane *l = lanes[i];
        lane_reset(l);
        l->id = i;
        l->state = L_RUN;
        l->pub.tid.x = (unsigned)i % wk_simt_block_dim.x;
        l->pub.tid.y = (unsigned)i / wk_simt_block_dim.x % wk_simt_block_dim.y;
        l->pub.tid.z = (unsigned)i / (wk_simt_block_dim.x * wk_simt_block_dim.y);
    }
    wk_simt_race_epoch();
    const int nwarps = (nthreads + wk_simt_warp_size - 1) / wk_simt_warp_size;
    for (;;) {
        int n = 0;
        for (int i = 0; i < nthreads; i++)
            if (lanes[i]->state == L_RUN)
                order[n++] = i;
        if (n == 0) {
            bool progress = false, done = true;
            for (int w = 0; w < nwarps && !abort_block; w++)
                progress |= warp_resolve(w);
            if (!progress && !abort_block)
                progress = barrier_resolve();
            if (abort_block)
                return;
            for (int i = 0; i < nthreads; i++)
                done &= lanes[i]->state == L_DONE;
            if (done)
                return;
            if (!progress) { /* cannot happen: every waiting state resolves or is a hazard */
                wk_simt_hazard("deadlock: no thread can proceed");
                return;
            }
            continue;
        }
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
            const int j = (int)(rng_next(&seed) % (uint64_t)(i + 1));
            const int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < n; i++)
            to_lane(lanes[order[i]]);
    }
}

wk_status wk_simt_launch(const wk_simt_kernel *k, const unsigned grid[3], const unsigned block[3],
                         unsigned shmem, void **args, int warp, uint64_t seed)
{
    const uint64_t nt = (uint64_t)block[0] * block[1] * block[2];
    if (nt == 0 || nt > MAX_THREADS)
        return wk_err(WK_ERR_DEVICE, "simt: launch of %s with %llu threads per block (1..%d)",
                      k->name, (unsigned long long)nt, MAX_THREADS);
    if (shmem > WK_SIMT_DYN_SHARED)
        return wk_err(WK_ERR_DEVICE, "simt: launch of %s asks %u bytes of dynamic shared memory "
                      "(at most %d)", k->name, shmem, WK_SIMT_DYN_SHARED);
    wk_status st = lanes_ensure((int)nt);
    if (st != WK_OK)
        return st;
    run_k = k;
    run_args = args;
    nthreads = (int)nt;
    wk_simt_warp_size = warp;
    hazard = abort_block = false;
    wk_simt_mem_fault = 0;
    wk_simt_block_dim = (wk_simt_uint3){block[0], block[1], block[2]};
    wk_simt_grid_dim = (wk_simt_uint3){grid[0], grid[1], grid[2]};
    for (unsigned z = 0; z < grid[2] && !hazard; z++)
        for (unsigned y = 0; y < grid[1] && !hazard; y++)
            for (unsigned x = 0; x < grid[0] && !hazard; x++) {
                wk_simt_block_idx = (wk_simt_uint3){x, y, z};
                uint64_t s = seed ^ (((uint64_t)z << 42) + ((uint64_t)y << 21) + x) *
                                        0xd6e8feb86659fd93ull;
                run_block(s);
            }
    run_k = NULL;
    wk_simt_self = NULL;
    if (hazard)
        return wk_err(WK_ERR_DEVICE, "%s", hazard_msg);
    return WK_OK;
}
