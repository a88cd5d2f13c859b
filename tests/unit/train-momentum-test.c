/* Unit tests for momentum and weight decay (update.h): the filter on vectors
 * worked by hand, and train_sgd on a tiny linear softmax model (2 inputs, 2 classes, zero start)
 * against the same update written out in double here: the first step's numbers by hand, then
 * three minibatches of heavy-ball and Nesterov momentum with weight decay; GAF with tau >= 2 and
 * the mean fusion under momentum equals plain momentum SGD on the merged minibatch. */
#include "update/update.h"
#include "train/train.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

static char dir[64];

/* Examples: x_i (2-dim), label y_i. */
static const float xs[6][2] = {{1, 2}, {-1, 0.5f}, {0.5f, -1}, {2, 1}, {-0.5f, -2}, {1, -0.5f}};
static const int ys[6] = {0, 1, 1, 0, 1, 0};

static const char *write_egs(const char *name, int num) {
    static char spec[2][300];
    static int next;
    char *s = spec[next++ % 2];
    snprintf(s, 300, "ark:%s/%s", dir, name);
    struct table_writer w;
    ASSERT(table_writer_open(&w, s, &holder_example) == 0);
    for (int i = 0; i < num; i++) {
        struct example eg;
        struct matrix m;
        matrix_init_on(&m, 1, 2, MATRIX_CPU);
        m.data[0] = xs[i][0];
        m.data[1] = xs[i][1];
        int32_t label = ys[i];
        example_init(&eg);
        example_set_labels_simple(&eg, 1, &label);
        ASSERT(example_set_input(&eg, &m, 0, EGS_COMPRESS_NONE) == 0);
        matrix_release(&m);
        char key[16];
        snprintf(key, sizeof key, "e%d", i);
        ASSERT(table_writer_write(&w, key, &eg) == 0);
        example_release(&eg);
    }
    ASSERT(table_writer_close(&w) == 0);
    return s;
}

/* W = 0, b = 0, learning rate 0.1: block layout W (2 x 2, row-major), then b (2). */
static struct nnet *make_linear(void) {
    struct nnet *n = nnet_init_from_config_text(
        "AffineComponent input-dim=2 output-dim=2 learning-rate=0.1 param-stddev=0 "
        "bias-stddev=0\nSoftmaxComponent dim=2\n", 1);
    ASSERT(n && nnet_num_params(n) == 6);
    for (int i = 0; i < nnet_num_components(n); i++) nnet_component(n, i)->max_change = 0;
    nnet_set_max_change(n, 0); /* the update written out here has no clipping */
    return n;
}

static void params(struct nnet *n, float out[6]) {
    struct vector p = nnet_params(n);
    vector_to_host(&p, out);
}

/* The update written out: minibatches of mb examples over the first num, lr 0.1, summed
 * softmax-regression gradient g = sum_i (e_y - p_i) [x_i, 1], s = lr g - lr lambda W theta,
 * v = mu v + s, theta += (1 - mu) v (or (1 - mu)(s + mu v)). */
static void reference_lr(int num, int mb, double mu, int nesterov, double lambda, double lr,
                         double theta[6]) {
    double v[6] = {0};
    for (int k = 0; k < 6; k++) theta[k] = 0;
    for (int start = 0; start < num; start += mb) {
        double g[6] = {0}, w = 0;
        for (int i = start; i < start + mb && i < num; i++) {
            double a0 = theta[0] * xs[i][0] + theta[1] * xs[i][1] + theta[4];
            double a1 = theta[2] * xs[i][0] + theta[3] * xs[i][1] + theta[5];
            double m = a0 > a1 ? a0 : a1, e0 = exp(a0 - m), e1 = exp(a1 - m);
            double p[2] = {e0 / (e0 + e1), e1 / (e0 + e1)};
            for (int c = 0; c < 2; c++) {
                double r = (ys[i] == c) - p[c];
                g[2 * c] += r * xs[i][0];
                g[2 * c + 1] += r * xs[i][1];
                g[4 + c] += r;
            }
            w += 1;
        }
        for (int k = 0; k < 6; k++) {
            double s = lr * g[k] - lr * lambda * w * theta[k];
            v[k] = mu * v[k] + s;
            theta[k] += (1 - mu) * (nesterov ? s + mu * v[k] : v[k]);
        }
    }
}

static void reference(int num, int mb, double mu, int nesterov, double lambda, double theta[6]) {
    reference_lr(num, mb, mu, nesterov, lambda, 0.1, theta);
}

static void test_filter_by_hand(void) {
    float s0[2] = {1, 2}, s1[2] = {1, 0}, h[2];
    struct vector v, s;
    vector_init_on(&v, 2, MATRIX_CPU);
    vector_init_on(&s, 2, MATRIX_CPU);
    vector_from_host(&s, s0);
    momentum_filter(&v, &s, 0.5f, 0); /* v = (1, 2), s = 0.5 v = (0.5, 1) */
    vector_to_host(&s, h);
    CHECK(h[0] == 0.5f && h[1] == 1);
    vector_from_host(&s, s1);
    momentum_filter(&v, &s, 0.5f, 0); /* v = 0.5 (1, 2) + (1, 0) = (1.5, 1), s = (0.75, 0.5) */
    vector_to_host(&s, h);
    CHECK(h[0] == 0.75f && h[1] == 0.5f);
    vector_to_host(&v, h);
    CHECK(h[0] == 1.5f && h[1] == 1);
    vector_set_zero(&v);
    vector_from_host(&s, s0);
    momentum_filter(&v, &s, 0.5f, 1); /* v = (1, 2), s = 0.5 ((1, 2) + 0.5 (1, 2)) = (0.75, 1.5) */
    vector_to_host(&s, h);
    CHECK(h[0] == 0.75f && h[1] == 1.5f);
    /* a constant step: the applied change tends to the step itself (Kaldi's normalisation) */
    vector_set_zero(&v);
    for (int t = 0; t < 200; t++) {
        vector_from_host(&s, s0);
        momentum_filter(&v, &s, 0.9f, 0);
    }
    vector_to_host(&s, h);
    CHECK_NEAR(h[0], 1, 1e-5);
    CHECK_NEAR(h[1], 2, 1e-5);
    vector_release(&v);
    vector_release(&s);
}

static void test_first_step_by_hand(void) {
    /* one example x = (1, 2), y = 0 at W = b = 0: p = (0.5, 0.5), g_W = (0.5 x; -0.5 x),
     * g_b = (0.5, -0.5); s = 0.1 g; mu = 0.5: theta = 0.5 s. Weight decay acts on theta = 0. */
    const char *egs = write_egs("one.ark", 1);
    struct nnet *n = make_linear();
    struct train_options o;
    train_options_default(&o);
    o.minibatch_size = 1;
    o.progress_every = 0;
    o.momentum = 0.5f;
    o.weight_decay = 0.3f;
    struct train_stats st;
    CHECK(train_sgd(n, egs, &o, &st) == 0);
    float p[6];
    params(n, p);
    const float want[6] = {0.025f, 0.05f, -0.025f, -0.05f, 0.025f, -0.025f};
    for (int k = 0; k < 6; k++) CHECK_NEAR(p[k], want[k], 1e-6);
    CHECK(st.num_updates == 1);
    nnet_free(n);
}

static void test_three_steps(void) {
    const char *egs = write_egs("six.ark", 6);
    for (int nesterov = 0; nesterov <= 1; nesterov++)
        for (int decay = 0; decay <= 1; decay++) {
            struct nnet *n = make_linear();
            struct train_options o;
            train_options_default(&o);
            o.minibatch_size = 2;
            o.progress_every = 0;
            o.momentum = 0.7f;
            o.nesterov = nesterov;
            o.weight_decay = decay ? 0.05f : 0;
            struct train_stats st;
            CHECK(train_sgd(n, egs, &o, &st) == 0);
            CHECK(st.num_updates == 3);
            float p[6];
            double want[6];
            params(n, p);
            reference(6, 2, 0.7, nesterov, o.weight_decay, want);
            for (int k = 0; k < 6; k++) CHECK_NEAR(p[k], want[k], 1e-5);
            nnet_free(n);
        }
    /* weight decay alone (momentum 0) */
    struct nnet *n = make_linear();
    struct train_options o;
    train_options_default(&o);
    o.minibatch_size = 3;
    o.progress_every = 0;
    o.weight_decay = 0.2f;
    struct train_stats st;
    CHECK(train_sgd(n, egs, &o, &st) == 0);
    float p[6];
    double want[6];
    params(n, p);
    reference(6, 3, 0, 0, 0.2, want);
    for (int k = 0; k < 6; k++) CHECK_NEAR(p[k], want[k], 1e-5);
    nnet_free(n);
}

/* GAF, tau >= 2, mean fusion, 2 microbatches of 1: one momentum step on the 2 examples together
 * (the decay counted on both). */
static void test_gaf_under_momentum(void) {
    const char *egs = write_egs("six.ark", 6);
    struct nnet *n = make_linear();
    struct train_options o;
    train_options_default(&o);
    o.minibatch_size = 1;
    o.progress_every = 0;
    o.gaf_microbatches = 2;
    o.gaf_threshold = 2;
    o.gaf_fusion = GAF_FUSION_MEAN;
    o.momentum = 0.6f;
    o.nesterov = 1;
    o.weight_decay = 0.1f;
    struct train_stats st;
    CHECK(train_sgd(n, egs, &o, &st) == 0);
    CHECK(st.gaf_steps == 3 && st.num_updates == 3);
    float p[6];
    double want[6];
    params(n, p);
    reference(6, 2, 0.6, 1, 0.1, want);
    for (int k = 0; k < 6; k++) CHECK_NEAR(p[k], want[k], 1e-5);
    nnet_free(n);
    /* the reference's scale (lr x fusion): the same at half the learning rate */
    n = make_linear();
    o.gaf_unit_scale = 1;
    CHECK(train_sgd(n, egs, &o, &st) == 0);
    params(n, p);
    reference_lr(6, 2, 0.6, 1, 0.1, 0.05, want);
    for (int k = 0; k < 6; k++) CHECK_NEAR(p[k], want[k], 1e-5);
    nnet_free(n);
}

static void test_options_check(void) {
    struct train_options o;
    train_options_default(&o);
    CHECK(momentum_check(o.momentum, o.nesterov, o.weight_decay) == 0);
    o.momentum = 1;
    CHECK(momentum_check(o.momentum, o.nesterov, o.weight_decay) == -1);
    CHECK(strstr(error_get(), "--momentum") != NULL);
    o.momentum = 0;
    o.nesterov = 1;
    CHECK(momentum_check(o.momentum, o.nesterov, o.weight_decay) == -1);
    o.nesterov = 0;
    o.weight_decay = -1;
    CHECK(momentum_check(o.momentum, o.nesterov, o.weight_decay) == -1);
    CHECK(strstr(error_get(), "--weight-decay") != NULL);
}

int main(void) {
    log_set_program("train-momentum-test");
    matrix_set_num_threads(1);
    if (test_tmpdir(dir, sizeof dir, "train-momentum-test")) return 1;
    TEST_RUN(test_filter_by_hand);
    TEST_RUN(test_first_step_by_hand);
    TEST_RUN(test_three_steps);
    TEST_RUN(test_gaf_under_momentum);
    TEST_RUN(test_options_check);
    test_tmpdir_remove(dir);
    TEST_MAIN_END();
}
