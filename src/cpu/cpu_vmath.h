/* cpu_vmath.h: vectorised elementwise math of the CPU backend (exp, log, sin, cos, tanh, erf and
 * the compositions gelu, gelu_erf, silu, sigmoid, powf, elu) on contiguous f32 and f64 arrays,
 * through SLEEF (Debian libsleef-dev): its AVX-512F or AVX2 functions, chosen once per process
 * from the CPU, else its scalar functions; f32 gelu_erf is a kernel of ours with no library call
 * (cpu_vmath_simd.h), the same bits on every ISA. Error bounds per function: docs/semantics.md.
 *
 * Determinism: every element goes through the same vector function whatever its position (a
 * tail shorter than a vector is padded and computed as a full vector), so the result of an
 * element depends only on its value, never on n, the chunking or the thread count. On one
 * machine a value always gives the same bits; machines with different ISAs (AVX-512 / AVX2 /
 * neither) may differ within the documented bounds. Internal to src/cpu. */
#ifndef WK_CPU_VMATH_H
#define WK_CPU_VMATH_H

#include <stdint.h>

typedef enum wk_vm_fn {
    WK_VM_EXP,
    WK_VM_LOG,
    WK_VM_SIN,
    WK_VM_COS,
    WK_VM_TANH,
    WK_VM_ERF,
    WK_VM_GELU,     /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    WK_VM_GELU_ERF, /* 0.5 x erfc(-x / sqrt(2)) */
    WK_VM_SILU,     /* x / (1 + exp(-x)) */
    WK_VM_SIGMOID,  /* 1 / (1 + exp(-x)) */
    WK_VM_POW,      /* pow(x, p) */
    WK_VM_ELU,      /* x > 0 ? x : p (exp(x) - 1) */
    WK_VM_COUNT
} wk_vm_fn;

/* o[i] = f(x[i]) (p: the parameter of POW and ELU) for i < n; o may equal x. */
void wk_vm_f32(wk_vm_fn f, float *o, const float *x, int64_t n, float p);
void wk_vm_f64(wk_vm_fn f, double *o, const double *x, int64_t n, double p);
/* bf16 (raw bits) in and out: the f32 kernel's result rounded to bf16, bit for bit. */
void wk_vm_bf16(wk_vm_fn f, uint16_t *o, const uint16_t *x, int64_t n, float p);

/* f(x) for all 65536 bf16 (f16 = 0) or f16 (f16 = 1) inputs, indexed by the input's bits: the
 * f32 kernel's result rounded to the type, bit for bit (built on first use, ~50 us; kept for
 * the process). NULL for POW and ELU (they take a parameter). */
const uint16_t *wk_vm_table16(wk_vm_fn f, int f16);

/* The implementation in use: "avx512f", "avx2" or "scalar" (for benchmarks and reports). The
 * environment variable WICK_CPU_VMATH (avx512f, avx2, scalar), read once, asks for a lower one
 * (tests compare them); a request the CPU cannot serve is ignored. */
const char *wk_vm_isa(void);

/* The per-ISA kernels (cpu_vmath_avx512.c, cpu_vmath_avx2.c); same contract as above. */
void wk_vm_f32_avx512(wk_vm_fn f, float *o, const float *x, int64_t n, float p);
void wk_vm_f64_avx512(wk_vm_fn f, double *o, const double *x, int64_t n, double p);
void wk_vm_f32_avx2(wk_vm_fn f, float *o, const float *x, int64_t n, float p);
void wk_vm_f64_avx2(wk_vm_fn f, double *o, const double *x, int64_t n, double p);
void wk_vm_f32_scalar(wk_vm_fn f, float *o, const float *x, int64_t n, float p);
void wk_vm_f64_scalar(wk_vm_fn f, double *o, const double *x, int64_t n, double p);
void wk_vm_bf16_avx512(wk_vm_fn f, uint16_t *o, const uint16_t *x, int64_t n, float p);
void wk_vm_bf16_avx2(wk_vm_fn f, uint16_t *o, const uint16_t *x, int64_t n, float p);
void wk_vm_bf16_scalar(wk_vm_fn f, uint16_t *o, const uint16_t *x, int64_t n, float p);

#endif
