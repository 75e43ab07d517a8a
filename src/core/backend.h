/* backend.h: the interface every backend implements (one C vtable), and the objects behind the
 * public handles. Internal: users never include it.
 *
 * The front end (src/core/api_*.c) validates every argument once, allocates the contiguous output
 * through the backend, and only then calls an op here: a backend op may assume
 *   - dtypes are the ones wk_op_defined() accepts and the backend's supports() said yes to;
 *   - every layout has rank <= WK_MAX_RANK, strides >= 0, and addresses inside its storage;
 *   - `out` is a fresh contiguous buffer of exactly elem_count(layout of the first input) elements
 *     of the output dtype; element counts fit in int64_t and in size_t bytes;
 *   - pointers are the storage's base address (device addresses on a GPU): layouts carry offsets.
 * Ops may run asynchronously (GPU); errors found later surface at the next synchronizing call. */
#ifndef WK_BACKEND_H
#define WK_BACKEND_H

#include "wick.h"
#include <stdatomic.h>
#include <stdbool.h>

typedef struct wk_backend wk_backend;

struct wk_device {
    const wk_backend *be;
    wk_backend_kind kind;
    int ordinal;
    char name[160];
    void *impl; /* backend-private state */
    uint64_t rng_seed;   /* wk_device_set_seed */
    uint64_t rng_offset; /* elements drawn since */
    atomic_int refs;     /* 1 for the opener + 1 per live storage: closed when it reaches 0 */
    atomic_bool closed;  /* wk_device_close has dropped the opener's reference */
};

/* A storage takes a reference on its device (wk_device_retain) and drops it when freed, so a
 * device closed while storages live (one exported through DLPack, say, or one another thread is
 * running ops on) stays open until the last of them goes. wk_device_close drops the opener's
 * reference, once (docs/architecture.md, "Threads"). */
void wk_device_retain(wk_device *dev);
void wk_device_release(wk_device *dev);

struct wk_storage {
    wk_device *dev;
    wk_dtype dtype;
    size_t len;  /* elements */
    void *data;  /* host pointer (CPU) or device address (GPU) */
    atomic_int refs;  /* owners: 1 at creation, +1 per wk_storage_retain, -1 per wk_storage_free */
    bool readonly;    /* memory lent read-only (a DLPack import): in-place ops refuse it */
    /* Memory wick does not own (a DLPack import): release(release_ctx) runs once, on the last
     * free, instead of the backend's free. NULL for memory from be->alloc. */
    void (*release)(void *ctx);
    void *release_ctx;
};

/* Parameters of the parametrised unary ops (affine: p0 = mul, p1 = add; powf: p0 = e;
 * elu: p0 = alpha). Unused for the plain unary ops. */
typedef struct wk_unary_params {
    double p0, p1;
} wk_unary_params;

/* The indexing family in one argument block. select/gather/index_add write `out` (contiguous,
 * fresh; index_add: already holding a copy of dst); scatter_set/scatter_add_set write `dst`
 * in place through ld. ids are validated by the backend (out of range: nothing written,
 * WK_ERR_INDEX_OUT_OF_RANGE naming the id and its position; on a GPU possibly deferred). */
typedef struct wk_index_args {
    wk_op op;
    wk_dtype dt;  /* values */
    wk_dtype idt; /* ids: u8, u32, i64 */
    int32_t dim;
    void *out;                /* select, gather, index_add */
    void *dst;                /* scatter_set, scatter_add_set */
    const wk_layout *ld;      /* dst (scatter*), or dst's dims for index_add */
    const void *src;
    const wk_layout *ls;
    const void *ids;
    const wk_layout *li;
} wk_index_args;

/* Decode attention (wk_decode_attention, include/wick.h): q (B, Hq, Lq, D), k and v (B, Hkv, Lk,
 * D) through their layouts (rank 4, last stride 1, offsets applied by the backend); out (B, Hq,
 * Lq, D) contiguous of qdt; lens (optional) the per-entry key counts. */
typedef struct wk_attn_args {
    wk_dtype qdt, kvdt;
    void *out;
    const void *q, *k, *v;
    const wk_layout *lq, *lk, *lv;
    float scale;
    int causal;
    /* wk_decode_attention_lens: lens (u32, B elements) with its offset applied by the backend
     * (layout ll: rank 1, strides[0] steps between entries); NULL: every entry has Lk keys. The
     * front end has checked the layout, not the values: a count outside [Lq, Lk] is the
     * backend's to report (WK_ERR_INDEX_OUT_OF_RANGE; on a GPU through the error record). */
    const void *lens;
    const wk_layout *ll;
} wk_attn_args;

/* wk_rope_kv_append (api_rope_kv.c has checked everything): q (B, Hq, T, D), k and v (B, Hkv, T,
 * D) of dt; cos and sin (P, D/2) or (B, P, D/2) of dt; kc and vc (B, Hkv, L, D) of cdt, written in
 * place; out (B, Hq, T, D) contiguous of cdt. Every operand through its layout (offsets applied by
 * the backend). The T rows of entry b go to positions p_b.. of the tables and the cache: p_b =
 * pos[b] (u32 through lp, rank 1; values unchecked: p_b + T beyond P or L is the backend's to
 * report, WK_ERR_INDEX_OUT_OF_RANGE, that entry not written) or, pos NULL, start (checked). */
typedef struct wk_rope_kv_args {
    wk_dtype dt, cdt, tdt; /* q, k, v; the caches and out; the tables (dt or f32) */
    int interleaved;
    void *out, *kc, *vc;
    const void *q, *k, *v, *cos, *sin, *pos;
    const wk_layout *lq, *lk, *lv, *lc, *ls, *lkc, *lvc, *lp;
    int64_t start;
} wk_rope_kv_args;

struct wk_backend {
    const char *name;
    wk_backend_kind kind;

    /* devices */
    wk_status (*device_count)(int *n, const char **reason);
    wk_status (*device_open)(wk_device *dev, int ordinal); /* fills name and impl */
    void (*device_close)(wk_device *dev);
    wk_status (*synchronize)(wk_device *dev);
    bool (*supports)(const wk_device *dev, wk_op op, wk_dtype dtype);
    /* The native stream the device's work is ordered on (CUstream / hipStream_t), the device made
     * current in the calling thread. NULL entry: the backend has no stream (the CPU). */
    wk_status (*stream)(wk_device *dev, void **stream);
    /* Where the device's kernels come from, and loading them all now (wk_device_warmup).
     * NULL entries: the backend has no kernel modules (the CPU: WK_CODE_BUILTIN, nothing to do). */
    wk_code_source (*code_source)(const wk_device *dev);
    wk_status (*warmup)(wk_device *dev, int threads);

    /* memory (bytes) */
    wk_status (*alloc)(wk_device *dev, size_t bytes, void **ptr);
    void (*free)(wk_device *dev, void *ptr);
    wk_status (*upload)(wk_device *dev, void *dst, const void *host_src, size_t bytes);
    wk_status (*download)(wk_device *dev, void *host_dst, const void *src, size_t bytes); /* waits */
    wk_status (*copy)(wk_device *dev, void *dst, const void *src, size_t bytes);
    wk_status (*memset_zero)(wk_device *dev, void *dst, size_t bytes);

    /* ops (see the contract above) */
    /* op in EXP..SIGMOID, AFFINE, POWF, ELU; out has dtype dt. */
    wk_status (*unary)(wk_device *dev, wk_op op, wk_dtype dt, const wk_unary_params *p, void *out,
                       const void *x, const wk_layout *lx);
    /* op in ADD..MINIMUM (out dtype dt) or EQ..GE (out u8); la and lb have the same dims. */
    wk_status (*binary)(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb);
    /* cond dtype cdt (u8/u32/i64), values dt; all layouts the same dims. */
    wk_status (*where_cond)(wk_device *dev, wk_dtype cdt, wk_dtype dt, void *out, const void *c,
                            const wk_layout *lc, const void *t, const wk_layout *lt, const void *f,
                            const wk_layout *lf);
    wk_status (*to_dtype)(wk_device *dev, wk_dtype from, wk_dtype to, void *out, const void *x,
                          const wk_layout *lx);
    /* In place: every element addressed by l (inside the storage at base) becomes *value (raw
     * bits of one element of dt, in host memory). */
    wk_status (*const_set)(wk_device *dev, wk_dtype dt, void *base, const wk_layout *l,
                           const void *value);
    /* op in SUM..ARGMAX; dims_mask bit k set = dim k reduced; out is keepdim-contiguous with
     * dtype dt (sum/min/max) or u32 (argmin/argmax). Reduced extents are non-empty for
     * min/max/argmin/argmax. */
    wk_status (*reduce)(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, uint32_t dims_mask);
    /* dst[dst_offset + i] = x[element i of lx], element offsets. */
    wk_status (*copy_strided)(wk_device *dev, wk_dtype dt, void *dst, size_t dst_offset,
                              const void *x, const wk_layout *lx);
    /* Candle's copy2d, element units; all bounds already checked. */
    wk_status (*copy2d)(wk_device *dev, wk_dtype dt, void *dst, const void *src, size_t d1,
                        size_t d2, size_t src_stride1, size_t dst_stride1, size_t src_offset,
                        size_t dst_offset);
    /* out[i] = sample i of the stream (seed, offset), see src/core/philox.h; op is
     * WK_OP_RAND_UNIFORM (a = lo, b = up) or WK_OP_RAND_NORMAL (a = mean, b = std). */
    wk_status (*rand)(wk_device *dev, wk_op op, wk_dtype dt, void *out, size_t n, double a,
                      double b, uint64_t seed, uint64_t offset);

    /* ---- the rest of Candle's op set (NULL where a backend has none; supports() says so) */
    /* a [..., m, k] @ b [..., k, n] -> out [..., m, n]; rank >= 2, equal batch dims. */
    wk_status (*matmul)(wk_device *dev, wk_dtype dt, void *out, const void *a, const wk_layout *la,
                        const void *b, const wk_layout *lb);
    /* op in CONV1D..CONV_TRANSPOSE2D; shapes as in wick.h, already checked. */
    wk_status (*conv)(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *w, const wk_layout *lw,
                      const wk_conv_params *p);
    /* op AVG_POOL2D or MAX_POOL2D. */
    wk_status (*pool2d)(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                        const wk_layout *lx, const wk_pool_params *p);
    /* op UPSAMPLE_*; out_dims are the output's spatial dims (1 or 2). */
    wk_status (*upsample)(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, const int64_t *out_dims, int align_corners,
                          double scale_h, double scale_w);
    wk_status (*index)(wk_device *dev, const wk_index_args *a);
    wk_status (*softmax)(wk_device *dev, wk_dtype dt, void *out, const void *x, const wk_layout *lx);
    /* op RMS_NORM (beta NULL) or LAYER_NORM. */
    wk_status (*norm)(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *alpha, const wk_layout *la,
                      const void *beta, const wk_layout *lb, float eps);
    /* op RMS_NORM (beta NULL) or LAYER_NORM of sum = x + r: sum (contiguous, x's dtype and
     * count) = x + r rounded, out = the norm of sum (wk_add_rms_norm: out equals norm(sum) bit
     * for bit); lx and lr have the same dims. r is of rdt: dt, or f16/bf16 under f32 x (each
     * element widened exactly: the bits of the call on r converted to f32). */
    wk_status (*add_norm)(wk_device *dev, wk_op op, wk_dtype dt, wk_dtype rdt, void *sum,
                          void *out, const void *x, const wk_layout *lx, const void *r,
                          const wk_layout *lr, const void *alpha, const wk_layout *la,
                          const void *beta, const wk_layout *lb, float eps);
    /* op ROPE, ROPE_I or ROPE_THD. */
    wk_status (*rope)(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *x,
                      const wk_layout *lx, const void *cos, const wk_layout *lc, const void *sin,
                      const wk_layout *ls);
    wk_status (*arg_sort)(wk_device *dev, wk_dtype dt, void *out, const void *x,
                          const wk_layout *lx, int ascending);

    /* decode attention (api_attn.c has checked everything: shapes, strides, dtypes) */
    wk_status (*attention)(wk_device *dev, const wk_attn_args *a);
    /* rope of q and k, k and v appended to a KV cache (wk_rope_kv_append) */
    wk_status (*rope_kv)(wk_device *dev, const wk_rope_kv_args *a);
    /* graphs (api_graph.c; NULL: the backend cannot capture). graph_begin: ops issued on dev are
     * recorded, not run, until graph_end, which returns the backend's graph (freed by
     * graph_free, after waiting for its replays) or fails, ending the capture either way.
     * graph_launch: one replay, asynchronous like any op. */
    wk_status (*graph_begin)(wk_device *dev);
    wk_status (*graph_end)(wk_device *dev, void **graph);
    wk_status (*graph_launch)(wk_device *dev, void *graph);
    void (*graph_free)(wk_device *dev, void *graph);
    /* ---- quantized tensors (wk_qtype blocks in a byte buffer; NULL where a backend has none).
     * supports_q: 1 if op (DEQUANTIZE, QMATMUL, QEMBEDDING) runs for block type qt with float
     * dtype dt (the output's, and x's for qmatmul). */
    bool (*supports_q)(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt);
    /* out: n elements of dt (n a multiple of the block size) from the blocks at q. */
    wk_status (*dequantize)(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *q,
                            int64_t n);
    /* out (rows, n) of dt = x (rows, k) of dt, contiguous, @ W^T, W (n, k) quantized (each row
     * k / block_elems blocks, contiguous). rows small (<= 8) is the decode case. */
    wk_status (*qmatmul)(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *x,
                         int64_t rows, const void *w, int64_t n, int64_t k);
    /* out (elem_count(li), k) of dt: row ids[i] of W (rows, k) quantized, dequantized. ids u8,
     * u32 or i64, any layout; the dtype's max value is the "none" sentinel (a row of zeros);
     * other ids outside [0, rows) fail with WK_ERR_INDEX_OUT_OF_RANGE (GPU: deferred, nothing
     * written out of bounds). */
    wk_status (*qembedding)(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *ids,
                            wk_dtype idt, const wk_layout *li, const void *w, int64_t rows,
                            int64_t k);
    /* out (n / block_elems blocks of qt) <- x (n contiguous f32 in host memory, n a multiple of
     * the block size): host work, so only the CPU backend has it (NULL elsewhere; wk_quantize
     * asks for x on the CPU). */
    wk_status (*quantize)(wk_qtype qt, void *out, const float *x, int64_t n);
    /* ---- int8 activations (wk_quantize_act; layout and rule: wick.h, docs/semantics.md).
     * quantize_act: act <- x (m, k) of dt (f32, f16, bf16), contiguous, k a multiple of 32. */
    wk_status (*quantize_act)(wk_device *dev, wk_dtype dt, void *act, const void *x, int64_t m,
                              int64_t k);
    /* add_norm (op RMS_NORM) writing the activations of out to act as well (the bits of
     * quantize_act on out); NULL: the front end runs add_norm, then quantize_act on out. */
    wk_status (*add_norm_act)(wk_device *dev, wk_dtype dt, wk_dtype rdt, void *sum, void *out,
                              void *act, const void *x, const wk_layout *lx, const void *r,
                              const wk_layout *lr, const void *alpha, const wk_layout *la,
                              float eps);
    /* binary op (ADD..GEGLU_ERF) of a and b (wk_binary's arguments) writing only the activations
     * of its result to act (the bits of quantize_act on it); NULL: the front end runs binary,
     * then quantize_act. */
    wk_status (*binary_act)(wk_device *dev, wk_op op, wk_dtype dt, void *act, const void *a,
                            const wk_layout *la, const void *b, const wk_layout *lb);
    /* out (m, n) of dt = act (m rows of k) @ W^T, W (n, k) quantized (supports_q with op
     * QMATMUL_ACT says for which qt). */
    wk_status (*qmatmul_act)(wk_device *dev, wk_qtype qt, wk_dtype dt, void *out, const void *act,
                             int64_t m, const void *w, int64_t n, int64_t k);
};

/* The backends linked into this build (NULL where a backend is not compiled in). */
extern const wk_backend wk_cpu_backend;
extern const wk_backend wk_cuda_backend; /* src/gpu/gpu_backend.c, over src/gpu/cuda.c */
extern const wk_backend wk_rocm_backend; /* src/gpu/gpu_backend.c, over src/gpu/hip.c */
extern const wk_backend wk_simt_backend; /* src/gpu/gpu_backend.c, over src/simt/simt.c */
const wk_backend *wk_backend_for(wk_backend_kind kind);
/* true if be has the vtable entry that implements op's family (a backend's supports() starts
 * from this, so a family it lacks is reported, never called). */
bool wk_backend_has_family(const wk_backend *be, wk_op op);

#endif
