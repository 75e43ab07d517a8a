/* dtype_list.h: the one dtype table (an X-macro), so dtype dispatch is written once.
 * X(ENUM_SUFFIX, short_name, storage C type) for every wk_dtype, in enum order. */
#ifndef WK_DTYPE_LIST_H
#define WK_DTYPE_LIST_H

#define WK_DTYPE_LIST(X)        \
    X(U8, u8, uint8_t)          \
    X(U32, u32, uint32_t)       \
    X(I16, i16, int16_t)        \
    X(I32, i32, int32_t)        \
    X(I64, i64, int64_t)        \
    X(BF16, bf16, uint16_t)     \
    X(F16, f16, uint16_t)       \
    X(F32, f32, float)          \
    X(F64, f64, double)         \
    X(F8E4M3, f8e4m3, uint8_t)

#endif
