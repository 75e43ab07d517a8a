/* gpu_matmul.c: the GPU matmul and the strided batched GEMM it shares with the convolutions.
 *
 * wk_gpu_gemm (contract in gpu_impl.h) runs cuBLAS / rocBLAS through gpu_blas.c where the
 * device has one and WK_OPTION_PORTABLE_GEMM is off; otherwise, and for what the library
 * cannot take (k = 0, sizes past int32), the portable kernel of kernels/gemm.h, which reads
 * any strides directly. f8e4m3 (defined for matmul by docs/semantics.md: f32 accumulation, one
 * rounding) always takes the portable kernel: the vendor FP8 GEMMs need scale factors and
 * restricted layouts. wk_gpu_matmul maps a [..., m, k] @ b [..., k, n] onto it: the batch
 * dims collapse (dims of size 1 dropped, neighbours merged where a, b and the contiguous output
 * all allow), the innermost collapsed batch dim becomes the GEMM's batch, and any outer ones
 * that do not merge (e.g. a broadcast over one batch dim only) are looped over on the host. */
#include "blas_api.h"
#include "gpu_ops.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* kernels/gemm.h: gemm_<unit>_<tile>_<dt>, unit fma (the FMA units: BK 8), mma (matrix units,
 * operands staged through registers: BK 32), pipe (matrix units, a cp.async pipeline of 16-byte
 * chunks: BK 32; mma and pipe on NVIDIA and simt only, not compiled for AMD) or mfma (CDNA's
 * 64-lane matrix units, the same pipeline), tile 128x128, 64x64 or 128x256 (pipe only). */
#define MM_BK 8
#define MT_V 8
#define MM_GRID_YZ 65535 /* the largest grid.y and grid.z */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The module that holds a dtype's GEMM kernels: kernels/matmul_f16.cu, matmul_bf16.cu, and
 * matmul.cu for the others (split by dtype so that run-time compilation of one does not wait
 * for the rest). */
static const char *mm_module(wk_dtype dt)
{
    return dt == WK_DTYPE_F16 ? "matmul_f16" : dt == WK_DTYPE_BF16 ? "matmul_bf16" : "matmul";
}
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The kernel's operand mode (kernels/gemm.h): bit 0 = read V consecutive elements along the
 * m/n dim (1) or along k (0), whichever has the smaller stride; bit 1 = that stride is 1 and
 * every tile's start is aligned for one V-element vector access. The operand is E x K with
 * strides se, sk (a dim of size 1 has no stride that matters), batch stride bs. */
static int32_t mm_mode(int64_t E, int64_t K, int64_t se, int64_t sk, int64_t bs, int64_t batch,
                       const void *p, size_t esz, int64_t V)
{
    const int64_t fe = E == 1 ? INT64_MAX : se, fk = K == 1 ? INT64_MAX : sk;
    const int32_t mode = fk <= fe ? 0 : 1;
    bool vec = mode == 0 ? sk == 1 && (E == 1 || se % V == 0)
                         : se == 1 && (K == 1 || sk % V == 0);
    vec = vec && (batch == 1 || bs % V == 0) && (uintptr_t)p % ((uintptr_t)V * esz) == 0;
    return mode | (vec ? 2 : 0);
}

/* Whether f16, bf16 and f8e4m3 take the 32-lane matrix-unit kernels (mma, pipe): on NVIDIA
 * sm_80 and later, where they run on mma.sync, and on the simt device, where gpu.h's shuffle twin
 * runs (that is how their tiling is tested with 32- and 64-lane warps). Elsewhere (AMD and older
 * NVIDIA) the twin would be correct, but it needs 16 shuffles per 16 x 8 x 16 product where the
 * FMA kernels read operands from shared memory as vectors, so those stay, and kernels/gemm.h
 * does not compile these kernels for AMD; CDNA has its own (mm_wave_units below). */
bool wk_gpu_matrix_units(const wk_device *dev, wk_dtype dt)
{
    if (dt != WK_DTYPE_F16 && dt != WK_DTYPE_BF16 && dt != WK_DTYPE_F8E4M3)
        return false;
    const char *arch = wk_gpu_arch(dev);
    if (strncmp(arch, "simt", 4) == 0)
        return true;
    return strncmp(arch, "sm_", 3) == 0 && atoi(arch + 3) >= 80;
}

/* Whether f16 and bf16 take CDNA's matrix units (gemm_mfma_*: 16 x 16 x 16 MFMA products of
 * 64-lane waves, kernels/gemm.h) when both operands suit 16-byte chunks: on gfx908 (f16; its
 * bf16 MFMA has another shape), gfx90a and gfx94x, and on the simt device with 64-lane warps,
 * which runs the same kernels with gpu.h's twin of the instruction (that is how they are
 * tested). There they replace the pipe kernels; every other case keeps the kernels above. */
static bool mm_wave_units(const wk_device *dev, wk_dtype dt)
{
    if (dt != WK_DTYPE_F16 && dt != WK_DTYPE_BF16)
        return false;
    const char *arch = wk_gpu_arch(dev);
    if (strcmp(arch, "simt64") == 0 || strcmp(arch, "gfx90a") == 0 ||
        strncmp(arch, "gfx94", 5) == 0)
        return true;
    return strcmp(arch, "gfx908") == 0 && dt == WK_DTYPE_F16;
}

/* The kernel of one problem: its unit and tile, name, block tile (bm x bn) and dynamic shared
 * memory. */
typedef enum mm_unit { MM_FMA, MM_MMA, MM_PIPE, MM_MFMA } mm_unit;
typedef enum mm_tile { MM_128X128, MM_64X64, MM_128X256 } mm_tile;
static const char *const MM_UNIT[] = {"fma", "mma", "pipe", "mfma"};
static const char *const MM_TILE[] = {"128x128", "64x64", "128x256"};
typedef struct mm_cfg {
    mm_unit unit;
    mm_tile tile;
    char name[32];
    int64_t bm, bn;
    unsigned shmem;
} mm_cfg;

/* kernels/gemm.h's cp.async kernels (pipe, mfma): BK 32, MC_ST stages of both 16-bit tiles */
#define MC_BK 32
#define MC_ST 4
#define MW_ST 2 /* mfma: two stages (kernels/mc.h) */

/* WICK_GEMM_TILE = <unit>_<tile> (fma_128x128, pipe_128x256, ...: a kernel's name without
 * "gemm_" and the dtype) forces that kernel where it can run the problem: fma where no matrix
 * unit takes the dtype, mma where one does, pipe and mfma where their chunk conditions hold
 * (tests and sweeps; tools/device/mma.sh). Returns false where it names none of those. */
static bool mm_forced(mm_unit *unit, mm_tile *tile, bool mt, bool cp, bool cpx, bool wv)
{
    const char *f = getenv("WICK_GEMM_TILE");
    for (int u = 0; f && u < 4; u++)
        for (int t = 0; t < 3; t++) {
            const size_t n = strlen(MM_UNIT[u]);
            if (strncmp(f, MM_UNIT[u], n) || f[n] != '_' || strcmp(f + n + 1, MM_TILE[t]))
                continue;
            const bool ok = t == MM_128X256 ? u == MM_PIPE && cpx
                            : u == MM_FMA   ? !mt
                            : u == MM_MMA   ? mt
                            : u == MM_PIPE  ? cp
                                            : wv;
            if (ok)
                *unit = (mm_unit)u, *tile = (mm_tile)t;
            return ok;
        }
    return false;
}

/* The kernel for one problem (measurements: docs/performance.md, "Matmul and convolutions",
 * H200): the unit is set by the hardware and the operands: mfma (CDNA waves, mm_wave_units, both
 * operands in 16-byte chunks: vec), else pipe (32-lane matrix units and vec), else mma (matrix
 * units, other operands), else fma. The tile: 128x128 once it gives a block per multiprocessor,
 * else 64x64 (f32 2048^3 ran at 23 TFLOP/s on small tiles, 4096^3 at 37 on large ones); pipe
 * takes 128x256 (warp tiles 64 x 64, one block per SM) for f16 and bf16 with A read along k (ak)
 * where the problem has at least two waves of such tiles and k >= 512 (bf16 4096^3 350 TFLOP/s
 * against 338 for 128x128, 8192^3 361 against 323, f16 328 / 344 against 309 / 307; but 64 x
 * 512x128x512 90 against 119; f8e4m3 218 against 263 at 4096^3, so f8e4m3 never takes it). */
static void mm_pick(mm_cfg *cfg, wk_device *dev, const wk_gpu_gemm_args *g, bool vec, bool ak)
{
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    const double bt = (double)g->batch;
    const bool mt = wk_gpu_matrix_units(dev, g->dt);
    const bool cp = mt && vec, wv = vec && mm_wave_units(dev, g->dt);
    const bool cpx = cp && !wv && ak && g->dt != WK_DTYPE_F8E4M3;
    mm_unit unit = wv ? MM_MFMA : cp ? MM_PIPE : mt ? MM_MMA : MM_FMA;
    mm_tile tile =
        (double)ceil_div(g->m, 128) * (double)ceil_div(g->n, 128) * bt >= (double)sm
            ? MM_128X128 : MM_64X64;
    if (cpx &&
        (double)ceil_div(g->m, 128) * (double)ceil_div(g->n, 256) * bt >= 2.0 * (double)sm &&
        g->k >= 512)
        tile = MM_128X256;
    (void)mm_forced(&unit, &tile, mt, cp, cpx, wv);
    cfg->unit = unit;
    cfg->tile = tile;
    cfg->bm = tile == MM_64X64 ? 64 : 128;
    cfg->bn = tile == MM_64X64 ? 64 : tile == MM_128X256 ? 256 : 128;
    const int stages = unit == MM_PIPE ? MC_ST : unit == MM_MFMA ? MW_ST : 0;
    cfg->shmem = (unsigned)(stages * (cfg->bm + cfg->bn) * MC_BK * 2);
    snprintf(cfg->name, sizeof cfg->name, "gemm_%s_%s_%s", MM_UNIT[unit], MM_TILE[tile],
             wk_gpu_dtype_kname(g->dt));
}

/* The portable kernel over the whole problem, in launches of at most 65535 row tiles and
 * 65535 batches. */
static wk_status gemm_portable(wk_device *dev, const wk_gpu_gemm_args *g)
{
    const size_t esz = wk_dtype_size(g->dt);
    const bool mt = wk_gpu_matrix_units(dev, g->dt);
    /* the cp.async kernels need both operands in vector mode; with one launch along m, every
     * launch's modes are those of the whole problem (batch chunks start at multiples of 65535
     * batches: still aligned) */
    const int64_t Vc = 16 / (int64_t)esz; /* elements per 16-byte chunk */
    const int32_t am0 = mm_mode(g->m, g->k, g->a_rs, g->a_cs, g->a_bs, g->batch, g->a, esz, Vc);
    const int32_t bm0 = mm_mode(g->n, g->k, g->b_cs, g->b_rs, g->b_bs, g->batch, g->b, esz, Vc);
    mm_cfg cfg;
    mm_pick(&cfg, dev, g, (am0 & 2) && (bm0 & 2) && g->m <= MM_GRID_YZ * 128, !(am0 & 1));
    const int64_t BM = cfg.bm, BN = cfg.bn;
    const bool chunks = cfg.unit == MM_PIPE || cfg.unit == MM_MFMA; /* 16-byte chunk kernels */
    const int64_t Vk = chunks ? Vc : mt ? MT_V : BM * MM_BK / WK_GPU_BLOCK;
    const int64_t gx = ceil_div(g->n, BN);
    if (gx > INT_MAX)
        return wk_err(WK_ERR_NOT_SUPPORTED, "gemm: n = %lld needs too large a grid",
                      (long long)g->n);
    wk_gpu_fn fn = NULL;
    wk_status st = wk_gpu_function(&fn, dev, mm_module(g->dt), cfg.name);
    const int64_t rows = MM_GRID_YZ * BM;
    for (int64_t m0 = 0; st == WK_OK && m0 < g->m; m0 += rows) {
        int64_t M = min64(g->m - m0, rows);
        for (int64_t z0 = 0; st == WK_OK && z0 < g->batch; z0 += MM_GRID_YZ) {
            const int64_t nz = min64(g->batch - z0, MM_GRID_YZ);
            const void *pa = wk_gpu_at(g->a, z0 * g->a_bs + m0 * g->a_rs, esz);
            const void *pb = wk_gpu_at(g->b, z0 * g->b_bs, esz);
            void *pc = wk_gpu_at(g->c, z0 * g->c_bs + m0 * g->ldc, esz);
            int32_t amode = mm_mode(M, g->k, g->a_rs, g->a_cs, g->a_bs, nz, pa, esz, Vk);
            int32_t bmode = mm_mode(g->n, g->k, g->b_cs, g->b_rs, g->b_bs, nz, pb, esz, Vk);
            if (chunks && !((amode & 2) && (bmode & 2)))
                return wk_err(WK_ERR_INTERNAL, "gemm: %s on operands without vector mode",
                              cfg.name);
            if (cfg.tile == MM_128X256 && (amode & 1))
                return wk_err(WK_ERR_INTERNAL, "gemm: %s on an A not read along k", cfg.name);
            int64_t a_bs = g->a_bs, a_rs = g->a_rs, a_cs = g->a_cs;
            int64_t b_bs = g->b_bs, b_rs = g->b_rs, b_cs = g->b_cs;
            int64_t c_bs = g->c_bs, ldc = g->ldc, N = g->n, K = g->k;
            void *args[] = {&pa, &a_bs, &a_rs, &a_cs, &pb, &b_bs, &b_rs, &b_cs, &pc,
                            &c_bs, &ldc, &M, &N, &K, &amode, &bmode};
            st = wk_gpu_launch(dev, fn, (unsigned)gx, (unsigned)ceil_div(M, BM), (unsigned)nz,
                               WK_GPU_BLOCK, 1, 1, cfg.shmem, args);
        }
    }
    return st;
}

wk_status wk_gpu_gemm(wk_device *dev, const wk_gpu_gemm_args *g)
{
    if (g->dt != WK_DTYPE_F32 && g->dt != WK_DTYPE_F64 && g->dt != WK_DTYPE_F16 &&
        g->dt != WK_DTYPE_BF16 && g->dt != WK_DTYPE_F8E4M3)
        return wk_err(WK_ERR_DTYPE, "gemm: dtype %s is not one of f32 f64 f16 bf16 f8e4m3",
                      wk_dtype_name(g->dt));
    if (g->batch < 0 || g->m < 0 || g->n < 0 || g->k < 0 || g->a_bs < 0 || g->a_rs < 0 ||
        g->a_cs < 0 || g->b_bs < 0 || g->b_rs < 0 || g->b_cs < 0 || g->c_bs < 0 || g->ldc < 0)
        return wk_err(WK_ERR_INTERNAL, "gemm: negative size or stride (batch %lld, m %lld, "
                      "n %lld, k %lld)", (long long)g->batch, (long long)g->m, (long long)g->n,
                      (long long)g->k);
    if (g->batch == 0 || g->m == 0 || g->n == 0)
        return WK_OK;
    if (!wk_get_option(WK_OPTION_PORTABLE_GEMM)) {
        bool done = false;
        wk_status st = wk_gpu_blas_gemm(dev, g, &done);
        if (st != WK_OK || done)
            return st;
    }
    return gemm_portable(dev, g);
}

/* ---------------------------------------------------------------- matmul */
/* The batch dims of a matmul, collapsed: extents and strides (a, b, out), innermost first. */
typedef struct mm_batch {
    int n;
    int64_t dims[WK_MAX_RANK];
    int64_t sa[WK_MAX_RANK], sb[WK_MAX_RANK], so[WK_MAX_RANK];
} mm_batch;

static void mm_batch_collapse(mm_batch *B, const wk_layout *la, const wk_layout *lb,
                              int64_t mn)
{
    const int r = la->rank;
    int64_t so = mn; /* the contiguous output's stride of the current dim */
    B->n = 0;
    for (int d = r - 3; d >= 0; d--) {
        const int64_t e = la->dims[d];
        const int64_t sa = la->strides[d], sb = lb->strides[d];
        if (e != 1) {
            const int t = B->n - 1; /* the inner neighbour */
            if (t >= 0 && sa == B->sa[t] * B->dims[t] && sb == B->sb[t] * B->dims[t]) {
                B->dims[t] *= e; /* the output always merges: it is contiguous */
            } else {
                B->dims[B->n] = e;
                B->sa[B->n] = sa, B->sb[B->n] = sb, B->so[B->n] = so;
                B->n++;
            }
        }
        so *= e;
    }
}

/* out [..., m, n] (contiguous, dtype dt) = a [..., m, k] @ b [..., k, n]. */
wk_status wk_gpu_matmul(wk_device *dev, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb)
{
    const int r = la->rank;
    const int64_t m = la->dims[r - 2], k = la->dims[r - 1], n = lb->dims[r - 1];
    int64_t nb = 1;
    for (int d = 0; d < r - 2; d++)
        nb *= la->dims[d];
    if (nb == 0 || m == 0 || n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    if (k == 0) /* an empty sum: zeros (all-zero bits are +0 in every float dtype) */
        return dev->be->memset_zero(dev, out, (size_t)(nb * m * n) * esz);

    mm_batch B;
    mm_batch_collapse(&B, la, lb, m * n);
    wk_gpu_gemm_args g = {
        .dt = dt, .batch = B.n ? B.dims[0] : 1, .m = m, .n = n, .k = k,
        .a_bs = B.n ? B.sa[0] : 0, .a_rs = la->strides[r - 2], .a_cs = la->strides[r - 1],
        .b_bs = B.n ? B.sb[0] : 0, .b_rs = lb->strides[r - 2], .b_cs = lb->strides[r - 1],
        .c_bs = B.n ? B.so[0] : 0, .ldc = n,
    };
    /* the outer batch dims that did not merge: one GEMM each */
    int64_t outer = 1;
    for (int i = 1; i < B.n; i++)
        outer *= B.dims[i];
    wk_status st = WK_OK;
    for (int64_t o = 0; st == WK_OK && o < outer; o++) {
        int64_t oa = la->offset, ob = lb->offset, oc = 0, rest = o;
        for (int i = 1; i < B.n; i++) {
            const int64_t idx = rest % B.dims[i];
            rest /= B.dims[i];
            oa += idx * B.sa[i], ob += idx * B.sb[i], oc += idx * B.so[i];
        }
        g.a = wk_gpu_at(a, oa, esz);
        g.b = wk_gpu_at(b, ob, esz);
        g.c = wk_gpu_at(out, oc, esz);
        st = wk_gpu_gemm(dev, &g);
    }
    return st;
}
