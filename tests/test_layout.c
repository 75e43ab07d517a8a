/* test_layout.c: the public layout helpers (contiguous, transpose, narrow, broadcast, element
 * count, contiguity), with hand-computed strides. Error statuses are also in test_bad_input.c.
 * Run: ctest -R test_layout */
#include "testlib.h"
#include "wk_core.h"
#include <string.h>

static int layout_is(const wk_layout *l, int32_t rank, const int64_t *dims, const int64_t *strides,
                     int64_t offset)
{
    if (l->rank != rank || l->offset != offset)
        return 0;
    for (int k = 0; k < rank; k++)
        if (l->dims[k] != dims[k] || l->strides[k] != strides[k])
            return 0;
    return 1;
}

static void show(const char *what, const wk_layout *l)
{
    printf("  %s: rank %d dims [", what, l->rank);
    for (int k = 0; k < l->rank && k < WK_MAX_RANK; k++)
        printf("%s%lld", k ? "," : "", (long long)l->dims[k]);
    printf("] strides [");
    for (int k = 0; k < l->rank && k < WK_MAX_RANK; k++)
        printf("%s%lld", k ? "," : "", (long long)l->strides[k]);
    printf("] offset %lld\n", (long long)l->offset);
}

#define EXPECT_LAYOUT(l, rank, dims, strides, offset)                                          \
    do {                                                                                        \
        if (!TEST_CHECK(layout_is(&(l), rank, dims, strides, offset), "layout %s", #l))        \
            show(#l, &(l));                                                                     \
    } while (0)

/* Inputs that tests/fuzz/fuzz_layout.c found (each was signed overflow or a wrong answer; the
 * asan build's UBSan turns a return of the overflow into a failure). */
static void fuzz_regressions(void)
{
    const int64_t big = INT64_C(1) << 62;
    /* elem_count of an overflowing product: -1, not an overflow (wick.h) */
    wk_layout l = {.rank = 3, .dims = {4, big, 4}, .strides = {0, 0, 0}};
    TEST_EQ_INT(wk_layout_elem_count(&l), -1);
    /* is_contiguous whose running stride would overflow: 0 */
    wk_layout m = {.rank = 3, .dims = {2, big, 4}, .strides = {1, 4, 1}};
    TEST_EQ_INT(wk_layout_is_contiguous(&m), 0);
    /* an empty layout is contiguous, as wk_layout_contiguous makes it: (5, 0) gets strides (1, 1) */
    const int64_t d50[2] = {5, 0};
    wk_layout e;
    TEST_EQ_STATUS(wk_layout_contiguous(&e, 2, d50), WK_OK);
    TEST_EQ_INT(wk_layout_is_contiguous(&e), 1);
    /* contiguous strides that overflow beside a dim of 0 (the count is 0): WK_ERR_OVERFLOW */
    const int64_t dz[4] = {2, big, 8, 0};
    TEST_EQ_STATUS(wk_layout_contiguous(&e, 4, dz), WK_ERR_OVERFLOW);
    /* a layout with a dim of 0 is empty whatever the other dims: valid in any dim order */
    wk_layout z1 = {.rank = 3, .dims = {0, big, big}, .strides = {1, 1, 1}};
    wk_layout z2 = {.rank = 3, .dims = {big, big, 0}, .strides = {1, 1, 1}};
    TEST_EQ_STATUS(wk_layout_check(&z1, 4, "test", "z1"), WK_OK);
    TEST_EQ_STATUS(wk_layout_check(&z2, 4, "test", "z2"), WK_OK);
    /* an empty layout is injective, whatever its (unchecked) strides */
    wk_layout zi = {.rank = 3, .dims = {5, 0, 5}, .strides = {INT64_MAX, 0, INT64_MAX}};
    TEST_EQ_INT(wk_layout_injective(&zi), 1);
    /* narrowing an empty view keeps its offset, so it stays valid for its storage */
    wk_layout ev = {.rank = 2, .dims = {3, 0}, .strides = {45, 1}, .offset = 0}, en;
    TEST_EQ_STATUS(wk_layout_narrow(&en, &ev, 0, 2, 1), WK_OK);
    TEST_EQ_INT(en.offset, 0);
    TEST_EQ_STATUS(wk_layout_check(&en, 0, "test", "narrowed"), WK_OK);
    /* a narrow whose new offset overflows: WK_ERR_OVERFLOW */
    wk_layout hv = {.rank = 1, .dims = {4}, .strides = {INT64_MAX / 2}, .offset = 0};
    TEST_EQ_STATUS(wk_layout_narrow(&en, &hv, 0, 3, 1), WK_ERR_OVERFLOW);
    /* walking a size-1 dim of stride INT64_MAX never computes offset + stride */
    wk_layout w1 = {.rank = 2, .dims = {1, 3}, .strides = {INT64_MAX, 1}, .offset = 5};
    TEST_EQ_STATUS(wk_layout_check(&w1, 8, "test", "w1"), WK_OK);
    wk_walker w;
    wk_walker_init(&w, &w1, 0);
    for (int i = 0; i < 3; i++) {
        TEST_EQ_INT(w.off, 5 + i);
        wk_walker_next(&w);
    }
    TEST_EQ_INT(w.off, 5); /* wrapped to the first element */
    /* collapsing a valid layout whose stride * dim passes INT64_MAX: kept apart, no overflow */
    wk_layout hc = {.rank = 2, .dims = {2, 2}, .strides = {1, big}, .offset = 0}, co;
    TEST_EQ_STATUS(wk_layout_check(&hc, (size_t)INT64_MAX, "test", "hc"), WK_OK);
    wk_layout_collapse(&co, &hc);
    TEST_EQ_INT(co.rank, 2);
    TEST_EQ_INT(wk_layout_offset_of(&co, 3), 1 + big);
    /* injective when the span reached is INT64_MAX + 1: no overflow, and the answer is right */
    wk_layout hi1 = {.rank = 1, .dims = {2}, .strides = {INT64_MAX}, .offset = 0};
    TEST_EQ_INT(wk_layout_injective(&hi1), 1);
    wk_layout hi2 = {.rank = 2, .dims = {2, 2}, .strides = {INT64_MAX, INT64_MAX}, .offset = 0};
    TEST_EQ_INT(wk_layout_injective(&hi2), 0);
}

int main(void)
{
    wk_layout c, t, n, b;
    /* (2,3,4) row-major: strides (12,4,1). */
    const int64_t d234[3] = {2, 3, 4}, s234[3] = {12, 4, 1};
    TEST_EQ_STATUS(wk_layout_contiguous(&c, 3, d234), WK_OK);
    EXPECT_LAYOUT(c, 3, d234, s234, 0);
    TEST_EQ_INT(wk_layout_elem_count(&c), 24);
    TEST_EQ_INT(wk_layout_is_contiguous(&c), 1);

    /* Scalar: rank 0, one element, contiguous. */
    wk_layout s0;
    TEST_EQ_STATUS(wk_layout_contiguous(&s0, 0, NULL), WK_OK);
    TEST_EQ_INT(s0.rank, 0);
    TEST_EQ_INT(wk_layout_elem_count(&s0), 1);
    TEST_EQ_INT(wk_layout_is_contiguous(&s0), 1);

    /* Empty dims: zero elements. */
    const int64_t d20[2] = {2, 0};
    wk_layout e;
    TEST_EQ_STATUS(wk_layout_contiguous(&e, 2, d20), WK_OK);
    TEST_EQ_INT(wk_layout_elem_count(&e), 0);

    /* Transpose dims 0 and 2 of (2,3,4)/(12,4,1): (4,3,2)/(1,4,12); not contiguous. */
    const int64_t d432[3] = {4, 3, 2}, s432[3] = {1, 4, 12};
    TEST_EQ_STATUS(wk_layout_transpose(&t, &c, 0, 2), WK_OK);
    EXPECT_LAYOUT(t, 3, d432, s432, 0);
    TEST_EQ_INT(wk_layout_is_contiguous(&t), 0);
    TEST_EQ_INT(wk_layout_elem_count(&t), 24);
    /* Transposing a dim with itself is the identity; out may alias the input. */
    wk_layout same = c;
    TEST_EQ_STATUS(wk_layout_transpose(&same, &same, 1, 1), WK_OK);
    EXPECT_LAYOUT(same, 3, d234, s234, 0);

    /* Narrow dim 1 of (2,3,4) to [1,3): dims (2,2,4), offset 1*4 = 4. */
    const int64_t d224[3] = {2, 2, 4};
    TEST_EQ_STATUS(wk_layout_narrow(&n, &c, 1, 1, 2), WK_OK);
    EXPECT_LAYOUT(n, 3, d224, s234, 4);
    TEST_EQ_INT(wk_layout_is_contiguous(&n), 0);
    /* Narrow dim 0 to [1,2): still contiguous, offset 12. */
    const int64_t d134[3] = {1, 3, 4};
    TEST_EQ_STATUS(wk_layout_narrow(&n, &c, 0, 1, 1), WK_OK);
    EXPECT_LAYOUT(n, 3, d134, s234, 12);
    TEST_EQ_INT(wk_layout_is_contiguous(&n), 1);
    /* Narrow to length 0 at the end is allowed: empty. */
    TEST_EQ_STATUS(wk_layout_narrow(&n, &c, 2, 4, 0), WK_OK);
    TEST_EQ_INT(wk_layout_elem_count(&n), 0);

    /* Broadcast (3,1) to (2,3,4): (2,3,4) with strides (0,1,0) (NumPy right alignment). */
    const int64_t d31[2] = {3, 1};
    wk_layout col;
    TEST_EQ_STATUS(wk_layout_contiguous(&col, 2, d31), WK_OK);
    const int64_t sb[3] = {0, 1, 0};
    TEST_EQ_STATUS(wk_layout_broadcast(&b, &col, 3, d234), WK_OK);
    EXPECT_LAYOUT(b, 3, d234, sb, 0);
    TEST_EQ_INT(wk_layout_elem_count(&b), 24);
    TEST_EQ_INT(wk_layout_is_contiguous(&b), 0);
    /* Broadcast of a narrowed view keeps its offset. */
    const int64_t d4[1] = {4};
    wk_layout v4, v4n;
    TEST_EQ_STATUS(wk_layout_contiguous(&v4, 1, d4), WK_OK);
    TEST_EQ_STATUS(wk_layout_narrow(&v4n, &v4, 0, 2, 1), WK_OK); /* (1)/(1)+2 */
    const int64_t d23[2] = {2, 3}, s00[2] = {0, 0};
    TEST_EQ_STATUS(wk_layout_broadcast(&b, &v4n, 2, d23), WK_OK);
    EXPECT_LAYOUT(b, 2, d23, s00, 2);

    /* Contiguity ignores the stride of a size-1 dim (wick.h). */
    wk_layout one = c;
    one.dims[1] = 1;
    one.strides[1] = 999;
    one.strides[0] = 4;
    TEST_EQ_INT(wk_layout_is_contiguous(&one), 1);
    /* elem_count counts negative dims as 0 (wick.h). */
    wk_layout neg = c;
    neg.dims[0] = -3;
    TEST_EQ_INT(wk_layout_elem_count(&neg), 0);

    /* Error statuses (docs/semantics.md: layout helpers). */
    const int64_t dneg[2] = {2, -1}, dbig[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    wk_layout keep = c;
    TEST_EQ_STATUS(wk_layout_contiguous(&keep, 9, d234), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_layout_contiguous(&keep, -1, d234), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_layout_contiguous(&keep, 2, dneg), WK_ERR_INVALID_ARGUMENT);
    TEST_EQ_STATUS(wk_layout_contiguous(&keep, 2, dbig), WK_ERR_OVERFLOW);
    TEST_EQ_STATUS(wk_layout_transpose(&keep, &c, 0, 3), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_EQ_STATUS(wk_layout_transpose(&keep, &c, -1, 0), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_EQ_STATUS(wk_layout_narrow(&keep, &c, 3, 0, 1), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_EQ_STATUS(wk_layout_narrow(&keep, &c, 1, 2, 2), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_EQ_STATUS(wk_layout_narrow(&keep, &c, 1, 4, 0), WK_ERR_INDEX_OUT_OF_RANGE);
    TEST_EQ_STATUS(wk_layout_broadcast(&keep, &c, 3, d432), WK_ERR_SHAPE);
    TEST_CHECK(layout_is(&keep, 3, d234, s234, 0), "a failed layout call changed *out");

    fuzz_regressions();
    return testlib_summary();
}
