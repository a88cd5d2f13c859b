/* GPU tests for the networks: networks holding every component type are built from the same
 * config and seed on the CPU and on the GPU (random initialization is drawn on the host, so the
 * parameters start equal), then run forward (training mode: Dropout masks from the same seed),
 * the cross-entropy objective, a gradient pass and update steps (plain SGD, max-change and
 * natural gradient) on the same minibatches. Outputs, derivatives, gradients and parameters must
 * agree to TOL (|gpu - cpu| <= TOL * max(1, |cpu|)).
 *
 * The same comparison between two CPU networks always runs (the whole path is deterministic);
 * without a GPU the line "SKIP nnet-gpu: no GPU (...)" says that the GPU one did not.
 *
 * The network allocates activations on matrix_default_device when first sized, so the test sets
 * the default device to each network's device around every call on it. */
#include "matrix/matrix.h"
#include "nnet/nnet.h"
#include "test.h"
#include "gpu-compare.h"

#define TOL 1e-4

static const char *configs[] = {
    /* every component type (as nnet-test's network) */
    "SpliceComponent input-dim=4 context=-1:0:1\n"
    "FixedAffineComponent output-dim=12 bias-stddev=0.1\n"
    "AffineComponentPreconditionedOnline output-dim=12 learning-rate=0.01 rank-in=4 rank-out=4\n"
    "PnormComponent output-dim=6 p=2\n"
    "NormalizeComponent\n"
    "AffineComponent output-dim=8 learning-rate=0.02\n"
    "DropoutComponent dropout-proportion=0.25\n"
    "TanhComponent\n"
    "FixedScaleComponent value=1.5\n"
    "SigmoidComponent\n"
    "FixedBiasComponent value=-0.5\n"
    "RectifiedLinearComponent\n"
    "AffineComponent output-dim=5 param-stddev=0.5 bias-stddev=0.1\n"
    "SoftmaxComponent\n",
    /* Kaldi-sized p-norm network with natural gradient, log-softmax output, max-change */
    "SpliceComponent input-dim=40 context=-2:-1:0:1:2\n"
    "NaturalGradientAffineComponent output-dim=400 learning-rate=0.002 max-change=1.0\n"
    "PnormComponent output-dim=100 p=2\n"
    "NormalizeComponent\n"
    "NaturalGradientAffineComponent output-dim=400 learning-rate=0.002 max-change=1.0\n"
    "PnormComponent output-dim=100 p=3\n"
    "NormalizeComponent\n"
    "AffineComponent output-dim=300 learning-rate=0.002\n"
    "LogSoftmaxComponent\n",
    /* a small CNN: convolutions with and without natural gradient, overlapping max-pooling after
     * ReLU (ties among zeros send the derivative to different cells, which ReLU's derivative
     * zeroes alike), batch norm in training and inference mode */
    "ConvolutionComponent input-height=4 input-width=3 input-channels=2 num-filters=4 "
    "filter-height=3 filter-width=3 pad-height=1 pad-width=1 learning-rate=0.01\n"
    "RectifiedLinearComponent\n"
    "MaxPoolingComponent input-height=4 input-width=3 input-channels=4 pool-height=2 "
    "pool-width=2 stride-width=1\n"
    "BatchNormComponent block-dim=4\n"
    "ConvolutionComponent input-height=2 input-width=2 input-channels=4 num-filters=8 "
    "filter-height=2 filter-width=2 use-natural-gradient=false learning-rate=0.01\n"
    "RectifiedLinearComponent\n"
    "NaturalGradientAffineComponent output-dim=4 learning-rate=0.01\n"
    "SoftmaxComponent\n",
};

static struct rng rng;
static char no_gpu_reason[600];

static void use(int device) {
    matrix_default_device = device;
}

/* Two networks from one config, on devices da and db, through 4 minibatches. */
static void compare_networks(int da, int db) {
    for (int k = 0; k < (int)(sizeof configs / sizeof configs[0]); k++) {
        use(da);
        struct nnet *a = nnet_init_from_config_text(configs[k], 3);
        use(db);
        struct nnet *b = nnet_init_from_config_text(configs[k], 3);
        if (!a || !b) printf("    %s\n", error_get());
        CHECK(a && b);
        struct vector pa = nnet_params(a), pb = nnet_params(b);
        CHECK(pa.device == da && pb.device == db);
        CHECK_SAME_VEC(&pa, &pb, 0); /* the same start */

        int chunks = 3, frames = 64 / chunks;
        int rows_in = frames + nnet_left_context(a) + nnet_right_context(a);
        int in_dim = nnet_input_dim(a), out_dim = nnet_output_dim(a), n = chunks * frames;
        struct matrix xa, xb, da_ = {0}, db_ = {0};
        matrix_init_on(&xa, chunks * rows_in, in_dim, da);
        matrix_init_on(&xb, chunks * rows_in, in_dim, db);
        int *lr = xmalloc((size_t)n * sizeof *lr), *lc = xmalloc((size_t)n * sizeof *lc);
        float *w = xmalloc((size_t)n * sizeof *w);
        for (int step = 0; step < 4; step++) {
            matrix_set_randn(&xa, &rng, 1.0f);
            matrix_copy(&xb, &xa);
            for (int i = 0; i < n; i++) {
                lr[i] = i;
                lc[i] = (int)rng_below(&rng, out_dim);
                w[i] = 0.5f + (float)rng_uniform(&rng);
            }
            use(da);
            nnet_set_seed(a, 10 + step);
            const struct matrix *ya = nnet_forward(a, &xa, chunks, 1);
            double oa = nnet_objective_xent(a, n, lr, lc, w, &da_);
            use(db);
            nnet_set_seed(b, 10 + step);
            const struct matrix *yb = nnet_forward(b, &xb, chunks, 1);
            double ob = nnet_objective_xent(b, n, lr, lc, w, &db_);
            CHECK(ya->rows == n && yb->rows == n);
            CHECK_SAME(ya, yb, TOL);
            CHECK_NEAR(ob, oa, TOL);
            CHECK_SAME(&da_, &db_, TOL);
            int mode = step == 0 ? NNET_GRADIENT : NNET_UPDATE;
            use(da);
            int ra = nnet_backward(a, &da_, mode);
            use(db);
            int rb = nnet_backward(b, &db_, mode);
            CHECK(ra == 0 && rb == 0);
            struct vector ga = nnet_delta(a), gb = nnet_delta(b);
            CHECK_SAME_VEC(&ga, &gb, TOL);
            CHECK_SAME_VEC(&pa, &pb, TOL);
        }
        /* inference mode too */
        use(da);
        const struct matrix *ya = nnet_forward(a, &xa, chunks, 0);
        use(db);
        const struct matrix *yb = nnet_forward(b, &xb, chunks, 0);
        CHECK_SAME(ya, yb, TOL);
        use(MATRIX_CPU);
        free(lr);
        free(lc);
        free(w);
        matrix_release(&xa);
        matrix_release(&xb);
        matrix_release(&da_);
        matrix_release(&db_);
        nnet_free(a);
        nnet_free(b);
    }
}

static void test_networks_cpu_twice(void) {
    compare_networks(MATRIX_CPU, MATRIX_CPU);
}

static void test_networks_cpu_vs_gpu(void) {
    compare_networks(MATRIX_CPU, MATRIX_GPU);
}

int main(void) {
    rng_seed(&rng, 99);
    TEST_RUN(test_networks_cpu_twice);
    if (matrix_select_device("yes") != 0) {
        const char *e = error_get(), *p = strstr(e, "no GPU: ");
        snprintf(no_gpu_reason, sizeof no_gpu_reason, "%s", p ? p + 8 : e);
        printf("SKIP nnet-gpu: no GPU (%s)\n", no_gpu_reason);
        TEST_MAIN_END();
    }
    use(MATRIX_CPU);
    TEST_RUN(test_networks_cpu_vs_gpu);
    TEST_MAIN_END();
}
