/* cpu: reductions (sums, dots, traces, finiteness), row and column sums, argmax. */
#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorises only loops needing no epilogue; these loops need one. */
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <math.h>
#include <stdlib.h>

#include "matrix/cpu-internal.h"

#define SEG(k) seg_ptr(a, k, i)

static double sum_k(const struct cpu_args *a) {
    struct segs s = segs_of(a);
    double t = 0;
    for (long i = 0; i < s.n; i++) t += sum_f64(SEG(0), s.len);
    return t;
}

static double sum_sq_k(const struct cpu_args *a) {
    struct segs s = segs_of(a);
    double t = 0;
    for (long i = 0; i < s.n; i++) t += dot_f64(SEG(0), SEG(0), s.len);
    return t;
}

static double dot_k(const struct cpu_args *a) {
    struct segs s = segs_of(a);
    double t = 0;
    for (long i = 0; i < s.n; i++) t += dot_f64(SEG(0), SEG(1), s.len);
    return t;
}

/* x - x is 0 for finite x and NaN for inf/NaN; the int reduction vectorises. */
static int floats_finite(const float *p, long n) {
    int bad = 0;
    for (long i = 0; i < n; i++) bad |= !(p[i] - p[i] == 0.0f);
    return !bad;
}

double cpu_reduce(int op, struct cpu_mat m, struct cpu_mat b) {
    struct cpu_args a = {.m = {m}, .n = 1};
    switch (op) {
    case CPU_SUM: return sum_k(&a);
    case CPU_SUM_SQ: return cpu_split_flat(sum_sq_k, &a);
    case CPU_DOT: {
        struct cpu_args ab = {.m = {m, b}, .n = 2};
        return dot_k(&ab);
    }
    case CPU_DOT_TRANS: { /* tr(A B) = sum_ij A_ij B_ji */
        double t = 0;
        for (int i = 0; i < m.rows; i++) {
            const float *p = cpu_row(m, i), *q = b.data + i;
            for (int j = 0; j < m.cols; j++) t += (double)p[j] * q[(long)j * b.stride];
        }
        return t;
    }
    case CPU_TRACE: {
        double t = 0;
        for (int i = 0; i < m.rows; i++) t += m.data[(long)i * m.stride + i];
        return t;
    }
    case CPU_NONFINITE: {
        struct segs s = segs_of(&a);
        for (long i = 0; i < s.n; i++)
            if (!floats_finite(seg_ptr(&a, 0, i), s.len)) return NAN;
        return 0.0;
    }
    }
    ASSERT(!"cpu_reduce: unknown op");
    return 0;
}

/* m[0] = v as a 1 x cols row, m[1] = the matrix; split by columns, so no partial sums to merge. */
static double row_sums_k(const struct cpu_args *a) {
    struct cpu_mat v = a->m[0], m = a->m[1];
    float alpha = a->alpha, beta = a->beta;
    int n = m.cols;
    double *acc = xcalloc(n > 0 ? n : 1, sizeof *acc);
    for (int r = 0; r < m.rows; r++) {
        const float *p = cpu_row(m, r);
        for (int c = 0; c < n; c++) acc[c] += p[c];
    }
    for (int c = 0; c < n; c++)
        v.data[c] = (float)(alpha * acc[c] + (beta == 0.0f ? 0.0 : (double)beta * v.data[c]));
    free(acc);
    return 0;
}

void cpu_add_row_sums(float *v, float alpha, struct cpu_mat m, float beta) {
    struct cpu_args a = {.m = {{v, 1, m.cols, m.cols}, m}, .n = 2, .alpha = alpha, .beta = beta};
    cpu_split_cols(row_sums_k, &a);
}

void cpu_add_col_sums(float *v, float alpha, struct cpu_mat m, float beta) {
    for (int r = 0; r < m.rows; r++) {
        double s = sum_f64(cpu_row(m, r), m.cols);
        v[r] = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * v[r]));
    }
}

/* m[0] = v as a rows x 1 column (cut with m's rows), m[1] = the matrix. */
static double row_sq_norms_k(const struct cpu_args *a) {
    struct cpu_mat v = a->m[0], m = a->m[1];
    for (int r = 0; r < m.rows; r++) {
        const float *p = cpu_row(m, r);
        v.data[r] = (float)dot_f64(p, p, m.cols);
    }
    return 0;
}

/* m[0] = x, m[1] = x0 (as wide), m[2], m[3] = in_sq, out_sq as rows x 1 columns: x += x0 and
 * the squared norms of the rows of x0 and of the sum, each as row_sq_norms_k takes it. */
static double add_rows_sq_k(const struct cpu_args *a) {
    struct cpu_mat x = a->m[0], x0 = a->m[1];
    for (int r = 0; r < x.rows; r++) {
        float *d = cpu_row(x, r);
        const float *s = cpu_row(x0, r);
        for (int c = 0; c < x.cols; c++) d[c] += s[c];
        a->m[2].data[r] = (float)dot_f64(s, s, x0.cols);
        a->m[3].data[r] = (float)dot_f64(d, d, x.cols);
    }
    return 0;
}

void cpu_add_rows_sq(struct cpu_mat x, struct cpu_mat x0, float *in_sq, float *out_sq) {
    ASSERT(x0.rows == x.rows && x0.cols == x.cols);
    struct cpu_args a = {.m = {x, x0, {in_sq, x.rows, 1, 1}, {out_sq, x.rows, 1, 1}}, .n = 4};
    cpu_split_rows(add_rows_sq_k, &a);
}

void cpu_row_sq_norms(float *v, struct cpu_mat m) {
    struct cpu_args a = {.m = {{v, m.rows, 1, 1}, m}, .n = 2};
    cpu_split_rows(row_sq_norms_k, &a);
}

void cpu_row_argmax(struct cpu_mat m, int *out) {
    /* The first c with x[c] > every earlier value: the largest value (NaN never wins, and a
     * NaN in x[0] wins outright), found 16 lanes at a time, then its first occurrence. */
    enum { L = 16 };
    for (int r = 0; r < m.rows; r++) {
        const float *x = cpu_row(m, r);
        int n = m.cols, best = 0;
        if (x[0] == x[0]) {
            float lane[L], mx = x[0];
            for (int k = 0; k < L; k++) lane[k] = x[0];
            int c = 0;
            for (; c + L <= n; c += L)
                for (int k = 0; k < L; k++) lane[k] = x[c + k] > lane[k] ? x[c + k] : lane[k];
            for (; c < n; c++) mx = x[c] > mx ? x[c] : mx;
            for (int k = 0; k < L; k++) mx = lane[k] > mx ? lane[k] : mx;
            while (!(x[best] == mx)) best++;
        }
        out[r] = best;
    }
}
