/* GPU tests for matrix (and natgrad through it): every operation runs on the CPU and on the GPU
 * from the same random inputs, and the results must agree to TOL relative (|gpu - cpu| <=
 * TOL * max(1, |cpu|), inputs are O(1)). Operands are owned matrices or views with
 * stride != cols inside a larger matrix whose border holds SENTINEL; the whole owner is compared,
 * so a write outside a view is caught too. The CPU results themselves are checked against naive
 * loops by matrix-test.
 *
 * Without a GPU (none visible, or built without CUDA) only device selection is checked, and the
 * line "SKIP matrix-gpu: no GPU (...)" says that nothing else ran. */
#include "matrix/matrix.h"
#include "natgrad/natgrad.h"
#include "test.h"
#include "gpu-compare.h"

#include <stdlib.h>

#define TOL 1e-4
#define SENTINEL 1234.5f
#define CALL(x) \
    do { \
        x; \
        if (test_failed_now) return; \
    } while (0)

static struct rng rng;
static int have_gpu;
static char no_gpu_reason[600];

/* Scalars: relative to max(1, |cpu|). */
#define CHECK_SCALAR(g, c, tol) CHECK_NEAR((g), (c), (tol))

/* ---- operand pairs: the same values on both devices, laid out alike ---- */

struct mpair {
    struct matrix cown, gown; /* owners */
    struct matrix c, g;       /* the operands (views or the owners themselves) */
};

static void mpair_init(struct mpair *p, int rows, int cols, int view) {
    int orows = view ? rows + 3 : rows, ocols = view ? cols + 5 : cols;
    matrix_init_on(&p->cown, orows, ocols, MATRIX_CPU);
    matrix_init_on(&p->gown, orows, ocols, MATRIX_GPU);
    if (view) {
        matrix_set_const(&p->cown, SENTINEL);
        p->c = matrix_view(&p->cown, 1, rows, 2, cols);
        p->g = matrix_view(&p->gown, 1, rows, 2, cols);
    } else {
        p->c = matrix_view(&p->cown, 0, rows, 0, cols);
        p->g = matrix_view(&p->gown, 0, rows, 0, cols);
    }
    matrix_set_randn(&p->c, &rng, 1.0f);
    matrix_copy(&p->gown, &p->cown); /* host -> device, whole owner */
}

/* Overwrite both with the same new values, scaled. */
static void mpair_randn(struct mpair *p, float stddev) {
    matrix_set_randn(&p->c, &rng, stddev);
    matrix_copy(&p->g, &p->c);
}

static void mpair_release(struct mpair *p) {
    matrix_release(&p->cown);
    matrix_release(&p->gown);
}

#define CHECK_PAIR(p, tol) CHECK_SAME(&(p)->cown, &(p)->gown, tol)

struct vpair {
    struct vector cown, gown, c, g;
};

static void vpair_init(struct vpair *p, int dim) {
    vector_init_on(&p->cown, dim + 4, MATRIX_CPU);
    vector_init_on(&p->gown, dim + 4, MATRIX_GPU);
    vector_set_const(&p->cown, SENTINEL);
    p->c = vector_range(&p->cown, 2, dim);
    p->g = vector_range(&p->gown, 2, dim);
    vector_set_randn(&p->c, &rng, 1.0f);
    vector_copy(&p->gown, &p->cown);
}

static void vpair_release(struct vpair *p) {
    vector_release(&p->cown);
    vector_release(&p->gown);
}

#define CHECK_VPAIR(p, tol) CHECK_SAME_VEC(&(p)->cown, &(p)->gown, tol)

static const int dims[] = {0, 1, 2, 3, 5, 8, 17, 33, 64, 257};
#define NUM_DIMS ((int)(sizeof dims / sizeof dims[0]))
static int rand_dim(void) {
    return dims[rng_below(&rng, NUM_DIMS)];
}
static int rand_pos_dim(void) {
    return dims[1 + rng_below(&rng, NUM_DIMS - 1)];
}
static float rand_coef(void) {
    return (float)(rng_uniform(&rng) * 4 - 2);
}

/* ---- device selection (runs with or without a GPU) ---- */

static void test_select_device(void) {
    int rc = matrix_select_device("yes");
    if (rc == 0) {
        CHECK(matrix_default_device == MATRIX_GPU);
        have_gpu = 1;
    } else {
        CHECK(rc == -1);
        const char *e = error_get(), *prefix = "--use-gpu=yes but no GPU: ";
        CHECK(strncmp(e, prefix, strlen(prefix)) == 0 && strlen(e) > strlen(prefix));
        snprintf(no_gpu_reason, sizeof no_gpu_reason, "%s", e + strlen(prefix));
        CHECK(matrix_default_device == MATRIX_CPU);
        /* "wait" retries only while GPUs exist but are busy; with none it fails at once. */
        if (strstr(no_gpu_reason, "no CUDA device") || strstr(no_gpu_reason, "without CUDA")) {
            CHECK(matrix_select_device("wait") == -1);
            CHECK(strstr(error_get(), "--use-gpu=wait but no GPU: ") == error_get());
            CHECK(matrix_default_device == MATRIX_CPU);
        }
    }
    CHECK(matrix_select_device("no") == 0 && matrix_default_device == MATRIX_CPU);
    CHECK(matrix_select_device("optional") == 0);
    CHECK(matrix_default_device == (have_gpu ? MATRIX_GPU : MATRIX_CPU));
    CHECK(matrix_select_device("maybe") == -1);
    CHECK(strstr(error_get(), "expected yes, no, optional or wait, got 'maybe'") != NULL);
    CHECK(matrix_select_device("no") == 0 && matrix_default_device == MATRIX_CPU);
    if (have_gpu) { /* new storage follows the default device */
        CHECK(matrix_select_device("yes") == 0);
        struct matrix m;
        matrix_init(&m, 3, 4);
        CHECK(m.device == MATRIX_GPU && m.owns && m.stride == 4);
        matrix_release(&m);
        matrix_default_device = MATRIX_CPU; /* the tests below choose devices explicitly */
    }
}

/* ---- storage, transfers, copies, fills ---- */

static void test_storage_and_transfer(void) {
    for (int trial = 0; trial < 30; trial++) {
        int rows = rand_dim(), cols = rand_dim();
        struct mpair a, b, t;
        mpair_init(&a, rows, cols, trial & 1);
        mpair_init(&b, rows, cols, trial & 2);
        mpair_init(&t, cols, rows, trial & 4);
        CHECK_PAIR(&a, 0); /* the upload itself */

        long n = (long)rows * cols;
        float *h1 = xmalloc((size_t)(n + 1) * sizeof *h1), *h2 = xmalloc((size_t)(n + 1) * 4);
        matrix_to_host(&a.c, h1);
        matrix_to_host(&a.g, h2);
        CHECK(n == 0 || !memcmp(h1, h2, (size_t)n * sizeof *h1));
        for (long i = 0; i < n; i++) h1[i] = (float)i - 0.5f;
        matrix_from_host(&a.c, h1);
        matrix_from_host(&a.g, h1);
        CHECK_PAIR(&a, 0);
        free(h1);
        free(h2);
        if (n > 0) {
            int r = (int)rng_below(&rng, rows), c = (int)rng_below(&rng, cols);
            matrix_set(&a.c, r, c, -7.25f);
            matrix_set(&a.g, r, c, -7.25f);
            CHECK(matrix_get(&a.g, r, c) == -7.25f);
            CHECK_PAIR(&a, 0);
        }

        /* device -> device between different layouts, and across devices */
        matrix_copy(&b.c, &a.c);
        matrix_copy(&b.g, &a.g);
        CHECK_PAIR(&b, 0);
        mpair_randn(&b, 1.0f);
        matrix_copy(&a.g, &b.c); /* CPU view -> GPU view */
        matrix_copy(&a.c, &b.c);
        CHECK_PAIR(&a, 0);
        matrix_copy_transposed(&t.c, &a.c);
        matrix_copy_transposed(&t.g, &a.g);
        CHECK_PAIR(&t, 0);
        matrix_set_const(&a.c, 2.5f);
        matrix_set_const(&a.g, 2.5f);
        matrix_set_zero(&b.c);
        matrix_set_zero(&b.g);
        CHECK_PAIR(&a, 0);
        CHECK_PAIR(&b, 0);

        /* random fills draw on the host: the same seed gives the same values on both */
        struct rng r1, r2;
        rng_seed(&r1, 77 + trial);
        rng_seed(&r2, 77 + trial);
        matrix_set_randn(&a.c, &r1, 2.0f);
        matrix_set_randn(&a.g, &r2, 2.0f);
        CHECK_PAIR(&a, 0);
        matrix_set_bernoulli(&b.c, &r1, 0.3f, 3.0f);
        matrix_set_bernoulli(&b.g, &r2, 0.3f, 3.0f);
        CHECK_PAIR(&b, 0);
        mpair_release(&a);
        mpair_release(&b);
        mpair_release(&t);
    }

    /* GPU -> CPU copy into a view */
    struct mpair a, b;
    mpair_init(&a, 17, 33, 1);
    mpair_init(&b, 17, 33, 1);
    matrix_copy(&b.c, &a.g);
    matrix_copy(&b.g, &a.g);
    CHECK_SAME(&b.cown, &b.gown, 0);
    CHECK_SAME(&a.c, &b.c, 0);
    mpair_release(&a);
    mpair_release(&b);

    /* vectors */
    for (int trial = 0; trial < 20; trial++) {
        int dim = rand_dim();
        struct vpair v, w;
        vpair_init(&v, dim);
        vpair_init(&w, dim);
        CHECK_VPAIR(&v, 0);
        vector_copy(&w.c, &v.c);
        vector_copy(&w.g, &v.g);
        CHECK_VPAIR(&w, 0);
        vector_set_randn(&w.c, &rng, 1.0f);
        vector_copy(&w.g, &w.c); /* across devices */
        CHECK_VPAIR(&w, 0);
        if (dim > 0) {
            int i = (int)rng_below(&rng, dim);
            vector_set(&v.c, i, 3.5f);
            vector_set(&v.g, i, 3.5f);
            CHECK(vector_get(&v.g, i) == 3.5f);
        }
        float *h = xmalloc((size_t)(dim + 1) * sizeof *h);
        vector_to_host(&v.g, h);
        for (int i = 0; i < dim; i++) CHECK(h[i] == vector_get(&v.c, i));
        for (int i = 0; i < dim; i++) h[i] = (float)(i * i);
        vector_from_host(&v.c, h);
        vector_from_host(&v.g, h);
        CHECK_VPAIR(&v, 0);
        free(h);
        vector_set_const(&v.c, -1.0f);
        vector_set_const(&v.g, -1.0f);
        vector_set_zero(&w.c);
        vector_set_zero(&w.g);
        CHECK_VPAIR(&v, 0);
        CHECK_VPAIR(&w, 0);
        struct rng r1, r2;
        rng_seed(&r1, 5 + trial);
        rng_seed(&r2, 5 + trial);
        vector_set_randn(&v.c, &r1, 1.0f);
        vector_set_randn(&v.g, &r2, 1.0f);
        CHECK_VPAIR(&v, 0);
        vpair_release(&v);
        vpair_release(&w);
    }
}

/* The caching allocator: live blocks never overlap, reused blocks come back zeroed, resize keeps
 * the device. */
static void test_allocator(void) {
    enum { N = 40 };
    struct matrix m[N];
    int sizes[N];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            sizes[i] = 1 + (int)rng_below(&rng, 3000);
            matrix_init_on(&m[i], 1, sizes[i], MATRIX_GPU);
            CHECK(matrix_sum(&m[i]) == 0.0); /* zeroed, even when the block is reused */
            matrix_set_const(&m[i], (float)(i + 1));
        }
        for (int i = 0; i < N; i++) CHECK(matrix_sum(&m[i]) == (double)(i + 1) * sizes[i]);
        for (int i = 0; i < N; i += 2) matrix_release(&m[i]);
        for (int i = 0; i < N; i += 2) {
            matrix_init_on(&m[i], 1, sizes[(i + 2) % N], MATRIX_GPU); /* sizes seen before */
            CHECK(matrix_sum(&m[i]) == 0.0);
            matrix_set_const(&m[i], -1.0f);
        }
        for (int i = 1; i < N; i += 2) CHECK(matrix_sum(&m[i]) == (double)(i + 1) * sizes[i]);
        for (int i = 0; i < N; i++) matrix_release(&m[i]);
    }
    struct matrix r = {0};
    matrix_init_on(&r, 4, 5, MATRIX_GPU);
    matrix_resize(&r, 6, 7);
    CHECK(r.device == MATRIX_GPU && r.rows == 6 && r.stride == 7 && matrix_sum(&r) == 0.0);
    matrix_release(&r);
    struct matrix e;
    matrix_init_on(&e, 0, 3, MATRIX_GPU);
    CHECK(e.data != NULL && e.device == MATRIX_GPU);
    matrix_release(&e);
}

/* ---- BLAS level 1 and reductions ---- */

static void test_level1(void) {
    for (int trial = 0; trial < 40; trial++) {
        int rows = rand_dim(), cols = rand_dim();
        struct mpair a, b, bt, sq;
        mpair_init(&a, rows, cols, trial & 1);
        mpair_init(&b, rows, cols, trial & 2);
        mpair_init(&bt, cols, rows, trial & 4);
        mpair_init(&sq, rows, rows, trial & 8);
        float alpha = rand_coef();
        matrix_scale(&a.c, alpha);
        matrix_scale(&a.g, alpha);
        CHECK_PAIR(&a, TOL);
        matrix_add(&a.c, alpha, &b.c);
        matrix_add(&a.g, alpha, &b.g);
        CHECK_PAIR(&a, TOL);
        CHECK_SCALAR(matrix_sum(&a.g), matrix_sum(&a.c), TOL);
        CHECK_SCALAR(matrix_frobenius_norm(&a.g), matrix_frobenius_norm(&a.c), TOL);
        CHECK_SCALAR(matrix_trace_mat_mat(&a.g, &b.g, MATRIX_TRANS),
                     matrix_trace_mat_mat(&a.c, &b.c, MATRIX_TRANS), TOL);
        CHECK_SCALAR(matrix_trace_mat_mat(&a.g, &bt.g, MATRIX_NO_TRANS),
                     matrix_trace_mat_mat(&a.c, &bt.c, MATRIX_NO_TRANS), TOL);
        CHECK_SCALAR(matrix_trace(&sq.g), matrix_trace(&sq.c), TOL);
        CHECK(matrix_is_finite(&a.g) == 1);
        if (rows > 0 && cols > 0) {
            int r = (int)rng_below(&rng, rows), c = (int)rng_below(&rng, cols);
            float bad = trial % 3 == 0 ? NAN : (trial % 3 == 1 ? INFINITY : -INFINITY);
            matrix_set(&a.g, r, c, bad);
            CHECK(matrix_is_finite(&a.g) == 0);
            /* scale by 0 writes zeros over NaN (BLAS) */
            matrix_scale(&a.g, 0.0f);
            matrix_scale(&a.c, 0.0f);
            CHECK_PAIR(&a, 0);
            CHECK(matrix_is_finite(&a.g) == 1);
        }
        mpair_release(&a);
        mpair_release(&b);
        mpair_release(&bt);
        mpair_release(&sq);

        int dim = rand_dim();
        struct vpair v, w;
        vpair_init(&v, dim);
        vpair_init(&w, dim);
        vector_scale(&v.c, alpha);
        vector_scale(&v.g, alpha);
        vector_add(&v.c, -alpha, &w.c);
        vector_add(&v.g, -alpha, &w.g);
        CHECK_VPAIR(&v, TOL);
        CHECK_SCALAR(vector_dot(&v.g, &w.g), vector_dot(&v.c, &w.c), TOL);
        CHECK_SCALAR(vector_sum(&v.g), vector_sum(&v.c), TOL);
        CHECK_SCALAR(vector_norm2(&v.g), vector_norm2(&v.c), TOL);
        CHECK(vector_is_finite(&v.g) == 1);
        if (dim > 0) {
            vector_set(&v.g, (int)rng_below(&rng, dim), NAN);
            CHECK(vector_is_finite(&v.g) == 0);
        }
        vpair_release(&v);
        vpair_release(&w);
    }
    /* a large reduction: many blocks and partials */
    struct mpair big;
    mpair_init(&big, 1000, 3001, 1);
    CHECK_SCALAR(matrix_sum(&big.g), matrix_sum(&big.c), TOL);
    CHECK_SCALAR(matrix_frobenius_norm(&big.g), matrix_frobenius_norm(&big.c), TOL);
    mpair_release(&big);
}

/* ---- BLAS levels 2 and 3 ---- */

static void test_gemm(void) {
    for (int trial = 0; trial < 60; trial++) {
        int m = rand_dim(), n = rand_dim(), k = rand_dim();
        int ta = trial & 1, tb = (trial >> 1) & 1;
        struct mpair a, b, c;
        mpair_init(&a, ta ? k : m, ta ? m : k, trial & 4);
        mpair_init(&b, tb ? n : k, tb ? k : n, trial & 8);
        mpair_init(&c, m, n, trial & 16);
        float alpha = rand_coef(), beta = trial % 5 == 0 ? 0.0f : rand_coef();
        if (beta == 0.0f && m > 0 && n > 0) { /* beta = 0: C is not read */
            matrix_set(&c.c, 0, 0, NAN);
            matrix_set(&c.g, 0, 0, NAN);
        }
        matrix_add_mat_mat(&c.c, alpha, &a.c, ta, &b.c, tb, beta);
        matrix_add_mat_mat(&c.g, alpha, &a.g, ta, &b.g, tb, beta);
        CHECK_PAIR(&c, TOL);
        mpair_release(&a);
        mpair_release(&b);
        mpair_release(&c);
    }
    /* the MLP's shapes: minibatch 512, 440 -> 1024 -> 2000 */
    struct mpair x, w, y, gy, gw;
    mpair_init(&x, 512, 440, 0);
    mpair_init(&w, 1024, 440, 0);
    mpair_init(&y, 512, 1024, 1);
    mpair_init(&gy, 512, 1024, 0);
    mpair_init(&gw, 1024, 440, 0);
    matrix_add_mat_mat(&y.c, 1.0f, &x.c, MATRIX_NO_TRANS, &w.c, MATRIX_TRANS, 0.0f);
    matrix_add_mat_mat(&y.g, 1.0f, &x.g, MATRIX_NO_TRANS, &w.g, MATRIX_TRANS, 0.0f);
    CHECK_PAIR(&y, TOL);
    matrix_add_mat_mat(&gw.c, 0.5f, &gy.c, MATRIX_TRANS, &x.c, MATRIX_NO_TRANS, 1.0f);
    matrix_add_mat_mat(&gw.g, 0.5f, &gy.g, MATRIX_TRANS, &x.g, MATRIX_NO_TRANS, 1.0f);
    CHECK_PAIR(&gw, TOL);
    matrix_add_mat_mat(&x.c, 1.0f, &gy.c, MATRIX_NO_TRANS, &w.c, MATRIX_NO_TRANS, 0.0f);
    matrix_add_mat_mat(&x.g, 1.0f, &gy.g, MATRIX_NO_TRANS, &w.g, MATRIX_NO_TRANS, 0.0f);
    CHECK_PAIR(&x, TOL);
    mpair_release(&x);
    mpair_release(&w);
    mpair_release(&y);
    mpair_release(&gy);
    mpair_release(&gw);
}

static void test_sym_and_level2(void) {
    for (int trial = 0; trial < 40; trial++) {
        int n = rand_dim(), k = rand_dim(), trans = trial & 1;
        struct mpair a, c;
        mpair_init(&a, trans ? k : n, trans ? n : k, trial & 2);
        mpair_init(&c, n, n, trial & 4); /* not symmetric: only its lower triangle is read */
        float alpha = rand_coef(), beta = trial % 3 == 0 ? 0.0f : rand_coef();
        matrix_sym_add_mat_mat(&c.c, alpha, &a.c, trans, beta);
        matrix_sym_add_mat_mat(&c.g, alpha, &a.g, trans, beta);
        CHECK_PAIR(&c, TOL);
        mpair_release(&a);
        mpair_release(&c);

        int rows = rand_dim(), cols = rand_dim();
        struct mpair m;
        struct vpair x, y, vr, vc;
        mpair_init(&m, rows, cols, trial & 8);
        vpair_init(&x, trans ? rows : cols);
        vpair_init(&y, trans ? cols : rows);
        vpair_init(&vr, rows);
        vpair_init(&vc, cols);
        if (beta == 0.0f && y.c.dim > 0) {
            vector_set(&y.c, 0, NAN);
            vector_set(&y.g, 0, NAN);
        }
        vector_add_mat_vec(&y.c, alpha, &m.c, trans, &x.c, beta);
        vector_add_mat_vec(&y.g, alpha, &m.g, trans, &x.g, beta);
        CHECK_VPAIR(&y, TOL);
        matrix_add_vec_vec(&m.c, alpha, &vr.c, &vc.c);
        matrix_add_vec_vec(&m.g, alpha, &vr.g, &vc.g);
        CHECK_PAIR(&m, TOL);
        matrix_add_vec_to_rows(&m.c, alpha, &vc.c);
        matrix_add_vec_to_rows(&m.g, alpha, &vc.g);
        CHECK_PAIR(&m, TOL);
        matrix_set_rows(&m.c, &vc.c);
        matrix_set_rows(&m.g, &vc.g);
        CHECK_PAIR(&m, TOL);
        matrix_add_vec_to_rows(&m.c, alpha, &vc.c);
        matrix_add_vec_to_rows(&m.g, alpha, &vc.g);
        CHECK_PAIR(&m, TOL);
        if (beta == 0.0f && rows > 0 && cols > 0) {
            vector_set(&vr.c, 0, NAN);
            vector_set(&vr.g, 0, NAN);
            vector_set(&vc.c, 0, NAN);
            vector_set(&vc.g, 0, NAN);
        }
        vector_add_row_sums(&vc.c, alpha, &m.c, beta);
        vector_add_row_sums(&vc.g, alpha, &m.g, beta);
        CHECK_VPAIR(&vc, TOL);
        vector_add_col_sums(&vr.c, alpha, &m.c, beta);
        vector_add_col_sums(&vr.g, alpha, &m.g, beta);
        CHECK_VPAIR(&vr, TOL);
        vector_row_sq_norms(&vr.c, &m.c);
        vector_row_sq_norms(&vr.g, &m.g);
        CHECK_VPAIR(&vr, TOL);
        mpair_release(&m);
        vpair_release(&x);
        vpair_release(&y);
        vpair_release(&vr);
        vpair_release(&vc);
    }
    /* column sums of a tall matrix (many row-threads per column) */
    struct mpair t;
    struct vpair s;
    mpair_init(&t, 5000, 40, 1);
    vpair_init(&s, 40);
    vector_add_row_sums(&s.c, 1.0f, &t.c, 1.0f);
    vector_add_row_sums(&s.g, 1.0f, &t.g, 1.0f);
    CHECK_VPAIR(&s, TOL);
    mpair_release(&t);
    vpair_release(&s);
}

/* ---- elementwise ---- */

static void test_elementwise(void) {
    for (int trial = 0; trial < 40; trial++) {
        int rows = rand_dim(), cols = rand_dim();
        struct mpair m, a, sq;
        struct vpair vr, vc;
        mpair_init(&m, rows, cols, trial & 1);
        mpair_init(&a, rows, cols, trial & 2);
        mpair_init(&sq, rows, rows, trial & 4);
        vpair_init(&vr, rows);
        vpair_init(&vc, cols);
        float alpha = rand_coef();
        matrix_mul_elements(&m.c, &a.c);
        matrix_mul_elements(&m.g, &a.g);
        CHECK_PAIR(&m, TOL);
        matrix_mul_rows(&m.c, &vr.c);
        matrix_mul_rows(&m.g, &vr.g);
        CHECK_PAIR(&m, TOL);
        matrix_mul_cols(&m.c, &vc.c);
        matrix_mul_cols(&m.g, &vc.g);
        CHECK_PAIR(&m, TOL);
        matrix_add_const(&m.c, alpha);
        matrix_add_const(&m.g, alpha);
        CHECK_PAIR(&m, TOL);
        matrix_add_diag(&sq.c, alpha);
        matrix_add_diag(&sq.g, alpha);
        CHECK_PAIR(&sq, TOL);
        vector_mul_elements(&vr.c, &vr.c); /* aliasing is fine elementwise */
        vector_mul_elements(&vr.g, &vr.g);
        CHECK_VPAIR(&vr, TOL);
        vector_add_const(&vc.c, alpha);
        vector_add_const(&vc.g, alpha);
        CHECK_VPAIR(&vc, TOL);
        mpair_release(&m);
        mpair_release(&a);
        mpair_release(&sq);
        vpair_release(&vr);
        vpair_release(&vc);
    }
}

/* ---- nonlinearities, softmax, p-norm, normalize ---- */

static void forward(int which, struct matrix *y, const struct matrix *x) {
    if (which == 0) matrix_sigmoid(y, x);
    else if (which == 1) matrix_tanh(y, x);
    else if (which == 2) matrix_relu(y, x);
    else if (which == 3) matrix_softmax_rows(y, x);
    else if (which == 4) matrix_log_softmax_rows(y, x);
    else matrix_normalize_rows(y, x);
}

static void backward(int which, struct matrix *d, const struct matrix *x, const struct matrix *y,
                     const struct matrix *g) {
    if (which == 0) matrix_diff_sigmoid(d, y, g);
    else if (which == 1) matrix_diff_tanh(d, y, g);
    else if (which == 2) matrix_diff_relu(d, y, g);
    else if (which == 3) matrix_diff_softmax(d, y, g);
    else if (which == 4) matrix_diff_log_softmax(d, y, g);
    else matrix_diff_normalize_rows(d, x, g);
}

static void test_nonlinearities(void) {
    static const int wide[] = {0, 1, 2, 7, 31, 32, 33, 255, 256, 257, 2000, 3001};
    for (int which = 0; which < 6; which++)
        for (int trial = 0; trial < 16; trial++) {
            int rows = rand_dim();
            int cols = trial < 12 ? wide[trial] : rand_dim();
            struct mpair x, y, g, d;
            mpair_init(&x, rows, cols, trial & 1);
            mpair_init(&y, rows, cols, trial & 2);
            mpair_init(&g, rows, cols, trial & 4);
            mpair_init(&d, rows, cols, 0);
            mpair_randn(&x, trial % 3 == 0 ? 30.0f : 3.0f); /* saturated regions too */
            if (rows > 0 && cols > 2) { /* extremes: exp under- and overflow */
                matrix_set(&x.c, 0, 0, -100.0f);
                matrix_set(&x.c, 0, 1, 100.0f);
                matrix_set(&x.c, 0, 2, -88.5f);
                matrix_copy(&x.g, &x.c);
            }
            if (which == 5 && rows > 1) { /* a zero row: the floor of normalize */
                struct matrix r0 = matrix_rows(&x.c, 1, 1);
                matrix_set_zero(&r0);
                matrix_copy(&x.g, &x.c);
            }
            forward(which, &y.c, &x.c);
            forward(which, &y.g, &x.g);
            CHECK_PAIR(&y, TOL);
            backward(which, &d.c, &x.c, &y.c, &g.c);
            backward(which, &d.g, &x.g, &y.g, &g.g);
            CHECK_PAIR(&d, TOL);
            /* in place: dst = src forward, in_deriv = out_deriv backward */
            forward(which, &x.c, &x.c);
            forward(which, &x.g, &x.g);
            CHECK_PAIR(&x, TOL);
            backward(which, &g.c, &x.c, &y.c, &g.c);
            backward(which, &g.g, &x.g, &y.g, &g.g);
            CHECK_PAIR(&g, TOL);
            mpair_release(&x);
            mpair_release(&y);
            mpair_release(&g);
            mpair_release(&d);
        }
}

static void test_pnorm(void) {
    static const float ps[] = {1.0f, 2.0f, 3.0f, 1.5f};
    for (int trial = 0; trial < 48; trial++) {
        float p = ps[trial % 4];
        int group = 1 + (int)rng_below(&rng, 5);
        int rows = rand_dim(), out = rand_dim();
        struct mpair x, y, gy, d;
        mpair_init(&x, rows, out * group, trial & 1);
        mpair_init(&y, rows, out, trial & 2);
        mpair_init(&gy, rows, out, trial & 4);
        mpair_init(&d, rows, out * group, trial & 8);
        if (rows > 0 && out > 0) { /* an all-zero group (output 0) and a lone zero */
            for (int k = 0; k < group; k++) matrix_set(&x.c, 0, k, 0.0f);
            matrix_set(&x.c, rows - 1, out * group - 1, 0.0f);
            matrix_copy(&x.g, &x.c);
        }
        matrix_pnorm(&y.c, &x.c, p);
        matrix_pnorm(&y.g, &x.g, p);
        CHECK_PAIR(&y, TOL);
        matrix_diff_pnorm(&d.c, &x.c, &y.c, &gy.c, p);
        matrix_diff_pnorm(&d.g, &x.g, &y.g, &gy.g, p);
        CHECK_PAIR(&d, TOL);
        mpair_release(&x);
        mpair_release(&y);
        mpair_release(&gy);
        mpair_release(&d);
    }
}

/* ---- splicing and sparse access ---- */

static void test_splice(void) {
    for (int trial = 0; trial < 40; trial++) {
        int num = (int)rng_below(&rng, 6), offsets[6], max_off = 0;
        for (int k = 0; k < num; k++) {
            offsets[k] = (int)rng_below(&rng, 7); /* any order, repeats allowed */
            if (offsets[k] > max_off) max_off = offsets[k];
        }
        int rows = rand_dim(), w = rand_dim();
        struct mpair src, dst, sd;
        mpair_init(&src, rows + max_off, w, trial & 1);
        mpair_init(&dst, rows, w * num, trial & 2);
        mpair_init(&sd, rows + max_off, w, trial & 4);
        matrix_splice(&dst.c, &src.c, offsets, num);
        matrix_splice(&dst.g, &src.g, offsets, num);
        CHECK_PAIR(&dst, 0);
        matrix_add_splice_backward(&sd.c, &dst.c, offsets, num);
        matrix_add_splice_backward(&sd.g, &dst.g, offsets, num);
        CHECK_PAIR(&sd, TOL);
        mpair_release(&src);
        mpair_release(&dst);
        mpair_release(&sd);
    }
}

static void test_sparse(void) {
    for (int trial = 0; trial < 30; trial++) {
        int rows = rand_pos_dim(), cols = rand_pos_dim(), n = (int)rng_below(&rng, 200);
        struct mpair m;
        mpair_init(&m, rows, cols, trial & 1);
        int *ri = xmalloc((size_t)(n + 1) * sizeof *ri), *ci = xmalloc((size_t)(n + 1) * 4);
        float *val = xmalloc((size_t)(n + 1) * sizeof *val);
        float *oc = xmalloc((size_t)(n + 1) * sizeof *oc), *og = xmalloc((size_t)(n + 1) * 4);
        for (int i = 0; i < n; i++) { /* small ranges: repeated indices */
            ri[i] = (int)rng_below(&rng, rows < 4 ? rows : 4);
            ci[i] = (int)rng_below(&rng, cols);
            val[i] = rng_gauss(&rng);
        }
        matrix_add_at(&m.c, -1.5f, n, ri, ci, val);
        matrix_add_at(&m.g, -1.5f, n, ri, ci, val);
        CHECK_PAIR(&m, TOL);
        matrix_get_at(&m.c, n, ri, ci, oc);
        matrix_get_at(&m.g, n, ri, ci, og);
        for (int i = 0; i < n; i++) CHECK(same_value(og[i], oc[i], TOL));
        /* argmax with many ties (small integers): the first maximum on both */
        float *h = xmalloc((size_t)rows * cols * sizeof *h);
        for (long i = 0; i < (long)rows * cols; i++) h[i] = (float)rng_below(&rng, 3);
        matrix_from_host(&m.c, h);
        matrix_from_host(&m.g, h);
        int *ac = xmalloc((size_t)rows * sizeof *ac), *ag = xmalloc((size_t)rows * sizeof *ag);
        matrix_row_argmax(&m.c, ac);
        matrix_row_argmax(&m.g, ag);
        for (int r = 0; r < rows; r++) CHECK(ag[r] == ac[r]);
        free(h);
        free(ac);
        free(ag);
        free(ri);
        free(ci);
        free(val);
        free(oc);
        free(og);
        mpair_release(&m);
    }
}

/* ---- natural gradient on the device: the same minibatches give the same preconditioned rows ---
 * Its R x R eigenproblem and Cholesky run on the host in double either way; the device does the
 * N x D x R products, so the two differ by float rounding passed through the eigensolver. On the
 * CPU, inputs perturbed by 1e-6 relative moved the outputs by 4e-6 and W by 3e-7 at most over
 * these 30 minibatches, so TOL leaves a wide margin. */
/* ---- images in rows: convolution, pooling, batch norm (cuDNN against oneDNN) ---- */

/* A random geometry that matrix_conv_setup accepts (pooling: out_c = in_c). */
static struct matrix_conv rand_geometry(int pooling) {
    for (;;) {
        struct matrix_conv g = {0};
        g.in_h = 1 + (int)rng_below(&rng, 7);
        g.in_w = 1 + (int)rng_below(&rng, 7);
        g.in_c = 1 + (int)rng_below(&rng, 5);
        g.out_c = 1 + (int)rng_below(&rng, 6);
        g.k_h = 1 + (int)rng_below(&rng, 3);
        g.k_w = 1 + (int)rng_below(&rng, 3);
        g.stride_h = 1 + (int)rng_below(&rng, 2);
        g.stride_w = 1 + (int)rng_below(&rng, 2);
        g.pad_h = (int)rng_below(&rng, g.k_h);
        g.pad_w = (int)rng_below(&rng, g.k_w);
        if (matrix_conv_setup(&g, pooling) == 0) return g;
    }
}

static const int image_rows[] = {1, 3, 17};

static void test_conv(void) {
    for (int trial = 0; trial < 40; trial++) {
        struct matrix_conv g = rand_geometry(0);
        int n = image_rows[trial % 3], in_dim = g.in_h * g.in_w * g.in_c;
        int out_dim = g.out_h * g.out_w * g.out_c, k = g.k_h * g.k_w * g.in_c;
        struct mpair x, w, y, dy, dx, dw, p;
        struct vpair b, db;
        mpair_init(&x, n, in_dim, 0);
        mpair_init(&w, g.out_c, k, 0);
        mpair_init(&y, n, out_dim, 0);
        mpair_init(&dy, n, out_dim, 0);
        mpair_init(&dx, n, in_dim, 0);
        mpair_init(&dw, g.out_c, k, 0);
        mpair_init(&p, n * g.out_h * g.out_w, k, 0);
        vpair_init(&b, g.out_c);
        vpair_init(&db, g.out_c);
        matrix_conv_forward(&y.c, &x.c, &w.c, &b.c, &g);
        matrix_conv_forward(&y.g, &x.g, &w.g, &b.g, &g);
        CHECK_PAIR(&y, TOL);
        matrix_conv_backward_data(&dx.c, &dy.c, &w.c, &g);
        matrix_conv_backward_data(&dx.g, &dy.g, &w.g, &g);
        CHECK_PAIR(&dx, TOL);
        float alpha = rand_coef(), beta = (float)(trial & 1);
        matrix_conv_backward_weights(&dw.c, &db.c, alpha, &x.c, &dy.c, &g, beta);
        matrix_conv_backward_weights(&dw.g, &db.g, alpha, &x.g, &dy.g, &g, beta);
        CHECK_PAIR(&dw, TOL);
        CHECK_VPAIR(&db, TOL);
        matrix_conv_patches(&p.c, &x.c, &g);
        matrix_conv_patches(&p.g, &x.g, &g);
        CHECK_PAIR(&p, 0);
        mpair_release(&x);
        mpair_release(&w);
        mpair_release(&y);
        mpair_release(&dy);
        mpair_release(&dx);
        mpair_release(&dw);
        mpair_release(&p);
        vpair_release(&b);
        vpair_release(&db);
    }
}

static void test_max_pool(void) {
    for (int trial = 0; trial < 40; trial++) {
        struct matrix_conv g = rand_geometry(1);
        int n = image_rows[trial % 3], in_dim = g.in_h * g.in_w * g.in_c;
        int out_dim = g.out_h * g.out_w * g.out_c;
        struct mpair x, y, dy, dx;
        mpair_init(&x, n, in_dim, 0); /* random values: no ties */
        mpair_init(&y, n, out_dim, 0);
        mpair_init(&dy, n, out_dim, 0);
        mpair_init(&dx, n, in_dim, 0);
        struct matrix argmax;
        matrix_init_on(&argmax, 0, 0, MATRIX_CPU);
        matrix_max_pool_forward(&y.c, &x.c, &g, &argmax);
        matrix_max_pool_forward(&y.g, &x.g, &g, NULL);
        CHECK_PAIR(&y, 0);
        matrix_max_pool_backward(&dx.c, &x.c, &dy.c, &g, &argmax);
        matrix_max_pool_backward(&dx.g, &x.g, &dy.g, &g, NULL);
        matrix_release(&argmax);
        CHECK_PAIR(&dx, TOL);
        mpair_release(&x);
        mpair_release(&y);
        mpair_release(&dy);
        mpair_release(&dx);
    }
}

static void test_batch_norm(void) {
    for (int trial = 0; trial < 24; trial++) {
        int channels = 1 + (int)rng_below(&rng, 6), positions = 1 + (int)rng_below(&rng, 9);
        int rows = image_rows[trial % 3], cols = channels * positions, train = trial & 1;
        if (rows * positions == 1) rows = 2; /* a variance needs two values */
        struct mpair x, y, dy, dx;
        struct vpair mean, var;
        mpair_init(&x, rows, cols, 0);
        mpair_init(&y, rows, cols, 0);
        mpair_init(&dy, rows, cols, 0);
        mpair_init(&dx, rows, cols, 0);
        vpair_init(&mean, channels);
        vpair_init(&var, channels);
        if (!train) { /* stored statistics: a positive variance */
            vector_set_const(&var.c, 0.5f + (float)rng_uniform(&rng));
            vector_copy(&var.g, &var.c);
        }
        matrix_batch_norm_forward(&y.c, &x.c, channels, 1e-3f, &mean.c, &var.c, train);
        matrix_batch_norm_forward(&y.g, &x.g, channels, 1e-3f, &mean.g, &var.g, train);
        CHECK_PAIR(&y, TOL);
        CHECK_VPAIR(&mean, TOL);
        CHECK_VPAIR(&var, TOL);
        matrix_batch_norm_backward(&dx.c, &x.c, &dy.c, channels, 1e-3f, &mean.c, &var.c, train);
        matrix_batch_norm_backward(&dx.g, &x.g, &dy.g, channels, 1e-3f, &mean.g, &var.g, train);
        CHECK_PAIR(&dx, TOL);
        mpair_release(&x);
        mpair_release(&y);
        mpair_release(&dy);
        mpair_release(&dx);
        vpair_release(&mean);
        vpair_release(&var);
    }
}

static void test_natgrad(void) {
    struct natgrad_options o;
    natgrad_options_default(&o);
    o.rank = 10;
    const int D = 60;
    struct natgrad *pc = natgrad_new(D, &o, 11), *pg = natgrad_new(D, &o, 11);
    for (int t = 0; t < 30; t++) {
        int N = t == 5 ? 3 : 128; /* one minibatch smaller than the rank */
        struct mpair x;
        mpair_init(&x, N, D, t & 1);
        float sc = 0, sg = 0;
        natgrad_precondition(pc, &x.c, &sc);
        natgrad_precondition(pg, &x.g, &sg);
        CHECK_SCALAR(sg, sc, TOL);
        CHECK_PAIR(&x, TOL);
        mpair_release(&x);
    }
    int R = natgrad_rank(pc);
    CHECK(R == natgrad_rank(pg) && R > 0);
    float *wc = xmalloc((size_t)R * D * sizeof *wc), *wg = xmalloc((size_t)R * D * sizeof *wg);
    double dc[64], dg[64], rc = 0, rg = 0;
    CHECK(natgrad_get_state(pc, wc, dc, &rc) == R && natgrad_get_state(pg, wg, dg, &rg) == R);
    CHECK_SCALAR(rg, rc, TOL);
    for (int i = 0; i < R; i++) CHECK_SCALAR(dg[i], dc[i], TOL);
    for (int i = 0; i < R * D; i++) CHECK(same_value(wg[i], wc[i], TOL));
    free(wc);
    free(wg);
    natgrad_free(pc);
    natgrad_free(pg);
}

int main(void) {
    rng_seed(&rng, 20240611);
    TEST_RUN(test_select_device);
    if (!have_gpu) {
        printf("SKIP matrix-gpu: no GPU (%s)\n", no_gpu_reason);
        TEST_MAIN_END();
    }
    TEST_RUN(test_storage_and_transfer);
    TEST_RUN(test_allocator);
    TEST_RUN(test_level1);
    TEST_RUN(test_gemm);
    TEST_RUN(test_sym_and_level2);
    TEST_RUN(test_elementwise);
    TEST_RUN(test_nonlinearities);
    TEST_RUN(test_pnorm);
    TEST_RUN(test_splice);
    TEST_RUN(test_sparse);
    TEST_RUN(test_conv);
    TEST_RUN(test_max_pool);
    TEST_RUN(test_batch_norm);
    TEST_RUN(test_natgrad);
    TEST_MAIN_END();
}
