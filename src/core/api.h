/* api.h: the front end's shared checks. Every public op validates here, once, for every backend,
 * before a backend sees its arguments. Internal. */
#ifndef WK_API_H
#define WK_API_H

#include "backend.h"
#include "wk_core.h"

/* out: a new storage of n elements (no checks on dev/dtype; overflow checked). */
wk_status wk_storage_new(wk_storage **out, wk_device *dev, wk_dtype dtype, size_t n, const char *op);

/* s may be written in place (not a read-only import; else WK_ERR_INVALID_ARGUMENT). */
wk_status wk_check_writable(const wk_storage *s, const char *op);
/* s and l non-NULL, l well-formed and inside s. `what` names the operand in messages. */
wk_status wk_check_operand(const wk_storage *s, const wk_layout *l, const char *op, const char *what);
/* b on the same device as a. */
wk_status wk_check_same_device(const wk_storage *a, const wk_storage *b, const char *op);
/* The two data operands of a binary-shaped op (binary, cmp, matmul): each checked as an operand
 * ("lhs", "rhs"), on one device, of one dtype. */
wk_status wk_check_pair(const wk_storage *a, const wk_layout *la, const wk_storage *b,
                        const wk_layout *lb, const char *op);
/* op defined for dtype (else WK_ERR_DTYPE) and implemented by dev (else WK_ERR_NOT_SUPPORTED). */
wk_status wk_check_op(const wk_device *dev, wk_op op, wk_dtype dt);
/* a and b have the same dims (else WK_ERR_SHAPE naming both). */
wk_status wk_check_same_dims(const wk_layout *a, const wk_layout *b, const char *op);

#endif
