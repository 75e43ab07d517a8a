/* cpu_vmath.c: picks the vector math kernels once per process (AVX-512F, AVX2+FMA, or SLEEF's
 * scalar functions) and defines the scalar ones from the same body (cpu_vmath_simd.h with one
 * lane), so all three compute the same formulas. */
#include "cpu_vmath.h"
#include "fpconv.h"
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sleef.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scalar kernels: SLEEF's scalar functions, one lane */
#define VM_F32 wk_vm_f32_scalar
#define VM_F64 wk_vm_f64_scalar
#define VM_BF16 wk_vm_bf16_scalar
#define LDB(p) wk_fp_bf16_to_f32(*(p))
#define STB(p, v) (*(p) = wk_fp_f32_to_bf16(v))
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
typedef void (*vmb)(wk_vm_fn, uint16_t *, const uint16_t *, int64_t, float);
static struct {
    vm32 f32;
    vm64 f64;
    vmb bf16;
    const char *name;
} g_vm = {wk_vm_f32_scalar, wk_vm_f64_scalar, wk_vm_bf16_scalar, "scalar"};
static pthread_once_t g_vm_once = PTHREAD_ONCE_INIT;

static void vm_pick(void)
{
#if defined(WK_VMATH_X86)
    const char *want = getenv("WICK_CPU_VMATH");
    const int cap512 = __builtin_cpu_supports("avx512f");
    const int cap2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (cap512 && (!want || !strcmp(want, "avx512f"))) {
        g_vm.f32 = wk_vm_f32_avx512, g_vm.f64 = wk_vm_f64_avx512, g_vm.bf16 = wk_vm_bf16_avx512;
        g_vm.name = "avx512f";
        return;
    }
    if (cap2 && (!want || strcmp(want, "scalar") != 0)) {
        g_vm.f32 = wk_vm_f32_avx2, g_vm.f64 = wk_vm_f64_avx2, g_vm.bf16 = wk_vm_bf16_avx2;
        g_vm.name = "avx2";
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

void wk_vm_bf16(wk_vm_fn f, uint16_t *o, const uint16_t *x, int64_t n, float p)
{
    pthread_once(&g_vm_once, vm_pick);
    g_vm.bf16(f, o, x, n, p);
}

/* ---- 16-bit tables: f(x) for each of the 65536 bf16 or f16 inputs, computed by the f32
 * kernel and rounded by the library's conversion, built once on first use (static storage: no
 * allocation, nothing to free). */
static uint16_t g_tab[2][WK_VM_COUNT][65536];
static _Atomic int g_tab_ready[2][WK_VM_COUNT];
static pthread_mutex_t g_tab_mu = PTHREAD_MUTEX_INITIALIZER;

const uint16_t *wk_vm_table16(wk_vm_fn f, int f16)
{
    if (f < 0 || f >= WK_VM_COUNT || f == WK_VM_POW || f == WK_VM_ELU)
        return NULL; /* these take a parameter */
    f16 = !!f16;
    if (atomic_load_explicit(&g_tab_ready[f16][f], memory_order_acquire))
        return g_tab[f16][f];
    pthread_mutex_lock(&g_tab_mu);
    if (!atomic_load_explicit(&g_tab_ready[f16][f], memory_order_relaxed)) {
        enum { B = 1024 };
        float x[B], y[B];
        for (int i0 = 0; i0 < 65536; i0 += B) {
            for (int j = 0; j < B; j++)
                x[j] = f16 ? wk_fp_f16_to_f32((uint16_t)(i0 + j))
                           : wk_fp_bf16_to_f32((uint16_t)(i0 + j));
            wk_vm_f32(f, y, x, B, 0.0f);
            for (int j = 0; j < B; j++)
                g_tab[f16][f][i0 + j] = f16 ? wk_fp_f32_to_f16(y[j]) : wk_fp_f32_to_bf16(y[j]);
        }
        atomic_store_explicit(&g_tab_ready[f16][f], 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_tab_mu);
    return g_tab[f16][f];
}

const char *wk_vm_isa(void)
{
    pthread_once(&g_vm_once, vm_pick);
    return g_vm.name;
}
