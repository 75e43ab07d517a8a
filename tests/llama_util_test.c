/* llama_util_test.c: the example's argmax (examples/llama_util.c) against the one-pass rule it
 * must reproduce, written out here: the first index whose value is strictly greater than every
 * value before it that won (a NaN never takes over, a NaN at 0 stays, -0 and +0 tie), on random
 * arrays of every length 1..70 drawn from values that stress it (NaN, +-0, +-infinity, repeated
 * small integers), on the vocabulary's length with the maximum at chosen places, and on
 * hand-worked cases. */
#include "llama_util.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>

static uint32_t argmax_one_pass(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return (uint32_t)best;
}

int main(void)
{
    /* hand-worked: ties go to the first; -0 and +0 equal; NaN at 0 kept; NaN later skipped */
    const float a[] = {1, 3, 2, 3};
    TEST_EQ_INT(argmax(a, 4), 1);
    const float z[] = {-1.0f, -0.0f, 0.0f};
    TEST_EQ_INT(argmax(z, 3), 1);
    const float n0[] = {NAN, 5, 7};
    TEST_EQ_INT(argmax(n0, 3), 0);
    const float n1[] = {1, NAN, 0, INFINITY, NAN};
    TEST_EQ_INT(argmax(n1, 5), 3);
    const float one[] = {-INFINITY};
    TEST_EQ_INT(argmax(one, 1), 0);

    uint64_t rng = 7;
    float t[70];
    int bad = 0;
    for (int trial = 0; trial < 100000; trial++) {
        const int n = 1 + (int)(rng_next(&rng) % 70);
        for (int i = 0; i < n; i++) {
            const int r = (int)(rng_next(&rng) % 9);
            t[i] = r == 0   ? 0.0f
                   : r == 1 ? -0.0f
                   : r == 2 ? NAN
                   : r == 3 ? INFINITY
                   : r == 4 ? -INFINITY
                            : (float)(rng_next(&rng) % 5) - 2.0f;
        }
        if (argmax(t, n) != argmax_one_pass(t, n) && bad++ < 5)
            TEST_CHECK(0, "trial %d (n %d): %u against %u", trial, n, argmax(t, n),
                       argmax_one_pass(t, n));
    }
    TEST_EQ_INT(bad, 0);

    const int64_t V = 128256;
    float *v = malloc((size_t)V * sizeof *v);
    TEST_CHECK(v != NULL, "out of memory");
    if (!v)
        return testlib_summary();
    for (int64_t i = 0; i < V; i++)
        v[i] = (float)(rng_uniform(&rng) * 20.0 - 10.0);
    const int64_t at[] = {0, 1, 15, 16, 17, 77777, V - 17, V - 16, V - 1};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        const float keep = v[at[k]];
        v[at[k]] = 11.0f;
        TEST_EQ_INT(argmax(v, V), at[k]);
        TEST_EQ_INT(argmax(v, V), argmax_one_pass(v, V));
        v[at[k]] = keep;
    }
    free(v);
    return testlib_summary();
}
