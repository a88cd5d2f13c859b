/* The training step alone, for bench/train-throughput.sh: what nnet-train does per minibatch
 * (forward, cross-entropy objective, accuracy, backward with the update) on random examples held
 * in memory, with no reading thread. Set beside nnet-train's end-to-end rate it separates the
 * step's cost from the cost of reading examples while training.
 *   train-step <model> <minibatch> <threads> [seconds [use-gpu [precision]]]
 * prints "samples_per_sec=S cpu_samples_per_sec=C": C counts samples per `threads` seconds of the
 * process's CPU time (what the step would run at with its threads to itself; on a machine loaded
 * by other work closer to that than S). use-gpu is nnet-train's --use-gpu (default no): with yes
 * the step runs on the GPU; precision is its --precision (default fp32).
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
    if (matrix_select_device(argc > 5 ? argv[5] : "no")) die("%s", error_get());
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
    struct timespec ts;
    long steps = 0;
    for (int it = 0;; it++) {
        if (it == 5) { /* after the natural-gradient initialisation */
            start = time_now();
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
            cpu_start = ts.tv_sec + 1e-9 * ts.tv_nsec;
        }
        const struct matrix *out = nnet_forward(n, &x[it % BATCHES], mb, 1);
        nnet_objective_xent(n, mb, rows, cols, NULL, &deriv);
        matrix_row_argmax(out, argmax);
        nnet_backward(n, &deriv, NNET_UPDATE);
        if (it >= 5) steps++;
        if (it >= 5 && time_now() - start >= seconds) break;
    }
    double wall = time_now() - start;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    double cpu = ts.tv_sec + 1e-9 * ts.tv_nsec - cpu_start;
    printf("samples_per_sec=%.1f cpu_samples_per_sec=%.1f\n", (double)steps * mb / wall,
           (double)steps * mb * threads / cpu);
    for (int b = 0; b < BATCHES; b++) matrix_release(&x[b]);
    matrix_release(&deriv);
    free(rows);
    free(cols);
    free(argmax);
    nnet_free(n);
    return 0;
}
