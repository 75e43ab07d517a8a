/* gpu_ops.c: helpers of the GPU op half (device facts, kernel layouts, grids, names,
 * launches). The (op, dtype) pairs that the kernels implement are in gpu_supports.c. Nothing
 * here calls gpu_backend.c (the vtable above every op). */
#include "gpu_driver.h"
#include "gpu_ops.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The kernels read these structs with the layout of kernels/gpu.h's wk_klay<N>. */
_Static_assert(sizeof(wk_klay1) == 8 + 8 * 8 + 8 * 8, "wk_klay1 layout");
_Static_assert(sizeof(wk_klay3) == 8 + 8 * 8 + 3 * 8 * 8, "wk_klay3 layout");
_Static_assert(offsetof(wk_klay2, dims) == 8 && offsetof(wk_klay2, st) == 72, "wk_klay2 layout");

/* ---- device facts, read from the device at open (gpu_impl.h) */
int wk_gpu_warp_size(const wk_device *dev) { return wk_gpu_dev(dev)->props.warp_size; }
const char *wk_gpu_arch(const wk_device *dev) { return wk_gpu_dev(dev)->props.arch; }
int wk_gpu_sm_count(const wk_device *dev) { return wk_gpu_dev(dev)->props.sm_count; }
int wk_gpu_smem_block(const wk_device *dev) { return wk_gpu_dev(dev)->props.smem_block; }

/* Fills the fields of a kernel layout from n collapsed layouts of equal dims. */
static void klay_fill(int32_t *rank, int32_t *small, int64_t *dims, int64_t (*st)[WK_MAX_RANK],
                      const wk_layout *col, int n)
{
    memset(dims, 0, sizeof(int64_t) * WK_MAX_RANK);
    for (int i = 0; i < n; i++)
        memset(st[i], 0, sizeof(int64_t) * WK_MAX_RANK);
    if (col[0].rank == 0) { /* one element */
        *rank = 1;
        dims[0] = 1;
        *small = 1;
        return;
    }
    *rank = col[0].rank;
    int64_t count = 1;
    for (int k = 0; k < col[0].rank; k++) {
        dims[k] = col[0].dims[k];
        count = dims[k] == 0 ? 0 : count * dims[k]; /* the front end checked for overflow */
    }
    bool fits = count <= INT32_MAX;
    for (int i = 0; i < n; i++) {
        int64_t reach = 0; /* the largest offset; in range of int64 (it is inside a storage) */
        for (int k = 0; k < col[0].rank; k++) {
            st[i][k] = col[i].strides[k];
            if (dims[k] > 0)
                reach += (dims[k] - 1) * st[i][k];
        }
        fits = fits && reach <= INT32_MAX;
    }
    *small = fits;
}

void wk_gpu_klay1(wk_klay1 *k, wk_layout *collapsed, const wk_layout *l)
{
    wk_layout_collapse(collapsed, l);
    klay_fill(&k->rank, &k->small, k->dims, k->st, collapsed, 1);
}

void wk_gpu_klay1_of(wk_klay1 *k, const wk_layout *l)
{
    klay_fill(&k->rank, &k->small, k->dims, k->st, l, 1);
}

void wk_gpu_klay2(wk_klay2 *k, wk_layout *collapsed, const wk_layout *a, const wk_layout *b)
{
    const wk_layout *in[2] = {a, b};
    wk_layout_collapse_n(collapsed, in, 2);
    klay_fill(&k->rank, &k->small, k->dims, k->st, collapsed, 2);
}

void wk_gpu_klay3(wk_klay3 *k, wk_layout *collapsed, const wk_layout *a, const wk_layout *b,
                  const wk_layout *c)
{
    const wk_layout *in[3] = {a, b, c};
    wk_layout_collapse_n(collapsed, in, 3);
    klay_fill(&k->rank, &k->small, k->dims, k->st, collapsed, 3);
}

unsigned wk_gpu_blocks(const wk_device *dev, int64_t units)
{
    const int64_t sm = wk_gpu_sm_count(dev) > 0 ? wk_gpu_sm_count(dev) : 1;
    /* A grid that covers the work with 4 units per thread: the contiguous loops of
     * kernels/gpu.h then issue all 4 loads of a thread at once (measured on an H200, 2^26
     * 16-byte units: 2-5% faster than 16 resident blocks per multiprocessor looping, up to 30%
     * faster than one unit per thread). Work too small for 4 blocks per multiprocessor that
     * way takes one unit per thread instead, spread over the device; a cap keeps grids in
     * range, grid-stride loops cover the rest. */
    const int64_t per_block = (int64_t)WK_GPU_BLOCK * 4;
    int64_t b = (units + per_block - 1) / per_block;
    if (b < sm * 4) {
        const int64_t one = (units + WK_GPU_BLOCK - 1) / WK_GPU_BLOCK;
        b = one < sm * 4 ? one : sm * 4;
    }
    if (b > sm * 1024)
        b = sm * 1024;
    return b < 1 ? 1u : (unsigned)b;
}

const char *wk_gpu_op_kname(wk_op op)
{
    switch (op) {
    case WK_OP_EXP: return "exp";
    case WK_OP_LOG: return "log";
    case WK_OP_SIN: return "sin";
    case WK_OP_COS: return "cos";
    case WK_OP_TANH: return "tanh";
    case WK_OP_ABS: return "abs";
    case WK_OP_NEG: return "neg";
    case WK_OP_RECIP: return "recip";
    case WK_OP_SQR: return "sqr";
    case WK_OP_SQRT: return "sqrt";
    case WK_OP_GELU: return "gelu";
    case WK_OP_GELU_ERF: return "gelu_erf";
    case WK_OP_ERF: return "erf";
    case WK_OP_RELU: return "relu";
    case WK_OP_SILU: return "silu";
    case WK_OP_FLOOR: return "floor";
    case WK_OP_CEIL: return "ceil";
    case WK_OP_ROUND: return "round";
    case WK_OP_SIGN: return "sign";
    case WK_OP_SIGMOID: return "sigmoid";
    case WK_OP_AFFINE: return "affine";
    case WK_OP_POWF: return "powf";
    case WK_OP_ELU: return "elu";
    case WK_OP_ADD: return "add";
    case WK_OP_SUB: return "sub";
    case WK_OP_MUL: return "mul";
    case WK_OP_DIV: return "div";
    case WK_OP_MAXIMUM: return "maximum";
    case WK_OP_MINIMUM: return "minimum";
    case WK_OP_SWIGLU: return "swiglu";
    case WK_OP_GEGLU: return "geglu";
    case WK_OP_GEGLU_ERF: return "geglu_erf";
    default: return "?";
    }
}

const char *wk_gpu_kerr_name(uint32_t code)
{
    switch (code) {
    case WK_KERR_INDEX_SELECT: return "index_select";
    case WK_KERR_GATHER: return "gather";
    case WK_KERR_SCATTER_SET: return "scatter_set";
    case WK_KERR_SCATTER_ADD_SET: return "scatter_add_set";
    case WK_KERR_INDEX_ADD: return "index_add";
    case WK_KERR_QEMBEDDING: return "qembedding";
    case WK_KERR_DECODE_ATTENTION: return "decode_attention_lens (key count)";
    case WK_KERR_ROPE_KV_APPEND: return "rope_kv_append (position)";
    default: return "op";
    }
}

const char *wk_gpu_dtype_kname(wk_dtype dt)
{
#define WK_DT_NAME(E, s, T) #s,
    static const char *const names[WK_DTYPE_COUNT] = {WK_DTYPE_LIST(WK_DT_NAME)};
#undef WK_DT_NAME
    return wk_dtype_valid(dt) ? names[dt] : "?";
}

static wk_status run_flags(wk_device *dev, const char *module, const char *name, unsigned gx,
                           unsigned gy, unsigned gz, void **args, unsigned flags)
{
    wk_gpu_fn fn;
    const wk_status s = wk_gpu_function(&fn, dev, module, name);
    if (s != WK_OK)
        return s;
    return wk_gpu_launch_ex(dev, fn, gx, gy, gz, WK_GPU_BLOCK, 1, 1, 0, args, flags);
}

wk_status wk_gpu_run(wk_device *dev, const char *module, const char *name, unsigned gx,
                     unsigned gy, unsigned gz, void **args)
{
    return run_flags(dev, module, name, gx, gy, gz, args, 0);
}

wk_status wk_gpu_run_early(wk_device *dev, const char *module, const char *name, unsigned gx,
                           unsigned gy, unsigned gz, void **args)
{
    return run_flags(dev, module, name, gx, gy, gz, args, WK_LAUNCH_EARLY);
}

void wk_gpu_act_written(wk_device *dev, const void *p, size_t len)
{
    wk_gpu_device *g = wk_gpu_dev(dev);
    atomic_store_explicit(&g->act_lo, (uintptr_t)p, memory_order_relaxed);
    atomic_store_explicit(&g->act_hi, (uintptr_t)p + len, memory_order_relaxed);
}

bool wk_gpu_act_overlaps(const wk_device *dev, const void *p, size_t len)
{
    const wk_gpu_device *g = wk_gpu_dev(dev);
    const uintptr_t lo = atomic_load_explicit(&g->act_lo, memory_order_relaxed);
    const uintptr_t hi = atomic_load_explicit(&g->act_hi, memory_order_relaxed);
    return (uintptr_t)p < hi && lo < (uintptr_t)p + len;
}
