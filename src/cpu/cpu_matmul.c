/* cpu_matmul.c: the CPU matmul through the gemm of cpu_gemm.c (OpenBLAS's cblas_sgemm /
 * cblas_dgemm).
 *
 * f32 and f64 go straight to BLAS; f16 and bf16 are converted to f32, multiplied with sgemm
 * (f32 accumulation) and rounded back once. An operand whose last two dims are row-major
 * (stride[-1] == 1) or transposed (stride[-2] == 1) with a usable leading dimension is passed
 * as it is, with the matching transpose flag; any other operand is gathered into a contiguous
 * scratch first. Batch dims may have any strides (0 included): each batch's start is computed
 * from its multi-index, so they never force a copy. Batches are spread over the OpenMP threads
 * when wk_cpu_gemm_spread says so (cpu_gemm.c), else each gemm is threaded by wk_cpu_gemm.
 *
 * bf16 on a CPU with AVX512-BF16 takes wick's own gemm instead (cpu_matmul_bf16.c): it reads any
 * strides directly, so no operand is copied or converted; WICK_CPU_BF16GEMM=off keeps the sgemm
 * path for comparison. */
#include "cpu_ops.h"
#include "wk_core.h"
#include <cblas.h>
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* How BLAS can read the rows x cols matrix of l (its last two dims): *trans and *ld. Returns 0
 * when it cannot (the operand must be copied). The stride of a dim of size 1 does not matter,
 * so it is replaced by the value that makes the test pass. */
static int blas_view(const wk_layout *l, int *trans, int64_t *ld_out)
{
    const int r = l->rank;
    const int64_t rows = l->dims[r - 2], cols = l->dims[r - 1];
    const int64_t s0 = l->strides[r - 2], s1 = l->strides[r - 1];
    if (rows > INT_MAX || cols > INT_MAX)
        return 0;
    /* row-major: a row's elements adjacent, rows ld >= cols apart */
    int64_t ld = rows == 1 ? (cols > 1 ? cols : 1) : s0;
    if ((cols == 1 || s1 == 1) && ld >= (cols > 1 ? cols : 1) && ld <= INT_MAX) {
        *trans = 0;
        *ld_out = ld;
        return 1;
    }
    /* transposed: a column's elements adjacent, columns ld >= rows apart */
    ld = cols == 1 ? (rows > 1 ? rows : 1) : s1;
    if ((rows == 1 || s0 == 1) && ld >= (rows > 1 ? rows : 1) && ld <= INT_MAX) {
        *trans = 1;
        *ld_out = ld;
        return 1;
    }
    return 0;
}

/* Element offset of batch i (row-major over the batch dims of l) in l. */
static int64_t batch_offset(const wk_layout *l, int64_t i)
{
    int64_t off = l->offset;
    for (int k = l->rank - 3; k >= 0; k--) {
        const int64_t d = l->dims[k];
        off += (i % d) * l->strides[k];
        i /= d;
    }
    return off;
}

/* One operand as BLAS reads it: base pointer (compute type), layout, flag, leading dim. */
typedef struct mm_operand {
    const void *base;
    wk_layout l;
    int trans;
    int64_t ld;
    void *scratch; /* owned copy, or NULL */
} mm_operand;

/* Prepares x (dtype dt, layout lx) for BLAS in compute type ct, copying it to a contiguous
 * scratch when its dtype differs or BLAS cannot read its layout. */
static wk_status operand_prepare(mm_operand *o, wk_device *dev, wk_dtype dt, wk_dtype ct,
                                 const void *x, const wk_layout *lx)
{
    o->base = x;
    o->l = *lx;
    o->scratch = NULL;
    if (dt == ct && blas_view(lx, &o->trans, &o->ld))
        return WK_OK;
    const int64_t n = wk_layout_elem_count(lx);
    o->scratch = wk_host_alloc((size_t)n * wk_dtype_size(ct));
    if (!o->scratch)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "matmul: cannot allocate a %lld-element scratch",
                      (long long)n);
    wk_status st = wk_cpu_to_dtype(dev, dt, ct, o->scratch, x, lx);
    if (st)
        return st;
    wk_layout_contiguous(&o->l, lx->rank, lx->dims);
    o->base = o->scratch;
    if (!blas_view(&o->l, &o->trans, &o->ld))
        return wk_err(WK_ERR_NOT_SUPPORTED, "matmul: a %lld x %lld matrix exceeds the BLAS index range",
                      (long long)lx->dims[lx->rank - 2], (long long)lx->dims[lx->rank - 1]);
    return WK_OK;
}

static int g_bf16gemm;
static pthread_once_t g_bf16gemm_once = PTHREAD_ONCE_INIT;

static void bf16gemm_pick(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const char *v = getenv("WICK_CPU_BF16GEMM");
    __builtin_cpu_init();
    g_bf16gemm = wk_cpu_bf16gemm_built && __builtin_cpu_supports("avx512f") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                 __builtin_cpu_supports("avx512bf16") && !(v && !strcmp(v, "off"));
#endif
}

int wk_cpu_bf16gemm_on(void)
{
    pthread_once(&g_bf16gemm_once, bf16gemm_pick);
    return g_bf16gemm;
}

/* A gemm this small (in multiply-adds) runs on one thread; many of them are spread over threads. */
#define BF16_SMALL_MNK 262144.0

/* The bf16 matmul through wk_cpu_bf16gemm: nb gemms of m x n x k, out contiguous. */
static wk_status matmul_bf16(uint16_t *out, const uint16_t *a, const wk_layout *la,
                             const uint16_t *b, const wk_layout *lb, int64_t nb, int64_t m,
                             int64_t n, int64_t k)
{
    const int r = la->rank;
    const int64_t sam = la->strides[r - 2], sak = la->strides[r - 1];
    const int64_t sbk = lb->strides[r - 2], sbn = lb->strides[r - 1];
    int nt = omp_get_max_threads();
    const int per_batch = nb > 1 && (double)m * (double)n * (double)k <= BF16_SMALL_MNK;
    if (per_batch && nb < nt)
        nt = (int)nb;
    const size_t wsz = wk_cpu_bf16gemm_ws(m, n, k, sak, per_batch ? 1 : nt);
    char *ws = wk_host_alloc(wsz * (size_t)(per_batch ? nt : 1));
    if (!ws)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "matmul: cannot allocate the %zu-byte bf16 packing buffer",
                      wsz * (size_t)(per_batch ? nt : 1));
    if (per_batch) { /* each thread whole gemms, in its own workspace */
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t i = 0; i < nb; i++)
            wk_cpu_bf16gemm(m, n, k, a + batch_offset(la, i), sam, sak, b + batch_offset(lb, i), sbk,
                            sbn, out + i * m * n, n, ws + (size_t)omp_get_thread_num() * wsz, 0);
    } else { /* every thread on each gemm in turn */
#pragma omp parallel num_threads(nt)
        for (int64_t i = 0; i < nb; i++)
            wk_cpu_bf16gemm(m, n, k, a + batch_offset(la, i), sam, sak, b + batch_offset(lb, i), sbk,
                            sbn, out + i * m * n, n, ws, 1);
    }
    wk_host_free(ws);
    return WK_OK;
}

/* out [..., m, n] (contiguous, dtype dt) = a [..., m, k] @ b [..., k, n]. */
wk_status wk_cpu_matmul(wk_device *dev, wk_dtype dt, void *out, const void *a, const wk_layout *la,
                        const void *b, const wk_layout *lb)
{
    const int r = la->rank;
    const int64_t m = la->dims[r - 2], k = la->dims[r - 1], n = lb->dims[r - 1];
    int64_t nb = 1;
    for (int i = 0; i < r - 2; i++)
        nb *= la->dims[i];
    const size_t osz = wk_dtype_size(dt);
    if (nb == 0 || m == 0 || n == 0)
        return WK_OK;
    if (k == 0) { /* an empty sum: zeros (all-zero bits are +0 in every float dtype) */
        memset(out, 0, (size_t)(nb * m * n) * osz);
        return WK_OK;
    }
    if (dt == WK_DTYPE_BF16 && wk_cpu_bf16gemm_on())
        return matmul_bf16(out, a, la, b, lb, nb, m, n, k);
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "matmul: m=%lld n=%lld k=%lld exceed the BLAS index range",
                      (long long)m, (long long)n, (long long)k);
    const wk_dtype ct = dt == WK_DTYPE_F64 ? WK_DTYPE_F64 : WK_DTYPE_F32;
    const size_t csz = wk_dtype_size(ct);
    mm_operand A, B;
    void *cbuf = NULL;
    wk_status st = operand_prepare(&A, dev, dt, ct, a, la);
    B.scratch = NULL;
    if (!st)
        st = operand_prepare(&B, dev, dt, ct, b, lb);
    if (!st && dt != ct && !(cbuf = wk_host_alloc((size_t)(nb * m * n) * csz)))
        st = wk_err(WK_ERR_OUT_OF_MEMORY, "matmul: cannot allocate the f32 result scratch");
    if (!st) {
        char *c = dt == ct ? out : cbuf;
        const char *pa = A.base, *pb = B.base;
#define MM_BATCH(i)                                                                              \
    wk_cpu_gemm(ct, A.trans, B.trans, m, n, k, pa + (size_t)batch_offset(&A.l, i) * csz, A.ld,     \
                pb + (size_t)batch_offset(&B.l, i) * csz, B.ld, c + (size_t)((i) * m * n) * csz, n)
        /* no parallel region around gemms that thread themselves: libgomp does not thread a
         * region nested in one, even an inactive one */
        if (wk_cpu_gemm_spread(nb, m, n, k)) {
            int nt = omp_get_max_threads();
            nt = nt < 32 ? nt : 32; /* OpenBLAS's pool of per-call buffers (cpu_gemm.c) */
#pragma omp parallel for schedule(static) num_threads(nt)
            for (int64_t i = 0; i < nb; i++)
                MM_BATCH(i);
        } else {
            for (int64_t i = 0; i < nb; i++)
                MM_BATCH(i);
        }
#undef MM_BATCH
        if (dt != ct) {
            wk_layout lc;
            const int64_t cnt = nb * m * n;
            wk_layout_contiguous(&lc, 1, &cnt);
            st = wk_cpu_to_dtype(dev, ct, dt, out, cbuf, &lc);
        }
    }
    wk_host_free(cbuf);
    wk_host_free(B.scratch);
    wk_host_free(A.scratch);
    return st;
}
