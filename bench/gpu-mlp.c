/* gpu-mlp: training throughput of a ReLU MLP through the matrix API, and how close its GEMMs come
 * to the bare sgemm rate at the same shapes (the rest is the overhead of the other kernels, the
 * launches and the minibatch upload). Runs on whichever device --use-gpu gives.
 *
 * One step, minibatch N, layers l = 0..L-1 with W_l (out x in), b_l:
 *   forward   X_{l+1} = relu(X_l W_l^T + b_l), the last layer log-softmax;
 *   objective sum over frames of log p(label) (cross-entropy, summed as Kaldi);
 *   backward  G = onehot - softmax; for l = L-1..0: dX = G W_l (l > 0), W_l += lr G^T X_l,
 *             b_l += lr colsum(G), G = relu'(X_l) .* dX.
 * Its GEMM work is 2 N sum(in*out) * 3 minus the missing dX of layer 0. The input minibatch is
 * uploaded from host memory every step, as a trainer reading examples would.
 *
 * Output (stdout, one key=value per line): device, samples_per_sec, step_ms, sgemm_gflops (the
 * step's GEMMs alone, back to back), step_gemm_gflops (GEMM flops per step / step time),
 * fraction_of_sgemm, objf_first/objf_last (average log-prob per frame; rises as the net fits the
 * 8 cycled minibatches). With --compare-steps=K it instead trains a CPU copy and a copy on the
 * chosen device from the same start for K steps and prints max_rel_param_diff; exit 1 if it
 * exceeds --compare-tol.
 *
 * Build (the device check does this): cc -O2 -Isrc bench/gpu-mlp.c lib/libparnet.a $LDLIBS */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/matrix.h"

#define MAX_LAYERS 16
#define NUM_BATCHES 8

struct net {
    int num_layers, dims[MAX_LAYERS + 1], n;
    struct matrix w[MAX_LAYERS];   /* (dims[l+1], dims[l]) */
    struct vector b[MAX_LAYERS];   /* dims[l+1] */
    struct matrix x[MAX_LAYERS + 1]; /* activations (n, dims[l]) */
    struct matrix gbuf, dxbuf;     /* (n, widest) scratch for derivatives */
};

static int widest(const struct net *net) {
    int m = 0;
    for (int l = 0; l <= net->num_layers; l++) m = net->dims[l] > m ? net->dims[l] : m;
    return m;
}

static void net_init(struct net *net, int num_layers, const int *dims, int n, int device,
                     struct rng *r) {
    memset(net, 0, sizeof *net);
    net->num_layers = num_layers;
    net->n = n;
    memcpy(net->dims, dims, (num_layers + 1) * sizeof *dims);
    for (int l = 0; l < num_layers; l++) {
        matrix_init_on(&net->w[l], dims[l + 1], dims[l], device);
        vector_init_on(&net->b[l], dims[l + 1], device);
        if (r) matrix_set_randn(&net->w[l], r, (float)(1.0 / sqrt(dims[l])));
    }
    for (int l = 0; l <= num_layers; l++) matrix_init_on(&net->x[l], n, dims[l], device);
    matrix_init_on(&net->gbuf, n, widest(net), device);
    matrix_init_on(&net->dxbuf, n, widest(net), device);
}

static void net_copy_params(struct net *dst, const struct net *src) {
    for (int l = 0; l < src->num_layers; l++) {
        matrix_copy(&dst->w[l], &src->w[l]);
        vector_copy(&dst->b[l], &src->b[l]);
    }
}

static void net_release(struct net *net) {
    for (int l = 0; l < net->num_layers; l++) {
        matrix_release(&net->w[l]);
        vector_release(&net->b[l]);
    }
    for (int l = 0; l <= net->num_layers; l++) matrix_release(&net->x[l]);
    matrix_release(&net->gbuf);
    matrix_release(&net->dxbuf);
}

/* One SGD step on (input, labels); returns the summed log-prob of the labels. */
static double net_step(struct net *net, const float *input, const int *labels, float lr) {
    int L = net->num_layers, n = net->n;
    matrix_from_host(&net->x[0], input);
    for (int l = 0; l < L; l++) {
        struct matrix *y = &net->x[l + 1];
        matrix_add_mat_mat(y, 1.0f, &net->x[l], MATRIX_NO_TRANS, &net->w[l], MATRIX_TRANS, 0.0f);
        matrix_add_vec_to_rows(y, 1.0f, &net->b[l]);
        if (l + 1 < L) matrix_relu(y, y);
        else matrix_log_softmax_rows(y, y);
    }
    int rows[4096];
    float logp[4096], ones[4096];
    for (int i = 0; i < n; i++) rows[i] = i, ones[i] = 1.0f;
    matrix_get_at(&net->x[L], n, rows, labels, logp);
    double objf = 0;
    for (int i = 0; i < n; i++) objf += logp[i];

    struct matrix g = matrix_view(&net->gbuf, 0, n, 0, net->dims[L]);
    matrix_set_zero(&g);
    matrix_add_at(&g, 1.0f, n, rows, labels, ones);
    matrix_diff_log_softmax(&g, &net->x[L], &g); /* onehot - softmax */
    for (int l = L - 1; l >= 0; l--) {
        struct matrix dx = matrix_view(&net->dxbuf, 0, n, 0, net->dims[l]);
        if (l > 0)
            matrix_add_mat_mat(&dx, 1.0f, &g, MATRIX_NO_TRANS, &net->w[l], MATRIX_NO_TRANS, 0.0f);
        matrix_add_mat_mat(&net->w[l], lr, &g, MATRIX_TRANS, &net->x[l], MATRIX_NO_TRANS, 1.0f);
        vector_add_row_sums(&net->b[l], lr, &g, 1.0f);
        if (l > 0) {
            g = matrix_view(&net->gbuf, 0, n, 0, net->dims[l]);
            matrix_diff_relu(&g, &net->x[l], &dx);
        }
    }
    return objf;
}

/* The step's GEMMs alone, same shapes and transposes. */
static void gemms_only(struct net *net) {
    int L = net->num_layers, n = net->n;
    for (int l = 0; l < L; l++)
        matrix_add_mat_mat(&net->x[l + 1], 1.0f, &net->x[l], MATRIX_NO_TRANS, &net->w[l],
                           MATRIX_TRANS, 0.0f);
    for (int l = L - 1; l >= 0; l--) {
        struct matrix g = matrix_view(&net->gbuf, 0, n, 0, net->dims[l + 1]);
        struct matrix dx = matrix_view(&net->dxbuf, 0, n, 0, net->dims[l]);
        if (l > 0)
            matrix_add_mat_mat(&dx, 1.0f, &g, MATRIX_NO_TRANS, &net->w[l], MATRIX_NO_TRANS, 0.0f);
        matrix_add_mat_mat(&net->w[l], 1e-9f, &g, MATRIX_TRANS, &net->x[l], MATRIX_NO_TRANS,
                           1.0f);
    }
}

static double step_gemm_flops(const struct net *net) {
    double f = 0;
    for (int l = 0; l < net->num_layers; l++)
        f += 2.0 * net->n * net->dims[l] * net->dims[l + 1] * (l > 0 ? 3 : 2);
    return f;
}

static double max_rel_diff(const struct matrix *a, const struct matrix *b) {
    long n = (long)a->rows * a->cols;
    float *ha = xmalloc((size_t)(n + 1) * sizeof *ha), *hb = xmalloc((size_t)(n + 1) * 4);
    matrix_to_host(a, ha);
    matrix_to_host(b, hb);
    double worst = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)ha[i] - hb[i]) / (fabs(ha[i]) > 1 ? fabs(ha[i]) : 1);
        if (!(d <= worst)) worst = d; /* NaN wins */
    }
    free(ha);
    free(hb);
    return worst;
}

int main(int argc, char **argv) {
    const char *usage =
        "Training throughput of a ReLU MLP through the matrix API (CPU or GPU), and the fraction\n"
        "of the bare sgemm rate its GEMMs reach.\n"
        "Usage: gpu-mlp [options]\n"
        "e.g.: gpu-mlp --use-gpu=yes --dims=440,1024,1024,1024,1024,2000 --minibatch=512\n";
    const char *use_gpu = "yes", *dims_str = "440,1024,1024,1024,1024,2000";
    int minibatch = 512, compare_steps = 0, threads = 0;
    float seconds = 10.0f, lr = 1e-4f, compare_tol = 1e-4f;
    struct option_spec specs[] = {
        {"use-gpu", OPT_STRING, &use_gpu, "yes|no|optional|wait"},
        {"dims", OPT_STRING, &dims_str, "layer dimensions, input first"},
        {"minibatch", OPT_INT, &minibatch, "frames per step"},
        {"seconds", OPT_FLOAT, &seconds, "time to spend on each measurement"},
        {"learning-rate", OPT_FLOAT, &lr, "per-frame SGD step"},
        {"threads", OPT_INT, &threads, "OpenBLAS threads (CPU runs; 0: library default)"},
        {"compare-steps", OPT_INT, &compare_steps,
         "if > 0: train a CPU and a device copy for this many steps and compare parameters"},
        {"compare-tol", OPT_FLOAT, &compare_tol, "largest relative parameter difference allowed"},
    };
    int num_specs = (int)(sizeof specs / sizeof specs[0]);
    log_set_program(argv[0]);
    options_parse(&argc, argv, usage, specs, num_specs);
    if (argc != 1) options_usage_exit(usage, specs, num_specs);
    if (matrix_select_device(use_gpu) < 0) die("%s", error_get());
    matrix_set_num_threads(threads);

    int dims[MAX_LAYERS + 1], num_dims = 0;
    for (const char *p = dims_str; *p;) {
        char *end;
        long d = strtol(p, &end, 10);
        if (end == p || d <= 0 || d > 100000 || num_dims > MAX_LAYERS)
            die("bad --dims '%s'", dims_str);
        dims[num_dims++] = (int)d;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') die("bad --dims '%s'", dims_str);
    }
    if (num_dims < 2) die("--dims needs at least two numbers");
    if (minibatch < 1 || minibatch > 4096) die("--minibatch must be in 1..4096");
    int L = num_dims - 1, n = minibatch, device = matrix_default_device;

    /* NUM_BATCHES random minibatches on the host, cycled */
    struct rng r;
    rng_seed(&r, 1);
    float *inputs = xmalloc((size_t)NUM_BATCHES * n * dims[0] * sizeof *inputs);
    int *labels = xmalloc((size_t)NUM_BATCHES * n * sizeof *labels);
    for (long i = 0; i < (long)NUM_BATCHES * n * dims[0]; i++) inputs[i] = rng_gauss(&r);
    for (long i = 0; i < (long)NUM_BATCHES * n; i++) labels[i] = (int)rng_below(&r, dims[L]);
#define BATCH_IN(i) (inputs + (long)((i) % NUM_BATCHES) * n * dims[0])
#define BATCH_LAB(i) (labels + (long)((i) % NUM_BATCHES) * n)

    struct net net;
    net_init(&net, L, dims, n, device, &r);
    printf("device=%s\n", device == MATRIX_GPU ? "gpu" : "cpu");

    if (compare_steps > 0) {
        struct net ref;
        net_init(&ref, L, dims, n, MATRIX_CPU, NULL);
        net_copy_params(&ref, &net);
        double worst = 0, oc = 0, od = 0;
        for (int s = 0; s < compare_steps; s++) {
            oc = net_step(&ref, BATCH_IN(s), BATCH_LAB(s), lr);
            od = net_step(&net, BATCH_IN(s), BATCH_LAB(s), lr);
        }
        for (int l = 0; l < L; l++) {
            double d = max_rel_diff(&ref.w[l], &net.w[l]);
            struct matrix bc = matrix_from_vector(&ref.b[l], 1, dims[l + 1]);
            struct matrix bd = matrix_from_vector(&net.b[l], 1, dims[l + 1]);
            double e = max_rel_diff(&bc, &bd);
            if (!(d <= worst)) worst = d;
            if (!(e <= worst)) worst = e;
        }
        printf("compare_steps=%d\nobjf_cpu=%.6f\nobjf_device=%.6f\nmax_rel_param_diff=%.3g\n",
               compare_steps, oc / n, od / n, worst);
        net_release(&ref);
        int ok = worst <= compare_tol && fabs(oc - od) <= compare_tol * fabs(oc) + 1e-3;
        LOG("CPU vs %s after %d steps: max relative parameter difference %.3g (tolerance %g)%s",
            device == MATRIX_GPU ? "GPU" : "CPU", compare_steps, worst, (double)compare_tol,
            ok ? "" : ": TOO LARGE");
        net_release(&net);
        return ok ? 0 : 1;
    }

    /* warm-up (cuBLAS heuristics, allocator, clocks) */
    double objf_first = net_step(&net, BATCH_IN(0), BATCH_LAB(0), lr) / n, objf_last = 0;
    for (int i = 1; i < 3; i++) net_step(&net, BATCH_IN(i), BATCH_LAB(i), lr);
    matrix_sync();
    long steps = 0;
    double t0 = time_now(), t = 0;
    while ((t = time_now() - t0) < seconds) {
        for (int k = 0; k < 5; k++, steps++)
            objf_last = net_step(&net, BATCH_IN(steps), BATCH_LAB(steps), lr) / n;
        matrix_sync(); /* the step's objective download already waits; this makes it explicit */
    }
    double step_s = t / steps;

    gemms_only(&net);
    matrix_sync();
    long gsteps = 0;
    double g0 = time_now(), gt = 0;
    while ((gt = time_now() - g0) < seconds / 2) {
        for (int k = 0; k < 5; k++, gsteps++) gemms_only(&net);
        matrix_sync();
    }
    double flops = step_gemm_flops(&net);
    double sgemm = flops * gsteps / gt, achieved = flops / step_s;
    printf("dims=%s\nminibatch=%d\nsteps=%ld\nstep_ms=%.3f\nsamples_per_sec=%.1f\n", dims_str, n,
           steps, step_s * 1e3, n / step_s);
    printf("sgemm_gflops=%.1f\nstep_gemm_gflops=%.1f\nfraction_of_sgemm=%.3f\n", sgemm / 1e9,
           achieved / 1e9, achieved / sgemm);
    printf("objf_first=%.4f\nobjf_last=%.4f\n", objf_first, objf_last);
    LOG("%s: %.0f samples/s, GEMMs at %.1f GFLOP/s = %.2f of bare sgemm (%.1f GFLOP/s)",
        device == MATRIX_GPU ? "GPU" : "CPU", n / step_s, achieved / 1e9, achieved / sgemm,
        sgemm / 1e9);
    net_release(&net);
    free(inputs);
    free(labels);
    if (!isfinite(objf_last)) die("objective is not finite");
    return 0;
}
