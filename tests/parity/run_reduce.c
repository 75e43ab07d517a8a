/* run_reduce.c: runner of the reduction rows (sum min max argmin argmax). Each family reduces its
 * input over a few dim sets: one dim, several, all, none (a copy), and over an empty extent (sum
 * gives 0; the others must fail with WK_ERR_SHAPE). */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>

#define MAX_SETS 3

typedef struct dimset {
    int32_t n;
    int32_t d[WK_MAX_RANK];
} dimset;

static dimset set1(int32_t a) { return (dimset){1, {a}}; }
static dimset set2(int32_t a, int32_t b) { return (dimset){2, {a, b}}; }
static dimset set_all(int32_t rank)
{
    dimset s = {rank, {0}};
    for (int32_t k = 0; k < rank; k++)
        s.d[k] = k;
    return s;
}

/* The dim sets of a family for an input of the given dims. */
static int family_sets(dimset *s, int fam, int32_t rank, const int64_t *dims)
{
    switch (fam) {
    case PF_CONTIG: s[0] = set1(rank - 1); s[1] = (dimset){0, {0}}; return 2;
    case PF_STRIDED: s[0] = set1(0); s[1] = set_all(rank); return 2;
    case PF_TRANSPOSED: s[0] = set1(1); s[1] = set2(2, 0); return 2; /* unsorted on purpose */
    case PF_BROADCAST: s[0] = set1(0); s[1] = set1(2); s[2] = set2(0, 1); return 3;
    case PF_OFFSET: s[0] = set1(0); s[1] = set1(1); return 2;
    case PF_EMPTY: {
        int32_t z = 0;
        while (z < rank - 1 && dims[z] != 0)
            z++;
        s[0] = set1(z);             /* the empty extent */
        s[1] = set1((z + 1) % rank); /* an empty output */
        return 2;
    }
    case PF_RANK0: s[0] = (dimset){0, {0}}; return 1;
    case PF_LARGE: s[0] = set1(1); s[1] = set_all(rank); return 2;
    case PF_LARGE_T: s[0] = set1(0); return 1;
    default: { /* rank1 .. rank6: every other dim, and the last */
        dimset a = {0, {0}};
        for (int32_t k = 0; k < rank; k += 2)
            a.d[a.n++] = k;
        s[0] = a;
        s[1] = set1(rank - 1);
        return 2;
    }
    }
}

void pt_run_reduce(pt_ctx *c, pt_rng *r)
{
    wk_op op = c->row->op;
    int is_arg = op == WK_OP_ARGMIN || op == WK_OP_ARGMAX;
    wk_dtype odt = is_arg ? WK_DTYPE_U32 : c->dt;
    int32_t rank;
    int64_t dims[WK_MAX_RANK];
    pt_family_dims(&rank, dims, c->fam, r);
    dimset sets[MAX_SETS];
    int ns = family_sets(sets, c->fam, rank, dims);
    pt_tensor x = {0};
    int specials = c->row->specials && (c->fam & 1);
    for (int k = 0; k < ns; k++) {
        wk_storage *out = NULL;
        void *want = NULL;
        pt_case_begin(c);
        if (!x.s && !pt_tensor_make(c, &x, c->dt, rank, dims, r, c->row->domain, specials))
            break;
        /* keepdim output count */
        int64_t n = 1;
        for (int32_t d = 0; d < rank; d++) {
            int red = 0;
            for (int32_t j = 0; j < sets[k].n; j++)
                red |= sets[k].d[j] == d;
            n *= red ? 1 : dims[d];
        }
        char lx[128], ds[48] = "";
        size_t used = 0;
        for (int32_t j = 0; j < sets[k].n; j++)
            used += (size_t)snprintf(ds + used, sizeof ds - used, "%s%d", j ? "," : "", sets[k].d[j]);
        snprintf(c->sub, sizeof c->sub, "dims {%s} x=%s", ds, pt_layout_str(lx, sizeof lx, &x.l));
        wk_status st = wk_reduce(&out, op, x.s, &x.l, sets[k].d, sets[k].n);
        want = pt_alloc(c, (size_t)n * ref_dtype_size(odt));
        if (want) {
            wk_status rst = c->probing ? WK_OK
                                       : ref_reduce(want, op, c->dt, x.host, &x.l, sets[k].d, sets[k].n);
            if (pt_check_status(c, st, rst, wk_op_name(op)) && st == WK_OK && !c->probing)
                pt_check_output(c, out, odt, want, n, c->row->tol);
            pt_tensor_unchanged(c, &x, "x");
        }
        free(want);
        wk_storage_free(out);
    }
    pt_tensor_free(&x);
}
