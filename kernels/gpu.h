/* gpu.h: the one portability header of wick's kernels (DESIGN.md section 3).
 *
 * Kernels are CUDA-dialect C++ compiled by nvcc (NVIDIA), hipcc (clang, AMD) and at run time by
 * NVRTC / hipRTC, where no system header exists. This header maps the few vendor names (integer
 * types, warp shuffles, ballots, vector load types), and holds what every kernel family shares:
 * dtype and op ids (equal to wick.h's), per-dtype load/store through fpconv.h (reduced-precision
 * types compute in f32 and round once), the float->int saturating rule, the strided layout
 * argument and the vectorised contiguous loops.
 *
 * Three platforms: CUDA (nvcc, NVRTC), HIP (hipcc, hipRTC) and simt (WK_SIMT: the host C++
 * compiler, for the simt driver of src/simt that runs kernels on the CPU; src/simt/simt_kernel.h
 * maps the CUDA names there).
 *
 * Warp size is a run-time fact (64 on CDNA/GCN, 32 on RDNA and NVIDIA): code here uses warpSize
 * and never assumes 32. No fast-math intrinsics; inline assembly only with a portable twin (the
 * matrix-unit section at the end). */
#ifndef WK_GPU_H
#define WK_GPU_H

/* ---- fixed-width integers: no <stdint.h> under the run-time compilers. The typedefs name the
 * same types as the other declarations that may meet them there (hipRTC's own int32/int64 and
 * the stdint.h stand-in of src/gpu/gpu_rtc.c under NVRTC), so redeclarations agree. */
#if defined(WK_SIMT)
#include "simt_kernel.h"
#elif defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef unsigned long uintptr_t;
#elif defined(__HIPCC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef signed int int32_t;
typedef unsigned int uint32_t;
typedef signed long long int64_t;
typedef unsigned long long uint64_t;
typedef __UINTPTR_TYPE__ uintptr_t;
#else
#include <stdint.h>
#endif

#if defined(__HIP__) || defined(__HIPCC__) || defined(__HIPCC_RTC__)
#define WK_HIP 1
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
/* The flags say -ffp-contract=off; this makes the run-time compile agree even without them. */
#pragma clang fp contract(off)
#endif

#include "fpconv.h"

/* ---- vendor names */
#if defined(WK_SIMT)
#define WK_KERNEL WK_SIMT_KERNEL
#define WK_KERNEL_MINB(n) WK_SIMT_KERNEL
#else
#define WK_KERNEL extern "C" __global__ void __launch_bounds__(256)
/* WK_KERNEL_MINB(n): WK_KERNEL asking the compiler to fit n blocks of 256 threads per SM (CUDA's
 * minBlocksPerMultiprocessor: a register cap of 65536 / (256 n)). HIP's 2-argument form means
 * something else (amdgpu_waves_per_eu: waves per SIMD), so there it is the plain bound. */
#if defined(WK_HIP)
#define WK_KERNEL_MINB(n) extern "C" __global__ void __launch_bounds__(256)
#else
#define WK_KERNEL_MINB(n) extern "C" __global__ void __launch_bounds__(256, n)
#endif
#endif /* !WK_SIMT */
#define WK_DEV static __device__ __forceinline__
#define WK_BLOCK 256 /* every kernel runs with blocks of 256 threads (a multiple of 32 and 64) */

/* WK_SHFL_DOWN: lane i gets lane i+d's value (its own past the warp's end); every lane of the
 * warp must take part. WK_SHFL_XOR: lane i gets lane i^m's value; for m < 32 the exchange stays
 * inside aligned groups of 32 lanes, so a reduction over offsets 16..1 is the same on a wave of
 * 32 and of 64. WK_SHFL_IDX: each lane gets lane s's value (its own s, in [0, warpSize): the
 * hardware lane within the warp; values of 4 or 8 bytes). WK_BALLOT: a 64-bit mask, lane k =
 * bit k, for 32 and 64 lanes alike. */
#if defined(WK_SIMT)
#define WK_SHFL_DOWN(v, d) wk_simt_shfl_down_t((v), (d))
#define WK_SHFL_XOR(v, m) wk_simt_shfl_xor_t((v), (m))
#define WK_SHFL_IDX(v, s) wk_simt_shfl_idx_t((v), (s))
#define WK_BALLOT(p) wk_simt_ballot((p) ? 1 : 0)
typedef struct { unsigned int x, y; } __attribute__((aligned(8))) wk_u32x2;
typedef struct { unsigned int x, y, z, w; } __attribute__((aligned(16))) wk_u32x4;
#elif defined(WK_HIP)
#define WK_SHFL_DOWN(v, d) __shfl_down((v), (d))
#define WK_SHFL_XOR(v, m) __shfl_xor((v), (m))
#define WK_SHFL_IDX(v, s) __shfl((v), (s))
#define WK_BALLOT(p) ((uint64_t)__ballot(p))
typedef unsigned int wk_u32x2 __attribute__((ext_vector_type(2)));
typedef unsigned int wk_u32x4 __attribute__((ext_vector_type(4)));
#else
#define WK_SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#define WK_SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))
#define WK_SHFL_IDX(v, s) __shfl_sync(0xffffffffu, (v), (s))
#define WK_BALLOT(p) ((uint64_t)__ballot_sync(0xffffffffu, (p)))
typedef uint2 wk_u32x2;
typedef uint4 wk_u32x4;
#endif

/* WK_SHARED_DYN(T, name): the block's dynamic shared memory (the launch's shmem bytes) as T name[]. */
#if defined(WK_SIMT)
#define WK_SHARED_DYN(T, name) WK_SIMT_SHARED_DYN(T, name)
#else
#define WK_SHARED_DYN(T, name) extern __shared__ T name[]
#endif

/* ---- dtype ids: the values of wk_dtype (include/wick.h). */
enum {
    WK_DT_U8 = 0, WK_DT_U32 = 1, WK_DT_I16 = 2, WK_DT_I32 = 3, WK_DT_I64 = 4,
    WK_DT_BF16 = 5, WK_DT_F16 = 6, WK_DT_F32 = 7, WK_DT_F64 = 8, WK_DT_F8E4M3 = 9
};

/* ---- op ids: the values of wk_op (include/wick.h). */
enum {
    WK_K_EXP = 0, WK_K_LOG = 1, WK_K_SIN = 2, WK_K_COS = 3, WK_K_TANH = 4, WK_K_ABS = 5,
    WK_K_NEG = 6, WK_K_RECIP = 7, WK_K_SQR = 8, WK_K_SQRT = 9, WK_K_GELU = 10,
    WK_K_GELU_ERF = 11, WK_K_ERF = 12, WK_K_RELU = 13, WK_K_SILU = 14, WK_K_FLOOR = 15,
    WK_K_CEIL = 16, WK_K_ROUND = 17, WK_K_SIGN = 18, WK_K_SIGMOID = 19, WK_K_AFFINE = 20,
    WK_K_POWF = 21, WK_K_ELU = 22,
    WK_K_ADD = 30, WK_K_SUB = 31, WK_K_MUL = 32, WK_K_DIV = 33, WK_K_MAXIMUM = 34,
    WK_K_MINIMUM = 35, WK_K_SWIGLU = 36, WK_K_GEGLU = 37, WK_K_GEGLU_ERF = 38,
    WK_K_EQ = 40, WK_K_NE = 41, WK_K_LT = 42, WK_K_LE = 43, WK_K_GT = 44, WK_K_GE = 45,
    WK_K_SUM = 60, WK_K_MIN = 61, WK_K_MAX = 62, WK_K_ARGMIN = 63, WK_K_ARGMAX = 64
};

WK_DEV float wk_inf_f32(void) { return __int_as_float(0x7f800000); }
WK_DEV double wk_inf_f64(void) { return __longlong_as_double(0x7ff0000000000000ll); }

/* ---- per-dtype facts. S: storage type; C: compute type (float for bf16/f16/f8e4m3/f32, double
 * for f64, int64_t for every integer type: loads sign- or zero-extend, stores truncate, which is
 * the two's-complement wrap of docs/semantics.md). */
template <int D> struct wk_t;
#define WK_INT_TRAIT(D, ST, LO, HI)                                        \
    template <> struct wk_t<D> {                                           \
        typedef ST S;                                                      \
        typedef int64_t C;                                                 \
        enum { is_int = 1 };                                               \
        WK_DEV C ld(S v) { return (C)v; }                                  \
        WK_DEV S st(C v) { return (S)v; }                                  \
        WK_DEV double lo(void) { return LO; }                              \
        WK_DEV double hi(void) { return HI; }                              \
    };
WK_INT_TRAIT(WK_DT_U8, uint8_t, 0.0, 255.0)
WK_INT_TRAIT(WK_DT_U32, uint32_t, 0.0, 4294967295.0)
WK_INT_TRAIT(WK_DT_I16, int16_t, -32768.0, 32767.0)
WK_INT_TRAIT(WK_DT_I32, int32_t, -2147483648.0, 2147483647.0)
WK_INT_TRAIT(WK_DT_I64, int64_t, -9223372036854775808.0, 9223372036854775807.0)
#undef WK_INT_TRAIT

#define WK_FLOAT_TRAIT(D, ST, CT, LD, ST_)                                 \
    template <> struct wk_t<D> {                                           \
        typedef ST S;                                                      \
        typedef CT C;                                                      \
        enum { is_int = 0 };                                               \
        WK_DEV C ld(S v) { return LD; }                                    \
        WK_DEV S st(C v) { return ST_; }                                   \
    };
WK_FLOAT_TRAIT(WK_DT_BF16, uint16_t, float, wk_fp_bf16_to_f32(v), wk_fp_f32_to_bf16(v))
WK_FLOAT_TRAIT(WK_DT_F16, uint16_t, float, wk_fp_f16_to_f32(v), wk_fp_f32_to_f16(v))
WK_FLOAT_TRAIT(WK_DT_F32, float, float, v, v)
WK_FLOAT_TRAIT(WK_DT_F64, double, double, v, v)
WK_FLOAT_TRAIT(WK_DT_F8E4M3, uint8_t, float, wk_fp_f8e4m3_to_f32(v), wk_fp_f32_to_f8e4m3(v))
#undef WK_FLOAT_TRAIT

/* float -> integer (Rust's `as`): NaN -> 0, truncation toward zero, saturation at the type's
 * range (inf included). Written out: an out-of-range conversion is undefined in C++. Every
 * float type reaches here as a double, which holds it exactly. */
template <int D> WK_DEV int64_t wk_sat(double v)
{
    if (v != v)
        return 0;
    if (v <= wk_t<D>::lo())
        return (int64_t)wk_t<D>::lo();
    if (D == WK_DT_I64 && v >= 9223372036854775808.0) /* 2^63: past INT64_MAX */
        return (int64_t)0x7fffffffffffffffll;
    if (D != WK_DT_I64 && v >= wk_t<D>::hi())
        return (int64_t)wk_t<D>::hi();
    return (int64_t)v;
}
/* The same with a run-time dtype. */
WK_DEV int64_t wk_sat_dt(int dt, double v)
{
    switch (dt) {
    case WK_DT_U8: return wk_sat<WK_DT_U8>(v);
    case WK_DT_U32: return wk_sat<WK_DT_U32>(v);
    case WK_DT_I16: return wk_sat<WK_DT_I16>(v);
    case WK_DT_I32: return wk_sat<WK_DT_I32>(v);
    default: return wk_sat<WK_DT_I64>(v);
    }
}

/* ---- run-time dtype loads and stores, for the generic (strided) kernels of one compute class:
 * the f32 class (bf16 f16 f32 f8e4m3) and the integer class (u8 u32 i16 i32 i64). */
WK_DEV float wk_ldf(const void *p, int64_t i, int dt)
{
    switch (dt) {
    case WK_DT_BF16: return wk_fp_bf16_to_f32(((const uint16_t *)p)[i]);
    case WK_DT_F16: return wk_fp_f16_to_f32(((const uint16_t *)p)[i]);
    case WK_DT_F8E4M3: return wk_fp_f8e4m3_to_f32(((const uint8_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}
WK_DEV void wk_stf(void *p, int64_t i, int dt, float v)
{
    switch (dt) {
    case WK_DT_BF16: ((uint16_t *)p)[i] = wk_fp_f32_to_bf16(v); break;
    case WK_DT_F16: ((uint16_t *)p)[i] = wk_fp_f32_to_f16(v); break;
    case WK_DT_F8E4M3: ((uint8_t *)p)[i] = wk_fp_f32_to_f8e4m3(v); break;
    default: ((float *)p)[i] = v; break;
    }
}
WK_DEV int64_t wk_ldi(const void *p, int64_t i, int dt)
{
    switch (dt) {
    case WK_DT_U8: return ((const uint8_t *)p)[i];
    case WK_DT_U32: return ((const uint32_t *)p)[i];
    case WK_DT_I16: return ((const int16_t *)p)[i];
    case WK_DT_I32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}
WK_DEV void wk_sti(void *p, int64_t i, int dt, int64_t v)
{
    switch (dt) {
    case WK_DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case WK_DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case WK_DT_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case WK_DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = v; break;
    }
}

/* ---- strided layouts, passed by value. The host folds the layout offset into the pointer and
 * collapses the dims; N inputs of equal dims share dims and have a row of strides each. `small`
 * is set by the host when the element count and every input's largest offset fit in int32: the
 * index arithmetic then runs in 32 bits (several times cheaper than 64-bit division).
 * Mirrored by wk_klay1/2/3 in src/gpu/gpu_ops.h. */
#define WK_KMAX_RANK 8
template <int N> struct wk_klay {
    int32_t rank; /* >= 1 */
    int32_t small;
    int64_t dims[WK_KMAX_RANK];
    int64_t st[N][WK_KMAX_RANK];
};

/* off[n]: element offset of row-major linear index i in input n. The 32-bit loop is unrolled
 * with constant indices so the by-value argument stays in parameter space. */
template <int N> WK_DEV void wk_koff(const wk_klay<N> &L, int64_t i, int64_t *off)
{
    if (L.small) {
        uint32_t r = (uint32_t)i;
        uint32_t o[N];
#pragma unroll
        for (int n = 0; n < N; n++)
            o[n] = 0;
#pragma unroll
        for (int k = WK_KMAX_RANK - 1; k >= 1; k--) {
            if (k < L.rank) {
                const uint32_t d = (uint32_t)L.dims[k];
                const uint32_t q = r / d;
                const uint32_t c = r - q * d;
#pragma unroll
                for (int n = 0; n < N; n++)
                    o[n] += c * (uint32_t)L.st[n][k];
                r = q;
            }
        }
#pragma unroll
        for (int n = 0; n < N; n++)
            off[n] = (int64_t)(o[n] + r * (uint32_t)L.st[n][0]);
    } else {
        /* Rare (past 2^31): a rolled loop keeps the code small (64-bit division is long). */
        int64_t r = i;
#pragma unroll
        for (int n = 0; n < N; n++)
            off[n] = 0;
#pragma unroll 1
        for (int k = L.rank - 1; k >= 1; k--) {
            const int64_t d = L.dims[k];
            const int64_t q = r / d;
            const int64_t c = r - q * d;
#pragma unroll
            for (int n = 0; n < N; n++)
                off[n] += c * L.st[n][k];
            r = q;
        }
#pragma unroll
        for (int n = 0; n < N; n++)
            off[n] += r * L.st[n][0];
    }
}

/* ---- grid-stride loops */
WK_DEV int64_t wk_tid(void) { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
WK_DEV int64_t wk_nthreads(void) { return (int64_t)gridDim.x * blockDim.x; }

/* ---- vector loads: B bytes as one load (B in 1, 2, 4, 8, 16). */
template <int B> struct wk_raw;
template <> struct wk_raw<1> { typedef uint8_t T; };
template <> struct wk_raw<2> { typedef uint16_t T; };
template <> struct wk_raw<4> { typedef uint32_t T; };
template <> struct wk_raw<8> { typedef wk_u32x2 T; };
template <> struct wk_raw<16> { typedef wk_u32x4 T; };
/* N elements of T, loaded and stored as one B = N*sizeof(T) byte access. */
template <class T, int N> union wk_pack {
    typename wk_raw<(int)sizeof(T) * N>::T raw;
    T v[N];
};

/* N elements of T from p (aligned to the access width) into v, in accesses of up to 16 bytes. */
template <class T, int N> WK_DEV void wk_ldv(const T *p, T *v)
{
    const int E = N * (int)sizeof(T) > 16 ? 16 / (int)sizeof(T) : N; /* elements per access */
#pragma unroll
    for (int s = 0; s < N / E; s++) {
        wk_pack<T, E> a;
        a.raw = ((const wk_pack<T, E> *)p)[s].raw;
#pragma unroll
        for (int k = 0; k < E; k++)
            v[s * E + k] = a.v[k];
    }
}

#define WK_MAX2(a, b) ((a) > (b) ? (a) : (b))

/* The contiguous loops below run U = 4 vectors per thread and step, all loads issued before any
 * use (more independent 16-byte loads in flight per thread), then the vector remainder and the
 * scalar tail. */
#define WK_UNROLL 4

/* y[i] = f(x[i]) for i < n, contiguous. Vector accesses of 16 bytes (of the wider type) when
 * both pointers allow it, scalar otherwise and for the tail. */
template <class TI, class TO, class F>
WK_DEV void wk_map1(int64_t n, const TI *__restrict__ x, TO *__restrict__ y, const F &f)
{
    const int N = 16 / (int)WK_MAX2(sizeof(TI), sizeof(TO));
    const int64_t t0 = wk_tid(), nt = wk_nthreads();
    int64_t done = 0;
    if ((uintptr_t)x % (N * sizeof(TI)) == 0 && (uintptr_t)y % (N * sizeof(TO)) == 0) {
        const int64_t nv = n / N;
        const wk_pack<TI, N> *xv = (const wk_pack<TI, N> *)x;
        wk_pack<TO, N> *yv = (wk_pack<TO, N> *)y;
        int64_t v = t0;
        for (; v + (WK_UNROLL - 1) * nt < nv; v += WK_UNROLL * nt) {
            wk_pack<TI, N> a[WK_UNROLL];
#pragma unroll
            for (int u = 0; u < WK_UNROLL; u++)
                a[u].raw = xv[v + u * nt].raw;
#pragma unroll
            for (int u = 0; u < WK_UNROLL; u++) {
                wk_pack<TO, N> b;
#pragma unroll
                for (int k = 0; k < N; k++)
                    b.v[k] = f(a[u].v[k]);
                yv[v + u * nt].raw = b.raw;
            }
        }
        for (; v < nv; v += nt) {
            wk_pack<TI, N> a;
            wk_pack<TO, N> b;
            a.raw = xv[v].raw;
#pragma unroll
            for (int k = 0; k < N; k++)
                b.v[k] = f(a.v[k]);
            yv[v].raw = b.raw;
        }
        done = nv * N;
    }
    for (int64_t i = done + t0; i < n; i += nt)
        y[i] = f(x[i]);
}

/* y[i] = f(a[i], b[i]) for i < n, contiguous, vectorised and unrolled like wk_map1. */
template <class TI, class TO, class F>
WK_DEV void wk_map2(int64_t n, const TI *__restrict__ a, const TI *__restrict__ b,
                    TO *__restrict__ y, const F &f)
{
    const int N = 16 / (int)WK_MAX2(sizeof(TI), sizeof(TO));
    const int64_t t0 = wk_tid(), nt = wk_nthreads();
    int64_t done = 0;
    if ((uintptr_t)a % (N * sizeof(TI)) == 0 && (uintptr_t)b % (N * sizeof(TI)) == 0 &&
        (uintptr_t)y % (N * sizeof(TO)) == 0) {
        const int64_t nv = n / N;
        const wk_pack<TI, N> *av = (const wk_pack<TI, N> *)a;
        const wk_pack<TI, N> *bv = (const wk_pack<TI, N> *)b;
        wk_pack<TO, N> *yv = (wk_pack<TO, N> *)y;
        int64_t v = t0;
        for (; v + (WK_UNROLL - 1) * nt < nv; v += WK_UNROLL * nt) {
            wk_pack<TI, N> p[WK_UNROLL], q[WK_UNROLL];
#pragma unroll
            for (int u = 0; u < WK_UNROLL; u++) {
                p[u].raw = av[v + u * nt].raw;
                q[u].raw = bv[v + u * nt].raw;
            }
#pragma unroll
            for (int u = 0; u < WK_UNROLL; u++) {
                wk_pack<TO, N> r;
#pragma unroll
                for (int k = 0; k < N; k++)
                    r.v[k] = f(p[u].v[k], q[u].v[k]);
                yv[v + u * nt].raw = r.raw;
            }
        }
        for (; v < nv; v += nt) {
            wk_pack<TI, N> p, q;
            wk_pack<TO, N> r;
            p.raw = av[v].raw;
            q.raw = bv[v].raw;
#pragma unroll
            for (int k = 0; k < N; k++)
                r.v[k] = f(p.v[k], q.v[k]);
            yv[v].raw = r.raw;
        }
        done = nv * N;
    }
    for (int64_t i = done + t0; i < n; i += nt)
        y[i] = f(a[i], b[i]);
}

/* ---- inner-contiguous strided layouts: the last collapsed dim has stride 1 in every input
 * (a row broadcast [1,R] -> [R,R], a slice of rows, ...). The elements split into runs ("units")
 * of up to V along a row; one 32-bit division per unit finds its row, the row's base offsets
 * come from the outer dims only (none for rank 2), and the run is contiguous in every input and
 * in the contiguous output, so it can move as one vector access. */
template <int N> WK_DEV bool wk_inner_contig(const wk_klay<N> &L)
{
    bool ok = true;
#pragma unroll
    for (int k = 0; k < WK_KMAX_RANK; k++)
        if (k == L.rank - 1) {
#pragma unroll
            for (int n = 0; n < N; n++)
                ok = ok && L.st[n][k] == 1;
        }
    return ok;
}

/* The inner dim (the row length W). */
template <int N> WK_DEV int64_t wk_inner_dim(const wk_klay<N> &L)
{
    int64_t w = 1;
#pragma unroll
    for (int k = 0; k < WK_KMAX_RANK; k++)
        if (k == L.rank - 1)
            w = L.dims[k];
    return w;
}

/* Iterates over the units of an inner-contiguous layout of n elements (grid-stride):
 * calls f(i, off, cnt) with the output index i of the unit's first element, the inputs' offsets
 * off[N] of it, and cnt (1..V) elements, contiguous everywhere. */
template <int N, int V, class F> WK_DEV void wk_rows(int64_t n, const wk_klay<N> &L, F &f)
{
    const int64_t W = wk_inner_dim(L);
    if (W == 0)
        return;
    const int64_t cpr = (W + V - 1) / V, units = n / W * cpr;
    for (int64_t u = wk_tid(); u < units; u += wk_nthreads()) {
        int64_t r, c;
        if (L.small) {
            const uint32_t q = (uint32_t)u / (uint32_t)cpr;
            r = q;
            c = (int64_t)((uint32_t)u - q * (uint32_t)cpr) * V;
        } else {
            r = u / cpr;
            c = (u - r * cpr) * V;
        }
        /* base offsets of row r over dims 0 .. rank-2 */
        int64_t off[N];
        int64_t rr = r;
#pragma unroll
        for (int m = 0; m < N; m++)
            off[m] = 0;
#pragma unroll
        for (int k = WK_KMAX_RANK - 2; k >= 1; k--) {
            if (k < L.rank - 1) {
                const int64_t d = L.dims[k];
                int64_t q2, cc;
                if (L.small) {
                    q2 = (uint32_t)rr / (uint32_t)d;
                    cc = rr - q2 * d;
                } else {
                    q2 = rr / d;
                    cc = rr - q2 * d;
                }
#pragma unroll
                for (int m = 0; m < N; m++)
                    off[m] += cc * L.st[m][k];
                rr = q2;
            }
        }
        if (L.rank >= 2) {
#pragma unroll
            for (int m = 0; m < N; m++)
                off[m] += rr * L.st[m][0];
        }
#pragma unroll
        for (int m = 0; m < N; m++)
            off[m] += c;
        const int64_t left = W - c;
        f(r * W + c, off, left < V ? (int)left : V);
    }
}

/* Adapts a per-element body e(i, off) to the units of wk_rows. */
template <int N, class E> struct wk_each_unit {
    const E &e;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off, int cnt) const
    {
        for (int k = 0; k < cnt; k++) {
            int64_t o[N];
#pragma unroll
            for (int m = 0; m < N; m++)
                o[m] = off[m] + k;
            e(i + k, o);
        }
    }
};

/* The generic strided loop: e(i, off) for every output index i < n, off[N] the inputs'
 * element offsets. Inner-contiguous layouts go by rows (no division per element). */
template <int N, class E> WK_DEV void wk_strided_each(int64_t n, const wk_klay<N> &L, const E &e)
{
    if (wk_inner_contig(L)) {
        wk_each_unit<N, E> f = {e};
        wk_rows<N, 4>(n, L, f);
        return;
    }
    for (int64_t i = wk_tid(); i < n; i += wk_nthreads()) {
        int64_t off[N];
        wk_koff(L, i, off);
        e(i, off);
    }
}

/* Element-size classes for kernels that only move bits. */
template <int B> struct wk_bits;
template <> struct wk_bits<1> { typedef uint8_t T; };
template <> struct wk_bits<2> { typedef uint16_t T; };
template <> struct wk_bits<4> { typedef uint32_t T; };
template <> struct wk_bits<8> { typedef uint64_t T; };
template <> struct wk_bits<16> { typedef wk_u32x4 T; };

/* ---- device-side errors (src/gpu/gpu_impl.h, wk_gpu_error_word): word points at the device's
 * record {code, detail}; the first error wins. The host reports it at the next synchronizing
 * call as WK_ERR_INDEX_OUT_OF_RANGE. Codes as in gpu_impl.h. */
enum {
    WK_KERR_INDEX_SELECT = 1, WK_KERR_GATHER = 2, WK_KERR_SCATTER_SET = 3,
    WK_KERR_SCATTER_ADD_SET = 4, WK_KERR_INDEX_ADD = 5, WK_KERR_QEMBEDDING = 6,
    WK_KERR_DECODE_ATTENTION = 7, /* a key count of wk_decode_attention_lens */
    WK_KERR_ROPE_KV_APPEND = 8    /* a position of wk_rope_kv_append */
};
WK_DEV void wk_kerr(uint32_t *word, uint32_t code, uint64_t detail)
{
    if (atomicCAS(word, 0u, code) == 0u)
        word[1] = (uint32_t)detail;
}

/* ---- WK_DP4A(a, b, c): c + the sum of the 4 products of the signed bytes of the 32-bit words
 * a and b (byte k with byte k), int32 wrapping (the quantized dot products of kernels/quant.cu).
 * NVIDIA: __dp4a (sm_61 and later). AMD: v_dot4_i32_i8 through __builtin_amdgcn_sdot4 (clamp
 * off) on the targets with clang's "dot1-insts" feature; each gfx target of cmake/gpu.cmake was
 * compiled with it under Debian's clang 15: gfx906 gfx908 gfx90a gfx940 gfx1011 gfx1012
 * gfx1030..gfx1036 have it, gfx900 902 904 909 90c 1010 1013 do not. gfx941/gfx942 share
 * gfx940's instruction set. Everywhere else: the plain sum of products, the same result. */
#if defined(WK_HIP) &&                                                                         \
    (defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || \
     defined(__gfx941__) || defined(__gfx942__) || defined(__gfx1011__) ||                      \
     defined(__gfx1012__) || defined(__gfx1030__) || defined(__gfx1031__) ||                    \
     defined(__gfx1032__) || defined(__gfx1033__) || defined(__gfx1034__) ||                    \
     defined(__gfx1035__) || defined(__gfx1036__))
#define WK_DP4A(a, b, c) __builtin_amdgcn_sdot4((int)(a), (int)(b), (int)(c), false)
#elif !defined(WK_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 610
#define WK_DP4A(a, b, c) __dp4a((int)(a), (int)(b), (int)(c))
#else
WK_DEV int wk_dp4a_plain(int a, int b, int c)
{
#pragma unroll
    for (int k = 0; k < 4; k++)
        c += (int)(signed char)(a >> (8 * k)) * (int)(signed char)(b >> (8 * k));
    return c;
}
#define WK_DP4A(a, b, c) wk_dp4a_plain((int)(a), (int)(b), (int)(c))
#endif

/* f16 to f32 by the GPU's conversion instruction where it has one (PTX cvt.f32.f16 on NVIDIA,
 * nvcc and NVRTC; AMD's v_cvt_f32_f16 through clang's _Float16, hipcc and hipRTC), fpconv.h's
 * integer form on the simt device. Every f16 value, subnormals included, is an f32 value, so
 * all three give the same bits for every number; a NaN stays a NaN of its sign (its payload is
 * the instruction's business), so these serve products and sums, not copies (kernels/attn.h's
 * keys and values, qmv.cu's pmv, quant.h's block scales, the matrix-unit twins' f16 inputs).
 *   wk_cvt_f16_f32(h)             the f16 in the low 16 bits of h
 *   wk_cvt_f16x2_f32(w, lo, hi)   the two f16 of a 32-bit word, the low half first */
WK_DEV float wk_cvt_f16_f32(uint32_t h)
{
#if !defined(WK_SIMT) && !defined(WK_HIP) && defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)h));
    return f;
#elif defined(WK_HIP) && (defined(__HIP_DEVICE_COMPILE__) || defined(__HIPCC_RTC__))
    return (float)__builtin_bit_cast(_Float16, (uint16_t)h);
#else /* the simt device (and hipcc's host pass, which runs nothing) */
    return wk_fp_f16_to_f32((uint16_t)h);
#endif
}
WK_DEV void wk_cvt_f16x2_f32(uint32_t w, float &lo, float &hi)
{
    lo = wk_cvt_f16_f32(w & 0xFFFFu);
    hi = wk_cvt_f16_f32(w >> 16);
}

/* ---- matrix units: D = A B + C for one 16 x 8 x 16 fragment of a warp (PTX's
 * mma.sync.m16n8k16.row.col with f32 accumulation), A and B f16 (BF = 0) or bf16 (BF = 1).
 * The fragments live in the 32 lanes of a group, lane l holding (g = l / 4, t = l % 4; 16-bit
 * values in pairs, the lower index in the low half of a 32-bit word):
 *   a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]    a[2] = A[g][2t+8..2t+9]
 *   a[3] = A[g+8][2t+8..2t+9]
 *   b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]
 *   c[0..1] = C[g][2t..2t+1] c[2..3] = C[g+8][2t..2t+1]
 * WK_MMA_NATIVE is 1 where the instruction runs (NVIDIA sm_80 and later, nvcc and NVRTC); there
 * wk_ldsm_x4 / wk_ldsm_x4_t (ldmatrix, plain and transposed) also load four 8 x 8 matrices of
 * 16-bit values from shared memory into fragment registers. Everywhere else (the simt device,
 * AMD, NVIDIA before sm_80) wk_mma_16816 is the portable twin: the same fragment product from
 * warp shuffles and f32 fma, in k order, and kernels load fragments with plain shared-memory
 * reads instead of ldmatrix (kernels/gemm.h shows both). Products of two f16 or bf16 values
 * are exact in f32; only the rounding of the sums differs (the hardware's order and inner
 * rounding are unspecified), within the error bound of a k-term f32 sum.
 * 64-lane waves: a fragment belongs to an aligned group of 32 lanes; lanes 0-31 and 32-63 of a
 * wave hold separate fragments and the twin's shuffles never leave the group, so a kernel that
 * takes threadIdx.x / 32 as its warp index is the same with 32- and 64-lane warps. (CDNA's MFMA
 * is a product of the whole 64-lane wave with other fragment shapes: wk_mfma_16x16x16 below.) */
#if !defined(WK_SIMT) && !defined(WK_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define WK_MMA_NATIVE 1
#else
#define WK_MMA_NATIVE 0
#endif

template <int BF> WK_DEV float wk_mma_in(uint32_t h)
{
    return BF ? wk_fp_bf16_to_f32((uint16_t)h) : wk_cvt_f16_f32(h);
}

/* The twin, out of line: its body is long, and a kernel's loops over many fragment products
 * must still unroll (clang declines past its size threshold). Values in and out, so that the
 * accumulators stay in registers. */
typedef struct { float v[4]; } wk_mma_acc;
template <int BF>
static __device__ __attribute__((noinline)) wk_mma_acc wk_mma_twin(wk_mma_acc c, uint64_t a01,
                                                                  uint64_t a23, uint64_t b01)
{
    const int hw = ((int)threadIdx.x % warpSize) & ~31; /* the group's first lane in the warp */
    const int l = (int)threadIdx.x & 31, g = l >> 2, t = l & 3;
    float x0[16], x1[16], y0[16], y1[16]; /* rows g, g+8 of A; columns 2t, 2t+1 of B; by k */
#pragma unroll
    for (int j = 0; j < 4; j++) { /* from lane (g, j): A; from lanes (2t, j), (2t+1, j): B */
        const uint64_t p = WK_SHFL_IDX(a01, hw | g << 2 | j);
        const uint64_t q = WK_SHFL_IDX(a23, hw | g << 2 | j);
        const uint64_t u = WK_SHFL_IDX(b01, hw | (2 * t) << 2 | j);
        const uint64_t v = WK_SHFL_IDX(b01, hw | (2 * t + 1) << 2 | j);
#pragma unroll
        for (int h = 0; h < 2; h++) { /* k = 2j + h and 2j + 8 + h */
            x0[2 * j + h] = wk_mma_in<BF>((uint32_t)(p >> 16 * h) & 0xffffu);
            x1[2 * j + h] = wk_mma_in<BF>((uint32_t)(p >> (32 + 16 * h)) & 0xffffu);
            x0[2 * j + 8 + h] = wk_mma_in<BF>((uint32_t)(q >> 16 * h) & 0xffffu);
            x1[2 * j + 8 + h] = wk_mma_in<BF>((uint32_t)(q >> (32 + 16 * h)) & 0xffffu);
            y0[2 * j + h] = wk_mma_in<BF>((uint32_t)(u >> 16 * h) & 0xffffu);
            y0[2 * j + 8 + h] = wk_mma_in<BF>((uint32_t)(u >> (32 + 16 * h)) & 0xffffu);
            y1[2 * j + h] = wk_mma_in<BF>((uint32_t)(v >> 16 * h) & 0xffffu);
            y1[2 * j + 8 + h] = wk_mma_in<BF>((uint32_t)(v >> (32 + 16 * h)) & 0xffffu);
        }
    }
#pragma unroll
    for (int k = 0; k < 16; k++) {
        c.v[0] = fmaf(x0[k], y0[k], c.v[0]);
        c.v[1] = fmaf(x0[k], y1[k], c.v[1]);
        c.v[2] = fmaf(x1[k], y0[k], c.v[2]);
        c.v[3] = fmaf(x1[k], y1[k], c.v[3]);
    }
    return c;
}

template <int BF> WK_DEV void wk_mma_16816(float *c, const uint32_t *a, const uint32_t *b)
{
#if WK_MMA_NATIVE
    if (BF)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    wk_mma_acc r = {{c[0], c[1], c[2], c[3]}};
    r = wk_mma_twin<BF>(r, a[0] | (uint64_t)a[1] << 32, a[2] | (uint64_t)a[3] << 32,
                        b[0] | (uint64_t)b[1] << 32);
    c[0] = r.v[0], c[1] = r.v[1], c[2] = r.v[2], c[3] = r.v[3];
#endif
}

/* ---- int8 matrix units: C += A B for one 16 x 8 x 32 fragment of signed bytes with int32
 * sums (PTX's mma.sync.m16n8k32.row.col.s32.s8.s8.s32), lane l of a 32-lane group holding
 * (g = l / 4, t = l % 4; four bytes per word, the lower k in the lower byte):
 *   a[0] = A[g][4t..4t+3]      a[1] = A[g+8][4t..4t+3]
 *   a[2] = A[g][16+4t..16+4t+3] a[3] = A[g+8][16+4t..16+4t+3]
 *   b[0] = B[4t..4t+3][g]      b[1] = B[16+4t..16+4t+3][g]
 *   c[0..1] = C[g][2t..2t+1]   c[2..3] = C[g+8][2t..2t+1]
 * Native where WK_MMA_NATIVE is; elsewhere the twin gathers the rows and columns by shuffles
 * (inside the aligned 32-lane group, so 64-lane waves hold two fragments) and sums them with
 * WK_DP4A. Integer sums are exact (|sum| <= 32 * 128 * 128 per product), so both give the same
 * bits. */
typedef struct { int v[4]; } wk_imma_acc;
static __device__ __attribute__((noinline)) wk_imma_acc wk_imma_twin(wk_imma_acc c, uint64_t a01,
                                                                    uint64_t a23, uint64_t b01)
{
    const int hw = ((int)threadIdx.x % warpSize) & ~31;
    const int l = (int)threadIdx.x & 31, g = l >> 2, t = l & 3;
#pragma unroll
    for (int j = 0; j < 4; j++) { /* words j of A's rows g, g+8 and of B's columns 2t, 2t+1 */
        const uint64_t p = WK_SHFL_IDX(a01, hw | g << 2 | j);    /* k 4j..: row g | row g+8 */
        const uint64_t q = WK_SHFL_IDX(a23, hw | g << 2 | j);    /* k 16+4j.. */
        const uint64_t u = WK_SHFL_IDX(b01, hw | (2 * t) << 2 | j); /* k 4j.. | 16+4j.. */
        const uint64_t v = WK_SHFL_IDX(b01, hw | (2 * t + 1) << 2 | j);
        const uint32_t p0 = (uint32_t)p, p1 = (uint32_t)(p >> 32);
        const uint32_t q0 = (uint32_t)q, q1 = (uint32_t)(q >> 32);
        const uint32_t u0 = (uint32_t)u, u1 = (uint32_t)(u >> 32);
        const uint32_t v0 = (uint32_t)v, v1 = (uint32_t)(v >> 32);
        c.v[0] = WK_DP4A(q0, u1, WK_DP4A(p0, u0, c.v[0]));
        c.v[1] = WK_DP4A(q0, v1, WK_DP4A(p0, v0, c.v[1]));
        c.v[2] = WK_DP4A(q1, u1, WK_DP4A(p1, u0, c.v[2]));
        c.v[3] = WK_DP4A(q1, v1, WK_DP4A(p1, v0, c.v[3]));
    }
    return c;
}

WK_DEV void wk_imma_16832(int *c, const uint32_t *a, const uint32_t *b)
{
#if WK_MMA_NATIVE
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    wk_imma_acc r = {{c[0], c[1], c[2], c[3]}};
    r = wk_imma_twin(r, a[0] | (uint64_t)a[1] << 32, a[2] | (uint64_t)a[3] << 32,
                     b[0] | (uint64_t)b[1] << 32);
    c[0] = r.v[0], c[1] = r.v[1], c[2] = r.v[2], c[3] = r.v[3];
#endif
}

/* Two e4m3 values (the low byte first) widened to two f16 values (the first in the low half),
 * exactly: PTX's cvt.rn.f16x2.e4m3x2 on NVIDIA sm_90 and later (one instruction, F2FP; sm_89
 * has it too, but its SASS comes from the sm_80 PTX: cmake/gpu.cmake), the integer conversion
 * of fpconv.h (wk_fp_f8e4m3_to_f16) twice elsewhere. Every e4m3 value is an f16 value, so both
 * give the same bits, NaN aside (both a quiet NaN of that sign). */
WK_DEV uint32_t wk_f8x2_to_f16x2(uint16_t two)
{
#if !defined(WK_SIMT) && !defined(WK_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t r;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(two));
    return r;
#else
    return (uint32_t)wk_fp_f8e4m3_to_f16((uint8_t)two) |
           (uint32_t)wk_fp_f8e4m3_to_f16((uint8_t)(two >> 8)) << 16;
#endif
}

/* The transpose of an 8 x 8 matrix of 16-bit values held as the fragments above hold one (lane
 * (g, t) of a 32-lane group: M[g][2t..2t+1] in x): returns M[2t][g] | M[2t + 1][g] << 16, i.e.
 * its share of the transpose in the same layout (PTX movmatrix.m8n8.trans on NVIDIA sm_80+; two
 * shuffles inside the group elsewhere). */
WK_DEV uint32_t wk_movm_t(uint32_t x)
{
#if WK_MMA_NATIVE
    uint32_t r;
    asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(x));
    return r;
#else
    const int hw = ((int)threadIdx.x % warpSize) & ~31, l = (int)threadIdx.x & 31;
    const int g = l >> 2, t = l & 3, sh = (g & 1) * 16;
    const uint32_t a = WK_SHFL_IDX(x, hw | (2 * t) << 2 | g >> 1);
    const uint32_t b = WK_SHFL_IDX(x, hw | (2 * t + 1) << 2 | g >> 1);
    return (a >> sh & 0xffffu) | (b >> sh & 0xffffu) << 16;
#endif
}

/* ---- matrix units of 64-lane waves: D = A B + C for one 16 x 16 x 16 product of a whole wave
 * (CDNA's v_mfma_f32_16x16x16f16 / _16x16x16bf16_1k with f32 accumulation), A and B f16 (BF = 0)
 * or bf16 (BF = 1). Lane l of the wave (c = l % 16, q = l / 16) holds four 16-bit values in a
 * 64-bit word, the lowest index in the low bits:
 *   a = A[c][4q..4q+3]    b = B[4q..4q+3][c]    d[v] = D[4q+v][c], v = 0..3
 * (AMD's documented register layout for these instructions.) WK_MFMA_NATIVE is 1 on the CDNA
 * targets that have them (gfx908 f16 only, gfx90a and gfx94x f16 and bf16); elsewhere
 * wk_mfma_16x16x16 is its twin, which needs warpSize == 64 (the simt device with 64-lane warps:
 * that is where this layout is tested): 20 shuffles and 64 f32 fma per lane, the sum of each
 * output in k order. Products of f16 or bf16 values are exact in f32; only the rounding of the
 * sums can differ from the hardware's. */
#if defined(WK_HIP) && (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) ||     \
                        defined(__gfx942__))
#define WK_MFMA_NATIVE 1
#define WK_MFMA_NATIVE_BF16 1
#elif defined(WK_HIP) && defined(__gfx908__)
#define WK_MFMA_NATIVE 1
#define WK_MFMA_NATIVE_BF16 0
#else
#define WK_MFMA_NATIVE 0
#define WK_MFMA_NATIVE_BF16 0
#endif

template <int BF>
static __device__ __attribute__((noinline)) wk_mma_acc wk_mfma_twin(wk_mma_acc d, uint64_t a,
                                                                   uint64_t b)
{
    const int l = (int)threadIdx.x & 63, c = l & 15, q = l >> 4;
    float y[16]; /* column c of B, by k: items 0..3 of lanes c, c + 16, c + 32, c + 48 */
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint64_t u = WK_SHFL_IDX(b, c | j << 4);
#pragma unroll
        for (int h = 0; h < 4; h++)
            y[4 * j + h] = wk_mma_in<BF>((uint32_t)(u >> 16 * h) & 0xffffu);
    }
#pragma unroll
    for (int v = 0; v < 4; v++) { /* row 4q + v of A: items 0..3 of lanes 4q + v + 16 j */
        float x[16];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint64_t p = WK_SHFL_IDX(a, (4 * q + v) | j << 4);
#pragma unroll
            for (int h = 0; h < 4; h++)
                x[4 * j + h] = wk_mma_in<BF>((uint32_t)(p >> 16 * h) & 0xffffu);
        }
#pragma unroll
        for (int k = 0; k < 16; k++)
            d.v[v] = fmaf(x[k], y[k], d.v[v]);
    }
    return d;
}

template <int BF> WK_DEV void wk_mfma_16x16x16(float *d, uint64_t a, uint64_t b)
{
#if WK_MFMA_NATIVE
    if (!BF || WK_MFMA_NATIVE_BF16) {
        typedef float f4 __attribute__((ext_vector_type(4)));
        typedef short s4 __attribute__((ext_vector_type(4)));
        typedef _Float16 h4 __attribute__((ext_vector_type(4)));
        f4 c = {d[0], d[1], d[2], d[3]};
#if WK_MFMA_NATIVE_BF16
        if (BF)
            c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(s4, a),
                                                          __builtin_bit_cast(s4, b), c, 0, 0, 0);
        else
#endif
            c = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(h4, a),
                                                      __builtin_bit_cast(h4, b), c, 0, 0, 0);
        d[0] = c[0], d[1] = c[1], d[2] = c[2], d[3] = c[3];
        return;
    }
#endif
    wk_mma_acc r = {{d[0], d[1], d[2], d[3]}};
    r = wk_mfma_twin<BF>(r, a, b);
    d[0] = r.v[0], d[1] = r.v[1], d[2] = r.v[2], d[3] = r.v[3];
}

#if WK_MMA_NATIVE
/* The shared-memory address of p (a pointer into shared memory), for ldmatrix and cp.async.
 * By the compiler's intrinsic, not inline cvta: it knows p's shared origin, so the kernels'
 * address arithmetic stays in 32-bit shared offsets (with cvta in asm every fragment address
 * was computed as a 64-bit generic pointer first: six instructions per ldmatrix in gemm_pipe_128x256). */
WK_DEV uint32_t wk_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
/* r[i] <- matrix i of four 8 x 8 matrices of 16-bit values: lane 8i + j gives the address of
 * row j of matrix i (16 bytes, 16-byte aligned); lane (g, t) receives row g, columns 2t..2t+1
 * (wk_ldsm_x4), or rows 2t..2t+1 of column g (wk_ldsm_x4_t, the transpose). */
WK_DEV void wk_ldsm_x4(uint32_t *r, const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(wk_smem_addr(row)));
}
WK_DEV void wk_ldsm_x4_t(uint32_t *r, const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(wk_smem_addr(row)));
}
#endif

/* ---- asynchronous copies from global to shared memory, 16 bytes each: wk_cp_async16(dst, src,
 * full) copies the 16 bytes at src (global, 16-byte aligned) to dst (shared, 16-byte aligned)
 * when full, else writes 16 zero bytes to dst and reads nothing (src must still be a valid
 * address: pass the operand's base). wk_cp_async_commit() closes the group of the copies issued
 * since the last one; wk_cp_async_wait<N>() waits until at most N groups are still in flight
 * (the caller's own copies; a barrier after it makes them visible to the block). NVIDIA sm_80+:
 * cp.async.cg (through L2 only) with its zero-fill size operand, commit_group, wait_group.
 * Everywhere else (the simt device, AMD, NVIDIA before sm_80) the twin: a plain 16-byte load
 * and store at the call, commit and wait do nothing; the data is in place when the same barrier
 * is passed, so a pipelined kernel gives the same result either way. */
#if WK_MMA_NATIVE
WK_DEV void wk_cp_async16(void *dst, const void *src, bool full)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :
                 : "r"(wk_smem_addr(dst)), "l"(src), "r"(full ? 16 : 0)
                 : "memory");
}
WK_DEV void wk_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> WK_DEV void wk_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#else
WK_DEV void wk_cp_async16(void *dst, const void *src, bool full)
{
    wk_pack<uint32_t, 4> v;
    if (full)
        v.raw = ((const wk_pack<uint32_t, 4> *)src)->raw;
    else
        v.v[0] = v.v[1] = v.v[2] = v.v[3] = 0u;
    ((wk_pack<uint32_t, 4> *)dst)->raw = v.raw;
}
WK_DEV void wk_cp_async_commit() {}
template <int N> WK_DEV void wk_cp_async_wait() {}
#endif

/* ---- early launch (gpu_impl.h's WK_LAUNCH_EARLY: programmatic dependent launch on NVIDIA
 * sm_90+). A kernel launched early may begin while the stream's previous kernel still runs.
 * Every block of it must pass WK_GRID_WAIT() (which returns once the previous kernels are
 * complete and their writes visible) before it reads or writes memory other work may use;
 * before it, a block may only compute from its arguments and WK_PREFETCH_L2(p): a hint that
 * brings the 128-byte line of p into L2 without reading a value (L2 is where every write of the
 * device lands, so a line fetched early is never stale). WK_GRID_LAUNCH_DEPENDENTS(): from this
 * block's side the next early kernel may begin (it still waits in its WK_GRID_WAIT for the
 * whole of this one). Everywhere else (before sm_90, AMD, the simt device) the stream runs
 * kernels one after another and all three do nothing. */
#if !defined(WK_SIMT) && !defined(WK_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WK_GRID_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define WK_GRID_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define WK_PREFETCH_L2(p) asm volatile("prefetch.global.L2 [%0];" ::"l"(p))
#else
#define WK_GRID_WAIT() ((void)0)
#define WK_GRID_LAUNCH_DEPENDENTS() ((void)0)
#define WK_PREFETCH_L2(p) ((void)(p))
#endif

#endif /* WK_GPU_H */
