/* The natural gradient's update-call products on one side, the two ways natgrad can do them, on
 * random data held in memory (docs/BENCHMARKS.md, "Natural gradient's products"):
 *   project-rate <N> <D> <R> <reps> [threads]
 * times, interleaved, `reps` times each (wall clock per call; min and median printed, the min
 * being the figure least disturbed by other load): blas_h_j = OpenBLAS H = X W^T and J = H^T X,
 * then matrix_project_out with have_h (X - H W and row norms); fused_j = matrix_project_out_j
 * forced to its fused kernel (matrix-internal.h matrix_project_j_path: all three in one pass);
 * fused_hx = matrix_project_out forced to its fused pass (H and X - H W, an ordinary call);
 * blas_hx = the same call composed: H by OpenBLAS, then matrix_project_out with have_h;
 * blas_j = J alone; gemm_NxDxD = a layer-sized GEMM (N x D times D x D) for the rate ratio;
 * w_new = W' = A [W; J] (R x 2R times 2R x D); k_l = K and L as natgrad_update forms them
 * ([W; J] J^T if N > D, else J J^T and H^T H as symmetric products, counted as half).
 * Build: cc -std=c11 -D_GNU_SOURCE -O2 -march=native -pthread -Isrc bench/project-rate.c \
 *        lib/libparnet.a $(make -s print-ldlibs) -o project-rate */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "base/base.h"
#include "matrix/matrix-internal.h"
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: project-rate <N> <D> <R> <reps> [threads]\n"
                        "e.g.: project-rate 128 1024 80 200 1\n");
        return 2;
    }
    int n = atoi(argv[1]), d = atoi(argv[2]), r = atoi(argv[3]), reps = atoi(argv[4]);
    int thr = argc > 5 ? atoi(argv[5]) : 1;
    if (n < 1 || d < 2 || r < 1 || r >= d || reps < 1 || thr < 1) {
        fprintf(stderr, "project-rate: need N >= 1, D >= 2, 1 <= R < D, reps >= 1, threads >= 1\n");
        return 2;
    }
    matrix_set_num_threads(thr);
    matrix_project_j_path = 1; /* fused_j: the fused kernel at every rank */
    matrix_project_path = 1;   /* fused_hx: the fused pass, whatever the CPU */
    struct rng g; rng_seed(&g, 1);
    struct matrix x0, x, h, j, w, js;
    matrix_init(&x0, n, d); matrix_set_randn(&x0, &g, 1.0f);
    matrix_init(&x, n, d); matrix_init(&h, n, r); matrix_init(&j, r, d);
    matrix_init(&w, r, d); matrix_set_randn(&w, &g, 0.03f);
    int sr = matrix_project_out_j_scratch(&x, r);
    matrix_init(&js, sr > 0 ? sr : 1, d);
    struct vector sq; vector_init(&sq, n);
    struct matrix gout, gw; matrix_init(&gout, n, d); matrix_init(&gw, d, d); matrix_set_randn(&gw, &g, 0.03f);
    struct matrix am, wj, wn, kl;
    matrix_init(&am, r, 2 * r); matrix_set_randn(&am, &g, 0.1f);
    matrix_init(&wj, 2 * r, d); matrix_set_randn(&wj, &g, 0.1f);
    matrix_init(&wn, r, d); matrix_init(&kl, 2 * r, r);
    struct matrix jv = matrix_rows(&wj, r, r), kk = matrix_rows(&kl, r, r), ll = matrix_rows(&kl, 0, r);
    double *t[8]; for (int v = 0; v < 8; v++) t[v] = malloc(reps * sizeof(double));
    for (int it = 0; it < reps; it++)
        for (int v = 0; v < 8; v++) {
            matrix_copy(&x, &x0);
            double a = now();
            if (v == 0) {
                matrix_add_mat_mat(&h, 1.0f, &x, MATRIX_NO_TRANS, &w, MATRIX_TRANS, 0.0f);
                matrix_add_mat_mat(&j, 1.0f, &h, MATRIX_TRANS, &x, MATRIX_NO_TRANS, 0.0f);
                matrix_project_out(&x, &h, &w, 1, NULL, NULL, &sq);
            } else if (v == 2) {
                matrix_project_out(&x, &h, &w, 0, NULL, NULL, &sq);
            } else if (v == 7) { /* blas_hx: H by OpenBLAS, then X - H W */
                matrix_add_mat_mat(&h, 1.0f, &x, MATRIX_NO_TRANS, &w, MATRIX_TRANS, 0.0f);
                matrix_project_out(&x, &h, &w, 1, NULL, NULL, &sq);
            } else if (v == 5) { /* W' = A [W; J] */
                matrix_add_mat_mat(&wn, 1.0f, &am, MATRIX_NO_TRANS, &wj, MATRIX_NO_TRANS, 0.0f);
            } else if (v == 6) { /* K, L as natgrad_update */
                if (n > d) {
                    matrix_add_mat_mat(&kl, 1.0f, &wj, MATRIX_NO_TRANS, &jv, MATRIX_TRANS, 0.0f);
                } else {
                    matrix_sym_add_mat_mat(&kk, 1.0f, &jv, MATRIX_NO_TRANS, 0.0f);
                    matrix_sym_add_mat_mat(&ll, 1.0f, &h, MATRIX_TRANS, 0.0f);
                }
            } else if (v == 4) {
                matrix_add_mat_mat(&gout, 1.0f, &x, MATRIX_NO_TRANS, &gw, MATRIX_TRANS, 0.0f);
            } else if (v == 3) {
                matrix_add_mat_mat(&j, 1.0f, &h, MATRIX_TRANS, &x, MATRIX_NO_TRANS, 0.0f);
            } else {
                matrix_project_out_j(&x, &h, &j, &w, NULL, NULL, &sq, sr > 0 ? &js : NULL);
            }
            t[v][it] = now() - a;
        }
    double fl = 6.0 * n * d * r;
    const char *nm[8] = {"blas_h_j", "fused_j ", "fused_hx", "blas_j  ", "gemm_NxDxD", "w_new   ", "k_l     ", "blas_hx "};
    double fv[8] = {fl, fl, fl * 2 / 3, fl / 3, 2.0 * n * d * d, 4.0 * r * r * d,
                    n > d ? 4.0 * r * r * d : (double)r * r * d + (double)r * r * n, fl * 2 / 3};
    for (int v = 0; v < 8; v++) {
        qsort(t[v], reps, sizeof(double), cmp);
        printf("N=%d D=%d R=%d thr=%d %s min %.1f us med %.1f us  (%.1f GFLOP/s at min)\n", n, d, r, thr, nm[v], 1e6 * t[v][0], 1e6 * t[v][reps / 2], fv[v] / t[v][0] * 1e-9);
    }
    return 0;
}
