/* act.h: the activations that the unary ops (unary.cu) and the gated binary ops (binary.cu:
 * swiglu, geglu, geglu_erf) share, in the formulas and operation order of docs/semantics.md and
 * of the CPU backend, in f32 and in f64. */
#ifndef WK_KERNELS_ACT_H
#define WK_KERNELS_ACT_H

#include "gpu.h"

/* silu = x / (1 + e^-x) */
WK_DEV float wk_silu(float x) { return x / (1.0f + expf(-x)); }
WK_DEV double wk_silu(double x) { return x / (1.0 + exp(-x)); }

/* gelu, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
WK_DEV float wk_gelu(float x)
{
    const float k = 0.79788456080286535588f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * (x * x * x))));
}
WK_DEV double wk_gelu(double x)
{
    const double k = 0.79788456080286535588; /* sqrt(2/pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * (x * x * x))));
}

/* gelu_erf = 0.5 x erfc(-x / sqrt(2)) (no cancellation for large negative x) */
WK_DEV float wk_gelu_erf(float x) { return 0.5f * x * erfcf(-x / 1.41421356237309504880f); }
WK_DEV double wk_gelu_erf(double x) { return 0.5 * x * erfc(-x / 1.41421356237309504880); }

#endif
