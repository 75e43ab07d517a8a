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
#define ROUNDF(v) _mm256_round_ps((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* v 2^n as two exact steps 2^(n>>1) and 2^(n - (n>>1)), each a normal power of two for n in
 * [-200, 0]: only the second product rounds (as AVX-512's scalef does once). */
static inline __m256 vm_scalef_avx2(__m256 v, __m256 n)
{
    const __m256i ni = _mm256_cvtps_epi32(n), bias = _mm256_set1_epi32(127);
    const __m256i h = _mm256_srai_epi32(ni, 1), g = _mm256_sub_epi32(ni, h);
    const __m256 ph = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
    const __m256 pg = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(g, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(v, ph), pg);
}
#define SCALEF vm_scalef_avx2
#define NEGINF_NANF(v, x) _mm256_add_ps((v), _mm256_mul_ps(MINF(zero, (x)), zero)) /* -inf 0 = NaN */
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
