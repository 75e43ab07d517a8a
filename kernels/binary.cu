/* binary.cu: elementwise binary ops (add sub mul div maximum minimum, and the gated swiglu geglu
 * geglu_erf = act(a) * b; same dtype out) and comparisons (eq ne lt le gt ge, u8 out) (module
 * "binary").
 *
 * Kernels (host side: src/gpu/gpu_binary.c):
 *   binary_<op>_<dt>(n, a, b, y)               both inputs contiguous, dt in f32 f16 bf16,
 *                                              arithmetic ops only (the hot paths, vectorised)
 *   binary_rows_<op>_<dt>(n, L, a, b, y)       inner dim contiguous in both inputs (row
 *                                              broadcasts), hot ops and dtypes, vectorised
 *   binary_float(op, dt, n, L, a, b, y)        any layouts; bf16 f16 f32 f8e4m3 (f32 compute)
 *   binary_f64  (op, dt, n, L, a, b, y)        any layouts, f64
 *   binary_int  (op, dt, n, L, a, b, y)        any layouts; u8 u32 i16 i32 i64 (int64 compute)
 *   binary_act  (op, dt, n, L, a, b, act)      any layouts, f32 f16 bf16, arithmetic ops: only
 *                                              the int8 activations of y (wk_binary_act; qact.h's
 *                                              team rule on y rounded to dt, wick.h's layout)
 *   binary_act_rows(op, dt, n, kk, a, ars, b, brs, vec, act)  the same where both inputs are
 *                                              rows of kk contiguous elements (row strides ars,
 *                                              brs; vec: 16-byte f32 loads): no index division
 *                                              per element (the gate and up halves of decode)
 * L holds the joint collapsed layout of a (row 0) and b (row 1). y is contiguous, of dtype dt,
 * or u8 for a comparison. Pointers already include the layout offsets. */
#include "act.h"
#include "qact.h"

/* Floats: maximum/minimum propagate NaN (the first operand's if both are NaN), as the CPU. */
template <class T> WK_DEV T wk_binary_fp(int op, T x, T y)
{
    switch (op) {
    case WK_K_ADD: return x + y;
    case WK_K_SUB: return x - y;
    case WK_K_MUL: return x * y;
    case WK_K_DIV: return x / y;
    case WK_K_MAXIMUM: return x != x ? x : y != y ? y : x > y ? x : y;
    case WK_K_MINIMUM: return x != x ? x : y != y ? y : x < y ? x : y;
    /* gated: the activation in the compute type (act.h, as the unary ops), times y */
    case WK_K_SWIGLU: return wk_silu(x) * y;
    case WK_K_GEGLU: return wk_gelu(x) * y;
    case WK_K_GEGLU_ERF: return wk_gelu_erf(x) * y;
    default: return x;
    }
}

/* Integers on sign- or zero-extended values: wrapping add/sub/mul in uint64_t (truncation on
 * store wraps at the dtype's width); div truncates, x/0 = 0, MIN/-1 = MIN (as -MIN, wrapping).
 * A u32 value is never -1 here: it is zero-extended. */
WK_DEV int64_t wk_binary_int(int op, int64_t x, int64_t y)
{
    switch (op) {
    case WK_K_ADD: return (int64_t)((uint64_t)x + (uint64_t)y);
    case WK_K_SUB: return (int64_t)((uint64_t)x - (uint64_t)y);
    case WK_K_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
    case WK_K_DIV: return y == 0 ? 0 : y == -1 ? (int64_t)(0ull - (uint64_t)x) : x / y;
    case WK_K_MAXIMUM: return x > y ? x : y;
    case WK_K_MINIMUM: return x < y ? x : y;
    default: return x;
    }
}

/* IEEE comparisons: false with a NaN, except ne. */
template <class T> WK_DEV uint8_t wk_cmp(int op, T x, T y)
{
    switch (op) {
    case WK_K_EQ: return x == y;
    case WK_K_NE: return x != y;
    case WK_K_LT: return x < y;
    case WK_K_LE: return x <= y;
    case WK_K_GT: return x > y;
    default: return x >= y;
    }
}

/* ---- contiguous, op and dtype fixed at compile time */
template <int OP, int DT> struct wk_binary_fn {
    __device__ __forceinline__ typename wk_t<DT>::S operator()(typename wk_t<DT>::S a,
                                                               typename wk_t<DT>::S b) const
    {
        return wk_t<DT>::st(wk_binary_fp<float>(OP, wk_t<DT>::ld(a), wk_t<DT>::ld(b)));
    }
};

#define WK_BINARY_HOT(name, OP, dtn, DT)                                                       \
    WK_KERNEL binary_##name##_##dtn(int64_t n, const void *a, const void *b, void *y)          \
    {                                                                                          \
        WK_GRID_WAIT(); /* launched early (gpu_binary.c) */                                    \
        WK_GRID_LAUNCH_DEPENDENTS(); /* the next early kernel may start */                     \
        wk_map2(n, (const wk_t<DT>::S *)a, (const wk_t<DT>::S *)b, (wk_t<DT>::S *)y,           \
                wk_binary_fn<OP, DT>());                                                       \
    }
#define WK_BINARY_OPS(X, dtn, DT)                                                              \
    X(add, WK_K_ADD, dtn, DT) X(sub, WK_K_SUB, dtn, DT) X(mul, WK_K_MUL, dtn, DT)              \
    X(div, WK_K_DIV, dtn, DT) X(maximum, WK_K_MAXIMUM, dtn, DT)                                \
    X(minimum, WK_K_MINIMUM, dtn, DT) X(swiglu, WK_K_SWIGLU, dtn, DT)                          \
    X(geglu, WK_K_GEGLU, dtn, DT) X(geglu_erf, WK_K_GEGLU_ERF, dtn, DT)

WK_BINARY_OPS(WK_BINARY_HOT, f32, WK_DT_F32)
WK_BINARY_OPS(WK_BINARY_HOT, f16, WK_DT_F16)
WK_BINARY_OPS(WK_BINARY_HOT, bf16, WK_DT_BF16)

/* ---- inner-contiguous layouts (a row broadcast, ...), op and dtype fixed at compile time:
 * runs of 16 bytes move as vectors when every address allows it. */
template <int OP, int DT> struct wk_binary_row {
    typedef typename wk_t<DT>::S S;
    enum { V = 16 / sizeof(S) };
    const S *a, *b;
    S *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off, int cnt) const
    {
        const S *pa = a + off[0], *pb = b + off[1];
        S *py = y + i;
        const wk_binary_fn<OP, DT> f;
        if (cnt == V && ((uintptr_t)pa | (uintptr_t)pb | (uintptr_t)py) % 16 == 0) {
            wk_pack<S, V> p, q, r;
            p.raw = ((const wk_pack<S, V> *)pa)->raw;
            q.raw = ((const wk_pack<S, V> *)pb)->raw;
#pragma unroll
            for (int k = 0; k < V; k++)
                r.v[k] = f(p.v[k], q.v[k]);
            ((wk_pack<S, V> *)py)->raw = r.raw;
        } else {
            for (int k = 0; k < cnt; k++)
                py[k] = f(pa[k], pb[k]);
        }
    }
};

#define WK_BINARY_ROWS(name, OP, dtn, DT)                                                      \
    WK_KERNEL binary_rows_##name##_##dtn(int64_t n, wk_klay<2> L, const void *a, const void *b, \
                                         void *y)                                              \
    {                                                                                          \
        wk_binary_row<OP, DT> f = {(const wk_t<DT>::S *)a, (const wk_t<DT>::S *)b,             \
                                   (wk_t<DT>::S *)y};                                          \
        wk_rows<2, 16 / sizeof(wk_t<DT>::S)>(n, L, f);                                         \
    }
WK_BINARY_OPS(WK_BINARY_ROWS, f32, WK_DT_F32)
WK_BINARY_OPS(WK_BINARY_ROWS, f16, WK_DT_F16)
WK_BINARY_OPS(WK_BINARY_ROWS, bf16, WK_DT_BF16)

/* ---- any layouts, op and dtype at run time (one kernel per compute class) */
struct wk_binary_float_el {
    int op, dt;
    const void *a, *b;
    void *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        const float x = wk_ldf(a, off[0], dt), z = wk_ldf(b, off[1], dt);
        if (op >= WK_K_EQ)
            ((uint8_t *)y)[i] = wk_cmp<float>(op, x, z);
        else
            wk_stf(y, i, dt, wk_binary_fp<float>(op, x, z));
    }
};
WK_KERNEL binary_float(int op, int dt, int64_t n, wk_klay<2> L, const void *a, const void *b,
                       void *y)
{
    const wk_binary_float_el e = {op, dt, a, b, y};
    wk_strided_each(n, L, e);
}

struct wk_binary_f64_el {
    int op;
    const double *a, *b;
    void *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        const double x = a[off[0]], z = b[off[1]];
        if (op >= WK_K_EQ)
            ((uint8_t *)y)[i] = wk_cmp<double>(op, x, z);
        else
            ((double *)y)[i] = wk_binary_fp<double>(op, x, z);
    }
};
WK_KERNEL binary_f64(int op, int dt, int64_t n, wk_klay<2> L, const void *a, const void *b,
                     void *y)
{
    (void)dt; /* f64: the signature of the other classes */
    const wk_binary_f64_el e = {op, (const double *)a, (const double *)b, y};
    wk_strided_each(n, L, e);
}

struct wk_binary_int_el {
    int op, dt;
    const void *a, *b;
    void *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        const int64_t x = wk_ldi(a, off[0], dt), z = wk_ldi(b, off[1], dt);
        if (op >= WK_K_EQ)
            ((uint8_t *)y)[i] = wk_cmp<int64_t>(op, x, z);
        else
            wk_sti(y, i, dt, wk_binary_int(op, x, z));
    }
};
WK_KERNEL binary_int(int op, int dt, int64_t n, wk_klay<2> L, const void *a, const void *b,
                     void *y)
{
    const wk_binary_int_el e = {op, dt, a, b, y};
    wk_strided_each(n, L, e);
}

/* ---- the activations of y = a op b (wk_binary_act): task i of n / 4 is elements 4 i .. 4 i + 3
 * of y (rows of k, k a multiple of 32: one block's 8 tasks lie in 8 aligned lanes, as in qmvq),
 * each rounded to dt as wk_binary stores it; every thread runs the same trips (the team
 * shuffles). */
WK_DEV float wk_round_to(int dt, float v)
{
    return dt == WK_DT_F16    ? wk_fp_f16_to_f32(wk_fp_f32_to_f16(v))
           : dt == WK_DT_BF16 ? wk_fp_bf16_to_f32(wk_fp_f32_to_bf16(v))
                              : v;
}
/* Task i's 4 values (rounded to dt) -> the team rule -> stored to the activations at act. */
WK_DEV void wk_binary_act_store(int64_t i, int64_t total, const float (&v)[4], uint8_t *act,
                                int64_t n)
{
    uint32_t word, hs;
    float d;
    wk_qmvq_team(v, word, d, hs);
    if (i < total) {
        ((uint32_t *)act)[i] = word;
        if ((i & 7) == 0) {
            ((float *)(act + n))[i >> 3] = d;
            ((uint32_t *)(act + n + n / 8))[i >> 3] = hs;
        }
    }
}

WK_KERNEL binary_act_rows(int op, int dt, int64_t n, int64_t kk, const void *a, int64_t ars,
                          const void *b, int64_t brs, int vec, uint8_t *act)
{
    WK_GRID_WAIT(); /* launched early (gpu_binary.c) */
    WK_GRID_LAUNCH_DEPENDENTS();
    const int64_t total = n / 4, step = wk_nthreads();
    const int64_t lim = (total + step - 1) / step * step;
    for (int64_t i = wk_tid(); i < lim; i += step) {
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (i < total) {
            const int64_t r = 4 * i / kk, c = 4 * i - r * kk;
            const int64_t oa = r * ars + c, ob = r * brs + c;
            float x[4], z[4];
            if (vec) { /* f32, 16-byte aligned runs */
                const wk_u32x4 p = *(const wk_u32x4 *)((const float *)a + oa);
                const wk_u32x4 q = *(const wk_u32x4 *)((const float *)b + ob);
                x[0] = __uint_as_float(p.x), x[1] = __uint_as_float(p.y);
                x[2] = __uint_as_float(p.z), x[3] = __uint_as_float(p.w);
                z[0] = __uint_as_float(q.x), z[1] = __uint_as_float(q.y);
                z[2] = __uint_as_float(q.z), z[3] = __uint_as_float(q.w);
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    x[e] = wk_ldf(a, oa + e, dt), z[e] = wk_ldf(b, ob + e, dt);
            }
#pragma unroll
            for (int e = 0; e < 4; e++)
                v[e] = wk_round_to(dt, wk_binary_fp<float>(op, x[e], z[e]));
        }
        wk_binary_act_store(i, total, v, act, n);
    }
}

WK_KERNEL binary_act(int op, int dt, int64_t n, wk_klay<2> L, const void *a, const void *b,
                     uint8_t *act)
{
    WK_GRID_WAIT(); /* launched early (gpu_binary.c) */
    WK_GRID_LAUNCH_DEPENDENTS();
    const int64_t total = n / 4, step = wk_nthreads();
    const int64_t lim = (total + step - 1) / step * step;
    for (int64_t i = wk_tid(); i < lim; i += step) {
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (i < total)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int64_t off[2];
                wk_koff(L, 4 * i + e, off);
                v[e] = wk_round_to(dt, wk_binary_fp<float>(op, wk_ldf(a, off[0], dt),
                                                           wk_ldf(b, off[1], dt)));
            }
        wk_binary_act_store(i, total, v, act, n);
    }
}
