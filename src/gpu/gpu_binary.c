/* gpu_binary.c: the GPU binary ops (add sub mul div maximum minimum, the gated swiglu geglu
 * geglu_erf) and comparisons (eq ne lt le gt ge, u8 out): picks a kernel of kernels/binary.cu and launches it. Arithmetic on two
 * contiguous f32/f16/bf16 inputs takes the vectorised kernel of its (op, dtype), and with the
 * inner dim contiguous in both (row broadcasts) its vectorised by-rows kernel; everything else
 * (other strides, comparisons, other dtypes) the kernel of its compute class with the jointly
 * collapsed layouts. */
#include "gpu_ops.h"
#include <stdio.h>

static bool binary_hot(wk_op op, wk_dtype dt)
{
    return op >= WK_OP_ADD && op <= WK_OP_GEGLU_ERF &&
           (dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16);
}

/* out (contiguous, elem_count(la) elements; dtype dt, or u8 for a comparison) = a op b. */
wk_status wk_gpu_binary(wk_device *dev, wk_op op, wk_dtype dt, void *out, const void *a,
                        const wk_layout *la, const void *b, const wk_layout *lb)
{
    int64_t n = wk_layout_elem_count(la);
    if (n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    const void *ap = wk_gpu_at(a, la->offset, esz), *bp = wk_gpu_at(b, lb->offset, esz);

    if (binary_hot(op, dt) && wk_layout_is_contiguous(la) && wk_layout_is_contiguous(lb)) {
        /* the hot path of small ops: the kernel by slot (no name, no lock after the first) */
        const unsigned slot = WK_GPU_SLOT_BINARY + (unsigned)(op - WK_OP_ADD) * 3u +
                              (dt == WK_DTYPE_F32 ? 0u : dt == WK_DTYPE_F16 ? 1u : 2u);
        wk_gpu_fn fn = wk_gpu_fn_slot(dev, slot);
        if (!fn) {
            char name[64];
            snprintf(name, sizeof name, "binary_%s_%s", wk_gpu_op_kname(op),
                     wk_gpu_dtype_kname(dt));
            wk_status st = wk_gpu_function(&fn, dev, "binary", name);
            if (st != WK_OK)
                return st;
            wk_gpu_fn_slot_set(dev, slot, fn);
        }
        void *args[] = {&n, &ap, &bp, &out};
        const int64_t vec = (int64_t)(16 / esz);
        return wk_gpu_launch_ex(dev, fn, wk_gpu_blocks(dev, (n + vec - 1) / vec), 1, 1,
                                WK_GPU_BLOCK, 1, 1, 0, args, WK_LAUNCH_EARLY); /* it waits */
    }

    wk_klay2 k;
    wk_layout col[2];
    wk_gpu_klay2(&k, col, la, lb);
    const int r = col[0].rank;
    if (binary_hot(op, dt) && r >= 1 && col[0].strides[r - 1] == 1 && col[1].strides[r - 1] == 1) {
        /* inner dim contiguous in both (a row broadcast, ...): by rows, vectorised */
        char name[64];
        snprintf(name, sizeof name, "binary_rows_%s_%s", wk_gpu_op_kname(op),
                 wk_gpu_dtype_kname(dt));
        void *args[] = {&n, &k, &ap, &bp, &out};
        const int64_t vec = (int64_t)(16 / esz);
        return wk_gpu_run(dev, "binary", name, wk_gpu_blocks(dev, (n + vec - 1) / vec), 1, 1,
                          args);
    }
    int iop = (int)op, idt = (int)dt;
    const char *kname = dt == WK_DTYPE_F64 ? "binary_f64" : wk_dtype_is_int(dt) ? "binary_int"
                                                                                : "binary_float";
    void *args[] = {&iop, &idt, &n, &k, &ap, &bp, &out};
    return wk_gpu_run(dev, "binary", kname, wk_gpu_blocks(dev, n), 1, 1, args);
}

/* act (wick.h's layout) = the int8 activations of a op b (wk_binary_act): kernels/binary.cu's
 * binary_act on the jointly collapsed layouts, launched early (it waits for the work before
 * it). */
wk_status wk_gpu_binary_act(wk_device *dev, wk_op op, wk_dtype dt, void *act, const void *a,
                            const wk_layout *la, const void *b, const wk_layout *lb)
{
    int64_t n = wk_layout_elem_count(la);
    if (n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    const void *ap = wk_gpu_at(a, la->offset, esz), *bp = wk_gpu_at(b, lb->offset, esz);
    wk_klay2 k;
    wk_layout col[2];
    wk_gpu_klay2(&k, col, la, lb);
    int iop = (int)op, idt = (int)dt;
    wk_gpu_act_written(dev, act, (size_t)(n + n / 32 * 8));
    const int r = col[0].rank;
    if (r <= 2 && (r == 0 || (col[0].strides[r - 1] == 1 && col[1].strides[r - 1] == 1))) {
        /* rows of kk contiguous elements in both (kk a multiple of the last dim, so of 32) */
        int64_t kk = r == 0 ? n : col[0].dims[r - 1];
        int64_t ars = r == 2 ? col[0].strides[0] : 0, brs = r == 2 ? col[1].strides[0] : 0;
        int vec = dt == WK_DTYPE_F32 && ((uintptr_t)ap | (uintptr_t)bp) % 16 == 0 &&
                  ars % 4 == 0 && brs % 4 == 0;
        void *args[] = {&iop, &idt, &n, &kk, &ap, &ars, &bp, &brs, &vec, &act};
        return wk_gpu_run_early(dev, "binary", "binary_act_rows", wk_gpu_blocks(dev, n / 4), 1,
                                1, args);
    }
    void *args[] = {&iop, &idt, &n, &k, &ap, &bp, &act};
    return wk_gpu_run_early(dev, "binary", "binary_act", wk_gpu_blocks(dev, n / 4), 1, 1, args);
}
