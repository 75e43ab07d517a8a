/* cpu_gemm.c: the CPU backend's one gemm (matmul and the convolutions call it) over the BLAS
 * library, and who threads it.
 *
 * OpenBLAS's pthreads build (Debian's default, libopenblas0-pthread) keeps a thread pool of its
 * own beside libgomp's. A process that alternates gemms with OpenMP ops (every model does) then
 * has two pools spinning for the same cores: libgomp's workers spin after each parallel region
 * while OpenBLAS's threads want the cores, and OpenBLAS's threads sched_yield after each gemm while
 * the next parallel region starts. On the MiniLM example on 2 cores that was over 40% of the time
 * in the scheduler and sched_yield. So, by default, wick tells OpenBLAS once per process to run on
 * the calling thread (openblas_set_num_threads(1); every OpenBLAS build has it: pthreads, OpenMP,
 * serial) and threads gemms itself on libgomp's pool:
 *   - a gemm with enough work is cut into row blocks of C (or column blocks, when C is wider than
 *     tall), one BLAS call per block, spread over the threads when called outside a parallel
 *     region; no element's sum is split (k is never cut) and the blocks follow from the shape
 *     and the machine's processor count alone, so on one machine a gemm gives the same bits on
 *     every thread count (OpenBLAS's result for an element can depend on the extents of the
 *     call, e.g. its small-matrix kernels);
 *   - callers with many independent gemms (matmul's batches, convolution images) spread those over
 *     the threads instead (wk_cpu_gemm_spread), and each gemm then runs on its thread.
 * WICK_CPU_BLAS_THREADS=blas (read once) keeps BLAS's own threading instead: wick then spreads only
 * gemms that OpenBLAS runs alone (m n k <= 65536) and never cuts one. The OpenBLAS setting is
 * process-wide: other code in the process that calls the same OpenBLAS also runs single-threaded
 * (documented in docs/semantics.md; PyTorch's set_num_threads sets its BLAS the same way). */
#include "cpu_ops.h"
#include "wk_core.h"
#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS keeps a fixed pool of per-call buffers; stay well inside it. */
#define GEMM_MAX_THREADS 32
/* Below this many multiply-adds a gemm is not cut (the parallel region costs more than it saves). */
#define GEMM_CUT_MNK (1 << 18)
/* A cut gemm: one block of rows (or columns) of c per processor of the machine, each a multiple
 * of GEMM_CUT_ALIGN and at least GEMM_CUT_MIN long. */
#define GEMM_CUT_ALIGN 16
#define GEMM_CUT_MIN 64
/* In BLAS-threads mode, OpenBLAS runs a gemm of at most this m n k on the calling thread. */
#define GEMM_BLAS_SMALL_MNK 65536.0

static int g_own = 1;   /* wick threads gemms (1), or BLAS does (0) */
static int g_procs = 1; /* omp_get_num_procs(), read once: the number of blocks of a cut gemm */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void gemm_init(void)
{
    g_procs = omp_get_num_procs() > 0 ? omp_get_num_procs() : 1;
    const char *e = getenv("WICK_CPU_BLAS_THREADS");
    if (e && !strcmp(e, "blas")) {
        g_own = 0;
        return;
    }
    openblas_set_num_threads(1);
}

static int gemm_threads(void)
{
    const int nt = omp_get_max_threads();
    return nt < GEMM_MAX_THREADS ? nt : GEMM_MAX_THREADS;
}

const char *wk_cpu_gemm_threading(void)
{
    pthread_once(&g_once, gemm_init);
    return g_own ? "wick" : "blas";
}

int wk_cpu_gemm_spread(int64_t count, int64_t m, int64_t n, int64_t k)
{
    pthread_once(&g_once, gemm_init);
    if (count < 2)
        return 0;
    if (!g_own)
        return (double)m * (double)n * (double)k <= GEMM_BLAS_SMALL_MNK;
    const int64_t nt = gemm_threads();
    /* even shares, or enough gemms that the last round's imbalance is small; else each gemm is cut */
    return nt > 1 && (count % nt == 0 || count >= 4 * nt || (double)m * n * k < GEMM_CUT_MNK);
}

static void blas_gemm(wk_dtype ct, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a,
                      int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc)
{
    const enum CBLAS_TRANSPOSE fa = ta ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE fb = tb ? CblasTrans : CblasNoTrans;
    if (ct == WK_DTYPE_F64)
        cblas_dgemm(CblasRowMajor, fa, fb, (blasint)m, (blasint)n, (blasint)k, 1.0, a,
                    (blasint)lda, b, (blasint)ldb, 0.0, c, (blasint)ldc);
    else
        cblas_sgemm(CblasRowMajor, fa, fb, (blasint)m, (blasint)n, (blasint)k, 1.0f, a,
                    (blasint)lda, b, (blasint)ldb, 0.0f, c, (blasint)ldc);
}

void wk_cpu_gemm(wk_dtype ct, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a,
                 int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc)
{
    pthread_once(&g_once, gemm_init);
    if (!g_own || (double)m * (double)n * (double)k < GEMM_CUT_MNK) {
        blas_gemm(ct, ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
        return;
    }
    /* Blocks of `blk` rows (or columns) of c, from the shape and the machine's processor count
     * alone, so the bits do not depend on the thread count or on being called inside a
     * parallel region (then the blocks run one after the other on the calling thread): one block
     * per processor (each block repacks the other operand: more blocks cost more), whole
     * multiples of GEMM_CUT_ALIGN, at least GEMM_CUT_MIN long. */
    const int cut_m = m >= n;
    const int64_t ext = cut_m ? m : n;
    const int64_t procs = g_procs;
    int64_t blk = (ext + procs - 1) / procs;
    blk = (blk + GEMM_CUT_ALIGN - 1) / GEMM_CUT_ALIGN * GEMM_CUT_ALIGN;
    blk = blk > GEMM_CUT_MIN ? blk : GEMM_CUT_MIN;
    const int64_t nblk = (ext + blk - 1) / blk;
    const size_t es = wk_dtype_size(ct);
    const int nt = omp_in_parallel() ? 1 : gemm_threads();
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && nblk > 1)
    for (int64_t i = 0; i < nblk; i++) {
        const int64_t lo = i * blk, hi = lo + blk < ext ? lo + blk : ext;
        if (cut_m) /* rows [lo, hi) of op(a) and c */
            blas_gemm(ct, ta, tb, hi - lo, n, k, (const char *)a + (size_t)(ta ? lo : lo * lda) * es,
                      lda, b, ldb, (char *)c + (size_t)(lo * ldc) * es, ldc);
        else /* columns [lo, hi) of op(b) and c */
            blas_gemm(ct, ta, tb, m, hi - lo, k, a, lda,
                      (const char *)b + (size_t)(tb ? lo * ldb : lo) * es, ldb,
                      (char *)c + (size_t)lo * es, ldc);
    }
}
