/* layouts.c: the layout families of the parity matrix (docs/parity.md): the logical dims of a
 * case, and a layout of each family over a storage built for it. Layouts are filled in by hand
 * (not with wk_layout_*), so the harness does not depend on the code it checks. */
#include "parity_impl.h"
#include <stdio.h>

static const char *const family_names[PF_COUNT + 1] = {
    "contiguous", "strided", "transposed", "broadcast", "offset", "empty",
    "rank0", "rank1", "rank2", "rank3", "rank4", "rank5", "rank6", "large", "large-transposed",
    "adversarial",
};

const char *pt_family_name(int fam)
{
    return fam >= 0 && fam <= PF_ADVERSARIAL ? family_names[fam] : "?";
}

void pt_family_dims(int32_t *rank, int64_t dims[WK_MAX_RANK], int fam, pt_rng *r)
{
    switch (fam) {
    case PF_OFFSET:
        *rank = 2;
        dims[0] = pt_rng_range(r, 10, 40);
        dims[1] = pt_rng_range(r, 10, 60);
        return;
    case PF_EMPTY:
        *rank = 3;
        dims[0] = pt_rng_range(r, 1, 5);
        dims[1] = pt_rng_range(r, 1, 6);
        dims[2] = pt_rng_range(r, 1, 7);
        dims[pt_rng_range(r, 0, 2)] = 0;
        return;
    case PF_LARGE:
    case PF_LARGE_T: /* > 32768 elements: the CPU's parallel threshold */
        *rank = 2;
        dims[0] = pt_rng_range(r, 190, 230);
        dims[1] = pt_rng_range(r, 180, 220);
        return;
    default:
        break;
    }
    if (fam >= PF_RANK0 && fam <= PF_RANK6) {
        static const int64_t base[7] = {0, 600, 25, 8, 5, 4, 3}; /* ~600 elements */
        *rank = fam - PF_RANK0;
        for (int k = 0; k < *rank; k++)
            dims[k] = *rank == 1 ? pt_rng_range(r, 300, 900) : base[*rank] + pt_rng_range(r, -1, 1);
        return;
    }
    *rank = 3; /* contiguous, strided, transposed, broadcast: 105 .. 2688 elements */
    dims[0] = pt_rng_range(r, 3, 8);
    dims[1] = pt_rng_range(r, 5, 14);
    dims[2] = pt_rng_range(r, 7, 24);
}

/* Row-major strides of dims; returns the element count. */
static int64_t rowmajor(int64_t *strides, int32_t rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int k = rank - 1; k >= 0; k--) {
        strides[k] = n;
        n *= dims[k];
    }
    return n;
}

void pt_layout_for(wk_layout *l, size_t *len, int fam, int32_t rank, const int64_t *dims,
                   pt_rng *r)
{
    *l = (wk_layout){.rank = rank};
    for (int k = 0; k < rank; k++)
        l->dims[k] = dims[k];
    int64_t n = rowmajor(l->strides, rank, dims);

    if (fam == PF_OFFSET || fam == PF_RANK0) {
        l->offset = fam == PF_OFFSET ? pt_rng_range(r, 1, 13) : pt_rng_range(r, 0, 2);
        *len = (size_t)(n + l->offset + pt_rng_range(r, 0, 3));
    } else if ((fam == PF_TRANSPOSED || fam == PF_LARGE_T) && rank >= 2) {
        /* storage dims are the reversed dims, contiguous; read back in the original order */
        int64_t sdims[WK_MAX_RANK], sstr[WK_MAX_RANK];
        for (int k = 0; k < rank; k++)
            sdims[k] = dims[rank - 1 - k];
        rowmajor(sstr, rank, sdims);
        for (int k = 0; k < rank; k++)
            l->strides[k] = sstr[rank - 1 - k];
        *len = (size_t)n;
    } else if (fam == PF_BROADCAST && rank >= 1) {
        int bc[WK_MAX_RANK] = {0}, any = 0;
        for (int k = 0; k < rank; k++) {
            bc[k] = pt_rng_unif(r) < 0.5;
            any |= bc[k];
        }
        if (!any)
            bc[pt_rng_range(r, 0, rank - 1)] = 1;
        int64_t m = 1; /* the storage holds the non-broadcast dims, contiguous */
        for (int k = rank - 1; k >= 0; k--) {
            l->strides[k] = bc[k] ? 0 : m;
            m *= bc[k] ? 1 : dims[k];
        }
        *len = (size_t)m;
    } else if (fam == PF_STRIDED || (fam >= PF_RANK1 && fam <= PF_RANK6)) {
        /* a narrowed view [start, start + dim) of a buffer with padded dims */
        int64_t pdims[WK_MAX_RANK], pstr[WK_MAX_RANK];
        for (int k = 0; k < rank; k++) {
            int64_t pad = fam == PF_STRIDED ? pt_rng_range(r, k == rank - 1 ? 1 : 0, 2)
                                            : pt_rng_range(r, 0, 1);
            pdims[k] = dims[k] + pad;
        }
        int64_t pn = rowmajor(pstr, rank, pdims);
        l->offset = 0;
        for (int k = 0; k < rank; k++) {
            l->strides[k] = pstr[k];
            l->offset += pt_rng_range(r, 0, pdims[k] - dims[k]) * pstr[k];
        }
        *len = (size_t)pn;
    } else {
        *len = (size_t)n; /* contiguous, empty, large */
    }
}

const char *pt_layout_str(char *buf, size_t cap, const wk_layout *l)
{
    size_t used = 0;
    used += (size_t)snprintf(buf + used, cap - used, "[");
    for (int k = 0; k < l->rank && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", k ? "," : "", (long long)l->dims[k]);
    if (used < cap)
        used += (size_t)snprintf(buf + used, cap - used, "]/[");
    for (int k = 0; k < l->rank && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", k ? "," : "", (long long)l->strides[k]);
    if (used < cap)
        snprintf(buf + used, cap - used, "]+%lld", (long long)l->offset);
    return buf;
}
