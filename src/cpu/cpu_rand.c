/* cpu_rand.c: rand_uniform / rand_normal on the CPU from the shared Philox stream (philox.h). */
#include "cpu_ops.h"
#include "philox.h"
#include "wk_core.h"

/* Sample i as f32 (for f32 and the reduced types). */
static float sample_f32(wk_op op, float a, float b, double da, double db, uint64_t seed,
                        uint64_t offset, uint64_t i)
{
    if (op == WK_OP_RAND_UNIFORM) {
        wk_philox4 r = wk_philox_at(seed, offset, i);
        return a + (b - a) * wk_philox_u01_f32(r.v[0]);
    }
    return (float)(da + db * wk_philox_normal(seed, offset, i));
}

static double sample_f64(wk_op op, double a, double b, uint64_t seed, uint64_t offset, uint64_t i)
{
    if (op == WK_OP_RAND_UNIFORM) {
        wk_philox4 r = wk_philox_at(seed, offset, i);
        return a + (b - a) * wk_philox_u01_f64(r.v[0], r.v[1]);
    }
    return a + b * wk_philox_normal(seed, offset, i);
}

wk_status wk_cpu_rand(wk_device *dev, wk_op op, wk_dtype dt, void *out, size_t n, double a,
                      double b, uint64_t seed, uint64_t offset)
{
    const int64_t len = (int64_t)n;
    const float fa = (float)a, fb = (float)b;
#pragma omp parallel for schedule(static) if (len >= WK_CPU_PAR_THRESHOLD)
    for (int64_t i = 0; i < len; i++) {
        uint64_t u = (uint64_t)i;
        switch (dt) {
        case WK_DTYPE_F64: ((double *)out)[i] = sample_f64(op, a, b, seed, offset, u); break;
        case WK_DTYPE_F32: ((float *)out)[i] = sample_f32(op, fa, fb, a, b, seed, offset, u); break;
        case WK_DTYPE_F16:
            ((uint16_t *)out)[i] = wk_fp_f32_to_f16(sample_f32(op, fa, fb, a, b, seed, offset, u));
            break;
        case WK_DTYPE_BF16:
            ((uint16_t *)out)[i] = wk_fp_f32_to_bf16(sample_f32(op, fa, fb, a, b, seed, offset, u));
            break;
        case WK_DTYPE_F8E4M3:
            ((uint8_t *)out)[i] = wk_fp_f32_to_f8e4m3(sample_f32(op, fa, fb, a, b, seed, offset, u));
            break;
        default: break; /* the front end admits float dtypes only */
        }
    }
    return WK_OK;
}
