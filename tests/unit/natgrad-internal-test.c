/* White-box tests of natgrad's re-orthogonalization (docs/NATURAL-GRADIENT.md §1.5), which
 * ordinary data reach only after long runs: the Cholesky transform, and its Gram-Schmidt fallback
 * for ill-conditioned and singular rows. The module is compiled into this file to reach its static
 * functions; the library's copy is then not linked. */
#include "natgrad/natgrad.c"
#include "test.h"

enum { D = 20, R = 6, N = 40 };

/* A preconditioner with a real estimate (a few minibatches of anisotropic data). */
static struct natgrad *trained(void) {
    struct natgrad_options o;
    natgrad_options_default(&o);
    o.rank = R;
    struct natgrad *p = natgrad_new(D, &o, 3);
    struct rng r;
    rng_seed(&r, 21);
    struct matrix x;
    matrix_init(&x, N, D);
    float host[N * D], scale;
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < N * D; i++)
            host[i] = rng_gauss(&r) * (1.0f + (float)(i % D));
        matrix_from_host(&x, host);
        natgrad_precondition(p, &x, &scale);
    }
    matrix_release(&x);
    return p;
}

/* Put rows rr (R x D, meant as R_{t+1}) scaled by sqrt(e) into the W_{t+1} slot, re-orthogonalize,
 * and read back R_{t+1} = E^{-1/2} W_{t+1} into out. */
static int reorthogonalize_rows(struct natgrad *p, const double *rr, double *out) {
    double sqrt_e[R], inv_sqrt_e[R];
    natgrad_compute_e(p, p->d, p->rho, sqrt_e, inv_sqrt_e);
    float w[R * D];
    for (int i = 0; i < R; i++)
        for (int c = 0; c < D; c++)
            w[i * D + c] = (float)(sqrt_e[i] * rr[i * D + c]);
    struct matrix wnew = matrix_rows(&p->wj[!p->cur], 0, R);
    matrix_from_host(&wnew, w);
    int rc = natgrad_reorthogonalize(p, p->d, p->rho);
    matrix_to_host(&wnew, w);
    for (int i = 0; i < R; i++)
        for (int c = 0; c < D; c++)
            out[i * D + c] = w[i * D + c] * inv_sqrt_e[i];
    return rc;
}

static double dot(const double *a, const double *b) {
    double s = 0;
    for (int c = 0; c < D; c++)
        s += a[c] * b[c];
    return s;
}

/* max |R R^T - I| */
static double orth_error(const double *rr) {
    double worst = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < R; j++) {
            double e = fabs(dot(rr + i * D, rr + j * D) - (i == j));
            if (e > worst) worst = e;
        }
    return worst;
}

/* The current R_t of p, on the host in double. */
static void current_rows(struct natgrad *p, double *rr) {
    double sqrt_e[R], inv_sqrt_e[R];
    natgrad_compute_e(p, p->d, p->rho, sqrt_e, inv_sqrt_e);
    float w[R * D];
    struct matrix wm = matrix_rows(&p->wj[p->cur], 0, R);
    matrix_to_host(&wm, w);
    for (int i = 0; i < R; i++)
        for (int c = 0; c < D; c++)
            rr[i * D + c] = w[i * D + c] * inv_sqrt_e[i];
}

static void test_state_is_orthonormal(void) {
    struct natgrad *p = trained();
    double rr[R * D];
    current_rows(p, rr);
    CHECK(orth_error(rr) < 1e-4);
    natgrad_free(p);
}

/* Mildly non-orthogonal rows: the Cholesky transform makes them orthonormal, keeps the first
 * row's direction (C^{-1} is lower triangular) and the span. */
static void test_cholesky_reorthogonalization(void) {
    struct natgrad *p = trained();
    struct rng r;
    rng_seed(&r, 22);
    double rr[R * D], out[R * D];
    current_rows(p, rr);
    for (int k = 0; k < R * D; k++)
        rr[k] += 0.01 * rng_gauss(&r);
    CHECK(orth_error(rr) > 1e-3); /* enough to need the transform */
    CHECK(reorthogonalize_rows(p, rr, out) == 0);
    CHECK(orth_error(out) < 1e-5);
    CHECK_NEAR(dot(out, rr) / sqrt(dot(rr, rr)), 1.0, 1e-6); /* row 0: same direction */
    double proj = 0; /* rr's rows lie in span(out), so (both of rank R) the spans agree */
    for (int i = 0; i < R; i++) {
        double res[D];
        memcpy(res, rr + i * D, sizeof res);
        for (int k = 0; k < R; k++) {
            double q = dot(res, out + k * D);
            for (int c = 0; c < D; c++)
                res[c] -= q * out[k * D + c];
        }
        proj += dot(res, res);
    }
    CHECK(sqrt(proj) < 1e-4);
    natgrad_free(p);
}

/* Nearly parallel rows: C^{-1} is out of range, so Gram-Schmidt on the host takes over. */
static void test_gram_schmidt_fallback(void) {
    struct natgrad *p = trained();
    struct rng r;
    rng_seed(&r, 23);
    double rr[R * D], out[R * D];
    current_rows(p, rr);
    for (int c = 0; c < D; c++)
        rr[1 * D + c] = rr[0 * D + c] + 1e-4 * rng_gauss(&r);
    CHECK(reorthogonalize_rows(p, rr, out) == 0);
    CHECK(orth_error(out) < 1e-5);
    CHECK_NEAR(dot(out, rr) / sqrt(dot(rr, rr)), 1.0, 1e-6);
    natgrad_free(p);
}

/* A zero row makes O singular: Cholesky fails, Gram-Schmidt restarts the row at random. */
static void test_zero_row_restarts(void) {
    struct natgrad *p = trained();
    double rr[R * D], out[R * D];
    current_rows(p, rr);
    memset(rr + 2 * D, 0, D * sizeof *rr);
    CHECK(reorthogonalize_rows(p, rr, out) == 0);
    CHECK(orth_error(out) < 1e-5);
    for (int i = 0; i < 2; i++) /* the rows before it were orthonormal already */
        CHECK_NEAR(dot(out + i * D, rr + i * D) / sqrt(dot(rr + i * D, rr + i * D)), 1.0, 1e-5);
    natgrad_free(p);
}

/* The CPU pass (matrix_project_out, blocks of 4 rows) on 1 thread against 3 threads, whose
 * shares start at other rows: the same Xhat, gamma and row norms over update and ordinary calls
 * (the offsets into H, the norms and the source are right). */
static void test_row_blocks(void) {
    struct natgrad_options o;
    natgrad_options_default(&o);
    o.rank = R;
    struct natgrad *p[2] = {natgrad_new(D, &o, 3), natgrad_new(D, &o, 3)};
    enum { M = 200 };
    struct matrix src, x[2];
    struct vector n[2];
    matrix_init(&src, M, D - 1);
    static float h[M * D], g[2][M * D], v[2][M];
    for (int k = 0; k < 2; k++) {
        matrix_init(&x[k], M, D);
        vector_init(&n[k], M);
    }
    struct rng r;
    rng_seed(&r, 8);
    for (int t = 0; t < 20; t++) {
        for (int i = 0; i < M * (D - 1); i++) h[i] = rng_gauss(&r) * (1.0f + (float)(i % 5));
        matrix_from_host(&src, h);
        float scale[2];
        for (int k = 0; k < 2; k++) {
            matrix_set_num_threads(k ? 3 : 1);
            natgrad_precondition_copy(p[k], &src, &x[k], &scale[k], &n[k]);
            matrix_to_host(&x[k], g[k]);
            vector_to_host(&n[k], v[k]);
        }
        double e = 0, m = 0;
        for (int i = 0; i < M * D; i++) {
            e = fmax(e, fabs(g[0][i] - g[1][i]));
            m = fmax(m, fabs(g[0][i]));
        }
        CHECK(e <= 1e-5 * m);
        CHECK(fabs(scale[0] - scale[1]) <= 1e-5 * scale[0]);
        for (int i = 0; i < M; i++) CHECK(fabs(v[0][i] - v[1][i]) <= 1e-5 * v[0][i] + 1e-30);
    }
    for (int k = 0; k < 2; k++) {
        natgrad_free(p[k]);
        matrix_release(&x[k]);
        vector_release(&n[k]);
    }
    matrix_release(&src);
    matrix_set_num_threads(1);
}

/* The update's host part on the helper thread (joined by the next call) against solving it at
 * once: the same Xhat, gamma, row norms and state, bit for bit, over 30 calls (11 updates at the
 * start, then every 2nd), on 1 and 2 threads, with natgrad_get_state between calls. */
static void test_async_update_identical(void) {
    enum { M = 64, DD = 50, RR = 12 };
    static float h[M * DD], g[2][M * DD], v[2][M], w[2][RR * DD];
    double d[2][RR], rho[2];
    for (int threads = 1; threads <= 2; threads++) {
        matrix_set_num_threads(threads);
        struct natgrad_options o;
        natgrad_options_default(&o);
        o.rank = RR;
        o.update_period = 2;
        struct natgrad *p[2] = {natgrad_new(DD, &o, 5), natgrad_new(DD, &o, 5)};
        struct matrix src, x;
        struct vector n;
        matrix_init(&src, M, DD - 1);
        matrix_init(&x, M, DD);
        vector_init(&n, M);
        struct rng r;
        rng_seed(&r, 9);
        int was = natgrad_async_min_rank, deferred = 0;
        for (int t = 0; t < 30; t++) {
            for (int i = 0; i < M * (DD - 1); i++) h[i] = rng_gauss(&r) * (1.0f + (float)(i % 7));
            matrix_from_host(&src, h);
            float scale[2];
            for (int k = 0; k < 2; k++) {
                natgrad_async_min_rank = k ? 1 : 1000; /* k = 1: deferred */
                natgrad_precondition_copy(p[k], &src, &x, &scale[k], &n);
                matrix_to_host(&x, g[k]);
                vector_to_host(&n, v[k]);
                if (k == 0) CHECK(!p[k]->pending);
                else deferred += p[k]->pending && p[k]->helper_running;
                if (t % 5 == 4) CHECK(natgrad_get_state(p[k], w[k], d[k], &rho[k]) == RR);
            }
            CHECK(memcmp(g[0], g[1], sizeof g[0]) == 0);
            CHECK(memcmp(v[0], v[1], sizeof v[0]) == 0);
            CHECK(scale[0] == scale[1]);
            if (t % 5 == 4) {
                CHECK(memcmp(w[0], w[1], sizeof w[0]) == 0);
                CHECK(memcmp(d[0], d[1], sizeof d[0]) == 0 && rho[0] == rho[1]);
            }
        }
        CHECK(p[1]->t == 30);
        CHECK(deferred >= 20 - 30 / 5); /* the update calls not followed by natgrad_get_state */
        natgrad_async_min_rank = was;
        for (int k = 0; k < 2; k++) natgrad_free(p[k]);
        matrix_release(&src);
        matrix_release(&x);
        vector_release(&n);
    }
    matrix_set_num_threads(1);
}

int main(void) {
    TEST_RUN(test_state_is_orthonormal);
    TEST_RUN(test_cholesky_reorthogonalization);
    TEST_RUN(test_gram_schmidt_fallback);
    TEST_RUN(test_zero_row_restarts);
    TEST_RUN(test_row_blocks);
    TEST_RUN(test_async_update_identical);
    TEST_MAIN_END();
}
