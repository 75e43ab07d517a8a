/* api_quant.c: front end of the quantized ops: wk_quantize, wk_dequantize, wk_qmatmul,
 * wk_qembedding, wk_device_supports_quant, and the int8 activations (wk_act_bytes,
 * wk_quantize_act, wk_qmatmul_act). Checks every argument once, for every backend (order
 * and statuses: docs/semantics.md, "Quantized tensors"), allocates the contiguous output and
 * calls the backend's quantized entries (supports_q, dequantize, qmatmul, qembedding). Quantizing
 * is host work (the GGUF writer's): it runs on the CPU only, through the CPU backend's quantize
 * entry (src/cpu/cpu_quantize.c). */
#include "api.h"
#include <string.h>

static bool qtype_valid(wk_qtype qt) { return wk_qtype_block_elems(qt) > 0; }

int wk_device_supports_quant(const wk_device *dev, wk_op op, wk_qtype qt, wk_dtype dt)
{
    if (!dev || !qtype_valid(qt) ||
        (op != WK_OP_DEQUANTIZE && op != WK_OP_QMATMUL && op != WK_OP_QEMBEDDING &&
         op != WK_OP_QMATMUL_ACT))
        return 0;
    const wk_backend *be = dev->be;
    return wk_op_defined(op, dt) && be->supports(dev, op, dt) && be->supports_q &&
           be->supports_q(dev, op, qt, dt);
}

/* The checks shared by the three ops that read quantized bytes, in the documented order after
 * the operands themselves. First what the arguments are: the block type, the float dtype
 * (defined for op), the byte storage's dtype, sizes >= 0. */
static wk_status check_q_kind(const char *name, wk_op op, wk_dtype dt, const wk_storage *q,
                              wk_qtype qt, int64_t rows, int64_t k)
{
    if (!qtype_valid(qt))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: unknown block type %d", name, (int)qt);
    if (!wk_op_defined(op, dt))
        return wk_err(WK_ERR_DTYPE, "%s: the float side is %s (want f32, f16 or bf16)", name,
                      wk_dtype_name(dt));
    if (q->dtype != WK_DTYPE_U8)
        return wk_err(WK_ERR_DTYPE, "%s: quantized data must be a u8 storage, got %s", name,
                      wk_dtype_name(q->dtype));
    if (rows < 0 || k < 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: negative size (%lld x %lld)", name,
                      (long long)rows, (long long)k);
    return WK_OK;
}

/* Then the sizes: k a multiple of the block size, `rows` rows of k elements fitting in q (no
 * overflow), and finally the device's support. */
static wk_status check_q_size(const char *name, wk_op op, const wk_device *dev, wk_dtype dt,
                              const wk_storage *q, wk_qtype qt, int64_t rows, int64_t k)
{
    const int64_t be = wk_qtype_block_elems(qt), bb = wk_qtype_block_bytes(qt);
    if (k % be != 0)
        return wk_err(WK_ERR_SHAPE, "%s: %lld elements per row is not a multiple of the %s block "
                      "size %lld", name, (long long)k, wk_qtype_name(qt), (long long)be);
    int64_t bytes;
    if (__builtin_mul_overflow(k / be, bb, &bytes) || __builtin_mul_overflow(bytes, rows, &bytes))
        return wk_err(WK_ERR_OVERFLOW, "%s: %lld x %lld %s elements overflow", name,
                      (long long)rows, (long long)k, wk_qtype_name(qt));
    if ((uint64_t)bytes > (uint64_t)q->len)
        return wk_err(WK_ERR_SHAPE, "%s: %lld x %lld %s elements need %lld bytes, the storage "
                      "holds %zu", name, (long long)rows, (long long)k, wk_qtype_name(qt),
                      (long long)bytes, q->len);
    if (!wk_device_supports_quant(dev, op, qt, dt))
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: %s with %s is not implemented on %s", name,
                      wk_qtype_name(qt), wk_dtype_name(dt), dev->be->name);
    return WK_OK;
}

/* *tmp = NULL and *p = x's data at its offset when lx is contiguous (pointer arithmetic only
 * on the CPU, where data is a host pointer); otherwise *tmp = a contiguous copy made by the
 * backend's copy_strided and *p its data. */
static wk_status contiguous(const void **p, wk_storage **tmp, const wk_storage *x,
                            const wk_layout *lx, const char *name)
{
    *tmp = NULL;
    if (wk_layout_is_contiguous(lx) && (lx->offset == 0 || x->dev->kind == WK_BACKEND_CPU)) {
        *p = (const char *)x->data + (size_t)lx->offset * wk_dtype_size(x->dtype);
        return WK_OK;
    }
    const int64_t n = wk_layout_elem_count(lx);
    wk_status st = wk_storage_new(tmp, x->dev, x->dtype, (size_t)n, name);
    if (st)
        return st;
    if (n > 0 && (st = x->dev->be->copy_strided(x->dev, x->dtype, (*tmp)->data, 0, x->data, lx))) {
        wk_storage_free(*tmp);
        *tmp = NULL;
        return st;
    }
    *p = (*tmp)->data;
    return WK_OK;
}

wk_status wk_quantize(wk_storage **out, wk_qtype qt, const wk_storage *x, const wk_layout *lx)
{
    const char *name = "quantize";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *out = NULL;
    if ((st = wk_check_operand(x, lx, name, "x")))
        return st;
    if (!qtype_valid(qt))
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: unknown block type %d", name, (int)qt);
    if (x->dtype != WK_DTYPE_F32)
        return wk_err(WK_ERR_DTYPE, "%s: x is %s (want f32)", name, wk_dtype_name(x->dtype));
    if (x->dev->kind != WK_BACKEND_CPU || !x->dev->be->quantize)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s: x is on %s; quantize on the CPU and upload the "
                      "bytes", name, x->dev->name);
    const int64_t n = wk_layout_elem_count(lx);
    const int64_t be = wk_qtype_block_elems(qt), bb = wk_qtype_block_bytes(qt);
    if (n % be != 0)
        return wk_err(WK_ERR_SHAPE, "%s: %lld elements is not a multiple of the %s block size %lld",
                      name, (long long)n, wk_qtype_name(qt), (long long)be);
    int64_t bytes;
    if (__builtin_mul_overflow(n / be, bb, &bytes))
        return wk_err(WK_ERR_OVERFLOW, "%s: %lld %s elements overflow", name, (long long)n,
                      wk_qtype_name(qt));
    const void *xp;
    wk_storage *tmp, *o;
    if ((st = contiguous(&xp, &tmp, x, lx, name)))
        return st;
    if ((st = wk_storage_new(&o, x->dev, WK_DTYPE_U8, (size_t)bytes, name))) {
        wk_storage_free(tmp);
        return st;
    }
    st = x->dev->be->quantize(qt, o->data, xp, n);
    wk_storage_free(tmp);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_dequantize(wk_storage **out, wk_dtype dt, const wk_storage *q, wk_qtype qt, int64_t n)
{
    const char *name = "dequantize";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *out = NULL;
    if (!q)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for q", name);
    /* n elements = one "row" of n elements: the same size rules as a matrix row */
    if ((st = check_q_kind(name, WK_OP_DEQUANTIZE, dt, q, qt, 1, n)) ||
        (st = check_q_size(name, WK_OP_DEQUANTIZE, q->dev, dt, q, qt, 1, n)))
        return st;
    wk_storage *o;
    if ((st = wk_storage_new(&o, q->dev, dt, (size_t)n, name)))
        return st;
    if (n > 0 && (st = q->dev->be->dequantize(q->dev, qt, dt, o->data, q->data, n))) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_qmatmul(wk_storage **out, const wk_storage *x, const wk_layout *lx,
                     const wk_storage *w, wk_qtype qt, int64_t n, int64_t k)
{
    const char *name = "qmatmul";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *out = NULL;
    if ((st = wk_check_operand(x, lx, name, "x")))
        return st;
    if (!w)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for w", name);
    if ((st = wk_check_same_device(x, w, name)))
        return st;
    if ((st = check_q_kind(name, WK_OP_QMATMUL, x->dtype, w, qt, n, k)))
        return st;
    char sx[256];
    if (lx->rank < 1 || lx->dims[lx->rank - 1] != k)
        return wk_err(WK_ERR_SHAPE, "%s: want x (..., m, k = %lld) of rank >= 1, got %s", name,
                      (long long)k, wk_layout_str(sx, sizeof sx, lx));
    if ((st = check_q_size(name, WK_OP_QMATMUL, x->dev, x->dtype, w, qt, n, k)))
        return st;
    const int64_t rows = k > 0 ? wk_layout_elem_count(lx) / k : 0;
    int64_t cnt = n;
    for (int32_t d = 0; d < lx->rank - 1; d++)
        if (__builtin_mul_overflow(cnt, lx->dims[d], &cnt))
            return wk_err(WK_ERR_OVERFLOW, "%s: the output element count overflows", name);
    wk_storage *o, *tmp = NULL;
    if ((st = wk_storage_new(&o, x->dev, x->dtype, (size_t)cnt, name)))
        return st;
    if (cnt > 0 && k == 0) { /* empty sums */
        st = x->dev->be->memset_zero(x->dev, o->data, (size_t)cnt * wk_dtype_size(x->dtype));
    } else if (cnt > 0) {
        const void *xp;
        if (!(st = contiguous(&xp, &tmp, x, lx, name)))
            st = x->dev->be->qmatmul(x->dev, qt, x->dtype, o->data, xp, rows, w->data, n, k);
        wk_storage_free(tmp);
    }
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_qembedding(wk_storage **out, wk_dtype dt, const wk_storage *ids, const wk_layout *li,
                        const wk_storage *w, wk_qtype qt, int64_t rows, int64_t k)
{
    const char *name = "qembedding";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *out = NULL;
    if ((st = wk_check_operand(ids, li, name, "ids")))
        return st;
    if (!w)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for w", name);
    if ((st = wk_check_same_device(ids, w, name)))
        return st;
    const wk_dtype it = ids->dtype;
    if (it != WK_DTYPE_U8 && it != WK_DTYPE_U32 && it != WK_DTYPE_I64)
        return wk_err(WK_ERR_DTYPE, "%s: ids are %s (want u8, u32 or i64)", name, wk_dtype_name(it));
    if ((st = check_q_kind(name, WK_OP_QEMBEDDING, dt, w, qt, rows, k)))
        return st;
    char si[256];
    if (li->rank >= WK_MAX_RANK)
        return wk_err(WK_ERR_SHAPE, "%s: ids %s: the output (ids dims..., k) would exceed rank %d",
                      name, wk_layout_str(si, sizeof si, li), WK_MAX_RANK);
    if ((st = check_q_size(name, WK_OP_QEMBEDDING, ids->dev, dt, w, qt, rows, k)))
        return st;
    const int64_t nids = wk_layout_elem_count(li);
    int64_t cnt;
    if (__builtin_mul_overflow(nids, k, &cnt))
        return wk_err(WK_ERR_OVERFLOW, "%s: the output element count overflows", name);
    wk_storage *o;
    if ((st = wk_storage_new(&o, ids->dev, dt, (size_t)cnt, name)))
        return st;
    /* called whenever there are ids, so every id is validated even when k = 0 */
    if (nids > 0 && (st = ids->dev->be->qembedding(ids->dev, qt, dt, o->data, ids->data, it, li,
                                                   w->data, rows, k))) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

/* ---- int8 activations (wick.h; docs/semantics.md "Int8 activations") */

int64_t wk_act_bytes(int64_t m, int64_t k)
{
    int64_t n, b;
    if (m < 0 || k < 0 || k % 32 != 0 || __builtin_mul_overflow(m, k, &n) ||
        __builtin_mul_overflow(n / 32, 8, &b) || __builtin_add_overflow(n, b, &b))
        return -1;
    return b;
}

/* The activations' size for m rows of k in op `name`: k a multiple of 32 (WK_ERR_SHAPE), no
 * overflow (WK_ERR_OVERFLOW). */
static wk_status act_size(int64_t *bytes, int64_t m, int64_t k, const char *name)
{
    if (k % 32 != 0)
        return wk_err(WK_ERR_SHAPE, "%s: %lld elements per row is not a multiple of 32", name,
                      (long long)k);
    if ((*bytes = wk_act_bytes(m, k)) < 0)
        return wk_err(WK_ERR_OVERFLOW, "%s: the activations of %lld x %lld elements overflow",
                      name, (long long)m, (long long)k);
    return WK_OK;
}

wk_status wk_quantize_act(wk_storage **out, const wk_storage *x, const wk_layout *lx)
{
    const char *name = "quantize_act";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *out = NULL;
    if ((st = wk_check_operand(x, lx, name, "x")))
        return st;
    char sx[256];
    if (lx->rank < 1)
        return wk_err(WK_ERR_SHAPE, "%s: want x (..., k) of rank >= 1, got %s", name,
                      wk_layout_str(sx, sizeof sx, lx));
    const int64_t k = lx->dims[lx->rank - 1];
    int64_t m = 1, bytes = 0;
    for (int32_t d = 0; d < lx->rank - 1; d++)
        m *= lx->dims[d]; /* no overflow: the layout's element count passed its checks */
    if ((st = act_size(&bytes, m, k, name)) || (st = wk_check_op(x->dev, WK_OP_QUANTIZE_ACT, x->dtype)))
        return st;
    const void *xp;
    wk_storage *tmp, *o;
    if ((st = contiguous(&xp, &tmp, x, lx, name)))
        return st;
    if ((st = wk_storage_new(&o, x->dev, WK_DTYPE_U8, (size_t)bytes, name))) {
        wk_storage_free(tmp);
        return st;
    }
    if (bytes > 0)
        st = x->dev->be->quantize_act(x->dev, x->dtype, o->data, xp, m, k);
    wk_storage_free(tmp);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}

wk_status wk_qmatmul_act(wk_storage **out, wk_dtype dt, const wk_storage *act, int64_t m,
                         const wk_storage *w, wk_qtype qt, int64_t n, int64_t k)
{
    const char *name = "qmatmul_act";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    *out = NULL;
    if (!act)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for act", name);
    if (!w)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL storage for w", name);
    if ((st = wk_check_same_device(act, w, name)))
        return st;
    if (act->dtype != WK_DTYPE_U8)
        return wk_err(WK_ERR_DTYPE, "%s: the activations must be a u8 storage, got %s", name,
                      wk_dtype_name(act->dtype));
    if ((st = check_q_kind(name, WK_OP_QMATMUL_ACT, dt, w, qt, n, k)))
        return st;
    if (m < 0)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: negative row count %lld", name, (long long)m);
    int64_t bytes = 0, cnt;
    if ((st = act_size(&bytes, m, k, name)))
        return st;
    if ((uint64_t)bytes > (uint64_t)act->len)
        return wk_err(WK_ERR_SHAPE, "%s: %lld x %lld activations need %lld bytes, the storage "
                      "holds %zu", name, (long long)m, (long long)k, (long long)bytes, act->len);
    if ((st = check_q_size(name, WK_OP_QMATMUL_ACT, act->dev, dt, w, qt, n, k)))
        return st;
    if (__builtin_mul_overflow(m, n, &cnt))
        return wk_err(WK_ERR_OVERFLOW, "%s: the output element count overflows", name);
    wk_storage *o;
    if ((st = wk_storage_new(&o, act->dev, dt, (size_t)cnt, name)))
        return st;
    if (cnt > 0 && k == 0) /* empty sums */
        st = act->dev->be->memset_zero(act->dev, o->data, (size_t)cnt * wk_dtype_size(dt));
    else if (cnt > 0)
        st = act->dev->be->qmatmul_act(act->dev, qt, dt, o->data, act->data, m, w->data, n, k);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}
