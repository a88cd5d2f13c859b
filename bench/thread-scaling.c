/* How three kinds of work scale from 1 to 2 threads on this machine, the thread counts alternated
 * call by call in one process (so that the VM's drift falls on both alike): natural gradient's
 * fused pass (matrix_project_out: H = X W^T, X - H W; fp32 FMAs, W streaming from L2), an
 * OpenBLAS sgemm and a oneDNN bf16 product of a layer's size. Median of 300 calls each
 * (docs/history/2026-12-01-benchmarks.md, "Issue 19, third round").
 *   thread-scaling <D>        (N = 512, R = 80, layer 1024 wide)
 * Build: cc -std=c11 -D_GNU_SOURCE -O2 -march=native -pthread -Isrc bench/thread-scaling.c \
 *        lib/libparnet.a $(make -s print-ldlibs) -o thread-scaling */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "base/base.h"
#include "matrix/matrix-internal.h"
#include "matrix/onednn.h"
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    if (argc != 2 || atoi(argv[1]) < 81) {
        fprintf(stderr, "usage: thread-scaling <D>   (D > 80; e.g. 1024 or 2000)\n");
        return 2;
    }
    int n = 512, d = atoi(argv[1]), r = 80, reps = 300;
    struct rng g; rng_seed(&g, 1);
    struct matrix x0, x, h, w, gout, gw;
    matrix_init(&x0, n, d); matrix_set_randn(&x0, &g, 1.0f);
    matrix_init(&x, n, d); matrix_init(&h, n, r);
    matrix_init(&w, r, d); matrix_set_randn(&w, &g, 0.03f);
    matrix_init(&gout, n, 1024); matrix_init(&gw, 1024, d); matrix_set_randn(&gw, &g, 0.03f);
    struct vector sq; vector_init(&sq, n);
    uint16_t *a16 = calloc((size_t)n * d, 2), *b16 = calloc((size_t)1024 * d, 2);
    double *t[3][2]; for (int k = 0; k < 3; k++) for (int q = 0; q < 2; q++) t[k][q] = malloc(reps * sizeof(double));
    for (int it = 0; it < reps; it++)
        for (int k = 0; k < 3; k++)
            for (int q = 0; q < 2; q++) {
                matrix_set_num_threads(q + 1);
                matrix_copy(&x, &x0);
                double a = now();
                if (k == 0) matrix_project_out(&x, &h, &w, 0, NULL, NULL, &sq);
                else if (k == 1) matrix_add_mat_mat(&gout, 1.0f, &x, MATRIX_NO_TRANS, &gw, MATRIX_TRANS, 0.0f);
                else { struct cpu_mat c = {gout.data, n, 1024, 1024};
                       onednn_gemm_split(c, 1.0f, ONEDNN_TYPE_BF16, a16, d, 0, b16, d, 1, d, 0.0f); }
                t[k][q][it] = now() - a;
            }
    const char *nm[3] = {"fused NG pass (fp32)", "sgemm N x D x 1024 (OpenBLAS fp32)", "bf16 N x D x 1024 (oneDNN AMX)"};
    for (int k = 0; k < 3; k++) {
        double m[2];
        for (int q = 0; q < 2; q++) { qsort(t[k][q], reps, sizeof(double), cmp); m[q] = t[k][q][reps / 2]; }
        printf("D=%d %-36s 1 thread %.3f ms, 2 threads %.3f ms: speed-up %.2f\n", d, nm[k], m[0] * 1e3, m[1] * 1e3, m[0] / m[1]);
    }
    matrix_release(&x0), matrix_release(&x), matrix_release(&h), matrix_release(&w);
    matrix_release(&gout), matrix_release(&gw), vector_release(&sq);
    free(a16), free(b16);
    for (int k = 0; k < 3; k++) for (int q = 0; q < 2; q++) free(t[k][q]);
    return 0;
}
