/* blas_api.h: our own declarations of the few cuBLAS and rocBLAS entry points and enum values
 * that src/gpu/gpu_blas.c uses, and the internal interface of the vendor GEMM path.
 *
 * libwick never needs a vendor BLAS header at build time (Debian packages no rocBLAS) nor links
 * a BLAS: gpu_blas.c dlopens libcublas / librocblas at first use and looks these entry points
 * up by name. Handles and streams are opaque pointers; enum parameters are passed as the
 * int-sized enums below (the C ABI passes an enum as its int-sized underlying type).
 *
 * Sources of the values:
 *   cuBLAS: CUDA 13's cublas_api.h (cublasStatus_t, cublasOperation_t, cublasGemmAlgo_t,
 *           cublasMath_t, cublasComputeType_t, the prototypes) and library_types.h
 *           (cudaDataType_t), /usr/local/cuda/include on the build machine;
 *   rocBLAS: ROCm/rocBLAS library/include/internal/rocblas-types.h (rocblas_operation,
 *           rocblas_datatype, rocblas_status, rocblas_gemm_algo, rocblas_gemm_flags) and
 *           rocblas-functions.h (rocblas_gemm_strided_batched_ex: rocblas_int = int32_t in the
 *           LP64 build, rocblas_stride = int64_t). */
#ifndef WK_BLAS_API_H
#define WK_BLAS_API_H

#include "gpu_impl.h"
#include <stdbool.h>
#include <stdint.h>

/* ---------------------------------------------------------------- cuBLAS */
typedef enum wk_cublas_value {
    WK_CUBLAS_STATUS_SUCCESS = 0,         /* cublasStatus_t */
    WK_CUBLAS_STATUS_ALLOC_FAILED = 3,
    WK_CUBLAS_STATUS_NOT_SUPPORTED = 15,
    WK_CUBLAS_OP_N = 0,                   /* cublasOperation_t */
    WK_CUBLAS_OP_T = 1,
    WK_CUBLAS_GEMM_DEFAULT = -1,          /* cublasGemmAlgo_t */
    WK_CUBLAS_DEFAULT_MATH = 0,           /* cublasMath_t (bit flags) */
    WK_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16,
    WK_CUBLAS_COMPUTE_32F = 68,           /* cublasComputeType_t */
    WK_CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    WK_CUBLAS_COMPUTE_64F = 70,
    WK_CUDA_R_32F = 0,                    /* cudaDataType_t */
    WK_CUDA_R_64F = 1,
    WK_CUDA_R_16F = 2,
    WK_CUDA_R_16BF = 14
} wk_cublas_value;

typedef struct wk_cublas_api {
    int (*Create)(void **handle);                    /* cublasCreate_v2 */
    int (*Destroy)(void *handle);                    /* cublasDestroy_v2 */
    int (*SetStream)(void *handle, void *stream);    /* cublasSetStream_v2 (cudaStream_t) */
    int (*SetMathMode)(void *handle, int mode);      /* cublasSetMathMode */
    /* cublasGemmStridedBatchedEx: column-major C = op(A) op(B), alpha/beta on the host in the
     * compute type's scalar type (float for 32F, double for 64F). */
    int (*GemmStridedBatchedEx)(void *handle, int transa, int transb, int m, int n, int k,
                                const void *alpha, const void *A, int Atype, int lda,
                                long long strideA, const void *B, int Btype, int ldb,
                                long long strideB, const void *beta, void *C, int Ctype,
                                int ldc, long long strideC, int batchCount, int computeType,
                                int algo);
} wk_cublas_api;

/* ---------------------------------------------------------------- rocBLAS */
typedef enum wk_rocblas_value {
    WK_ROCBLAS_STATUS_SUCCESS = 0,           /* rocblas_status */
    WK_ROCBLAS_STATUS_NOT_IMPLEMENTED = 2,
    WK_ROCBLAS_STATUS_MEMORY_ERROR = 5,
    WK_ROCBLAS_OPERATION_NONE = 111,         /* rocblas_operation */
    WK_ROCBLAS_OPERATION_TRANSPOSE = 112,
    WK_ROCBLAS_DATATYPE_F16_R = 150,         /* rocblas_datatype */
    WK_ROCBLAS_DATATYPE_F32_R = 151,
    WK_ROCBLAS_DATATYPE_F64_R = 152,
    WK_ROCBLAS_DATATYPE_BF16_R = 168,
    WK_ROCBLAS_GEMM_ALGO_STANDARD = 0,       /* rocblas_gemm_algo */
    WK_ROCBLAS_GEMM_FLAGS_NONE = 0           /* rocblas_gemm_flags */
} wk_rocblas_value;

typedef struct wk_rocblas_api {
    int (*CreateHandle)(void **handle);              /* rocblas_create_handle */
    int (*DestroyHandle)(void *handle);              /* rocblas_destroy_handle */
    int (*SetStream)(void *handle, void *stream);    /* rocblas_set_stream (hipStream_t) */
    /* rocblas_gemm_strided_batched_ex: column-major D = alpha op(A) op(B) + beta C (C == D
     * here), alpha/beta on the host in the compute type. */
    int (*GemmStridedBatchedEx)(void *handle, int trans_a, int trans_b, int32_t m, int32_t n,
                                int32_t k, const void *alpha, const void *a, int a_type,
                                int32_t lda, int64_t stride_a, const void *b, int b_type,
                                int32_t ldb, int64_t stride_b, const void *beta, const void *c,
                                int c_type, int32_t ldc, int64_t stride_c, void *d, int d_type,
                                int32_t ldd, int64_t stride_d, int32_t batch_count,
                                int compute_type, int algo, int32_t solution_index,
                                uint32_t flags);
} wk_rocblas_api;

/* ---------------------------------------------------------------- the vendor GEMM path */
/* Runs the GEMM g (contract: wk_gpu_gemm in gpu_impl.h; batch, m, n > 0) through cuBLAS or
 * rocBLAS when the device has one: *done = true. Operands the library cannot read are made
 * contiguous in scratch first. *done = false with WK_OK when the portable kernel must run
 * instead: no library (dlopen failed), no handle, f8e4m3, k == 0, sizes past the int32 API, an output
 * row stride the library refuses, or the library answered "not supported". */
wk_status wk_gpu_blas_gemm(wk_device *dev, const wk_gpu_gemm_args *g, bool *done);

/* "cuBLAS" or "rocBLAS" when the vendor path is usable on dev (loading it if needed), NULL
 * when the portable kernel serves every GEMM (for tests and benchmarks). */
const char *wk_gpu_blas_name(wk_device *dev);

#endif
