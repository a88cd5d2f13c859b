/* A stand-in for how fast nnet-train can consume examples, for bench/egs-io.sh: it times only the
 * matrix products of one SGD step of the Fashion-MNIST network (784 -> 1024 -> 1024 -> 10,
 * egs/fashion-mnist/conf) on minibatches of 128. The real trainer does all of this and more
 * (nonlinearities, natural gradient), so it consumes examples no faster than this.
 * Usage: train-proxy [seconds]; prints "examples-per-second N". */
#include "matrix/matrix.h"

#include <stdlib.h>

int main(int argc, char **argv) {
    double budget = argc > 1 ? atof(argv[1]) : 3.0;
    enum { B = 128, L = 3 };
    static const int dims[L + 1] = {784, 1024, 1024, 10};
    struct matrix w[L], x[L + 1], d[L + 1], g[L];
    struct rng r;
    rng_seed(&r, 1);
    for (int l = 0; l <= L; l++) {
        matrix_init(&x[l], B, dims[l]);
        matrix_init(&d[l], B, dims[l]);
        matrix_set_randn(&x[l], &r, 1.0f);
        matrix_set_randn(&d[l], &r, 1.0f);
    }
    for (int l = 0; l < L; l++) {
        matrix_init(&w[l], dims[l + 1], dims[l]);
        matrix_init(&g[l], dims[l + 1], dims[l]);
        matrix_set_randn(&w[l], &r, 0.01f);
    }
    long long steps = 0;
    double t0 = time_now(), t;
    do {
        for (int l = 0; l < L; l++) /* forward: x[l+1] = x[l] w[l]^T */
            matrix_add_mat_mat(&x[l + 1], 1.0f, &x[l], MATRIX_NO_TRANS, &w[l], MATRIX_TRANS, 0.0f);
        for (int l = L - 1; l >= 0; l--) {
            /* weight gradient d[l+1]^T x[l], then the input derivative d[l+1] w[l] */
            matrix_add_mat_mat(&g[l], 1.0f, &d[l + 1], MATRIX_TRANS, &x[l], MATRIX_NO_TRANS, 0.0f);
            if (l > 0)
                matrix_add_mat_mat(&d[l], 1.0f, &d[l + 1], MATRIX_NO_TRANS, &w[l], MATRIX_NO_TRANS,
                                   0.0f);
            matrix_add(&w[l], -1e-9f, &g[l]);
        }
        steps++;
        t = time_now() - t0;
    } while (t < budget);
    printf("examples-per-second %.0f\n", (double)steps * B / t);
    return 0;
}
