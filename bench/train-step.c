/* The training step alone, for bench/train-throughput.sh: what nnet-train does per minibatch
 * (forward, cross-entropy objective, accuracy, backward with the update) on random examples held
 * in memory, with no reading thread. Set beside nnet-train's end-to-end rate it separates the
 * step's cost from the cost of reading examples while training.
 *   train-step <model> <minibatch> <threads> [seconds [use-gpu [precision [model2]]]]
 * prints "samples_per_sec=S cpu_samples_per_sec=C": C counts samples per `threads` seconds of the
 * process's CPU time (what the step would run at with its threads to itself; on a machine loaded
 * by other work closer to that than S). use-gpu is nnet-train's --use-gpu (default no): with yes
 * the step runs on the GPU; precision is its --precision (default fp32).
 * With model2 the two models train in turns of 0.25 s (each `seconds` in all), so that drift in
 * the machine's speed falls on both alike; it adds "samples_per_sec2=S2 cost_median=X": the
 * median over turns of rate(model) / rate(model2) - 1, i.e. what model2 costs per sample over
 * model (on this VM two runs seconds apart differ by up to 20%; turns 0.25 s apart do not).
 * Built by bench/train-throughput.sh against lib/libparnet.a. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/base.h"
#include "matrix/matrix.h"
#include "nnet/nnet.h"

enum { BATCHES = 4 }; /* a few inputs, so that one does not stay in the caches */

struct trainee {
    struct nnet *n;
    struct matrix x[BATCHES], deriv;
    int mb, *rows, *cols, *argmax;
    long it, samples;
    double wall, cpu;
};

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void trainee_init(struct trainee *t, const char *file, int mb) {
    t->n = nnet_read_file(file);
    if (!t->n) die("cannot read '%s': %s", file, error_get());
    int in_dim = nnet_input_dim(t->n), out_dim = nnet_output_dim(t->n);
    struct rng r;
    rng_seed(&r, 1);
    for (int b = 0; b < BATCHES; b++) {
        matrix_init(&t->x[b], mb, in_dim);
        matrix_set_randn(&t->x[b], &r, 1.0f);
    }
    t->mb = mb;
    t->rows = xmalloc(sizeof(int) * mb);
    t->cols = xmalloc(sizeof(int) * mb);
    t->argmax = xmalloc(sizeof(int) * mb);
    for (int i = 0; i < mb; i++) {
        t->rows[i] = i;
        t->cols[i] = (int)rng_below(&r, (uint32_t)out_dim);
    }
}

static void trainee_step(struct trainee *t) {
    const struct matrix *out = nnet_forward(t->n, &t->x[t->it % BATCHES], t->mb, 1);
    nnet_objective_xent(t->n, t->mb, t->rows, t->cols, NULL, &t->deriv);
    matrix_row_argmax(out, t->argmax);
    nnet_backward(t->n, &t->deriv, NNET_UPDATE);
    t->it++;
}

/* Steps for `seconds` (at least one); returns the turn's samples/s and adds to the totals. */
static double trainee_turn(struct trainee *t, double seconds) {
    double start = time_now(), cpu_start = cpu_now(), wall;
    long steps = 0;
    do {
        trainee_step(t);
        steps++;
    } while ((wall = time_now() - start) < seconds);
    t->wall += wall;
    t->cpu += cpu_now() - cpu_start;
    t->samples += steps * t->mb;
    return steps * t->mb / wall;
}

static void trainee_free(struct trainee *t) {
    for (int b = 0; b < BATCHES; b++) matrix_release(&t->x[b]);
    matrix_release(&t->deriv);
    free(t->rows);
    free(t->cols);
    free(t->argmax);
    nnet_free(t->n);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: train-step <model> <minibatch> <threads> [seconds [use-gpu "
                        "[precision [model2]]]]\n");
        return 2;
    }
    int mb = atoi(argv[2]), threads = atoi(argv[3]);
    double seconds = argc > 4 ? atof(argv[4]) : 3.0;
    matrix_set_num_threads(threads);
    if (matrix_select_device(argc > 5 ? argv[5] : "no")) die("%s", error_get());
    if (matrix_set_precision(argc > 6 ? argv[6] : "fp32")) die("%s", error_get());
    int pair = argc > 7;
    struct trainee t[2] = {0};
    for (int k = 0; k <= pair; k++) {
        trainee_init(&t[k], argv[1 + 6 * k], mb);
        for (int i = 0; i < 5; i++) /* after the natural-gradient initialisation */
            trainee_step(&t[k]);
    }
    if (!pair) {
        trainee_turn(&t[0], seconds);
    } else {
        enum { MAX_TURNS = 4096 };
        static double cost[MAX_TURNS];
        int turns = (int)(seconds / 0.25 + 0.5);
        if (turns < 1) turns = 1;
        if (turns > MAX_TURNS) turns = MAX_TURNS;
        for (int i = 0; i < turns; i++) {
            double a = trainee_turn(&t[0], seconds / turns);
            double b = trainee_turn(&t[1], seconds / turns);
            cost[i] = a / b - 1.0;
        }
        qsort(cost, (size_t)turns, sizeof *cost, cmp_double);
        double med = turns % 2 ? cost[turns / 2] : 0.5 * (cost[turns / 2 - 1] + cost[turns / 2]);
        printf("samples_per_sec2=%.1f cpu_samples_per_sec2=%.1f cost_median=%.4f ",
               t[1].samples / t[1].wall, t[1].samples * threads / t[1].cpu, med);
    }
    printf("samples_per_sec=%.1f cpu_samples_per_sec=%.1f\n", t[0].samples / t[0].wall,
           t[0].samples * threads / t[0].cpu);
    for (int k = 0; k <= pair; k++) trainee_free(&t[k]);
    return 0;
}
