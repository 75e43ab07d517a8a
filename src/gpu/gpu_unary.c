/* gpu_unary.c: the GPU unary ops (exp .. sigmoid), affine, powf and elu: picks a kernel of
 * kernels/unary.cu and launches it. Contiguous f32/f16/bf16 inputs take the vectorised kernel
 * of their (op, dtype); everything else the kernel of its compute class (f32 class, f64,
 * integers) with the collapsed layout, the op and the dtype as arguments. */
#include "gpu_ops.h"
#include <stdio.h>

static bool unary_hot(wk_dtype dt)
{
    return dt == WK_DTYPE_F32 || dt == WK_DTYPE_F16 || dt == WK_DTYPE_BF16;
}

/* out (contiguous, elem_count(lx) elements of dt) = op(x). */
wk_status wk_gpu_unary(wk_device *dev, wk_op op, wk_dtype dt, const wk_unary_params *p, void *out,
                       const void *x, const wk_layout *lx)
{
    int64_t n = wk_layout_elem_count(lx);
    if (n == 0)
        return WK_OK;
    const size_t esz = wk_dtype_size(dt);
    double p0 = p ? p->p0 : 0.0, p1 = p ? p->p1 : 0.0;
    const void *xp = wk_gpu_at(x, lx->offset, esz);
    char name[64];

    if (unary_hot(dt) && wk_layout_is_contiguous(lx)) {
        snprintf(name, sizeof name, "unary_%s_%s", wk_gpu_op_kname(op), wk_gpu_dtype_kname(dt));
        void *args[] = {&p0, &p1, &n, &xp, &out};
        const int64_t vec = (int64_t)(16 / esz); /* elements per thread and step */
        return wk_gpu_run(dev, "unary", name, wk_gpu_blocks(dev, (n + vec - 1) / vec), 1, 1,
                          args);
    }

    wk_klay1 k;
    wk_layout col;
    wk_gpu_klay1(&k, &col, lx);
    int iop = (int)op, idt = (int)dt;
    const char *kname = dt == WK_DTYPE_F64 ? "unary_f64" : wk_dtype_is_int(dt) ? "unary_int"
                                                                               : "unary_float";
    void *args[] = {&iop, &idt, &p0, &p1, &n, &k, &xp, &out};
    return wk_gpu_run(dev, "unary", kname, wk_gpu_blocks(dev, n), 1, 1, args);
}
