/* cpu_vmath_avx512.c: the vector math kernels for AVX-512F (16 f32 / 8 f64 lanes) through
 * SLEEF's avx512f functions. Compiled with -mavx512f (cmake/cpu.cmake); called only when the CPU
 * has AVX-512F (cpu_vmath.c). Empty elsewhere than x86-64. */
#include "cpu_vmath.h"
#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>
#include <sleef.h>

#define VM_F32 wk_vm_f32_avx512
#define VM_F64 wk_vm_f64_avx512
#define VM_BF16 wk_vm_bf16_avx512
/* bf16 <-> f32 lanes in integer ops (AVX-512F only; VCVTNEPS2BF16 would flush subnormals) */
static inline __m512 vm_ldb_avx512(const uint16_t *p)
{
    const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline void vm_stb_avx512(uint16_t *p, __m512 v)
{
    const __m512i x = _mm512_castps_si512(v);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd), 16);
    r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256((__m256i *)(void *)p, _mm512_cvtepi32_epi16(r));
}
#define LDB vm_ldb_avx512
#define STB vm_stb_avx512
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
