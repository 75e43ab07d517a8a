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
#define VM_BF16 wk_vm_bf16_avx2
static inline __m256 vm_ldb_avx2(const uint16_t *p)
{
    const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline void vm_stb_avx2(uint16_t *p, __m256 v)
{
    const __m256i x = _mm256_castps_si256(v);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000)); /* both sides >= 0 */
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd), 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40)), nan);
    /* eight 32-bit values below 2^16 -> eight u16: pack within lanes, then gather the halves */
    const __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i *)(void *)p, _mm256_castsi256_si128(pk));
}
#define LDB vm_ldb_avx2
#define STB vm_stb_avx2
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
