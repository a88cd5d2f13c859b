/* matrix: storage, views, host transfer, copies, fills, BLAS level 1-3. Each operation checks
 * its arguments and dispatches to src/matrix/cpu.h or (CUDA=1, GPU operands) src/cuda/cuda.h
 * (matrix-internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/matrix-internal.h"

int matrix_default_device = MATRIX_CPU;

void matrix_set_num_threads(int n) {
    cpu_set_num_threads(n);
}

/* ---- storage and views ---- */

/* Zeroed, 64-byte aligned, never NULL (so views of empty matrices need no special case). */
static float *alloc_floats(size_t n) {
    size_t bytes = n * sizeof(float);
    ASSERT(n == 0 || bytes / n == sizeof(float));
    bytes = (bytes + 63) & ~(size_t)63;
    if (bytes == 0) bytes = 64;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0) {
        fprintf(stderr, "parnet: out of memory allocating %zu bytes\n", bytes);
        abort();
    }
    memset(p, 0, bytes);
    return p;
}

/* Zeroed storage for rows x cols floats on a device. */
static float *alloc_on(int rows, int cols, int device) {
    size_t n = (size_t)rows * (size_t)cols;
#if HAVE_CUDA
    if (device == MATRIX_GPU) {
        ASSERT(n == 0 || n * sizeof(float) / n == sizeof(float));
        float *p = cuda_malloc(n * sizeof(float));
        struct cuda_mat z = {p, rows, cols, cols};
        cuda_set_zero(z);
        return p;
    }
#endif
    ASSERT(device == MATRIX_CPU);
    float *p = alloc_floats(n);
    cpu_layer_new_storage(p, n); /* bf16 copies of memory freed before are void */
    return p;
}

static void free_on(float *p, int device) {
#if HAVE_CUDA
    if (device == MATRIX_GPU) {
        cuda_free(p);
        return;
    }
#endif
    ASSERT(device == MATRIX_CPU);
    free(p);
}

void matrix_init_on(struct matrix *m, int rows, int cols, int device) {
    ASSERT(rows >= 0 && cols >= 0);
    m->data = alloc_on(rows, cols, device);
    m->rows = rows;
    m->cols = cols;
    m->stride = cols;
    m->device = device;
    m->owns = 1;
}

void matrix_init(struct matrix *m, int rows, int cols) {
    matrix_init_on(m, rows, cols, matrix_default_device);
}

void matrix_release(struct matrix *m) {
    if (m->owns) free_on(m->data, m->device);
    memset(m, 0, sizeof *m);
}

void matrix_resize(struct matrix *m, int rows, int cols) {
    if (m->data && m->rows == rows && m->cols == cols) return;
    ASSERT(m->owns || !m->data); /* a view cannot change shape */
    int device = m->data ? m->device : matrix_default_device;
    matrix_release(m);
    matrix_init_on(m, rows, cols, device);
}

struct matrix matrix_view(const struct matrix *m, int row0, int num_rows, int col0, int num_cols) {
    ASSERT(row0 >= 0 && num_rows >= 0 && row0 + num_rows <= m->rows);
    ASSERT(col0 >= 0 && num_cols >= 0 && col0 + num_cols <= m->cols);
    struct matrix v = {m->data + (long)row0 * m->stride + col0, num_rows, num_cols, m->stride,
                       m->device, 0};
    return v;
}

struct matrix matrix_rows(const struct matrix *m, int row0, int num_rows) {
    return matrix_view(m, row0, num_rows, 0, m->cols);
}

struct matrix matrix_wrap(float *data, int rows, int cols, int stride, int device) {
    ASSERT(rows >= 0 && cols >= 0 && stride >= cols);
    ASSERT(data || (long)rows * cols == 0);
    struct matrix v = {data, rows, cols, stride, device, 0};
    return v;
}

void vector_init_on(struct vector *v, int dim, int device) {
    ASSERT(dim >= 0);
    v->data = alloc_on(1, dim, device);
    v->dim = dim;
    v->device = device;
    v->owns = 1;
}

void vector_init_like(struct vector *v, int dim, const struct vector *like) {
    vector_init_on(v, dim, like->device);
}

void vector_init(struct vector *v, int dim) {
    vector_init_on(v, dim, matrix_default_device);
}

void vector_release(struct vector *v) {
    if (v->owns) free_on(v->data, v->device);
    memset(v, 0, sizeof *v);
}

void vector_resize(struct vector *v, int dim) {
    if (v->data && v->dim == dim) return;
    ASSERT(v->owns || !v->data);
    int device = v->data ? v->device : matrix_default_device;
    vector_release(v);
    vector_init_on(v, dim, device);
}

struct vector vector_range(const struct vector *v, int offset, int dim) {
    ASSERT(offset >= 0 && dim >= 0 && offset + dim <= v->dim);
    struct vector r = {v->data + offset, dim, v->device, 0};
    return r;
}

struct vector vector_wrap(float *data, int dim, int device) {
    ASSERT(dim >= 0 && (data || dim == 0));
    struct vector r = {data, dim, device, 0};
    return r;
}

struct vector matrix_row(const struct matrix *m, int r) {
    ASSERT(r >= 0 && r < m->rows);
    struct vector v = {m->data + (long)r * m->stride, m->cols, m->device, 0};
    return v;
}

struct matrix matrix_from_vector(const struct vector *v, int rows, int cols) {
    ASSERT(rows >= 0 && cols >= 0 && (long)rows * cols == v->dim);
    struct matrix m = {v->data, rows, cols, cols, v->device, 0};
    return m;
}

struct vector vector_from_matrix(const struct matrix *m) {
    ASSERT(matrix_contiguous(m));
    long n = (long)m->rows * m->cols;
    ASSERT(n <= INT32_MAX);
    struct vector v = {m->data, (int)n, m->device, 0};
    return v;
}

/* ---- staging ---- */

static const struct matrix *stage(const struct matrix *src, struct matrix *staging, int device) {
    if (src->device == device) return src;
    if (!staging->data || staging->device != device || staging->rows != src->rows ||
        staging->cols != src->cols) {
        matrix_release(staging);
        matrix_init_on(staging, src->rows, src->cols, device);
    }
    matrix_copy(staging, src);
    return staging;
}

const struct matrix *matrix_on_default_device(const struct matrix *src, struct matrix *staging) {
    return stage(src, staging, matrix_default_device);
}

/* An empty matrix or vector needs no copy to be read on the host. */
const struct matrix *matrix_on_host(const struct matrix *src, struct matrix *staging) {
    if (src->rows == 0 || src->cols == 0) return src;
    return stage(src, staging, MATRIX_CPU);
}

const struct vector *vector_on_host(const struct vector *src, struct vector *staging) {
    if (src->device == MATRIX_CPU || src->dim == 0) return src;
    if (!staging->data || staging->device != MATRIX_CPU || staging->dim != src->dim) {
        vector_release(staging);
        vector_init_on(staging, src->dim, MATRIX_CPU);
    }
    vector_copy(staging, src);
    return staging;
}

/* ---- host transfer ---- */

void matrix_to_host(const struct matrix *m, float *dst) {
    struct cpu_mat h = {dst, m->rows, m->cols, m->cols};
    DISPATCH(GPU1(m), cuda_copy2d(dst, m->cols, 0, m->data, m->stride, 1, m->rows, m->cols),
             cpu_copy(h, KM(m)));
}

void matrix_from_host(struct matrix *m, const float *src) {
    struct cpu_mat h = {(float *)src, m->rows, m->cols, m->cols};
    DISPATCH(GPU1(m), cuda_copy2d(m->data, m->stride, 1, src, m->cols, 0, m->rows, m->cols),
             cpu_copy(KM(m), h));
}

void vector_to_host(const struct vector *v, float *dst) {
    struct cpu_mat h = {dst, 1, v->dim, v->dim};
    DISPATCH(GPU1(v), cuda_copy2d(dst, v->dim, 0, v->data, v->dim, 1, 1, v->dim),
             cpu_copy(h, KV(v)));
}

void vector_from_host(struct vector *v, const float *src) {
    struct cpu_mat h = {(float *)src, 1, v->dim, v->dim};
    DISPATCH(GPU1(v), cuda_copy2d(v->data, v->dim, 1, src, v->dim, 0, 1, v->dim),
             cpu_copy(KV(v), h));
}

/* Single elements go through the transfers above on a 1 x 1 view. */
float matrix_get(const struct matrix *m, int r, int c) {
    struct matrix e = matrix_view(m, r, 1, c, 1);
    float x;
    matrix_to_host(&e, &x);
    return x;
}

void matrix_set(struct matrix *m, int r, int c, float value) {
    struct matrix e = matrix_view(m, r, 1, c, 1);
    matrix_from_host(&e, &value);
}

float vector_get(const struct vector *v, int i) {
    struct vector e = vector_range(v, i, 1);
    float x;
    vector_to_host(&e, &x);
    return x;
}

void vector_set(struct vector *v, int i, float value) {
    struct vector e = vector_range(v, i, 1);
    vector_from_host(&e, &value);
}

/* ---- copies and fills ---- */

/* The one operation whose operands may live on different devices. */
void matrix_copy(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
    if (dst->data == src->data) return;
    DISPATCH(GPU_EITHER(dst, src),
             cuda_copy2d(dst->data, dst->stride, dst->device == MATRIX_GPU, src->data, src->stride,
                         src->device == MATRIX_GPU, dst->rows, dst->cols),
             cpu_copy(KM(dst), KM(src)));
}

void vector_copy(struct vector *dst, const struct vector *src) {
    ASSERT(dst->dim == src->dim);
    struct matrix d = matrix_from_vector(dst, 1, dst->dim);
    struct matrix s = matrix_from_vector(src, 1, src->dim);
    matrix_copy(&d, &s);
}

void matrix_copy_transposed(struct matrix *dst, const struct matrix *src) {
    ASSERT(dst->rows == src->cols && dst->cols == src->rows);
    ASSERT(dst->data != src->data || src->rows * src->cols == 0); /* not in place */
    DISPATCH(GPU2(dst, src), cuda_copy_transposed(CM(dst), CM(src)),
             cpu_copy_transposed(KM(dst), KM(src)));
}

void matrix_set_const(struct matrix *m, float value) {
    DISPATCH(GPU1(m), cuda_set_const(CM(m), value), cpu_set_const(KM(m), value));
}

void matrix_set_zero(struct matrix *m) {
    DISPATCH(GPU1(m), cuda_set_zero(CM(m)), cpu_set_zero(KM(m)));
}

void vector_set_zero(struct vector *v) {
    DISPATCH(GPU1(v), cuda_set_zero(CV(v)), cpu_set_zero(KV(v)));
}

void vector_set_const(struct vector *v, float value) {
    DISPATCH(GPU1(v), cuda_set_const(CV(v), value), cpu_set_const(KV(v), value));
}

/* Random fills are drawn on the host in row order whatever the device, so both devices get the
 * same values from the same seed; a GPU matrix is filled through a host copy. */
static inline void set_random_through_host(struct matrix *m, struct rng *r, int kind, float a,
                                           float b) {
    struct matrix h;
    matrix_init_on(&h, m->rows, m->cols, MATRIX_CPU);
    cpu_set_random(KM(&h), r, kind, a, b);
    matrix_copy(m, &h);
    matrix_release(&h);
}

void matrix_set_randn(struct matrix *m, struct rng *r, float stddev) {
    DISPATCH(GPU1(m), set_random_through_host(m, r, CPU_RANDN, stddev, 0),
             cpu_set_random(KM(m), r, CPU_RANDN, stddev, 0));
}

void matrix_set_bernoulli(struct matrix *m, struct rng *r, float keep, float scale) {
    ASSERT(keep >= 0.0f && keep <= 1.0f);
    DISPATCH(GPU1(m), set_random_through_host(m, r, CPU_BERNOULLI, keep, scale),
             cpu_set_random(KM(m), r, CPU_BERNOULLI, keep, scale));
}

void vector_set_randn(struct vector *v, struct rng *r, float stddev) {
    struct matrix m = matrix_from_vector(v, 1, v->dim);
    matrix_set_randn(&m, r, stddev);
}

/* ---- BLAS level 1 ---- */

void matrix_scale(struct matrix *m, float alpha) {
    DISPATCH(GPU1(m), cuda_scale(CM(m), alpha), cpu_scale(KM(m), alpha));
}

void matrix_add(struct matrix *m, float alpha, const struct matrix *a) {
    SAME_SHAPE(m, a);
    DISPATCH(GPU2(m, a), cuda_add(CM(m), alpha, CM(a)), cpu_add(KM(m), alpha, KM(a)));
}

void vector_scale(struct vector *v, float alpha) {
    DISPATCH(GPU1(v), cuda_scale(CV(v), alpha), cpu_scale(KV(v), alpha));
}

void vector_add(struct vector *v, float alpha, const struct vector *a) {
    ASSERT(v->dim == a->dim);
    DISPATCH(GPU2(v, a), cuda_add(CV(v), alpha, CV(a)), cpu_add(KV(v), alpha, KV(a)));
}

/* ---- reductions: one dispatch for all, the backends numbering them alike (matrix-internal.h);
 * a vector reduces as its 1 x dim view ---- */

static double reduce(int op, const struct matrix *a, const struct matrix *b) {
    return DISPATCH_VALUE(GPU2(a, b), cuda_reduce(op, CM(a), CM(b)), cpu_reduce(op, KM(a), KM(b)));
}

double vector_dot(const struct vector *a, const struct vector *b) {
    ASSERT(a->dim == b->dim);
    struct matrix ra = vector_as_row(a), rb = vector_as_row(b);
    return reduce(CPU_DOT, &ra, &rb);
}

double vector_sum(const struct vector *v) {
    struct matrix r = vector_as_row(v);
    return matrix_sum(&r);
}

double vector_norm2(const struct vector *v) {
    struct matrix r = vector_as_row(v);
    return matrix_frobenius_norm(&r);
}

int vector_is_finite(const struct vector *v) {
    struct matrix r = vector_as_row(v);
    return matrix_is_finite(&r);
}

double matrix_sum(const struct matrix *m) { return reduce(CPU_SUM, m, m); }

double matrix_frobenius_norm(const struct matrix *m) { return sqrt(reduce(CPU_SUM_SQ, m, m)); }

double matrix_trace_mat_mat(const struct matrix *a, const struct matrix *b, int trans_b) {
    if (trans_b == MATRIX_TRANS) { /* tr(A B^T) = sum_ij A_ij B_ij */
        SAME_SHAPE(a, b);
        return reduce(CPU_DOT, a, b);
    }
    ASSERT(a->rows == b->cols && a->cols == b->rows);
    return reduce(CPU_DOT_TRANS, a, b);
}

double matrix_trace(const struct matrix *m) {
    ASSERT(m->rows == m->cols);
    return reduce(CPU_TRACE, m, m);
}

int matrix_is_finite(const struct matrix *m) { return reduce(CPU_NONFINITE, m, m) == 0.0; }

/* ---- BLAS level 2 and 3 ---- */

void matrix_add_mat_mat(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                        const struct matrix *b, int trans_b, float beta) {
    matrix_check_product(c, a, trans_a, b, trans_b);
    DISPATCH(GPU3(c, a, b), cuda_gemm(CM(c), alpha, CM(a), trans_a, CM(b), trans_b, beta),
             cpu_gemm(KM(c), alpha, KM(a), trans_a, KM(b), trans_b, beta));
}

void matrix_sym_add_mat_mat(struct matrix *c, float alpha, const struct matrix *a, int trans,
                            float beta) {
    ASSERT(trans == MATRIX_NO_TRANS || trans == MATRIX_TRANS);
    int n = trans == MATRIX_TRANS ? a->cols : a->rows;
    ASSERT(c->rows == n && c->cols == n);
    ASSERT(n == 0 || c->data != a->data);
    DISPATCH(GPU2(c, a), cuda_syrk(CM(c), alpha, CM(a), trans, beta),
             cpu_syrk(KM(c), alpha, KM(a), trans, beta));
}

void vector_add_mat_vec(struct vector *y, float alpha, const struct matrix *m, int trans,
                        const struct vector *x, float beta) {
    ASSERT(trans == MATRIX_NO_TRANS || trans == MATRIX_TRANS);
    int out = trans == MATRIX_TRANS ? m->cols : m->rows;
    int in = trans == MATRIX_TRANS ? m->rows : m->cols;
    ASSERT(y->dim == out && x->dim == in);
    ASSERT(out == 0 || y->data != x->data);
    DISPATCH(GPU3(y, m, x), cuda_gemv(y->data, alpha, CM(m), trans, x->data, beta),
             cpu_gemv(y->data, alpha, KM(m), trans, x->data, beta));
}

void matrix_add_vec_vec(struct matrix *m, float alpha, const struct vector *a,
                        const struct vector *b) {
    ASSERT(a->dim == m->rows && b->dim == m->cols);
    DISPATCH(GPU3(m, a, b), cuda_ger(CM(m), alpha, a->data, b->data),
             cpu_ger(KM(m), alpha, a->data, b->data));
}

void matrix_set_rows(struct matrix *m, const struct vector *v) {
    ASSERT(v->dim == m->cols);
    DISPATCH(GPU2(m, v), (cuda_set_zero(CM(m)), cuda_add_vec_to_rows(CM(m), 1, v->data)),
             cpu_set_rows(KM(m), v->data));
}

void matrix_add_vec_to_rows(struct matrix *m, float alpha, const struct vector *v) {
    ASSERT(v->dim == m->cols);
    DISPATCH(GPU2(m, v), cuda_add_vec_to_rows(CM(m), alpha, v->data),
             cpu_add_vec_to_rows(KM(m), alpha, v->data));
}

void vector_add_row_sums(struct vector *v, float alpha, const struct matrix *m, float beta) {
    ASSERT(v->dim == m->cols);
    DISPATCH(GPU2(v, m), cuda_add_row_sums(v->data, alpha, CM(m), beta),
             cpu_add_row_sums(v->data, alpha, KM(m), beta));
}

void vector_add_col_sums(struct vector *v, float alpha, const struct matrix *m, float beta) {
    ASSERT(v->dim == m->rows);
    DISPATCH(GPU2(v, m), cuda_add_col_sums(v->data, alpha, CM(m), beta),
             cpu_add_col_sums(v->data, alpha, KM(m), beta));
}
