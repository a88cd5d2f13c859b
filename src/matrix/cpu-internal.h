/* cpu-internal: loop helpers shared by the CPU kernels (src/matrix/cpu-*.c); see cpu.h. */
#ifndef PARNET_MATRIX_CPU_INTERNAL_H
#define PARNET_MATRIX_CPU_INTERNAL_H

#include "base/base.h"
#include "matrix/cpu.h"

/* The start of row r. */
static inline float *cpu_row(struct cpu_mat m, long r) {
    return m.data + r * (long)m.stride;
}

/* A matrix's rows as "segments" for elementwise loops: when every matrix involved is contiguous
 * the whole block is one long segment, so the inner loop runs long and vectorises well. */
struct segs {
    long n, len; /* n segments of len elements */
};

static inline int cpu_contiguous(struct cpu_mat m) {
    return m.stride == m.cols || m.rows <= 1;
}

/* The segments of the first n matrices of a (all of m[0]'s shape). */
static inline struct segs segs_of(const struct cpu_args *a) {
    struct segs s = {a->m[0].rows, a->m[0].cols};
    for (int j = 0; j < a->n; j++)
        if (!cpu_contiguous(a->m[j])) return s;
    s.n = a->m[0].rows > 0 && a->m[0].cols > 0 ? 1 : 0;
    s.len = (long)a->m[0].rows * a->m[0].cols;
    return s;
}

/* Start of segment i of matrix j (stride is irrelevant when there is only one). */
static inline float *seg_ptr(const struct cpu_args *a, int j, long i) {
    return cpu_row(a->m[j], i);
}

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
