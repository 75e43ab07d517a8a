// rand.cu: rand_uniform / rand_normal from the shared Philox stream (src/core/philox.h), so a
// GPU draws exactly the CPU's numbers for the same seed: uniform in f32 (f64 for f64) from the
// same integer words, normal from the same f64 Box-Muller code; reduced types round once from
// f32 through fpconv.h. One thread per element, grid-stride.
#include "gpu.h"
#include "philox.h"

template <int D>
WK_DEV void rand_body(typename wk_t<D>::S *out, int64_t n, int normal, double a, double b,
                      uint64_t seed, uint64_t offset)
{
    const float fa = (float)a, fb = (float)b;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const uint64_t u = (uint64_t)i;
        if (D == WK_DT_F64) {
            double v;
            if (normal) {
                v = a + b * wk_philox_normal(seed, offset, u);
            } else {
                wk_philox4 r = wk_philox_at(seed, offset, u);
                v = a + (b - a) * wk_philox_u01_f64(r.v[0], r.v[1]);
            }
            out[i] = wk_t<D>::st((typename wk_t<D>::C)v);
        } else {
            float v;
            if (normal) {
                v = (float)(a + b * wk_philox_normal(seed, offset, u));
            } else {
                wk_philox4 r = wk_philox_at(seed, offset, u);
                v = fa + (fb - fa) * wk_philox_u01_f32(r.v[0]);
            }
            out[i] = wk_t<D>::st((typename wk_t<D>::C)v);
        }
    }
}

#define WK_RAND_KERNEL(name, D)                                                                 \
    WK_KERNEL rand_##name(wk_t<D>::S *out, int64_t n, int normal, double a, double b,          \
                          uint64_t seed, uint64_t offset)                                      \
    {                                                                                           \
        rand_body<D>(out, n, normal, a, b, seed, offset);                                       \
    }
WK_RAND_KERNEL(f32, WK_DT_F32)
WK_RAND_KERNEL(f64, WK_DT_F64)
WK_RAND_KERNEL(f16, WK_DT_F16)
WK_RAND_KERNEL(bf16, WK_DT_BF16)
WK_RAND_KERNEL(f8e4m3, WK_DT_F8E4M3)
