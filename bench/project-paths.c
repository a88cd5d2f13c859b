/* Natural gradient's projection on each of the two paths the CPU can take, called as natgrad calls
 * it (docs/BENCHMARKS.md, "Natural gradient's products"):
 *   project-paths <N> <D> <R> <reps> [threads]
 * hx: an ordinary call, matrix_project_out (H = X0 W^T, X = X0 - H W, the row norms; X0 read from
 * src), on the fused pass (matrix_project_path = 1) and composed (0: H by cpu_project_gemm, then
 * the X - H W pass). j: an update call, matrix_project_out_j (J = H^T X0 too) on the fused kernel
 * (matrix_project_j_path = 1) and composed (0). Interleaved `reps` times; minimum and median
 * microseconds per call (the j calls include the copy of X0 into X that natgrad makes first).
 * Which path runs by default is a fact about the CPU (cpu-project.c); this says whether it holds.
 * Build: cc -std=c11 -D_GNU_SOURCE -O2 -pthread -Isrc bench/project-paths.c lib/libparnet.a \
 *        $(make -s print-ldlibs) -o project-paths */
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "matrix/matrix-internal.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: project-paths <N> <D> <R> <reps> [threads]\n"
                        "e.g.: project-paths 512 1025 20 200 1\n");
        return 2;
    }
    int n = atoi(argv[1]), d = atoi(argv[2]), r = atoi(argv[3]), reps = atoi(argv[4]);
    int thr = argc > 5 ? atoi(argv[5]) : 1;
    if (n < 1 || d < 2 || r < 1 || r >= d || reps < 1 || thr < 1) {
        fprintf(stderr,
                "project-paths: need N >= 1, D >= 2, 1 <= R < D, reps >= 1, threads >= 1\n");
        return 2;
    }
    matrix_set_num_threads(thr);
    struct rng g;
    rng_seed(&g, 1);
    struct matrix x0, x, h, j, w, scratch;
    matrix_init(&x0, n, d);
    matrix_set_randn(&x0, &g, 1.0f);
    matrix_init(&x, n, d);
    matrix_init(&h, n, r);
    matrix_init(&j, r, d);
    matrix_init(&w, r, d);
    matrix_set_randn(&w, &g, 0.03f);
    matrix_project_j_path = 1;
    int rows = matrix_project_out_j_scratch(&x, r);
    matrix_init(&scratch, rows > 0 ? rows : 1, d);
    struct vector sq;
    vector_init(&sq, n);
    enum { PATHS = 4 };
    const char *name[PATHS] = {"hx fused", "hx composed", "j fused", "j composed"};
    double *t[PATHS];
    for (int v = 0; v < PATHS; v++) t[v] = xmalloc(reps * sizeof(double));
    for (int it = 0; it < reps; it++)
        for (int v = 0; v < PATHS; v++) {
            double start = time_now();
            if (v < 2) {
                matrix_project_path = v == 0;
                matrix_project_out(&x, &h, &w, 0, &x0, NULL, &sq);
            } else {
                matrix_project_j_path = v == 2;
                matrix_copy(&x, &x0);
                matrix_project_out_j(&x, &h, &j, &w, NULL, NULL, &sq, &scratch);
            }
            t[v][it] = time_now() - start;
        }
    for (int v = 0; v < PATHS; v++) {
        qsort(t[v], reps, sizeof(double), cmp);
        printf("N=%d D=%d R=%d threads=%d %-11s min %7.1f us  median %7.1f us\n", n, d, r, thr,
               name[v], 1e6 * t[v][0], 1e6 * t[v][reps / 2]);
        free(t[v]);
    }
    return 0;
}
