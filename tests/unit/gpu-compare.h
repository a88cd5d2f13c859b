/* Comparing a CPU result with a GPU one (or any two matrices on any devices), for the GPU tests:
 * |a - b| <= tol * max(1, |b|) element by element, NaN only against NaN, inf only against the
 * same inf. Include after test.h. */
#ifndef PARNET_TESTS_GPU_COMPARE_H
#define PARNET_TESTS_GPU_COMPARE_H

#include <stdlib.h>

#include "matrix/matrix.h"

static int same_value(float g, float c, double tol) {
    if (isnan(c) || isnan(g)) return isnan(c) && isnan(g);
    if (isinf(c) || isinf(g)) return g == c;
    return fabs((double)g - c) <= tol * (fabs(c) > 1 ? fabs(c) : 1);
}

/* Index (row-major) of the first element where b differs from the reference a, or -1. */
static long first_mismatch(const struct matrix *a, const struct matrix *b, double tol, float *bv,
                           float *av) {
    ASSERT(a->rows == b->rows && a->cols == b->cols);
    long n = (long)a->rows * a->cols;
    float *ha = xmalloc((size_t)(n + 1) * sizeof *ha), *hb = xmalloc((size_t)(n + 1) * sizeof *hb);
    matrix_to_host(a, ha);
    matrix_to_host(b, hb);
    long bad = -1;
    for (long i = 0; i < n && bad < 0; i++)
        if (!same_value(hb[i], ha[i], tol)) {
            bad = i;
            *bv = hb[i];
            *av = ha[i];
        }
    free(ha);
    free(hb);
    return bad;
}

/* CHECK that gpu matches the reference cpu (struct matrix pointers). */
#define CHECK_SAME(cpu, gpu, tol) \
    do { \
        float g_ = 0, c_ = 0; \
        long i_ = first_mismatch((cpu), (gpu), (tol), &g_, &c_); \
        if (i_ >= 0) { \
            printf("FAIL %s: %s:%d: %s vs %s: element %ld (row %ld): %.9g, expected %.9g\n", \
                   test_name_now, __FILE__, __LINE__, #gpu, #cpu, i_, i_ / (cpu)->cols, \
                   (double)g_, (double)c_); \
            test_failed_now = 1; \
            return; \
        } \
    } while (0)

/* The same for vectors. */
#define CHECK_SAME_VEC(cpu, gpu, tol) \
    do { \
        struct matrix cm_ = matrix_from_vector((cpu), 1, (cpu)->dim); \
        struct matrix gm_ = matrix_from_vector((gpu), 1, (gpu)->dim); \
        CHECK_SAME(&cm_, &gm_, tol); \
    } while (0)

#endif
