/* cpu_qdot.c: the quantized matrix-vector product of decode on the CPU (contract: cpu_qdot.h):
 * the choice of code path, the quantization of x, the scalar path (the definition the SIMD paths
 * match bit for bit) and the threading over weight rows. */
#include "cpu_qdot.h"
#include "cpu_ops.h"
#include "cpu_qdot_types.h"
#include "wk_core.h"
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the path */
static int g_path = WK_QDOT_SCALAR;
static pthread_once_t g_path_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
/* F16C (cpuid leaf 1, ecx bit 29): asked of cpuid, as clang's __builtin_cpu_supports does not
 * know "f16c" */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1u);
}
#endif

int wk_cpu_qdot_can(int path)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (path == WK_QDOT_AVX512)
        return wk_qdot_avx512_built && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
    if (path == WK_QDOT_AVX2)
        return wk_qdot_avx2_built && __builtin_cpu_supports("avx2") &&
               has_f16c();
#endif
    return path == WK_QDOT_EXACT || path == WK_QDOT_SCALAR;
}

const char *wk_cpu_qdot_name(int path)
{
    static const char *const names[] = {"exact", "scalar", "avx2", "avx512"};
    return path >= 0 && path <= WK_QDOT_AVX512 ? names[path] : "?";
}

static void path_pick(void)
{
    const char *want = getenv("WICK_CPU_QDOT");
    int p = WK_QDOT_AVX512;
    for (int i = 0; want && i <= WK_QDOT_AVX512; i++)
        if (!strcmp(want, wk_cpu_qdot_name(i)))
            p = i;
    while (!wk_cpu_qdot_can(p))
        p--;
    g_path = p;
}

int wk_cpu_qdot_path(void)
{
    pthread_once(&g_path_once, path_pick);
    return g_path;
}

/* ---- x to int8 blocks of 32 (wk_qb_q8_grid) */

/* round(f) half away from zero, for |f| < 2^31 */
static float round_away(float f)
{
    const float t = (float)(int32_t)f; /* truncation; f - t is exact */
    const float r = f - t;
    return r >= 0.5f ? t + 1.0f : r <= -0.5f ? t - 1.0f : t;
}

/* Block b (32 values v) -> q[32], *d, half sums hs[2]. */
static void quant_block(const float *v, int8_t *q, float *d, int32_t *hs)
{
    float amax = 0.0f;
    int bad = 0;
    for (int e = 0; e < 32; e++) {
        const float a = v[e] < 0.0f ? -v[e] : v[e];
        bad |= !(a <= 3.40282347e38f); /* NaN and infinities */
        amax = a > amax ? a : amax;
    }
    float g[3];
    wk_qb_q8_grid(bad ? 0.0f : amax, g);
    hs[0] = hs[1] = 0;
    for (int e = 0; e < 32; e++) {
        float r = bad ? 0.0f : round_away(v[e] * g[1] * g[2]);
        r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
        q[e] = (int8_t)(int32_t)r;
        hs[e >> 4] += q[e];
    }
    *d = bad ? wk_fp_from_bits(0x7fc00000u) : g[0];
}

/* x (rows, k) of dt -> the job's xq, xd, xh. */
static void quant_x(wk_dtype dt, const void *x, int64_t rows, int64_t nsub, int8_t *xq, float *xd,
                    int32_t *xh)
{
    float v[32];
    for (int64_t b = 0; b < rows * nsub; b++) {
        for (int e = 0; e < 32; e++) {
            const int64_t i = b * 32 + e;
            v[e] = dt == WK_DTYPE_F32   ? ((const float *)x)[i]
                   : dt == WK_DTYPE_F16 ? wk_fp_f16_to_f32(((const uint16_t *)x)[i])
                                        : wk_fp_bf16_to_f32(((const uint16_t *)x)[i]);
        }
        quant_block(v, xq + b * 32, xd + b, xh + 2 * b);
    }
}

/* ---- the scalar path: the definition (cpu_qdot.h) */
void wk_qdot_rows_scalar(const wk_qdot_job *jb, int64_t j0, int64_t j1)
{
    const qd_type ty = qd_type_of(jb->qt);
    const int64_t nblk = jb->nsub / ty.sub;
    for (int64_t j = j0; j < j1; j++) {
        const uint8_t *wr = jb->w + j * jb->row_bytes;
        double acc[8] = {0};
        for (int64_t blk = 0; blk < nblk; blk++) {
            const uint8_t *b = wr + blk * ty.bytes;
            float d, e;
            qd_floats(&ty, b, &d, &e);
            for (int s = 0; s < ty.sub; s++) {
                uint8_t u[32];
                int32_t S[2], N[2];
                qd_bytes(jb->qt, b, s, u);
                qd_ints(jb->qt, b, s, S, N);
                const int64_t xu = blk * ty.sub + s;
                for (int r = 0; r < jb->rows; r++) {
                    const int64_t xi = (int64_t)r * jb->nsub + xu;
                    const int8_t *xq = jb->xq + xi * 32;
                    const int32_t *xh = jb->xh + 2 * xi;
                    int32_t is[2] = {0, 0};
                    for (int l = 0; l < 32; l++)
                        is[l >> 4] += (int32_t)u[l] * xq[l];
                    is[0] -= ty.c * xh[0];
                    is[1] -= ty.c * xh[1];
                    const int32_t I = S[0] * is[0] + S[1] * is[1];
                    float a = (float)I * d;
                    if (ty.eof >= 0) {
                        const int32_t M = N[0] * xh[0] + N[1] * xh[1];
                        a = a + (float)M * e;
                    }
                    const float t = jb->xd[xi] * a;
                    acc[r] += (double)t;
                }
            }
        }
        for (int r = 0; r < jb->rows; r++)
            jb->out[(int64_t)r * jb->n + j] = (float)acc[r];
    }
}

/* ---- the op */
wk_status wk_cpu_qdot(int path, wk_qtype qt, wk_dtype dt, void *out, const void *x, int64_t rows,
                      const void *w, int64_t n, int64_t k)
{
    const int64_t nsub = k / 32;
    const size_t nb = (size_t)(rows * nsub);
    const size_t ob = dt == WK_DTYPE_F32 ? 0 : (size_t)(rows * n) * sizeof(float);
    /* one allocation: x codes, scales, half sums, and the f32 result when dt is not f32 */
    char *buf = wk_malloc(nb * 32 + nb * sizeof(float) + nb * 2 * sizeof(int32_t) + ob + 64);
    if (!buf)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate the quantized x (%lld x %lld)",
                      (long long)rows, (long long)k);
    wk_qdot_job jb = {.qt = (int)qt,
                      .w = w,
                      .row_bytes = k / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt),
                      .n = n,
                      .nsub = nsub,
                      .rows = (int)rows};
    float *xd = (float *)buf;
    int32_t *xh = (int32_t *)(xd + nb);
    float *of = (float *)(xh + 2 * nb);
    int8_t *xq = (int8_t *)(of + ob / sizeof(float));
    quant_x(dt, x, rows, nsub, xq, xd, xh);
    jb.xq = xq, jb.xd = xd, jb.xh = xh;
    jb.out = dt == WK_DTYPE_F32 ? out : of;

    void (*rows_fn)(const wk_qdot_job *, int64_t, int64_t) =
        path == WK_QDOT_AVX512 ? wk_qdot_rows_avx512
        : path == WK_QDOT_AVX2 ? wk_qdot_rows_avx2
                               : wk_qdot_rows_scalar;
    /* static schedule over chunks of 16 weight rows (the AVX-512 group) */
    const int64_t chunk = 16, nch = (n + chunk - 1) / chunk;
    const int par = (double)rows * (double)n * (double)k >= (double)WK_CPU_PAR_THRESHOLD && nch > 1;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t c = 0; c < nch; c++)
        rows_fn(&jb, c * chunk, c * chunk + chunk < n ? c * chunk + chunk : n);

    if (dt != WK_DTYPE_F32)
        for (int64_t i = 0; i < rows * n; i++)
            ((uint16_t *)out)[i] =
                dt == WK_DTYPE_F16 ? wk_fp_f32_to_f16(of[i]) : wk_fp_f32_to_bf16(of[i]);
    wk_free(buf);
    return WK_OK;
}
