/* Unit tests for nnet: finite-difference gradient checks of every component and of a whole
 * network, config errors, model round trips and truncated models, max-change and non-finite
 * steps, the objective, and small training runs (SGD, and NG-SGD on an ill-conditioned problem). */
#include "nnet/nnet.h"
#include "test.h"
#include "component-cases.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- helpers ---- */

static void fill_randn(struct matrix *m, struct rng *r) {
    for (int i = 0; i < m->rows; i++)
        for (int j = 0; j < m->cols; j++)
            matrix_set(m, i, j, rng_gauss(r));
}

/* sum_ij a_ij b_ij in double on the host */
static double dot_mat(const struct matrix *a, const struct matrix *b) {
    double s = 0;
    for (int i = 0; i < a->rows; i++)
        for (int j = 0; j < a->cols; j++)
            s += (double)matrix_get(a, i, j) * matrix_get(b, i, j);
    return s;
}

/* Relative error of two host arrays: |a - b| / max(|a|, |b|, 1e-3). */
static double rel_err(const double *a, const double *b, int n) {
    double d = 0, na = 0, nb = 0;
    for (int i = 0; i < n; i++) {
        d += (a[i] - b[i]) * (a[i] - b[i]);
        na += a[i] * a[i];
        nb += b[i] * b[i];
    }
    double scale = sqrt(na > nb ? na : nb);
    return sqrt(d) / (scale > 1e-3 ? scale : 1e-3);
}

/* Also element by element: the largest |a - b| / max(1, |b|), so that a small wrong part (a
 * bias) cannot hide in a good whole. */
static double max_err(const double *a, const double *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]) / (fabs(b[i]) > 1 ? fabs(b[i]) : 1);
        m = e > m ? e : m;
    }
    return m;
}

/* Inputs whose elements stay away from the kinks (ReLU at 0, Normalize at rms 1): magnitudes
 * in [0.1, ...), rows scaled alternately by 0.4 and 2. */
static void fill_test_input(struct matrix *m, struct rng *r) {
    for (int i = 0; i < m->rows; i++) {
        float row_scale = i % 2 ? 2.0f : 0.4f;
        for (int j = 0; j < m->cols; j++) {
            float g = rng_gauss(r);
            float v = (g < 0 ? -1 : 1) * (0.1f + fabsf(g));
            matrix_set(m, i, j, row_scale * v);
        }
    }
}

/* f(x) = <R, component(x)>, with the component's random streams restarted every time. */
static double comp_objective(struct component *c, const struct matrix *x, struct matrix *out,
                             const struct matrix *r, int chunks) {
    if (c->ops->bind) c->ops->bind(c);
    c->ops->propagate(c, x, out, chunks, 1);
    return dot_mat(r, out);
}

/* ---- gradient checks of every component ---- */

static void test_component_gradients(void) {
    struct rng r;
    rng_seed(&r, 11);
    const int ncases = (int)(sizeof component_cases / sizeof component_cases[0]);
    const double h = 1e-3;
    for (int k = 0; k < ncases; k++) {
        if (!component_cases[k].config) continue;
        test_name_now = component_cases[k].config;
        struct component *c = component_new_from_config(component_cases[k].config, -1, &r);
        CHECK(c != NULL);
        int chunks = component_cases[k].chunks;
        int ctx = c->left_context + c->right_context;
        int in_rows = chunks * (4 + ctx);
        int out_rows = component_output_rows(c, in_rows, chunks);
        CHECK(out_rows == 4 * chunks);
        struct matrix x, out, rr, in_deriv;
        matrix_init(&x, in_rows, c->input_dim);
        matrix_init(&out, out_rows, c->output_dim);
        matrix_init(&rr, out_rows, c->output_dim);
        matrix_init(&in_deriv, in_rows, c->input_dim);
        fill_test_input(&x, &r);
        fill_randn(&rr, &r);
        comp_objective(c, &x, &out, &rr, chunks);
        struct vector delta = {0};
        if (c->ops->updatable) vector_init(&delta, c->num_params);
        c->ops->backprop(c, &x, &out, &rr, &in_deriv, chunks, c->ops->updatable ? &delta : NULL,
                         BACKPROP_GRADIENT);

        /* input derivative */
        int nin = in_rows * c->input_dim;
        double *an = xmalloc(nin * sizeof *an), *nu = xmalloc(nin * sizeof *nu);
        for (int i = 0; i < in_rows; i++) {
            for (int j = 0; j < c->input_dim; j++) {
                float v = matrix_get(&x, i, j);
                matrix_set(&x, i, j, v + (float)h);
                double fp = comp_objective(c, &x, &out, &rr, chunks);
                matrix_set(&x, i, j, v - (float)h);
                double fm = comp_objective(c, &x, &out, &rr, chunks);
                matrix_set(&x, i, j, v);
                nu[i * c->input_dim + j] = (fp - fm) / (2 * h);
                an[i * c->input_dim + j] = matrix_get(&in_deriv, i, j);
            }
        }
        double e = rel_err(an, nu, nin), em = max_err(an, nu, nin), norm = 0;
        for (int i = 0; i < nin; i++)
            norm += an[i] * an[i];
        free(an);
        free(nu);
        if (getenv("NNET_TEST_VERBOSE") || !(e < 2e-3 && em < 2e-3))
            printf("    %s: input derivative relative error %g, max element error %g\n",
                   component_cases[k].config, e, em);
        CHECK(e < 2e-3 && em < 2e-3);
        CHECK(norm > 1e-4); /* not vacuous */

        /* parameter gradient */
        if (c->ops->updatable) {
            int np = c->num_params;
            an = xmalloc(np * sizeof *an);
            nu = xmalloc(np * sizeof *nu);
            for (int i = 0; i < np; i++) {
                float v = vector_get(&c->params, i);
                vector_set(&c->params, i, v + (float)h);
                double fp = comp_objective(c, &x, &out, &rr, chunks);
                vector_set(&c->params, i, v - (float)h);
                double fm = comp_objective(c, &x, &out, &rr, chunks);
                vector_set(&c->params, i, v);
                nu[i] = (fp - fm) / (2 * h);
                an[i] = vector_get(&delta, i);
            }
            e = rel_err(an, nu, np);
            em = max_err(an, nu, np);
            free(an);
            free(nu);
            if (getenv("NNET_TEST_VERBOSE") || !(e < 2e-3 && em < 2e-3))
                printf("    %s: parameter gradient relative error %g, max element error %g\n",
                       component_cases[k].config, e, em);
            CHECK(e < 2e-3 && em < 2e-3);
        }
        vector_release(&delta);
        matrix_release(&x);
        matrix_release(&out);
        matrix_release(&rr);
        matrix_release(&in_deriv);
        component_free(c);
    }
    test_name_now = "test_component_gradients";
}

/* Every registered type has a gradient case. */
static void test_every_component_checked(void) {
    const struct component_ops *const *all = component_ops_all();
    for (int i = 0; all[i]; i++) {
        int found = component_case_covers(all[i], 0);
        if (!found) printf("    no gradient check for %s\n", all[i]->type);
        CHECK(found);
    }
}

/* ---- a whole network ---- */

static const char *test_config =
    "# a network with every kind of component\n"
    "SpliceComponent input-dim=4 context=-1:0:1\n"
    "FixedAffineComponent output-dim=12 bias-stddev=0.1\n"
    "AffineComponentPreconditionedOnline output-dim=12 learning-rate=0.01 rank-in=4 rank-out=4\n"
    "PnormComponent output-dim=6 p=2\n"
    "NormalizeComponent\n"
    "AffineComponent output-dim=8 learning-rate=0.02  # trailing comment\n"
    "DropoutComponent dropout-proportion=0.25\n"
    "TanhComponent\n"
    "FixedScaleComponent value=1.5\n"
    "SigmoidComponent\n"
    "FixedBiasComponent value=-0.5\n"
    "RectifiedLinearComponent\n"
    "AffineComponent output-dim=5 param-stddev=0.5 bias-stddev=0.1\n"
    "SoftmaxComponent\n";

static double net_objective(struct nnet *n, const struct matrix *x, int chunks,
                            const struct matrix *r) {
    nnet_set_seed(n, 5); /* the same dropout masks every time */
    const struct matrix *y = nnet_forward(n, x, chunks, 1);
    return dot_mat(r, y);
}

/* The finite-difference check of nnet_backward's gradient at 60 random parameters (n forwarded
 * on x with NNET_GRADIENT against r by the caller); prints the errors when they are too large. */
static int network_gradient_ok(struct nnet *n, const struct matrix *x, int chunks,
                               const struct matrix *rr, struct rng *r) {
    struct vector p = nnet_params(n), d = nnet_delta(n);
    int np = p.dim, ns = 60;
    double an[60], nu[60], h = 1e-3;
    for (int s = 0; s < ns; s++) {
        int i = (int)rng_below(r, np);
        float v = vector_get(&p, i);
        vector_set(&p, i, v + (float)h);
        double fp = net_objective(n, x, chunks, rr);
        vector_set(&p, i, v - (float)h);
        double fm = net_objective(n, x, chunks, rr);
        vector_set(&p, i, v);
        nu[s] = (fp - fm) / (2 * h);
        an[s] = vector_get(&d, i);
    }
    double e = rel_err(an, nu, ns), em = max_err(an, nu, ns);
    if (getenv("NNET_TEST_VERBOSE") || !(e < 5e-3 && em < 5e-3))
        printf("    network gradient relative error %g, max element error %g\n", e, em);
    return e < 5e-3 && em < 5e-3;
}

/* x (chunks of in_rows rows) and rr (chunks of out_rows rows) drawn from r, n forwarded on x,
 * and its gradient against rr checked by network_gradient_ok. */
static int random_gradient_ok(struct nnet *n, int chunks, int in_rows, int out_rows,
                              struct rng *r, struct matrix *x, struct matrix *rr) {
    matrix_init(x, chunks * in_rows, nnet_input_dim(n));
    matrix_init(rr, chunks * out_rows, nnet_output_dim(n));
    fill_randn(x, r);
    fill_randn(rr, r);
    net_objective(n, x, chunks, rr);
    return nnet_backward(n, rr, NNET_GRADIENT) == 0 && network_gradient_ok(n, x, chunks, rr, r);
}

static void test_network_gradient(void) {
    struct nnet *n = nnet_init_from_config_text(test_config, 3);
    if (!n) printf("    %s\n", error_get());
    CHECK(n != NULL);
    CHECK(nnet_num_components(n) == 14);
    CHECK(nnet_num_updatable(n) == 3);
    CHECK(nnet_left_context(n) == 1 && nnet_right_context(n) == 1);
    CHECK(nnet_input_dim(n) == 4 && nnet_output_dim(n) == 5);
    CHECK(nnet_num_params(n) == 12 * 13 + 8 * 7 + 5 * 9);
    struct rng r;
    rng_seed(&r, 4);
    int chunks = 3, rows = chunks * 4;
    struct matrix x, rr;
    CHECK(random_gradient_ok(n, chunks, rows / chunks, 2, &r, &x, &rr));
    /* Chunks are independent: chunk 1 alone gives rows 2..3 of the output. */
    const struct matrix *y = nnet_forward(n, &x, chunks, 0);
    struct matrix all;
    matrix_init(&all, y->rows, y->cols);
    matrix_copy(&all, y);
    struct matrix x1 = matrix_rows(&x, 4, 4);
    y = nnet_forward(n, &x1, 1, 0);
    CHECK(y->rows == 2);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++)
            CHECK_NEAR(matrix_get(y, i, j), matrix_get(&all, 2 + i, j), 1e-5);
    matrix_release(&all);
    matrix_release(&x);
    matrix_release(&rr);
    nnet_free(n);
}

/* ---- config errors ---- */

static void expect_config_error(const char *config, const char *fragment) {
    struct nnet *n = nnet_init_from_config_text(config, 1);
    if (n || !strstr(error_get(), fragment))
        printf("    config '%s': got '%s', expected '%s'\n", config, n ? "success" : error_get(),
               fragment);
    nnet_free(n);
}

static void test_config_errors(void) {
    static const struct {
        const char *config, *fragment;
    } cases[] = {
        {"AffineComponent input-dim=3 output-dim=4 foo=1\n", "unknown key 'foo'"},
        {"AffineComponent input-dim=3 output-dim=x\n", "key 'output-dim'"},
        {"AffineComponent input-dim=3\n", "missing key 'output-dim'"},
        {"AffineComponent input-dim=3 output-dim=4 learning-rate=-1\n", "key 'learning-rate'"},
        {"AffineComponent input-dim=3 output-dim=4 learning-rate=1e99\n", "key 'learning-rate'"},
        {"SigmoidComponent\n", "missing key 'dim'"},
        {"SigmoidComponent dim=0\n", "key 'dim'"},
        {"FooComponent dim=3\n", "unknown component type 'FooComponent'"},
        {"SigmoidComponent dim=3 dim=4\n", "key 'dim' given twice"},
        {"SigmoidComponent dim\n", "expected key=value"},
        {"SpliceComponent input-dim=3 context=-1:x\n", "key 'context'"},
        {"SpliceComponent input-dim=3 context=1:0\n", "key 'context'"},
        {"SpliceComponent input-dim=3 context=1:2\n", "key 'context'"},
        {"SpliceComponent input-dim=3 left-context=-1\n", "key 'left-context'"},
        {"PnormComponent input-dim=7 output-dim=2\n", "multiple of output-dim"},
        {"PnormComponent input-dim=6 output-dim=2 p=0.5\n", "key 'p'"},
        {"DropoutComponent dim=3 dropout-proportion=1\n", "key 'dropout-proportion'"},
        {"NaturalGradientAffineComponent input-dim=3 output-dim=4 rank-in=0\n", "key 'rank-in'"},
        {"NaturalGradientAffineComponent input-dim=3 output-dim=4 alpha=x\n", "key 'alpha'"},
        {"FixedAffineComponent matrix=/nonexistent/lda.mat\n", "key 'matrix'"},
        {"FixedScaleComponent scales=/nonexistent/s.vec\n", "key 'scales'"},
        {"SigmoidComponent dim=3\nTanhComponent dim=4\n", "line 2: input dim 4"},
        {"# nothing\n\n", "no components"},
        /* graphs: name= and input= (docs/COMPONENTS.md "Residual connections") */
        {"SigmoidComponent dim=2 input=foo\n", "line 1: key 'input': unknown name 'foo'"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=Sum(a, b)\nTanhComponent name=b\n",
         "line 2: key 'input': unknown name 'b' (a line reads 'input' and the names of earlier"},
        {"SigmoidComponent dim=2 name=a input=a\n", "line 1: key 'input': unknown name 'a'"},
        {"SigmoidComponent dim=2 name=a\nAffineComponent output-dim=3 name=b\n"
         "TanhComponent input=Sum(a, b)\n", "line 3: key 'input': Sum of dims 2 and 3"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent dim=3 input=Append(a, input)\n",
         "line 2: input dim 3 of TanhComponent does not match dim 4 of its input Append(a,input)"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent name=a\n",
         "line 2: name 'a' is given twice"},
        {"SigmoidComponent dim=2 name=input\n", "line 1: name 'input' is reserved"},
        {"SigmoidComponent dim=2 name=Sum\n", "line 1: name 'Sum' is reserved"},
        {"SigmoidComponent dim=2 name=1a\n", "line 1: name '1a': a letter or '_' first"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=Max(a, a)\n",
         "line 2: key 'input': unknown function 'Max'"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=Sum(a, a\n",
         "line 2: key 'input': expected ')' at 'the end'"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=Sum(a a)\n",
         "line 2: key 'input': expected ')' at 'a)'"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=a)\n",
         "line 2: key 'input': unexpected ')' after the descriptor"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=Offset(a)\n",
         "line 2: key 'input': expected ','"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=Offset(a, 10001)\n",
         "line 2: key 'input': Offset needs a frame offset in [-10000, 10000]"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent input=Sum()\n",
         "line 2: key 'input': expected a name"},
        {"SigmoidComponent dim=4 input=Append(input, input, input)\n",
         "line 1: input dim 4 of SigmoidComponent is not a multiple of 3"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent\nTanhComponent input=a\n",
         "line 2: the output of TanhComponent is read by no later line"},
        {"SigmoidComponent dim=2 name=a\nTanhComponent name=b\nTanhComponent input=a\n",
         "line 2: the output of TanhComponent (name 'b') is read by no later line"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct nnet *n = nnet_init_from_config_text(cases[i].config, 1);
        if (n || !strstr(error_get(), cases[i].fragment))
            printf("    config '%s': got '%s', expected '%s'\n", cases[i].config,
                   n ? "success" : error_get(), cases[i].fragment);
        CHECK(n == NULL);
        CHECK(strstr(error_get(), cases[i].fragment) != NULL);
    }
    /* The line number is named. */
    expect_config_error("SigmoidComponent dim=3\n\nTanhComponent bar=2\n", "line 3");
    struct nnet *n = nnet_init_from_config_text("SigmoidComponent dim=3\n\nTanh bar=2\n", 1);
    CHECK(n == NULL && strstr(error_get(), "line 3") && strstr(error_get(), "unknown key 'bar'"));
    /* Kaldi names and short names resolve to the same types. */
    CHECK(component_ops_find("AffineComponentPreconditionedOnline") ==
          component_ops_find("<NaturalGradientAffineComponent>"));
    CHECK(component_ops_find("Sigmoid") == component_ops_find("SigmoidComponent"));
    CHECK(component_ops_find("Component") == NULL);
    CHECK(component_ops_find("<>") == NULL);
}

/* ---- model I/O ---- */

static char *write_mem(const struct nnet *n, int binary, size_t *size) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, size);
    struct kout out;
    kout_wrap(&out, f, "mem");
    int bad = io_write_header(&out, binary) || nnet_write(n, &out, binary) || kout_close(&out);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

static struct nnet *read_mem(const char *buf, size_t size) {
    if (size == 0) {
        error_set("empty");
        return NULL;
    }
    FILE *f = fmemopen((void *)buf, size, "r");
    if (!f) return NULL;
    struct kin in;
    kin_wrap(&in, f, "mem", (int64_t)size);
    int binary;
    struct nnet *n = NULL;
    if (!io_read_header(&in, &binary)) n = nnet_read(&in, binary);
    kin_close(&in);
    fclose(f);
    return n;
}

static void test_model_round_trip(void) {
    struct nnet *n = nnet_init_from_config_text(test_config, 7);
    CHECK(n != NULL);
    for (int binary = 0; binary <= 1; binary++) {
        size_t s1, s2;
        char *b1 = write_mem(n, binary, &s1);
        CHECK(b1 != NULL);
        struct nnet *m = read_mem(b1, s1);
        if (!m) printf("    %s\n", error_get());
        CHECK(m != NULL);
        CHECK(nnet_same_structure(n, m));
        char *b2 = write_mem(m, binary, &s2);
        CHECK(b2 != NULL && s1 == s2 && !memcmp(b1, b2, s1));
        if (binary) { /* binary is exact */
            struct vector p = nnet_params(n), q = nnet_params(m);
            for (int i = 0; i < p.dim; i++)
                CHECK(vector_get(&p, i) == vector_get(&q, i));
        }
        free(b1);
        free(b2);
        nnet_free(m);
    }
    /* binary -> text -> binary -> text: the texts are identical, the parameters close */
    size_t sb, st1, sb2, st2;
    char *b = write_mem(n, 1, &sb), *t1 = write_mem(n, 0, &st1);
    struct nnet *m = read_mem(t1, st1);
    CHECK(m != NULL);
    char *b2 = write_mem(m, 1, &sb2), *t2 = write_mem(m, 0, &st2);
    CHECK(st1 == st2 && !memcmp(t1, t2, st1));
    CHECK(sb == sb2);
    struct vector p = nnet_params(n), q = nnet_params(m);
    for (int i = 0; i < p.dim; i++)
        CHECK_NEAR(vector_get(&q, i), vector_get(&p, i), 1e-6);
    free(b);
    free(t1);
    free(b2);
    free(t2);
    nnet_free(m);
    /* a copy has the same parameters in its own block */
    struct nnet *c = nnet_copy(n);
    CHECK(nnet_same_structure(n, c));
    struct vector pc = nnet_params(c);
    CHECK(pc.data != p.data);
    for (int i = 0; i < p.dim; i++)
        CHECK(vector_get(&pc, i) == vector_get(&p, i));
    nnet_free(c);
    nnet_free(n);
}

/* Every prefix of a model file (at most `prefixes` of them) fails cleanly (the last bytes of a
 * text file are whitespace); `corrupt` copies with 3 bytes changed never crash (they may or may
 * not be detected). */
static void check_damaged_model(const char *buf, size_t size, int binary, size_t prefixes,
                                int corrupt) {
    for (size_t len = 0; len + (binary ? 1 : 2) < size; len += size / prefixes + 1) {
        struct nnet *m = read_mem(buf, len);
        if (m)
            printf("    %s model truncated to %zu of %zu bytes was accepted\n",
                   binary ? "binary" : "text", len, size);
        CHECK(m == NULL);
        CHECK(*error_get() != 0);
    }
    struct rng r;
    rng_seed(&r, 99);
    for (int t = 0; t < corrupt; t++) {
        char *copy = xmalloc(size);
        memcpy(copy, buf, size);
        for (int k = 0; k < 3; k++)
            copy[rng_below(&r, (uint32_t)size)] = (char)rng_u32(&r);
        nnet_free(read_mem(copy, size));
        free(copy);
    }
}

static void test_truncated_model(void) {
    struct nnet *n = nnet_init_from_config_text(test_config, 7);
    CHECK(n != NULL);
    for (int binary = 0; binary <= 1; binary++) {
        size_t size;
        char *buf = write_mem(n, binary, &size);
        CHECK(buf != NULL);
        check_damaged_model(buf, size, binary, 400, 300);
        free(buf);
    }
    /* a later version is refused with a message */
    const char text[] = "<Nnet> <Version> 99 <NumComponents> 1 <Components> </Components> </Nnet>";
    CHECK(read_mem(text, sizeof text - 1) == NULL);
    CHECK(strstr(error_get(), "version 99") != NULL);
    /* a Kaldi file without <Version> (version 0) reads */
    const char kaldi[] =
        "<Nnet> <NumComponents> 2 <Components> <AffineComponent> <LearningRate> 0.01 "
        "<LinearParams> [\n 1 2\n 3 4 ]\n <BiasParams> [ 5 6 ]\n <IsGradient> F "
        "</AffineComponent> <SoftmaxComponent> <Dim> 2 <ValueSum> [ ]\n <DerivSum> [ ]\n "
        "<Count> 0 </SoftmaxComponent> </Components> </Nnet> ";
    struct nnet *k = read_mem(kaldi, sizeof kaldi - 1);
    if (!k) printf("    %s\n", error_get());
    CHECK(k != NULL);
    CHECK(nnet_num_params(k) == 6 && nnet_component(k, 0)->learning_rate == 0.01f);
    struct vector kp = nnet_params(k);
    CHECK(vector_get(&kp, 1) == 2 && vector_get(&kp, 5) == 6);
    nnet_free(k);
    nnet_free(n);
}

/* ---- objective, max-change, non-finite steps ---- */

static void test_objective_xent(void) {
    struct nnet *n = nnet_init_from_config_text(
        "AffineComponent input-dim=3 output-dim=4\nSoftmaxComponent\n", 1);
    struct nnet *nl = nnet_init_from_config_text(
        "AffineComponent input-dim=3 output-dim=4\nLogSoftmaxComponent\n", 1);
    CHECK(n && nl);
    struct vector p = nnet_params(n), pl = nnet_params(nl);
    vector_copy(&pl, &p);
    struct rng r;
    rng_seed(&r, 2);
    struct matrix x, d, dl;
    matrix_init(&x, 3, 3);
    matrix_init(&d, 1, 1);
    matrix_init(&dl, 1, 1);
    fill_randn(&x, &r);
    const struct matrix *y = nnet_forward(n, &x, 1, 0);
    nnet_forward(nl, &x, 1, 0);
    int rows[] = {0, 1, 2, 2}, cols[] = {1, 3, 0, 0};
    float w[] = {1, 0.5f, 2, 1};
    double expect = 0;
    for (int i = 0; i < 4; i++)
        expect += w[i] * log(matrix_get(y, rows[i], cols[i]));
    double o = nnet_objective_xent(n, 4, rows, cols, w, &d);
    double ol = nnet_objective_xent(nl, 4, rows, cols, w, &dl);
    CHECK_NEAR(o, expect, 1e-5);
    CHECK_NEAR(ol, expect, 1e-5);
    CHECK(d.rows == 3 && d.cols == 4);
    CHECK_NEAR(matrix_get(&d, 2, 0), 3 / matrix_get(y, 2, 0), 1e-5); /* duplicates add up */
    CHECK_NEAR(matrix_get(&dl, 2, 0), 3, 1e-6);
    CHECK(matrix_get(&d, 0, 0) == 0);
    /* Both give the same gradient through their (different) last components. */
    CHECK(nnet_backward(n, &d, NNET_GRADIENT) == 0);
    CHECK(nnet_backward(nl, &dl, NNET_GRADIENT) == 0);
    struct vector g = nnet_delta(n), gl = nnet_delta(nl);
    for (int i = 0; i < g.dim; i++)
        CHECK_NEAR(vector_get(&g, i), vector_get(&gl, i), 1e-4);
    /* the floor: a probability of 0 counts as 1e-20 */
    struct matrix big;
    matrix_init(&big, 1, 3);
    matrix_set(&big, 0, 0, 200);
    y = nnet_forward(n, &big, 1, 0);
    int r0 = 0, c0 = 0;
    for (int j = 0; j < 4; j++)
        if (matrix_get(y, 0, j) < matrix_get(y, 0, c0)) c0 = j;
    if (matrix_get(y, 0, c0) < 1e-20f) {
        o = nnet_objective_xent(n, 1, &r0, &c0, NULL, &d);
        CHECK_NEAR(o, log(1e-20), 1e-4);
    }
    matrix_release(&big);
    matrix_release(&x);
    matrix_release(&d);
    matrix_release(&dl);
    nnet_free(n);
    nnet_free(nl);
}

/* The default guards: hidden affine layers 0.75, the last 1.5, max-change=0 turns one off; NG
 * ranks by nnet3's rule when omitted; clipping is counted. */
static void test_default_guards(void) {
    const char *cfg = "NaturalGradientAffineComponent input-dim=5 output-dim=300\n"
                      "RectifiedLinearComponent\n"
                      "AffineComponent output-dim=7 max-change=0\n"
                      "NaturalGradientAffineComponent output-dim=3 learning-rate=1\n"
                      "SoftmaxComponent\n";
    struct nnet *n = nnet_init_from_config_text(cfg, 3);
    CHECK(n != NULL);
    if (!n) return;
    CHECK(nnet_component(n, 0)->max_change == NNET_DEFAULT_MAX_CHANGE_HIDDEN);
    CHECK(nnet_component(n, 2)->max_change == 0);
    CHECK(nnet_component(n, 3)->max_change == NNET_DEFAULT_MAX_CHANGE_FINAL);
    char buf[512];
    component_info(nnet_component(n, 0), buf, sizeof buf);
    CHECK(strstr(buf, "rank-in=3, rank-out=80") != NULL); /* min(20, 6/2), min(80, 301/2) */
    component_info(nnet_component(n, 3), buf, sizeof buf);
    CHECK(strstr(buf, "rank-in=4, rank-out=2") != NULL);  /* (7+1)/2, (3+1)/2 */
    /* a big step is clipped and counted */
    struct rng r;
    rng_seed(&r, 5);
    struct matrix in, d = {0};
    matrix_init(&in, 16, 5);
    matrix_set_randn(&in, &r, 100);
    nnet_forward(n, &in, 16, 1);
    int rows[16], cols[16];
    for (int i = 0; i < 16; i++) rows[i] = i, cols[i] = i % 3;
    nnet_objective_xent(n, 16, rows, cols, NULL, &d);
    nnet_set_learning_rate(n, 10);
    nnet_set_max_change(n, NNET_DEFAULT_MAX_CHANGE_GLOBAL);
    struct vector p = nnet_params(n), before;
    vector_init(&before, p.dim);
    vector_copy(&before, &p);
    CHECK(nnet_backward(n, &d, NNET_UPDATE) == 0);
    vector_add(&before, -1, &p);
    CHECK(vector_norm2(&before) <= NNET_DEFAULT_MAX_CHANGE_GLOBAL * 1.001);
    CHECK(nnet_component(n, 0)->mc_steps == 1 && nnet_component(n, 3)->mc_steps == 1);
    nnet_log_max_change_stats(n);
    nnet_reset_max_change_stats(n);
    CHECK(nnet_component(n, 0)->mc_steps == 0);
    vector_release(&before);
    matrix_release(&in);
    matrix_release(&d);
    nnet_free(n);
}

static void test_max_change_and_nonfinite(void) {
    const char *cfg = "AffineComponent input-dim=5 output-dim=4 learning-rate=1 max-change=0.5\n"
                      "SigmoidComponent\n"
                      "AffineComponent output-dim=3 learning-rate=1\n";
    struct nnet *n = nnet_init_from_config_text(cfg, 1);
    CHECK(n != NULL);
    struct rng r;
    rng_seed(&r, 5);
    struct matrix x, g;
    matrix_init(&x, 20, 5);
    matrix_init(&g, 20, 3);
    fill_randn(&x, &r);
    fill_randn(&g, &r);
    matrix_scale(&g, 10);
    struct vector p = nnet_params(n);
    struct vector before;
    vector_init(&before, p.dim);
    vector_copy(&before, &p);
    const struct component *c0 = nnet_component(n, 0), *c2 = nnet_component(n, 2);
    /* per-component max-change bounds the first layer's step */
    nnet_forward(n, &x, 1, 1);
    CHECK(nnet_backward(n, &g, NNET_UPDATE) == 0);
    struct vector step;
    vector_init(&step, p.dim);
    vector_copy(&step, &p);
    vector_add(&step, -1, &before);
    struct vector s0 = vector_range(&step, c0->param_offset, c0->num_params);
    struct vector s2 = vector_range(&step, c2->param_offset, c2->num_params);
    CHECK_NEAR(vector_norm2(&s0), 0.5, 1e-4);
    CHECK(vector_norm2(&s2) > 1); /* unclipped: lr 1, large derivatives */
    /* the global max-change bounds the whole step */
    nnet_set_max_change(n, 0.25f);
    vector_copy(&before, &p);
    nnet_forward(n, &x, 1, 1);
    CHECK(nnet_backward(n, &g, NNET_UPDATE) == 0);
    vector_copy(&step, &p);
    vector_add(&step, -1, &before);
    CHECK_NEAR(vector_norm2(&step), 0.25, 1e-4);
    /* a non-finite derivative: the step is skipped and the parameters stay */
    matrix_set(&g, 3, 1, NAN);
    vector_copy(&before, &p);
    nnet_forward(n, &x, 1, 1);
    CHECK(nnet_backward(n, &g, NNET_UPDATE) == 1);
    for (int i = 0; i < p.dim; i++)
        CHECK(vector_get(&p, i) == vector_get(&before, i));
    CHECK(vector_is_finite(&p));
    /* learning rates */
    float lrs[] = {0.1f, 0.2f};
    CHECK(nnet_set_learning_rates(n, lrs, 2) == 0);
    CHECK(c0->learning_rate == 0.1f && c2->learning_rate == 0.2f);
    CHECK(nnet_set_learning_rates(n, lrs, 1) == -1);
    nnet_scale_learning_rates(n, 0.5f);
    CHECK(c2->learning_rate == 0.1f);
    nnet_set_learning_rate(n, 0.3f);
    CHECK(c0->learning_rate == 0.3f && c2->learning_rate == 0.3f);
    vector_release(&before);
    vector_release(&step);
    matrix_release(&x);
    matrix_release(&g);
    nnet_free(n);
}

/* ---- components from files, dropout behaviour ---- */

/* Without max-change, NNET_UPDATE adds a step it can bound straight into the parameters: it
 * must equal NNET_STEP + nnet_apply_step (up to rounding), for Affine and NaturalGradientAffine,
 * and a non-finite or overflowing step must still be skipped with the parameters untouched. */
static void test_direct_update(void) {
    const char *cfgs[] = {
        "AffineComponent input-dim=6 output-dim=8 learning-rate=0.1\n"
        "RectifiedLinearComponent\n"
        "AffineComponent output-dim=5 learning-rate=0.05\nSoftmaxComponent\n",
        "NaturalGradientAffineComponent input-dim=6 output-dim=8 learning-rate=0.1 rank-in=2 "
        "rank-out=3\nRectifiedLinearComponent\n"
        "NaturalGradientAffineComponent output-dim=5 learning-rate=0.05 rank-in=3 rank-out=2\n"
        "SoftmaxComponent\n",
    };
    for (int k = 0; k < 2; k++) {
        struct nnet *a = nnet_init_from_config_text(cfgs[k], 3), *b = nnet_copy(a);
        struct rng r;
        rng_seed(&r, 11);
        struct matrix x, d = {0};
        matrix_init(&x, 16, 6);
        int rows[16], cols[16];
        for (int i = 0; i < 16; i++) rows[i] = i, cols[i] = (int)rng_below(&r, 5);
        struct vector pa = nnet_params(a), pb = nnet_params(b), before;
        vector_init(&before, pa.dim);
        for (int step = 0; step < 14; step++) { /* NG: past its 10 initial updates */
            fill_randn(&x, &r);
            nnet_forward(a, &x, 16, 1);
            nnet_objective_xent(a, 16, rows, cols, NULL, &d);
            CHECK(nnet_backward(a, &d, NNET_STEP) == 0);
            struct vector sa = nnet_delta(a);
            CHECK(nnet_apply_step(a, &sa) == 0);
            nnet_forward(b, &x, 16, 1);
            nnet_objective_xent(b, 16, rows, cols, NULL, &d);
            vector_copy(&before, &pb);
            CHECK(nnet_backward(b, &d, NNET_UPDATE) == 0);
            double moved = 0;
            for (int i = 0; i < pa.dim; i++) {
                CHECK_NEAR(vector_get(&pb, i), vector_get(&pa, i), 1e-5);
                moved += fabs(vector_get(&pb, i) - vector_get(&before, i));
            }
            CHECK(moved > 1e-3);
        }
        /* A step too large to bound below 1e30 but finite goes through the delta block (same
         * result); a NaN derivative, or one that makes the step overflow, is skipped. */
        for (int bad = 0; bad < 3; bad++) {
            struct nnet *nets[2] = {a, b};
            int rc[2];
            for (int m = 0; m < 2; m++) {
                nnet_forward(nets[m], &x, 16, 1);
                nnet_objective_xent(nets[m], 16, rows, cols, NULL, &d);
                if (bad == 0) matrix_scale(&d, 1e30f);
                if (bad == 1) matrix_set(&d, 2, 1, NAN);
                if (bad == 2) matrix_scale(&d, 3e38f);
                if (m == 1) vector_copy(&before, &pb);
                if (m == 0) {
                    CHECK(nnet_backward(a, &d, NNET_STEP) == 0);
                    struct vector sa = nnet_delta(a);
                    rc[0] = nnet_apply_step(a, &sa);
                } else {
                    rc[1] = nnet_backward(b, &d, NNET_UPDATE);
                }
            }
            CHECK(rc[0] == (bad > 0) && rc[1] == rc[0]);
            for (int i = 0; i < pb.dim; i++) {
                float va = vector_get(&pa, i), vb = vector_get(&pb, i);
                CHECK(fabsf(va - vb) <= 1e-5f * (1 + fabsf(va)));
                if (bad) CHECK(vb == vector_get(&before, i));
            }
        }
        matrix_release(&x), matrix_release(&d), vector_release(&before);
        nnet_free(a), nnet_free(b);
    }
}

/* An affine layer and the RectifiedLinear that alone reads it run as one product (its ReLU
 * applied as the product writes: component_ops propagate_relu): the same outputs, derivatives and
 * updates, bit for bit, as the two components one after the other; not where another component
 * reads the affine output too (the graph's second network) or where no ReLU follows. Under fp32
 * and, where the CPU has it, bf16. */
static void test_fused_relu(void) {
    enum { D = 144 }; /* wide and long enough for bf16 products (MATRIX_BF16_MIN_INNER) */
    const char *cfgs[] = {
        "AffineComponent input-dim=144 output-dim=144 learning-rate=0.1\n"
        "RectifiedLinearComponent\n"
        "NaturalGradientAffineComponent output-dim=144 learning-rate=0.05 rank-in=4 rank-out=4\n"
        "RectifiedLinearComponent\n"
        "AffineComponent output-dim=5 learning-rate=0.05\nSoftmaxComponent\n",
        "AffineComponent input-dim=144 output-dim=144 name=a learning-rate=0.1\n"
        "RectifiedLinearComponent name=r\n"
        "AffineComponent output-dim=5 input=Append(r, a) learning-rate=0.05\n"
        "SoftmaxComponent\n",
        /* too thin for oneDNN: OpenBLAS's product, then the ReLU's pass */
        "AffineComponent input-dim=144 output-dim=6 learning-rate=0.1\n"
        "RectifiedLinearComponent\nAffineComponent output-dim=5 learning-rate=0.05\n"
        "SoftmaxComponent\n",
    };
    const int fused[] = {1, 0, 1}; /* does the first layer's own output go unwritten */
    const char *precisions[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++) {
        if (p == 1 && matrix_bf16_supported() != 0) continue;
        CHECK(matrix_set_precision(precisions[p]) == 0);
        for (int k = 0; k < 3; k++) {
            struct nnet *n[2];
            n[0] = nnet_init_from_config_text(cfgs[k], 7);
            CHECK(n[0] != NULL);
            n[1] = nnet_copy(n[0]);
            struct rng r;
            rng_seed(&r, 5);
            enum { N = 160 };
            struct matrix x, d[2] = {{0}, {0}};
            matrix_init(&x, N, D);
            int rows[N], cols[N];
            for (int i = 0; i < N; i++) rows[i] = i, cols[i] = (int)rng_below(&r, 5);
            for (int step = 0; step < 12; step++) {
                fill_randn(&x, &r);
                const struct matrix *y[2];
                for (int m = 0; m < 2; m++) {
                    nnet_fuse_relu = m == 0;
                    y[m] = nnet_forward(n[m], &x, N, 1);
                    nnet_objective_xent(n[m], N, rows, cols, NULL, &d[m]);
                    CHECK(nnet_backward(n[m], &d[m], NNET_UPDATE) == 0);
                }
                CHECK(!memcmp(y[0]->data, y[1]->data, sizeof(float) * y[0]->rows * y[0]->cols));
                if (step == 0) { /* fused: the affine output of a new network never written */
                    const struct matrix *a = nnet_layer_output(n[0], 0);
                    CHECK((matrix_frobenius_norm(a) == 0) == fused[k]);
                    CHECK(matrix_frobenius_norm(nnet_layer_output(n[1], 0)) > 0);
                }
            }
            nnet_fuse_relu = 1;
            struct vector p0 = nnet_params(n[0]), p1 = nnet_params(n[1]);
            CHECK(!memcmp(p0.data, p1.data, sizeof(float) * p0.dim));
            matrix_release(&x), matrix_release(&d[0]), matrix_release(&d[1]);
            nnet_free(n[0]), nnet_free(n[1]);
        }
    }
    CHECK(matrix_set_precision("fp32") == 0);
}

static void test_components_from_files(void) {
    char dir[] = "/tmp/nnet-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char mat[64], vec[64], cfg[512];
    snprintf(mat, sizeof mat, "%s/lda.mat", dir);
    snprintf(vec, sizeof vec, "%s/s.vec", dir);
    FILE *f = fopen(mat, "w");
    CHECK(f != NULL);
    fputs(" [\n  1 2 3 \n  4 5 6 ]\n", f); /* Kaldi text matrix: 2 x (2 + bias) */
    fclose(f);
    f = fopen(vec, "w");
    CHECK(f != NULL);
    fputs(" [ 2 -1 ]\n", f);
    fclose(f);
    snprintf(cfg, sizeof cfg,
             "FixedAffineComponent matrix=%s\nFixedScaleComponent scales=%s\n"
             "FixedBiasComponent bias=%s\nAffineComponent matrix=%s learning-rate=0.1\n",
             mat, vec, vec, mat);
    struct nnet *n = nnet_init_from_config_text(cfg, 1);
    if (!n) printf("    %s\n", error_get());
    CHECK(n != NULL);
    CHECK(nnet_input_dim(n) == 2 && nnet_output_dim(n) == 2 && nnet_num_params(n) == 6);
    struct matrix x;
    matrix_init(&x, 1, 2);
    matrix_set(&x, 0, 0, 1);
    matrix_set(&x, 0, 1, -1);
    const struct matrix *y = nnet_forward(n, &x, 1, 0);
    /* [1 -1] -> [1-2+3, 4-5+6] = [2 5] -> *[2 -1] = [4 -5] -> +[2 -1] = [6 -6]
     * -> [6-12+3, 24-30+6] = [-3 0] */
    CHECK_NEAR(matrix_get(y, 0, 0), -3, 1e-6);
    CHECK_NEAR(matrix_get(y, 0, 1), 0, 1e-6);
    nnet_free(n);
    matrix_release(&x);
    /* a bad matrix file is an error naming the key */
    f = fopen(mat, "w");
    CHECK(f != NULL);
    fputs(" [ 1 2", f);
    fclose(f);
    snprintf(cfg, sizeof cfg, "FixedAffineComponent matrix=%s\n", mat);
    CHECK(nnet_init_from_config_text(cfg, 1) == NULL);
    CHECK(strstr(error_get(), "key 'matrix'") != NULL);
    remove(mat);
    remove(vec);
    rmdir(dir);
}

static void test_dropout(void) {
    struct nnet *n =
        nnet_init_from_config_text("DropoutComponent dim=50 dropout-proportion=0.2\n", 1);
    CHECK(n != NULL);
    struct matrix x;
    matrix_init(&x, 40, 50);
    matrix_set_const(&x, 1);
    const struct matrix *y = nnet_forward(n, &x, 1, 0);
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 50; j++)
            CHECK(matrix_get(y, i, j) == 1); /* identity at test time */
    y = nnet_forward(n, &x, 1, 1);
    int zeros = 0;
    double sum = 0;
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 50; j++) {
            float v = matrix_get(y, i, j);
            CHECK(v == 0 || fabsf(v - 1.25f) < 1e-6f);
            zeros += v == 0;
            sum += v;
        }
    CHECK(zeros > 300 && zeros < 500); /* 400 expected */
    CHECK(fabs(sum / 2000 - 1) < 0.1); /* the mean is kept */
    matrix_release(&x);
    nnet_free(n);
}

/* ---- training runs ---- */

/* Minibatches from num_classes Gaussian blobs in dim dimensions; feature j is multiplied by
 * scales[j]. */
struct blobs {
    int dim, num_classes;
    float *centers; /* (num_classes, dim) */
    const float *scales;
    struct rng r;
};

static void blobs_batch(struct blobs *b, struct matrix *x, int *labels, float noise) {
    for (int i = 0; i < x->rows; i++) {
        int k = (int)rng_below(&b->r, (uint32_t)b->num_classes);
        labels[i] = k;
        for (int j = 0; j < b->dim; j++) {
            float v = b->centers[k * b->dim + j] + noise * rng_gauss(&b->r);
            matrix_set(x, i, j, v * (b->scales ? b->scales[j] : 1));
        }
    }
}

/* Train for steps minibatches; returns the average objective over the last 20. */
static double train(struct nnet *n, struct blobs *b, int steps, int mb, float noise,
                    double *first) {
    struct matrix x, d;
    matrix_init(&x, mb, b->dim);
    matrix_init(&d, 1, 1);
    int *labels = xmalloc(mb * sizeof *labels), *rows = xmalloc(mb * sizeof *rows);
    for (int i = 0; i < mb; i++)
        rows[i] = i;
    double last = 0;
    for (int s = 0; s < steps; s++) {
        blobs_batch(b, &x, labels, noise);
        nnet_forward(n, &x, 1, 1);
        double o = nnet_objective_xent(n, mb, rows, labels, NULL, &d) / mb;
        if (s == 0 && first) *first = o;
        if (s >= steps - 20) last += o / 20;
        nnet_backward(n, &d, NNET_UPDATE);
    }
    free(labels);
    free(rows);
    matrix_release(&x);
    matrix_release(&d);
    return last;
}

static void blobs_init(struct blobs *b, int dim, int num_classes, uint64_t seed,
                       const float *scales) {
    b->dim = dim;
    b->num_classes = num_classes;
    b->scales = scales;
    rng_seed(&b->r, seed);
    b->centers = xmalloc((size_t)dim * num_classes * sizeof *b->centers);
    for (int i = 0; i < dim * num_classes; i++)
        b->centers[i] = 2 * rng_gauss(&b->r);
}

static void test_training_reduces_objective(void) {
    struct nnet *n = nnet_init_from_config_text(
        "AffineComponent input-dim=6 output-dim=16 learning-rate=0.01\n"
        "RectifiedLinearComponent\n"
        "AffineComponent output-dim=4 learning-rate=0.01 param-stddev=0 bias-stddev=0\n"
        "SoftmaxComponent\n",
        1);
    CHECK(n != NULL);
    struct blobs b;
    blobs_init(&b, 6, 4, 3, NULL);
    double first, last = train(n, &b, 200, 32, 1.0f, &first);
    printf("    SGD: objective per frame %.4f -> %.4f\n", first, last);
    CHECK_NEAR(first, log(0.25), 0.01); /* the zero output layer starts uniform */
    CHECK(last > -0.45);                /* from log(1/4) = -1.39 */
    free(b.centers);
    nnet_free(n);
}

/* A small CNN (Convolution with and without natural gradient, MaxPooling): config errors for
 * shapes that do not chain, model round trip with equal outputs, and training that learns. */
static void test_cnn(void) {
    static const char *cnn =
        "ConvolutionComponent input-height=4 input-width=3 input-channels=1 num-filters=4 "
        "filter-height=3 filter-width=3 pad-height=1 pad-width=1 learning-rate=0.01\n"
        "RectifiedLinearComponent\n"
        "MaxPoolingComponent input-height=4 input-width=3 input-channels=4 pool-height=2 "
        "pool-width=2 stride-width=1\n"
        "BatchNormComponent block-dim=4\n"
        "ConvolutionComponent input-height=2 input-width=2 input-channels=4 num-filters=8 "
        "filter-height=2 filter-width=2 use-natural-gradient=false learning-rate=0.01\n"
        "RectifiedLinearComponent\n"
        "AffineComponent output-dim=4 learning-rate=0.01 param-stddev=0 bias-stddev=0\n"
        "SoftmaxComponent\n";
    static const struct {
        const char *config, *fragment;
    } cases[] = {
        {"SigmoidComponent dim=10\nMaxPoolingComponent input-height=3 input-width=3 "
         "input-channels=1 pool-height=2 pool-width=2\n",
         "line 2: MaxPoolingComponent: input-height x input-width x input-channels = 3 x 3 x 1 = "
         "9, but the previous component's output-dim is 10"},
        {"ConvolutionComponent input-height=3 input-width=3 input-channels=1 filter-height=2 "
         "filter-width=2\n",
         "missing key 'num-filters'"},
        {"ConvolutionComponent input-height=3 input-width=3 input-channels=1 num-filters=2 "
         "filter-height=5 filter-width=2\n",
         "larger than the padded input"},
        {"ConvolutionComponent input-height=3 input-width=3 input-channels=1 num-filters=2 "
         "filter-height=2 filter-width=2 stride-width=0\n",
         "stride"},
        {"ConvolutionComponent input-height=3 input-width=3 input-channels=1 num-filters=2 "
         "filter-height=2 filter-width=2 pad-height=2\n",
         "padding"},
        {"ConvolutionComponent input-height=3 input-width=3 input-channels=1 num-filters=2 "
         "filter-height=2 filter-width=2 input-dim=8\n",
         "but input-dim is 8"},
        {"ConvolutionComponent input-height=3 input-width=3 input-channels=1 num-filters=2 "
         "filter-height=2 filter-width=2 use-natural-gradient=maybe\n",
         "key 'use-natural-gradient'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_config_error(cases[i].config, cases[i].fragment);
    struct nnet *n = nnet_init_from_config_text(cnn, 3);
    if (!n) printf("    %s\n", error_get());
    CHECK(n != NULL);
    CHECK(nnet_input_dim(n) == 12 && nnet_output_dim(n) == 4);
    struct blobs b;
    blobs_init(&b, 12, 4, 5, NULL);
    double first, last = train(n, &b, 200, 32, 1.0f, &first);
    printf("    CNN: objective per frame %.4f -> %.4f\n", first, last);
    CHECK(last > -0.45);
    free(b.centers);
    /* test mode normalises with the stored statistics, training mode with the batch's */
    {
        struct rng r2;
        rng_seed(&r2, 9);
        struct component *bn = nnet_component(n, 3);
        struct matrix in = {0}, y = {0};
        matrix_init(&in, 64, 16);
        matrix_init(&y, 64, 16);
        fill_randn(&in, &r2);
        matrix_scale(&in, 3);
        matrix_add_const(&in, 5); /* data far from the stored mean */
        bn->ops->propagate(bn, &in, &y, 64, 0);
        double test_sum = matrix_sum(&y);
        bn->ops->propagate(bn, &in, &y, 64, 1);
        CHECK(fabs(matrix_sum(&y)) < 1e-2);       /* the batch's mean removed */
        CHECK(fabs(test_sum) > 1);                /* the stored mean is another */
        matrix_release(&in);
        matrix_release(&y);
    }
    /* round trip: the same bytes again, the same outputs */
    struct rng r;
    rng_seed(&r, 4);
    struct matrix x;
    matrix_init(&x, 5, 12);
    fill_randn(&x, &r);
    for (int binary = 0; binary <= 1; binary++) {
        size_t s1, s2;
        char *b1 = write_mem(n, binary, &s1);
        struct nnet *m = read_mem(b1, s1);
        if (!m) printf("    %s\n", error_get());
        CHECK(m != NULL);
        char *b2 = write_mem(m, binary, &s2);
        CHECK(s1 == s2 && !memcmp(b1, b2, s1));
        const struct matrix *y1 = nnet_forward(n, &x, 5, 0);
        float o1[20], o2[20];
        matrix_to_host(y1, o1);
        matrix_to_host(nnet_forward(m, &x, 5, 0), o2);
        for (int i = 0; i < 20; i++) CHECK_NEAR(o2[i], o1[i], binary ? 0 : 1e-5);
        free(b1);
        free(b2);
        nnet_free(m);
    }
    matrix_release(&x);
    nnet_free(n);
}

/* Input features scaled by factors from 0.01 to 10: plain SGD must use a learning rate small
 * enough for the large features and then learns the small ones slowly; NG-SGD preconditions the
 * input side and is far less affected. The labels depend on the small-scale features too. */
static void test_natural_gradient_beats_sgd(void) {
    enum { DIM = 8 };
    static const float scales[DIM] = {10, 0.01f, 3, 0.03f, 1, 0.1f, 0.3f, 0.02f};
    const char *cfg_plain = "AffineComponent input-dim=8 output-dim=3 learning-rate=%g "
                            "param-stddev=0 bias-stddev=0\nSoftmaxComponent\n";
    const char *cfg_ng = "NaturalGradientAffineComponent input-dim=8 output-dim=3 "
                         "learning-rate=%g param-stddev=0 bias-stddev=0 rank-in=4 rank-out=2 "
                         "max-change-per-sample=0\nSoftmaxComponent\n";
    double best_plain = -1e30, best_ng = -1e30;
    const float lrs[] = {0.00001f, 0.00003f, 0.0001f, 0.0003f, 0.001f, 0.003f};
    for (int k = 0; k < 6; k++) {
        for (int ng = 0; ng <= 1; ng++) {
            char cfg[512];
            snprintf(cfg, sizeof cfg, ng ? cfg_ng : cfg_plain, lrs[k]);
            struct nnet *n = nnet_init_from_config_text(cfg, 1);
            CHECK(n != NULL);
            struct blobs b;
            blobs_init(&b, DIM, 3, 8, scales);
            double last = train(n, &b, 300, 32, 1.0f, NULL);
            if (!isfinite(last)) last = -1e30;
            printf("    lr %g %s: final objective %.4f\n", lrs[k], ng ? "NG-SGD" : "SGD", last);
            if (ng)
                best_ng = last > best_ng ? last : best_ng;
            else
                best_plain = last > best_plain ? last : best_plain;
            free(b.centers);
            nnet_free(n);
        }
    }
    printf("    best: SGD %.4f, NG-SGD %.4f\n", best_plain, best_ng);
    CHECK(best_ng > best_plain + 0.05);
}

/* ---- a time-delay network: Splice lines between the layers (Kaldi nnet2's multisplice) ---- */

static const char tdnn_config[] =
    "SpliceComponent input-dim=3 context=-1:0:1\n"
    "NaturalGradientAffineComponent output-dim=6 rank-in=2 rank-out=2 param-stddev=0.5 "
    "bias-stddev=0.1\n"
    "RectifiedLinearComponent\n"
    "SpliceComponent context=-2:0:2\n"
    "NaturalGradientAffineComponent output-dim=5 rank-in=2 rank-out=2 param-stddev=0.5 "
    "bias-stddev=0.1\n"
    "TanhComponent\n"
    "SpliceComponent context=-1:1\n"
    "AffineComponent output-dim=4 param-stddev=0.5 bias-stddev=0.1\n"
    "SoftmaxComponent\n";

/* Its gradient; every frame of a chunk computed once per layer (12 rows into the second splice
 * for 6 output frames, not 6 windows of 7) with the outputs of frame-by-frame windows; its
 * context checked against the examples'; natural-gradient updates; the model file. */
static void test_tdnn(void) {
    struct nnet *n = nnet_init_from_config_text(tdnn_config, 11);
    if (!n) printf("    %s\n", error_get());
    CHECK(n != NULL);
    CHECK(nnet_left_context(n) == 4 && nnet_right_context(n) == 4);
    CHECK(nnet_check_context(n, 4, 4) == 0);
    CHECK(nnet_check_context(n, 3, 4) == -1);
    CHECK(strstr(error_get(), "line 7: SpliceComponent") &&
          strstr(error_get(), "needs 4 frames of left context by here; the examples have 3"));
    CHECK(nnet_check_context(n, 4, 2) == -1);
    CHECK(strstr(error_get(), "line 4: ") && strstr(error_get(), "needs 3 frames of right"));
    struct rng r;
    rng_seed(&r, 12);
    /* the gradient, over 2 chunks of 3 labelled frames and their context */
    int chunks = 2, t = 3, rows = t + 8;
    struct matrix x, rr;
    CHECK(random_gradient_ok(n, chunks, rows, t, &r, &x, &rr));
    /* shared frames: one chunk of T = 6 output frames, against 6 chunks of one frame each */
    enum { T = 6 };
    struct matrix u, windows, y1;
    matrix_init(&u, T + 8, 3);
    fill_randn(&u, &r);
    const struct matrix *y = nnet_forward(n, &u, 1, 0);
    CHECK(nnet_layer_output(n, 1)->rows == T + 6); /* the frames the second splice reads */
    CHECK(nnet_layer_output(n, 4)->rows == T + 2);
    CHECK(y->rows == T);
    matrix_init(&y1, T, 4);
    matrix_copy(&y1, y);
    matrix_init(&windows, T * 9, 3);
    for (int k = 0; k < T; k++) {
        struct matrix dst = matrix_rows(&windows, k * 9, 9), src = matrix_rows(&u, k, 9);
        matrix_copy(&dst, &src);
    }
    y = nnet_forward(n, &windows, T, 0);
    CHECK(nnet_layer_output(n, 1)->rows == T * 7); /* what sharing saves: 42 rows, not 12 */
    CHECK(y->rows == T);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < 4; j++)
            CHECK_NEAR(matrix_get(y, i, j), matrix_get(&y1, i, j), 1e-5);
    /* natural-gradient updates through the splices raise the objective <rr, y> */
    nnet_set_learning_rate(n, 0.05f);
    double before = net_objective(n, &x, chunks, &rr);
    for (int step = 0; step < 20; step++) {
        net_objective(n, &x, chunks, &rr);
        CHECK(nnet_backward(n, &rr, NNET_UPDATE) == 0);
    }
    double after = net_objective(n, &x, chunks, &rr);
    if (!(after > before)) printf("    objective %g -> %g\n", before, after);
    CHECK(after > before);
    /* the model file round-trips, contexts and outputs included */
    size_t size;
    char *buf = write_mem(n, 1, &size);
    struct nnet *m = read_mem(buf, size);
    CHECK(m != NULL && nnet_same_structure(n, m));
    CHECK(nnet_left_context(m) == 4 && nnet_right_context(m) == 4);
    y = nnet_forward(n, &u, 1, 0);
    matrix_copy(&y1, y);
    y = nnet_forward(m, &u, 1, 0);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < 4; j++)
            CHECK(matrix_get(y, i, j) == matrix_get(&y1, i, j));
    free(buf);
    nnet_free(m);
    matrix_release(&x);
    matrix_release(&rr);
    matrix_release(&u);
    matrix_release(&windows);
    matrix_release(&y1);
    nnet_free(n);
}


/* ---- graphs: names, Sum, Append, Offset (nnet.h "Graphs") ---- */

/* Every wiring case: a node read twice (a: by t and the last Append; t: by the Sum and the
 * Append), Sum with a later term adding into written columns, terms of different contexts cropped
 * (t and the shifted input in the Sum, beside the spliced b), Offset on a node and on the input. */
static const char graph_config[] =
    "AffineComponent input-dim=4 output-dim=4 name=a param-stddev=0.5 bias-stddev=0.1\n"
    "TanhComponent name=t\n"
    "SpliceComponent context=-1:0:1\n"
    "AffineComponent output-dim=4 name=b param-stddev=0.5 bias-stddev=0.1\n"
    "SigmoidComponent input=Sum(b, t, Offset(Append(input), 1)) name=u\n"
    "AffineComponent output-dim=5 input=Append(u, Offset(t, -1), a) param-stddev=0.5\n"
    "SoftmaxComponent\n";

/* A copy of y's rows (host values) */
static double *host_copy(const struct matrix *y) {
    double *v = xmalloc((size_t)y->rows * y->cols * sizeof *v);
    for (int i = 0; i < y->rows; i++)
        for (int j = 0; j < y->cols; j++)
            v[(size_t)i * y->cols + j] = matrix_get(y, i, j);
    return v;
}

/* x: rows x n's input dim, drawn from seed; a host copy of n's output on it in chunks. */
static double *forward_random(struct nnet *n, struct matrix *x, int rows, int chunks,
                              uint64_t seed) {
    struct rng r;
    rng_seed(&r, seed);
    matrix_init(x, rows, nnet_input_dim(n));
    fill_randn(x, &r);
    return host_copy(nnet_forward(n, x, chunks, 0));
}

static void test_graph_gradient(void) {
    struct nnet *n = nnet_init_from_config_text(graph_config, 5);
    if (!n) printf("    %s\n", error_get());
    CHECK(n != NULL);
    CHECK(nnet_left_context(n) == 1 && nnet_right_context(n) == 1);
    CHECK(nnet_input_dim(n) == 4 && nnet_output_dim(n) == 5);
    CHECK(!strcmp(nnet_component_input(n, 4), "Sum(b,t,Offset(Append(input),1))"));
    CHECK(!strcmp(nnet_component_name(n, 4), "u") && !nnet_component_name(n, 2));
    struct rng r;
    rng_seed(&r, 6);
    int chunks = 3, t = 2, rows = t + 2;
    struct matrix x, rr;
    CHECK(random_gradient_ok(n, chunks, rows, t, &r, &x, &rr));
    /* What the rows mean: u's input row i of a chunk is frame i + 1, so u = sigmoid(b[i] +
     * t[i + 1] + x[i + 2]); the last layer reads u[i], t[i] (Offset -1 of frame i + 1) and
     * a[i + 1]. */
    nnet_forward(n, &x, chunks, 0);
    const struct matrix *a = nnet_layer_output(n, 0), *tt = nnet_layer_output(n, 1);
    const struct matrix *b = nnet_layer_output(n, 3), *u = nnet_layer_output(n, 4);
    CHECK(u->rows == chunks * t && b->rows == chunks * t && tt->rows == chunks * rows);
    double worst = 0;
    for (int k = 0; k < chunks; k++)
        for (int i = 0; i < t; i++)
            for (int j = 0; j < 4; j++) {
                double z = matrix_get(b, k * t + i, j) + matrix_get(tt, k * rows + i + 1, j) +
                           matrix_get(&x, k * rows + i + 2, j);
                double e = fabs(matrix_get(u, k * t + i, j) - 1 / (1 + exp(-z)));
                worst = e > worst ? e : worst;
            }
    CHECK(worst < 1e-5);
    (void)a;
    /* Chunks are independent: chunk 2 alone gives its rows of the output. */
    double *all = host_copy(nnet_forward(n, &x, chunks, 0));
    struct matrix x2 = matrix_rows(&x, 2 * rows, rows);
    const struct matrix *y = nnet_forward(n, &x2, 1, 0);
    CHECK(y->rows == t);
    for (int i = 0; i < t; i++)
        for (int j = 0; j < 5; j++)
            CHECK_NEAR(matrix_get(y, i, j), all[(2 * t + i) * 5 + j], 1e-5);
    free(all);
    /* NNET_UPDATE without max-change (each step straight into the parameters) is the gradient
     * step: plain Affine layers, so the step is lr times the gradient. */
    struct nnet *m = nnet_copy(n);
    CHECK(nnet_same_structure(n, m));
    for (int i = 0; i < nnet_num_components(n); i++)
        nnet_component(n, i)->max_change = nnet_component(m, i)->max_change = 0;
    nnet_set_max_change(n, 0);
    nnet_set_max_change(m, 0);
    net_objective(n, &x, chunks, &rr);
    CHECK(nnet_backward(n, &rr, NNET_UPDATE) == 0);
    net_objective(m, &x, chunks, &rr);
    CHECK(nnet_backward(m, &rr, NNET_GRADIENT) == 0);
    struct vector dm = nnet_delta(m);
    CHECK(nnet_apply_gradient(m, &dm, 1) == 0);
    struct vector pn = nnet_params(n), pm = nnet_params(m);
    for (int i = 0; i < pn.dim; i++)
        CHECK_NEAR(vector_get(&pn, i), vector_get(&pm, i), 1e-6);
    nnet_free(m);
    matrix_release(&x);
    matrix_release(&rr);
    nnet_free(n);
}

/* nnet3's Append(Offset(x, -1), x, Offset(x, 1)) is Splice's context=-1:0:1, on the input (the
 * first line's input dim is its input-dim over the copies) and between layers. */
static void test_graph_offset_is_splice(void) {
    struct nnet *s = nnet_init_from_config_text(
        "SpliceComponent input-dim=2 context=-1:0:1\n"
        "AffineComponent output-dim=3\n"
        "SpliceComponent context=-2:0:1\n"
        "AffineComponent output-dim=2\n", 1);
    /* (a descriptor still open at the end of its line is an error of that line) */
    struct nnet *g = nnet_init_from_config_text(
        "AffineComponent input-dim=6 output-dim=3 "
        "input=Append(Offset(input, -1), input, Offset(input, 1))\n"
        "AffineComponent name=h output-dim=2 "
        "input=Append(Offset(Sum(Offset(input, -1)), -2),\n", 1);
    CHECK(g == NULL && strstr(error_get(), "line 2: key 'input': "));
    g = nnet_init_from_config_text(
        "AffineComponent input-dim=6 output-dim=3 name=h "
        "input=Append(Offset(input, -1), input, Offset(input, 1))\n"
        "AffineComponent output-dim=2 input=Append(Offset(h, -2), h, Offset(h, 1))\n", 1);
    if (!g) printf("    %s\n", error_get());
    CHECK(s && g);
    CHECK(nnet_input_dim(g) == 2 && nnet_left_context(g) == 3 && nnet_right_context(g) == 2);
    struct vector ps = nnet_params(s), pg = nnet_params(g);
    CHECK(ps.dim == pg.dim);
    vector_copy(&pg, &ps);
    struct matrix x;
    double *ys = forward_random(s, &x, 2 * 9, 2, 3);
    const struct matrix *y = nnet_forward(g, &x, 2, 0);
    CHECK(y->rows == 2 * 4);
    for (int i = 0; i < y->rows; i++)
        for (int j = 0; j < 2; j++)
            CHECK_NEAR(matrix_get(y, i, j), ys[i * 2 + j], 1e-6);
    free(ys);
    matrix_release(&x);
    nnet_free(s);
    nnet_free(g);
}

static void test_graph_round_trip(void) {
    struct nnet *n = nnet_init_from_config_text(graph_config, 7);
    CHECK(n != NULL);
    struct matrix x;
    double *y0 = forward_random(n, &x, 2 * 6, 2, 8);
    for (int binary = 0; binary <= 1; binary++) {
        size_t s1, s2;
        char *b1 = write_mem(n, binary, &s1);
        CHECK(b1 && (binary || strstr(b1, "<Version> 2 ")));
        CHECK(binary || strstr(b1, "<Name> u <Input> Sum(b,t,Offset(Append(input),1)) "));
        struct nnet *m = read_mem(b1, s1);
        if (!m) printf("    %s\n", error_get());
        CHECK(m != NULL && nnet_same_structure(n, m) && !nnet_check_same_structure(n, m));
        char *b2 = write_mem(m, binary, &s2);
        CHECK(b2 != NULL && s1 == s2 && !memcmp(b1, b2, s1));
        if (binary) { /* the same outputs */
            const struct matrix *y = nnet_forward(m, &x, 2, 0);
            for (int i = 0; i < y->rows; i++)
                for (int j = 0; j < y->cols; j++)
                    CHECK(matrix_get(y, i, j) == (float)y0[i * y->cols + j]);
        }
        check_damaged_model(b1, s1, binary, 200, 200);
        free(b1);
        free(b2);
        nnet_free(m);
    }
    free(y0);
    /* another wiring of the same components is another structure */
    struct nnet *o = nnet_init_from_config_text(
        "AffineComponent input-dim=4 output-dim=4 name=a\nTanhComponent name=t\n"
        "SpliceComponent context=-1:0:1\nAffineComponent output-dim=4 name=b\n"
        "SigmoidComponent input=Sum(b, t, Offset(input, -1)) name=u\n"
        "AffineComponent output-dim=5 input=Append(u, Offset(t, -1), a)\nSoftmaxComponent\n", 1);
    CHECK(o != NULL && !nnet_same_structure(n, o));
    CHECK(nnet_check_same_structure(n, o) == -1 &&
          strstr(error_get(), "component 4 (SigmoidComponent) reads Sum(b,t,Offset(input,-1)), "
                              "not Sum(b,t,Offset(Append(input),1))"));
    nnet_free(o);
    /* the graph keys are refused in a version 1 model; bad wiring in a model is an error */
    static const char *bad[][2] = {
        {"<Nnet> <Version> 1 <NumComponents> 1 <Components> <Name> a <SigmoidComponent> <Dim> 2 "
         "<ValueSum> [ ]\n <DerivSum> [ ]\n <Count> 0 </SigmoidComponent> </Components> </Nnet> ",
         "component 0: <Name> in a version 1 model"},
        {"<Nnet> <Version> 2 <NumComponents> 1 <Components> <Input> a <SigmoidComponent> <Dim> 2 "
         "<ValueSum> [ ]\n <DerivSum> [ ]\n <Count> 0 </SigmoidComponent> </Components> </Nnet> ",
         "component 0 (<SigmoidComponent>): unknown name 'a'"},
        {"<Nnet> <Version> 2 <NumComponents> 1 <Components> <Input> input <Name> a "
         "<SigmoidComponent> <Dim> 2 <ValueSum> [ ]\n <DerivSum> [ ]\n <Count> 0 "
         "</SigmoidComponent> </Components> </Nnet> ", "component 0: <Name> out of place"},
        {"<Nnet> <Version> 2 <NumComponents> 2 <Components> <Name> x <SigmoidComponent> <Dim> 2 "
         "<ValueSum> [ ]\n <DerivSum> [ ]\n <Count> 0 </SigmoidComponent> <Input> input "
         "<SigmoidComponent> <Dim> 2 <ValueSum> [ ]\n <DerivSum> [ ]\n <Count> 0 "
         "</SigmoidComponent> </Components> </Nnet> ",
         "component 0: the output of SigmoidComponent (name 'x') is read by no later line"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        struct nnet *m = read_mem(bad[k][0], strlen(bad[k][0]));
        if (m || !strstr(error_get(), bad[k][1]))
            printf("    model %zu: got '%s', expected '%s'\n", k, m ? "success" : error_get(),
                   bad[k][1]);
        CHECK(m == NULL && strstr(error_get(), bad[k][1]));
    }
    matrix_release(&x);
    nnet_free(n);
}

/* A network without name or input keys writes version 1, as it always has (the errors of graph
 * configs are rows of test_config_errors). */
static void test_graph_keys_absent(void) {
    struct nnet *n = nnet_init_from_config_text("SigmoidComponent dim=2\n", 1);
    size_t size;
    char *text = write_mem(n, 0, &size);
    CHECK(text && strstr(text, "<Nnet> <Version> 1 ") && !strstr(text, "<Name>"));
    free(text);
    nnet_free(n);
}

int main(void) {
    TEST_RUN(test_component_gradients);
    TEST_RUN(test_every_component_checked);
    TEST_RUN(test_network_gradient);
    TEST_RUN(test_config_errors);
    TEST_RUN(test_model_round_trip);
    TEST_RUN(test_truncated_model);
    TEST_RUN(test_objective_xent);
    TEST_RUN(test_max_change_and_nonfinite);
    TEST_RUN(test_default_guards);
    TEST_RUN(test_direct_update);
    TEST_RUN(test_components_from_files);
    TEST_RUN(test_dropout);
    TEST_RUN(test_training_reduces_objective);
    TEST_RUN(test_natural_gradient_beats_sgd);
    TEST_RUN(test_cnn);
    TEST_RUN(test_tdnn);
    TEST_RUN(test_graph_gradient);
    TEST_RUN(test_graph_offset_is_splice);
    TEST_RUN(test_graph_round_trip);
    TEST_RUN(test_graph_keys_absent);
    TEST_RUN(test_fused_relu);
    TEST_MAIN_END();
}
