/* cpu_vmath_avx2.c: the vector math kernels for AVX2 + FMA (8 f32 / 4 f64 lanes) through SLEEF's
 * avx2 functions. Compiled with -mavx2 -mfma (cmake/cpu.cmake; FMAs are SLEEF's own, inside its
 * functions, and the explicit ones of the f32 gelu_erf kernel: nothing else is contracted);
 * called only when the CPU has AVX2 and FMA (cpu_vmath.c). Empty elsewhere than x86-64. */
#include "cpu_vmath.h"
#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>
#include <sleef.h>

#define VM_F32 wk_vm_f32_avx2
#define VM_F64 wk_vm_f64_avx2
#define VF __m256
#define WF 8
#define LDF _mm256_loadu_ps
#define STF _mm256_storeu_ps
#define SETF _mm256_set1_ps
#define ADDF _mm256_add_ps
#define SUBF _mm256_sub_ps
#define MULF _mm256_mul_ps
#define DIVF _mm256_div_ps
#define GTSELF(c, a, b) _mm256_blendv_ps((b), (a), _mm256_cmp_ps((c), zero, _CMP_GT_OQ))
#define SLF(fn, u) Sleef_##fn##f8_##u##avx2
#define FMAF _mm256_fmadd_ps
#define ABSF(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (x))
#define MINF _mm256_min_ps /* the second operand when either is NaN */
#define LTSELF(c, a, b) _mm256_blendv_ps((b), (a), _mm256_cmp_ps((c), zero, _CMP_LT_OQ))
#define VD __m256d
#define WD 4
#define LDD _mm256_loadu_pd
#define STD _mm256_storeu_pd
#define SETD _mm256_set1_pd
#define ADDD _mm256_add_pd
#define SUBD _mm256_sub_pd
#define MULD _mm256_mul_pd
#define DIVD _mm256_div_pd
#define GTSELD(c, a, b) _mm256_blendv_pd((b), (a), _mm256_cmp_pd((c), zero, _CMP_GT_OQ))
#define SLD(fn, u) Sleef_##fn##d4_##u##avx2
#include "cpu_vmath_simd.h"
#endif
