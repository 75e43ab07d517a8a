/* gpu_blas.c: the vendor GEMM path of wk_gpu_gemm: cuBLAS on CUDA, rocBLAS on ROCm.
 *
 * The libraries are opened with dlopen at first use (once per process, thread-safe) and their
 * few entry points looked up by name (declarations: blas_api.h). Each device gets one handle,
 * created at its first GEMM under g->blas_mu and bound to the device's stream, so BLAS work
 * is ordered with wick's kernels. Where the library is missing (or a handle cannot be made),
 * the device uses the portable kernel of kernels/gemm.h, without an error.
 *
 * Row-major C = A B is column-major C^T = B^T A^T: B goes first. An operand is read in place
 * when one of its matrix strides is 1 and the other a valid leading dimension (row-major or
 * transposed; a dim of size 1 may have any stride); its batch stride may be anything, 0
 * included. Any other operand is copied into contiguous scratch first (one matrix when its
 * batch stride is 0). Compute types: f64 in f64; f32 in f32 (TF32 only with
 * WK_OPTION_MATMUL_TF32); f16 and bf16 in f32 with 16-bit inputs and output, and reductions
 * kept in f32 (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION). */
#include "blas_api.h"
#include "gpu_driver.h"
#include "gpu_ops.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- libraries */
typedef struct blas_sym {
    void *dst;
    const char *name;
} blas_sym;

/* Opens the first library of names that has every symbol; fills them. 1 on success. */
static int blas_open(const char *const *names, const blas_sym *syms, size_t nsyms)
{
    _Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym needs code == data pointers");
    for (int i = 0; names[i]; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            continue;
        size_t k = 0;
        for (; k < nsyms; k++) {
            void *p = dlsym(lib, syms[k].name);
            if (!p)
                break;
            memcpy(syms[k].dst, &p, sizeof p);
        }
        if (k == nsyms)
            return 1; /* stays open for the life of the process */
        dlclose(lib);
    }
    return 0;
}

static wk_cublas_api cublas;
static int cublas_ok;
static pthread_once_t cublas_once = PTHREAD_ONCE_INIT;

static void cublas_load(void)
{
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                        "/usr/local/cuda/lib64/libcublas.so.13",
                                        "/usr/local/cuda/lib64/libcublas.so.12", NULL};
    const blas_sym syms[] = {
        {&cublas.Create, "cublasCreate_v2"},
        {&cublas.Destroy, "cublasDestroy_v2"},
        {&cublas.SetStream, "cublasSetStream_v2"},
        {&cublas.SetMathMode, "cublasSetMathMode"},
        {&cublas.GemmStridedBatchedEx, "cublasGemmStridedBatchedEx"},
    };
    cublas_ok = blas_open(names, syms, sizeof syms / sizeof syms[0]);
}

static wk_rocblas_api rocblas;
static int rocblas_ok;
static pthread_once_t rocblas_once = PTHREAD_ONCE_INIT;

static void rocblas_load(void)
{
    static const char *const names[] = {"librocblas.so.4", "librocblas.so.3", "librocblas.so",
                                        "/opt/rocm/lib/librocblas.so", NULL};
    const blas_sym syms[] = {
        {&rocblas.CreateHandle, "rocblas_create_handle"},
        {&rocblas.DestroyHandle, "rocblas_destroy_handle"},
        {&rocblas.SetStream, "rocblas_set_stream"},
        {&rocblas.GemmStridedBatchedEx, "rocblas_gemm_strided_batched_ex"},
    };
    rocblas_ok = blas_open(names, syms, sizeof syms / sizeof syms[0]);
}

/* ---------------------------------------------------------------- per-device handles */
/* g->blas: NULL until the first GEMM, then the vendor handle, or &blas_none when the device
 * has no vendor path. */
static char blas_none;

/* The handle of dev's vendor library (creating it on first use), or NULL. Call under
 * g->blas_mu. */
static void *blas_handle(wk_device *dev)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    if (g->blas)
        return g->blas == &blas_none ? NULL : g->blas;
    g->blas = &blas_none;
    if (g->drv->kind == WK_BACKEND_SIMT) /* no vendor BLAS: the portable GEMM */
        return NULL;
    void *stream = NULL, *h = NULL;
    if (wk_gpu_bind(dev, &stream) != WK_OK) {
        g->blas = NULL; /* a transient failure: try again next time */
        return NULL;
    }
    if (g->drv->kind == WK_BACKEND_CUDA) {
        pthread_once(&cublas_once, cublas_load);
        if (!cublas_ok || cublas.Create(&h) != WK_CUBLAS_STATUS_SUCCESS || !h)
            return NULL;
        if (cublas.SetStream(h, stream) != WK_CUBLAS_STATUS_SUCCESS ||
            cublas.SetMathMode(h, WK_CUBLAS_DEFAULT_MATH |
                                      WK_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) !=
                WK_CUBLAS_STATUS_SUCCESS) {
            cublas.Destroy(h);
            return NULL;
        }
    } else {
        pthread_once(&rocblas_once, rocblas_load);
        if (!rocblas_ok || rocblas.CreateHandle(&h) != WK_ROCBLAS_STATUS_SUCCESS || !h)
            return NULL;
        if (rocblas.SetStream(h, stream) != WK_ROCBLAS_STATUS_SUCCESS) {
            rocblas.DestroyHandle(h);
            return NULL;
        }
    }
    g->blas = h;
    return h;
}

void wk_gpu_blas_close(wk_gpu_device *g)
{
    if (g->blas && g->blas != &blas_none) {
        void *stream = NULL;
        (void)g->drv->bind(g->ctx, &stream); /* the handle's device current in this thread */
        if (g->drv->kind == WK_BACKEND_CUDA)
            cublas.Destroy(g->blas);
        else
            rocblas.DestroyHandle(g->blas);
    }
    g->blas = NULL;
}

const char *wk_gpu_blas_name(wk_device *dev)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    pthread_mutex_lock(&g->blas_mu);
    void *h = blas_handle(dev);
    pthread_mutex_unlock(&g->blas_mu);
    if (!h)
        return NULL;
    return g->drv->kind == WK_BACKEND_CUDA ? "cuBLAS" : "rocBLAS";
}

/* ---------------------------------------------------------------- operands */
/* How a column-major BLAS reads the rows x cols matrix with strides (rs, cs): *trans = 0 for
 * row-major (rows *ld apart), 1 for transposed (columns *ld apart). 0 when it cannot. */
static int blas_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *trans, int64_t *ld)
{
    const int64_t rmin = rows > 1 ? rows : 1, cmin = cols > 1 ? cols : 1;
    int64_t l = rows == 1 ? cmin : rs; /* a single row: any stride will do */
    if ((cols == 1 || cs == 1) && l >= cmin && l <= INT_MAX) {
        *trans = 0;
        *ld = l;
        return 1;
    }
    l = cols == 1 ? rmin : cs;
    if ((rows == 1 || rs == 1) && l >= rmin && l <= INT_MAX) {
        *trans = 1;
        *ld = l;
        return 1;
    }
    return 0;
}

/* One operand as the library reads it. */
typedef struct blas_opnd {
    const void *p;
    int64_t bs;
    int trans;
    int64_t ld;
    void *scratch; /* a contiguous copy, or NULL */
} blas_opnd;

/* Prepares the rows x cols operand x (strides bs, rs, cs) of batch matrices. *ok = 0 when it
 * cannot be read even after a copy (then the portable kernel runs). */
static wk_status opnd_prepare(blas_opnd *o, int *ok, wk_device *dev, wk_dtype dt, int64_t batch,
                              int64_t rows, int64_t cols, const void *x, int64_t bs, int64_t rs,
                              int64_t cs)
{
    *o = (blas_opnd){x, bs, 0, 0, NULL};
    *ok = 1;
    if (blas_view(rows, cols, rs, cs, &o->trans, &o->ld))
        return WK_OK;
    /* a copy: one matrix when every batch reads the same one */
    const int64_t nb = bs == 0 ? 1 : batch;
    size_t bytes;
    if (__builtin_mul_overflow((size_t)nb, (size_t)rows, &bytes) ||
        __builtin_mul_overflow(bytes, (size_t)cols, &bytes) ||
        __builtin_mul_overflow(bytes, wk_dtype_size(dt), &bytes) ||
        !blas_view(rows, cols, cols, 1, &o->trans, &o->ld)) {
        *ok = 0;
        return WK_OK;
    }
    wk_status st = wk_gpu_scratch_alloc(dev, bytes, &o->scratch);
    if (st != WK_OK)
        return st;
    const wk_layout l = {.rank = 3,
                         .dims = {nb, rows, cols},
                         .strides = {bs, rs, cs},
                         .offset = 0};
    st = wk_gpu_copy_strided(dev, dt, o->scratch, 0, x, &l);
    if (st != WK_OK) {
        wk_gpu_scratch_free(dev, o->scratch);
        o->scratch = NULL;
        return st;
    }
    o->p = o->scratch;
    o->bs = nb == 1 ? 0 : rows * cols;
    return WK_OK;
}

/* ---------------------------------------------------------------- the call */
typedef struct blas_call {
    int ta, tb;       /* 1: transposed (op T) */
    int32_t m, n, k;  /* column-major: m = our n, n = our m */
    const void *A, *B;
    int32_t lda, ldb, ldc;
    int64_t sa, sb, sc;
    void *C;
    int32_t batch;
} blas_call;

static wk_status cublas_run(void *h, wk_dtype dt, const blas_call *c, bool *done)
{
    const float one = 1.0f, zero = 0.0f;
    const double oned = 1.0, zerod = 0.0;
    int type = WK_CUDA_R_32F, compute = WK_CUBLAS_COMPUTE_32F;
    if (dt == WK_DTYPE_F64)
        type = WK_CUDA_R_64F, compute = WK_CUBLAS_COMPUTE_64F;
    else if (dt == WK_DTYPE_F16)
        type = WK_CUDA_R_16F;
    else if (dt == WK_DTYPE_BF16)
        type = WK_CUDA_R_16BF;
    else if (wk_get_option(WK_OPTION_MATMUL_TF32))
        compute = WK_CUBLAS_COMPUTE_32F_FAST_TF32;
    const void *alpha = dt == WK_DTYPE_F64 ? (const void *)&oned : (const void *)&one;
    const void *beta = dt == WK_DTYPE_F64 ? (const void *)&zerod : (const void *)&zero;
    const int r = cublas.GemmStridedBatchedEx(
        h, c->ta ? WK_CUBLAS_OP_T : WK_CUBLAS_OP_N, c->tb ? WK_CUBLAS_OP_T : WK_CUBLAS_OP_N,
        c->m, c->n, c->k, alpha, c->A, type, c->lda, c->sa, c->B, type, c->ldb, c->sb, beta, c->C,
        type, c->ldc, c->sc, c->batch, compute, WK_CUBLAS_GEMM_DEFAULT);
    if (r == WK_CUBLAS_STATUS_SUCCESS)
        return WK_OK;
    if (r == WK_CUBLAS_STATUS_NOT_SUPPORTED) {
        *done = false;
        return WK_OK;
    }
    return wk_err(r == WK_CUBLAS_STATUS_ALLOC_FAILED ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE,
                  "gemm: cublasGemmStridedBatchedEx(%s, m=%d n=%d k=%d, batch %d) failed with "
                  "cublasStatus %d", wk_dtype_name(dt), (int)c->m, (int)c->n, (int)c->k,
                  (int)c->batch, r);
}

static wk_status rocblas_run(void *h, wk_dtype dt, const blas_call *c, bool *done)
{
    const float one = 1.0f, zero = 0.0f;
    const double oned = 1.0, zerod = 0.0;
    int type = WK_ROCBLAS_DATATYPE_F32_R, compute = WK_ROCBLAS_DATATYPE_F32_R;
    if (dt == WK_DTYPE_F64)
        type = compute = WK_ROCBLAS_DATATYPE_F64_R;
    else if (dt == WK_DTYPE_F16)
        type = WK_ROCBLAS_DATATYPE_F16_R;
    else if (dt == WK_DTYPE_BF16)
        type = WK_ROCBLAS_DATATYPE_BF16_R;
    const void *alpha = dt == WK_DTYPE_F64 ? (const void *)&oned : (const void *)&one;
    const void *beta = dt == WK_DTYPE_F64 ? (const void *)&zerod : (const void *)&zero;
    const int ta = c->ta ? WK_ROCBLAS_OPERATION_TRANSPOSE : WK_ROCBLAS_OPERATION_NONE;
    const int tb = c->tb ? WK_ROCBLAS_OPERATION_TRANSPOSE : WK_ROCBLAS_OPERATION_NONE;
    const int r = rocblas.GemmStridedBatchedEx(
        h, ta, tb, c->m, c->n, c->k, alpha, c->A, type, c->lda, c->sa, c->B, type, c->ldb, c->sb,
        beta, c->C, type, c->ldc, c->sc, c->C, type, c->ldc, c->sc, c->batch, compute,
        WK_ROCBLAS_GEMM_ALGO_STANDARD, 0, WK_ROCBLAS_GEMM_FLAGS_NONE);
    if (r == WK_ROCBLAS_STATUS_SUCCESS)
        return WK_OK;
    if (r == WK_ROCBLAS_STATUS_NOT_IMPLEMENTED) {
        *done = false;
        return WK_OK;
    }
    return wk_err(r == WK_ROCBLAS_STATUS_MEMORY_ERROR ? WK_ERR_OUT_OF_MEMORY : WK_ERR_DEVICE,
                  "gemm: rocblas_gemm_strided_batched_ex(%s, m=%d n=%d k=%d, batch %d) failed "
                  "with rocblas_status %d", wk_dtype_name(dt), (int)c->m, (int)c->n, (int)c->k,
                  (int)c->batch, r);
}

/* The batches of g in calls of at most INT_MAX, under g->blas_mu. */
static wk_status blas_calls(wk_device *dev, void *h, const wk_gpu_gemm_args *g,
                            const blas_opnd *A, const blas_opnd *B, int64_t ldc, bool *done)
{
    const size_t esz = wk_dtype_size(g->dt);
    const bool cuda = wk_gpu_dev(dev)->drv->kind == WK_BACKEND_CUDA;
    void *stream = NULL;
    wk_status st = wk_gpu_bind(dev, &stream); /* the device current in this thread */
    for (int64_t i0 = 0; st == WK_OK && *done && i0 < g->batch; i0 += INT_MAX) {
        const int64_t nb = g->batch - i0 < INT_MAX ? g->batch - i0 : INT_MAX;
        /* column-major C^T (n x m) = B^T (n x k) A^T (k x m) */
        const blas_call c = {
            .ta = B->trans, .tb = A->trans,
            .m = (int32_t)g->n, .n = (int32_t)g->m, .k = (int32_t)g->k,
            .A = wk_gpu_at(B->p, i0 * B->bs, esz), .lda = (int32_t)B->ld, .sa = B->bs,
            .B = wk_gpu_at(A->p, i0 * A->bs, esz), .ldb = (int32_t)A->ld, .sb = A->bs,
            .C = wk_gpu_at(g->c, i0 * g->c_bs, esz), .ldc = (int32_t)ldc, .sc = g->c_bs,
            .batch = (int32_t)nb,
        };
        st = cuda ? cublas_run(h, g->dt, &c, done) : rocblas_run(h, g->dt, &c, done);
    }
    return st;
}

wk_status wk_gpu_blas_gemm(wk_device *dev, const wk_gpu_gemm_args *g, bool *done)
{
    *done = false;
    if (g->dt != WK_DTYPE_F32 && g->dt != WK_DTYPE_F64 && g->dt != WK_DTYPE_F16 &&
        g->dt != WK_DTYPE_BF16)
        return WK_OK; /* f8e4m3: the portable kernel */
    if (g->k <= 0 || g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX)
        return WK_OK; /* k = 0 (zeros) and huge sizes: the portable kernel */
    const int64_t ldc = g->m == 1 ? g->n : g->ldc; /* one row: any row stride */
    if (ldc < g->n || ldc > INT_MAX)
        return WK_OK;
    wk_gpu_device *gd = wk_gpu_dev(dev);
    pthread_mutex_lock(&gd->blas_mu);
    void *h = blas_handle(dev);
    pthread_mutex_unlock(&gd->blas_mu);
    if (!h)
        return WK_OK;

    blas_opnd A = {0}, B = {0};
    int oka = 1, okb = 1;
    wk_status st = opnd_prepare(&A, &oka, dev, g->dt, g->batch, g->m, g->k, g->a, g->a_bs,
                                g->a_rs, g->a_cs);
    if (st == WK_OK)
        st = opnd_prepare(&B, &okb, dev, g->dt, g->batch, g->k, g->n, g->b, g->b_bs, g->b_rs,
                          g->b_cs);
    if (st == WK_OK && oka && okb) {
        *done = true;
        pthread_mutex_lock(&gd->blas_mu);
        st = blas_calls(dev, h, g, &A, &B, ldc, done);
        pthread_mutex_unlock(&gd->blas_mu);
    }
    if (A.scratch) /* stream-ordered: after the calls that read it */
        wk_gpu_scratch_free(dev, A.scratch);
    if (B.scratch)
        wk_gpu_scratch_free(dev, B.scratch);
    if (st != WK_OK)
        *done = false;
    return st;
}
