/* ref_matmul.c: reference matmul: out [..., m, n] = a [..., m, k] @ b [..., k, n], every
 * product summed in f64 in k order, rounded once to the dtype. Batch dims (equal in a and b,
 * any strides) are walked by their multi-index. */
#include "ref.h"

/* Offset (elements) of element (batch i, row, col) of l: batch i row-major over dims[0..r-2). */
static int64_t mm_offset(const wk_layout *l, int64_t i, int64_t row, int64_t col)
{
    int64_t off = l->offset + row * l->strides[l->rank - 2] + col * l->strides[l->rank - 1];
    for (int k = l->rank - 3; k >= 0; k--) {
        off += (i % l->dims[k]) * l->strides[k];
        i /= l->dims[k];
    }
    return off;
}

wk_status ref_matmul(void *out, wk_dtype dt, const void *a, const wk_layout *la, const void *b,
                     const wk_layout *lb)
{
    if (!ref_op_defined(WK_OP_MATMUL, dt))
        return WK_ERR_DTYPE;
    const int r = la->rank;
    if (r < 2 || lb->rank != r)
        return WK_ERR_SHAPE;
    int64_t nb = 1;
    for (int k = 0; k < r - 2; k++) {
        if (la->dims[k] != lb->dims[k])
            return WK_ERR_SHAPE;
        nb *= la->dims[k];
    }
    const int64_t m = la->dims[r - 2], kk = la->dims[r - 1], n = lb->dims[r - 1];
    if (lb->dims[r - 2] != kk)
        return WK_ERR_SHAPE;
    for (int64_t i = 0; i < nb; i++)
        for (int64_t row = 0; row < m; row++)
            for (int64_t col = 0; col < n; col++) {
                double s = 0;
                for (int64_t j = 0; j < kk; j++)
                    s += ref_load_f(dt, a, mm_offset(la, i, row, j)) *
                         ref_load_f(dt, b, mm_offset(lb, i, j, col));
                ref_store_f(dt, out, (i * m + row) * n + col, s);
            }
    return WK_OK;
}
