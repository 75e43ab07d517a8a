/* gpu_bench_quant.c: quantized matmul, dequantize and the dense GEMM beside them on one device,
 * for docs/performance.md (not a test).
 *   build: part of `make` (target wick_gpu_bench_quant); run:
 *   build/wick_gpu_bench_quant [--device D] [--variants default,warp,warp2,...]
 *                              [--types q4_0,q8_0,..|all] [--rows 1,8] [--act 1]
 * Weights: a (256, k) f32 random block quantized on the CPU, its rows repeated to n rows (the
 * bytes are real blocks of the type, so the kernels decode realistic data), uploaded.
 *   - matvec rows (m = 1 and 8, or those of --rows, 1..8; x f32) for W (n, k) = (4096, 14336),
 *     (14336, 4096), (4096, 4096), every block type and F16/BF16, each matvec kernel of
 *     kernels/qmv.cu named in --variants (default: "default", the one src/gpu/gpu_quant.c
 *     qmv_pick or pmv_split takes, then warp, warp2, warp4, split, stream, chunks, mma, rowpair,
 *     words, words4 for the block types; pmv, pmv_k2, pmv_k4 for F16/BF16, one row); selected by the
 *     environment variable WICK_QMV, set here between measurements; a kernel that cannot run a
 *     case runs the default's fallback):
 *     time per call (wick_qmatmul:
 *     activation quantization, the product, output allocation; with --act 1 the activations
 *     are quantized once before the timing (wk_quantize_act) and each call is wk_qmatmul_act:
 *     the product and the output allocation, as a decode step whose norm made them), effective
 *     bandwidth = weight
 *     bytes / time as % of the device-to-device copy bandwidth measured here (clone of 1 GiB:
 *     2 GiB moved); "cold": each call uses the next of several weight copies whose total exceeds
 *     256 MiB (more than the L2 of any current GPU: no call finds its weights in L2), "warm": one
 *     weight buffer reused (as ggml's test-backend-ops perf measures). Each kernel's output is
 *     compared with the first one's (normalised MSE; the kernels differ only in float
 *     summation order, so anything above 1e-8 is reported as MISMATCH);
 *   - batched rows (m = 512, x bf16; Q4_0 Q8_0 Q4_K Q6_K at 14336 x 4096): TFLOP/s (2 m n k)
 *     beside wick's dense bf16 matmul of the same shape;
 *   - dequantize Q4_0 -> f32: (block bytes read + f32 bytes written) / time, % of copy.
 * Lines starting "QMV " are machine-readable (tools/device/decode.sh joins them with ggml's);
 * the table is printed last. */
#include "bench.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static wk_device *dev, *cpu;

/* Quantized (n, k) weight on dev: `copies` separate buffers of the same bytes. */
typedef struct qweight {
    wk_qtype qt;
    int64_t n, k;
    size_t bytes;
    int copies;
    wk_storage *w[64];
} qweight;

static void qweight_make(qweight *q, wk_qtype qt, int64_t n, int64_t k, int copies)
{
    memset(q, 0, sizeof *q);
    q->qt = qt;
    q->n = n;
    q->k = k;
    const int64_t tile = 256;
    wk_storage *x, *blk;
    wk_layout lx;
    int64_t dims[2] = {tile, k};
    CHECK(wk_layout_contiguous(&lx, 2, dims));
    CHECK(wk_rand_uniform(&x, cpu, WK_DTYPE_F32, (size_t)(tile * k), -1, 1));
    CHECK(wk_quantize(&blk, qt, x, &lx));
    const size_t row = (size_t)(k / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt));
    q->bytes = row * (size_t)n;
    unsigned char *tb = malloc(row * (size_t)tile), *all = malloc(q->bytes);
    if (!tb || !all) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    CHECK(wk_storage_to_host(tb, row * (size_t)tile, blk));
    for (int64_t r = 0; r < n; r++)
        memcpy(all + (size_t)r * row, tb + (size_t)(r % tile) * row, row);
    q->copies = copies;
    for (int c = 0; c < copies; c++)
        CHECK(wk_storage_from_host(&q->w[c], dev, WK_DTYPE_U8, all, q->bytes));
    free(tb);
    free(all);
    wk_storage_free(x);
    wk_storage_free(blk);
}

static void qweight_free(qweight *q)
{
    for (int c = 0; c < q->copies; c++)
        wk_storage_free(q->w[c]);
}

/* Seconds per call of fn, best of 3 trials of `reps` calls after 2 warm-up calls. */
typedef void (*call_fn)(void *ctx, int i);
static double timeit(call_fn fn, void *ctx, int reps)
{
    for (int i = 0; i < 2; i++)
        fn(ctx, i);
    CHECK(wk_device_synchronize(dev));
    double best = 1e30;
    for (int trial = 0; trial < 3; trial++) {
        double t0 = now();
        for (int i = 0; i < reps; i++)
            fn(ctx, i);
        CHECK(wk_device_synchronize(dev));
        double t = (now() - t0) / reps;
        if (t < best)
            best = t;
    }
    return best;
}

typedef struct qmm_ctx {
    qweight *q;
    wk_storage *x;
    wk_layout lx;
    int cold;
    wk_storage *act; /* --act 1: x's activations (wk_quantize_act), else NULL */
} qmm_ctx;

static void call_qmm(void *p, int i)
{
    qmm_ctx *c = p;
    wk_storage *o;
    const int w = c->cold ? i % c->q->copies : 0;
    if (c->act)
        CHECK(wk_qmatmul_act(&o, WK_DTYPE_F32, c->act, c->lx.dims[0], c->q->w[w], c->q->qt,
                             c->q->n, c->q->k));
    else
        CHECK(wk_qmatmul(&o, c->x, &c->lx, c->q->w[w], c->q->qt, c->q->n, c->q->k));
    wk_storage_free(o);
}

typedef struct mm_ctx {
    wk_storage *a, *b;
    wk_layout la, lb;
} mm_ctx;

static void call_mm(void *p, int i)
{
    (void)i;
    mm_ctx *c = p;
    wk_storage *o;
    CHECK(wk_matmul(&o, c->a, &c->la, c->b, &c->lb));
    wk_storage_free(o);
}

typedef struct deq_ctx {
    qweight *q;
} deq_ctx;

static void call_deq(void *p, int i)
{
    deq_ctx *c = p;
    wk_storage *o;
    CHECK(wk_dequantize(&o, WK_DTYPE_F32, c->q->w[i % c->q->copies], c->q->qt, c->q->n * c->q->k));
    wk_storage_free(o);
}

static void call_clone(void *p, int i)
{
    (void)i;
    wk_storage *o;
    CHECK(wk_storage_clone(&o, (wk_storage *)p));
    wk_storage_free(o);
}

/* Normalised MSE of a against b (n floats). */
static double nmse(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return den > 0 ? num / den : num;
}

static const wk_qtype ALL_QT[] = {WK_QTYPE_Q4_0, WK_QTYPE_Q8_0, WK_QTYPE_Q4_K, WK_QTYPE_Q6_K,
                                  WK_QTYPE_Q4_1, WK_QTYPE_Q5_0, WK_QTYPE_Q5_1, WK_QTYPE_Q8_1,
                                  WK_QTYPE_Q2_K, WK_QTYPE_Q3_K, WK_QTYPE_Q5_K, WK_QTYPE_Q8_K,
                                  WK_QTYPE_F16, WK_QTYPE_BF16};
#define NQT ((int)(sizeof ALL_QT / sizeof ALL_QT[0]))

static int want_type(const char *list, wk_qtype qt)
{
    if (!list || strcmp(list, "all") == 0)
        return 1;
    const char *name = wk_qtype_name(qt);
    const size_t ln = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        const size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == ln && strncmp(p, name, l) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *spec = "cuda:0", *types = "all";
    char variants[128] = "default,warp,warp2,warp4,split,stream,chunks,mma,rowpair,words,words4";
    char rowlist[64] = "1,8";
    int use_act = 0;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--device") == 0)
            spec = argv[i + 1];
        else if (strcmp(argv[i], "--types") == 0)
            types = argv[i + 1];
        else if (strcmp(argv[i], "--rows") == 0)
            snprintf(rowlist, sizeof rowlist, "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--variants") == 0)
            snprintf(variants, sizeof variants, "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--act") == 0)
            use_act = atoi(argv[i + 1]);
    }
    char *vl[16];
    int nv = 0;
    for (char *tok = strtok(variants, ","); tok && nv < 16; tok = strtok(NULL, ","))
        vl[nv++] = tok;
    int64_t ml[8];
    int nm = 0;
    for (char *tok = strtok(rowlist, ","); tok && nm < 8; tok = strtok(NULL, ","))
        if (atoi(tok) >= 1 && atoi(tok) <= 8)
            ml[nm++] = atoi(tok);
    CHECK(wk_device_open(&dev, spec));
    CHECK(wk_device_open(&cpu, "cpu"));
    printf("device %s%s\n", wk_device_name(dev),
           use_act ? " (matvecs: wk_qmatmul_act of activations quantized once)" : "");

    wk_storage *big;
    CHECK(wk_storage_zeros(&big, dev, WK_DTYPE_U8, (size_t)1 << 30));
    const double copy_bw = 2.0 * (double)(1u << 30) / timeit(call_clone, big, 10);
    wk_storage_free(big);
    printf("copy bandwidth %.0f GB/s\n", copy_bw / 1e9);

    static char lines[1024][200];
    int nl = 0;
    const int64_t shapes[3][2] = {{4096, 14336}, {14336, 4096}, {4096, 4096}}; /* (n, k) */
    for (int si = 0; si < 3; si++) {
        for (int qi = 0; qi < NQT; qi++) {
            const wk_qtype qt = ALL_QT[qi];
            const int64_t n = shapes[si][0], k = shapes[si][1];
            if (!want_type(types, qt))
                continue;
            if (!wk_device_supports_quant(dev, WK_OP_QMATMUL, qt, WK_DTYPE_F32)) {
                snprintf(lines[nl++], 200, "%-6s %5lldx%-5lld  not supported on this device",
                         wk_qtype_name(qt), (long long)n, (long long)k);
                continue;
            }
            qweight q;
            const size_t row = (size_t)(k / wk_qtype_block_elems(qt) * wk_qtype_block_bytes(qt));
            int copies = (int)((((size_t)256 << 20) + row * (size_t)n - 1) / (row * (size_t)n)) + 1;
            if (copies > 64)
                copies = 64;
            qweight_make(&q, qt, n, k, copies);
            for (int mi = 0; mi < nm; mi++) {
                const int64_t m = ml[mi];
                qmm_ctx c = {&q, NULL, {0}, 0, NULL};
                int64_t dx[2] = {m, k};
                CHECK(wk_layout_contiguous(&c.lx, 2, dx));
                CHECK(wk_rand_uniform(&c.x, dev, WK_DTYPE_F32, (size_t)(m * k), -1, 1));
                if (use_act)
                    CHECK(wk_quantize_act(&c.act, c.x, &c.lx));
                const size_t no = (size_t)(m * n);
                float *first = malloc(no * sizeof(float)), *got = malloc(no * sizeof(float));
                if (!first || !got) {
                    fprintf(stderr, "out of host memory\n");
                    return 1;
                }
                const int plain = qt == WK_QTYPE_F16 || qt == WK_QTYPE_BF16;
                for (int vi = 0; vi < nv; vi++) {
                    /* float weights: the pmv kernels (pmv, pmv_k2, pmv_k4) and the default;
                     * block types: the others */
                    if (vi > 0 && plain != !strncmp(vl[vi], "pmv", 3))
                        continue;
                    setenv("WICK_QMV", vl[vi], 1);
                    wk_storage *o;
                    if (c.act)
                        CHECK(wk_qmatmul_act(&o, WK_DTYPE_F32, c.act, m, q.w[0], qt, n, k));
                    else
                        CHECK(wk_qmatmul(&o, c.x, &c.lx, q.w[0], qt, n, k));
                    CHECK(wk_storage_to_host(vi ? got : first, no, o));
                    wk_storage_free(o);
                    const double e = vi ? nmse(got, first, no) : 0.0;
                    c.cold = 1;
                    const double tc = timeit(call_qmm, &c, 50);
                    c.cold = 0;
                    const double tw = timeit(call_qmm, &c, 50);
                    const double pc = 100.0 * (double)q.bytes / tc / copy_bw;
                    const double pw = 100.0 * (double)q.bytes / tw / copy_bw;
                    printf("QMV %s %lld %lld %lld %s %.2f %.2f %.1f %.1f %.3g%s\n",
                           wk_qtype_name(qt), (long long)n, (long long)k, (long long)m, vl[vi],
                           tc * 1e6, tw * 1e6, pc, pw, e, e > 1e-8 ? " MISMATCH" : "");
                    snprintf(lines[nl++], 200,
                             "%-6s %5lldx%-5lld m=%lld %-7s cold %7.1f us %4.0f%% | warm %7.1f us %4.0f%%  nmse/first %.1e%s",
                             wk_qtype_name(qt), (long long)n, (long long)k, (long long)m, vl[vi],
                             tc * 1e6, pc, tw * 1e6, pw, e, e > 1e-8 ? " MISMATCH" : "");
                }
                unsetenv("WICK_QMV");
                free(first);
                free(got);
                wk_storage_free(c.x);
                wk_storage_free(c.act);
            }
            const int main4 = qt == WK_QTYPE_Q4_0 || qt == WK_QTYPE_Q8_0 ||
                              qt == WK_QTYPE_Q4_K || qt == WK_QTYPE_Q6_K;
            /* batched: m = 512, x bf16, beside the dense bf16 matmul x @ W^T */
            if (main4 && si == 1) {
                const int64_t m = 512;
                qmm_ctx c = {&q, NULL, {0}, 0, NULL};
                int64_t dx[2] = {m, k};
                CHECK(wk_layout_contiguous(&c.lx, 2, dx));
                CHECK(wk_rand_uniform(&c.x, dev, WK_DTYPE_BF16, (size_t)(m * k), -1, 1));
                double tq = -1;
                if (wk_device_supports_quant(dev, WK_OP_QMATMUL, qt, WK_DTYPE_BF16))
                    tq = timeit(call_qmm, &c, 10);
                mm_ctx d;
                int64_t dw[2] = {n, k};
                wk_layout lw;
                CHECK(wk_layout_contiguous(&lw, 2, dw));
                CHECK(wk_layout_transpose(&d.lb, &lw, 0, 1));
                d.a = c.x;
                d.la = c.lx;
                CHECK(wk_rand_uniform(&d.b, dev, WK_DTYPE_BF16, (size_t)(n * k), -1, 1));
                const double td = timeit(call_mm, &d, 10);
                const double fl = 2.0 * (double)m * (double)n * (double)k;
                snprintf(lines[nl++], 200,
                         "%-6s %5lldx%-5lld m=512 x bf16: %6.1f TFLOP/s | dense bf16 %6.1f TFLOP/s (%.0f%%)",
                         wk_qtype_name(qt), (long long)n, (long long)k,
                         tq > 0 ? fl / tq / 1e12 : 0.0, fl / td / 1e12, tq > 0 ? 100.0 * td / tq : 0.0);
                wk_storage_free(d.b);
                wk_storage_free(c.x);
            }
            if (qt == WK_QTYPE_Q4_0 && si == 1) {
                deq_ctx c = {&q};
                const double t = timeit(call_deq, &c, 20);
                const double bytes = (double)q.bytes + 4.0 * (double)n * (double)k;
                snprintf(lines[nl++], 200, "dequantize q4_0 -> f32 %lldx%lld: %6.0f GB/s %4.0f%% of copy",
                         (long long)n, (long long)k, bytes / t / 1e9, 100.0 * bytes / t / copy_bw);
            }
            qweight_free(&q);
            fflush(stdout);
        }
    }
    printf("\nGPU quantized ops (copy bandwidth %.0f GB/s)\n", copy_bw / 1e9);
    for (int i = 0; i < nl; i++)
        printf("%s\n", lines[i]);
    wk_device_close(cpu);
    wk_device_close(dev);
    return 0;
}
