/* tolerance.c: the one table of NMSE bounds (docs/parity.md explains each number).
 * NMSE = sum (got - want)^2 / sum want^2 over the elements finite in both, where want is the f64
 * reference already rounded to the output dtype. A bound of 0 means exact: every value equal
 * (PT_EXACT) or every bit equal (PT_BITS). Integer outputs are always exact. */
#include "parity_impl.h"

/* Indexed by dtype; integer entries are unused (always exact). */
/*                                  u8 u32 i16 i32 i64  bf16     f16      f32    f64    f8e4m3 */
static const double transc_bound[] = {0, 0, 0, 0, 0, 0x1p-14, 0x1p-20, 1e-12, 1e-28, 0x1p-6};
static const double sum_bound[] = {0, 0, 0, 0, 0, 0x1p-14, 0x1p-20, 1e-9, 1e-24, 0x1p-6};
/* x quantized to int8 blocks of 32 (ggml's q8_1 rounding): relative error up to 1/254 per x
 * element, uncorrelated, so nmse of order 1e-5 (measured up to 8e-5 on the H200 for Q4_1); the
 * bound leaves a factor of ~4. The CPU (f32 x) stays far inside it. */
#define QDOT_BOUND 3e-4

double pt_bound(pt_tol tol, wk_dtype dt)
{
    if (!ref_is_float(dt) || (unsigned)dt >= WK_DTYPE_COUNT)
        return 0;
    switch (tol) {
    case PT_TRANSC: return transc_bound[dt];
    case PT_SUM: return sum_bound[dt];
    case PT_QDOT: return sum_bound[dt] > QDOT_BOUND ? sum_bound[dt] : QDOT_BOUND;
    default: return 0;
    }
}
