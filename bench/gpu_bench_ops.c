/* gpu_bench_ops.c: the compute ops of the GPU backend (matmul through the vendor library and the
 * portable GEMM, convolutions, fused ops, indexing, image ops, argsort) on one device, for
 * docs/performance.md (not a test).
 *   build: part of `make` (target wick_gpu_bench_ops); run: build/wick_gpu_bench_ops [--device D]
 *   bench/gpu_compare_ops.py runs it beside PyTorch on the same GPU and prints the table.
 * Each row is timed over repeated calls after a warm-up, the device synchronized before the clock
 * is read, best of 3 trials. Prints "row <name> <flop|byte> <amount> <seconds per call>":
 * matmul and convolution rows count 2*m*n*k flops, the others the bytes of every input read once
 * and every output written once (argsort: the input bytes only, as the issue quotes it). */
#include "bench.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static wk_device *dev;

/* An operand: storage + contiguous layout. */
typedef struct operand {
    wk_storage *s;
    wk_layout l;
} operand;

static operand rnd(wk_dtype dt, int32_t rank, const int64_t *dims, double lo, double hi)
{
    operand o;
    CHECK(wk_layout_contiguous(&o.l, rank, dims));
    CHECK(wk_rand_uniform(&o.s, dev, dt, (size_t)wk_layout_elem_count(&o.l), lo, hi));
    return o;
}

/* Integer ids in [0, limit): uniform floats in [0, limit) cast to dt (truncation). */
static operand ids_of(wk_dtype dt, int32_t rank, const int64_t *dims, int64_t limit)
{
    operand f = rnd(WK_DTYPE_F32, rank, dims, 0, (double)limit - 0.5);
    operand o = {NULL, f.l};
    CHECK(wk_to_dtype(&o.s, f.s, &f.l, dt));
    wk_storage_free(f.s);
    return o;
}

/* ---- the rows: one closure-like struct per row */
typedef struct row {
    const char *name;
    const char *unit; /* "flop" or "byte" */
    double amount;
    int kind;
    operand a, b, c;
    int64_t i0;
    int portable;
    int32_t cs, cpad; /* conv2d stride and padding (cs 0: stride 1, padding 1) */
} row;

enum { K_MATMUL, K_CONV1D, K_CONV2D, K_SOFTMAX, K_RMS, K_LAYER, K_INDEX_SELECT, K_GATHER,
       K_SCATTER_ADD, K_UP_NEAREST, K_UP_BILINEAR, K_MAXPOOL, K_AVGPOOL, K_ARGSORT, K_COPY,
       K_ADD_RMS, K_SWIGLU };

static void run_row(const row *r)
{
    wk_storage *o = NULL;
    wk_conv_params cp = {{1, 1}, {1, 1}, {1, 1}, {0, 0}, 1};
    if (r->cs > 0)
        cp = (wk_conv_params){{r->cs, r->cs}, {r->cpad, r->cpad}, {1, 1}, {0, 0}, 1};
    wk_pool_params pp = {{2, 2}, {2, 2}};
    switch (r->kind) {
    case K_MATMUL: CHECK(wk_matmul(&o, r->a.s, &r->a.l, r->b.s, &r->b.l)); break;
    case K_CONV1D: CHECK(wk_conv1d(&o, r->a.s, &r->a.l, r->b.s, &r->b.l, &cp)); break;
    case K_CONV2D: CHECK(wk_conv2d(&o, r->a.s, &r->a.l, r->b.s, &r->b.l, &cp)); break;
    case K_SOFTMAX: CHECK(wk_softmax_last_dim(&o, r->a.s, &r->a.l)); break;
    case K_RMS: CHECK(wk_rms_norm(&o, r->a.s, &r->a.l, r->b.s, &r->b.l, 1e-5f)); break;
    case K_LAYER:
        CHECK(wk_layer_norm(&o, r->a.s, &r->a.l, r->b.s, &r->b.l, r->c.s, &r->c.l, 1e-5f));
        break;
    case K_INDEX_SELECT: CHECK(wk_index_select(&o, r->a.s, &r->a.l, r->b.s, &r->b.l, 0)); break;
    case K_GATHER: CHECK(wk_gather(&o, r->a.s, &r->a.l, r->b.s, &r->b.l, 1)); break;
    case K_SCATTER_ADD:
        CHECK(wk_scatter_add_set(r->a.s, &r->a.l, r->b.s, &r->b.l, r->c.s, &r->c.l, 1));
        break;
    case K_UP_NEAREST:
        CHECK(wk_upsample_nearest2d(&o, r->a.s, &r->a.l, 2 * r->a.l.dims[2], 2 * r->a.l.dims[3]));
        break;
    case K_UP_BILINEAR:
        CHECK(wk_upsample_bilinear2d(&o, r->a.s, &r->a.l, 2 * r->a.l.dims[2],
                                     2 * r->a.l.dims[3], 0, 0.0, 0.0));
        break;
    case K_MAXPOOL: CHECK(wk_max_pool2d(&o, r->a.s, &r->a.l, &pp)); break;
    case K_AVGPOOL: CHECK(wk_avg_pool2d(&o, r->a.s, &r->a.l, &pp)); break;
    case K_ARGSORT: CHECK(wk_arg_sort_last_dim(&o, r->a.s, &r->a.l, 1)); break;
    case K_COPY: CHECK(wk_storage_clone(&o, r->a.s)); break;
    case K_ADD_RMS: { /* x = a, alpha = b, r = c; the sum kept (the residual stream) */
        wk_storage *sum = NULL;
        CHECK(wk_add_rms_norm(&sum, &o, r->a.s, &r->a.l, r->c.s, &r->c.l, r->b.s, &r->b.l, 1e-5f));
        wk_storage_free(sum);
        break;
    }
    case K_SWIGLU: { /* a (M, 2F): gate | up, as the stacked product gives them */
        wk_layout lg = r->a.l, lu;
        lg.dims[1] /= 2;
        lu = lg;
        lu.offset = lg.dims[1];
        CHECK(wk_binary(&o, WK_OP_SWIGLU, r->a.s, &lg, r->a.s, &lu));
        break;
    }
    }
    wk_storage_free(o);
}

static double time_row(const row *r)
{
    CHECK(wk_set_option(WK_OPTION_PORTABLE_GEMM, r->portable));
    for (int i = 0; i < 2; i++)
        run_row(r);
    CHECK(wk_device_synchronize(dev));
    /* about 0.2 s per trial: reps from the warm-up time */
    double t0 = now();
    run_row(r);
    CHECK(wk_device_synchronize(dev));
    double one = now() - t0;
    int reps = one > 0.05 ? 3 : (int)(0.2 / (one > 1e-6 ? one : 1e-6));
    if (reps > 200)
        reps = 200;
    double best = 1e30;
    for (int trial = 0; trial < 3; trial++) {
        t0 = now();
        for (int i = 0; i < reps; i++)
            run_row(r);
        CHECK(wk_device_synchronize(dev));
        double t = (now() - t0) / reps;
        if (t < best)
            best = t;
    }
    CHECK(wk_set_option(WK_OPTION_PORTABLE_GEMM, 0));
    return best;
}

static void emit(row *r)
{
    double t = time_row(r);
    printf("row %s %s %.0f %.9f\n", r->name, r->unit, r->amount, t);
    fflush(stdout);
    wk_storage_free(r->a.s);
    wk_storage_free(r->b.s);
    wk_storage_free(r->c.s);
}

/* A matmul row, a [b, m, k] @ b [b, k, n]; bt: b's storage is [b][n][k] seen as [b][k][n]
 * (read along k, as a linear layer's weight in x @ W^T; square k = n only). f8e4m3 operands are
 * uniform f16 values rounded to f8e4m3. */
static void matmul_row(const char *name, wk_dtype dt, int64_t b, int64_t m, int64_t k, int64_t n,
                       int portable, int bt)
{
    row r = {name, "flop", 2.0 * (double)b * m * n * k, K_MATMUL, {0}, {0}, {0}, 0, portable, 0, 0};
    int64_t da[3] = {b, m, k}, db[3] = {b, k, n};
    if (dt == WK_DTYPE_F8E4M3) {
        operand a = rnd(WK_DTYPE_F16, 3, da, -1, 1), bb = rnd(WK_DTYPE_F16, 3, db, -1, 1);
        r.a.l = a.l, r.b.l = bb.l;
        CHECK(wk_to_dtype(&r.a.s, a.s, &a.l, dt));
        CHECK(wk_to_dtype(&r.b.s, bb.s, &bb.l, dt));
        wk_storage_free(a.s);
        wk_storage_free(bb.s);
    } else {
        r.a = rnd(dt, 3, da, -1, 1);
        r.b = rnd(dt, 3, db, -1, 1);
    }
    if (bt && k == n)
        r.b.l.strides[1] = 1, r.b.l.strides[2] = k; /* the transpose of the last two dims */
    emit(&r);
}

static int selected(int argc, char **argv, const char *name)
{
    int any = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0) {
            i++;
            continue;
        }
        any = 1;
        if (strstr(name, argv[i]))
            return 1;
    }
    return !any;
}

int main(int argc, char **argv)
{
    const char *spec = "cuda:0";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--device") == 0)
            spec = argv[i + 1];
    CHECK(wk_device_open(&dev, spec));
    printf("device %s\n", wk_device_name(dev));
#define SEL(name) if (selected(argc, argv, name))

    /* matmul: 4096^3 and 8192^3 (batch 1) and batched 64 x (512x128 @ 128x512) */
    const wk_dtype mdt[3] = {WK_DTYPE_BF16, WK_DTYPE_F16, WK_DTYPE_F32};
    const char *mname[3] = {"bf16", "f16", "f32"};
    char name[64];
    for (int d = 0; d < 3; d++) {
        snprintf(name, sizeof name, "matmul_%s_4096", mname[d]);
        SEL(name) matmul_row(name, mdt[d], 1, 4096, 4096, 4096, 0, 0);
        snprintf(name, sizeof name, "matmul_%s_8192", mname[d]);
        SEL(name) matmul_row(name, mdt[d], 1, 8192, 8192, 8192, 0, 0);
        snprintf(name, sizeof name, "matmul_%s_b64", mname[d]);
        SEL(name) matmul_row(name, mdt[d], 64, 512, 128, 512, 0, 0);
        snprintf(name, sizeof name, "portable_matmul_%s_4096", mname[d]);
        SEL(name) matmul_row(name, mdt[d], 1, 4096, 4096, 4096, 1, 0);
        snprintf(name, sizeof name, "portable_matmul_%s_8192", mname[d]);
        SEL(name) matmul_row(name, mdt[d], 1, 8192, 8192, 8192, 1, 0);
    }
    for (int d = 0; d < 3; d++) {
        snprintf(name, sizeof name, "portable_matmul_%s_b64", mname[d]);
        SEL(name) matmul_row(name, mdt[d], 64, 512, 128, 512, 1, 0);
    }
    /* f8e4m3 (the portable kernel only: on matrix units it runs as f16) */
    SEL("portable_matmul_f8e4m3_4096")
        matmul_row("portable_matmul_f8e4m3_4096", WK_DTYPE_F8E4M3, 1, 4096, 4096, 4096, 1, 0);
    SEL("portable_matmul_f8e4m3_b64")
        matmul_row("portable_matmul_f8e4m3_b64", WK_DTYPE_F8E4M3, 64, 512, 128, 512, 1, 0);
    /* b read along k (a linear layer's weight): f8e4m3 beside bf16 in the same layout */
    SEL("portable_matmul_f8e4m3_bt_4096")
        matmul_row("portable_matmul_f8e4m3_bt_4096", WK_DTYPE_F8E4M3, 1, 4096, 4096, 4096, 1, 1);
    SEL("portable_matmul_bf16_bt_4096")
        matmul_row("portable_matmul_bf16_bt_4096", WK_DTYPE_BF16, 1, 4096, 4096, 4096, 1, 1);

    /* conv2d 32x64x56x56, 64 out channels, k3 pad 1; conv1d 32x256x4096, 256 out, k3 pad 1 */
    for (int d = 1; d < 3; d++) {
        snprintf(name, sizeof name, "conv2d_%s", mname[d]);
        SEL(name)
        {
            int64_t dx[4] = {32, 64, 56, 56}, dw[4] = {64, 64, 3, 3};
            row r = {name, "flop", 2.0 * 32 * 64 * 56 * 56 * 64 * 9, K_CONV2D, {0}, {0}, {0}, 0, 0, 0, 0};
            r.a = rnd(mdt[d], 4, dx, -1, 1);
            r.b = rnd(mdt[d], 4, dw, -0.1, 0.1);
            emit(&r);
        }
    }
    /* The convolutions of a ResNet-50 (batch 32, 224 x 224 images; torchvision's v1.5 layout,
     * stride in the 3x3) and of a Stable-Diffusion-1.5-style UNet (batch 2, 64 x 64 latents), by
     * shape; the row name carries it: convnet_<dt>_<net>_n<N>c<C>h<H>w<W>o<C_out>k<K>s<S>p<P>
     * (bench/gpu_compare_ops.py reads the shape from it). */
    static const struct { const char *net; int64_t n, c, h, w, o, k, s, p; } CONVNET[] = {
        {"r50", 32, 3, 224, 224, 64, 7, 2, 3},   {"r50", 32, 64, 56, 56, 64, 1, 1, 0},
        {"r50", 32, 64, 56, 56, 64, 3, 1, 1},    {"r50", 32, 64, 56, 56, 256, 1, 1, 0},
        {"r50", 32, 256, 56, 56, 64, 1, 1, 0},   {"r50", 32, 128, 56, 56, 128, 3, 2, 1},
        {"r50", 32, 128, 28, 28, 128, 3, 1, 1},  {"r50", 32, 256, 14, 14, 256, 3, 1, 1},
        {"r50", 32, 512, 7, 7, 512, 3, 1, 1},    {"r50", 32, 2048, 7, 7, 512, 1, 1, 0},
        {"unet", 2, 4, 64, 64, 320, 3, 1, 1},    {"unet", 2, 320, 64, 64, 320, 3, 1, 1},
        {"unet", 2, 640, 32, 32, 640, 3, 1, 1},  {"unet", 2, 1280, 16, 16, 1280, 3, 1, 1},
    };
    for (int d = 1; d < 3; d++)
        for (size_t i = 0; i < sizeof CONVNET / sizeof CONVNET[0]; i++) {
            const int64_t n = CONVNET[i].n, c = CONVNET[i].c, h = CONVNET[i].h, w = CONVNET[i].w;
            const int64_t o = CONVNET[i].o, k = CONVNET[i].k, st = CONVNET[i].s, pd = CONVNET[i].p;
            snprintf(name, sizeof name, "convnet_%s_%s_n%lldc%lldh%lldw%lldo%lldk%llds%lldp%lld",
                     mname[d], CONVNET[i].net, (long long)n, (long long)c, (long long)h,
                     (long long)w, (long long)o, (long long)k, (long long)st, (long long)pd);
            SEL(name)
            {
                const int64_t ho = (h + 2 * pd - k) / st + 1, wo = (w + 2 * pd - k) / st + 1;
                int64_t dx[4] = {n, c, h, w}, dw[4] = {o, c, k, k};
                row r = {name, "flop", 2.0 * n * o * ho * wo * c * k * k, K_CONV2D, {0}, {0},
                         {0}, 0, 0, (int32_t)st, (int32_t)pd};
                r.a = rnd(mdt[d], 4, dx, -1, 1);
                r.b = rnd(mdt[d], 4, dw, -0.1, 0.1);
                emit(&r);
            }
        }
    SEL("conv1d_f32")
    {
        int64_t dx[3] = {32, 256, 4096}, dw[3] = {256, 256, 3};
        row r = {"conv1d_f32", "flop", 2.0 * 32 * 256 * 4096 * 256 * 3, K_CONV1D, {0}, {0}, {0}, 0, 0, 0, 0};
        r.a = rnd(WK_DTYPE_F32, 3, dx, -1, 1);
        r.b = rnd(WK_DTYPE_F32, 3, dw, -0.1, 0.1);
        emit(&r);
    }

    /* fused ops on 16384 x 4096 f32, and the device copy of the same bytes (their ceiling) */
    {
        int64_t dx[2] = {16384, 4096}, dv[1] = {4096};
        const double bytes = 2.0 * 4 * 16384 * 4096;
        SEL("copy_f32_16384x4096")
        {
            row r = {"copy_f32_16384x4096", "byte", bytes, K_COPY, {0}, {0}, {0}, 0, 0, 0, 0};
            r.a = rnd(WK_DTYPE_F32, 2, dx, -4, 4);
            emit(&r);
        }
        SEL("softmax_f32")
        {
            row r = {"softmax_f32", "byte", bytes, K_SOFTMAX, {0}, {0}, {0}, 0, 0, 0, 0};
            r.a = rnd(WK_DTYPE_F32, 2, dx, -4, 4);
            emit(&r);
        }
        SEL("rms_norm_f32")
        {
            row r = {"rms_norm_f32", "byte", bytes, K_RMS, {0}, {0}, {0}, 0, 0, 0, 0};
            r.a = rnd(WK_DTYPE_F32, 2, dx, -4, 4);
            r.b = rnd(WK_DTYPE_F32, 1, dv, 0.5, 1.5);
            emit(&r);
        }
        SEL("layer_norm_f32")
        {
            row r = {"layer_norm_f32", "byte", bytes, K_LAYER, {0}, {0}, {0}, 0, 0, 0, 0};
            r.a = rnd(WK_DTYPE_F32, 2, dx, -4, 4);
            r.b = rnd(WK_DTYPE_F32, 1, dv, 0.5, 1.5);
            r.c = rnd(WK_DTYPE_F32, 1, dv, -0.5, 0.5);
            emit(&r);
        }
    }

    /* the norms' other paths (tools/device/numerics.sh compares them before/after a change):
     * bf16 rows in registers, unaligned rows (D = 1025) and long rows (D = 65537) streamed;
     * softmax bf16 in registers */
    {
        static const struct { const char *name; wk_dtype dt; int64_t m, d; } nr[7] = {
            {"softmax_bf16", WK_DTYPE_BF16, 16384, 4096},
            {"rms_norm_bf16", WK_DTYPE_BF16, 16384, 4096},
            {"layer_norm_bf16", WK_DTYPE_BF16, 16384, 4096},
            {"rms_norm_f32_d1025", WK_DTYPE_F32, 65536, 1025},
            {"layer_norm_f32_d1025", WK_DTYPE_F32, 65536, 1025},
            {"rms_norm_f32_d65537", WK_DTYPE_F32, 1024, 65537},
            {"layer_norm_f32_d65537", WK_DTYPE_F32, 1024, 65537},
        };
        for (int i = 0; i < 7; i++)
            SEL(nr[i].name)
            {
                const int layer = nr[i].name[0] == 'l', softmax = nr[i].name[0] == 's';
                int64_t dx[2] = {nr[i].m, nr[i].d}, dv[1] = {nr[i].d};
                const double bytes = 2.0 * (double)wk_dtype_size(nr[i].dt) * (double)(nr[i].m * nr[i].d);
                row r = {nr[i].name, "byte", bytes, softmax ? K_SOFTMAX : layer ? K_LAYER : K_RMS,
                         {0}, {0}, {0}, 0, 0, 0, 0};
                r.a = rnd(nr[i].dt, 2, dx, -4, 4);
                if (!softmax)
                    r.b = rnd(nr[i].dt, 1, dv, 0.5, 1.5);
                if (layer)
                    r.c = rnd(nr[i].dt, 1, dv, -0.5, 0.5);
                emit(&r);
            }
    }

    /* wick's decode fusions beside PyTorch's two ops each: the residual add + rms_norm (x, r,
     * sum and out: 4 arrays) on 16384 x 4096 and on one 4096 row (a decode step: latency), and
     * silu(gate) * up on the (M, 2F) stacked product (3 arrays' worth) at M 4096 and 1, F 14336 */
    {
        static const struct { const char *name; wk_dtype dt; int64_t m, d; int kind; } fr[6] = {
            {"add_rms_norm_f32", WK_DTYPE_F32, 16384, 4096, K_ADD_RMS},
            {"add_rms_norm_bf16", WK_DTYPE_BF16, 16384, 4096, K_ADD_RMS},
            {"add_rms_norm_f32_1x4096", WK_DTYPE_F32, 1, 4096, K_ADD_RMS},
            {"swiglu_f32", WK_DTYPE_F32, 4096, 14336, K_SWIGLU},
            {"swiglu_bf16", WK_DTYPE_BF16, 4096, 14336, K_SWIGLU},
            {"swiglu_f32_1x14336", WK_DTYPE_F32, 1, 14336, K_SWIGLU},
        };
        for (int i = 0; i < 6; i++)
            SEL(fr[i].name)
            {
                const int add = fr[i].kind == K_ADD_RMS;
                const double esz = (double)wk_dtype_size(fr[i].dt), md = (double)(fr[i].m * fr[i].d);
                row r = {fr[i].name, "byte", (add ? 4.0 : 3.0) * esz * md, fr[i].kind, {0}, {0},
                         {0}, 0, 0, 0, 0};
                int64_t dx[2] = {fr[i].m, add ? fr[i].d : 2 * fr[i].d}, dv[1] = {fr[i].d};
                r.a = rnd(fr[i].dt, 2, dx, -4, 4);
                if (add) {
                    r.b = rnd(fr[i].dt, 1, dv, 0.5, 1.5);
                    r.c = rnd(fr[i].dt, 2, dx, -1, 1);
                }
                emit(&r);
            }
    }

    /* indexing: 8192 rows of a 128256 x 4096 bf16 table; gather / scatter_add on 8192 x 4096 */
    SEL("index_select_bf16")
    {
        int64_t dt[2] = {128256, 4096}, di[1] = {8192};
        row r = {"index_select_bf16", "byte", 2.0 * 2 * 8192 * 4096, K_INDEX_SELECT, {0}, {0}, {0}, 0, 0, 0, 0};
        r.a = rnd(WK_DTYPE_BF16, 2, dt, -1, 1);
        r.b = ids_of(WK_DTYPE_U32, 1, di, 128256);
        emit(&r);
    }
    {
        int64_t d2[2] = {8192, 4096};
        const double n = 8192.0 * 4096;
        SEL("gather_f32")
        {
            row r = {"gather_f32", "byte", 4 * n * 3, K_GATHER, {0}, {0}, {0}, 0, 0, 0, 0};
            r.a = rnd(WK_DTYPE_F32, 2, d2, -1, 1);
            r.b = ids_of(WK_DTYPE_U32, 2, d2, 4096);
            emit(&r);
        }
        SEL("scatter_add_f32")
        {
            /* dst read + written, ids and src read */
            row r = {"scatter_add_f32", "byte", 4 * n * 4, K_SCATTER_ADD, {0}, {0}, {0}, 0, 0, 0, 0};
            r.a = rnd(WK_DTYPE_F32, 2, d2, -1, 1);
            r.b = ids_of(WK_DTYPE_U32, 2, d2, 4096);
            r.c = rnd(WK_DTYPE_F32, 2, d2, -1, 1);
            emit(&r);
        }
    }

    /* image ops on 16 x 64 x 128 x 128 f32 */
    {
        int64_t dx[4] = {16, 64, 128, 128};
        const double in = 4.0 * 16 * 64 * 128 * 128;
        const struct { const char *name; int kind; double bytes; } im[4] = {
            {"upsample_nearest2d_x2_f32", K_UP_NEAREST, in * 5},
            {"upsample_bilinear2d_x2_f32", K_UP_BILINEAR, in * 5},
            {"max_pool2d_k2_f32", K_MAXPOOL, in * 1.25},
            {"avg_pool2d_k2_f32", K_AVGPOOL, in * 1.25},
        };
        for (int i = 0; i < 4; i++)
            SEL(im[i].name)
            {
                row r = {im[i].name, "byte", im[i].bytes, im[i].kind, {0}, {0}, {0}, 0, 0, 0, 0};
                r.a = rnd(WK_DTYPE_F32, 4, dx, -1, 1);
                emit(&r);
            }
    }

    /* argsort: 4096 rows of 1024, and 64 rows of 200,000 (f32) */
    SEL("argsort_4096x1024_f32")
    {
        int64_t dx[2] = {4096, 1024};
        row r = {"argsort_4096x1024_f32", "byte", 4.0 * 4096 * 1024, K_ARGSORT, {0}, {0}, {0}, 0, 0, 0, 0};
        r.a = rnd(WK_DTYPE_F32, 2, dx, -1, 1);
        emit(&r);
    }
    SEL("argsort_64x200000_f32")
    {
        int64_t dx[2] = {64, 200000};
        row r = {"argsort_64x200000_f32", "byte", 4.0 * 64 * 200000, K_ARGSORT, {0}, {0}, {0}, 0, 0, 0, 0};
        r.a = rnd(WK_DTYPE_F32, 2, dx, -1, 1);
        emit(&r);
    }
    wk_device_close(dev);
    return 0;
}
