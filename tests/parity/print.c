/* print.c: the parity matrix as text: one line per op row, one column per dtype (ok, FAIL,
 * unsup, n/a), then the failure details, then one summary line. */
#include "parity.h"

static const char *cell(parity_status s)
{
    switch (s) {
    case PARITY_PASS: return "ok";
    case PARITY_FAIL: return "FAIL";
    case PARITY_UNSUPPORTED: return "unsup";
    default: return "n/a";
    }
}

void parity_print(FILE *f, const parity_report *rep, int verbose)
{
    fprintf(f, "parity matrix: %s\n", rep->device);
    fprintf(f, "%-17s", "op");
    for (int d = 0; d < WK_DTYPE_COUNT; d++)
        fprintf(f, " %-6s", wk_dtype_name((wk_dtype)d));
    fprintf(f, "\n");
    for (int i = 0; i < rep->nrows; i += WK_DTYPE_COUNT) {
        fprintf(f, "%-17s", rep->rows[i].name);
        for (int d = 0; d < WK_DTYPE_COUNT && i + d < rep->nrows; d++)
            fprintf(f, " %-6s", cell(rep->rows[i + d].status));
        fprintf(f, "\n");
    }
    if (verbose) {
        fprintf(f, "\ndetails (cases, worst NMSE against its bound; bound 0 = exact):\n");
        for (int i = 0; i < rep->nrows; i++) {
            const parity_row *r = &rep->rows[i];
            fprintf(f, "  %-17s %-7s %-5s %4d cases", r->name, wk_dtype_name(r->dtype),
                    cell(r->status), r->ncases);
            if (r->status == PARITY_PASS || r->status == PARITY_FAIL)
                fprintf(f, "  nmse %.3g / %.3g", r->worst_nmse, r->bound);
            if (r->status == PARITY_UNSUPPORTED)
                fprintf(f, "  (defined, not implemented on this device; fails with WK_ERR_NOT_SUPPORTED)");
            fprintf(f, "\n");
        }
    }
    if (rep->nfail) {
        fprintf(f, "\nfailures:\n");
        for (int i = 0; i < rep->nrows; i++) {
            const parity_row *r = &rep->rows[i];
            if (r->status == PARITY_FAIL)
                fprintf(f, "  FAIL %s %s (%d of %d cases): %s\n", r->name, wk_dtype_name(r->dtype),
                        r->nfailed, r->ncases, r->msg);
        }
    }
    fprintf(f, "\nsummary: %d ok, %d FAIL, %d unsupported, %d n/a (%d op x dtype pairs, %d cases, "
               "%.1f s)\n",
            rep->npass, rep->nfail, rep->nunsupported, rep->nna, rep->nrows, rep->ncases,
            rep->seconds);
}
