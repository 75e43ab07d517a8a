/* parity_impl.h: internals of the parity harness shared by its files: the PRNG, input domains,
 * layout families, the op-row table, tolerances, comparison, and the per-case context. */
#ifndef WK_PARITY_IMPL_H
#define WK_PARITY_IMPL_H

#include "parity.h"
#include "ref.h"
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- rng.c: xorshift64*, seeded */
typedef struct pt_rng {
    uint64_t s;
} pt_rng;
void pt_rng_seed(pt_rng *r, uint64_t seed);
uint64_t pt_rng_next(pt_rng *r);
double pt_rng_unif(pt_rng *r);                        /* [0, 1) */
double pt_rng_uniform(pt_rng *r, double lo, double hi); /* [lo, hi) */
int64_t pt_rng_range(pt_rng *r, int64_t lo, int64_t hi); /* [lo, hi] */
uint64_t pt_hash(const char *s);                      /* FNV-1a */
uint64_t pt_mix(uint64_t x);                          /* splitmix64 finaliser */

/* ---------------------------------------------------------------- gen.c: input domains */
typedef enum pt_domain {
    PD_ANY,   /* floats uniform in [-4, 4] */
    PD_POS,   /* (0.01 .. 100) log-uniform, a few exact zeros (log -> -inf) */
    PD_RECIP, /* |x| in (0.1 .. 10), either sign */
    PD_EXP,   /* [-8, 8] */
    PD_TRIG,  /* [-6, 6] */
    PD_ROUND, /* [-8, 8], many exact halves (k + 0.5) */
    PD_POW,   /* base in (0.1 .. 4) */
    PD_TIES,  /* half from a small set of values (ties), half uniform in [-4, 4] */
    PD_SUM,   /* [-0.5, 1]: positive mean, no catastrophic cancellation */
    PD_CAST,  /* wide: large magnitudes, subnormals, range edges, halves, NaN, +-inf */
    PD_COND,  /* integer condition: 0, 1 or random bits */
    PD_BITS,  /* random bytes (copies, sentinels) */
    PD_CORE   /* [0.5, 4]: where every libm-based formula is well conditioned (rank-0 cases) */
} pt_domain;
/* buf (n elements of dt) <- values of domain d. Integer dtypes get a mixture of small values
 * (either sign), random bit patterns and the range edges whatever the domain, except PD_COND
 * and PD_BITS. specials: floats get NaN, +-inf and +-0 at about 3% of the elements. */
void pt_fill(void *buf, wk_dtype dt, size_t n, pt_rng *r, pt_domain d, int specials);

/* ---------------------------------------------------------------- layouts.c: families */
typedef enum pt_family {
    PF_CONTIG,     /* row-major contiguous, rank 3 */
    PF_STRIDED,    /* a narrowed view of a larger buffer (padded dims, start > 0 possible) */
    PF_TRANSPOSED, /* a contiguous buffer read with its dims reversed */
    PF_BROADCAST,  /* some dims with stride 0 */
    PF_OFFSET,     /* contiguous with start offset > 0 and slack after the end */
    PF_EMPTY,      /* one dim is 0 */
    PF_RANK0, PF_RANK1, PF_RANK2, PF_RANK3, PF_RANK4, PF_RANK5, PF_RANK6, /* narrowed views */
    PF_LARGE,      /* contiguous, > 32768 elements (the multi-threaded paths) */
    PF_LARGE_T,    /* transposed, > 32768 elements */
    PF_COUNT
} pt_family;
/* Not a layout family: the name under which the adversarial rows (run_adversarial.c) report. */
#define PF_ADVERSARIAL PF_COUNT
const char *pt_family_name(int fam);
/* The logical dims of a case of family fam. */
void pt_family_dims(int32_t *rank, int64_t dims[WK_MAX_RANK], int fam, pt_rng *r);
/* l, *len: a layout of family fam over a fresh storage of *len elements, with the given dims. */
void pt_layout_for(wk_layout *l, size_t *len, int fam, int32_t rank, const int64_t *dims,
                   pt_rng *r);
/* "[3,4]/[1,3]+2" */
const char *pt_layout_str(char *buf, size_t cap, const wk_layout *l);

/* ---------------------------------------------------------------- tolerance.c */
typedef enum pt_tol {
    PT_BITS,   /* bit-for-bit (copies, selections, fills) */
    PT_EXACT,  /* equal values, NaN/inf at the same places (exactly rounded ops, casts) */
    PT_TRANSC, /* libm-based functions: NMSE bound per dtype */
    PT_SUM,    /* float sums (accumulation order differs between backends) */
    PT_QDOT    /* quantized matmul: GPUs quantize x to int8 blocks for integer dot products */
} pt_tol;
/* The NMSE bound of a tolerance class for an output dtype; 0 means exact. */
double pt_bound(pt_tol tol, wk_dtype dt);

/* ---------------------------------------------------------------- compare.c */
/* got (device) vs want (reference), n elements of dt. Returns 1 on pass; otherwise writes what
 * differed into msg. *nmse: sum (got - want)^2 / sum want^2 over elements finite in both (0 when
 * tol is exact). */
int pt_compare(char *msg, size_t cap, double *nmse, wk_dtype dt, const void *got,
               const void *want, int64_t n, pt_tol tol);
/* pt_compare with an explicit NMSE bound (0: exact) in place of pt_bound(tol, dt). */
int pt_compare_bound(char *msg, size_t cap, double *nmse, wk_dtype dt, const void *got,
                     const void *want, int64_t n, pt_tol tol, double bound);

/* ---------------------------------------------------------------- cases.c: the op rows */
typedef enum pt_kind {
    PK_UNARY,        /* wk_unary, wk_affine, wk_powf, wk_elu */
    PK_BINARY,       /* wk_binary and wk_cmp */
    PK_WHERE,        /* wk_where_cond */
    PK_CAST,         /* wk_to_dtype to row.target */
    PK_CONST_SET,    /* wk_const_set */
    PK_REDUCE,       /* wk_reduce */
    PK_COPY_STRIDED, /* wk_copy_strided_src */
    PK_COPY2D,       /* wk_copy2d */
    PK_MATMUL,       /* wk_matmul */
    PK_CONV,         /* wk_conv1d, wk_conv_transpose1d, wk_conv2d, wk_conv_transpose2d */
    /* @marker:linalg */
    PK_POOL,         /* wk_avg_pool2d, wk_max_pool2d */
    PK_UPSAMPLE,     /* wk_upsample_nearest1d/2d, wk_upsample_bilinear2d */
    /* @marker:image */
    PK_INDEX,        /* index_select, gather, scatter_set, scatter_add_set, index_add */
    /* @marker:index */
    PK_SOFTMAX,      /* wk_softmax_last_dim */
    PK_NORM,         /* wk_rms_norm, wk_layer_norm */
    PK_ROPE,         /* wk_rope, wk_rope_i, wk_rope_thd */
    PK_ARG_SORT,     /* wk_arg_sort_last_dim, ascending and descending */
    PK_ADD_NORM,     /* wk_add_rms_norm, wk_add_layer_norm: both outputs */
    /* @marker:fused */
    PK_QUANT,        /* wk_dequantize, wk_qmatmul, wk_qembedding for row.qtype */
    PK_ATTN,         /* wk_decode_attention */
    PK_ROPE_KV,      /* wk_rope_kv_append (halves, and interleaved for the row named "..._i") */
    PK_COUNT
} pt_kind;

/* One row of the matrix. Adding an op of an existing kind = one entry in pt_rows (cases.c) plus
 * its reference function; a new kind also needs a runner (pt_runners). */
typedef struct pt_row {
    const char *name;
    wk_op op;
    pt_kind kind;
    pt_domain domain;
    pt_tol tol;
    int specials;    /* inject NaN/inf/+-0 into float inputs of some cases */
    wk_dtype target; /* PK_CAST: the output dtype */
} pt_row;
extern const pt_row pt_rows[];
extern const int pt_nrows;

/* ---------------------------------------------------------------- per-case context */
typedef struct pt_ctx {
    wk_device *dev;
    const pt_row *row;
    wk_dtype dt;
    parity_row *out;  /* results accumulate here */
    int fam;
    uint64_t seed;    /* the family's seed (every draw of the case derives from it) */
    char sub[160];    /* the sub-case: dims reduced, cond dtype, parameters, layouts */
    int probing;      /* 1: only check that every call returns `expect` */
    wk_status expect;
    int case_failed;  /* the current case has recorded a failure */
} pt_ctx;

/* Runs the cases of one family for c->row / c->dt (runners in run_*.c). */
typedef void (*pt_runner)(pt_ctx *c, pt_rng *r);
void pt_run_unary(pt_ctx *c, pt_rng *r);
void pt_run_binary(pt_ctx *c, pt_rng *r);
void pt_run_where(pt_ctx *c, pt_rng *r);
void pt_run_cast(pt_ctx *c, pt_rng *r);
void pt_run_reduce(pt_ctx *c, pt_rng *r);
void pt_run_const_set(pt_ctx *c, pt_rng *r);
void pt_run_copy_strided(pt_ctx *c, pt_rng *r);
void pt_run_copy2d(pt_ctx *c, pt_rng *r);
void pt_run_matmul(pt_ctx *c, pt_rng *r);
void pt_run_conv(pt_ctx *c, pt_rng *r);
/* @marker:linalg */
void pt_run_pool(pt_ctx *c, pt_rng *r);
void pt_run_upsample(pt_ctx *c, pt_rng *r);
/* @marker:image */
void pt_run_index(pt_ctx *c, pt_rng *r);
/* @marker:index */
void pt_run_softmax(pt_ctx *c, pt_rng *r); /* run_fused.c */
void pt_run_norm(pt_ctx *c, pt_rng *r);
void pt_run_rope(pt_ctx *c, pt_rng *r);
void pt_run_arg_sort(pt_ctx *c, pt_rng *r);
void pt_run_add_norm(pt_ctx *c, pt_rng *r);
/* @marker:fused */
void pt_run_quant(pt_ctx *c, pt_rng *r); /* run_quant.c */
void pt_run_attn(pt_ctx *c, pt_rng *r);  /* run_attn.c */
void pt_run_rope_kv(pt_ctx *c, pt_rng *r); /* run_rope_kv.c */
/* The adversarial rows of the row reductions and fused row ops (run_adversarial.c): 1 if
 * c->row / c->dt has them (PK_REDUCE, PK_SOFTMAX, PK_NORM, PK_ARG_SORT on a float dtype). */
int pt_has_adversarial(const pt_row *row, wk_dtype dt);
void pt_run_adversarial(pt_ctx *c);
/* PK_QUANT rows are named "<op>_<qtype name>": the block type of such a row. */
wk_qtype pt_row_qtype(const pt_row *row);

/* ---------------------------------------------------------------- case.c: case helpers */
/* A host tensor and its device copy. */
typedef struct pt_tensor {
    wk_dtype dtype;
    size_t len;          /* storage elements */
    wk_layout l;
    unsigned char *host; /* len elements (at least one byte allocated) */
    wk_storage *s;       /* the uploaded copy, or NULL */
} pt_tensor;

/* Starts a case (counts it). */
void pt_case_begin(pt_ctx *c);
/* Records a failure of the current case (the first message of the row is kept). Returns 0. */
int pt_fail(pt_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* t <- a tensor of dtype dt, family c->fam, dims (rank, dims), values of domain d, uploaded.
 * Returns 1, or 0 after recording a failure. */
int pt_tensor_make(pt_ctx *c, pt_tensor *t, wk_dtype dt, int32_t rank, const int64_t *dims,
                   pt_rng *r, pt_domain d, int specials);
/* t <- a storage of len elements of dt holding host bytes (copied), with layout *l (or a
 * contiguous 1-D one when l is NULL). Returns 1, or 0 after recording a failure. */
int pt_tensor_upload(pt_ctx *c, pt_tensor *t, wk_dtype dt, size_t len, const void *host,
                     const wk_layout *l);
void pt_tensor_free(pt_tensor *t);
/* Checks that t's device storage still holds its host bytes (inputs are never written). */
int pt_tensor_unchanged(pt_ctx *c, const pt_tensor *t, const char *what);
/* Checks the status of a call: `want` normally, c->expect when probing. A failure includes
 * wk_status_string and wk_last_error. Returns 1 if the status is the expected one. */
int pt_check_status(pt_ctx *c, wk_status got, wk_status want, const char *call);
/* The outcome of an op that may fail on a GPU after returning (an out-of-range id found by the
 * kernel): st, or, when st is WK_OK on a GPU, the status of a synchronize after it (*deferred = 1
 * when that one failed; *out, undefined then, is freed if out is not NULL). */
wk_status pt_settle(pt_ctx *c, wk_status st, wk_storage **out, int *deferred);
/* Downloads out (which must have dtype odt and n elements) and compares it with want (the
 * reference) under tolerance tol; records the NMSE. Returns 1 on pass. */
int pt_check_output(pt_ctx *c, const wk_storage *out, wk_dtype odt, const void *want, int64_t n,
                    pt_tol tol);
/* pt_check_output with an explicit NMSE bound (0: exact). */
int pt_check_output_bound(pt_ctx *c, const wk_storage *out, wk_dtype odt, const void *want,
                          int64_t n, pt_tol tol, double bound);
/* Like pt_check_output for a whole in-place destination storage of len elements: bit for bit,
 * a mismatch outside `written` (1 per element written by the op) is reported as a guard-region
 * violation. */
int pt_check_inplace(pt_ctx *c, const wk_storage *dst, wk_dtype dt, const void *want, size_t len,
                     const unsigned char *written);
/* Host allocation that never returns NULL for n = 0 (a failure is recorded). */
void *pt_alloc(pt_ctx *c, size_t bytes);

#endif
