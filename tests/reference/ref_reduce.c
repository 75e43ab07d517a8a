/* ref_reduce.c: reference of sum, min, max, argmin, argmax over a set of dims (keepdim output).
 * Float sums accumulate in f64 and round once; integer sums wrap. min/max propagate NaN; argmin/
 * argmax return the first NaN if any, else the first extreme (row-major index over the reduced
 * dims in ascending dim order). An empty extent: sum = 0, the others WK_ERR_SHAPE. */
#include "ref.h"
#include <math.h>

wk_status ref_reduce(void *out, wk_op op, wk_dtype dt, const void *x, const wk_layout *lx,
                     const int32_t *dims, int32_t ndims)
{
    int reduced[WK_MAX_RANK] = {0};
    for (int32_t k = 0; k < ndims; k++) {
        if (dims[k] < 0 || dims[k] >= lx->rank)
            return WK_ERR_INDEX_OUT_OF_RANGE;
        if (reduced[dims[k]])
            return WK_ERR_INVALID_ARGUMENT;
        reduced[dims[k]] = 1;
    }
    /* out_dims: kept dims (reduced ones are 1); red_dims: the reduced extents (others 1). */
    int64_t out_dims[WK_MAX_RANK], red_dims[WK_MAX_RANK];
    int64_t n_out = 1, n_red = 1;
    for (int k = 0; k < lx->rank; k++) {
        out_dims[k] = reduced[k] ? 1 : lx->dims[k];
        red_dims[k] = reduced[k] ? lx->dims[k] : 1;
        n_out *= out_dims[k];
        n_red *= red_dims[k];
    }
    if (n_red == 0 && op != WK_OP_SUM)
        return WK_ERR_SHAPE;
    int is_arg = op == WK_OP_ARGMIN || op == WK_OP_ARGMAX;
    int want_min = op == WK_OP_MIN || op == WK_OP_ARGMIN;

    for (int64_t o = 0; o < n_out; o++) {
        /* the multi-index of output o */
        int64_t oidx[WK_MAX_RANK];
        int64_t rest = o;
        for (int k = lx->rank - 1; k >= 0; k--) {
            oidx[k] = rest % out_dims[k];
            rest /= out_dims[k];
        }
        double fsum = 0, fbest = 0;
        uint64_t isum = 0;
        int64_t ibest = 0, best_j = 0;
        int have_nan = 0;
        for (int64_t j = 0; j < n_red; j++) {
            /* input offset of output index o combined with reduced index j (row-major) */
            int64_t off = lx->offset, r = j;
            for (int k = lx->rank - 1; k >= 0; k--) {
                int64_t idx = reduced[k] ? r % red_dims[k] : oidx[k];
                if (reduced[k])
                    r /= red_dims[k];
                off += idx * lx->strides[k];
            }
            if (ref_is_float(dt)) {
                double v = ref_load_f(dt, x, off);
                if (op == WK_OP_SUM) {
                    fsum += v;
                } else if (!have_nan) {
                    if (isnan(v)) {
                        have_nan = 1;
                        fbest = v;
                        best_j = j;
                    } else if (j == 0 || (want_min ? v < fbest : v > fbest)) {
                        fbest = v;
                        best_j = j;
                    }
                }
            } else {
                int64_t v = ref_load_i(dt, x, off);
                if (op == WK_OP_SUM) {
                    isum += (uint64_t)v;
                } else if (j == 0 || (want_min ? v < ibest : v > ibest)) {
                    ibest = v;
                    best_j = j;
                }
            }
        }
        if (is_arg)
            ref_store_i(WK_DTYPE_U32, out, o, best_j);
        else if (ref_is_float(dt))
            ref_store_f(dt, out, o, op == WK_OP_SUM ? fsum : fbest);
        else
            ref_store_i(dt, out, o, op == WK_OP_SUM ? ref_wrap(dt, isum) : ibest);
    }
    return WK_OK;
}
