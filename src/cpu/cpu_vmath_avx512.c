/* cpu_vmath_avx512.c: the vector math kernels for AVX-512F (16 f32 / 8 f64 lanes) through
 * SLEEF's avx512f functions. Compiled with -mavx512f (cmake/cpu.cmake); called only when the CPU
 * has AVX-512F (cpu_vmath.c). Empty elsewhere than x86-64. */
#include "cpu_vmath.h"
#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>
#include <sleef.h>

#define VM_F32 wk_vm_f32_avx512
#define VM_F64 wk_vm_f64_avx512
#define VF __m512
#define WF 16
#define LDF _mm512_loadu_ps
#define STF _mm512_storeu_ps
#define SETF _mm512_set1_ps
#define ADDF _mm512_add_ps
#define SUBF _mm512_sub_ps
#define MULF _mm512_mul_ps
#define DIVF _mm512_div_ps
#define GTSELF(c, a, b) _mm512_mask_blend_ps(_mm512_cmp_ps_mask((c), zero, _CMP_GT_OQ), (b), (a))
#define SLF(fn, u) Sleef_##fn##f16_##u##avx512f
#define FMAF _mm512_fmadd_ps
#define ABSF _mm512_abs_ps
#define MINF _mm512_min_ps /* the second operand when either is NaN */
#define LTSELF(c, a, b) _mm512_mask_blend_ps(_mm512_cmp_ps_mask((c), zero, _CMP_LT_OQ), (b), (a))
#define ROUNDF(v) _mm512_roundscale_ps((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define SCALEF _mm512_scalef_ps
/* class -inf of x (token slot 4) -> the default NaN; every other class keeps v */
#define NEGINF_NANF(v, x) _mm512_fixupimm_ps((v), (x), _mm512_set1_epi32(0x30000), 0)
#define VD __m512d
#define WD 8
#define LDD _mm512_loadu_pd
#define STD _mm512_storeu_pd
#define SETD _mm512_set1_pd
#define ADDD _mm512_add_pd
#define SUBD _mm512_sub_pd
#define MULD _mm512_mul_pd
#define DIVD _mm512_div_pd
#define GTSELD(c, a, b) _mm512_mask_blend_pd(_mm512_cmp_pd_mask((c), zero, _CMP_GT_OQ), (b), (a))
#define SLD(fn, u) Sleef_##fn##d8_##u##avx512f
#include "cpu_vmath_simd.h"
#endif
