/* cast.cu: to_dtype, all 100 (from, to) pairs (module "cast"), with the rules of
 * docs/semantics.md "Conversions", the same as src/cpu/cpu_cast.c:
 *   integer -> integer: two's-complement wrap (load sign/zero-extended to int64, truncate);
 *   integer -> float:   one rounding from int64 (to f32 first for bf16/f16/f8e4m3);
 *   float -> integer:   NaN -> 0, truncation, saturation (wk_sat, from the exact double);
 *   float -> float:     through f32 for the reduced types (f64 -> bf16 rounds twice).
 *
 * Kernels (host side: src/gpu/gpu_cast.c):
 *   cast_<from>_<to>(n, x, y)              contiguous, every pair (vectorised)
 *   cast_strided(from, to, n, L, x, y)     any layout, dtypes at run time
 * y is contiguous; x already includes the layout offset. */
#include "gpu.h"
#include "cast.h"

template <int F, int T> struct wk_cast_fn {
    __device__ __forceinline__ typename wk_t<T>::S operator()(typename wk_t<F>::S v) const
    {
        return wk_t<F>::is_int ? wk_to<T>::from_i(wk_canon_i<F>(v))
                               : wk_to<T>::from_d(wk_canon_d<F>(v));
    }
};

#define WK_CAST(fn, F, tn, T)                                                                  \
    WK_KERNEL cast_##fn##_##tn(int64_t n, const void *x, void *y)                              \
    {                                                                                          \
        wk_map1(n, (const wk_t<F>::S *)x, (wk_t<T>::S *)y, wk_cast_fn<F, T>());                \
    }
#define WK_CAST_TO(X, fn, F)                                                                   \
    X(fn, F, u8, WK_DT_U8) X(fn, F, u32, WK_DT_U32) X(fn, F, i16, WK_DT_I16)                   \
    X(fn, F, i32, WK_DT_I32) X(fn, F, i64, WK_DT_I64) X(fn, F, bf16, WK_DT_BF16)               \
    X(fn, F, f16, WK_DT_F16) X(fn, F, f32, WK_DT_F32) X(fn, F, f64, WK_DT_F64)                 \
    X(fn, F, f8e4m3, WK_DT_F8E4M3)
WK_CAST_TO(WK_CAST, u8, WK_DT_U8)
WK_CAST_TO(WK_CAST, u32, WK_DT_U32)
WK_CAST_TO(WK_CAST, i16, WK_DT_I16)
WK_CAST_TO(WK_CAST, i32, WK_DT_I32)
WK_CAST_TO(WK_CAST, i64, WK_DT_I64)
WK_CAST_TO(WK_CAST, bf16, WK_DT_BF16)
WK_CAST_TO(WK_CAST, f16, WK_DT_F16)
WK_CAST_TO(WK_CAST, f32, WK_DT_F32)
WK_CAST_TO(WK_CAST, f64, WK_DT_F64)
WK_CAST_TO(WK_CAST, f8e4m3, WK_DT_F8E4M3)

/* ---- any layout, dtypes at run time */
WK_DEV bool wk_dt_is_int(int dt) { return dt <= WK_DT_I64; }

struct wk_cast_el {
    int from, to;
    const void *x;
    void *y;
    __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const
    {
        const bool src_int = wk_dt_is_int(from);
        int64_t vi = 0;
        double vd = 0.0;
        if (src_int)
            vi = wk_ldi(x, off[0], from);
        else if (from == WK_DT_F64)
            vd = ((const double *)x)[off[0]];
        else
            vd = (double)wk_ldf(x, off[0], from);
        if (wk_dt_is_int(to))
            wk_sti(y, i, to, src_int ? vi : wk_sat_dt(to, vd));
        else if (to == WK_DT_F64)
            ((double *)y)[i] = src_int ? (double)vi : vd;
        else
            wk_stf(y, i, to, src_int ? (float)vi : (float)vd);
    }
};
WK_KERNEL cast_strided(int from, int to, int64_t n, wk_klay<1> L, const void *x, void *y)
{
    const wk_cast_el e = {from, to, x, y};
    wk_strided_each(n, L, e);
}
