/* ref_cast.c: reference of to_dtype, all 100 pairs (docs/semantics.md "Conversions"):
 * int -> int wraps; int -> float rounds the exact integer to nearest even (through f32 for the
 * reduced types); float -> int is NaN -> 0, truncation, saturation; float -> float rounds to
 * nearest even (through f32 for the reduced types; f8e4m3 saturates). */
#include "ref.h"

wk_status ref_to_dtype(void *out, wk_dtype from, wk_dtype to, const void *x, const wk_layout *lx)
{
    int64_t n = ref_count(lx);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = ref_offset(lx, i);
        if (!ref_is_float(from)) {
            int64_t v = ref_load_i(from, x, off);
            if (ref_is_float(to))
                ref_store_f(to, out, i, ref_int_to_float(to, v));
            else
                ref_store_i(to, out, i, v);
        } else {
            /* ref_store_f rounds to a float dtype or applies the float -> int rule */
            ref_store_f(to, out, i, ref_load_f(from, x, off));
        }
    }
    return WK_OK;
}
