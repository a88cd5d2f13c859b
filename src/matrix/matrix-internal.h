/* matrix-internal: helpers shared by the matrix module's .c files; not part of the public API.
 *
 * Device dispatch. Every operation starts with ON_CPU(...) on each matrix/vector it touches. The
 * CUDA backend will put its branch in front of that check:
 *     #if HAVE_CUDA
 *         if (m->device == MATRIX_GPU) { cuda_...(...); return; }
 *     #endif
 *         ON_CPU(m);
 * Until then a GPU matrix reaching the CPU path is a programmer bug.
 */
#ifndef PARNET_MATRIX_MATRIX_INTERNAL_H
#define PARNET_MATRIX_MATRIX_INTERNAL_H

#include "matrix/matrix.h"

#define ON_CPU(x) ASSERT((x)->device == MATRIX_CPU)

/* A matrix's rows as "segments" for elementwise loops: when every matrix involved is contiguous
 * the whole block is one long segment, so the inner loop runs long and vectorises well. */
struct segs {
    long n, len; /* n segments of len elements */
};

static inline int matrix_contiguous(const struct matrix *m) {
    return m->stride == m->cols || m->rows <= 1;
}

/* a, b, c may be NULL (fewer operands); all must have a's shape (checked by the caller). */
static inline struct segs segs_of(const struct matrix *a, const struct matrix *b,
                                  const struct matrix *c) {
    struct segs s = {a->rows, a->cols};
    if (matrix_contiguous(a) && (!b || matrix_contiguous(b)) && (!c || matrix_contiguous(c))) {
        s.n = a->rows > 0 && a->cols > 0 ? 1 : 0;
        s.len = (long)a->rows * a->cols;
    }
    return s;
}

/* Start of segment i (stride is irrelevant when there is only one). */
static inline float *seg_ptr(const struct matrix *m, long i) {
    return m->data + i * (long)m->stride;
}

#define SAME_SHAPE(a, b) ASSERT((a)->rows == (b)->rows && (a)->cols == (b)->cols)

/* Sum / dot with eight double accumulators: exact enough for long rows and still pipelined. */
static inline double sum_f64(const float *x, long n) {
    double acc[8] = {0};
    long i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    double s = 0;
    for (; i < n; i++) s += x[i];
    for (int k = 0; k < 8; k++) s += acc[k];
    return s;
}

static inline double dot_f64(const float *x, const float *y, long n) {
    double acc[8] = {0};
    long i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += (double)x[i + k] * y[i + k];
    double s = 0;
    for (; i < n; i++) s += (double)x[i] * y[i];
    for (int k = 0; k < 8; k++) s += acc[k];
    return s;
}

#endif
