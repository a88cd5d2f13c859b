/* Unit tests for matrix: every operation against a naive double-precision loop, on random shapes
 * (empty ones included), on views with stride != cols whose surroundings must stay untouched, and
 * backward passes against finite differences. */
#include "matrix/matrix.h"
#include "matrix/matrix-internal.h" /* matrix_project_j_path */
#include "test.h"

#include <stdlib.h>

#define SENTINEL 1234.5f
#define CALL(x) \
    do { \
        x; \
        if (test_failed_now) return; \
    } while (0)

static struct rng rng;

/* A test matrix: either owned (stride == cols) or a view inside a larger matrix (stride != cols)
 * whose border holds SENTINEL, so that writes outside the view are caught. */
struct tmat {
    struct matrix owner, m;
};

static void tmat_init(struct tmat *t, int rows, int cols, int view) {
    if (view) {
        matrix_init(&t->owner, rows + 3, cols + 5);
        matrix_set_const(&t->owner, SENTINEL);
        t->m = matrix_view(&t->owner, 1, rows, 2, cols);
    } else {
        matrix_init(&t->owner, rows, cols);
        t->m = t->owner;
        t->m.owns = 0;
    }
    matrix_set_randn(&t->m, &rng, 1.0f);
}

static int tmat_border_ok(const struct tmat *t) {
    if (t->owner.data == t->m.data && t->owner.rows == t->m.rows) return 1;
    for (int r = 0; r < t->owner.rows; r++)
        for (int c = 0; c < t->owner.cols; c++) {
            int inside = r >= 1 && r < 1 + t->m.rows && c >= 2 && c < 2 + t->m.cols;
            if (!inside && t->owner.data[(long)r * t->owner.stride + c] != SENTINEL) return 0;
        }
    return 1;
}

static void tmat_release(struct tmat *t) {
    matrix_release(&t->owner);
}

static float at(const struct matrix *m, int r, int c) {
    return m->data[(long)r * m->stride + c];
}

/* Dense double copy (row-major rows x cols). */
static double *to_d(const struct matrix *m) {
    double *d = xmalloc(((size_t)m->rows * m->cols + 1) * sizeof *d);
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) d[(long)r * m->cols + c] = at(m, r, c);
    return d;
}

static void check_equal_d(const struct matrix *m, const double *want, double tol) {
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) CHECK_NEAR(at(m, r, c), want[(long)r * m->cols + c], tol);
}

static const int dims[] = {0, 1, 2, 3, 5, 8, 17, 33, 64};
static int rand_dim(void) {
    return dims[rng_below(&rng, sizeof dims / sizeof dims[0])];
}
static int rand_pos_dim(void) {
    return dims[1 + rng_below(&rng, sizeof dims / sizeof dims[0] - 1)];
}

/* ---- storage and views ---- */

static void test_storage_and_views(void) {
    struct matrix m = {0};
    matrix_release(&m); /* no-op on a zeroed struct */
    matrix_init(&m, 7, 9);
    CHECK(m.owns && m.stride == 9 && m.rows == 7 && m.cols == 9 && m.device == MATRIX_CPU);
    CHECK(((uintptr_t)m.data & 63) == 0);
    for (int r = 0; r < 7; r++)
        for (int c = 0; c < 9; c++) CHECK(matrix_get(&m, r, c) == 0.0f);
    for (int r = 0; r < 7; r++)
        for (int c = 0; c < 9; c++) matrix_set(&m, r, c, r * 100 + c);
    struct matrix v = matrix_view(&m, 2, 3, 4, 5);
    CHECK(!v.owns && v.stride == 9 && v.rows == 3 && v.cols == 5);
    CHECK(matrix_get(&v, 1, 2) == 306.0f);
    struct matrix rows = matrix_rows(&m, 5, 2);
    CHECK(rows.cols == 9 && matrix_get(&rows, 1, 8) == 608.0f);
    struct vector row = matrix_row(&v, 2);
    CHECK(row.dim == 5 && vector_get(&row, 0) == 404.0f);
    struct vector sub = vector_range(&row, 1, 3);
    CHECK(sub.dim == 3 && vector_get(&sub, 2) == 407.0f);
    vector_set(&sub, 2, -1.0f);
    CHECK(matrix_get(&m, 4, 7) == -1.0f);

    float host[15];
    matrix_to_host(&v, host);
    CHECK(host[0] == 204.0f && host[5] == 304.0f && host[14] == 408.0f);
    for (int i = 0; i < 15; i++) host[i] = -i;
    matrix_from_host(&v, host);
    CHECK(matrix_get(&m, 3, 6) == -7.0f && matrix_get(&m, 3, 3) == 303.0f);
    CHECK(matrix_get(&m, 3, 9 - 0 - 1) == -9.0f && matrix_get(&m, 5, 4) == 504.0f);

    struct vector flat = vector_from_matrix(&m);
    CHECK(flat.dim == 63 && vector_get(&flat, 9 * 6 + 1) == 601.0f);
    struct matrix back = matrix_from_vector(&flat, 9, 7);
    CHECK(back.stride == 7 && matrix_get(&back, 1, 0) == 7.0f);
    struct matrix w = matrix_wrap(m.data + 1, 2, 3, 9, MATRIX_CPU);
    CHECK(matrix_get(&w, 1, 2) == 103.0f);

    matrix_resize(&m, 7, 9); /* same shape: contents kept */
    CHECK(matrix_get(&m, 6, 8) == 608.0f);
    matrix_resize(&m, 2, 3);
    CHECK(m.rows == 2 && m.cols == 3 && m.stride == 3 && matrix_get(&m, 1, 2) == 0.0f);
    matrix_release(&m);
    CHECK(m.data == NULL && !m.owns);

    struct matrix e = {0};
    matrix_resize(&e, 0, 4);
    CHECK(e.data && e.owns && e.rows == 0 && e.cols == 4);
    struct matrix ev = matrix_view(&e, 0, 0, 1, 2);
    CHECK(ev.rows == 0 && ev.cols == 2);
    matrix_release(&e);

    struct vector vec = {0};
    vector_resize(&vec, 5);
    CHECK(vec.owns && vec.dim == 5 && ((uintptr_t)vec.data & 63) == 0 && vector_get(&vec, 4) == 0);
    float vh[5] = {1, 2, 3, 4, 5}, vo[5];
    vector_from_host(&vec, vh);
    vector_to_host(&vec, vo);
    CHECK(!memcmp(vh, vo, sizeof vh));
    struct vector vw = vector_wrap(vh, 5, MATRIX_CPU);
    CHECK(vector_get(&vw, 3) == 4.0f);
    vector_release(&vec);
    vector_release(&vec);
}

/* ---- copies and fills ---- */

static void test_copy_and_fill(void) {
    for (int trial = 0; trial < 40; trial++) {
        int rows = rand_dim(), cols = rand_dim();
        struct tmat a, b, t;
        tmat_init(&a, rows, cols, trial & 1);
        tmat_init(&b, rows, cols, trial & 2);
        tmat_init(&t, cols, rows, trial & 4);
        matrix_copy(&b.m, &a.m);
        matrix_copy_transposed(&t.m, &a.m);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                CHECK(at(&b.m, r, c) == at(&a.m, r, c));
                CHECK(at(&t.m, c, r) == at(&a.m, r, c));
            }
        matrix_set_const(&b.m, 2.5f);
        matrix_set_zero(&t.m);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) CHECK(at(&b.m, r, c) == 2.5f && at(&t.m, c, r) == 0);
        CHECK(tmat_border_ok(&a) && tmat_border_ok(&b) && tmat_border_ok(&t));
        tmat_release(&a);
        tmat_release(&b);
        tmat_release(&t);
    }
    /* randn and bernoulli statistics on a view */
    struct tmat g;
    tmat_init(&g, 300, 200, 1);
    matrix_set_randn(&g.m, &rng, 3.0f);
    double s = 0, sq = 0;
    for (int r = 0; r < 300; r++)
        for (int c = 0; c < 200; c++) {
            double x = at(&g.m, r, c);
            s += x;
            sq += x * x;
        }
    CHECK(fabs(s / 60000) < 0.05 && fabs(sqrt(sq / 60000) - 3.0) < 0.05);
    matrix_set_bernoulli(&g.m, &rng, 0.3f, 2.0f);
    int kept = 0;
    for (int r = 0; r < 300; r++)
        for (int c = 0; c < 200; c++) {
            float x = at(&g.m, r, c);
            CHECK(x == 0.0f || x == 2.0f);
            kept += x == 2.0f;
        }
    CHECK(abs(kept - 18000) < 600);
    CHECK(tmat_border_ok(&g));
    tmat_release(&g);

    struct vector v, w;
    vector_init(&v, 1000);
    vector_init(&w, 1000);
    vector_set_randn(&v, &rng, 1.0f);
    vector_copy(&w, &v);
    CHECK(!memcmp(v.data, w.data, 1000 * sizeof(float)));
    vector_set_const(&w, -3.0f);
    CHECK(vector_get(&w, 999) == -3.0f && vector_get(&w, 0) == -3.0f);
    vector_set_zero(&w);
    CHECK(vector_sum(&w) == 0.0);
    vector_release(&v);
    vector_release(&w);
}

/* ---- level 1 ---- */

static void test_level1(void) {
    for (int trial = 0; trial < 40; trial++) {
        int rows = rand_dim(), cols = rand_dim();
        struct tmat a, b, bt, sq;
        tmat_init(&a, rows, cols, trial & 1);
        tmat_init(&b, rows, cols, trial & 2);
        tmat_init(&bt, cols, rows, trial & 4);
        tmat_init(&sq, rows, rows, trial & 8);
        double *ad = to_d(&a.m), *bd = to_d(&b.m), *btd = to_d(&bt.m);
        double sum = 0, fro = 0, tr_t = 0, tr_n = 0, tr = 0;
        for (int r = 0; r < rows; r++) {
            tr += at(&sq.m, r, r);
            for (int c = 0; c < cols; c++) {
                double x = ad[r * cols + c];
                sum += x;
                fro += x * x;
                tr_t += x * bd[r * cols + c];
                tr_n += x * btd[c * rows + r];
            }
        }
        CHECK_NEAR(matrix_sum(&a.m), sum, 1e-9);
        CHECK_NEAR(matrix_frobenius_norm(&a.m), sqrt(fro), 1e-9);
        CHECK_NEAR(matrix_trace_mat_mat(&a.m, &b.m, MATRIX_TRANS), tr_t, 1e-9);
        CHECK_NEAR(matrix_trace_mat_mat(&a.m, &bt.m, MATRIX_NO_TRANS), tr_n, 1e-9);
        CHECK_NEAR(matrix_trace(&sq.m), tr, 1e-9);

        matrix_add(&a.m, -0.5f, &b.m);
        for (int i = 0; i < rows * cols; i++) ad[i] += -0.5 * bd[i];
        CALL(check_equal_d(&a.m, ad, 1e-6));
        matrix_scale(&a.m, 3.0f);
        for (int i = 0; i < rows * cols; i++) ad[i] *= 3.0;
        CALL(check_equal_d(&a.m, ad, 1e-6));
        CHECK(matrix_is_finite(&a.m));
        if (rows && cols) {
            matrix_set(&a.m, rows - 1, cols - 1, INFINITY);
            CHECK(!matrix_is_finite(&a.m));
            matrix_set(&a.m, rows / 2, 0, NAN);
            matrix_scale(&a.m, 0.0f); /* BLAS convention: alpha = 0 clears, even NaN */
            CHECK(matrix_is_finite(&a.m) && matrix_sum(&a.m) == 0.0);
            matrix_set(&a.m, 0, cols / 2, NAN);
            CHECK(!matrix_is_finite(&a.m));
        }
        CHECK(tmat_border_ok(&a) && tmat_border_ok(&b));
        free(ad);
        free(bd);
        free(btd);
        tmat_release(&a);
        tmat_release(&b);
        tmat_release(&bt);
        tmat_release(&sq);
    }
    for (int trial = 0; trial < 20; trial++) {
        int n = rand_dim() * 7;
        struct vector x, y;
        vector_init(&x, n + 3);
        vector_init(&y, n);
        vector_set_randn(&x, &rng, 1.0f);
        vector_set_randn(&y, &rng, 2.0f);
        struct vector xs = vector_range(&x, 3, n);
        double dot = 0, sum = 0, nrm = 0;
        for (int i = 0; i < n; i++) {
            dot += (double)xs.data[i] * y.data[i];
            sum += xs.data[i];
            nrm += (double)xs.data[i] * xs.data[i];
        }
        CHECK_NEAR(vector_dot(&xs, &y), dot, 1e-9);
        CHECK_NEAR(vector_sum(&xs), sum, 1e-9);
        CHECK_NEAR(vector_norm2(&xs), sqrt(nrm), 1e-9);
        float y0 = n ? y.data[0] : 0, x0 = n ? xs.data[0] : 0;
        vector_add(&y, 2.0f, &xs);
        vector_scale(&y, -1.0f);
        if (n) CHECK_NEAR(y.data[0], -(y0 + 2.0 * x0), 1e-6);
        CHECK(vector_is_finite(&y));
        if (n) {
            y.data[n - 1] = -INFINITY;
            CHECK(!vector_is_finite(&y));
        }
        vector_release(&x);
        vector_release(&y);
    }
}

/* ---- level 2 and 3 ---- */

static void test_gemm(void) {
    for (int trial = 0; trial < 200; trial++) {
        int m = rand_dim(), n = rand_dim(), k = rand_dim();
        int ta = trial & 1, tb = (trial >> 1) & 1;
        float alpha = rng_gauss(&rng), beta = (trial % 5 == 0) ? 0.0f : rng_gauss(&rng);
        struct tmat a, b, c;
        tmat_init(&a, ta ? k : m, ta ? m : k, trial & 4);
        tmat_init(&b, tb ? n : k, tb ? k : n, trial & 8);
        tmat_init(&c, m, n, trial & 16);
        if (beta == 0.0f && m && n) matrix_set(&c.m, 0, 0, NAN); /* beta = 0: C not read */
        double *ad = to_d(&a.m), *bd = to_d(&b.m), *cd = to_d(&c.m);
        double *want = xmalloc(((size_t)m * n + 1) * sizeof *want);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int l = 0; l < k; l++)
                    s += (ta ? ad[l * m + i] : ad[i * k + l]) *
                         (tb ? bd[j * k + l] : bd[l * n + j]);
                want[i * n + j] = alpha * s + (beta == 0.0f ? 0.0 : beta * cd[i * n + j]);
            }
        matrix_add_mat_mat(&c.m, alpha, &a.m, ta, &b.m, tb, beta);
        CALL(check_equal_d(&c.m, want, 1e-4 * (1 + sqrt(k))));
        CHECK(tmat_border_ok(&a) && tmat_border_ok(&b) && tmat_border_ok(&c));
        free(ad);
        free(bd);
        free(cd);
        free(want);
        tmat_release(&a);
        tmat_release(&b);
        tmat_release(&c);
    }
}

static void test_sym_add_mat_mat(void) {
    for (int trial = 0; trial < 60; trial++) {
        int n = rand_dim(), k = rand_dim(), trans = trial & 1;
        float alpha = rng_gauss(&rng), beta = rng_gauss(&rng);
        struct tmat a, c;
        tmat_init(&a, trans ? k : n, trans ? n : k, trial & 2);
        tmat_init(&c, n, n, trial & 4);
        /* make C symmetric: the contract takes a symmetric C */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++) matrix_set(&c.m, j, i, at(&c.m, i, j));
        double *ad = to_d(&a.m), *cd = to_d(&c.m);
        double *want = xmalloc(((size_t)n * n + 1) * sizeof *want);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int l = 0; l < k; l++)
                    s += trans ? ad[l * n + i] * ad[l * n + j] : ad[i * k + l] * ad[j * k + l];
                want[i * n + j] = alpha * s + beta * cd[i * n + j];
            }
        matrix_sym_add_mat_mat(&c.m, alpha, &a.m, trans, beta);
        CALL(check_equal_d(&c.m, want, 1e-4 * (1 + sqrt(k))));
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) CHECK(at(&c.m, i, j) == at(&c.m, j, i));
        CHECK(tmat_border_ok(&a) && tmat_border_ok(&c));
        free(ad);
        free(cd);
        free(want);
        tmat_release(&a);
        tmat_release(&c);
    }
}

static void test_level2(void) {
    for (int trial = 0; trial < 80; trial++) {
        int rows = rand_dim(), cols = rand_dim(), trans = trial & 1;
        float alpha = rng_gauss(&rng), beta = rng_gauss(&rng);
        struct tmat m;
        tmat_init(&m, rows, cols, trial & 2);
        double *md = to_d(&m.m);
        int in = trans ? rows : cols, out = trans ? cols : rows;
        struct vector x, y, a, b, rs, cs;
        vector_init(&x, in);
        vector_init(&y, out);
        vector_set_randn(&x, &rng, 1.0f);
        vector_set_randn(&y, &rng, 1.0f);
        double *want = xmalloc(((size_t)out + 1) * sizeof *want);
        for (int i = 0; i < out; i++) {
            double s = 0;
            for (int j = 0; j < in; j++)
                s += (trans ? md[j * cols + i] : md[i * cols + j]) * x.data[j];
            want[i] = alpha * s + beta * y.data[i];
        }
        vector_add_mat_vec(&y, alpha, &m.m, trans, &x, beta);
        for (int i = 0; i < out; i++) CHECK_NEAR(y.data[i], want[i], 1e-4 * (1 + sqrt(in)));
        free(want);

        /* row sums (dim cols) and column sums (dim rows) */
        vector_init(&rs, cols);
        vector_init(&cs, rows);
        vector_set_randn(&rs, &rng, 1.0f);
        vector_set_randn(&cs, &rng, 1.0f);
        double *rw = xcalloc(cols + 1, sizeof *rw), *cw = xcalloc(rows + 1, sizeof *cw);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) rw[c] += md[r * cols + c], cw[r] += md[r * cols + c];
        for (int c = 0; c < cols; c++) rw[c] = alpha * rw[c] + beta * rs.data[c];
        for (int r = 0; r < rows; r++) cw[r] = alpha * cw[r] + beta * cs.data[r];
        vector_add_row_sums(&rs, alpha, &m.m, beta);
        vector_add_col_sums(&cs, alpha, &m.m, beta);
        for (int c = 0; c < cols; c++) CHECK_NEAR(rs.data[c], rw[c], 1e-5);
        for (int r = 0; r < rows; r++) CHECK_NEAR(cs.data[r], cw[r], 1e-5);
        free(rw);
        free(cw);

        /* rank one update and adding a vector to every row */
        vector_init(&a, rows);
        vector_init(&b, cols);
        vector_set_randn(&a, &rng, 1.0f);
        vector_set_randn(&b, &rng, 1.0f);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                md[r * cols + c] += alpha * a.data[r] * b.data[c] + beta * b.data[c];
        matrix_add_vec_vec(&m.m, alpha, &a, &b);
        matrix_add_vec_to_rows(&m.m, beta, &b);
        CALL(check_equal_d(&m.m, md, 1e-5));
        CHECK(tmat_border_ok(&m));
        free(md);
        tmat_release(&m);
        vector_release(&x);
        vector_release(&y);
        vector_release(&a);
        vector_release(&b);
        vector_release(&rs);
        vector_release(&cs);
    }
}

/* ---- elementwise ---- */

static void test_elementwise(void) {
    for (int trial = 0; trial < 40; trial++) {
        int rows = rand_dim(), cols = rand_dim(), n = rows < cols ? rows : cols;
        struct tmat m, a, sq;
        tmat_init(&m, rows, cols, trial & 1);
        tmat_init(&a, rows, cols, trial & 2);
        tmat_init(&sq, n, n, trial & 4);
        struct vector rsc, csc, norms;
        vector_init(&rsc, rows);
        vector_init(&csc, cols);
        vector_init(&norms, rows);
        vector_set_randn(&rsc, &rng, 1.0f);
        vector_set_randn(&csc, &rng, 1.0f);
        double *md = to_d(&m.m), *ad = to_d(&a.m), *sd = to_d(&sq.m);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                double *x = &md[r * cols + c];
                *x = (*x * ad[r * cols + c]) * rsc.data[r] * csc.data[c] + 0.25;
            }
        for (int i = 0; i < n; i++) sd[i * n + i] += -1.5;
        matrix_mul_elements(&m.m, &a.m);
        matrix_mul_rows(&m.m, &rsc);
        matrix_mul_cols(&m.m, &csc);
        matrix_add_const(&m.m, 0.25f);
        matrix_add_diag(&sq.m, -1.5f);
        CALL(check_equal_d(&m.m, md, 1e-5));
        CALL(check_equal_d(&sq.m, sd, 1e-6));
        vector_row_sq_norms(&norms, &m.m);
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int c = 0; c < cols; c++) s += md[r * cols + c] * md[r * cols + c];
            CHECK_NEAR(norms.data[r], s, 1e-5);
        }
        vector_mul_elements(&csc, &csc);
        vector_add_const(&csc, 1.0f);
        for (int c = 0; c < cols; c++) CHECK(csc.data[c] >= 1.0f);
        CHECK(tmat_border_ok(&m) && tmat_border_ok(&a) && tmat_border_ok(&sq));
        free(md);
        free(ad);
        free(sd);
        tmat_release(&m);
        tmat_release(&a);
        tmat_release(&sq);
        vector_release(&rsc);
        vector_release(&csc);
        vector_release(&norms);
    }
}

/* ---- nonlinearities ---- */

static double sigmoid_d(double x) {
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

/* |got - want| <= rel |want| + abs_tol */
#define CHECK_REL(got, want, rel, abs_tol) \
    do { \
        double g_ = (got), w_ = (want); \
        if (!(fabs(g_ - w_) <= (rel) * fabs(w_) + (abs_tol))) { \
            printf("FAIL %s: %s:%d: %s = %.9g, expected %.9g\n", test_name_now, __FILE__, \
                   __LINE__, #got, g_, w_); \
            test_failed_now = 1; \
            return; \
        } \
    } while (0)

static void test_nonlinearity_values(void) {
    /* a sweep over [-120, 120] including tiny and huge arguments, on a view */
    struct tmat x, y;
    int n = 4801;
    tmat_init(&x, 1, n, 1);
    tmat_init(&y, 1, n, 1);
    for (int i = 0; i < n; i++) x.m.data[i] = (i - 2400) * 0.05f;
    x.m.data[2400] = 1e-6f;
    x.m.data[2401] = -3e-5f;
    x.m.data[0] = -1e4f;
    x.m.data[n - 1] = 1e4f;
    matrix_sigmoid(&y.m, &x.m);
    for (int i = 0; i < n; i++) CHECK_REL(y.m.data[i], sigmoid_d(x.m.data[i]), 3e-7, 1e-37);
    matrix_tanh(&y.m, &x.m);
    for (int i = 0; i < n; i++) CHECK_REL(y.m.data[i], tanh(x.m.data[i]), 3e-7, 0);
    matrix_relu(&y.m, &x.m);
    for (int i = 0; i < n; i++) CHECK(y.m.data[i] == (x.m.data[i] > 0 ? x.m.data[i] : 0));
    /* in place */
    matrix_sigmoid(&x.m, &x.m);
    CHECK(x.m.data[0] == 0.0f && x.m.data[n - 1] == 1.0f);
    CHECK_NEAR(x.m.data[2400], 0.50000025, 1e-7);
    CHECK(tmat_border_ok(&x) && tmat_border_ok(&y));
    /* NaN propagates instead of turning into a plausible number */
    x.m.data[5] = NAN;
    matrix_tanh(&y.m, &x.m);
    CHECK(isnan(y.m.data[5]));
    tmat_release(&x);
    tmat_release(&y);
}

enum nl { NL_SIGMOID, NL_TANH, NL_RELU, NL_SOFTMAX, NL_LOG_SOFTMAX, NL_NORMALIZE, NL_PNORM };

static void forward(int which, struct matrix *y, const struct matrix *x, float p) {
    switch (which) {
    case NL_SIGMOID: matrix_sigmoid(y, x); break;
    case NL_TANH: matrix_tanh(y, x); break;
    case NL_RELU: matrix_relu(y, x); break;
    case NL_SOFTMAX: matrix_softmax_rows(y, x); break;
    case NL_LOG_SOFTMAX: matrix_log_softmax_rows(y, x); break;
    case NL_NORMALIZE: matrix_normalize_rows(y, x); break;
    default: matrix_pnorm(y, x, p); break;
    }
}

static void backward(int which, struct matrix *dx, const struct matrix *x, const struct matrix *y,
                     const struct matrix *g, float p) {
    switch (which) {
    case NL_SIGMOID: matrix_diff_sigmoid(dx, y, g); break;
    case NL_TANH: matrix_diff_tanh(dx, y, g); break;
    case NL_RELU: matrix_diff_relu(dx, y, g); break;
    case NL_SOFTMAX: matrix_diff_softmax(dx, y, g); break;
    case NL_LOG_SOFTMAX: matrix_diff_log_softmax(dx, y, g); break;
    case NL_NORMALIZE: matrix_diff_normalize_rows(dx, x, g); break;
    default: matrix_diff_pnorm(dx, x, y, g, p); break;
    }
}

/* F(x) = sum g .* f(x) in double. */
static double objective(int which, const struct matrix *x, struct matrix *y,
                        const struct matrix *g, float p) {
    forward(which, y, x, p);
    double s = 0;
    for (int r = 0; r < y->rows; r++)
        for (int c = 0; c < y->cols; c++) s += (double)at(y, r, c) * at(g, r, c);
    return s;
}

/* Directional finite differences: (F(x + e d) - F(x - e d)) / 2e against <dF/dx, d>. */
static void check_backward(int which, float p, int group, int trial) {
    int rows = 1 + rng_below(&rng, 6), out_cols = 1 + rng_below(&rng, 12);
    int in_cols = which == NL_PNORM ? out_cols * group : out_cols;
    struct tmat x, y, g, dx, d, xp;
    tmat_init(&x, rows, in_cols, trial & 1);
    tmat_init(&y, rows, out_cols, trial & 2);
    tmat_init(&g, rows, out_cols, trial & 4);
    tmat_init(&dx, rows, in_cols, trial & 8);
    tmat_init(&d, rows, in_cols, 0);
    tmat_init(&xp, rows, in_cols, 0);
    /* keep inputs away from the kinks of relu, |x| and p-norm */
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < in_cols; c++) {
            float v = at(&x.m, r, c);
            matrix_set(&x.m, r, c, v > 0 ? v + 0.05f : v - 0.05f);
        }
    forward(which, &y.m, &x.m, p);
    backward(which, &dx.m, &x.m, &y.m, &g.m, p);
    for (int dir = 0; dir < 3; dir++) {
        matrix_set_randn(&d.m, &rng, 1.0f);
        const double e = 1e-3;
        double pred = matrix_trace_mat_mat(&dx.m, &d.m, MATRIX_TRANS);
        matrix_copy(&xp.m, &x.m);
        matrix_add(&xp.m, (float)e, &d.m);
        double fp = objective(which, &xp.m, &y.m, &g.m, p);
        matrix_copy(&xp.m, &x.m);
        matrix_add(&xp.m, (float)-e, &d.m);
        double fm = objective(which, &xp.m, &y.m, &g.m, p);
        double fd = (fp - fm) / (2 * e);
        if (!(fabs(fd - pred) <= 1e-2 * (fabs(pred) + 0.1))) {
            printf("FAIL %s: nonlinearity %d p %g: finite difference %.6g, backward %.6g\n",
                   test_name_now, which, p, fd, pred);
            test_failed_now = 1;
            return;
        }
    }
    CHECK(tmat_border_ok(&x) && tmat_border_ok(&y) && tmat_border_ok(&g) && tmat_border_ok(&dx));
    tmat_release(&x);
    tmat_release(&y);
    tmat_release(&g);
    tmat_release(&dx);
    tmat_release(&d);
    tmat_release(&xp);
}

static void test_backward_finite_differences(void) {
    for (int trial = 0; trial < 16; trial++) {
        for (int which = NL_SIGMOID; which <= NL_NORMALIZE; which++)
            CALL(check_backward(which, 0, 1, trial));
        CALL(check_backward(NL_PNORM, 2.0f, 1 + trial % 5, trial));
        CALL(check_backward(NL_PNORM, 1.0f, 1 + trial % 4, trial));
        CALL(check_backward(NL_PNORM, 3.0f, 2 + trial % 3, trial));
    }
}

/* Backward passes computed in place (in_deriv aliasing out_deriv) equal the separate ones. */
static void test_backward_in_place(void) {
    for (int which = NL_SIGMOID; which <= NL_NORMALIZE; which++) {
        struct tmat x, y, g, dx;
        tmat_init(&x, 4, 9, 0);
        tmat_init(&y, 4, 9, 0);
        tmat_init(&g, 4, 9, 1);
        tmat_init(&dx, 4, 9, 0);
        forward(which, &y.m, &x.m, 0);
        backward(which, &dx.m, &x.m, &y.m, &g.m, 0);
        backward(which, &g.m, &x.m, &y.m, &g.m, 0);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 9; c++) CHECK(at(&g.m, r, c) == at(&dx.m, r, c));
        tmat_release(&x);
        tmat_release(&y);
        tmat_release(&g);
        tmat_release(&dx);
    }
}

static void test_softmax(void) {
    for (int trial = 0; trial < 30; trial++) {
        int rows = rand_dim(), cols = rand_pos_dim() + (trial % 7) * 100;
        struct tmat x, y, z;
        tmat_init(&x, rows, cols, trial & 1);
        tmat_init(&y, rows, cols, trial & 2);
        tmat_init(&z, rows, cols, trial & 4);
        matrix_scale(&x.m, 5.0f);
        if (rows && trial % 3 == 0) { /* extreme rows */
            for (int c = 0; c < cols; c++) matrix_set(&x.m, 0, c, c % 2 ? 1e4f : -1e4f);
            if (rows > 1)
                for (int c = 0; c < cols; c++) matrix_set(&x.m, 1, c, -1e4f + c * 1e-3f);
        }
        double *xd = to_d(&x.m);
        matrix_softmax_rows(&y.m, &x.m);
        matrix_log_softmax_rows(&z.m, &x.m);
        for (int r = 0; r < rows; r++) {
            const double *xr = xd + (long)r * cols;
            double mx = -INFINITY, s = 0;
            for (int c = 0; c < cols; c++) mx = xr[c] > mx ? xr[c] : mx;
            for (int c = 0; c < cols; c++) s += exp(xr[c] - mx);
            double ysum = 0;
            for (int c = 0; c < cols; c++) {
                double want = exp(xr[c] - mx) / s;
                /* float rounding of x - max alone costs |x - max| ulps of relative error */
                CHECK_REL(at(&y.m, r, c), want, 3e-7 * (2 + fabs(xr[c] - mx)), 1e-30);
                CHECK_NEAR(at(&z.m, r, c), xr[c] - mx - log(s), 2e-6);
                ysum += at(&y.m, r, c);
            }
            CHECK_NEAR(ysum, 1.0, 1e-5);
        }
        /* in place */
        matrix_softmax_rows(&x.m, &x.m);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) CHECK(at(&x.m, r, c) == at(&y.m, r, c));
        CHECK(matrix_is_finite(&y.m) && matrix_is_finite(&z.m));
        CHECK(tmat_border_ok(&x) && tmat_border_ok(&y) && tmat_border_ok(&z));
        free(xd);
        tmat_release(&x);
        tmat_release(&y);
        tmat_release(&z);
    }
}

static void test_pnorm_and_normalize_values(void) {
    const float ps[] = {1.0f, 2.0f, 3.0f, 1.5f};
    for (int trial = 0; trial < 24; trial++) {
        float p = ps[trial % 4];
        int rows = rand_dim(), out = rand_dim(), group = 1 + trial % 5;
        struct tmat x, y, dx, g;
        tmat_init(&x, rows, out * group, trial & 1);
        tmat_init(&y, rows, out, trial & 2);
        tmat_init(&g, rows, out, 0);
        tmat_init(&dx, rows, out * group, trial & 4);
        if (rows && out) /* an all-zero group: output 0, derivative 0, no NaN */
            for (int k = 0; k < group; k++) matrix_set(&x.m, 0, k, 0.0f);
        matrix_pnorm(&y.m, &x.m, p);
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < out; j++) {
                double s = 0;
                for (int k = 0; k < group; k++) s += pow(fabs(at(&x.m, r, j * group + k)), p);
                CHECK_NEAR(at(&y.m, r, j), pow(s, 1.0 / p), 1e-5);
            }
        matrix_diff_pnorm(&dx.m, &x.m, &y.m, &g.m, p);
        CHECK(matrix_is_finite(&dx.m));
        if (rows && out)
            for (int k = 0; k < group; k++) CHECK(at(&dx.m, 0, k) == 0.0f);
        CHECK(tmat_border_ok(&x) && tmat_border_ok(&y) && tmat_border_ok(&dx));
        tmat_release(&x);
        tmat_release(&y);
        tmat_release(&g);
        tmat_release(&dx);
    }
    for (int trial = 0; trial < 20; trial++) {
        int rows = rand_dim(), cols = rand_pos_dim();
        struct tmat x, y, g, dx;
        tmat_init(&x, rows, cols, trial & 1);
        tmat_init(&y, rows, cols, trial & 2);
        tmat_init(&g, rows, cols, 0);
        tmat_init(&dx, rows, cols, trial & 4);
        matrix_scale(&x.m, 7.0f);
        if (rows) { /* a floored row: mean square 1e-24 < 2^-66 */
            struct matrix row0 = matrix_rows(&x.m, 0, 1);
            matrix_set_const(&row0, 1e-12f);
        }
        matrix_normalize_rows(&y.m, &x.m);
        for (int r = 0; r < rows; r++) {
            double ms = 0;
            for (int c = 0; c < cols; c++) ms += (double)at(&x.m, r, c) * at(&x.m, r, c);
            ms /= cols;
            double f = 1 / sqrt(ms > 0x1p-66 ? ms : 0x1p-66);
            for (int c = 0; c < cols; c++) CHECK_NEAR(at(&y.m, r, c), at(&x.m, r, c) * f, 1e-6);
            struct matrix yr = matrix_rows(&y.m, r, 1);
            if (r > 0) CHECK_NEAR(matrix_frobenius_norm(&yr), sqrt(cols), 1e-5);
        }
        matrix_diff_normalize_rows(&dx.m, &x.m, &g.m);
        for (int c = 0; c < cols && rows; c++) /* floored row: only the f g term */
            CHECK_NEAR(at(&dx.m, 0, c), 0x1p33 * at(&g.m, 0, c), 1e-6);
        CHECK(tmat_border_ok(&x) && tmat_border_ok(&y) && tmat_border_ok(&dx));
        tmat_release(&x);
        tmat_release(&y);
        tmat_release(&g);
        tmat_release(&dx);
    }
}

/* ---- splicing ---- */

static void test_splice(void) {
    for (int trial = 0; trial < 40; trial++) {
        int num = 1 + rng_below(&rng, 5), offs[5], maxo = 0;
        for (int k = 0; k < num; k++) {
            offs[k] = rng_below(&rng, 6);
            maxo = offs[k] > maxo ? offs[k] : maxo;
        }
        int cols = rand_dim(), out_rows = rand_dim();
        int in_rows = out_rows + maxo + rng_below(&rng, 2);
        struct tmat src, dst, sd, dd;
        tmat_init(&src, in_rows, cols, trial & 1);
        tmat_init(&dst, out_rows, cols * num, trial & 2);
        tmat_init(&sd, in_rows, cols, trial & 4);
        tmat_init(&dd, out_rows, cols * num, trial & 8);
        matrix_splice(&dst.m, &src.m, offs, num);
        for (int r = 0; r < out_rows; r++)
            for (int k = 0; k < num; k++)
                for (int c = 0; c < cols; c++)
                    CHECK(at(&dst.m, r, k * cols + c) == at(&src.m, r + offs[k], c));
        double *want = to_d(&sd.m);
        for (int r = 0; r < out_rows; r++)
            for (int k = 0; k < num; k++)
                for (int c = 0; c < cols; c++)
                    want[(r + offs[k]) * cols + c] += at(&dd.m, r, k * cols + c);
        matrix_add_splice_backward(&sd.m, &dd.m, offs, num);
        CALL(check_equal_d(&sd.m, want, 1e-6));
        CHECK(tmat_border_ok(&src) && tmat_border_ok(&dst) && tmat_border_ok(&sd));
        free(want);
        tmat_release(&src);
        tmat_release(&dst);
        tmat_release(&sd);
        tmat_release(&dd);
    }
}

/* ---- sparse access ---- */

static void test_sparse(void) {
    struct tmat m;
    tmat_init(&m, 4, 6, 1);
    int rows[] = {0, 3, 3, 1}, cols[] = {5, 0, 0, 2};
    float vals[] = {1.0f, 2.0f, 3.0f, -4.0f}, before[4], after[4];
    matrix_get_at(&m.m, 4, rows, cols, before);
    CHECK(before[0] == at(&m.m, 0, 5) && before[3] == at(&m.m, 1, 2));
    matrix_add_at(&m.m, 0.5f, 4, rows, cols, vals);
    matrix_get_at(&m.m, 4, rows, cols, after);
    CHECK_NEAR(after[0], before[0] + 0.5, 1e-6);
    CHECK_NEAR(after[1], before[1] + 2.5, 1e-6); /* repeated index accumulates */
    CHECK_NEAR(after[3], before[3] - 2.0, 1e-6);
    matrix_set_zero(&m.m);
    matrix_set(&m.m, 0, 3, 1.0f);
    matrix_set(&m.m, 0, 4, 1.0f); /* tie: first wins */
    matrix_set(&m.m, 1, 5, 2.0f);
    struct matrix row2 = matrix_rows(&m.m, 2, 1);
    matrix_set_const(&row2, -1.0f);
    matrix_set(&m.m, 3, 0, 0.5f);
    int am[4];
    matrix_row_argmax(&m.m, am);
    CHECK(am[0] == 3 && am[1] == 5 && am[2] == 0 && am[3] == 0);
    CHECK(tmat_border_ok(&m));
    tmat_release(&m);
    /* Long rows (the lane loop) with ties, NaNs and -0/+0 against the plain definition: the
     * first index whose value is greater than every earlier one. */
    const int widths[] = {1, 15, 16, 37, 2000};
    for (int w = 0; w < 5; w++) {
        struct matrix q;
        matrix_init(&q, 50, widths[w]);
        for (int r = 0; r < 50; r++)
            for (int c = 0; c < widths[w]; c++) {
                float v = (float)rng_below(&rng, 7) - 3.0f; /* many ties */
                if (rng_below(&rng, 50) == 0) v = NAN;
                if (rng_below(&rng, 50) == 0) v = -0.0f;
                if (r == 7) v = c ? 0.0f : -0.0f;
                matrix_set(&q, r, c, v);
            }
        int got[50];
        matrix_row_argmax(&q, got);
        for (int r = 0; r < 50; r++) {
            const float *x = q.data + (long)r * q.stride;
            int best = 0;
            for (int c = 1; c < widths[w]; c++)
                if (x[c] > x[best]) best = c;
            CHECK(got[r] == best);
        }
        matrix_release(&q);
    }
}

/* ---- empty shapes reach no BLAS call with bad arguments ---- */

static void test_empty_shapes(void) {
    struct matrix a, b, c, z0;
    matrix_init(&a, 0, 5);
    matrix_init(&b, 5, 0);
    matrix_init(&c, 4, 3);
    matrix_init(&z0, 0, 0);
    matrix_set_const(&c, 2.0f);
    struct matrix a4 = {0}, b3 = {0};
    matrix_init(&a4, 4, 0);
    matrix_init(&b3, 0, 3);
    matrix_add_mat_mat(&c, 1.0f, &a4, MATRIX_NO_TRANS, &b3, MATRIX_NO_TRANS, 0.5f); /* k = 0 */
    CHECK(matrix_get(&c, 3, 2) == 1.0f);
    struct matrix t04 = {0}, t30 = {0};
    matrix_init(&t04, 0, 4);
    matrix_init(&t30, 3, 0);
    matrix_add_mat_mat(&c, 1.0f, &t04, MATRIX_TRANS, &t30, MATRIX_TRANS, 0.0f);
    CHECK(matrix_get(&c, 0, 0) == 0.0f);
    matrix_release(&t04);
    matrix_release(&t30);
    struct matrix e05 = {0}, e50 = {0};
    matrix_init(&e05, 0, 5);
    matrix_init(&e50, 5, 0);
    matrix_add_mat_mat(&z0, 1.0f, &a, MATRIX_NO_TRANS, &e50, MATRIX_NO_TRANS, 1.0f);
    matrix_sym_add_mat_mat(&z0, 1.0f, &a, MATRIX_NO_TRANS, 1.0f);
    struct matrix c44;
    matrix_init(&c44, 4, 4);
    matrix_set_const(&c44, 1.0f);
    matrix_sym_add_mat_mat(&c44, 1.0f, &a4, MATRIX_NO_TRANS, 3.0f);
    CHECK(matrix_get(&c44, 1, 2) == 3.0f);
    struct vector v0, v5, v4;
    vector_init(&v0, 0);
    vector_init(&v5, 5);
    vector_init(&v4, 4);
    vector_set_const(&v4, 1.0f);
    vector_add_mat_vec(&v0, 1.0f, &a, MATRIX_NO_TRANS, &v5, 0.0f);
    vector_add_mat_vec(&v4, 1.0f, &a4, MATRIX_NO_TRANS, &v0, 2.0f);
    CHECK(vector_get(&v4, 3) == 2.0f);
    matrix_add_vec_vec(&a, 1.0f, &v0, &v5);
    matrix_add_vec_to_rows(&a, 1.0f, &v5);
    vector_add_row_sums(&v5, 1.0f, &a, 0.0f);
    CHECK(vector_sum(&v5) == 0.0);
    vector_add_col_sums(&v0, 1.0f, &a, 0.0f);
    CHECK(matrix_sum(&a) == 0 && matrix_frobenius_norm(&b) == 0 && matrix_trace(&z0) == 0);
    CHECK(vector_dot(&v0, &v0) == 0 && vector_norm2(&v0) == 0 && matrix_is_finite(&a));
    matrix_sigmoid(&b, &b);
    matrix_softmax_rows(&a, &a);
    matrix_softmax_rows(&b, &b);
    matrix_log_softmax_rows(&b, &b);
    matrix_normalize_rows(&b, &b);
    matrix_diff_normalize_rows(&b, &b, &b);
    matrix_pnorm(&b, &b, 2.0f);
    matrix_copy_transposed(&e05, &b);
    matrix_copy(&a, &a);
    int off[2] = {0, 0};
    matrix_splice(&b, &b, off, 1);
    matrix_row_argmax(&a, NULL);
    matrix_release(&a);
    matrix_release(&b);
    matrix_release(&c);
    matrix_release(&z0);
    matrix_release(&a4);
    matrix_release(&b3);
    matrix_release(&e05);
    matrix_release(&e50);
    matrix_release(&c44);
    vector_release(&v0);
    vector_release(&v5);
    vector_release(&v4);
}

/* ---- dense LAPACK helpers ---- */

static void test_sym_eig(void) {
    CHECK(dense_sym_eig(0, NULL, NULL) == 0);
    for (int trial = 0; trial < 20; trial++) {
        int n = 1 + rng_below(&rng, 24);
        double *a = xmalloc(n * n * sizeof *a), *v = xmalloc(n * n * sizeof *v);
        double *w = xmalloc(n * sizeof *w);
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= i; j++) a[i * n + j] = a[j * n + i] = rng_gauss(&rng);
        if (trial == 0) /* a repeated eigenvalue */
            for (int i = 0; i < n * n; i++) a[i] = i % (n + 1) == 0 ? 2.0 : 0.0;
        memcpy(v, a, n * n * sizeof *a);
        CHECK(dense_sym_eig(n, v, w) == 0);
        for (int i = 1; i < n; i++) CHECK(w[i - 1] <= w[i]);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double rec = 0, orth = 0;
                for (int k = 0; k < n; k++) {
                    rec += v[k * n + i] * w[k] * v[k * n + j]; /* (V^T diag(w) V)_ij */
                    orth += v[i * n + k] * v[j * n + k];      /* (V V^T)_ij */
                }
                CHECK_NEAR(rec, a[i * n + j], 1e-10);
                CHECK_NEAR(orth, i == j, 1e-10);
            }
        /* each row really is an eigenvector: A v_i = w_i v_i */
        for (int i = 0; i < n; i++)
            for (int r = 0; r < n; r++) {
                double s = 0;
                for (int k = 0; k < n; k++) s += a[r * n + k] * v[i * n + k];
                CHECK_NEAR(s, w[i] * v[i * n + r], 1e-10);
            }
        free(a);
        free(v);
        free(w);
    }
}

static void test_cholesky(void) {
    CHECK(dense_cholesky(0, NULL) == 0);
    for (int trial = 0; trial < 20; trial++) {
        int n = 1 + rng_below(&rng, 24);
        double *b = xmalloc(n * n * sizeof *b), *a = xmalloc(n * n * sizeof *a);
        double *l = xmalloc(n * n * sizeof *l);
        for (int i = 0; i < n * n; i++) b[i] = rng_gauss(&rng);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = i == j ? 0.5 : 0.0;
                for (int k = 0; k < n; k++) s += b[i * n + k] * b[j * n + k];
                a[i * n + j] = s;
            }
        memcpy(l, a, n * n * sizeof *a);
        CHECK(dense_cholesky(n, l) == 0);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                if (j > i) CHECK(l[i * n + j] == 0.0);
                double s = 0;
                for (int k = 0; k < n; k++) s += l[i * n + k] * l[j * n + k];
                CHECK_NEAR(s, a[i * n + j], 1e-10);
            }
        for (int i = 0; i < n; i++) CHECK(l[i * n + i] > 0);
        /* make it indefinite: a - (lambda_max + 1) e_k e_k^T has a negative diagonal entry */
        int k = rng_below(&rng, n);
        a[k * n + k] = -1.0;
        error_clear();
        CHECK(dense_cholesky(n, a) == -1);
        CHECK(strstr(error_get(), "not positive definite") != NULL);
        free(a);
        free(b);
        free(l);
    }
}

/* ---- CPU work split over the pool: the same results with 1 and with 3 threads ---- */

/* out = op applied to copies of a, b, c (views, so strides and borders are exercised) with
 * `threads` threads; returns a dense copy of the written matrix and *sum the op's scalar. */
enum split_op {
    S_COPY, S_ZERO, S_SCALE, S_ADD, S_RELU, S_DRELU, S_SIGMOID, S_DSIGMOID, S_TANH, S_DTANH,
    S_SOFTMAX, S_LOGSOFTMAX, S_DSOFTMAX, S_DLOGSOFTMAX, S_NORMALIZE, S_DNORMALIZE, S_ADDVEC,
    S_SETROWS, S_ROWSQ, S_ROWSUMS, S_FROB, S_GEMV_T, S_GEMV_N, S_NUM_OPS
};

static double *run_split_op(int op, int threads, int rows, int cols, uint64_t seed, double *sum,
                            int *border_ok) {
    matrix_set_num_threads(threads);
    struct rng saved = rng;
    rng_seed(&rng, seed);
    struct tmat a, b, c;
    tmat_init(&a, rows, cols, 1);
    tmat_init(&b, rows, cols, 1);
    tmat_init(&c, rows, cols, 1);
    matrix_relu(&b.m, &b.m); /* a valid ReLU / softmax-ish output for the backward ops */
    struct vector v, w;
    vector_init(&v, cols);
    vector_set_randn(&v, &rng, 1);
    vector_init(&w, rows);
    vector_set_randn(&w, &rng, 1);
    struct matrix *out = &a.m;
    *sum = 0;
    switch (op) {
    case S_COPY: matrix_copy(&a.m, &b.m); break;
    case S_ZERO: matrix_set_zero(&a.m); break;
    case S_SCALE: matrix_scale(&a.m, 0.7f); break;
    case S_ADD: matrix_add(&a.m, -0.3f, &b.m); break;
    case S_RELU: matrix_relu(&a.m, &c.m); break;
    case S_DRELU: matrix_diff_relu(&a.m, &b.m, &c.m); break;
    case S_SIGMOID: matrix_sigmoid(&a.m, &c.m); break;
    case S_DSIGMOID: matrix_diff_sigmoid(&a.m, &b.m, &c.m); break;
    case S_TANH: matrix_tanh(&a.m, &c.m); break;
    case S_DTANH: matrix_diff_tanh(&a.m, &b.m, &c.m); break;
    case S_SOFTMAX: matrix_softmax_rows(&a.m, &c.m); break;
    case S_LOGSOFTMAX: matrix_log_softmax_rows(&a.m, &c.m); break;
    case S_DSOFTMAX: matrix_diff_softmax(&a.m, &b.m, &c.m); break;
    case S_DLOGSOFTMAX: matrix_diff_log_softmax(&a.m, &b.m, &c.m); break;
    case S_NORMALIZE: matrix_normalize_rows(&a.m, &c.m); break;
    case S_DNORMALIZE: matrix_diff_normalize_rows(&a.m, &b.m, &c.m); break;
    case S_ADDVEC: matrix_add_vec_to_rows(&a.m, 0.5f, &v); break;
    case S_SETROWS:
        matrix_set_rows(&a.m, &v);
        for (int r = 0; r < rows; r++)
            for (int col = 0; col < cols; col++)
                if (at(&a.m, r, col) != v.data[col]) *sum = 1; /* a wrong row: sums differ */
        break;
    case S_ROWSQ:
        vector_row_sq_norms(&w, &c.m);
        for (int i = 0; i < rows; i++) *sum += w.data[i] * (i + 1.0);
        break;
    case S_ROWSUMS:
        vector_add_row_sums(&v, 0.5f, &c.m, 1.0f);
        for (int i = 0; i < cols; i++) *sum += v.data[i] * (i + 1.0);
        break;
    case S_GEMV_T: /* v = 0.5 c^T w + v, into a's first row (compared bit for bit) */
    case S_GEMV_N: { /* w = 0.5 c v + w, into a's first column */
        int t = op == S_GEMV_T, n_out = t ? cols : rows;
        struct vector *y = t ? &v : &w, *x = t ? &w : &v;
        double *ref = xmalloc(sizeof(double) * n_out);
        for (int i = 0; i < n_out; i++) {
            ref[i] = y->data[i];
            for (int k = 0; k < (t ? rows : cols); k++)
                ref[i] += 0.5 * (t ? at(&c.m, k, i) : at(&c.m, i, k)) * x->data[k];
        }
        vector_add_mat_vec(y, 0.5f, &c.m, t ? MATRIX_TRANS : MATRIX_NO_TRANS, x, 1.0f);
        for (int i = 0; i < n_out; i++) {
            if (fabs(y->data[i] - ref[i]) > 1e-4 * (1 + fabs(ref[i]))) {
                printf("FAIL %s: gemv %c %dx%d: element %d %g, reference %g\n", test_name_now,
                       t ? 'T' : 'N', rows, cols, i, y->data[i], ref[i]);
                test_failed_now = 1;
                break;
            }
            a.m.data[t ? i : (long)i * a.m.stride] = y->data[i];
        }
        free(ref);
        break;
    }
    case S_FROB: {
        *sum = matrix_frobenius_norm(&c.m);
        double ref = 0;
        for (int r = 0; r < rows; r++)
            for (int col = 0; col < cols; col++) ref += (double)at(&c.m, r, col) * at(&c.m, r, col);
        if (!(fabs(*sum - sqrt(ref)) <= 1e-12 * sqrt(ref))) {
            printf("FAIL %s: %dx%d, %d threads: norm %.17g, reference %.17g\n", test_name_now,
                   rows, cols, threads, *sum, sqrt(ref));
            test_failed_now = 1;
        }
        break;
    }
    }
    *border_ok = tmat_border_ok(&a) && tmat_border_ok(&b) && tmat_border_ok(&c);
    double *d = to_d(out);
    tmat_release(&a);
    tmat_release(&b);
    tmat_release(&c);
    vector_release(&v);
    vector_release(&w);
    rng = saved;
    matrix_set_num_threads(1);
    return d;
}

static void test_split_matches_serial(void) {
    /* the last: one long row, as a vector is (its elementwise ops and sum of squares in fixed
     * parts over the pool: cpu_split_flat) */
    const int shapes[][2] = {{301, 233}, {7, 9000}, {1000, 40}, {1, 200003}};
    for (int k = 0; k < 4; k++)
        for (int op = 0; op < S_NUM_OPS; op++) {
            int rows = shapes[k][0], cols = shapes[k][1], ok1, ok3;
            double s1, s3;
            double *one = run_split_op(op, 1, rows, cols, 100 + op, &s1, &ok1);
            double *three = run_split_op(op, 3, rows, cols, 100 + op, &s3, &ok3);
            CHECK(ok1 && ok3);
            CHECK_NEAR(s3, s1, 1e-12);
            if (rows == 1 && op == S_FROB) CHECK(s1 == s3); /* the parts' sums in part order */
            if (op == S_SETROWS) CHECK(s1 == 0 && s3 == 0);
            for (long i = 0; i < (long)rows * cols; i++)
                if (one[i] != three[i]) {
                    printf("FAIL %s: op %d, %dx%d: element %ld differs (%g vs %g)\n", test_name_now,
                           op, rows, cols, i, one[i], three[i]);
                    test_failed_now = 1;
                    free(one);
                    free(three);
                    return;
                }
            free(one);
            free(three);
        }
}

/* Split products (by rows and by columns, every transposition, strided views) against the
 * unsplit product. */
static void test_split_gemm(void) {
    const int shapes[][3] = {{512, 80, 1024}, {80, 1024, 512}, {300, 301, 97}, {33, 2000, 64}};
    for (int k = 0; k < 4; k++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int m = shapes[k][0], n = shapes[k][1], kk = shapes[k][2];
                struct tmat a, b, c1, c3;
                tmat_init(&a, ta ? kk : m, ta ? m : kk, 1);
                tmat_init(&b, tb ? n : kk, tb ? kk : n, 1);
                tmat_init(&c1, m, n, 1);
                tmat_init(&c3, m, n, 0);
                matrix_copy(&c3.m, &c1.m);
                matrix_set_num_threads(1);
                matrix_add_mat_mat(&c1.m, 0.5f, &a.m, ta, &b.m, tb, 1.0f);
                matrix_set_num_threads(3);
                matrix_add_mat_mat(&c3.m, 0.5f, &a.m, ta, &b.m, tb, 1.0f);
                matrix_set_num_threads(1);
                CHECK(tmat_border_ok(&c1));
                for (int r = 0; r < m; r++)
                    for (int col = 0; col < n; col++)
                        CHECK_NEAR(at(&c3.m, r, col), at(&c1.m, r, col), 1e-4);
                tmat_release(&a);
                tmat_release(&b);
                tmat_release(&c1);
                tmat_release(&c3);
            }
}

/* matrix_project_out against a double loop: every mode (in place, from a copy, from a copy a
 * column short with implicit ones, with H given), views, norms; 1 and 3 threads bitwise equal;
 * the fused pass and the products one by one (matrix_project_path), whichever this CPU prefers. */
static void check_project_out(void);
static void test_project_out(void) {
    for (int path = 1; path >= 0 && !test_failed_now; path--) {
        matrix_project_path = path;
        check_project_out();
    }
    matrix_project_path = -1;
}
static void check_project_out(void) {
    const int shapes[][3] = {{1, 1, 1}, {3, 7, 2}, {4, 16, 4}, {5, 33, 5}, {17, 64, 3},
                             {130, 785, 20}, {37, 441, 80}, {9, 10, 5}, {600, 130, 9}};
    for (int k = 0; k < 9; k++)
        for (int mode = 0; mode < 4; mode++) { /* 0 in place, 1 src, 2 src + ones, 3 have_h */
            int n = shapes[k][0], d = shapes[k][1], r = shapes[k][2];
            if (mode == 2 && d < 2) continue;
            struct tmat x, x3, w, h, h3, src;
            tmat_init(&x, n, d, 1);
            tmat_init(&x3, n, d, 0);
            tmat_init(&w, r, d, 1);
            matrix_scale(&w.m, 1.0f / (float)d);
            tmat_init(&h, n, r, 1);
            tmat_init(&h3, n, r, 0);
            tmat_init(&src, n, mode == 2 ? d - 1 : d, 1);
            const struct matrix *sp = mode == 1 || mode == 2 ? &src.m : NULL;
            /* x0 in double; the reference H and result */
            double *x0 = xmalloc(((size_t)n * d + 1) * sizeof *x0);
            for (int i = 0; i < n; i++)
                for (int c = 0; c < d; c++)
                    x0[(long)i * d + c] = sp ? (c < sp->cols ? at(sp, i, c) : 1.0) : at(&x.m, i, c);
            double *hw = xmalloc(((size_t)n * r + 1) * sizeof *hw);
            double *xw = xmalloc(((size_t)n * d + 1) * sizeof *xw);
            double *in = xmalloc((n + 1) * sizeof *in), *out = xmalloc((n + 1) * sizeof *out);
            for (int i = 0; i < n; i++) {
                in[i] = out[i] = 0;
                for (int j = 0; j < r; j++) {
                    double s = 0;
                    for (int c = 0; c < d; c++) s += x0[(long)i * d + c] * at(&w.m, j, c);
                    if (mode == 3) s = at(&h.m, i, j); /* given */
                    hw[(long)i * r + j] = s;
                }
                for (int c = 0; c < d; c++) {
                    double v = x0[(long)i * d + c];
                    in[i] += v * v;
                    for (int j = 0; j < r; j++) v -= hw[(long)i * r + j] * at(&w.m, j, c);
                    xw[(long)i * d + c] = v;
                    out[i] += v * v;
                }
            }
            matrix_copy(&x3.m, &x.m);
            matrix_copy(&h3.m, &h.m);
            struct vector vi, vo, vi3, vo3;
            vector_init(&vi, n);
            vector_init(&vo, n);
            vector_init(&vi3, n);
            vector_init(&vo3, n);
            matrix_set_num_threads(1);
            matrix_project_out(&x.m, &h.m, &w.m, mode == 3, sp, &vi, &vo);
            matrix_set_num_threads(3);
            matrix_project_out(&x3.m, &h3.m, &w.m, mode == 3, sp, &vi3, &vo3);
            matrix_set_num_threads(1);
            CHECK(tmat_border_ok(&x) && tmat_border_ok(&h) && tmat_border_ok(&src));
            check_equal_d(&x.m, xw, 1e-4);
            check_equal_d(&h.m, hw, 1e-4);
            for (int i = 0; i < n; i++) {
                CHECK_NEAR(vi.data[i], in[i], 1e-4 * (1 + in[i]));
                CHECK_NEAR(vo.data[i], out[i], 1e-4 * (1 + out[i]));
                CHECK(vi.data[i] == vi3.data[i] && vo.data[i] == vo3.data[i]);
            }
            for (int i = 0; i < n; i++) {
                for (int c = 0; c < d; c++) CHECK(at(&x.m, i, c) == at(&x3.m, i, c));
                for (int j = 0; j < r; j++) CHECK(at(&h.m, i, j) == at(&h3.m, i, j));
            }
            /* without norms: the same x */
            if (mode != 3) {
                matrix_copy(&x3.m, &x.m);
                if (!sp) { /* redo from x0 */
                    for (int i = 0; i < n; i++)
                        for (int c = 0; c < d; c++) x3.m.data[(long)i * x3.m.stride + c] = (float)x0[(long)i * d + c];
                }
                matrix_project_out(&x3.m, &h3.m, &w.m, 0, sp, NULL, NULL);
                for (int i = 0; i < n; i++)
                    for (int c = 0; c < d; c++) CHECK(at(&x.m, i, c) == at(&x3.m, i, c));
            }
            free(x0);
            free(hw);
            free(xw);
            free(in);
            free(out);
            vector_release(&vi);
            vector_release(&vo);
            vector_release(&vi3);
            vector_release(&vo3);
            tmat_release(&x);
            tmat_release(&x3);
            tmat_release(&w);
            tmat_release(&h);
            tmat_release(&h3);
            tmat_release(&src);
            if (test_failed_now) return;
        }
}

/* matrix_project_out_j's result for x0 (n x d, double) and w against a double loop: x, h, j,
 * the norms (tolerances as test_project_out's). */
static void check_project_j(const struct matrix *x, const struct matrix *h, const struct matrix *j,
                            const struct vector *vi, const struct vector *vo, const double *x0,
                            const struct matrix *w) {
    int n = x->rows, d = x->cols, r = w->rows;
    double *hw = xmalloc(((size_t)n * r + 1) * sizeof *hw);
    for (int i = 0; i < n; i++)
        for (int q = 0; q < r; q++) {
            double s = 0;
            for (int c = 0; c < d; c++) s += x0[(long)i * d + c] * at(w, q, c);
            hw[(long)i * r + q] = s;
            CHECK_NEAR(at(h, i, q), s, 1e-4);
        }
    for (int i = 0; i < n; i++) {
        double in = 0, out = 0;
        for (int c = 0; c < d; c++) {
            double v = x0[(long)i * d + c];
            in += v * v;
            for (int q = 0; q < r; q++) v -= hw[(long)i * r + q] * at(w, q, c);
            out += v * v;
            CHECK_NEAR(at(x, i, c), v, 1e-4);
        }
        CHECK_NEAR(vi->data[i], in, 1e-4 * (1 + in));
        CHECK_NEAR(vo->data[i], out, 1e-4 * (1 + out));
    }
    for (int q = 0; q < r; q++)
        for (int c = 0; c < d; c++) {
            double s = 0;
            for (int i = 0; i < n; i++) s += hw[(long)i * r + q] * x0[(long)i * d + c];
            CHECK_NEAR(at(j, q, c), s, 1e-4 * (1 + fabs(s)));
        }
    free(hw);
}

/* matrix_project_out_j (an update call's pass). Its fused kernel (forced, at every rank): x, h
 * and the norms bit for bit those of matrix_project_out; j = h^T x0 against a double loop; 1, 2
 * and 3 threads bitwise equal (J's sum is taken in fixed parts of the rows: N from one part to
 * the most, 8). Then the call as dispatched (the fused kernel or the products one by one, by
 * rank), and the products one by one forced, at every rank on 1 and 3 threads: x, h, j and the
 * norms against a double loop. */
static void test_project_out_j(void) {
    const int shapes[][3] = {{1, 1, 1}, {3, 7, 2}, {5, 33, 5},     {64, 17, 3},  {65, 40, 7},
                             {130, 785, 20}, {37, 441, 80}, {600, 130, 9}, {513, 24, 11},
                             {100, 400, 6},   /* 2 parts: on 3 threads the first has none */
                             {96, 300, 40}};
    for (int k = 0; k < 11; k++)
        for (int mode = 0; mode < 3; mode++) { /* 0 in place, 1 src, 2 src + ones */
            int n = shapes[k][0], d = shapes[k][1], r = shapes[k][2];
            if (mode == 2 && d < 2) continue;
            struct tmat x[3], h[3], j[3], xr, hr, w, src;
            for (int t = 0; t < 3; t++) {
                tmat_init(&x[t], n, d, t != 1);
                tmat_init(&h[t], n, r, t != 2);
                tmat_init(&j[t], r, d, 1);
            }
            tmat_init(&xr, n, d, 0);
            tmat_init(&hr, n, r, 0);
            tmat_init(&w, r, d, 1);
            matrix_scale(&w.m, 1.0f / (float)d);
            tmat_init(&src, n, mode == 2 ? d - 1 : d, 1);
            const struct matrix *sp = mode ? &src.m : NULL;
            for (int t = 1; t < 3; t++) matrix_copy(&x[t].m, &x[0].m);
            matrix_copy(&xr.m, &x[0].m);
            double *x0 = xmalloc(((size_t)n * d + 1) * sizeof *x0);
            for (int i = 0; i < n; i++)
                for (int c = 0; c < d; c++)
                    x0[(long)i * d + c] =
                        sp ? (c < sp->cols ? at(sp, i, c) : 1.0) : at(&x[0].m, i, c);
            double *jw = xmalloc(((size_t)r * d + 1) * sizeof *jw);
            struct vector vi[3], vo[3], vir, vor;
            for (int t = 0; t < 3; t++) {
                vector_init(&vi[t], n);
                vector_init(&vo[t], n);
            }
            vector_init(&vir, n);
            vector_init(&vor, n);
            matrix_project_j_path = 1; /* both fused: the reference xr is matrix_project_out's */
            matrix_project_path = 1;
            struct matrix scratch;
            int srows = matrix_project_out_j_scratch(&x[0].m, r);
            CHECK(n <= 64 || srows > 0); /* scratch follows the forced path */
            matrix_init(&scratch, srows > 0 ? srows : 1, d);
            matrix_set_const(&scratch, NAN); /* every slot used is written before it is read */
            matrix_project_out(&xr.m, &hr.m, &w.m, 0, sp, &vir, &vor);
            /* J in double from h (as computed) and x0 */
            for (int q = 0; q < r; q++)
                for (int c = 0; c < d; c++) {
                    double s = 0;
                    for (int i = 0; i < n; i++) s += (double)at(&hr.m, i, q) * x0[(long)i * d + c];
                    jw[(long)q * d + c] = s;
                }
            for (int t = 0; t < 3; t++) {
                matrix_set_num_threads(t + 1);
                matrix_project_out_j(&x[t].m, &h[t].m, &j[t].m, &w.m, sp, &vi[t], &vo[t],
                                     srows > 0 ? &scratch : NULL);
            }
            matrix_set_num_threads(1);
            for (int t = 0; t < 3; t++)
                CHECK(tmat_border_ok(&x[t]) && tmat_border_ok(&h[t]) && tmat_border_ok(&j[t]));
            for (int q = 0; q < r; q++)
                for (int c = 0; c < d; c++) {
                    double want = jw[(long)q * d + c];
                    CHECK_NEAR(at(&j[0].m, q, c), want, 1e-4 * (1 + fabs(want)));
                    CHECK(at(&j[0].m, q, c) == at(&j[1].m, q, c));
                    CHECK(at(&j[0].m, q, c) == at(&j[2].m, q, c));
                }
            for (int t = 0; t < 3; t++)
                for (int i = 0; i < n; i++) {
                    for (int c = 0; c < d; c++) CHECK(at(&x[t].m, i, c) == at(&xr.m, i, c));
                    for (int q = 0; q < r; q++) CHECK(at(&h[t].m, i, q) == at(&hr.m, i, q));
                    CHECK(vi[t].data[i] == vir.data[i] && vo[t].data[i] == vor.data[i]);
                }
            /* dispatched (-1) and the products one by one (0), from fresh outputs (x[0] back to
             * its x0 when in place; h and j random) */
            for (int path = -1; path <= 0; path++)
                for (int threads = 1; threads <= 3; threads += 2) {
                    matrix_project_j_path = path;
                    matrix_set_num_threads(threads);
                    for (int i = 0; i < n; i++)
                        for (int c = 0; c < d; c++)
                            x[0].m.data[(long)i * x[0].m.stride + c] =
                                sp ? NAN : (float)x0[(long)i * d + c];
                    matrix_set_randn(&h[0].m, &rng, 1.0f);
                    matrix_set_randn(&j[0].m, &rng, 1.0f);
                    for (int i = 0; i < n; i++) vi[0].data[i] = vo[0].data[i] = NAN;
                    int sr = matrix_project_out_j_scratch(&x[0].m, r);
                    if (path == 0) CHECK(sr == 0);
                    if (sr > 0) matrix_set_const(&scratch, NAN);
                    matrix_project_out_j(&x[0].m, &h[0].m, &j[0].m, &w.m, sp, &vi[0], &vo[0],
                                         sr > 0 ? &scratch : NULL);
                    matrix_set_num_threads(1);
                    CHECK(tmat_border_ok(&x[0]) && tmat_border_ok(&h[0]) && tmat_border_ok(&j[0]));
                    CALL(check_project_j(&x[0].m, &h[0].m, &j[0].m, &vi[0], &vo[0], x0, &w.m));
                }
            matrix_project_j_path = -1;
            matrix_project_path = -1;
            for (int t = 0; t < 3; t++) {
                vector_release(&vi[t]);
                vector_release(&vo[t]);
                tmat_release(&x[t]);
                tmat_release(&h[t]);
                tmat_release(&j[t]);
            }
            free(x0);
            free(jw);
            matrix_release(&scratch);
            vector_release(&vir);
            vector_release(&vor);
            tmat_release(&xr);
            tmat_release(&hr);
            tmat_release(&w);
            tmat_release(&src);
            if (test_failed_now) return;
        }
}

int main(void) {
    rng_seed(&rng, 20240611);
    matrix_set_num_threads(1);
    TEST_RUN(test_storage_and_views);
    TEST_RUN(test_copy_and_fill);
    TEST_RUN(test_level1);
    TEST_RUN(test_gemm);
    TEST_RUN(test_sym_add_mat_mat);
    TEST_RUN(test_level2);
    TEST_RUN(test_elementwise);
    TEST_RUN(test_nonlinearity_values);
    TEST_RUN(test_backward_finite_differences);
    TEST_RUN(test_backward_in_place);
    TEST_RUN(test_softmax);
    TEST_RUN(test_pnorm_and_normalize_values);
    TEST_RUN(test_splice);
    TEST_RUN(test_sparse);
    TEST_RUN(test_empty_shapes);
    TEST_RUN(test_sym_eig);
    TEST_RUN(test_cholesky);
    TEST_RUN(test_split_matches_serial);
    TEST_RUN(test_split_gemm);
    TEST_RUN(test_project_out);
    TEST_RUN(test_project_out_j);
    TEST_MAIN_END();
}
