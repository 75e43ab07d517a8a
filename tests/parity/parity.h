/* parity.h: the parity harness. Runs every op x dtype x layout family on a device through the
 * public API and compares with the float64 reference (tests/reference/ref.h). Used by
 * `wick check` (tools/wick.c) and tests/test_parity.c. Metric, bounds and families:
 * docs/parity.md. */
#ifndef WK_PARITY_H
#define WK_PARITY_H

#include "wick.h"
#include <stdio.h>

typedef enum parity_status {
    PARITY_PASS = 0,
    PARITY_FAIL = 1,
    PARITY_UNSUPPORTED = 2, /* defined by the semantics, not implemented by the device */
    PARITY_NA = 3           /* not defined by the semantics for this dtype */
} parity_status;

#define PARITY_MSG_CAP 640

/* One (op row, dtype) cell of the matrix. */
typedef struct parity_row {
    const char *name;     /* row name: "exp", "to_f16", ... (static) */
    wk_op op;
    wk_dtype dtype;       /* the op's data operand (the source dtype of to_* rows) */
    parity_status status;
    int ncases;           /* cases run (sub-cases included) */
    int nfailed;          /* cases that failed */
    double worst_nmse;    /* the largest NMSE seen over finite values (0 for exact rows) */
    double bound;         /* the NMSE bound that applied (0: exact) */
    char msg[PARITY_MSG_CAP]; /* first failure: op, dtype, family, seed, what differed */
} parity_row;

typedef struct parity_report {
    parity_row *rows; /* row-major: for each op row matched, WK_DTYPE_COUNT dtypes */
    int nrows;
    int cap;
    int npass, nfail, nunsupported, nna;
    int ncases;
    double seconds;
    char device[192];
} parity_report;

/* rep: the parity matrix of dev for the op rows whose name (or wk_op_name) matches filter
 * (NULL or "" = all; a comma-separated list of names is accepted). Returns WK_OK when the run
 * itself worked (failures are in rep), WK_ERR_INVALID_ARGUMENT if filter matches no row,
 * WK_ERR_OUT_OF_MEMORY. Free rep with parity_report_free. */
wk_status parity_run(parity_report *rep, wk_device *dev, const char *filter);
void parity_report_free(parity_report *rep);

/* Writes the matrix (one line per op row, one column per dtype: ok FAIL unsup n/a), then the
 * failure details, then one summary line. verbose adds a line per (row, dtype) with its case
 * count and worst NMSE against the bound, and lists unsupported pairs. */
void parity_print(FILE *f, const parity_report *rep, int verbose);

/* The op rows, in matrix order: how many, and the name of row i (static; NULL out of range). */
int parity_row_count(void);
const char *parity_row_name(int i);

#endif
