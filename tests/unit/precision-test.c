/* --precision=bf16 against fp32: every component's forward output, input derivative and parameter
 * gradient (and natural gradient's step), a whole network's, and a short training run.
 *
 * Tolerances (bf16 rounds each operand of a layer product to 8 significant bits, relative error
 * <= 2^-9; products accumulate in fp32):
 *   - components without a layer product (nonlinearities, splicing, fixed scale/bias, dropout,
 *     softmax, normalize, p-norm): identical bits; bf16 never reaches them;
 *   - a layer product's result: relative Frobenius error <= 1e-2 against fp32 (measured 1.5e-3 to
 *     3e-3: about 2^-9 times the square root of two operands' roundings), and every element within
 *     3e-2 of the largest element of its matrix;
 *   - a whole network of every component type: forward output and gradient within 2e-2 Frobenius
 *     (the roundings of several layers add up; measured 3.3e-3 and 7.7e-3). Its ReLU is kept off
 *     its kink: an input within rounding of 0 flips its derivative, an O(1) change that says
 *     nothing about bf16;
 *   - natural gradient's projection (x0 - (x0 w^T) w and the row norms), run as bf16 products where
 *     its rank and widths make them pay: the residual, h and the norms within 1e-2 Frobenius of
 *     fp32's, every way of calling it (in place, from src, src and ones, h given); h from a layer
 *     derivative's kept bf16 copy bit for bit as from a new one;
 *   - training: 40 NG-SGD updates in bf16 reach an objective within 2% of fp32's.
 * Without AMX-BF16 / AVX512-BF16 (or oneDNN) the comparisons print SKIP; the refusal itself is
 * tested in onednn-test and t0621. */
#include <stdlib.h>
#include <string.h>

#include "nnet/nnet.h"
#include "test.h"
#include "component-cases.h"

static void fill(struct matrix *m, struct rng *r, float scale) {
    for (int i = 0; i < m->rows; i++)
        for (int j = 0; j < m->cols; j++) matrix_set(m, i, j, scale * rng_gauss(r));
}

/* |a - b|_F / |b|_F and max |a_ij - b_ij| / max |b_ij|; a, b host copies */
static void compare(const float *a, const float *b, long n, double *frob, double *maxel) {
    double d = 0, nb = 0, md = 0, mb = 0;
    for (long i = 0; i < n; i++) {
        double e = (double)a[i] - b[i];
        d += e * e;
        nb += (double)b[i] * b[i];
        if (fabs(e) > md) md = fabs(e);
        if (fabs(b[i]) > mb) mb = fabs(b[i]);
    }
    *frob = nb > 0 ? sqrt(d / nb) : sqrt(d);
    *maxel = mb > 0 ? md / mb : md;
}

static float *host_of(const struct matrix *m) {
    float *p = xmalloc(sizeof(float) * ((size_t)m->rows * m->cols + 1));
    matrix_to_host(m, p);
    return p;
}

struct run {
    float *out, *in_deriv, *delta;
};

/* Forward and backward of a fresh copy of c in the given precision. */
static void run_component(const struct component *proto, const struct matrix *x, int chunks,
                          const struct matrix *out_deriv_src, int mode, const char *precision,
                          struct run *res) {
    if (matrix_set_precision(precision)) die("%s", error_get());
    struct component *c = component_copy(proto);
    int out_rows = component_output_rows(c, x->rows, chunks);
    struct matrix out, in_deriv, od;
    matrix_init(&out, out_rows, c->output_dim);
    matrix_init(&in_deriv, x->rows, c->input_dim);
    matrix_init(&od, out_rows, c->output_dim);
    matrix_copy(&od, out_deriv_src);
    if (c->ops->bind) c->ops->bind(c);
    c->ops->propagate(c, x, &out, chunks, 1);
    struct vector delta = {0};
    if (c->ops->updatable) vector_init(&delta, c->num_params);
    c->ops->backprop(c, x, &out, &od, &in_deriv, chunks, c->ops->updatable ? &delta : NULL, mode);
    res->out = host_of(&out);
    res->in_deriv = host_of(&in_deriv);
    res->delta = NULL;
    if (c->ops->updatable) {
        res->delta = xmalloc(sizeof(float) * c->num_params);
        vector_to_host(&delta, res->delta);
    }
    vector_release(&delta);
    matrix_release(&out);
    matrix_release(&in_deriv);
    matrix_release(&od);
    component_free(c);
    matrix_set_precision("fp32");
}

static void run_free(struct run *r) {
    free(r->out);
    free(r->in_deriv);
    free(r->delta);
}

static int check_pair(const char *what, const char *config, const float *a, const float *b,
                      long n, int product, double frob_tol, double max_tol) {
    double frob, maxel;
    compare(a, b, n, &frob, &maxel);
    int ok = product ? frob <= frob_tol && maxel <= max_tol : !memcmp(a, b, sizeof(float) * n);
    if (getenv("NNET_TEST_VERBOSE") || !ok)
        printf("    %s %s: bf16 vs fp32 relative Frobenius %.3g, max element %.3g%s\n", config,
               what, frob, maxel, product ? "" : " (expected identical)");
    return ok;
}

static void test_every_component_bf16(void) {
    struct rng r;
    rng_seed(&r, 19);
    const int ncases = (int)(sizeof component_cases / sizeof component_cases[0]);
    /* every registered type is covered */
    const struct component_ops *const *all = component_ops_all();
    for (int i = 0; all[i]; i++) {
        int found = component_case_covers(all[i], 1);
        if (!found) printf("    no bf16 case for %s\n", all[i]->type);
        CHECK(found);
    }
    for (int k = 0; k < ncases; k++) {
        const char *config = component_cases[k].bf16_config;
        int product = component_cases[k].bf16_product;
        if (!config) continue;
        struct component *c = component_new_from_config(config, -1, &r);
        CHECK(c != NULL);
        int chunks = 2, rows = chunks * (128 + c->left_context + c->right_context);
        struct matrix x, od;
        matrix_init(&x, rows, c->input_dim);
        fill(&x, &r, 1.0f);
        int out_rows = component_output_rows(c, rows, chunks);
        matrix_init(&od, out_rows, c->output_dim);
        fill(&od, &r, 0.1f);
        for (int mode = BACKPROP_GRADIENT; mode <= BACKPROP_STEP; mode++) {
            if (mode == BACKPROP_STEP && !c->ops->updatable) continue;
            struct run f, b;
            run_component(c, &x, chunks, &od, mode, "fp32", &f);
            run_component(c, &x, chunks, &od, mode, "bf16", &b);
            int ok = check_pair("output", config, b.out, f.out,
                                (long)out_rows * c->output_dim, product, 1e-2, 3e-2) &&
                     check_pair("input derivative", config, b.in_deriv, f.in_deriv,
                                (long)rows * c->input_dim, product, 1e-2, 3e-2) &&
                     (!c->ops->updatable ||
                      check_pair(mode == BACKPROP_STEP ? "step" : "gradient", config,
                                 b.delta, f.delta, c->num_params, product, 1e-2, 3e-2));
            run_free(&f);
            run_free(&b);
            CHECK(ok);
        }
        matrix_release(&x);
        matrix_release(&od);
        component_free(c);
    }
}

static const char *net_config =
    "SpliceComponent input-dim=40 context=-1:0:1\n"
    "FixedAffineComponent output-dim=256 bias-stddev=0.1\n"
    "NaturalGradientAffineComponent output-dim=512 learning-rate=0.01 rank-in=8 rank-out=16\n"
    "PnormComponent output-dim=256 p=2\n"
    "NormalizeComponent\n"
    "AffineComponent output-dim=256 learning-rate=0.02\n"
    "DropoutComponent dropout-proportion=0.25\n"
    "TanhComponent\n"
    "FixedScaleComponent value=1.5\n"
    "SigmoidComponent\n"
    "FixedBiasComponent value=0.3\n" /* keeps the ReLU off its kink (sigmoid + 0.3 > 0) */
    "RectifiedLinearComponent\n"
    "AffineComponent output-dim=40 param-stddev=0.2 bias-stddev=0.1\n"
    "SoftmaxComponent\n";

static void net_run(const char *precision, const struct matrix *x, const struct matrix *od,
                    float **out, float **grad, int *nout, int *np) {
    if (matrix_set_precision(precision)) die("%s", error_get());
    struct nnet *n = nnet_init_from_config_text(net_config, 3);
    if (!n) die("%s", error_get());
    nnet_set_seed(n, 5);
    const struct matrix *y = nnet_forward(n, x, 4, 1);
    *nout = y->rows * y->cols;
    *out = host_of(y);
    if (nnet_backward(n, od, NNET_GRADIENT)) die("non-finite gradient");
    struct vector d = nnet_delta(n);
    *np = d.dim;
    *grad = xmalloc(sizeof(float) * d.dim);
    vector_to_host(&d, *grad);
    nnet_free(n);
    matrix_set_precision("fp32");
}

static void test_network_bf16(void) {
    struct rng r;
    rng_seed(&r, 23);
    struct matrix x, od;
    matrix_init(&x, 4 * 66, 40);
    matrix_init(&od, 4 * 64, 40);
    fill(&x, &r, 1.0f);
    fill(&od, &r, 0.1f);
    float *o1, *g1, *o2, *g2;
    int no, np;
    net_run("fp32", &x, &od, &o1, &g1, &no, &np);
    net_run("bf16", &x, &od, &o2, &g2, &no, &np);
    double fo, mo, fg, mg;
    compare(o2, o1, no, &fo, &mo);
    compare(g2, g1, np, &fg, &mg);
    free(o1);
    free(o2);
    free(g1);
    free(g2);
    matrix_release(&x);
    matrix_release(&od);
    if (getenv("NNET_TEST_VERBOSE") || !(fo <= 2e-2 && fg <= 2e-2))
        printf("    network: output rel. Frobenius %.3g (max el. %.3g), gradient %.3g (%.3g)\n", fo,
               mo, fg, mg);
    CHECK(fo > 0 && fg > 0); /* bf16 was really used */
    CHECK(fo <= 2e-2 && fg <= 2e-2);
}

/* One matrix_project_out in the given precision (mode: 0 in place, 1 from src, 2 from src and a
 * column of ones, 3 with h given); x, h, and both norms back on the host. */
static void project_run(const char *precision, int mode, const struct matrix *x0,
                        const struct matrix *w, const struct matrix *h_given, float **x_out,
                        float **h_out, float **in_sq, float **out_sq) {
    if (matrix_set_precision(precision)) die("%s", error_get());
    int n = x0->rows, d = w->cols;
    struct matrix x, h, src;
    matrix_init(&x, n, d);
    matrix_init(&h, n, w->rows);
    matrix_init(&src, n, mode == 2 ? d - 1 : d);
    struct matrix x0v = matrix_view(x0, 0, n, 0, src.cols);
    matrix_copy(&src, &x0v);
    if (mode == 0 || mode == 3) matrix_copy(&x, x0);
    if (mode == 3) matrix_copy(&h, h_given);
    struct vector vi, vo;
    vector_init(&vi, n);
    vector_init(&vo, n);
    matrix_project_out(&x, &h, w, mode == 3, mode == 1 || mode == 2 ? &src : NULL, &vi, &vo);
    *x_out = host_of(&x);
    *h_out = host_of(&h);
    *in_sq = xmalloc(sizeof(float) * n);
    *out_sq = xmalloc(sizeof(float) * n);
    vector_to_host(&vi, *in_sq);
    vector_to_host(&vo, *out_sq);
    matrix_release(&x);
    matrix_release(&h);
    matrix_release(&src);
    vector_release(&vi);
    vector_release(&vo);
    matrix_set_precision("fp32");
}

static void test_project_bf16(void) {
    struct rng r;
    rng_seed(&r, 41);
    enum { N = 256, D = 512, R = 80 };
    struct matrix x0, w, hg;
    matrix_init(&x0, N, D);
    matrix_init(&w, R, D);
    matrix_init(&hg, N, R);
    fill(&x0, &r, 1.0f);
    fill(&w, &r, 1.0f / sqrtf((float)D));
    fill(&hg, &r, 1.0f);
    float *in_place[4] = {NULL}; /* mode 0's bf16 x, h and norms */
    for (int mode = 0; mode < 4; mode++) { /* 0 in place, 1 src, 2 src + ones, 3 h given */
        float *xf, *hf, *if_, *of, *xb, *hb, *ib, *ob;
        project_run("fp32", mode, &x0, &w, &hg, &xf, &hf, &if_, &of);
        project_run("bf16", mode, &x0, &w, &hg, &xb, &hb, &ib, &ob);
        double fx, mx, fh, mh, fi, mi, fo, mo;
        compare(xb, xf, (long)N * D, &fx, &mx);
        compare(hb, hf, (long)N * R, &fh, &mh);
        compare(ib, if_, N, &fi, &mi);
        compare(ob, of, N, &fo, &mo);
        if (getenv("NNET_TEST_VERBOSE") || !(fx <= 1e-2 && fh <= 1e-2 && fi <= 1e-2 && fo <= 1e-2))
            printf("    projection mode %d: bf16 vs fp32 relative Frobenius x %.3g, h %.3g, "
                   "norms %.3g / %.3g\n", mode, fx, fh, fi, fo);
        CHECK(fx > 0); /* bf16 was really used */
        CHECK(fx <= 1e-2 && fh <= 1e-2 && fi <= 1e-2 && fo <= 1e-2);
        if (mode == 1) { /* from src (written as -h w, then src added) = in place, bit for bit */
            CHECK(!memcmp(xb, in_place[0], sizeof(float) * N * D));
            CHECK(!memcmp(hb, in_place[1], sizeof(float) * N * R));
            CHECK(!memcmp(ib, in_place[2], sizeof(float) * N));
            CHECK(!memcmp(ob, in_place[3], sizeof(float) * N));
            for (int i = 0; i < 4; i++) free(in_place[i]);
        }
        free(xf), free(hf), free(if_), free(of);
        if (mode == 0) {
            in_place[0] = xb, in_place[1] = hb, in_place[2] = ib, in_place[3] = ob;
            continue;
        }
        free(xb), free(hb), free(ib), free(ob);
    }
    /* h from the copy a layer's backward product keeps of its derivative (dY W stores dY's) */
    if (matrix_set_precision("bf16")) die("%s", error_get());
    struct matrix dx, wl, x, h1, h2;
    matrix_init(&dx, N, 64);
    matrix_init(&wl, D, 64);
    matrix_init(&x, N, D);
    matrix_init(&h1, N, R);
    matrix_init(&h2, N, R);
    fill(&wl, &r, 0.1f);
    matrix_project_out(&x, &h1, &w, 0, &x0, NULL, NULL);     /* a new copy of x0 */
    matrix_layer_backprop(&dx, &x0, &wl);                   /* keeps x0's */
    matrix_project_out(&x, &h2, &w, 0, &x0, NULL, NULL);     /* that one */
    float *a = host_of(&h1), *b = host_of(&h2);
    CHECK(!memcmp(a, b, sizeof(float) * N * R));
    free(a), free(b);
    matrix_set_precision("fp32");
    matrix_release(&dx), matrix_release(&wl), matrix_release(&x), matrix_release(&h1);
    matrix_release(&h2), matrix_release(&x0), matrix_release(&w), matrix_release(&hg);
}

/* A teacher network's labels, learnt by NG-SGD: bf16 ends where fp32 does. */
static double train_objective(const char *precision) {
    if (matrix_set_precision(precision)) die("%s", error_get());
    const char *cfg =
        "NaturalGradientAffineComponent input-dim=256 output-dim=256 learning-rate=0.001\n"
        "RectifiedLinearComponent\n"
        "NaturalGradientAffineComponent output-dim=256 learning-rate=0.001\n"
        "RectifiedLinearComponent\n"
        "NaturalGradientAffineComponent output-dim=32 learning-rate=0.002\n"
        "SoftmaxComponent\n";
    struct nnet *n = nnet_init_from_config_text(cfg, 7);
    struct rng r;
    rng_seed(&r, 31);
    enum { MB = 256, STEPS = 40 };
    struct matrix x, w, logits, deriv = {0};
    matrix_init(&x, MB, 256);
    matrix_init(&w, 32, 256);
    matrix_init(&logits, MB, 32);
    fill(&w, &r, 1.0f);
    int rows[MB], cols[MB];
    double objf = 0;
    for (int s = 0; s < STEPS; s++) {
        fill(&x, &r, 1.0f);
        matrix_add_mat_mat(&logits, 1, &x, MATRIX_NO_TRANS, &w, MATRIX_TRANS, 0);
        int arg[MB];
        matrix_row_argmax(&logits, arg);
        for (int i = 0; i < MB; i++) {
            rows[i] = i;
            cols[i] = arg[i];
        }
        nnet_forward(n, &x, MB, 1);
        double o = nnet_objective_xent(n, MB, rows, cols, NULL, &deriv);
        if (s >= STEPS - 10) objf += o / (10.0 * MB);
        nnet_backward(n, &deriv, NNET_UPDATE);
    }
    matrix_release(&x);
    matrix_release(&w);
    matrix_release(&logits);
    matrix_release(&deriv);
    nnet_free(n);
    matrix_set_precision("fp32");
    return objf;
}

static void test_training_bf16(void) {
    double f = train_objective("fp32"), b = train_objective("bf16");
    if (getenv("NNET_TEST_VERBOSE") || !(fabs(b - f) <= 0.02 * fabs(f)))
        printf("    training: objective per sample over the last 10 steps fp32 %.5f, bf16 %.5f\n",
               f, b);
    CHECK(f < -0.0 && f > log(1.0 / 32) * 0.95); /* it learnt something */
    CHECK(fabs(b - f) <= 0.02 * fabs(f));
}

int main(void) {
    matrix_set_num_threads(1);
    if (matrix_bf16_supported()) {
        printf("SKIP bf16 vs fp32 comparisons: %s\n", error_get());
        return 0;
    }
    TEST_RUN(test_every_component_bf16);
    TEST_RUN(test_network_bf16);
    TEST_RUN(test_project_bf16);
    TEST_RUN(test_training_bf16);
    matrix_set_num_threads(2);
    TEST_RUN(test_every_component_bf16); /* the products split over the pool */
    TEST_RUN(test_project_bf16);
    TEST_MAIN_END();
}
