/* comm.cu: the one-shot all-reduce of small messages between the ranks of one process whose GPUs
 * read each other's memory (src/comm/comm_oneshot.c sets it up; docs/semantics.md,
 * "Communicators"). Every rank has an area in its own device memory, the same layout on every
 * rank, its address known to every rank (tab[r]: rank r's area, readable from this device):
 *   epoch[b]       u64, b < maxb: the calls block b of this rank has finished
 *   flag[p][b]     u64, p < maxr: the last call whose slice b rank p has put (written by p)
 *   err[4]         u32: the first timeout: 1, the rank waited for, the block, 0
 *   data at head:  two slots of slot_bytes: slot e & 1 holds call e's input
 * Every call launches maxb blocks (also where the message has fewer slices: every block takes
 * part in every call, so each block's epoch counts the calls); block b handles slice b of the
 * message (elements [b * per, (b + 1) * per)), with no grid-wide step:
 *   put:    e = epoch[b] + 1; the slice of x into data slot e & 1; a system-wide fence; then
 *           flag[rank][b] = e in every rank's area (this one's included);
 *   reduce: wait until flag[p][b] >= e in this area for every rank p (a flag left by an earlier
 *           call holds a smaller number, so it cannot pass for this call's); then
 *           y = ((x_0 op x_1) op x_2) ... over the slots e & 1 of ranks 0, 1, 2, ... in rank
 *           order, as comm_reduce.c folds them (narrow floats step in f32 and round to the dtype
 *           at each step, avg divides once at the end), so every rank writes the same bits and
 *           the CPU transport's; epoch[b] = e.
 * Two slots suffice: a block of rank r writes slot e & 1 at call e + 2 only after the same block
 * at call e + 1 saw every peer's flag e + 1, which each peer put in its call e + 1 kernel, after
 * its whole call e kernel (stream order) had read slot e & 1 (whatever slices the calls had).
 * The per-call state lives in device memory, so a graph can replay the same launch.
 * A wait longer than timeout (in ticks of os_timer) records the rank waited for in err and
 * ends the block (y is then undefined); the host reads err at wk_comm_synchronize.
 * Kernels (256 threads a block, grid = maxb):
 *   oneshot_<dt>(tab, nranks, rank, x, y, n, op, maxb, maxr, head, slot_bytes, timeout, phase)
 *     dt: f32 f16 bf16 f64 f8e4m3; op: wk_reduce_op; phase 1 put, 2 reduce, 3 both (one launch;
 *     the split form lets one thread drive every rank of the simt device, whose launches run
 *     one at a time). */
#include "gpu.h"

/* os_timer(): a device-wide clock at a constant rate, for the bounded wait: NVIDIA's
 * %globaltimer (nanoseconds), AMD's real-time counter (the rate HIP reports as
 * hipDeviceAttributeWallClockRate; the ROCm driver does not read it yet, so the one-shot is not
 * set up there), the host's monotonic nanoseconds on simt; wk_gpu_props' timer_khz is its rate.
 * os_fence_system(): the writes before it reach other devices before the writes after it. */
#if defined(WK_SIMT)
#include <time.h>
WK_DEV uint64_t os_timer(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
WK_DEV void os_fence_system(void) {} /* simt launches run one at a time under a process-wide lock */
#elif defined(WK_HIP)
WK_DEV uint64_t os_timer(void)
{
#if __has_builtin(__builtin_readsteadycounter) /* clang 18+: the real-time counter on gfx9..11 */
    return __builtin_readsteadycounter();
#else
    return (uint64_t)wall_clock64(); /* ROCm 5's: -1 where s_memrealtime is missing (gfx11) */
#endif
}
WK_DEV void os_fence_system(void) { __threadfence_system(); }
#else
WK_DEV uint64_t os_timer(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
WK_DEV void os_fence_system(void) { __threadfence_system(); }
#endif

/* wk_reduce_op (include/wick_comm.h) */
enum { OS_SUM = 0, OS_PROD = 1, OS_MIN = 2, OS_MAX = 3, OS_AVG = 4 };

/* C's NAN in the compute type (the CPU transport's NaN: a quiet NaN, sign clear; the double is
 * the float's widened, 0x7ff8000000000000) */
WK_DEV float os_nan(float) { return wk_fp_from_bits(0x7fc00000u); }
WK_DEV double os_nan(double) { return (double)wk_fp_from_bits(0x7fc00000u); }

/* One step of op on the compute type (comm_reduce.c's fstep) */
template <class C> WK_DEV C os_step(C a, C b, int op)
{
    switch (op) {
    case OS_PROD: return a * b;
    case OS_MIN: return a != a || b != b ? os_nan(a) : b < a ? b : a;
    case OS_MAX: return a != a || b != b ? os_nan(a) : b > a ? b : a;
    default: return a + b; /* sum, avg */
    }
}

/* Volatile accesses: the flags and the peers' slots change under this kernel (another GPU
 * writes them), so no load may be served from a copy cached before. */
WK_DEV uint64_t os_ld64(const uint64_t *p) { return *(const volatile uint64_t *)p; }
WK_DEV void os_st64(uint64_t *p, uint64_t v) { *(volatile uint64_t *)p = v; }

template <int D>
WK_DEV void os_run(const uint64_t *tab, int nranks, int rank, const void *x, void *y, int64_t n,
                   int op, int maxb, int maxr, int64_t head, int64_t slot_bytes, uint64_t timeout,
                   int phase)
{
    typedef typename wk_t<D>::S S;
    typedef typename wk_t<D>::C C;
    const int b = blockIdx.x;
    const int64_t per = (n + gridDim.x - 1) / gridDim.x;
    const int64_t i0 = b * per, i1 = i0 + per < n ? i0 + per : n;
    char *me = (char *)(uintptr_t)tab[rank];
    uint64_t *epoch = (uint64_t *)me, *flags = epoch + maxb;
    uint32_t *err = (uint32_t *)(flags + (int64_t)maxr * maxb);
    __shared__ uint64_t e_s;
    __shared__ int ok_s;
    if (threadIdx.x == 0) {
        e_s = os_ld64(&epoch[b]) + 1;
        ok_s = 1;
    }
    __syncthreads();
    const uint64_t e = e_s;
    const int64_t slot = head + (int64_t)(e & 1) * slot_bytes;
    if (phase & 1) {
        S *mine = (S *)(me + slot);
        for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x)
            mine[i] = ((const S *)x)[i];
        os_fence_system(); /* the slice before the flags that announce it */
        __syncthreads();
        if (threadIdx.x < nranks) {
            uint64_t *f = (uint64_t *)(uintptr_t)tab[threadIdx.x] + maxb;
            os_st64(&f[(int64_t)rank * maxb + b], e);
        }
        if (phase == 1) {
            __syncthreads();
            return;
        }
    }
    /* wait for every rank's flag of this call */
    if (threadIdx.x == 0) {
        const uint64_t t0 = os_timer();
        for (int p = 0; p < nranks && ok_s; p++)
            while (os_ld64(&flags[(int64_t)p * maxb + b]) < e) {
                if (os_timer() - t0 > timeout) {
                    if (atomicCAS(&err[0], 0u, 1u) == 0u) {
                        err[1] = (uint32_t)p;
                        err[2] = (uint32_t)b;
                    }
                    ok_s = 0;
                    break;
                }
            }
        os_fence_system(); /* the slots after the flags */
    }
    __syncthreads();
    if (!ok_s)
        return;
    for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        C acc = wk_t<D>::ld(((const volatile S *)((const char *)(uintptr_t)tab[0] + slot))[i]);
        for (int p = 1; p < nranks; p++) {
            const S v = ((const volatile S *)((const char *)(uintptr_t)tab[p] + slot))[i];
            acc = wk_t<D>::ld(wk_t<D>::st(os_step<C>(acc, wk_t<D>::ld(v), op)));
        }
        if (op == OS_AVG)
            acc = acc / (C)nranks;
        ((S *)y)[i] = wk_t<D>::st(acc);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        os_st64(&epoch[b], e);
}

#define OS_KERNEL(NAME, D)                                                                     \
    WK_KERNEL oneshot_##NAME(const uint64_t *tab, int nranks, int rank, const void *x, void *y, \
                             int64_t n, int op, int maxb, int maxr, int64_t head,              \
                             int64_t slot_bytes, uint64_t timeout, int phase)                  \
    {                                                                                          \
        os_run<D>(tab, nranks, rank, x, y, n, op, maxb, maxr, head, slot_bytes, timeout, phase); \
    }
OS_KERNEL(f32, WK_DT_F32)
OS_KERNEL(f16, WK_DT_F16)
OS_KERNEL(bf16, WK_DT_BF16)
OS_KERNEL(f64, WK_DT_F64)
OS_KERNEL(f8e4m3, WK_DT_F8E4M3)
