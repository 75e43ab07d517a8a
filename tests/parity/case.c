/* case.c: helpers every runner uses: counting cases, recording failures (with op, dtype, family,
 * sub-case and seed), building and uploading input tensors, checking statuses, outputs, guard
 * regions and untouched inputs. */
#include "parity_impl.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pt_case_begin(pt_ctx *c)
{
    c->out->ncases++;
    c->case_failed = 0;
    c->sub[0] = 0;
}

int pt_fail(pt_ctx *c, const char *fmt, ...)
{
    if (!c->case_failed) {
        c->case_failed = 1;
        c->out->nfailed++;
    }
    c->out->status = PARITY_FAIL;
    if (c->out->msg[0])
        return 0; /* keep the first message of the row */
    int n = snprintf(c->out->msg, sizeof c->out->msg, "%s %s [%s%s%s] seed=%#llx: ", c->row->name,
                     wk_dtype_name(c->dt), pt_family_name(c->fam), c->sub[0] ? "; " : "", c->sub,
                     (unsigned long long)c->seed);
    if (n < 0 || (size_t)n >= sizeof c->out->msg)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->out->msg + n, sizeof c->out->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return 0;
}

void *pt_alloc(pt_ctx *c, size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p)
        pt_fail(c, "host allocation of %zu bytes failed", bytes);
    return p;
}

int pt_tensor_upload(pt_ctx *c, pt_tensor *t, wk_dtype dt, size_t len, const void *host,
                     const wk_layout *l)
{
    size_t bytes = len * ref_dtype_size(dt);
    *t = (pt_tensor){.dtype = dt, .len = len};
    if (l) {
        t->l = *l;
    } else {
        t->l.rank = 1;
        t->l.dims[0] = (int64_t)len;
        t->l.strides[0] = 1;
    }
    t->host = pt_alloc(c, bytes);
    if (!t->host)
        return 0;
    if (host && bytes)
        memcpy(t->host, host, bytes);
    wk_status st = wk_storage_from_host(&t->s, c->dev, dt, t->host, len);
    if (st != WK_OK) {
        t->s = NULL;
        return pt_fail(c, "wk_storage_from_host(%s, %zu) failed: %s: %s", wk_dtype_name(dt), len,
                       wk_status_string(st), wk_last_error());
    }
    return 1;
}

int pt_tensor_make(pt_ctx *c, pt_tensor *t, wk_dtype dt, int32_t rank, const int64_t *dims,
                   pt_rng *r, pt_domain d, int specials)
{
    wk_layout l;
    size_t len;
    pt_layout_for(&l, &len, c->fam, rank, dims, r);
    unsigned char *host = pt_alloc(c, len * ref_dtype_size(dt));
    if (!host) {
        *t = (pt_tensor){0};
        return 0;
    }
    pt_fill(host, dt, len, r, d, specials);
    int ok = pt_tensor_upload(c, t, dt, len, host, &l);
    free(host);
    return ok;
}

void pt_tensor_free(pt_tensor *t)
{
    wk_storage_free(t->s);
    free(t->host);
    *t = (pt_tensor){0};
}

int pt_tensor_unchanged(pt_ctx *c, const pt_tensor *t, const char *what)
{
    if (!t->s)
        return 1;
    size_t es = ref_dtype_size(t->dtype);
    unsigned char *now = pt_alloc(c, t->len * es);
    if (!now)
        return 0;
    wk_status st = wk_storage_to_host(now, t->len, t->s);
    int ok = 1;
    if (st != WK_OK) {
        ok = pt_fail(c, "wk_storage_to_host(%s) failed: %s: %s", what, wk_status_string(st),
                     wk_last_error());
    } else {
        for (size_t i = 0; i < t->len; i++)
            if (memcmp(now + i * es, t->host + i * es, es) != 0) {
                ok = pt_fail(c, "input %s was modified at storage element %zu", what, i);
                break;
            }
    }
    free(now);
    return ok;
}

wk_status pt_settle(pt_ctx *c, wk_status st, wk_storage **out, int *deferred)
{
    *deferred = 0;
    if (wk_device_backend(c->dev) == WK_BACKEND_CPU || st != WK_OK)
        return st;
    const wk_status s2 = wk_device_synchronize(c->dev);
    if (s2 != WK_OK) {
        *deferred = 1;
        if (out) {
            wk_storage_free(*out);
            *out = NULL;
        }
    }
    return s2;
}

int pt_check_status(pt_ctx *c, wk_status got, wk_status want, const char *call)
{
    if (c->probing)
        want = c->expect;
    if (got == want)
        return 1;
    const char *detail = got != WK_OK ? wk_last_error() : "";
    return pt_fail(c, "%s returned %s, expected %s%s%s", call, wk_status_string(got),
                   wk_status_string(want), detail[0] ? ": " : "", detail);
}

int pt_check_output(pt_ctx *c, const wk_storage *out, wk_dtype odt, const void *want, int64_t n,
                    pt_tol tol)
{
    return pt_check_output_bound(c, out, odt, want, n, tol, pt_bound(tol, odt));
}

int pt_check_output_bound(pt_ctx *c, const wk_storage *out, wk_dtype odt, const void *want,
                          int64_t n, pt_tol tol, double bound)
{
    if (!out)
        return pt_fail(c, "the op returned WK_OK and no output storage");
    if (wk_storage_dtype(out) != odt)
        return pt_fail(c, "output dtype %s, expected %s", wk_dtype_name(wk_storage_dtype(out)),
                       wk_dtype_name(odt));
    if (wk_storage_len(out) != (size_t)n)
        return pt_fail(c, "output has %zu elements, expected %lld", wk_storage_len(out), (long long)n);
    unsigned char *got = pt_alloc(c, (size_t)n * ref_dtype_size(odt));
    if (!got)
        return 0;
    int ok = 1;
    wk_status st = wk_storage_to_host(got, (size_t)n, out);
    if (st != WK_OK) {
        ok = pt_fail(c, "wk_storage_to_host(output) failed: %s: %s", wk_status_string(st),
                     wk_last_error());
    } else {
        char msg[320];
        double nmse = 0;
        if (bound > c->out->bound)
            c->out->bound = bound;
        if (!pt_compare_bound(msg, sizeof msg, &nmse, odt, got, want, n, tol, bound))
            ok = pt_fail(c, "%s", msg);
        if (nmse > c->out->worst_nmse)
            c->out->worst_nmse = nmse;
    }
    free(got);
    return ok;
}

int pt_check_inplace(pt_ctx *c, const wk_storage *dst, wk_dtype dt, const void *want, size_t len,
                     const unsigned char *written)
{
    size_t es = ref_dtype_size(dt);
    unsigned char *got = pt_alloc(c, len * es);
    if (!got)
        return 0;
    int ok = 1;
    wk_status st = wk_storage_to_host(got, len, dst);
    if (st != WK_OK) {
        ok = pt_fail(c, "wk_storage_to_host(destination) failed: %s: %s", wk_status_string(st),
                     wk_last_error());
    } else {
        for (size_t i = 0; i < len; i++) {
            if (memcmp(got + i * es, (const unsigned char *)want + i * es, es) == 0)
                continue;
            char msg[320];
            double nmse;
            pt_compare(msg, sizeof msg, &nmse, dt, got + i * es, (const unsigned char *)want + i * es,
                       1, PT_BITS);
            if (written[i])
                ok = pt_fail(c, "destination element %zu (written by the op): %s", i,
                             msg + 11); /* skip "element 0: " */
            else
                ok = pt_fail(c, "destination element %zu outside the written set was modified "
                             "(guard region): %s", i, msg + 11);
            break;
        }
    }
    free(got);
    return ok;
}
