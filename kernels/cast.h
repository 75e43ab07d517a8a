/* cast.h: one element from any dtype to any other, as to_dtype converts it (docs/semantics.md
 * "Conversions"): the canonical value of a source element (int64 or double, exact) and the
 * destination from it. Shared by cast.cu (to_dtype) and rope.cu (rope_kv_append's writes of
 * rope(k), v and rope(q) in the cache's dtype). Included after gpu.h. */
#ifndef WK_KERNELS_CAST_H
#define WK_KERNELS_CAST_H

/* Canonical value of a source element: int64 for integer dtypes, double for float dtypes
 * (exact in both cases). The other one is unused and 0. */
template <int F> WK_DEV int64_t wk_canon_i(typename wk_t<F>::S v)
{
    return wk_t<F>::is_int ? (int64_t)v : 0;
}
template <int F> WK_DEV double wk_canon_d(typename wk_t<F>::S v)
{
    return wk_t<F>::is_int ? 0.0 : (double)wk_t<F>::ld(v);
}

/* Destination from a canonical value. */
template <int T> struct wk_to;
#define WK_TO_INT(D)                                                                           \
    template <> struct wk_to<D> {                                                              \
        WK_DEV wk_t<D>::S from_i(int64_t v) { return (wk_t<D>::S)v; }                          \
        WK_DEV wk_t<D>::S from_d(double v) { return (wk_t<D>::S)wk_sat<D>(v); }                \
    };
WK_TO_INT(WK_DT_U8)
WK_TO_INT(WK_DT_U32)
WK_TO_INT(WK_DT_I16)
WK_TO_INT(WK_DT_I32)
WK_TO_INT(WK_DT_I64)
#undef WK_TO_INT
#define WK_TO_F32C(D)                                                                          \
    template <> struct wk_to<D> {                                                              \
        WK_DEV wk_t<D>::S from_i(int64_t v) { return wk_t<D>::st((float)v); }                  \
        WK_DEV wk_t<D>::S from_d(double v) { return wk_t<D>::st((float)v); }                   \
    };
WK_TO_F32C(WK_DT_BF16)
WK_TO_F32C(WK_DT_F16)
WK_TO_F32C(WK_DT_F32)
WK_TO_F32C(WK_DT_F8E4M3)
#undef WK_TO_F32C
template <> struct wk_to<WK_DT_F64> {
    WK_DEV double from_i(int64_t v) { return (double)v; }
    WK_DEV double from_d(double v) { return v; }
};

#endif
