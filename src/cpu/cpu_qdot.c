/* cpu_qdot.c: the quantized matrix product on the CPU (contract: cpu_qdot.h): the choice of code
 * path, the quantization of x, the scalar path (the definition the SIMD and AMX paths match bit
 * for bit) and the work split over threads. */
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
/* F16C (cpuid leaf 1, ecx bit 29) and FMA (bit 12): asked of cpuid, as clang's
 * __builtin_cpu_supports does not know "f16c" */
static int has_f16c_fma(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1u) && ((c >> 12) & 1u);
}
#endif

int wk_cpu_qdot_can(int path)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (path == WK_QDOT_AMX)
        return wk_cpu_qdot_can(WK_QDOT_AVX512) && wk_qgemm_amx_built && wk_qgemm_amx_ready();
    if (path == WK_QDOT_AVX512)
        return wk_qdot_avx512_built && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vnni");
    if (path == WK_QDOT_AVX2)
        return wk_qdot_avx2_built && __builtin_cpu_supports("avx2") && has_f16c_fma();
#endif
    return path == WK_QDOT_EXACT || path == WK_QDOT_SCALAR;
}

const char *wk_cpu_qdot_name(int path)
{
    static const char *const names[] = {"exact", "scalar", "avx2", "avx512", "amx"};
    return path >= 0 && path <= WK_QDOT_AMX ? names[path] : "?";
}

static void path_pick(void)
{
    const char *want = getenv("WICK_CPU_QDOT");
    int p = WK_QDOT_AMX;
    for (int i = 0; want && i <= WK_QDOT_AMX; i++)
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

/* 1 on an AMD CPU (the AVX-512 functions' defaults below differ there) */
static int cpu_is_amd(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_is("amd");
#else
    return 0;
#endif
}

/* 1 or 0 when the environment variable var holds `one` or `zero`, else dflt */
static int env_choice(const char *var, const char *one, const char *zero, int dflt)
{
    const char *want = getenv(var);
    return want && !strcmp(want, one) ? 1 : want && !strcmp(want, zero) ? 0 : dflt;
}

static int g_pf_next, g_gather;
static pthread_once_t g_pf_once = PTHREAD_ONCE_INIT, g_gather_once = PTHREAD_ONCE_INIT;

static void pf_pick(void)
{
    g_pf_next = env_choice("WICK_CPU_QDOT_PREFETCH", "group", "lines", cpu_is_amd());
}

int wk_cpu_qdot_pf_next(void)
{
    pthread_once(&g_pf_once, pf_pick);
    return g_pf_next;
}

static void gather_pick(void)
{
    g_gather = env_choice("WICK_CPU_QDOT_GATHER", "1", "0", !cpu_is_amd());
}

int wk_cpu_qdot_gather(void)
{
    pthread_once(&g_gather_once, gather_pick);
    return g_gather;
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

void wk_qdot_quant_x(int dt, const void *x, int64_t r0, int64_t r1, int64_t nsub, int8_t *xq,
                     float *xd, int32_t *xh)
{
    float v[32];
    for (int64_t b = r0 * nsub; b < r1 * nsub; b++) {
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
        float acc[8] = {0};
        for (int64_t blk = 0; blk < nblk; blk++) {
            const uint8_t *b = wr + blk * ty.bytes;
            float d, e;
            qd_floats(&ty, b, &d, &e);
            for (int s = 0; s < ty.sub; s++) {
                uint8_t u[32];
                int32_t S[2], N[2];
                qd_bytes(jb->qt, b, s, u);
                qd_ints(jb->qt, b, s, S, N);
                const float dS0 = d * (float)S[0], dS1 = d * (float)S[1];
                const float eN0 = e * (float)N[0], eN1 = e * (float)N[1];
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
                    acc[r] = qd_terms(&ty, acc[r], is[0], is[1], xh[0], xh[1], dS0, dS1, eN0, eN1,
                                      jb->xd[xi]);
                }
            }
        }
        for (int r = 0; r < jb->rows; r++)
            jb->out[(int64_t)r * jb->n + j] = acc[r];
    }
}

/* ---- the op */

/* Rows [r0, r1) of jb on the row functions of path, 8 rows of x at a time, weight rows [j0, j1)
 * 16 at a time (the AVX-512 group), x rows in blocks of XBLOCK whose codes stay in cache while
 * the weight rows stream past. */
#define XBLOCK 64
static void rows_path(int path, const wk_qdot_job *jb, int64_t r0, int64_t r1, int64_t j0,
                      int64_t j1)
{
    void (*rows_fn)(const wk_qdot_job *, int64_t, int64_t) =
        path >= WK_QDOT_AVX512 ? wk_qdot_rows_avx512
        : path == WK_QDOT_AVX2 ? wk_qdot_rows_avx2
                               : wk_qdot_rows_scalar;
    for (int64_t j = j0; j < j1; j += 16)
        for (int64_t r = r0; r < r1; r += 8) {
            wk_qdot_job c = *jb;
            c.rows = (int)(r1 - r < 8 ? r1 - r : 8);
            c.xq = jb->xq + r * jb->nsub * 32;
            c.xd = jb->xd + r * jb->nsub;
            c.xh = jb->xh + 2 * r * jb->nsub;
            c.out = jb->out + r * jb->n;
            c.xf = jb->xf ? jb->xf + 3 * r * jb->nsub : NULL;
            rows_fn(&c, j, j + 16 < j1 ? j + 16 : j1);
        }
}


/* x's codes, scales and half sums from the activations act (wick.h's layout) instead of
 * quantizing x: rows [r0, r1) of m. */
static void act_unpack(const uint8_t *act, int64_t m, int64_t r0, int64_t r1, int64_t nsub,
                       int8_t *xq, float *xd, int32_t *xh)
{
    const int64_t k = nsub * 32;
    memcpy(xq + r0 * k, act + r0 * k, (size_t)((r1 - r0) * k));
    memcpy(xd + r0 * nsub, act + m * k + r0 * nsub * 4, (size_t)((r1 - r0) * nsub) * 4);
    const uint8_t *hs = act + m * k + m * nsub * 4;
    for (int64_t b = r0 * nsub; b < r1 * nsub; b++) {
        uint32_t v;
        memcpy(&v, hs + 4 * b, 4);
        xh[2 * b] = (int16_t)(v & 0xFFFFu);
        xh[2 * b + 1] = (int16_t)(v >> 16);
    }
}

/* wk_cpu_qdot and wk_cpu_qdot_act: x quantized here, or its activations given (act). */
static wk_status qdot_run(int path, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                          const uint8_t *act, int64_t rows, const void *w, int64_t n, int64_t k)
{
    const int64_t nsub = k / 32;
    /* many rows: the product of many rows (AMX tiles, else AVX-512 VNNI) */
    const int gemm = path >= WK_QDOT_AVX512 && rows >= WK_QDOT_GEMM_MIN_ROWS &&
                     wk_qgemm_vnni_built && qd_type_of((int)qt).sub > 0;
    const int amx = gemm && path == WK_QDOT_AMX && wk_qgemm_amx_takes((int)qt);
    const int64_t prow = gemm ? (rows + 15) / 16 * 16 : rows; /* zero rows up to 16s */
    const size_t nb = (size_t)(prow * nsub);
    const size_t ob = dt == WK_DTYPE_F32 ? 0 : (size_t)(rows * n) * sizeof(float);
    const int par = (double)rows * (double)n * (double)k >= (double)WK_CPU_PAR_THRESHOLD;
    const int nt = par ? omp_get_max_threads() : 1;
    wk_qdot_job jb = {.qt = (int)qt,
                      .w = w,
                      .row_bytes = k / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt),
                      .n = n,
                      .nsub = nsub,
                      .rows = 0,
                      .pf_next = wk_cpu_qdot_pf_next(),
                      .gather = wk_cpu_qdot_gather()};
    size_t sb = gemm ? wk_qgemm_vnni_scratch(&jb) : 0;
    if (amx && wk_qgemm_amx_scratch(&jb) > sb)
        sb = wk_qgemm_amx_scratch(&jb);
    sb = (sb + 63) / 64 * 64;
    const size_t fb = path >= WK_QDOT_AVX512 && qd_type_of((int)qt).eof >= 0 ? nb * 3 * sizeof(float) : 0;
    /* one allocation: x codes (64-byte aligned), scales, half sums, the f32 result when dt is
     * not f32, the half sums as floats (AVX-512 and AMX, affine types), the packing buffers of
     * the product of many rows (one per thread) */
    /* (through the CPU storage cache: a prefill allocates the same sizes every step, and fresh
     * pages would fault in and be zeroed each time) */
    char *buf = wk_host_alloc(nb * 32 + nb * sizeof(float) + nb * 2 * sizeof(int32_t) + ob + fb +
                              (size_t)nt * sb + 128);
    if (!buf)
        return wk_err(WK_ERR_OUT_OF_MEMORY, "qmatmul: cannot allocate the quantized x (%lld x %lld)",
                      (long long)rows, (long long)k);
    int8_t *xq = (int8_t *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    float *xd = (float *)(xq + nb * 32);
    int32_t *xh = (int32_t *)(xd + nb);
    float *of = (float *)(xh + 2 * nb);
    float *xf = (float *)((char *)of + ob);
    char *scratch = (char *)(((uintptr_t)((char *)xf + fb) + 63) & ~(uintptr_t)63);
    const int simd_x = path >= WK_QDOT_AVX512;
#pragma omp parallel for schedule(static) if (par && rows > 1)
    for (int64_t r = 0; r < rows; r++) {
        if (act)
            act_unpack(act, rows, r, r + 1, nsub, xq, xd, xh);
        else
            (simd_x ? wk_qdot_quant_x_avx512 : wk_qdot_quant_x)((int)dt, x, r, r + 1, nsub, xq, xd,
                                                                  xh);
    }
    if (prow > rows) {
        memset(xq + rows * nsub * 32, 0, (size_t)((prow - rows) * nsub * 32));
        memset(xd + rows * nsub, 0, (size_t)((prow - rows) * nsub) * sizeof(float));
        memset(xh + 2 * rows * nsub, 0, (size_t)((prow - rows) * nsub * 2) * sizeof(int32_t));
    }
    jb.xq = xq, jb.xd = xd, jb.xh = xh;
    jb.out = dt == WK_DTYPE_F32 ? out : of;
    if (fb) {
        for (size_t b = 0; b < nb; b++) {
            xf[3 * b] = (float)xh[2 * b];
            xf[3 * b + 1] = (float)xh[2 * b + 1];
            xf[3 * b + 2] = (float)(xh[2 * b] + xh[2 * b + 1]);
        }
        jb.xf = xf;
    }

    if (gemm) {
        /* WK_QDOT_GEMM_ROWS weight rows per item; prow x rows each (outputs of padded rows dropped) */
        const int64_t nit = (n + WK_QDOT_GEMM_ROWS - 1) / WK_QDOT_GEMM_ROWS;
#pragma omp parallel num_threads(nt) if (par && nit > 1)
        {
            void *sc = scratch + (size_t)omp_get_thread_num() * sb;
#pragma omp for schedule(guided)
            for (int64_t it = 0; it < nit; it++) {
                const int64_t j0 = it * WK_QDOT_GEMM_ROWS, j1 = j0 + WK_QDOT_GEMM_ROWS < n ? j0 + WK_QDOT_GEMM_ROWS : n;
                if (!amx || wk_qgemm_amx(&jb, rows, j0, j1, sc) != 0)
                    wk_qgemm_vnni(&jb, rows, j0, j1, sc);
            }
        }
    } else {
        /* guided schedule over chunks of 16 weight rows (contiguous runs of chunks per thread;
         * on 16 cores static ones waited on the slowest thread), x in blocks of XBLOCK rows */
        const int64_t nch = (n + 15) / 16;
        for (int64_t r0 = 0; r0 < rows; r0 += XBLOCK) {
            const int64_t r1 = r0 + XBLOCK < rows ? r0 + XBLOCK : rows;
#pragma omp parallel for schedule(guided) if (par && nch > 1)
            for (int64_t c = 0; c < nch; c++)
                rows_path(path, &jb, r0, r1, c * 16, c * 16 + 16 < n ? c * 16 + 16 : n);
        }
    }

    if (dt != WK_DTYPE_F32) {
#pragma omp parallel for schedule(static) if (par && rows * n >= WK_CPU_PAR_THRESHOLD)
        for (int64_t i = 0; i < rows * n; i++)
            ((uint16_t *)out)[i] =
                dt == WK_DTYPE_F16 ? wk_fp_f32_to_f16(of[i]) : wk_fp_f32_to_bf16(of[i]);
    }
    wk_host_free(buf);
    return WK_OK;
}

wk_status wk_cpu_qdot(int path, wk_qtype qt, wk_dtype dt, void *out, const void *x, int64_t rows,
                      const void *w, int64_t n, int64_t k)
{
    return qdot_run(path, qt, dt, out, x, NULL, rows, w, n, k);
}

wk_status wk_cpu_qdot_act(int path, wk_qtype qt, wk_dtype dt, void *out, const void *act,
                          int64_t rows, const void *w, int64_t n, int64_t k)
{
    return qdot_run(path, qt, dt, out, NULL, act, rows, w, n, k);
}
