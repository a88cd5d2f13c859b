/* matrix-internal: helpers shared by the matrix module's .c files; not part of the public API.
 *
 * Device dispatch. Every operation checks its arguments, then (built with CUDA=1) hands GPU
 * operands to the backend in src/cuda/, then runs the CPU code behind ON_CPU(...):
 *     #if HAVE_CUDA
 *         if (GPU2(m, a)) { cuda_...(CM(m), ...); return; }
 *     #endif
 *         ON_CPU(m);
 * GPUn(...) is 1 when the operands live on the GPU and asserts that they all live on the same
 * device (mixing devices in one operation is a programmer bug; matrix_copy and vector_copy are
 * the only operations that cross). A GPU matrix reaching the CPU path is a programmer bug too.
 */
#ifndef PARNET_MATRIX_MATRIX_INTERNAL_H
#define PARNET_MATRIX_MATRIX_INTERNAL_H

#include "matrix/matrix.h"

#define ON_CPU(x) ASSERT((x)->device == MATRIX_CPU)

#if HAVE_CUDA
#include "cuda/cuda.h"

static inline int on_gpu(int d0, int d1, int d2, int d3) {
    ASSERT(d1 < 0 || d1 == d0);
    ASSERT(d2 < 0 || d2 == d0);
    ASSERT(d3 < 0 || d3 == d0);
    return d0 == MATRIX_GPU;
}
#define GPU1(a) on_gpu((a)->device, -1, -1, -1)
#define GPU2(a, b) on_gpu((a)->device, (b)->device, -1, -1)
#define GPU3(a, b, c) on_gpu((a)->device, (b)->device, (c)->device, -1)
#define GPU4(a, b, c, d) on_gpu((a)->device, (b)->device, (c)->device, (d)->device)

/* The backend's view of a matrix, and of a vector as a 1 x dim matrix. */
static inline struct cuda_mat cuda_mat_of(const struct matrix *m) {
    struct cuda_mat c = {m->data, m->rows, m->cols, m->stride};
    return c;
}
static inline struct cuda_mat cuda_vec_of(const struct vector *v) {
    struct cuda_mat c = {v->data, 1, v->dim, v->dim};
    return c;
}
#define CM(m) cuda_mat_of(m)
#define CV(v) cuda_vec_of(v)
#endif

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

/* ---- CPU work split over the thread pool (base.h "parallel loops") ----
 * An operation on CPU matrices hands itself to split_rows when the work is worth more than one
 * thread: fn then runs on each thread's share of the rows (views of a, b and c, which have a's row
 * count), and split_rows returns 1. It returns 0 (the caller runs its own loop) when the pool has
 * one thread, inside a task, or for less than SPLIT_MIN_ELEMS elements, where waking a worker
 * costs more than it saves. fn is usually a two-line adapter calling the public operation on the
 * views: inside a task the pool reports one thread, so that call takes the serial path. */
#define SPLIT_MIN_ELEMS 32768L
typedef void (*rows_fn)(struct matrix *a, const struct matrix *b, const struct matrix *c,
                        const void *extra);
int split_rows(rows_fn fn, struct matrix *a, const struct matrix *b, const struct matrix *c,
               const void *extra);
/* Sums fn(part of a, part of b) over the row shares (in a fixed order), or returns fn(a, b)
 * itself when split_rows would not split. b may be NULL. */
double split_sum_rows(double (*fn)(const struct matrix *a, const struct matrix *b),
                      const struct matrix *a, const struct matrix *b);

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
