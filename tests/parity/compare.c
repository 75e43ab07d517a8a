/* compare.c: device output vs reference output. Integer outputs and exact classes compare values,
 * PT_BITS compares bits, the others compute NMSE over the values finite in both; NaN and
 * infinities must sit at the same places in every class. */
#include "parity_impl.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "1.5 (0x3e00)": the value of element i and, below 64 bits, its raw bits. */
static const char *elem_str(char *buf, size_t cap, wk_dtype dt, const void *p, int64_t i)
{
    size_t es = ref_dtype_size(dt);
    uint64_t bits = 0;
    memcpy(&bits, (const unsigned char *)p + (size_t)i * es, es); /* little-endian hosts */
    if (!ref_is_float(dt))
        snprintf(buf, cap, "%lld", (long long)ref_load_i(dt, p, i));
    else if (es < 8)
        snprintf(buf, cap, "%.9g (0x%0*llx)", ref_load_f(dt, p, i), (int)(2 * es),
                 (unsigned long long)bits);
    else
        snprintf(buf, cap, "%.17g", ref_load_f(dt, p, i));
    return buf;
}

static int report(char *msg, size_t cap, wk_dtype dt, const void *got, const void *want,
                  int64_t i, const char *why)
{
    char g[64], w[64];
    snprintf(msg, cap, "element %lld: got %s, want %s%s", (long long)i,
             elem_str(g, sizeof g, dt, got, i), elem_str(w, sizeof w, dt, want, i), why);
    return 0;
}

int pt_compare(char *msg, size_t cap, double *nmse, wk_dtype dt, const void *got,
               const void *want, int64_t n, pt_tol tol)
{
    return pt_compare_bound(msg, cap, nmse, dt, got, want, n, tol, pt_bound(tol, dt));
}

int pt_compare_bound(char *msg, size_t cap, double *nmse, wk_dtype dt, const void *got,
                     const void *want, int64_t n, pt_tol tol, double bound)
{
    size_t es = ref_dtype_size(dt);
    *nmse = 0;
    if (tol == PT_BITS) {
        for (int64_t i = 0; i < n; i++)
            if (memcmp((const unsigned char *)got + (size_t)i * es,
                       (const unsigned char *)want + (size_t)i * es, es) != 0)
                return report(msg, cap, dt, got, want, i, " (bits differ)");
        return 1;
    }
    if (!ref_is_float(dt)) {
        for (int64_t i = 0; i < n; i++)
            if (ref_load_i(dt, got, i) != ref_load_i(dt, want, i))
                return report(msg, cap, dt, got, want, i, "");
        return 1;
    }
    double num = 0, den = 0, worst = -1;
    int64_t worst_i = -1;
    for (int64_t i = 0; i < n; i++) {
        double a = ref_load_f(dt, got, i), b = ref_load_f(dt, want, i);
        if (isnan(a) || isnan(b)) {
            if (isnan(a) != isnan(b))
                return report(msg, cap, dt, got, want, i, " (NaN positions differ)");
            continue;
        }
        if (isinf(a) || isinf(b)) {
            if (a != b)
                return report(msg, cap, dt, got, want, i, " (infinities differ)");
            continue;
        }
        if (bound == 0) {
            if (a != b)
                return report(msg, cap, dt, got, want, i, " (must be exact)");
            continue;
        }
        double d = a - b;
        num += d * d;
        den += b * b;
        if (fabs(d) > worst) {
            worst = fabs(d);
            worst_i = i;
        }
    }
    if (bound == 0)
        return 1;
    *nmse = den > 0 ? num / den : num > 0 ? INFINITY : 0;
    if (*nmse > bound) {
        char why[96];
        snprintf(why, sizeof why, " (worst element; nmse %.3g > bound %.3g)", *nmse, bound);
        return report(msg, cap, dt, got, want, worst_i, why);
    }
    return 1;
}
