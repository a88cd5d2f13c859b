/* The training step alone, for bench/train-throughput.sh: what nnet-train does per minibatch
 * (forward, cross-entropy objective, accuracy, backward with the update) on random examples held
 * in memory, with no reading thread. Set beside nnet-train's end-to-end rate it separates the
 * step's cost from the cost of reading examples while training.
 *   train-step <model> <minibatch> <threads> [seconds [use-gpu [precision]]]
 * prints "samples_per_sec=S". use-gpu is nnet-train's --use-gpu (default no): with yes the step
 * runs on the GPU; precision is its --precision (default fp32).
 * Built by bench/train-throughput.sh against lib/libparnet.a. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/base.h"
#include "matrix/matrix.h"
#include "nnet/nnet.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: train-step <model> <minibatch> <threads> [seconds [use-gpu [precision]]]\n");
        return 2;
    }
    int mb = atoi(argv[2]), threads = atoi(argv[3]);
    double seconds = argc > 4 ? atof(argv[4]) : 3.0;
    matrix_set_num_threads(threads);
    if (cuda_select_device(argc > 5 ? argv[5] : "no")) die("%s", error_get());
    if (matrix_set_precision(argc > 6 ? argv[6] : "fp32")) die("%s", error_get());
    struct nnet *n = nnet_read_file(argv[1]);
    if (!n) die("cannot read '%s': %s", argv[1], error_get());
    int in_dim = nnet_input_dim(n), out_dim = nnet_output_dim(n);
    struct rng r;
    rng_seed(&r, 1);
    enum { BATCHES = 4 }; /* a few inputs, so that one does not stay in the caches */
    struct matrix x[BATCHES], deriv = {0};
    for (int b = 0; b < BATCHES; b++) {
        matrix_init(&x[b], mb, in_dim);
        matrix_set_randn(&x[b], &r, 1.0f);
    }
    int *rows = xmalloc(sizeof(int) * mb), *cols = xmalloc(sizeof(int) * mb);
    int *argmax = xmalloc(sizeof(int) * mb);
    for (int i = 0; i < mb; i++) {
        rows[i] = i;
        cols[i] = (int)rng_below(&r, (uint32_t)out_dim);
    }
    double start = 0, cpu_start = 0;
    long steps = 0;
    for (int it = 0;; it++) {
        if (it == 5) { /* after the natural-gradient initialisation */
            start = time_now();
            cpu_start = (double)clock() / CLOCKS_PER_SEC;
        }
        const struct matrix *out = nnet_forward(n, &x[it % BATCHES], mb, 1);
        nnet_objective_xent(n, mb, rows, cols, NULL, &deriv);
        matrix_row_argmax(out, argmax);
        nnet_backward(n, &deriv, NNET_UPDATE);
        if (it >= 5) steps++;
        if (it >= 5 && time_now() - start >= seconds) break;
    }
    double cpu = (double)clock() / CLOCKS_PER_SEC - cpu_start;
    /* cpu_samples_per_sec: samples per `threads` seconds of process CPU time (what the step would
     * run at with its threads to itself; on a loaded machine closer to that than the wall rate) */
    printf("samples_per_sec=%.1f cpu_samples_per_sec=%.1f\n",
           (double)steps * mb / (time_now() - start), (double)steps * mb * threads / cpu);
    for (int b = 0; b < BATCHES; b++) matrix_release(&x[b]);
    matrix_release(&deriv);
    free(rows);
    free(cols);
    free(argmax);
    nnet_free(n);
    return 0;
}
