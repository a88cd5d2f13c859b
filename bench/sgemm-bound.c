/* The OpenBLAS sgemm bound for training an MLP: times the three GEMMs per affine layer of one
 * training step (forward Y = X W^T, input derivative dX = dY W, weight gradient dW = dY^T X) at the
 * given minibatch size, and prints the step rate they allow as "samples_per_sec=S gflops=G".
 *   sgemm-bound <minibatch> <threads> <dim0,dim1,...,dimL> [seconds]
 * Built by bench/train-throughput.sh: cc -O2 bench/sgemm-bound.c -lopenblas */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int n);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: sgemm-bound <minibatch> <threads> <d0,d1,...> [seconds]\n");
        return 2;
    }
    int mb = atoi(argv[1]), threads = atoi(argv[2]);
    double seconds = argc > 4 ? atof(argv[4]) : 2.0;
    int dims[64], nd = 0;
    for (char *t = strtok(argv[3], ","); t && nd < 64; t = strtok(NULL, ",")) dims[nd++] = atoi(t);
    openblas_set_num_threads(threads);
    size_t maxd = 0;
    for (int i = 0; i < nd; i++) maxd = (size_t)dims[i] > maxd ? (size_t)dims[i] : maxd;
    float *x = calloc((size_t)mb * maxd, 4), *y = calloc((size_t)mb * maxd, 4);
    float *w = calloc(maxd * maxd, 4), *g = calloc(maxd * maxd, 4);
    for (size_t i = 0; i < (size_t)mb * maxd; i++) x[i] = y[i] = 0.001f * (i % 97);
    for (size_t i = 0; i < maxd * maxd; i++) w[i] = 0.001f * (i % 89);
    double flops = 0;
    for (int l = 0; l + 1 < nd; l++) flops += 6.0 * mb * dims[l] * dims[l + 1];
    int steps = 0;
    double start = now();
    do {
        for (int l = 0; l + 1 < nd; l++) {
            int in = dims[l], out = dims[l + 1];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mb, out, in, 1, x, in, w, in, 0, y, out);
            if (l > 0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mb, in, out, 1, y, out, w, in, 0,
                            x, in);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, mb, 1, y, out, x, in, 0, g, in);
        }
        steps++;
    } while (now() - start < seconds);
    double elapsed = now() - start;
    /* The first layer needs no input derivative: count only the GEMMs done. */
    double done = 0;
    for (int l = 0; l + 1 < nd; l++) done += (l > 0 ? 6.0 : 4.0) * mb * dims[l] * dims[l + 1];
    printf("samples_per_sec=%.1f gflops=%.1f\n", steps * (double)mb / elapsed,
           steps * done / elapsed / 1e9);
    (void)flops;
    return 0;
}
