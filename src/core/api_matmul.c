/* api_matmul.c: front end of wk_matmul: a [..., m, k] @ b [..., k, n] -> [..., m, n].
 * Checks (docs/semantics.md "Matmul"): equal dtypes, rank >= 2 on both, equal ranks and batch
 * dims, a's k equal to b's k; then allocates the contiguous output and calls the backend. */
#include "api.h"

wk_status wk_matmul(wk_storage **out, const wk_storage *a, const wk_layout *la,
                    const wk_storage *b, const wk_layout *lb)
{
    const char *name = "matmul";
    wk_status st;
    if (!out)
        return wk_err(WK_ERR_INVALID_ARGUMENT, "%s: NULL output", name);
    if ((st = wk_check_pair(a, la, b, lb, name)))
        return st;
    char sa[256], sb[256];
    const int32_t r = la->rank;
    int ok = r >= 2 && lb->rank == r;
    for (int32_t k = 0; ok && k < r - 2; k++)
        ok = la->dims[k] == lb->dims[k];
    if (!ok)
        return wk_err(WK_ERR_SHAPE, "%s: want a [..., m, k] and b [..., k, n] of one rank >= 2 with "
                      "equal batch dims, got %s and %s", name, wk_layout_str(sa, sizeof sa, la),
                      wk_layout_str(sb, sizeof sb, lb));
    if (la->dims[r - 1] != lb->dims[r - 2])
        return wk_err(WK_ERR_SHAPE, "%s: inner dims differ (k = %lld vs %lld): %s @ %s", name,
                      (long long)la->dims[r - 1], (long long)lb->dims[r - 2],
                      wk_layout_str(sa, sizeof sa, la), wk_layout_str(sb, sizeof sb, lb));
    if ((st = wk_check_op(a->dev, WK_OP_MATMUL, a->dtype)))
        return st;
    /* count = batch * m * n; each factor is bounded by an operand's count, the product not */
    int64_t n = la->dims[r - 2];
    for (int32_t k = 0; k < r - 2; k++)
        if (__builtin_mul_overflow(n, la->dims[k], &n))
            return wk_err(WK_ERR_OVERFLOW, "%s: output element count overflows", name);
    if (__builtin_mul_overflow(n, lb->dims[r - 1], &n))
        return wk_err(WK_ERR_OVERFLOW, "%s: output element count overflows", name);
    wk_storage *o;
    if ((st = wk_storage_new(&o, a->dev, a->dtype, (size_t)n, name)))
        return st;
    if (n > 0)
        st = a->dev->be->matmul(a->dev, a->dtype, o->data, a->data, la, b->data, lb);
    if (st) {
        wk_storage_free(o);
        return st;
    }
    *out = o;
    return WK_OK;
}
