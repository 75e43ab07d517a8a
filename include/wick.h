/* wick.h: the public C API of wick, Candle's tensor backend in C11 on CPU, CUDA and ROCm.
 *
 * Everything a user needs is here; internals live in src/ and are never included by users.
 * Conventions:
 *   - every fallible call returns wk_status; WK_OK is 0; wk_last_error() explains a failure;
 *   - output arguments come first;
 *   - a storage is a typed buffer on one device; a layout (rank, dims, strides in elements,
 *     start offset) says how an op reads it; strides may be 0 (broadcast);
 *   - every op reads its inputs through their layouts and returns a new contiguous storage,
 *     except the in-place ones (wk_const_set, wk_copy_strided_src, wk_copy2d);
 *   - a failed call leaks nothing and leaves its inputs untouched.
 * Semantics that go beyond Candle's (integer rules, NaN, rounding) are in docs/semantics.md. */
#ifndef WICK_H
#define WICK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WK_API
#else
#define WK_API __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------- version */
#define WK_VERSION_MAJOR 0
#define WK_VERSION_MINOR 1
#define WK_VERSION_PATCH 0
#define WK_VERSION_NUMBER (WK_VERSION_MAJOR * 10000 + WK_VERSION_MINOR * 100 + WK_VERSION_PATCH)
#define WK_VERSION_STRING "0.1.0"

/* The version of the library actually loaded: WK_VERSION_NUMBER of its build. */
WK_API unsigned wk_version(void);
WK_API const char *wk_version_string(void);

/* ---------------------------------------------------------------- status */
/* Explicit, grouped values (hundreds = group). Append-only. */
typedef enum wk_status {
    WK_OK = 0,
    /* 1xx: the caller passed something invalid */
    WK_ERR_INVALID_ARGUMENT = 100, /* a null pointer, an unknown enum value, a bad parameter */
    WK_ERR_SHAPE = 101,            /* ranks, dims or element counts that do not agree */
    WK_ERR_DTYPE = 102,            /* a dtype the op is not defined for, or dtypes that disagree */
    WK_ERR_LAYOUT = 103,           /* a layout that addresses outside its storage, or is malformed */
    WK_ERR_OVERFLOW = 104,         /* an element or byte count that overflows */
    WK_ERR_INDEX_OUT_OF_RANGE = 105, /* an index (op argument or id tensor value) out of range */
    WK_ERR_DEVICE_MISMATCH = 106,  /* operands on different devices */
    /* 2xx: resources */
    WK_ERR_OUT_OF_MEMORY = 200,
    /* 3xx: devices and drivers */
    WK_ERR_DEVICE = 300,           /* a driver call failed; the vendor's error name is in wk_last_error() */
    WK_ERR_NO_DEVICE = 301,        /* the requested backend or device is not available here */
    WK_ERR_TIMEOUT = 302,          /* a peer or device did not answer in time (communicators) */
    /* 4xx: capability */
    WK_ERR_NOT_SUPPORTED = 400,    /* defined by the semantics but not implemented by this backend */
    /* 5xx: files */
    WK_ERR_IO = 500,
    WK_ERR_FORMAT = 501,
    /* 9xx: bugs */
    WK_ERR_INTERNAL = 900
} wk_status;

/* A static, human-readable name for a status ("WK_ERR_SHAPE: shape mismatch"). Never NULL. */
WK_API const char *wk_status_string(wk_status s);
/* The calling thread's message for its last failed call: the op, shapes and dtypes involved.
 * Empty string if none. Valid until the next wick call on this thread. */
WK_API const char *wk_last_error(void);

/* ---------------------------------------------------------------- dtypes */
/* Explicit values, append-only (they may reach files and FFI). */
typedef enum wk_dtype {
    WK_DTYPE_U8 = 0,
    WK_DTYPE_U32 = 1,
    WK_DTYPE_I16 = 2,
    WK_DTYPE_I32 = 3,
    WK_DTYPE_I64 = 4,
    WK_DTYPE_BF16 = 5,   /* stored as raw uint16_t bits */
    WK_DTYPE_F16 = 6,    /* IEEE binary16, stored as raw uint16_t bits */
    WK_DTYPE_F32 = 7,
    WK_DTYPE_F64 = 8,
    WK_DTYPE_F8E4M3 = 9  /* OCP E4M3FN: max 448, no infinity, stored as a raw byte */
} wk_dtype;
#define WK_DTYPE_COUNT 10

WK_API const char *wk_dtype_name(wk_dtype d); /* "f32"; "?" for an unknown value */
WK_API size_t wk_dtype_size(wk_dtype d);      /* bytes per element; 0 for an unknown value */
WK_API int wk_dtype_is_float(wk_dtype d);     /* 1 for bf16 f16 f32 f64 f8e4m3 */

/* Scalar conversions, the exact ones every backend uses (round to nearest even;
 * NaN/inf/saturation rules in docs/semantics.md). */
WK_API uint16_t wk_f32_to_f16(float x);
WK_API float wk_f16_to_f32(uint16_t h);
WK_API uint16_t wk_f32_to_bf16(float x);
WK_API float wk_bf16_to_f32(uint16_t h);
WK_API uint8_t wk_f32_to_f8e4m3(float x);
WK_API float wk_f8e4m3_to_f32(uint8_t b);

/* ---------------------------------------------------------------- ops */
/* Every op has an explicit, append-only id; wk_device_supports() answers per (op, dtype). */
typedef enum wk_op {
    /* unary: y = f(x), same dtype */
    WK_OP_EXP = 0, WK_OP_LOG = 1, WK_OP_SIN = 2, WK_OP_COS = 3, WK_OP_TANH = 4,
    WK_OP_ABS = 5, WK_OP_NEG = 6, WK_OP_RECIP = 7, WK_OP_SQR = 8, WK_OP_SQRT = 9,
    WK_OP_GELU = 10,     /* tanh approximation */
    WK_OP_GELU_ERF = 11, WK_OP_ERF = 12, WK_OP_RELU = 13, WK_OP_SILU = 14,
    WK_OP_FLOOR = 15, WK_OP_CEIL = 16,
    WK_OP_ROUND = 17,    /* half away from zero */
    WK_OP_SIGN = 18, WK_OP_SIGMOID = 19,
    /* parametrised unary */
    WK_OP_AFFINE = 20,   /* x * mul + add */
    WK_OP_POWF = 21,     /* x ^ e */
    WK_OP_ELU = 22,      /* x > 0 ? x : alpha * (exp(x) - 1) */
    /* binary: same dtype in and out */
    WK_OP_ADD = 30, WK_OP_SUB = 31, WK_OP_MUL = 32, WK_OP_DIV = 33,
    WK_OP_MAXIMUM = 34, WK_OP_MINIMUM = 35,
    /* gated (GLU) binary: act(a) * b, float dtypes (the feed-forward gate of Llama, Gemma, ...) */
    WK_OP_SWIGLU = 36,    /* silu(a) * b */
    WK_OP_GEGLU = 37,     /* gelu(a) * b, gelu's tanh approximation */
    WK_OP_GEGLU_ERF = 38, /* gelu_erf(a) * b */
    /* comparison: u8 out (1 true, 0 false) */
    WK_OP_EQ = 40, WK_OP_NE = 41, WK_OP_LT = 42, WK_OP_LE = 43, WK_OP_GT = 44, WK_OP_GE = 45,
    /* selection, conversion, fill */
    WK_OP_WHERE_COND = 50, WK_OP_TO_DTYPE = 51, WK_OP_CONST_SET = 52, WK_OP_ZEROS = 53,
    /* reductions */
    WK_OP_SUM = 60, WK_OP_MIN = 61, WK_OP_MAX = 62, WK_OP_ARGMIN = 63, WK_OP_ARGMAX = 64,
    /* movement */
    WK_OP_COPY_STRIDED = 70, WK_OP_COPY2D = 71,
    /* random numbers (float dtypes) */
    WK_OP_RAND_UNIFORM = 80, WK_OP_RAND_NORMAL = 81,
    /* linear algebra, convolution, image ops (float dtypes) */
    WK_OP_MATMUL = 90, WK_OP_CONV1D = 91, WK_OP_CONV_TRANSPOSE1D = 92, WK_OP_CONV2D = 93,
    WK_OP_CONV_TRANSPOSE2D = 94, WK_OP_AVG_POOL2D = 95, WK_OP_MAX_POOL2D = 96,
    WK_OP_UPSAMPLE_NEAREST1D = 97, WK_OP_UPSAMPLE_NEAREST2D = 98, WK_OP_UPSAMPLE_BILINEAR2D = 99,
    /* indexing (the dtype is the values'; ids are u8, u32 or i64) */
    WK_OP_INDEX_SELECT = 100, WK_OP_GATHER = 101, WK_OP_SCATTER_SET = 102,
    WK_OP_SCATTER_ADD_SET = 103, WK_OP_INDEX_ADD = 104,
    /* fused ops of candle-nn (float dtypes) */
    WK_OP_SOFTMAX_LAST_DIM = 110, WK_OP_RMS_NORM = 111, WK_OP_LAYER_NORM = 112, WK_OP_ROPE = 113,
    WK_OP_ROPE_I = 114, WK_OP_ROPE_THD = 115, WK_OP_ARG_SORT_LAST_DIM = 116,
    /* residual add fused with a norm (wk_add_rms_norm, wk_add_layer_norm; float dtypes) */
    WK_OP_ADD_RMS_NORM = 117, WK_OP_ADD_LAYER_NORM = 118,
    /* quantized tensors (the dtype is the float side: f32, f16 or bf16; see wk_qtype) */
    WK_OP_DEQUANTIZE = 120, WK_OP_QMATMUL = 121, WK_OP_QEMBEDDING = 122,
    /* decode (float dtypes) */
    WK_OP_DECODE_ATTENTION = 130, WK_OP_ROPE_KV_APPEND = 131,
    /* int8 activations (wk_quantize_act, wk_add_rms_norm_act, wk_qmatmul_act; float dtypes) */
    WK_OP_QUANTIZE_ACT = 132, WK_OP_ADD_RMS_NORM_ACT = 133, WK_OP_QMATMUL_ACT = 134,
    WK_OP_BINARY_ACT = 135
} wk_op;
#define WK_OP_ID_LIMIT 136 /* every wk_op value is below this */

/* "exp", "affine", ...; "?" for an unknown value. */
WK_API const char *wk_op_name(wk_op op);
/* 1 if docs/semantics.md defines op for dtype (the dtype of its data operand), else 0.
 * An op called on an undefined dtype fails with WK_ERR_DTYPE on every backend. */
WK_API int wk_op_defined(wk_op op, wk_dtype dtype);

/* ---------------------------------------------------------------- layouts */
#define WK_MAX_RANK 8

/* How an op reads a storage: element i (a multi-index) sits at
 * offset + sum_k idx[k] * strides[k], in elements. Strides are >= 0; 0 broadcasts.
 * rank 0 is a scalar (one element). */
typedef struct wk_layout {
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    int64_t strides[WK_MAX_RANK];
    int64_t offset;
} wk_layout;

/* out: row-major contiguous layout of the given dims, offset 0. rank 0..WK_MAX_RANK. */
WK_API wk_status wk_layout_contiguous(wk_layout *out, int32_t rank, const int64_t *dims);
/* out: l with dims d0 and d1 swapped (no data moves). */
WK_API wk_status wk_layout_transpose(wk_layout *out, const wk_layout *l, int32_t d0, int32_t d1);
/* out: l restricted to [start, start+len) along dim (an empty result keeps l's offset). */
WK_API wk_status wk_layout_narrow(wk_layout *out, const wk_layout *l, int32_t dim, int64_t start,
                                  int64_t len);
/* out: l broadcast to (rank, dims) with NumPy rules: l's dims align to the right; a dim of 1 (or a
 * missing leading dim) becomes stride 0. rank >= l->rank. */
WK_API wk_status wk_layout_broadcast(wk_layout *out, const wk_layout *l, int32_t rank,
                                     const int64_t *dims);
/* Product of dims (1 for rank 0). Negative dims count as 0; a product past INT64_MAX gives -1
 * (every op refuses such a layout with WK_ERR_OVERFLOW). */
WK_API int64_t wk_layout_elem_count(const wk_layout *l);
/* 1 if l is row-major contiguous (dims of size 1 may have any stride; a layout with a dim of 0
 * addresses nothing and counts as contiguous, whatever its strides). */
WK_API int wk_layout_is_contiguous(const wk_layout *l);

/* ---------------------------------------------------------------- devices */
typedef enum wk_backend_kind {
    WK_BACKEND_CPU = 0,
    WK_BACKEND_CUDA = 1,
    WK_BACKEND_ROCM = 2,
    WK_BACKEND_SIMT = 3 /* the GPU kernels run on the CPU (testing, debugging; docs/architecture.md) */
} wk_backend_kind;
#define WK_BACKEND_COUNT 4

typedef struct wk_device wk_device;
typedef struct wk_storage wk_storage;

/* n: the number of devices of a backend (0 when unavailable). *reason (may be NULL): why the
 * backend is unavailable, or "" when it is available. Never fails for a valid kind. */
WK_API wk_status wk_backend_device_count(int *n, const char **reason, wk_backend_kind kind);
WK_API const char *wk_backend_name(wk_backend_kind kind); /* "cpu", "cuda", "rocm", "simt" */

/* out: a device handle for spec "cpu", "cuda:N", "rocm:N", "simt:N" or "auto" (first CUDA device,
 * else first ROCm device, else the CPU; never simt). "cuda" means "cuda:0". simt:0 runs the GPU
 * kernels on the CPU with 32-lane warps, simt:1 with 64 (WICK_SIMT_WARP=64 makes simt:0 64 wide).
 * Close it with wk_device_close. */
WK_API wk_status wk_device_open(wk_device **out, const char *spec);
/* Gives up the handle. Storages still alive keep the device open until the last of them is freed
 * (one exported through DLPack, or one another thread is running ops on: those ops run to the
 * end normally). While they live the pointer stays valid (wk_storage_device returns it) and a
 * second close of it is ignored; once the last is freed it is gone. NULL is a no-op.
 * docs/architecture.md, "Threads". */
WK_API void wk_device_close(wk_device *dev);
WK_API wk_backend_kind wk_device_backend(const wk_device *dev);
WK_API int wk_device_ordinal(const wk_device *dev);
/* "cpu (8 threads)", "NVIDIA H100 80GB HBM3 (sm_90)". Never NULL. */
WK_API const char *wk_device_name(const wk_device *dev);
/* 1 if a and b are the same physical device. */
WK_API int wk_device_same(const wk_device *a, const wk_device *b);
/* Waits for all queued work on the device; reports any deferred error. */
WK_API wk_status wk_device_synchronize(wk_device *dev);
/* 1 if the device implements op for dtype (the dtype of the op's data operand). */
WK_API int wk_device_supports(const wk_device *dev, wk_op op, wk_dtype dtype);

/* Where a device's kernels come from (docs/architecture.md, "Code objects"). A GPU loads each
 * kernel module at the first op that needs it; a module compiled at run time is kept on disk
 * (wk_kernel_cache_info), so a later process loads it instead of compiling it again. */
typedef enum wk_code_source {
    WK_CODE_BUILTIN = 0,       /* CPU and simt devices: compiled into the library */
    WK_CODE_AHEAD_OF_TIME = 1, /* a code object the library embeds for the device's architecture */
    WK_CODE_DRIVER_JIT = 2,    /* embedded PTX of an older architecture, compiled by the CUDA
                                  driver at load (kept in the driver's cache, CUDA_CACHE_PATH) */
    WK_CODE_RUN_TIME = 3       /* the embedded kernel source, compiled by NVRTC or hipRTC at a
                                  module's first use (or WICK_FORCE_RTC=1 at device open) */
} wk_code_source;
WK_API wk_code_source wk_device_code_source(const wk_device *dev);
/* Loads (and, where the code is compiled at run time, compiles) every kernel module of the
 * device now, compiling on up to `threads` threads at once (<= 0: one per CPU), instead of at
 * each module's first use. A no-op on the CPU. A program that calls it at start never waits for
 * a compiler later; one that does not pays only for the modules its ops use. Returns the first
 * failure (the other modules are still loaded). */
WK_API wk_status wk_device_warmup(wk_device *dev, int threads);
/* The kernel cache of run-time compiled modules: *dir (may be NULL) its directory ("" when it is
 * off), *note (may be NULL) one line on why it is off or why it could not be written ("" when
 * all is well). Strings owned by the library, valid until the next call. Read from
 * WICK_CACHE_DIR, else $XDG_CACHE_HOME/wick, else ~/.cache/wick; WICK_CACHE_DISABLE=1 turns it
 * off, WICK_CACHE_MAXSIZE (bytes, default 256 MiB) bounds it. */
WK_API void wk_kernel_cache_info(const char **dir, const char **note);

/* ---------------------------------------------------------------- random numbers */
/* Philox4x32-10, counter-based: element i of the k-th draw after wk_device_set_seed(seed) is a
 * pure function of (seed, elements drawn before it + i), the same on every backend: uniform
 * samples are bit-identical, normal samples too (shared f64 math; see src/core/philox.h).
 * A fresh device starts with seed 299792458. */
WK_API wk_status wk_device_set_seed(wk_device *dev, uint64_t seed);
/* out: n elements of float dtype, uniform in [lo, up). */
WK_API wk_status wk_rand_uniform(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n,
                                 double lo, double up);
/* out: n elements of float dtype, normal with the given mean and standard deviation. */
WK_API wk_status wk_rand_normal(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n,
                                double mean, double std);

/* ---------------------------------------------------------------- memory hook */
/* All host memory the library takes goes through this hook (tests inject failures with it).
 * alloc returns NULL on failure; memory must be aligned to 16 bytes. */
typedef struct wk_allocator {
    void *(*alloc)(size_t bytes, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} wk_allocator;
/* Installs a (NULL: the default malloc/free). Only while no wick object is alive. */
WK_API wk_status wk_set_allocator(const wk_allocator *a);

/* ---------------------------------------------------------------- storage */
/* out: n elements of dtype on dev, contents undefined. */
WK_API wk_status wk_storage_alloc_uninit(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n);
/* out: n elements of dtype on dev, all bits zero. */
WK_API wk_status wk_storage_zeros(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n);
/* out: n elements of dtype copied from host memory src (n * wk_dtype_size(dtype) bytes). */
WK_API wk_status wk_storage_from_host(wk_storage **out, wk_device *dev, wk_dtype dtype,
                                      const void *src, size_t n);
/* dst (n elements, host memory) <- s. n must equal wk_storage_len(s). Waits for the device. */
WK_API wk_status wk_storage_to_host(void *dst, size_t n, const wk_storage *s);
/* out: a copy of s on the same device. */
WK_API wk_status wk_storage_clone(wk_storage **out, const wk_storage *s);
/* NULL is a no-op. */
WK_API void wk_storage_free(wk_storage *s);
WK_API wk_dtype wk_storage_dtype(const wk_storage *s);
WK_API size_t wk_storage_len(const wk_storage *s); /* elements */
WK_API wk_device *wk_storage_device(const wk_storage *s);

/* ---------------------------------------------------------------- elementwise */
/* out (contiguous, dims of lx, dtype of x) = op(x), op in WK_OP_EXP..WK_OP_SIGMOID. */
WK_API wk_status wk_unary(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx);
/* out = x * mul + add (dims of lx, dtype of x). */
WK_API wk_status wk_affine(wk_storage **out, const wk_storage *x, const wk_layout *lx, double mul,
                           double add);
/* out = x ^ e (float dtypes). */
WK_API wk_status wk_powf(wk_storage **out, const wk_storage *x, const wk_layout *lx, double e);
/* out = x > 0 ? x : alpha * (exp(x) - 1) (float dtypes). */
WK_API wk_status wk_elu(wk_storage **out, const wk_storage *x, const wk_layout *lx, double alpha);
/* out (contiguous, dims of la) = a op b, op in WK_OP_ADD..WK_OP_GEGLU_ERF. la and lb must have the
 * same dims (broadcast with stride 0 beforehand); a and b the same dtype. The gated ops (SWIGLU,
 * GEGLU, GEGLU_ERF: float dtypes) compute act(a) * b in the compute type and round once, so
 * for f32 they equal wk_unary(act) then wk_binary(MUL) bit for bit; a and b may be two column
 * views of one (T, 2F) gate|up matrix. */
WK_API wk_status wk_binary(wk_storage **out, wk_op op, const wk_storage *a, const wk_layout *la,
                           const wk_storage *b, const wk_layout *lb);
/* out (u8, dims of la) = a op b ? 1 : 0, op in WK_OP_EQ..WK_OP_GE. Same rules as wk_binary. */
WK_API wk_status wk_cmp(wk_storage **out, wk_op op, const wk_storage *a, const wk_layout *la,
                        const wk_storage *b, const wk_layout *lb);
/* out (dims of lc, dtype of t) = cond != 0 ? t : f. cond is u8, u32 or i64; t and f share a dtype;
 * all three layouts have the same dims. */
WK_API wk_status wk_where_cond(wk_storage **out, const wk_storage *cond, const wk_layout *lc,
                               const wk_storage *t, const wk_layout *lt, const wk_storage *f,
                               const wk_layout *lf);
/* out (contiguous, dims of lx, dtype to) = x converted (rules in docs/semantics.md). */
WK_API wk_status wk_to_dtype(wk_storage **out, const wk_storage *x, const wk_layout *lx, wk_dtype to);
/* In place: every element of s addressed by l becomes *value, one element of s's dtype
 * (raw bits: uint16_t for bf16/f16, uint8_t for f8e4m3). l must address inside s. */
WK_API wk_status wk_const_set(wk_storage *s, const wk_layout *l, const void *value);

/* ---------------------------------------------------------------- reductions */
/* out (contiguous, dims of lx with every reduced dim set to 1: keepdim) = op over dims[0..ndims).
 * op in WK_OP_SUM..WK_OP_ARGMAX. dims are distinct and < lx->rank; ndims may be 0 (a copy).
 * sum/min/max keep the dtype; argmin/argmax give u32: the row-major index within the reduced
 * dims (ascending dim order), ties and NaN resolved to the first. min/max/argmin/argmax over an
 * empty reduced extent fail with WK_ERR_SHAPE; an empty sum is 0. */
WK_API wk_status wk_reduce(wk_storage **out, wk_op op, const wk_storage *x, const wk_layout *lx,
                           const int32_t *dims, int32_t ndims);

/* ---------------------------------------------------------------- movement */
/* In place: dst[dst_offset + i] = src[element i of ls in row-major order], i < elem_count(ls).
 * Same dtype; the destination range must lie inside dst. */
WK_API wk_status wk_copy_strided_src(wk_storage *dst, size_t dst_offset, const wk_storage *src,
                                     const wk_layout *ls);
/* In place: for i < d1, j < d2: dst[dst_offset + i*dst_stride1 + j] = src[src_offset + i*src_stride1 + j].
 * Same dtype; every addressed element must lie inside its storage. */
WK_API wk_status wk_copy2d(wk_storage *dst, const wk_storage *src, size_t d1, size_t d2,
                           size_t src_stride1, size_t dst_stride1, size_t src_offset,
                           size_t dst_offset);

/* ---------------------------------------------------------------- linear algebra */
/* out (contiguous, dims [..., m, n]) = a [..., m, k] @ b [..., k, n], rank >= 2, the same
 * leading (batch) dims on both (stride 0 broadcasts). Any strides: row-major or transposed last
 * two dims go straight to BLAS, other layouts are made contiguous first. f32 f64 f16 bf16
 * (f16/bf16 accumulate in f32). */
WK_API wk_status wk_matmul(wk_storage **out, const wk_storage *a, const wk_layout *la,
                           const wk_storage *b, const wk_layout *lb);

/* ---------------------------------------------------------------- options */
/* Process-wide switches, read at each op (their first value comes from the environment
 * variable named beside each; "1" turns it on):
 *   WK_OPTION_MATMUL_TF32   (WICK_MATMUL_TF32): f32 matmul and convolution on NVIDIA may use TF32
 *                           tensor cores (10-bit mantissa products); off by default.
 *   WK_OPTION_PORTABLE_GEMM (WICK_GEMM=portable): GPU matmul and convolution use wick's own tiled
 *                           GEMM kernel even where cuBLAS / rocBLAS is present.
 *   WK_OPTION_DETERMINISTIC (WICK_DETERMINISTIC): large float scatter_add_set / index_add on
 *                           GPUs (2^20 updates or more over few slices) add with atomics, whose
 *                           order varies run to run; this option keeps them on the ordered path,
 *                           bit-equal to the CPU, at a cost in speed (docs/semantics.md). */
typedef enum wk_option {
    WK_OPTION_MATMUL_TF32 = 0,
    WK_OPTION_PORTABLE_GEMM = 1,
    WK_OPTION_DETERMINISTIC = 2
} wk_option;
#define WK_OPTION_COUNT 3
/* WK_ERR_INVALID_ARGUMENT for an unknown option. */
WK_API wk_status wk_set_option(wk_option opt, int value);
/* The current value (0 for an unknown option). */
WK_API int wk_get_option(wk_option opt);

/* ---------------------------------------------------------------- convolution */
/* Parameters of the convolutions; the 1-D ops use element [0] only. groups >= 1 divides the
 * channels. Output sizes (Candle's / PyTorch's formulas), per spatial dim:
 *   conv:           out = (in + 2*padding - dilation*(k - 1) - 1) / stride + 1
 *   conv_transpose: out = (in - 1)*stride - 2*padding + dilation*(k - 1) + output_padding + 1 */
typedef struct wk_conv_params {
    int32_t stride[2];         /* >= 1 */
    int32_t padding[2];        /* >= 0 */
    int32_t dilation[2];       /* >= 1 */
    int32_t output_padding[2]; /* transposed only: 0 <= output_padding < max(stride, dilation) */
    int32_t groups;            /* >= 1 */
} wk_conv_params;
/* x (N, C_in, L), w (C_out, C_in/groups, K) -> out (N, C_out, L_out). */
WK_API wk_status wk_conv1d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                           const wk_storage *w, const wk_layout *lw, const wk_conv_params *p);
/* x (N, C_in, L), w (C_in, C_out/groups, K) -> out (N, C_out, L_out). */
WK_API wk_status wk_conv_transpose1d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                     const wk_storage *w, const wk_layout *lw,
                                     const wk_conv_params *p);
/* x (N, C_in, H, W), w (C_out, C_in/groups, KH, KW) -> out (N, C_out, H_out, W_out). */
WK_API wk_status wk_conv2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                           const wk_storage *w, const wk_layout *lw, const wk_conv_params *p);
/* x (N, C_in, H, W), w (C_in, C_out/groups, KH, KW) -> out (N, C_out, H_out, W_out). */
WK_API wk_status wk_conv_transpose2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                     const wk_storage *w, const wk_layout *lw,
                                     const wk_conv_params *p);

/* ---------------------------------------------------------------- pooling, upsampling */
/* Kernel and stride (>= 1) per spatial dim (H, W); no padding (Candle's pools). */
typedef struct wk_pool_params {
    int32_t kernel[2];
    int32_t stride[2];
} wk_pool_params;
/* x (N, C, H, W) -> out (N, C, (H - kh)/sh + 1, (W - kw)/sw + 1): the mean / the maximum of each
 * window (max: NaN propagates). */
WK_API wk_status wk_avg_pool2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                               const wk_pool_params *p);
WK_API wk_status wk_max_pool2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                               const wk_pool_params *p);
/* x (N, C, L) -> out (N, C, l_out); source index floor(i * L / l_out) (Candle's rule). */
WK_API wk_status wk_upsample_nearest1d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                       int64_t l_out);
/* x (N, C, H, W) -> out (N, C, h_out, w_out), same rule per dim. */
WK_API wk_status wk_upsample_nearest2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                       int64_t h_out, int64_t w_out);
/* x (N, C, H, W) -> out (N, C, h_out, w_out), bilinear as PyTorch's upsample_bilinear2d:
 * align_corners 0/1; scale_h/scale_w > 0 are the user's scale factors (used for the source
 * coordinate when align_corners is 0, as in PyTorch), <= 0 means in/out. */
WK_API wk_status wk_upsample_bilinear2d(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                        int64_t h_out, int64_t w_out, int align_corners,
                                        double scale_h, double scale_w);

/* ---------------------------------------------------------------- indexing */
/* ids: u8, u32 or i64. An id equal to its dtype's maximum (255, 2^32-1, INT64_MAX) means "none":
 * zero in select/gather, skipped in scatter/index_add. Any other id outside [0, size of dim)
 * fails with WK_ERR_INDEX_OUT_OF_RANGE naming the id and its position, and writes nothing (on a
 * GPU the failure may surface at the next synchronizing call; nothing out of range is touched).
 * src/dst/out share a dtype (any). */
/* out (dims of src with dims[dim] = n) = src rows ids[0..n) along dim; ids rank 1 of n. */
WK_API wk_status wk_index_select(wk_storage **out, const wk_storage *src, const wk_layout *ls,
                                 const wk_storage *ids, const wk_layout *li, int32_t dim);
/* out (dims of ids) [.., i, ..] = src[.., ids[.., i, ..], ..] along dim; ids has src's rank and
 * dims no larger than src's except along dim. */
WK_API wk_status wk_gather(wk_storage **out, const wk_storage *src, const wk_layout *ls,
                           const wk_storage *ids, const wk_layout *li, int32_t dim);
/* In place: dst[.., ids[.., i, ..], ..] = src[.., i, ..] along dim (ids and src the same dims;
 * duplicate ids: the last write in row-major order wins). */
WK_API wk_status wk_scatter_set(wk_storage *dst, const wk_layout *ld, const wk_storage *ids,
                                const wk_layout *li, const wk_storage *src, const wk_layout *ls,
                                int32_t dim);
/* In place: dst[.., ids[.., i, ..], ..] += src[.., i, ..] along dim. */
WK_API wk_status wk_scatter_add_set(wk_storage *dst, const wk_layout *ld, const wk_storage *ids,
                                    const wk_layout *li, const wk_storage *src,
                                    const wk_layout *ls, int32_t dim);
/* out (dims of dst) = dst, then out[.., ids[i], ..] += src[.., i, ..] along dim (ids rank 1). */
WK_API wk_status wk_index_add(wk_storage **out, const wk_storage *dst, const wk_layout *ld,
                              const wk_storage *ids, const wk_layout *li, const wk_storage *src,
                              const wk_layout *ls, int32_t dim);

/* ---------------------------------------------------------------- fused ops (candle-nn) */
/* out (dims of x) = softmax over the last dim (f16/bf16 accumulate in f32). */
WK_API wk_status wk_softmax_last_dim(wk_storage **out, const wk_storage *x, const wk_layout *lx);
/* out = x / sqrt(mean(x^2, last dim) + eps) * alpha; alpha (D) for x (..., D). */
WK_API wk_status wk_rms_norm(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                             const wk_storage *alpha, const wk_layout *la, float eps);
/* out = (x - mean) / sqrt(var + eps) * alpha + beta over the last dim; alpha, beta (D). */
WK_API wk_status wk_layer_norm(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                               const wk_storage *alpha, const wk_layout *la,
                               const wk_storage *beta, const wk_layout *lb, float eps);
/* The residual add and the norm that follows it, in one op (between the sublayers of a
 * transformer block; not in Candle's op set, which runs add then the norm):
 *   sum = x + r, rounded to the dtype once (wk_binary ADD's value);
 *   out = wk_rms_norm(sum, alpha, eps), or wk_layer_norm(sum, alpha, beta, eps), computed from
 *         the rounded sum, so out equals that norm of sum bit for bit on the same backend.
 * x and r: same dims, rank >= 1, any layouts; r of x's float dtype, or f16/bf16 under f32 x
 * (widened exactly: the bits of the op on r converted to f32); alpha (and beta) x's dtype,
 * rank 1 of dims (D), D the last dim. Both outputs contiguous with x's dims. sum may be NULL: not
 * returned (post-norm blocks need only out). On failure neither output is set. */
WK_API wk_status wk_add_rms_norm(wk_storage **sum, wk_storage **out, const wk_storage *x,
                                 const wk_layout *lx, const wk_storage *r, const wk_layout *lr,
                                 const wk_storage *alpha, const wk_layout *la, float eps);
WK_API wk_status wk_add_layer_norm(wk_storage **sum, wk_storage **out, const wk_storage *x,
                                   const wk_layout *lx, const wk_storage *r, const wk_layout *lr,
                                   const wk_storage *alpha, const wk_layout *la,
                                   const wk_storage *beta, const wk_layout *lb, float eps);
/* Rotary embeddings. rope (halves) and rope_i (interleaved pairs): x (B, H, T, D), cos and sin
 * (T, D/2) or (B, T, D/2); rope_thd: x (B, T, H, D), cos and sin (T, D/2) or (B, T, D/2).
 * out has x's dims. D even. */
WK_API wk_status wk_rope(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                         const wk_storage *cos, const wk_layout *lc, const wk_storage *sin,
                         const wk_layout *ls);
WK_API wk_status wk_rope_i(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                           const wk_storage *cos, const wk_layout *lc, const wk_storage *sin,
                           const wk_layout *ls);
WK_API wk_status wk_rope_thd(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                             const wk_storage *cos, const wk_layout *lc, const wk_storage *sin,
                             const wk_layout *ls);
/* out (u32, dims of x): per row of the last dim, the indices that sort it ascending (1) or
 * descending (0); stable (ties keep their order); NaN sorts last ascending, first descending. */
WK_API wk_status wk_arg_sort_last_dim(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                                      int ascending);
/* Decode attention, fused: out = softmax(q k^T * scale [+ causal mask]) v per (batch, head) for a
 * few query tokens against a KV cache (docs/semantics.md, "Decode attention").
 *   q (B, Hq, Lq, D); k and v (B, Hkv, Lk, D); Hq a multiple of Hkv (grouped-query: query head h
 *   reads kv head h / (Hq / Hkv)); 1 <= Lq <= Lk; 1 <= D <= 256; the last dim of q, k and v
 *   with stride 1, the other strides free (a view of a larger preallocated cache works).
 *   q f32, f16 or bf16; k and v of one float dtype of the three (may differ from q's).
 *   causal != 0: query i sits at position Lk - Lq + i and sees keys 0 .. Lk - Lq + i; causal =
 *   0: every query sees every key. scale: finite (usually 1 / sqrt(D)).
 * out (B, Hq, Lq, D), contiguous, q's dtype. Arithmetic in f32 with an online (running-max)
 * softmax; the result rounded once to q's dtype. */
WK_API wk_status wk_decode_attention(wk_storage **out, const wk_storage *q, const wk_layout *lq,
                                     const wk_storage *k, const wk_layout *lk,
                                     const wk_storage *v, const wk_layout *lv, float scale,
                                     int causal);
/* wk_decode_attention with the key counts in device memory, for graph replay (the counts can
 * change between replays): lens (u32, one element per batch entry, read through ll, rank 1 of
 * B, on q's device) gives batch entry b its key count L_b with Lq <= L_b <= Lk, where k and v
 * span the whole cache (Lk rows); rows L_b.. are never read. causal: query i of batch entry b
 * sits at position L_b - Lq + i. A count outside [Lq, Lk] fails with
 * WK_ERR_INDEX_OUT_OF_RANGE (on a GPU at the next synchronizing call, as ids do) and that
 * entry's rows of out are undefined. */
WK_API wk_status wk_decode_attention_lens(wk_storage **out, const wk_storage *q,
        const wk_layout *lq, const wk_storage *k, const wk_layout *lk, const wk_storage *v,
        const wk_layout *lv, const wk_storage *lens, const wk_layout *ll, float scale, int causal);

/* Rotary embedding and KV-cache append in one op (the step of a decoder before its attention;
 * Candle runs rope, then writes the cache with slice_assign or cat):
 *   q (B, Hq, T, D), k and v (B, Hkv, T, D): the step's new queries, keys and values, one float
 *   dtype, any layouts; D even. cos and sin (P, D/2) or (B, P, D/2), q's dtype or f32 (widened
 *   to q's compute type): the tables of every position (row p for position p), as wk_rope reads
 *   them. kc and vc (B, Hkv, L, D): the cache, written in place; one float dtype, which may
 *   differ from q's (an f16 cache under f32 activations); any strides. The T new tokens of
 *   batch entry b sit at positions p_b .. p_b + T - 1: p_b = pos[b] (u32, rank 1 of B, on q's
 *   device, for graph replay: the positions can change between replays) when pos is not NULL,
 *   else p_b = start for every b.
 *   interleaved: 1 rotates adjacent pairs (wk_rope_i: ggml's NORMAL mode), 0 halves (wk_rope).
 * Writes kc[b, h, p_b + t] = rope(k)[b, h, t] and vc[b, h, p_b + t] = v[b, h, t], and out (B, Hq,
 * T, D), contiguous, = rope(q), all three in the cache's dtype (out is the query of the attention
 * over this cache: one dtype for q, k and v): bit for bit what wk_rope (or wk_rope_i) of q and of
 * k with the tables' rows p_b.., then wk_to_dtype to the cache's dtype, give (f32 tables: the
 * same on q and k widened to the compute type, rounded back to q's dtype before that conversion).
 * p_b + T beyond P or L: WK_ERR_INDEX_OUT_OF_RANGE, nothing written (with pos on a GPU: at the next
 * synchronizing call, as ids are; that entry's rows of out and of the cache are not written). */
WK_API wk_status wk_rope_kv_append(wk_storage **out, int interleaved, const wk_storage *q,
        const wk_layout *lq, const wk_storage *k, const wk_layout *lk, const wk_storage *v,
        const wk_layout *lv, const wk_storage *cos, const wk_layout *lc, const wk_storage *sin,
        const wk_layout *ls, wk_storage *kc, const wk_layout *lkc, wk_storage *vc,
        const wk_layout *lvc, const wk_storage *pos, const wk_layout *lp, int64_t start);

/* ---------------------------------------------------------------- graphs */
/* Capture and replay (docs/semantics.md, "Graphs"). wk_graph_begin(dev) opens a capture: every
 * op then issued on dev is recorded instead of run (outputs are allocated as usual; their
 * contents are undefined until a replay). wk_graph_end(dev, &g) closes it and returns the
 * graph; wk_graph_launch(g) runs the recorded sequence once, asynchronously, as one launch,
 * writing the same storages as the captured calls, bit for bit what eager execution writes
 * (for deterministic ops). While a capture is open, a synchronize, a download or an upload
 * fails with WK_ERR_NOT_SUPPORTED (and the capture stays usable); captures do not nest. The
 * storages a graph reads or writes must stay alive while it is replayed; memory the captured
 * calls allocated and freed stays reserved until wk_graph_free (which waits for the replays).
 * Free every graph before closing its device. GPU devices only: on the CPU wk_graph_begin
 * returns WK_ERR_NOT_SUPPORTED (CPU ops run at the call; there is no launch cost to save). */
typedef struct wk_graph wk_graph;
WK_API wk_status wk_graph_begin(wk_device *dev);
WK_API wk_status wk_graph_end(wk_device *dev, wk_graph **out);
WK_API wk_status wk_graph_launch(wk_graph *g);
WK_API void wk_graph_free(wk_graph *g); /* NULL: nothing */

/* ---------------------------------------------------------------- quantized (GGUF) */
/* GGML tensor types, with the numeric ids of the GGUF format. Quantized data is a sequence of
 * blocks (wk_qtype_block_elems elements in wk_qtype_block_bytes bytes each), byte-compatible with
 * llama.cpp, held in a u8 storage on any device. A quantized matrix (n, k) stores each of its n
 * rows as k / block_elems blocks. */
typedef enum wk_qtype {
    WK_QTYPE_F32 = 0,
    WK_QTYPE_F16 = 1,
    WK_QTYPE_Q4_0 = 2,
    WK_QTYPE_Q4_1 = 3,
    WK_QTYPE_Q5_0 = 6,
    WK_QTYPE_Q5_1 = 7,
    WK_QTYPE_Q8_0 = 8,
    WK_QTYPE_Q8_1 = 9,
    WK_QTYPE_Q2_K = 10,
    WK_QTYPE_Q3_K = 11,
    WK_QTYPE_Q4_K = 12,
    WK_QTYPE_Q5_K = 13,
    WK_QTYPE_Q6_K = 14,
    WK_QTYPE_Q8_K = 15,
    WK_QTYPE_BF16 = 30
} wk_qtype;
#define WK_QTYPE_LIMIT 31 /* every wk_qtype value is below this */
/* "q4_0", "q6_k", "f16", ...; "?" for a value that is not a wk_qtype. */
WK_API const char *wk_qtype_name(wk_qtype qt);
/* Elements per block (32 for Q4_0..Q8_1, 256 for the K types, 1 for F32/F16/BF16) and bytes per
 * block; 0 for a value that is not a wk_qtype. */
WK_API int64_t wk_qtype_block_elems(wk_qtype qt);
WK_API int64_t wk_qtype_block_bytes(wk_qtype qt);

/* Quantized ops (rules, error bounds and statuses: docs/semantics.md, "Quantized tensors").
 * The float side (dt, x) is f32, f16 or bf16. Every element decodes to one f32 value (the exact
 * block formula rounded once), then to dt. */
/* out (u8, (count / block_elems) * block_bytes bytes, on the CPU): x (f32, any layout, on the
 * CPU) quantized to qt in row-major element order. The element count must be a multiple of the
 * block size (WK_ERR_SHAPE); x on another device: WK_ERR_NOT_SUPPORTED (quantize on the CPU and
 * upload the bytes). */
WK_API wk_status wk_quantize(wk_storage **out, wk_qtype qt, const wk_storage *x,
                             const wk_layout *lx);
/* out (n elements of dt, on q's device) = the first n / block_elems blocks of q (u8) decoded. */
WK_API wk_status wk_dequantize(wk_storage **out, wk_dtype dt, const wk_storage *q, wk_qtype qt,
                               int64_t n);
/* out (..., m, n) of x's dtype = x (..., m, k) @ W^T, W (n, k) quantized to qt in w (u8, x's
 * device; each of its n rows is k / block_elems blocks). x has rank >= 1 and any layout. */
WK_API wk_status wk_qmatmul(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                            const wk_storage *w, wk_qtype qt, int64_t n, int64_t k);
/* out (ids dims..., k) of dt: row ids[i] of W (rows, k) quantized to qt in w, decoded. ids u8,
 * u32 or i64, any layout, index_select's rules: the dtype's maximum is "none" (a row of zeros),
 * any other id outside [0, rows) fails with WK_ERR_INDEX_OUT_OF_RANGE and writes nothing. */
WK_API wk_status wk_qembedding(wk_storage **out, wk_dtype dt, const wk_storage *ids,
                               const wk_layout *li, const wk_storage *w, wk_qtype qt,
                               int64_t rows, int64_t k);
/* Int8 activations: x (m, k) quantized once and read by any number of wk_qmatmul_act calls (a
 * decode step's norm produces them for the products that read its output: no quantization per
 * product). The rule is the one wk_qmatmul applies to x wherever it quantizes x (the CPU at every
 * row count, GPUs at m <= 8; docs/semantics.md "Int8 activations"): blocks of 32 contiguous
 * elements of a row, scale d = max|x| / 127 in f32, codes round(x * (1 / d)) (half away from
 * zero, in [-127, 127]; a block whose max|x| is below 2^-60 is scaled by 2^64 first); a block
 * holding a NaN or an infinity gets d = NaN and codes 0. The activations
 * are a u8 storage of wk_act_bytes(m, k) bytes, k a multiple of 32, little-endian:
 *   bytes [0, m k): the codes (int8), row-major;
 *   then m k / 32 f32 scales d, block b of row r at index r k / 32 + b;
 *   then m k / 32 words of half sums, the same indexing: the sum of the block's codes 0..15 as
 *   an int16 in the low half, of codes 16..31 in the high half. */
/* m k + 8 m k / 32 bytes; -1 when m or k is negative, k is not a multiple of 32 or the size
 * overflows. */
WK_API int64_t wk_act_bytes(int64_t m, int64_t k);
/* out (u8, wk_act_bytes(m, k), x's device) = x (..., k) quantized, m = the count of the other
 * dims; x f32, f16 or bf16, rank >= 1, any layout, k a multiple of 32. */
WK_API wk_status wk_quantize_act(wk_storage **out, const wk_storage *x, const wk_layout *lx);
/* wk_add_rms_norm plus act = wk_quantize_act(out), bit for bit, in one op: sum and out may be
 * NULL (not returned), act may not; D a multiple of 32. On failure no output is set. */
WK_API wk_status wk_add_rms_norm_act(wk_storage **sum, wk_storage **out, wk_storage **act,
                                     const wk_storage *x, const wk_layout *lx,
                                     const wk_storage *r, const wk_layout *lr,
                                     const wk_storage *alpha, const wk_layout *la, float eps);
/* act = wk_quantize_act(wk_binary(op, a, b)) bit for bit, in one op (decode's silu(gate) * up
 * before the down projection): op in WK_OP_ADD..WK_OP_GEGLU_ERF, a and b f32, f16 or bf16 with
 * wk_binary's rules, the last dim a multiple of 32. */
WK_API wk_status wk_binary_act(wk_storage **act, wk_op op, const wk_storage *a,
                               const wk_layout *la, const wk_storage *b, const wk_layout *lb);
/* out (m, n) of dt = the activations act (m rows of k: u8, wk_act_bytes(m, k) bytes or more) @
 * W^T, W (n, k) quantized to qt in w (act's device). Where wk_qmatmul quantizes x (CPU: every m
 * and block type; GPUs: m <= 8) wk_qmatmul_act(wk_quantize_act(x)) is wk_qmatmul(x) bit for
 * bit; elsewhere (F32/F16/BF16 weights, GPUs at m > 8) the activations are decoded (code x d,
 * rounded to dt once) and multiplied as wk_qmatmul multiplies x. */
WK_API wk_status wk_qmatmul_act(wk_storage **out, wk_dtype dt, const wk_storage *act, int64_t m,
                                const wk_storage *w, wk_qtype qt, int64_t n, int64_t k);
/* 1 if dev runs op (WK_OP_DEQUANTIZE, WK_OP_QMATMUL, WK_OP_QEMBEDDING, WK_OP_QMATMUL_ACT) for
 * block type qt with float dtype dt; 0 otherwise (an unknown value included). */
WK_API int wk_device_supports_quant(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt);

/* ---------------------------------------------------------------- GGUF files */
/* (after the quantized section because tensor infos carry a wk_qtype) */
/* GGUF v2/v3 (ggml's docs/gguf.md), little-endian. A reader maps the file read-only and checks
 * every count, length and offset against the file size before using it (a bad file gives
 * WK_ERR_FORMAT naming the field and its byte offset; a missing file WK_ERR_IO); strings, arrays
 * and tensor bytes are then read straight from the map. Limits and rules: docs/semantics.md. */
typedef struct wk_gguf wk_gguf;

/* Metadata value types, with the numeric ids of the format. */
typedef enum wk_gguf_type {
    WK_GGUF_TYPE_U8 = 0, WK_GGUF_TYPE_I8 = 1, WK_GGUF_TYPE_U16 = 2, WK_GGUF_TYPE_I16 = 3,
    WK_GGUF_TYPE_U32 = 4, WK_GGUF_TYPE_I32 = 5, WK_GGUF_TYPE_F32 = 6,
    WK_GGUF_TYPE_BOOL = 7,   /* one byte; 0 false, any other value true */
    WK_GGUF_TYPE_STRING = 8, /* u64 byte length + UTF-8 bytes, no NUL */
    WK_GGUF_TYPE_ARRAY = 9,  /* u32 element type + u64 count + elements (arrays may nest) */
    WK_GGUF_TYPE_U64 = 10, WK_GGUF_TYPE_I64 = 11, WK_GGUF_TYPE_F64 = 12
} wk_gguf_type;
#define WK_GGUF_TYPE_COUNT 13
#define WK_GGUF_MAX_DIMS 4        /* dims of a tensor */
#define WK_GGUF_MAX_DEPTH 8       /* arrays nested deeper than this are refused */
#define WK_GGUF_DEFAULT_ALIGNMENT 32
/* "u8", "string", "array", ...; "?" for an unknown value. */
WK_API const char *wk_gguf_type_name(wk_gguf_type t);
/* Bytes of one value of a scalar type (bool: 1); 0 for string, array and unknown values. */
WK_API size_t wk_gguf_type_size(wk_gguf_type t);

/* A metadata value of an open file (a kv pair's value, or an element of an array): a small
 * handle passed by value, valid while the file is open. Its fields are private. */
typedef struct wk_gguf_value {
    const wk_gguf *g;
    uint64_t pos;  /* byte offset of the value's payload in the file */
    int64_t node;  /* arrays: index of the array's record; else -1 */
    int32_t type;  /* wk_gguf_type */
} wk_gguf_value;

/* out: the parsed file at path (mapped, not copied). Close it with wk_gguf_close. */
WK_API wk_status wk_gguf_open(wk_gguf **out, const char *path);
/* Unmaps and frees. Storages loaded from the file stay valid. NULL is a no-op. */
WK_API void wk_gguf_close(wk_gguf *g);
WK_API uint32_t wk_gguf_version(const wk_gguf *g);   /* 2 or 3 */
WK_API uint32_t wk_gguf_alignment(const wk_gguf *g); /* general.alignment, else 32 */
WK_API uint64_t wk_gguf_data_offset(const wk_gguf *g); /* byte offset of the data section */
WK_API uint64_t wk_gguf_file_size(const wk_gguf *g);

/* ---- metadata (kv pairs in file order; keys are unique) */
WK_API int64_t wk_gguf_kv_count(const wk_gguf *g);
/* Key of pair i, NUL-terminated (keys holding a NUL byte are refused at open); NULL if i is out
 * of range. Valid while the file is open. */
WK_API const char *wk_gguf_key(const wk_gguf *g, int64_t i);
/* Index of the pair with this key, or -1. O(log n). */
WK_API int64_t wk_gguf_find_key(const wk_gguf *g, const char *key);
/* out: the value of pair i (WK_ERR_INDEX_OUT_OF_RANGE if i is not in [0, kv_count)). */
WK_API wk_status wk_gguf_kv_value(wk_gguf_value *out, const wk_gguf *g, int64_t i);
WK_API wk_gguf_type wk_gguf_value_type(wk_gguf_value v);
/* Scalar getters: WK_ERR_DTYPE if the value is not of exactly that type (no conversions). */
WK_API wk_status wk_gguf_get_u8(uint8_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_i8(int8_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_u16(uint16_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_i16(int16_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_u32(uint32_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_i32(int32_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_u64(uint64_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_i64(int64_t *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_f32(float *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_f64(double *out, wk_gguf_value v);
WK_API wk_status wk_gguf_get_bool(int *out, wk_gguf_value v); /* 0 or 1 */
/* *s, *len: the string's bytes inside the map (not NUL-terminated; may hold any byte). */
WK_API wk_status wk_gguf_get_string(const char **s, uint64_t *len, wk_gguf_value v);
/* Arrays: element type and count (WK_ERR_DTYPE if v is not an array). */
WK_API wk_status wk_gguf_array_info(wk_gguf_type *elem_type, uint64_t *count, wk_gguf_value v);
/* out: element i of array v, O(1) for every element type. */
WK_API wk_status wk_gguf_array_elem(wk_gguf_value *out, wk_gguf_value v, uint64_t i);
/* *data: the packed little-endian elements of an array of scalars, inside the map (possibly
 * unaligned: read them with memcpy). WK_ERR_DTYPE for arrays of strings or arrays. */
WK_API wk_status wk_gguf_array_data(const void **data, wk_gguf_value v);

/* ---- tensors (in file order; names are unique) */
typedef struct wk_gguf_tensor_info {
    const char *name;   /* NUL-terminated, valid while the file is open */
    int32_t n_dims;     /* 1..WK_GGUF_MAX_DIMS */
    int64_t ne[WK_GGUF_MAX_DIMS];   /* as stored, innermost first: ne[0] is the row length;
                                       entries past n_dims are 1 */
    int64_t dims[WK_GGUF_MAX_DIMS]; /* outermost first, as wick and Candle order them:
                                       dims[k] = ne[n_dims - 1 - k]; entries past n_dims are 1 */
    wk_qtype qtype;
    int64_t elems;      /* product of the dims */
    uint64_t offset;    /* bytes from the start of the data section (a multiple of the alignment) */
    uint64_t nbytes;    /* elems / block_elems * block_bytes */
} wk_gguf_tensor_info;
WK_API int64_t wk_gguf_tensor_count(const wk_gguf *g);
/* out: the facts of tensor i (WK_ERR_INDEX_OUT_OF_RANGE if i is not in [0, tensor_count)). */
WK_API wk_status wk_gguf_tensor_info_get(wk_gguf_tensor_info *out, const wk_gguf *g, int64_t i);
/* Index of the tensor with this name, or -1. O(log n). */
WK_API int64_t wk_gguf_find_tensor(const wk_gguf *g, const char *name);
/* The tensor's nbytes bytes inside the map (aligned only to the file's alignment); NULL if i is
 * out of range. */
WK_API const void *wk_gguf_tensor_data(const wk_gguf *g, int64_t i);
/* out: tensor i on dev: F32, F16 and BF16 tensors as storages of that dtype (elems elements),
 * quantized ones as a u8 storage of their nbytes block bytes. */
WK_API wk_status wk_gguf_load_tensor(wk_storage **out, const wk_gguf *g, int64_t i, wk_device *dev);

/* ---- writer: collects kv pairs and tensors, then writes the file in llama.cpp's layout (kv
 * pairs and tensors in the order added, each tensor's data padded with zeros to the alignment).
 * The alignment is the u32 value of a "general.alignment" pair if one is added (a power of two),
 * else 32. Keys and tensor names must be unique; tensor names shorter than 64 bytes (ggml's
 * limit). Tensor bytes are referenced, not copied: they must stay valid until the write. */
typedef struct wk_gguf_writer wk_gguf_writer;
WK_API wk_status wk_gguf_writer_new(wk_gguf_writer **out);
WK_API void wk_gguf_writer_free(wk_gguf_writer *w); /* NULL is a no-op */
/* Adds pair (key, value) where value points to one value of the scalar type (C types: uint8_t,
 * int8_t, ..., float, double; bool: a uint8_t 0 or 1). While an array is open (begin_array),
 * key must be NULL and the value becomes the array's next element (type = its element type). */
WK_API wk_status wk_gguf_writer_add(wk_gguf_writer *w, const char *key, wk_gguf_type type,
                                    const void *value);
/* Same for a string of len bytes (any bytes; s may be NULL when len is 0). */
WK_API wk_status wk_gguf_writer_add_string(wk_gguf_writer *w, const char *key, const char *s,
                                           uint64_t len);
/* A whole array in one call: count elements of a scalar elem_type packed in elems (C types as
 * for _add), or for WK_GGUF_TYPE_STRING elems is a `const char *const *` of NUL-terminated
 * strings. Also an element of an open array of arrays (key NULL). */
WK_API wk_status wk_gguf_writer_add_array(wk_gguf_writer *w, const char *key, wk_gguf_type elem_type,
                                          const void *elems, uint64_t count);
/* Opens an array built element by element (any element type, arrays of arrays included, up to
 * WK_GGUF_MAX_DEPTH levels); end_array closes the innermost open one. */
WK_API wk_status wk_gguf_writer_begin_array(wk_gguf_writer *w, const char *key, wk_gguf_type elem_type);
WK_API wk_status wk_gguf_writer_end_array(wk_gguf_writer *w);
/* Adds a tensor: dims (n_dims 1..4, each >= 1) outermost first as wick orders them (written
 * innermost first); the innermost dim a multiple of the qtype's block; nbytes must equal the
 * tensor's block bytes. */
WK_API wk_status wk_gguf_writer_add_tensor(wk_gguf_writer *w, const char *name, wk_qtype qtype,
                                           int32_t n_dims, const int64_t *dims, const void *data,
                                           uint64_t nbytes);
/* Writes the file (version 2 or 3; the two share the little-endian layout), replacing path
 * atomically (docs/semantics.md, "Files"): a reader sees the old file or the new one, and on a
 * failure (WK_ERR_IO: a full disk, ...; WK_ERR_OUT_OF_MEMORY) the old file is unchanged and no
 * temporary file is left. */
WK_API wk_status wk_gguf_writer_write(const wk_gguf_writer *w, const char *path, uint32_t version);


/* ---------------------------------------------------------------- safetensors files */
/* The safetensors format (Hugging Face): an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}})
 * padded with spaces, then the data section. A reader maps the file read-only, parses the header
 * with jansson and checks it as the reference implementation does before anything is read: header
 * at most 100,000,000 bytes and inside the file, valid UTF-8 JSON starting with '{', no duplicate
 * names, known dtypes, each tensor's byte size (shape x dtype) equal to its offsets, and the
 * tensors covering the data section exactly (no overlap, no gap, nothing past the end). A bad file
 * gives WK_ERR_FORMAT naming the tensor and field; a missing file WK_ERR_IO. Rules:
 * docs/semantics.md ("safetensors files"). */
typedef struct wk_safetensors wk_safetensors;

typedef struct wk_safetensors_tensor_info {
    const char *name;       /* NUL-terminated UTF-8, valid while the file is open */
    const char *dtype_name; /* as in the file: "F32", "BF16", "BOOL", "F8_E5M2", ... */
    int32_t has_dtype;      /* 1 if it loads as a wick dtype (BOOL loads as u8), else 0 */
    wk_dtype dtype;         /* that dtype when has_dtype is 1 */
    int32_t rank;           /* 0..WK_MAX_RANK (rank 0: a scalar, one element) */
    int64_t dims[WK_MAX_RANK]; /* outermost first; entries past rank are 1 */
    int64_t elems;          /* product of the dims */
    uint64_t offset;        /* bytes from the start of the data section */
    uint64_t nbytes;
} wk_safetensors_tensor_info;

/* out: the parsed file at path (mapped, not copied). Close it with wk_safetensors_close. */
WK_API wk_status wk_safetensors_open(wk_safetensors **out, const char *path);
/* Unmaps and frees. Storages loaded from the file stay valid. NULL is a no-op. */
WK_API void wk_safetensors_close(wk_safetensors *st);
WK_API uint64_t wk_safetensors_file_size(const wk_safetensors *st);
WK_API uint64_t wk_safetensors_data_offset(const wk_safetensors *st); /* 8 + N */
/* Tensors in data order (ascending offsets); names are unique. */
WK_API int64_t wk_safetensors_tensor_count(const wk_safetensors *st);
/* out: the facts of tensor i (WK_ERR_INDEX_OUT_OF_RANGE if i is not in [0, tensor_count)). */
WK_API wk_status wk_safetensors_tensor_info_get(wk_safetensors_tensor_info *out,
                                                const wk_safetensors *st, int64_t i);
/* Index of the tensor with this name, or -1. O(log n). */
WK_API int64_t wk_safetensors_find_tensor(const wk_safetensors *st, const char *name);
/* The tensor's nbytes bytes inside the map (aligned as the file happens to be: read them with
 * memcpy); NULL if i is out of range. */
WK_API const void *wk_safetensors_tensor_data(const wk_safetensors *st, int64_t i);
/* out: tensor i on dev as dtype `to` (contiguous, elems elements): the file's values converted
 * with wk_to_dtype's rules on the device when `to` differs from the tensor's dtype.
 * WK_ERR_NOT_SUPPORTED for a dtype wick does not have (has_dtype 0). */
WK_API wk_status wk_safetensors_load_tensor(wk_storage **out, const wk_safetensors *st, int64_t i,
                                            wk_device *dev, wk_dtype to);
/* The "__metadata__" pairs (string keys and values), in file order. */
WK_API int64_t wk_safetensors_metadata_count(const wk_safetensors *st);
/* *key, *value: pair i, NUL-terminated, valid while the file is open. */
WK_API wk_status wk_safetensors_metadata_get(const char **key, const char **value,
                                             const wk_safetensors *st, int64_t i);
/* The value of a metadata key, or NULL. */
WK_API const char *wk_safetensors_metadata_find(const wk_safetensors *st, const char *key);

/* ---- writer: collects metadata and tensors, then writes a file the Python package writes byte
 * for byte (tensors ordered by dtype as it orders them, then by name; the JSON compact; the
 * header padded with spaces to a multiple of 8 bytes). Names and metadata must be valid UTF-8;
 * tensor names unique and not "__metadata__". Tensor bytes are referenced, not copied: they must
 * stay valid until the write. */
typedef struct wk_safetensors_writer wk_safetensors_writer;
WK_API wk_status wk_safetensors_writer_new(wk_safetensors_writer **out);
WK_API void wk_safetensors_writer_free(wk_safetensors_writer *w); /* NULL is a no-op */
WK_API wk_status wk_safetensors_writer_add_metadata(wk_safetensors_writer *w, const char *key,
                                                    const char *value);
/* dims (rank 0..WK_MAX_RANK, each >= 0) outermost first; nbytes must equal the element count
 * times wk_dtype_size(dtype); data may be NULL when nbytes is 0. */
WK_API wk_status wk_safetensors_writer_add_tensor(wk_safetensors_writer *w, const char *name,
                                                  wk_dtype dtype, int32_t rank,
                                                  const int64_t *dims, const void *data,
                                                  uint64_t nbytes);
/* Writes the file, replacing path atomically as wk_gguf_writer_write does (docs/semantics.md,
 * "Files"): on a failure the old file is unchanged and no temporary file is left. */
WK_API wk_status wk_safetensors_writer_write(const wk_safetensors_writer *w, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* WICK_H */
