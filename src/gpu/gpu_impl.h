/* gpu_impl.h: the GPU backend, written once over a small driver interface (cuda.c, hip.c).
 * Internal. Two halves meet here:
 *   - the runtime half (gpu_backend.c, gpu_driver.h, cuda.c, hip.c, gpu_module.c, gpu_alloc.c):
 *     devices, memory, streams, the module cache and launches;
 *   - the op half (gpu_<family>.c): one host function per op family that picks a kernel from
 *     kernels/<family>.cu and launches it through wk_gpu_launch.
 * Kernels are `extern "C" __global__` functions; the module of kernels/<family>.cu is named
 * "<family>". Kernel arguments are passed as an array of pointers to the values, as for
 * cuLaunchKernel. Launches are asynchronous on the device's stream. */
#ifndef WK_GPU_IMPL_H
#define WK_GPU_IMPL_H

#include "backend.h"

/* A kernel handle, looked up once per (device, module, name) and cached. */
typedef void *wk_gpu_fn;

/* fn: the kernel `name` of module `module` on dev (loads the module on first use). */
wk_status wk_gpu_function(wk_gpu_fn *fn, wk_device *dev, const char *module, const char *name);
/* Launches fn on the device's stream: grid (gx, gy, gz) of blocks (bx, by, bz), shmem bytes of
 * dynamic shared memory, args as for cuLaunchKernel. */
wk_status wk_gpu_launch(wk_device *dev, wk_gpu_fn fn, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **args);
/* The same with launch flags. WK_LAUNCH_EARLY: the kernel may begin while the stream's previous
 * kernel still runs (NVIDIA sm_90+: programmatic dependent launch; elsewhere an ordinary
 * launch). Only for kernels whose every block calls WK_GRID_WAIT() (kernels/gpu.h) before it
 * reads or writes any memory other work may use. WICK_EARLY_LAUNCH=0 turns it off. */
#define WK_LAUNCH_EARLY 1u
wk_status wk_gpu_launch_ex(wk_device *dev, wk_gpu_fn fn, unsigned gx, unsigned gy, unsigned gz,
                           unsigned bx, unsigned by, unsigned bz, unsigned shmem, void **args,
                           unsigned flags);
/* Hot kernels by number instead of by name: wk_gpu_fn_slot gives the function stored under slot
 * (< WK_GPU_FN_SLOTS) on dev, or NULL before the first wk_gpu_fn_slot_set. Slots: binary ops on
 * contiguous f32/f16/bf16 (gpu_binary.c) from WK_GPU_SLOT_BINARY, 9 ops (ADD..GEGLU_ERF) x 3
 * dtypes. */
#define WK_GPU_FN_SLOTS 64
#define WK_GPU_SLOT_BINARY 0
wk_gpu_fn wk_gpu_fn_slot(const wk_device *dev, unsigned slot);
void wk_gpu_fn_slot_set(wk_device *dev, unsigned slot, wk_gpu_fn fn);
/* buf <- the n parts joined by '_' (truncated to cap - 1 characters): a kernel name without
 * snprintf, whose format parsing costs a few hundred ns per call on a hot path. */
static inline void wk_gpu_kname(char *buf, size_t cap, const char *const *parts, int n)
{
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (i && o + 1 < cap)
            buf[o++] = '_';
        for (const char *p = parts[i]; *p && o + 1 < cap; p++)
            buf[o++] = *p;
    }
    buf[o] = 0;
}
/* Device facts, read from the device at open. */
int wk_gpu_warp_size(const wk_device *dev);   /* 32 on NVIDIA and RDNA, 64 on CDNA/GCN */
int wk_gpu_sm_count(const wk_device *dev);    /* multiprocessors / compute units */
int wk_gpu_smem_block(const wk_device *dev);  /* dynamic shared memory a block may have */
const char *wk_gpu_arch(const wk_device *dev); /* "sm_90", "gfx90a", "simt32" */
/* Scratch device memory for an op (freed with wk_gpu_scratch_free; stream-ordered). */
wk_status wk_gpu_scratch_alloc(wk_device *dev, size_t bytes, void **ptr);
void wk_gpu_scratch_free(wk_device *dev, void *ptr);

/* The op half: contracts in src/core/backend.h. */
wk_status wk_gpu_unary(wk_device *dev, wk_op op, wk_dtype dt, const wk_unary_params *p, void *out,
                       const void *x, const wk_layout *lx);
wk_status wk_gpu_binary(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb);
wk_status wk_gpu_where_cond(wk_device *dev, wk_dtype cdt, wk_dtype dt, void *out, const void *c,
                            const wk_layout *lc, const void *t, const wk_layout *lt, const void *f,
                            const wk_layout *lf);
wk_status wk_gpu_to_dtype(wk_device *dev, wk_dtype from, wk_dtype to, void *out, const void *x,
                          const wk_layout *lx);
wk_status wk_gpu_const_set(wk_device *dev, wk_dtype dt, void *base, const wk_layout *l,
                           const void *value);
wk_status wk_gpu_copy_strided(wk_device *dev, wk_dtype dt, void *dst, size_t dst_offset,
                              const void *x, const wk_layout *lx);
wk_status wk_gpu_copy2d(wk_device *dev, wk_dtype dt, void *dst, const void *src, size_t d1,
                        size_t d2, size_t src_stride1, size_t dst_stride1, size_t src_offset,
                        size_t dst_offset);
wk_status wk_gpu_reduce(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, uint32_t dims_mask);
wk_status wk_gpu_rand(wk_device *dev, wk_op op, wk_dtype dt, void *out, size_t n, double a,
                      double b, uint64_t seed, uint64_t offset); /* gpu_rand.c, kernels/rand.cu */
wk_status wk_gpu_matmul(wk_device *dev, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb); /* gpu_matmul.c */
wk_status wk_gpu_conv(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *w, const wk_layout *lw,
                      const wk_conv_params *p); /* gpu_conv.c, kernels/conv.cu */
wk_status wk_gpu_pool2d(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, const wk_pool_params *p); /* gpu_pool.c */
wk_status wk_gpu_upsample(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, const int64_t *out_dims, int align_corners,
                          double scale_h, double scale_w); /* gpu_upsample.c */
wk_status wk_gpu_index(wk_device *dev, const wk_index_args *a); /* gpu_index.c */
wk_status wk_gpu_softmax(wk_device *dev, wk_dtype dt, void *out, const void *x,
                         const wk_layout *lx); /* gpu_softmax.c */
wk_status wk_gpu_norm(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *alpha, const wk_layout *la,
                      const void *beta, const wk_layout *lb, float eps);
wk_status wk_gpu_add_norm(wk_device *dev, wk_op op, wk_dtype dt, wk_dtype rdt, void *sum,
                          void *out, const void *x, const wk_layout *lx, const void *r,
                          const wk_layout *lr, const void *alpha, const wk_layout *la,
                          const void *beta, const wk_layout *lb, float eps); /* gpu_norm.c */
wk_status wk_gpu_add_norm_act(wk_device *dev, wk_dtype dt, wk_dtype rdt, void *sum, void *out,
                              void *act, const void *x, const wk_layout *lx, const void *r,
                              const wk_layout *lr, const void *alpha, const wk_layout *la,
                              float eps); /* gpu_norm.c */
wk_status wk_gpu_attention(wk_device *dev, const wk_attn_args *a);
/* gpu_flash.c: the prefill kernel (kernels/flash.cu) takes a: 16-bit q, k, v of one dtype, D 64 or
 * 128, Lq >= 64, no lens, aligned rows (WICK_ATTN_FLASH=0: never). */
bool wk_gpu_flash_fits(const wk_attn_args *a);
wk_status wk_gpu_flash(wk_device *dev, const wk_attn_args *a);
/* gpu_graph.c: graph capture and replay (contracts in src/core/backend.h) */
wk_status wk_gpu_graph_begin(wk_device *dev);
wk_status wk_gpu_graph_end(wk_device *dev, void **graph);
wk_status wk_gpu_graph_launch(wk_device *dev, void *graph);
void wk_gpu_graph_free(wk_device *dev, void *graph);
wk_status wk_gpu_rope(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *cos, const wk_layout *lc, const void *sin,
                      const wk_layout *ls); /* gpu_rope.c */
wk_status wk_gpu_rope_kv(wk_device *dev, const wk_rope_kv_args *a); /* gpu_rope.c */
wk_status wk_gpu_arg_sort(wk_device *dev, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, int ascending); /* gpu_sort.c */
/* Quantized tensors (gpu_quant.c, kernels/quant.cu): contracts in backend.h. */
bool wk_gpu_supports_q(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt);
wk_status wk_gpu_dequantize(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *q,
                            int64_t n);
wk_status wk_gpu_qmatmul(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                         int64_t rows, const void *w, int64_t n, int64_t k);
wk_status wk_gpu_qembedding(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *ids,
                            wk_dtype idt, const wk_layout *li, const void *w, int64_t rows,
                            int64_t k);
wk_status wk_gpu_quantize_act(wk_device *dev, wk_dtype dt, void *act, const void *x, int64_t m,
                              int64_t k);
wk_status wk_gpu_binary_act(wk_device *dev, wk_op op, wk_dtype dt, void *act, const void *a,
                            const wk_layout *la, const void *b, const wk_layout *lb);
/* gpu_ops.c: the kernels that write int8 activations and let their dependents start before they
 * end record the bytes (wk_gpu_act_written); a matvec whose weights overlap the last record
 * (wk_gpu_act_overlaps) is launched normally, not early: its reads of W before its grid wait
 * would race with those writes (W is then someone's activations: legal bytes, however odd). */
void wk_gpu_act_written(wk_device *dev, const void *p, size_t len);
bool wk_gpu_act_overlaps(const wk_device *dev, const void *p, size_t len);
/* gpu_binary.c */
wk_status wk_gpu_qmatmul_act(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *act,
                             int64_t m, const void *w, int64_t n, int64_t k);

/* ---- GEMM, shared by matmul and the convolutions (gpu_matmul.c).
 * For each batch i < batch: C_i (m x n, row-major, row stride ldc) = A_i (m x k) @ B_i (k x n),
 * where element (r, c) of A_i is a[i*a_bs + r*a_rs + c*a_cs] (element units, strides >= 0, any
 * of them may be 1: row-major or transposed operands alike), the same for B, and C_i starts at
 * c + i*c_bs. A, B and C have dtype dt (f32, f64, f16, bf16, and f8e4m3 through the portable
 * kernel only); the reduced types accumulate in f32, f64 in f64. Runs cuBLAS / rocBLAS where present and the strides allow (operands that they cannot
 * read are made contiguous in scratch first), the portable kernel of kernels/gemm.h
 * otherwise or when WK_OPTION_PORTABLE_GEMM is on. f32 uses TF32 only with
 * WK_OPTION_MATMUL_TF32. Asynchronous on the device's stream. */
typedef struct wk_gpu_gemm_args {
    wk_dtype dt;
    int64_t batch, m, n, k;
    const void *a;
    int64_t a_bs, a_rs, a_cs;
    const void *b;
    int64_t b_bs, b_rs, b_cs;
    void *c;
    int64_t c_bs, ldc;
} wk_gpu_gemm_args;
wk_status wk_gpu_gemm(wk_device *dev, const wk_gpu_gemm_args *g);
/* Whether f16 / bf16 / f8e4m3 products of dtype dt run on the matrix units (kernels/mc.h and
 * gemm.h's gemm_mma_* and gemm_pipe_*: NVIDIA sm_80+ and the simt device; gpu_matmul.c). */
bool wk_gpu_matrix_units(const wk_device *dev, wk_dtype dt);

/* ---- device-side errors. word: the device's error record, two device uint32 words
 * {code, detail} (detail: the low 32 bits of the offending value, e.g. the bad id), zero while
 * all is well. A kernel that finds an invalid input it cannot reject on the host (an id out of
 * range) sets them with wk_kerr (kernels/gpu.h: first error wins) and writes nothing out of
 * bounds; the next synchronize or download reports WK_ERR_INDEX_OUT_OF_RANGE with the code and
 * detail, and clears them. Allocated on first use. */
wk_status wk_gpu_error_word(wk_device *dev, uint32_t **word);
/* The codes (kernels/gpu.h has the same values): which op found the bad value. */
enum {
    WK_KERR_INDEX_SELECT = 1, WK_KERR_GATHER = 2, WK_KERR_SCATTER_SET = 3,
    WK_KERR_SCATTER_ADD_SET = 4, WK_KERR_INDEX_ADD = 5, WK_KERR_QEMBEDDING = 6,
    WK_KERR_DECODE_ATTENTION = 7, /* a key count of wk_decode_attention_lens */
    WK_KERR_ROPE_KV_APPEND = 8    /* a position of wk_rope_kv_append */
};
const char *wk_gpu_kerr_name(uint32_t code); /* "index_select", ...; "op" if unknown */

/* ---- completion counters: WK_GPU_COUNTERS device uint32 words, zero before and after every
 * kernel that uses them (a kernel counts its blocks' arrivals in some and the last block to
 * arrive sets them back to 0; kernels run one at a time on the device's stream). Allocated
 * and zeroed on first use (and by wk_graph_begin, before a capture). Decode attention uses
 * them to let the last block of a kv head merge the splits (kernels/attn.h). */
#define WK_GPU_COUNTERS 65536
wk_status wk_gpu_counters(wk_device *dev, uint32_t **ctr);

/* ---- the vendor stream, for libraries that launch their own work (cuBLAS, rocBLAS): makes the
 * device current in the calling thread and returns its stream (CUstream / hipStream_t). */
wk_status wk_gpu_bind(wk_device *dev, void **stream);

/* Which (op, dtype) pairs the op half implements. */
bool wk_gpu_ops_supports(wk_op op, wk_dtype dt);

#endif
