/* cpu_qmv.c: the CPU's quantized matrix product (wk_qmatmul with x of m rows, by default 1 and 8
 * (decode), --rows 1,8,64,512 for prefill, against a GGML block-quantized W (n, k)), microseconds
 * per call and multiply-adds per second (a benchmark, not a test).
 * Shapes: the three of a llama-style layer, W (n, k) = (4096, 14336), (14336, 4096),
 * (4096, 4096), for Q4_0, Q8_0, Q4_K, Q6_K (or those named on the command line: q4_0 ...).
 * It calls the CPU backend's qmatmul on host buffers (no storage allocation in the timing), on
 * the path WICK_CPU_QDOT selects (default: the best this CPU runs; exact: the float path).
 * W: random bytes with each block's scales set to small f16 values (the timing does not depend on
 * the values); f32, f16 and bf16 (the float product, cpu_fdot.h) are named on the command line too. Each time is the minimum over rounds (default 5; --rounds R) of the mean of enough
 * calls for about 0.1 s, after one warm-up call: the machine is shared, the minimum is the least
 * disturbed figure. Threads: OMP_NUM_THREADS.
 * --shapes NxK,... replaces the three (k a multiple of 256), e.g. 128256x4096 for a Llama-3
 * output matvec; --cold reads W from memory: each call takes the next of enough copies of W to
 * fill 2 GiB, beyond any last level cache (without it W stays in cache when it fits).
 * Build: cmake --build BUILD --target wick_cpu_qmv;  run: OMP_NUM_THREADS=2 BUILD/wick_cpu_qmv
 *        [--rounds R] [--rows M1,M2,...] [--shapes NxK,...] [--cold] [--cpu-time] [q4_0 f16 ...] */
#include "cpu/cpu_ops.h"
#include "cpu/cpu_qdot.h"
#include "cpu/cpu_qdot_types.h"
#include "wick.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <time.h>

#define COLD_BYTES ((size_t)2 << 30)

/* --cpu-time: the process's CPU seconds divided by the threads instead of wall seconds (on a
 * machine shared with other work: the time the product itself took, less what waiting cost) */
static int g_cpu_time;

static double now(void)
{
    struct timespec ts;
    clock_gettime(g_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    const double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return g_cpu_time ? t / omp_get_max_threads() : t;
}

/* Random W of qt with sane scales: d = 2^-6 and min 2^-8 (f16), q8_k d = 2^-6 (f32); the float
 * types (f32, f16, bf16: blocks of one element) values in [-1, 1). */
static uint8_t *make_w(wk_qtype qt, int64_t n, int64_t k, size_t *bytes)
{
    if (wk_qtype_block_elems(qt) == 1) {
        const size_t es = qt == WK_QTYPE_F32 ? 4 : 2;
        *bytes = (size_t)(n * k) * es;
        uint8_t *w = malloc(*bytes);
        for (int64_t i = 0; w && i < n * k; i++) {
            const float v = (float)((i * 7919) % 2001 - 1000) * 1e-3f;
            const uint16_t h = qt == WK_QTYPE_F16 ? wk_f32_to_f16(v) : wk_f32_to_bf16(v);
            memcpy(w + (size_t)i * es, es == 4 ? (const void *)&v : (const void *)&h, es);
        }
        return w;
    }
    const qd_type ty = qd_type_of((int)qt);
    const int64_t nb = n * k / wk_qtype_block_elems(qt);
    *bytes = (size_t)nb * (size_t)ty.bytes;
    uint8_t *w = malloc(*bytes);
    if (!w)
        return NULL;
    uint64_t st = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < *bytes; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = (uint8_t)(st >> 56);
    }
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *p = w + b * ty.bytes;
        if (ty.sgn && ty.sub == 8) {
            const float d = 0.015625f;
            memcpy(p, &d, 4);
        } else {
            p[ty.dof] = 0x00, p[ty.dof + 1] = 0x24; /* 2^-6 */
            if (ty.eof >= 0)
                p[ty.eof] = 0x00, p[ty.eof + 1] = 0x1C; /* 2^-8 */
        }
    }
    return w;
}

int main(int argc, char **argv)
{
    int rounds = 5;
    wk_qtype qts[16];
    int nq = 0, nm = 2, ns = 3, cold = 0;
    int64_t ms[16] = {1, 8};
    int64_t shapes[8][2] = {{4096, 14336}, {14336, 4096}, {4096, 4096}};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--cpu-time")) {
            g_cpu_time = 1;
            continue;
        }
        if (!strcmp(argv[i], "--cold")) {
            cold = 1;
            continue;
        }
        if (!strcmp(argv[i], "--shapes") && i + 1 < argc) {
            ns = 0;
            for (char *t = strtok(argv[++i], ","); t && ns < 8; t = strtok(NULL, ","))
                if (sscanf(t, "%" SCNd64 "x%" SCNd64, &shapes[ns][0], &shapes[ns][1]) == 2 &&
                    shapes[ns][0] > 0 && shapes[ns][1] > 0 && shapes[ns][1] % 256 == 0)
                    ns++;
            continue;
        }
        if (!strcmp(argv[i], "--rows") && i + 1 < argc) {
            nm = 0;
            for (char *t = strtok(argv[++i], ","); t && nm < 16; t = strtok(NULL, ","))
                if (atoll(t) > 0)
                    ms[nm++] = atoll(t);
            continue;
        }
        for (int q = 0; q < 40; q++)
            if (wk_qtype_block_elems((wk_qtype)q) > 0 && !strcmp(argv[i], wk_qtype_name((wk_qtype)q)))
                qts[nq++] = (wk_qtype)q;
    }
    if (!nq) {
        qts[0] = WK_QTYPE_Q4_0, qts[1] = WK_QTYPE_Q8_0, qts[2] = WK_QTYPE_Q4_K, qts[3] = WK_QTYPE_Q6_K;
        nq = 4;
    }
    printf("path %s, %d threads, min over %d rounds%s\n", wk_cpu_qdot_name(wk_cpu_qdot_path()),
           omp_get_max_threads(), rounds, cold ? ", W from memory" : "");
    printf("%-6s %6s %6s %4s %12s %8s %8s\n", "type", "n", "k", "m", "us/call", "GB/s(W)", "GMAC/s");
    for (int q = 0; q < nq; q++)
        for (int s = 0; s < ns; s++)
            for (int mi = 0; mi < nm; mi++) {
                const int64_t n = shapes[s][0], k = shapes[s][1], m = ms[mi];
                size_t wb;
                uint8_t *w = make_w(qts[q], n, k, &wb);
                float *x = malloc((size_t)(m * k) * sizeof *x), *out = malloc((size_t)(m * n) * sizeof *out);
                /* --cold: copies of W through COLD_BYTES, one after another, so each call reads its
                 * W from memory rather than from the last level cache */
                const int nw = cold ? (int)((COLD_BYTES + wb - 1) / wb) + 1 : 1;
                uint8_t **ws = malloc((size_t)nw * sizeof *ws);
                if (!w || !x || !out || !ws)
                    return 1;
                ws[0] = w;
                for (int c = 1; c < nw; c++) {
                    if (!(ws[c] = malloc(wb)))
                        return 1;
                    memcpy(ws[c], w, wb);
                }
                for (int64_t i = 0; i < m * k; i++)
                    x[i] = (float)((i * 7919) % 2001 - 1000) * 1e-3f;
                double t0 = now();
                wk_cpu_qmatmul(NULL, qts[q], WK_DTYPE_F32, out, x, m, w, n, k);
                const double one = now() - t0;
                int calls = one > 0.1 ? 1 : (int)(0.1 / (one > 1e-6 ? one : 1e-6)) + 1;
                calls = calls > nw ? calls : nw;
                double best = 1e30;
                for (int r = 0; r < rounds; r++) {
                    t0 = now();
                    for (int c = 0; c < calls; c++)
                        wk_cpu_qmatmul(NULL, qts[q], WK_DTYPE_F32, out, x, m, ws[c % nw], n, k);
                    const double t = (now() - t0) / calls;
                    best = t < best ? t : best;
                }
                printf("%-6s %6lld %6lld %4lld %12.1f %8.1f %8.1f\n", wk_qtype_name(qts[q]),
                       (long long)n, (long long)k, (long long)m, best * 1e6, (double)wb / best * 1e-9,
                       (double)m * (double)n * (double)k / best * 1e-9);
                fflush(stdout);
                for (int c = 0; c < nw; c++)
                    free(ws[c]);
                free(ws), free(x), free(out);
            }
    return 0;
}
