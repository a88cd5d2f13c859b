/* matrix: storage, views, copies, fills, BLAS level 1-3 (OpenBLAS cblas_*; with CUDA=1, GPU
 * operands go to src/cuda/). */
#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorises only loops needing no epilogue; these loops need one. */
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/matrix-internal.h"

/* Declared here so that no particular cblas.h flavour is needed. */
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

int matrix_default_device = MATRIX_CPU;

const char *matrix_blas_kernel(void) { return openblas_get_corename(); }

/* parnet splits its CPU work itself (split_rows, split_gemm) over n threads and keeps OpenBLAS
 * single-threaded: then the elementwise passes and the thin natural-gradient products run on every
 * core too, not just the large products. */
void matrix_set_num_threads(int n) {
    if (n > 0) {
        parallel_set_threads(n);
        openblas_set_num_threads(1);
    }
    /* OpenBLAS 0.3.21 (Debian 12) does not know recent Xeons and falls back to its generic
     * "Prescott" kernels, about 4x slower than its AVX-512 ones on these machines. The kernel is
     * chosen when the library loads, from OPENBLAS_CORETYPE, so all we can do is say so. */
    static int warned;
    if (!warned && !getenv("OPENBLAS_CORETYPE") && !strcmp(openblas_get_corename(), "Prescott") &&
        (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx512f"))) {
        warned = 1;
        WARN("OpenBLAS chose its generic Prescott kernels on a CPU with %s; set "
             "OPENBLAS_CORETYPE=%s (the recipes' path.sh does) for about 4x faster matrix products",
             __builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2",
             __builtin_cpu_supports("avx512f") ? "SKYLAKEX" : "HASWELL");
    }
}

/* ---- splitting CPU work over the pool ---- */

struct split_job {
    rows_fn fn;
    struct matrix *a;
    const struct matrix *b, *c;
    const void *extra;
    double (*sum_fn)(const struct matrix *, const struct matrix *);
    double partial[PARALLEL_MAX_THREADS];
};

static int split_worth(const struct matrix *a, const struct matrix *b, const struct matrix *c) {
    long elems = (long)a->rows * a->cols;
    if (b && (long)b->rows * b->cols > elems) elems = (long)b->rows * b->cols;
    if (c && (long)c->rows * c->cols > elems) elems = (long)c->rows * c->cols;
    return parallel_threads() > 1 && a->rows > 1 && elems >= SPLIT_MIN_ELEMS;
}

static void split_task(void *p, int t, int num) {
    struct split_job *j = p;
    int r0, r1;
    parallel_part(j->a->rows, t, num, 1, &r0, &r1);
    struct matrix a = matrix_rows(j->a, r0, r1 - r0), b, c;
    if (j->b) b = matrix_rows(j->b, r0, r1 - r0);
    if (j->c) c = matrix_rows(j->c, r0, r1 - r0);
    if (j->sum_fn)
        j->partial[t] = r1 > r0 ? j->sum_fn(&a, j->b ? &b : NULL) : 0.0;
    else if (r1 > r0)
        j->fn(&a, j->b ? &b : NULL, j->c ? &c : NULL, j->extra);
}

int split_rows(rows_fn fn, struct matrix *a, const struct matrix *b, const struct matrix *c,
               const void *extra) {
    if (!split_worth(a, b, c)) return 0;
    struct split_job j = {.fn = fn, .a = a, .b = b, .c = c, .extra = extra};
    parallel_run(split_task, &j);
    return 1;
}

double split_sum_rows(double (*fn)(const struct matrix *a, const struct matrix *b),
                      const struct matrix *a, const struct matrix *b) {
    int num = parallel_threads();
    if (!split_worth(a, b, NULL)) return fn(a, b);
    struct split_job j = {.a = (struct matrix *)a, .b = b, .sum_fn = fn};
    for (int t = 0; t < num; t++) j.partial[t] = 0;
    parallel_run(split_task, &j);
    double s = 0;
    for (int t = 0; t < num; t++) s += j.partial[t];
    return s;
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
    return alloc_floats(n);
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

/* ---- host transfer ---- */

void matrix_to_host(const struct matrix *m, float *dst) {
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_copy2d(dst, m->cols, 0, m->data, m->stride, 1, m->rows, m->cols);
        return;
    }
#endif
    ON_CPU(m);
    for (int r = 0; r < m->rows; r++)
        memcpy(dst + (long)r * m->cols, m->data + (long)r * m->stride, m->cols * sizeof(float));
}

void matrix_from_host(struct matrix *m, const float *src) {
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_copy2d(m->data, m->stride, 1, src, m->cols, 0, m->rows, m->cols);
        return;
    }
#endif
    ON_CPU(m);
    for (int r = 0; r < m->rows; r++)
        memcpy(m->data + (long)r * m->stride, src + (long)r * m->cols, m->cols * sizeof(float));
}

void vector_to_host(const struct vector *v, float *dst) {
#if HAVE_CUDA
    if (GPU1(v)) {
        cuda_copy2d(dst, v->dim, 0, v->data, v->dim, 1, 1, v->dim);
        return;
    }
#endif
    ON_CPU(v);
    if (v->dim) memcpy(dst, v->data, v->dim * sizeof(float));
}

void vector_from_host(struct vector *v, const float *src) {
#if HAVE_CUDA
    if (GPU1(v)) {
        cuda_copy2d(v->data, v->dim, 1, src, v->dim, 0, 1, v->dim);
        return;
    }
#endif
    ON_CPU(v);
    if (v->dim) memcpy(v->data, src, v->dim * sizeof(float));
}

float matrix_get(const struct matrix *m, int r, int c) {
    ASSERT(r >= 0 && r < m->rows && c >= 0 && c < m->cols);
#if HAVE_CUDA
    if (GPU1(m)) {
        float x;
        cuda_copy2d(&x, 1, 0, m->data + (long)r * m->stride + c, 1, 1, 1, 1);
        return x;
    }
#endif
    ON_CPU(m);
    return m->data[(long)r * m->stride + c];
}

void matrix_set(struct matrix *m, int r, int c, float value) {
    ASSERT(r >= 0 && r < m->rows && c >= 0 && c < m->cols);
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_copy2d(m->data + (long)r * m->stride + c, 1, 1, &value, 1, 0, 1, 1);
        return;
    }
#endif
    ON_CPU(m);
    m->data[(long)r * m->stride + c] = value;
}

float vector_get(const struct vector *v, int i) {
    ASSERT(i >= 0 && i < v->dim);
#if HAVE_CUDA
    if (GPU1(v)) {
        float x;
        cuda_copy2d(&x, 1, 0, v->data + i, 1, 1, 1, 1);
        return x;
    }
#endif
    ON_CPU(v);
    return v->data[i];
}

void vector_set(struct vector *v, int i, float value) {
    ASSERT(i >= 0 && i < v->dim);
#if HAVE_CUDA
    if (GPU1(v)) {
        cuda_copy2d(v->data + i, 1, 1, &value, 1, 0, 1, 1);
        return;
    }
#endif
    ON_CPU(v);
    v->data[i] = value;
}

/* ---- copies and fills ---- */

static void copy_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                      const void *x) {
    matrix_copy(a, b);
}

void matrix_copy(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
#if HAVE_CUDA
    if (dst->device == MATRIX_GPU || src->device == MATRIX_GPU) { /* any pair of devices */
        if (dst->data == src->data) return;
        cuda_copy2d(dst->data, dst->stride, dst->device == MATRIX_GPU, src->data, src->stride,
                    src->device == MATRIX_GPU, dst->rows, dst->cols);
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (dst->data == src->data) return;
    if (split_rows(copy_part, dst, src, NULL, NULL)) return;
    struct segs s = segs_of(dst, src, NULL);
    for (long i = 0; i < s.n; i++)
        memmove(seg_ptr(dst, i), seg_ptr(src, i), s.len * sizeof(float));
}

void matrix_copy_transposed(struct matrix *dst, const struct matrix *src) {
    ASSERT(dst->rows == src->cols && dst->cols == src->rows);
    ASSERT(dst->data != src->data || src->rows * src->cols == 0); /* not in place */
#if HAVE_CUDA
    if (GPU2(dst, src)) {
        cuda_copy_transposed(CM(dst), CM(src));
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    /* Blocks of 32 x 32 keep both sides in cache. */
    const int bs = 32;
    for (int r0 = 0; r0 < src->rows; r0 += bs) {
        int r1 = r0 + bs < src->rows ? r0 + bs : src->rows;
        for (int c0 = 0; c0 < src->cols; c0 += bs) {
            int c1 = c0 + bs < src->cols ? c0 + bs : src->cols;
            for (int r = r0; r < r1; r++) {
                const float *s = src->data + (long)r * src->stride;
                for (int c = c0; c < c1; c++) dst->data[(long)c * dst->stride + r] = s[c];
            }
        }
    }
}

void matrix_set_const(struct matrix *m, float value) {
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_set_const(CM(m), value);
        return;
    }
#endif
    ON_CPU(m);
    struct segs s = segs_of(m, NULL, NULL);
    for (long i = 0; i < s.n; i++) {
        float *p = seg_ptr(m, i);
        for (long j = 0; j < s.len; j++) p[j] = value;
    }
}

static void set_zero_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                          const void *x) {
    matrix_set_zero(a);
}

void matrix_set_zero(struct matrix *m) {
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_set_zero(CM(m));
        return;
    }
#endif
    ON_CPU(m);
    if (split_rows(set_zero_part, m, NULL, NULL, NULL)) return;
    struct segs s = segs_of(m, NULL, NULL);
    for (long i = 0; i < s.n; i++) memset(seg_ptr(m, i), 0, s.len * sizeof(float));
}

void matrix_set_randn(struct matrix *m, struct rng *r, float stddev) {
#if HAVE_CUDA
    if (GPU1(m)) { /* drawn on the host in the same order, so both devices get the same values */
        long n = (long)m->rows * m->cols;
        float *h = xmalloc((size_t)(n + 1) * sizeof *h);
        for (long i = 0; i < n; i++) h[i] = stddev * rng_gauss(r);
        matrix_from_host(m, h);
        free(h);
        return;
    }
#endif
    ON_CPU(m);
    for (int i = 0; i < m->rows; i++) {
        float *p = m->data + (long)i * m->stride;
        for (int j = 0; j < m->cols; j++) p[j] = stddev * rng_gauss(r);
    }
}

void vector_copy(struct vector *dst, const struct vector *src) {
    ASSERT(dst->dim == src->dim);
#if HAVE_CUDA
    if (dst->device == MATRIX_GPU || src->device == MATRIX_GPU) { /* any pair of devices */
        if (dst->data != src->data)
            cuda_copy2d(dst->data, dst->dim, dst->device == MATRIX_GPU, src->data, src->dim,
                        src->device == MATRIX_GPU, 1, dst->dim);
        return;
    }
#endif
    ON_CPU(dst);
    ON_CPU(src);
    if (dst->data != src->data && dst->dim)
        memmove(dst->data, src->data, dst->dim * sizeof(float));
}

void vector_set_zero(struct vector *v) {
#if HAVE_CUDA
    if (GPU1(v)) {
        cuda_set_zero(CV(v));
        return;
    }
#endif
    ON_CPU(v);
    if (v->dim) memset(v->data, 0, v->dim * sizeof(float));
}

void vector_set_const(struct vector *v, float value) {
#if HAVE_CUDA
    if (GPU1(v)) {
        cuda_set_const(CV(v), value);
        return;
    }
#endif
    ON_CPU(v);
    for (int i = 0; i < v->dim; i++) v->data[i] = value;
}

void vector_set_randn(struct vector *v, struct rng *r, float stddev) {
#if HAVE_CUDA
    if (GPU1(v)) { /* drawn on the host, as matrix_set_randn */
        float *h = xmalloc((size_t)(v->dim + 1) * sizeof *h);
        for (int i = 0; i < v->dim; i++) h[i] = stddev * rng_gauss(r);
        vector_from_host(v, h);
        free(h);
        return;
    }
#endif
    ON_CPU(v);
    for (int i = 0; i < v->dim; i++) v->data[i] = stddev * rng_gauss(r);
}

/* ---- BLAS level 1 ---- */

static void scale_part(struct matrix *a, const struct matrix *b, const struct matrix *c,
                       const void *alpha) {
    matrix_scale(a, *(const float *)alpha);
}

void matrix_scale(struct matrix *m, float alpha) {
#if HAVE_CUDA
    if (GPU1(m)) {
        cuda_scale(CM(m), alpha);
        return;
    }
#endif
    ON_CPU(m);
    if (split_rows(scale_part, m, NULL, NULL, &alpha)) return;
    struct segs s = segs_of(m, NULL, NULL);
    for (long i = 0; i < s.n; i++) {
        float *p = seg_ptr(m, i);
        if (alpha == 0.0f) memset(p, 0, s.len * sizeof(float)); /* BLAS: 0 * NaN = 0 */
        else for (long j = 0; j < s.len; j++) p[j] *= alpha;
    }
}

static void add_part(struct matrix *m, const struct matrix *a, const struct matrix *c,
                     const void *alpha) {
    matrix_add(m, *(const float *)alpha, a);
}

void matrix_add(struct matrix *m, float alpha, const struct matrix *a) {
    SAME_SHAPE(m, a);
#if HAVE_CUDA
    if (GPU2(m, a)) {
        cuda_add(CM(m), alpha, CM(a));
        return;
    }
#endif
    ON_CPU(m);
    ON_CPU(a);
    if (split_rows(add_part, m, a, NULL, &alpha)) return;
    struct segs s = segs_of(m, a, NULL);
    for (long i = 0; i < s.n; i++) {
        float *p = seg_ptr(m, i);
        const float *q = seg_ptr(a, i);
        for (long j = 0; j < s.len; j++) p[j] += alpha * q[j];
    }
}

void vector_scale(struct vector *v, float alpha) {
#if HAVE_CUDA
    if (GPU1(v)) {
        cuda_scale(CV(v), alpha);
        return;
    }
#endif
    ON_CPU(v);
    if (alpha == 0.0f) vector_set_zero(v);
    else for (int i = 0; i < v->dim; i++) v->data[i] *= alpha;
}

void vector_add(struct vector *v, float alpha, const struct vector *a) {
    ASSERT(v->dim == a->dim);
#if HAVE_CUDA
    if (GPU2(v, a)) {
        cuda_add(CV(v), alpha, CV(a));
        return;
    }
#endif
    ON_CPU(v);
    ON_CPU(a);
    float *p = v->data;
    const float *q = a->data;
    for (int i = 0; i < v->dim; i++) p[i] += alpha * q[i];
}

double vector_dot(const struct vector *a, const struct vector *b) {
    ASSERT(a->dim == b->dim);
#if HAVE_CUDA
    if (GPU2(a, b)) return cuda_reduce(CUDA_DOT, CV(a), CV(b));
#endif
    ON_CPU(a);
    ON_CPU(b);
    return dot_f64(a->data, b->data, a->dim);
}

double vector_sum(const struct vector *v) {
#if HAVE_CUDA
    if (GPU1(v)) return cuda_reduce(CUDA_SUM, CV(v), CV(v));
#endif
    ON_CPU(v);
    return sum_f64(v->data, v->dim);
}

double vector_norm2(const struct vector *v) {
#if HAVE_CUDA
    if (GPU1(v)) return sqrt(cuda_reduce(CUDA_SUM_SQ, CV(v), CV(v)));
#endif
    ON_CPU(v);
    return sqrt(dot_f64(v->data, v->data, v->dim));
}

double matrix_sum(const struct matrix *m) {
#if HAVE_CUDA
    if (GPU1(m)) return cuda_reduce(CUDA_SUM, CM(m), CM(m));
#endif
    ON_CPU(m);
    struct segs s = segs_of(m, NULL, NULL);
    double t = 0;
    for (long i = 0; i < s.n; i++) t += sum_f64(seg_ptr(m, i), s.len);
    return t;
}

static double sum_sq_cpu(const struct matrix *m, const struct matrix *unused) {
    struct segs s = segs_of(m, NULL, NULL);
    double t = 0;
    for (long i = 0; i < s.n; i++) t += dot_f64(seg_ptr(m, i), seg_ptr(m, i), s.len);
    return t;
}

double matrix_frobenius_norm(const struct matrix *m) {
#if HAVE_CUDA
    if (GPU1(m)) return sqrt(cuda_reduce(CUDA_SUM_SQ, CM(m), CM(m)));
#endif
    ON_CPU(m);
    return sqrt(split_sum_rows(sum_sq_cpu, m, NULL));
}

double matrix_trace_mat_mat(const struct matrix *a, const struct matrix *b, int trans_b) {
#if HAVE_CUDA
    if (GPU2(a, b)) {
        if (trans_b == MATRIX_TRANS) {
            SAME_SHAPE(a, b);
            return cuda_reduce(CUDA_DOT, CM(a), CM(b));
        }
        ASSERT(a->rows == b->cols && a->cols == b->rows);
        return cuda_reduce(CUDA_DOT_TRANS, CM(a), CM(b));
    }
#endif
    ON_CPU(a);
    ON_CPU(b);
    double t = 0;
    if (trans_b == MATRIX_TRANS) { /* tr(A B^T) = sum_ij A_ij B_ij */
        SAME_SHAPE(a, b);
        struct segs s = segs_of(a, b, NULL);
        for (long i = 0; i < s.n; i++) t += dot_f64(seg_ptr(a, i), seg_ptr(b, i), s.len);
    } else { /* tr(A B) = sum_ij A_ij B_ji */
        ASSERT(a->rows == b->cols && a->cols == b->rows);
        for (int i = 0; i < a->rows; i++) {
            const float *p = a->data + (long)i * a->stride;
            const float *q = b->data + i;
            for (int j = 0; j < a->cols; j++) t += (double)p[j] * q[(long)j * b->stride];
        }
    }
    return t;
}

double matrix_trace(const struct matrix *m) {
    ASSERT(m->rows == m->cols);
#if HAVE_CUDA
    if (GPU1(m)) return cuda_reduce(CUDA_TRACE, CM(m), CM(m));
#endif
    ON_CPU(m);
    double t = 0;
    for (int i = 0; i < m->rows; i++) t += m->data[(long)i * m->stride + i];
    return t;
}

/* x - x is 0 for finite x and NaN for inf/NaN; the int reduction vectorises. */
static int floats_finite(const float *p, long n) {
    int bad = 0;
    for (long i = 0; i < n; i++) bad |= !(p[i] - p[i] == 0.0f);
    return !bad;
}

int matrix_is_finite(const struct matrix *m) {
#if HAVE_CUDA
    if (GPU1(m)) return cuda_reduce(CUDA_NONFINITE, CM(m), CM(m)) == 0.0;
#endif
    ON_CPU(m);
    struct segs s = segs_of(m, NULL, NULL);
    for (long i = 0; i < s.n; i++)
        if (!floats_finite(seg_ptr(m, i), s.len)) return 0;
    return 1;
}

int vector_is_finite(const struct vector *v) {
#if HAVE_CUDA
    if (GPU1(v)) return cuda_reduce(CUDA_NONFINITE, CV(v), CV(v)) == 0.0;
#endif
    ON_CPU(v);
    return floats_finite(v->data, v->dim);
}

/* ---- BLAS level 2 and 3 ---- */

static enum CBLAS_TRANSPOSE cblas_trans(int t) {
    ASSERT(t == MATRIX_NO_TRANS || t == MATRIX_TRANS);
    return t == MATRIX_TRANS ? CblasTrans : CblasNoTrans;
}

/* BLAS wants ld >= max(1, cols); a view's stride is >= cols but may be 0 for 0 columns. */
static int ld_of(const struct matrix *m) {
    return m->stride > 1 ? m->stride : 1;
}

/* One single-threaded sgemm per share of C's rows (by_rows) or columns. */
struct gemm_job {
    enum CBLAS_TRANSPOSE ta, tb;
    int m, n, k;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int lda, ldb, ldc, by_rows;
};
enum { GEMM_SPLIT_ALIGN = 16 };
#define GEMM_SPLIT_MIN_MNK (1 << 20)

static void gemm_part(void *p, int t, int num) {
    const struct gemm_job *g = p;
    int lo, hi;
    parallel_part(g->by_rows ? g->m : g->n, t, num, GEMM_SPLIT_ALIGN, &lo, &hi);
    if (lo >= hi) return;
    if (g->by_rows) { /* rows lo..hi of C are those of op(A) */
        const float *a = g->ta == CblasNoTrans ? g->a + (long)lo * g->lda : g->a + lo;
        cblas_sgemm(CblasRowMajor, g->ta, g->tb, hi - lo, g->n, g->k, g->alpha, a, g->lda, g->b,
                    g->ldb, g->beta, g->c + (long)lo * g->ldc, g->ldc);
    } else { /* columns lo..hi of C are those of op(B) */
        const float *b = g->tb == CblasNoTrans ? g->b + lo : g->b + (long)lo * g->ldb;
        cblas_sgemm(CblasRowMajor, g->ta, g->tb, g->m, hi - lo, g->k, g->alpha, g->a, g->lda, b,
                    g->ldb, g->beta, g->c + lo, g->ldc);
    }
}

void matrix_add_mat_mat(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                        const struct matrix *b, int trans_b, float beta) {
    int m = trans_a == MATRIX_TRANS ? a->cols : a->rows;
    int k = trans_a == MATRIX_TRANS ? a->rows : a->cols;
    int kb = trans_b == MATRIX_TRANS ? b->cols : b->rows;
    int n = trans_b == MATRIX_TRANS ? b->rows : b->cols;
    ASSERT(k == kb && c->rows == m && c->cols == n);
    ASSERT(trans_a == MATRIX_NO_TRANS || trans_a == MATRIX_TRANS);
    ASSERT(trans_b == MATRIX_NO_TRANS || trans_b == MATRIX_TRANS);
#if HAVE_CUDA
    if (GPU3(c, a, b)) {
        ASSERT(m == 0 || n == 0 || (c->data != a->data && c->data != b->data));
        cuda_gemm(CM(c), alpha, CM(a), trans_a, CM(b), trans_b, beta);
        return;
    }
#endif
    ON_CPU(c);
    ON_CPU(a);
    ON_CPU(b);
    if (m == 0 || n == 0) return;
    ASSERT(c->data != a->data && c->data != b->data); /* BLAS forbids aliasing the output */
    if (k == 0) {
        if (beta != 1.0f) matrix_scale(c, beta);
        return;
    }
    struct gemm_job g = {cblas_trans(trans_a), cblas_trans(trans_b), m, n, k, alpha, beta,
                         a->data, b->data, c->data, ld_of(a), ld_of(b), ld_of(c), m >= n};
    /* Split over the pool along C's longer side when each part is still a good product. */
    if (parallel_threads() > 1 && (double)m * n * k >= GEMM_SPLIT_MIN_MNK &&
        (g.by_rows ? m : n) >= 2 * GEMM_SPLIT_ALIGN)
        parallel_run(gemm_part, &g);
    else
        gemm_part(&g, 0, 1);
}

void matrix_sym_add_mat_mat(struct matrix *c, float alpha, const struct matrix *a, int trans,
                            float beta) {
    int n = trans == MATRIX_TRANS ? a->cols : a->rows;
    ASSERT(c->rows == n && c->cols == n);
#if HAVE_CUDA
    if (GPU2(c, a)) {
        ASSERT(trans == MATRIX_NO_TRANS || trans == MATRIX_TRANS);
        ASSERT(n == 0 || c->data != a->data);
        cuda_syrk(CM(c), alpha, CM(a), trans, beta);
        return;
    }
#endif
    ON_CPU(c);
    ON_CPU(a);
    int k = trans == MATRIX_TRANS ? a->rows : a->cols;
    if (n == 0) return;
    ASSERT(c->data != a->data);
    if (k == 0) {
        if (beta != 1.0f) matrix_scale(c, beta);
        return;
    }
    cblas_ssyrk(CblasRowMajor, CblasLower, cblas_trans(trans), n, k, alpha, a->data, ld_of(a),
                beta, c->data, ld_of(c));
    /* ssyrk wrote the lower triangle only; mirror it. */
    for (int i = 0; i < n; i++) {
        const float *row = c->data + (long)i * c->stride;
        for (int j = 0; j < i; j++) c->data[(long)j * c->stride + i] = row[j];
    }
}

void vector_add_mat_vec(struct vector *y, float alpha, const struct matrix *m, int trans,
                        const struct vector *x, float beta) {
    int out = trans == MATRIX_TRANS ? m->cols : m->rows;
    int in = trans == MATRIX_TRANS ? m->rows : m->cols;
    ASSERT(y->dim == out && x->dim == in);
#if HAVE_CUDA
    if (GPU3(y, m, x)) {
        ASSERT(trans == MATRIX_NO_TRANS || trans == MATRIX_TRANS);
        ASSERT(out == 0 || y->data != x->data);
        cuda_gemv(y->data, alpha, CM(m), trans, x->data, beta);
        return;
    }
#endif
    ON_CPU(y);
    ON_CPU(m);
    ON_CPU(x);
    if (out == 0) return;
    ASSERT(y->data != x->data);
    if (in == 0) {
        if (beta != 1.0f) vector_scale(y, beta);
        return;
    }
    cblas_sgemv(CblasRowMajor, cblas_trans(trans), m->rows, m->cols, alpha, m->data, ld_of(m),
                x->data, 1, beta, y->data, 1);
}

void matrix_add_vec_vec(struct matrix *m, float alpha, const struct vector *a,
                        const struct vector *b) {
    ASSERT(a->dim == m->rows && b->dim == m->cols);
#if HAVE_CUDA
    if (GPU3(m, a, b)) {
        cuda_ger(CM(m), alpha, a->data, b->data);
        return;
    }
#endif
    ON_CPU(m);
    ON_CPU(a);
    ON_CPU(b);
    if (m->rows == 0 || m->cols == 0) return;
    cblas_sger(CblasRowMajor, m->rows, m->cols, alpha, a->data, 1, b->data, 1, m->data, ld_of(m));
}

static void set_rows_part(struct matrix *m, const struct matrix *b, const struct matrix *c,
                          const void *v) {
    matrix_set_rows(m, v);
}

void matrix_set_rows(struct matrix *m, const struct vector *v) {
    ASSERT(v->dim == m->cols);
#if HAVE_CUDA
    if (GPU2(m, v)) {
        cuda_set_zero(CM(m));
        cuda_add_vec_to_rows(CM(m), 1, v->data);
        return;
    }
#endif
    ON_CPU(m);
    ON_CPU(v);
    if (split_rows(set_rows_part, m, NULL, NULL, v)) return;
    for (int r = 0; r < m->rows; r++)
        memcpy(m->data + (long)r * m->stride, v->data, (size_t)m->cols * sizeof(float));
}

struct vec_arg {
    float alpha;
    const struct vector *v;
};

static void add_vec_to_rows_part(struct matrix *m, const struct matrix *b, const struct matrix *c,
                                 const void *x) {
    const struct vec_arg *arg = x;
    matrix_add_vec_to_rows(m, arg->alpha, arg->v);
}

void matrix_add_vec_to_rows(struct matrix *m, float alpha, const struct vector *v) {
    ASSERT(v->dim == m->cols);
#if HAVE_CUDA
    if (GPU2(m, v)) {
        cuda_add_vec_to_rows(CM(m), alpha, v->data);
        return;
    }
#endif
    ON_CPU(m);
    ON_CPU(v);
    struct vec_arg arg = {alpha, v};
    if (split_rows(add_vec_to_rows_part, m, NULL, NULL, &arg)) return;
    const float *q = v->data;
    for (int r = 0; r < m->rows; r++) {
        float *p = m->data + (long)r * m->stride;
        for (int c = 0; c < m->cols; c++) p[c] += alpha * q[c];
    }
}

struct row_sums_job {
    struct vector *v;
    float alpha;
    const struct matrix *m;
    float beta;
};

static void row_sums_part(void *p, int t, int num) {
    const struct row_sums_job *j = p;
    int c0, c1;
    parallel_part(j->m->cols, t, num, 16, &c0, &c1);
    if (c0 == c1) return;
    struct vector v = vector_range(j->v, c0, c1 - c0);
    struct matrix m = matrix_view(j->m, 0, j->m->rows, c0, c1 - c0);
    vector_add_row_sums(&v, j->alpha, &m, j->beta);
}

void vector_add_row_sums(struct vector *v, float alpha, const struct matrix *m, float beta) {
    ASSERT(v->dim == m->cols);
#if HAVE_CUDA
    if (GPU2(v, m)) {
        cuda_add_row_sums(v->data, alpha, CM(m), beta);
        return;
    }
#endif
    ON_CPU(v);
    ON_CPU(m);
    if (parallel_threads() > 1 && m->cols >= 64 && (long)m->rows * m->cols >= SPLIT_MIN_ELEMS) {
        struct row_sums_job j = {v, alpha, m, beta}; /* by columns: no partial sums to merge */
        parallel_run(row_sums_part, &j);
        return;
    }
    int n = m->cols;
    double *acc = xcalloc(n > 0 ? n : 1, sizeof *acc);
    for (int r = 0; r < m->rows; r++) {
        const float *p = m->data + (long)r * m->stride;
        for (int c = 0; c < n; c++) acc[c] += p[c];
    }
    for (int c = 0; c < n; c++)
        v->data[c] = (float)(alpha * acc[c] + (beta == 0.0f ? 0.0 : (double)beta * v->data[c]));
    free(acc);
}

void vector_add_col_sums(struct vector *v, float alpha, const struct matrix *m, float beta) {
    ASSERT(v->dim == m->rows);
#if HAVE_CUDA
    if (GPU2(v, m)) {
        cuda_add_col_sums(v->data, alpha, CM(m), beta);
        return;
    }
#endif
    ON_CPU(v);
    ON_CPU(m);
    for (int r = 0; r < m->rows; r++) {
        double s = sum_f64(m->data + (long)r * m->stride, m->cols);
        v->data[r] = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * v->data[r]));
    }
}
