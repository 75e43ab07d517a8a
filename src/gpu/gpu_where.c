/* gpu_where.c: the GPU where_cond, out = cond != 0 ? t : f, through kernels/where.cu. Values
 * move as raw bits: the kernel is chosen by the condition's size (u8, u32, i64) and the value
 * size; all-contiguous operands take the vectorised kernel, others the strided one. */
#include "gpu_ops.h"
#include <stdio.h>

/* out (contiguous, elem_count(lc) elements of dt) = c != 0 ? t : f. */
wk_status wk_gpu_where_cond(wk_device *dev, wk_dtype cdt, wk_dtype dt, void *out, const void *c,
                            const wk_layout *lc, const void *t, const wk_layout *lt, const void *f,
                            const wk_layout *lf)
{
    int64_t n = wk_layout_elem_count(lc);
    if (n == 0)
        return WK_OK;
    const size_t csz = wk_dtype_size(cdt), vsz = wk_dtype_size(dt);
    if (!(cdt == WK_DTYPE_U8 || cdt == WK_DTYPE_U32 || cdt == WK_DTYPE_I64))
        return wk_err(WK_ERR_DTYPE, "gpu where_cond: condition dtype %s is not u8, u32 or i64",
                      wk_dtype_name(cdt));
    const void *cp = wk_gpu_at(c, lc->offset, csz);
    const void *tp = wk_gpu_at(t, lt->offset, vsz), *fp = wk_gpu_at(f, lf->offset, vsz);
    char name[64];

    if (wk_layout_is_contiguous(lc) && wk_layout_is_contiguous(lt) &&
        wk_layout_is_contiguous(lf)) {
        snprintf(name, sizeof name, "where_c%zu_v%zu", csz, vsz);
        void *args[] = {&n, &cp, &tp, &fp, &out};
        const int64_t vec = (int64_t)(16 / (csz > vsz ? csz : vsz));
        return wk_gpu_run(dev, "where", name, wk_gpu_blocks(dev, (n + vec - 1) / vec), 1, 1,
                          args);
    }

    wk_klay3 k;
    wk_layout col[3];
    wk_gpu_klay3(&k, col, lc, lt, lf);
    snprintf(name, sizeof name, "where_s_c%zu_v%zu", csz, vsz);
    void *args[] = {&n, &k, &cp, &tp, &fp, &out};
    return wk_gpu_run(dev, "where", name, wk_gpu_blocks(dev, n), 1, 1, args);
}
