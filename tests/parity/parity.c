/* parity.c: the driver of the parity matrix: for every matched op row and every dtype, checks
 * that wk_op_defined agrees with the semantics, probes n/a and unsupported pairs (their calls
 * must fail with WK_ERR_DTYPE / WK_ERR_NOT_SUPPORTED), and otherwise runs every layout family
 * with its own fixed seed. */
#include "parity_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const pt_runner runners[PK_COUNT] = {
    [PK_UNARY] = pt_run_unary,
    [PK_BINARY] = pt_run_binary,
    [PK_WHERE] = pt_run_where,
    [PK_CAST] = pt_run_cast,
    [PK_CONST_SET] = pt_run_const_set,
    [PK_REDUCE] = pt_run_reduce,
    [PK_COPY_STRIDED] = pt_run_copy_strided,
    [PK_COPY2D] = pt_run_copy2d,
    [PK_MATMUL] = pt_run_matmul,
    [PK_CONV] = pt_run_conv,
    /* @marker:linalg */
    [PK_POOL] = pt_run_pool,
    [PK_UPSAMPLE] = pt_run_upsample,
    /* @marker:image */
    [PK_INDEX] = pt_run_index,
    /* @marker:index */
    [PK_SOFTMAX] = pt_run_softmax,
    [PK_NORM] = pt_run_norm,
    [PK_ROPE] = pt_run_rope,
    [PK_ARG_SORT] = pt_run_arg_sort,
    [PK_ADD_NORM] = pt_run_add_norm,
    /* @marker:fused */
    [PK_QUANT] = pt_run_quant,
    [PK_ATTN] = pt_run_attn,
    [PK_ROPE_KV] = pt_run_rope_kv,
};

#define PARITY_BASE_SEED 0x77696b6bULL /* "wikk": change it and every case changes */

/* 1 if the row's name or its op's name is one of the comma-separated names in filter. */
static int row_matches(const pt_row *row, const char *filter)
{
    if (!filter || !filter[0])
        return 1;
    const char *p = filter;
    while (*p) {
        size_t len = strcspn(p, ",");
        if ((strlen(row->name) == len && strncmp(row->name, p, len) == 0) ||
            (strlen(wk_op_name(row->op)) == len && strncmp(wk_op_name(row->op), p, len) == 0))
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

static void run_family(pt_ctx *c, int fam)
{
    pt_rng r;
    c->fam = fam;
    c->seed = pt_mix(PARITY_BASE_SEED ^ pt_hash(c->row->name) ^ ((uint64_t)c->dt << 40) ^
                     ((uint64_t)fam << 48));
    c->sub[0] = 0;
    pt_rng_seed(&r, c->seed);
    runners[c->row->kind](c, &r);
}

static void run_cell(parity_row *pr, wk_device *dev, const pt_row *row, wk_dtype dt)
{
    *pr = (parity_row){.name = row->name, .op = row->op, .dtype = dt, .status = PARITY_PASS};
    pt_ctx c = {.dev = dev, .row = row, .dt = dt, .out = pr};
    int def = ref_op_defined(row->op, dt);
    int lib_def = wk_op_defined(row->op, dt);
    if (def != lib_def) {
        pt_case_begin(&c);
        pt_fail(&c, "wk_op_defined() says %d, docs/semantics.md says %d", lib_def, def);
        return;
    }
    /* quantized rows: supported per block type too */
    const int sup = row->kind == PK_QUANT ? wk_device_supports_quant(dev, row->op, pt_row_qtype(row), dt)
                                          : wk_device_supports(dev, row->op, dt);
    if (!def || !sup) {
        /* not run: check that a call fails as the semantics say */
        c.probing = 1;
        c.expect = def ? WK_ERR_NOT_SUPPORTED : WK_ERR_DTYPE;
        run_family(&c, PF_CONTIG);
        if (pr->status != PARITY_FAIL)
            pr->status = def ? PARITY_UNSUPPORTED : PARITY_NA;
        return;
    }
    for (int fam = 0; fam < PF_COUNT; fam++)
        run_family(&c, fam);
    if (pt_has_adversarial(row, dt)) {
        c.fam = PF_ADVERSARIAL;
        pt_run_adversarial(&c);
    }
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

wk_status parity_run(parity_report *rep, wk_device *dev, const char *filter)
{
    memset(rep, 0, sizeof *rep);
    if (!dev)
        return WK_ERR_INVALID_ARGUMENT;
    snprintf(rep->device, sizeof rep->device, "%s", wk_device_name(dev));
    int matched = 0;
    for (int i = 0; i < pt_nrows; i++)
        matched += row_matches(&pt_rows[i], filter);
    if (!matched)
        return WK_ERR_INVALID_ARGUMENT;
    rep->cap = matched * WK_DTYPE_COUNT;
    rep->rows = calloc((size_t)rep->cap, sizeof *rep->rows);
    if (!rep->rows)
        return WK_ERR_OUT_OF_MEMORY;
    double t0 = now_seconds();
    for (int i = 0; i < pt_nrows; i++) {
        if (!row_matches(&pt_rows[i], filter))
            continue;
        for (int d = 0; d < WK_DTYPE_COUNT; d++) {
            parity_row *pr = &rep->rows[rep->nrows++];
            run_cell(pr, dev, &pt_rows[i], (wk_dtype)d);
            rep->ncases += pr->ncases;
            switch (pr->status) {
            case PARITY_PASS: rep->npass++; break;
            case PARITY_FAIL: rep->nfail++; break;
            case PARITY_UNSUPPORTED: rep->nunsupported++; break;
            case PARITY_NA: rep->nna++; break;
            }
        }
    }
    rep->seconds = now_seconds() - t0;
    return WK_OK;
}

void parity_report_free(parity_report *rep)
{
    free(rep->rows);
    memset(rep, 0, sizeof *rep);
}

int parity_row_count(void) { return pt_nrows; }

const char *parity_row_name(int i) { return i >= 0 && i < pt_nrows ? pt_rows[i].name : NULL; }
