/* cpu_vmath.c: picks the vector math kernels once per process (AVX-512F, AVX2+FMA, or SLEEF's
 * scalar functions) and defines the scalar ones from the same body (cpu_vmath_simd.h with one
 * lane), so all three compute the same formulas. */
#include "cpu_vmath.h"
#include <math.h>
#include <pthread.h>
#include <sleef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scalar kernels: SLEEF's scalar functions, one lane */
#define VM_F32 wk_vm_f32_scalar
#define VM_F64 wk_vm_f64_scalar
#define VF float
#define WF 1
#define LDF(p) (*(p))
#define STF(p, v) (*(p) = (v))
#define SETF(c) (c)
#define ADDF(a, b) ((a) + (b))
#define SUBF(a, b) ((a) - (b))
#define MULF(a, b) ((a) * (b))
#define DIVF(a, b) ((a) / (b))
#define GTSELF(c, a, b) ((c) > zero ? (a) : (b))
#define SLF(fn, u) Sleef_##fn##f_##u
#define FMAF fmaf
#define ABSF fabsf
#define MINF(k, v) ((k) < (v) ? (k) : (v))
#define LTSELF(c, a, b) ((c) < zero ? (a) : (b))
#define ROUNDF rintf
/* v 2^n, n integral in [-200, 0] (NaN n: NaN) */
static inline float vm_scalef(float v, float n) { return n == n ? ldexpf(v, (int)n) : v + n; }
#define SCALEF vm_scalef
#define NEGINF_NANF(v, x) ((v) + MINF(zero, (x)) * zero) /* -inf 0 = NaN */
#define VD double
#define WD 1
#define LDD LDF
#define STD STF
#define SETD SETF
#define ADDD ADDF
#define SUBD SUBF
#define MULD MULF
#define DIVD DIVF
#define GTSELD GTSELF
#define SLD(fn, u) Sleef_##fn##_##u
#include "cpu_vmath_simd.h"

/* ---- dispatch */
typedef void (*vm32)(wk_vm_fn, float *, const float *, int64_t, float);
typedef void (*vm64)(wk_vm_fn, double *, const double *, int64_t, double);
static struct {
    vm32 f32;
    vm64 f64;
    const char *name;
} g_vm = {wk_vm_f32_scalar, wk_vm_f64_scalar, "scalar"};
static pthread_once_t g_vm_once = PTHREAD_ONCE_INIT;

static void vm_pick(void)
{
#if defined(WK_VMATH_X86)
    const char *want = getenv("WICK_CPU_VMATH");
    const int cap512 = __builtin_cpu_supports("avx512f");
    const int cap2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (cap512 && (!want || !strcmp(want, "avx512f"))) {
        g_vm.f32 = wk_vm_f32_avx512, g_vm.f64 = wk_vm_f64_avx512, g_vm.name = "avx512f";
        return;
    }
    if (cap2 && (!want || strcmp(want, "scalar") != 0)) {
        g_vm.f32 = wk_vm_f32_avx2, g_vm.f64 = wk_vm_f64_avx2, g_vm.name = "avx2";
        return;
    }
#endif
}

void wk_vm_f32(wk_vm_fn f, float *o, const float *x, int64_t n, float p)
{
    pthread_once(&g_vm_once, vm_pick);
    g_vm.f32(f, o, x, n, p);
}

void wk_vm_f64(wk_vm_fn f, double *o, const double *x, int64_t n, double p)
{
    pthread_once(&g_vm_once, vm_pick);
    g_vm.f64(f, o, x, n, p);
}

const char *wk_vm_isa(void)
{
    pthread_once(&g_vm_once, vm_pick);
    return g_vm.name;
}
