/* Natural gradient's two thin products on each engine, in the fixed parts natural gradient runs
 * them in (docs/BENCHMARKS.md, "Natural gradient's products"):
 *   project-gemm <N> <D> <R> <reps>
 * H = X W^T (N x R, cut by 64 rows) and J = H^T X (R x D, cut by 64 columns on OpenBLAS, 256 on
 * oneDNN) on one thread, OpenBLAS (cpu_gemm_parts) against oneDNN fp32 (onednn_gemm_parts_f32),
 * and what cpu_project_gemm picks here; interleaved `reps` times, minimum and median microseconds
 * per call and GFLOP/s at the minimum (the figure least disturbed by other load).
 * Build: cc -std=c11 -D_GNU_SOURCE -O2 -pthread -Isrc bench/project-gemm.c lib/libparnet.a \
 *        $(make -s print-ldlibs) -o project-gemm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "matrix/cpu.h"
#include "matrix/matrix.h"
#include "matrix/onednn.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static struct cpu_mat km(struct matrix *m) {
    struct cpu_mat c = {m->data, m->rows, m->cols, m->stride};
    return c;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: project-gemm <N> <D> <R> <reps>\n"
                        "e.g.: project-gemm 512 1025 20 100\n");
        return 2;
    }
    int n = atoi(argv[1]), d = atoi(argv[2]), r = atoi(argv[3]), reps = atoi(argv[4]);
    if (n < 1 || d < 2 || r < 1 || r >= d || reps < 1) {
        fprintf(stderr, "project-gemm: need N >= 1, D >= 2, 1 <= R < D, reps >= 1\n");
        return 2;
    }
    char isa[64];
    onednn_bf16_check(isa, sizeof isa);
    int dnnl = strcmp(isa, "none") != 0; /* built with oneDNN */
    matrix_set_num_threads(1);
    struct rng g;
    rng_seed(&g, 1);
    struct matrix x, h, w, j;
    matrix_init(&x, n, d);
    matrix_set_randn(&x, &g, 1.0f);
    matrix_init(&w, r, d);
    matrix_set_randn(&w, &g, 0.03f);
    matrix_init(&h, n, r);
    matrix_init(&j, r, d);
    enum { H_BLAS, H_DNNL, H_PICKED, J_BLAS, J_DNNL, J_PICKED, WAYS };
    static const char *names[WAYS] = {"H OpenBLAS", "H oneDNN", "H picked", "J OpenBLAS",
                                      "J oneDNN", "J picked"};
    double *t[WAYS];
    for (int v = 0; v < WAYS; v++) t[v] = xmalloc(reps * sizeof(double));
    for (int it = 0; it < reps; it++)
        for (int v = 0; v < WAYS; v++) {
            if ((v == H_DNNL || v == J_DNNL) && !dnnl) continue;
            double a = now();
            switch (v) {
            case H_BLAS: cpu_gemm_parts(km(&h), 1, km(&x), 0, km(&w), 1, 0, 64); break;
            case H_DNNL: onednn_gemm_parts_f32(km(&h), 1, km(&x), 0, km(&w), 1, 0, 64); break;
            case H_PICKED: cpu_project_gemm(km(&h), km(&x), 0, km(&w), 1, 64); break;
            case J_BLAS: cpu_gemm_parts(km(&j), 1, km(&h), 1, km(&x), 0, 0, 64); break;
            case J_DNNL: onednn_gemm_parts_f32(km(&j), 1, km(&h), 1, km(&x), 0, 0, 64); break;
            case J_PICKED: cpu_project_gemm(km(&j), km(&h), 1, km(&x), 0, 64); break;
            }
            t[v][it] = now() - a;
        }
    for (int v = 0; v < WAYS; v++) {
        if ((v == H_DNNL || v == J_DNNL) && !dnnl) {
            printf("N=%d D=%d R=%d %-10s n/a (built without oneDNN)\n", n, d, r, names[v]);
            continue;
        }
        qsort(t[v], reps, sizeof(double), cmp);
        printf("N=%d D=%d R=%d %-10s min %7.1f us med %7.1f us  %6.1f GFLOP/s\n", n, d, r,
               names[v], 1e6 * t[v][0], 1e6 * t[v][reps / 2], 2.0 * n * d * r / t[v][0] * 1e-9);
    }
    return 0;
}
