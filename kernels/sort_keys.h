/* sort_keys.h: the sort keys of arg_sort_last_dim, shared by kernels/sort.cu (the bitonic and
 * warp sorts) and kernels/sort_radix.cu (the radix sorts); kernels/sort.cu states the order. */
#ifndef WK_SORT_KEYS_H
#define WK_SORT_KEYS_H
#include "gpu.h"

/* ---- keys: ascending order of the key = the wanted ascending order of the values. */
WK_DEV uint32_t so_fkey32(float f)
{
    if (f != f)
        return 0xffffffffu;
    const uint32_t u = __float_as_uint(f), mag = u & 0x7fffffffu;
    return (u >> 31) ? 0x80000000u - mag : 0x80000000u + mag; /* -0 and +0: 0x80000000 */
}
WK_DEV uint64_t so_fkey64(double d)
{
    if (d != d)
        return ~0ull;
    const uint64_t u = (uint64_t)__double_as_longlong(d), mag = u & 0x7fffffffffffffffull;
    const uint64_t mid = 0x8000000000000000ull;
    return (u >> 63) ? mid - mag : mid + mag;
}

template <int DT> struct so_key;
#define SO_KEY(DT, KT, EXPR)                                                                   \
    template <> struct so_key<DT> {                                                            \
        typedef KT K;                                                                          \
        WK_DEV K get(typename wk_t<DT>::S v) { return EXPR; }                                  \
    };
SO_KEY(WK_DT_U8, uint32_t, (uint32_t)v)
SO_KEY(WK_DT_U32, uint32_t, v)
SO_KEY(WK_DT_I16, uint32_t, (uint32_t)(int32_t)v ^ 0x80000000u)
SO_KEY(WK_DT_I32, uint32_t, (uint32_t)v ^ 0x80000000u)
SO_KEY(WK_DT_I64, uint64_t, (uint64_t)v ^ 0x8000000000000000ull)
SO_KEY(WK_DT_BF16, uint32_t, so_fkey32(wk_t<WK_DT_BF16>::ld(v)))
SO_KEY(WK_DT_F16, uint32_t, so_fkey32(wk_t<WK_DT_F16>::ld(v)))
SO_KEY(WK_DT_F32, uint32_t, so_fkey32(v))
SO_KEY(WK_DT_F64, uint64_t, so_fkey64(v))
SO_KEY(WK_DT_F8E4M3, uint32_t, so_fkey32(wk_t<WK_DT_F8E4M3>::ld(v)))
#undef SO_KEY

/* The key of element i of x (dtype dt) chosen at run time: one kernel per key width serves
 * every dtype of that width (the sorting network is the code; the dtype only picks the load). */
template <class K> struct so_key_rt;
#define SO_KEY_CASE(DT) case DT: return so_key<DT>::get(((const typename wk_t<DT>::S *)x)[i]);
template <> struct so_key_rt<uint32_t> {
    WK_DEV uint32_t at(const void *x, int64_t i, int dt)
    {
        switch (dt) {
        SO_KEY_CASE(WK_DT_U8)
        SO_KEY_CASE(WK_DT_U32)
        SO_KEY_CASE(WK_DT_I16)
        SO_KEY_CASE(WK_DT_I32)
        SO_KEY_CASE(WK_DT_BF16)
        SO_KEY_CASE(WK_DT_F16)
        SO_KEY_CASE(WK_DT_F8E4M3)
        default: return so_key<WK_DT_F32>::get(((const float *)x)[i]);
        }
    }
};
template <> struct so_key_rt<uint64_t> {
    WK_DEV uint64_t at(const void *x, int64_t i, int dt)
    {
        switch (dt) {
        SO_KEY_CASE(WK_DT_I64)
        default: return so_key<WK_DT_F64>::get(((const double *)x)[i]);
        }
    }
};
#undef SO_KEY_CASE
#endif /* WK_SORT_KEYS_H */
