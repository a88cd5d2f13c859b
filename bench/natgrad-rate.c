/* The natural gradient's work for one NaturalGradientAffine layer against the layer's own GEMMs,
 * on random data held in memory, for issue 17's profile (docs/BENCHMARKS.md):
 *   natgrad-rate <N> <in-dim> <out-dim> <calls> [threads [rank-in rank-out [gemm]]]
 * runs `calls` minibatches (after 11 warm-up calls: the initialisation and the first updates) of
 * natgrad_precondition_copy on both sides ([X | 1] at rank-in, default 20; the output derivative
 * at rank-out, default 80; Kaldi's update period 4) and the layer's three GEMMs (forward, input
 * derivative, weight gradient) as many times, and prints the CPU time per minibatch of each and
 * their ratio (gemm 0: the NG part only). Built with a fixed call count it is what callgrind counts (--toggle-collect=
 * natgrad_precondition_copy for the NG part alone). Under callgrind with --instr-atstart=no
 * only the timed NG loop is counted; take calls = 3 mod 4 (e.g. 7: one update, at the 4th) so
 * that no update's deferred host part is left for natgrad_free. CPU time, not wall clock: on a shared
 * machine that is what the work costs. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/base.h"
#include "matrix/matrix.h"
#include "natgrad/natgrad.h"

/* Under `valgrind --tool=callgrind --instr-atstart=no` only the NG minibatches are counted. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: natgrad-rate <N> <in-dim> <out-dim> <calls> [threads [rank-in rank-out [gemm]]]\n");
        return 2;
    }
    int n = atoi(argv[1]), din = atoi(argv[2]), dout = atoi(argv[3]), calls = atoi(argv[4]);
    int threads = argc > 5 ? atoi(argv[5]) : 1;
    int rin = argc > 6 ? atoi(argv[6]) : 20, rout = argc > 7 ? atoi(argv[7]) : 80;
    int gemm_calls = argc > 8 && atoi(argv[8]) == 0 ? 0 : calls;
    matrix_set_num_threads(threads);
    struct natgrad_options o;
    natgrad_options_default(&o);
    o.rank = din + 1 < 2 * rin ? (din + 1) / 2 : rin; /* nnet3: min(20, (D+1)/2), as ng_init */
    struct natgrad *pin = natgrad_new(din + 1, &o, 1);
    o.rank = dout + 1 < 2 * rout ? (dout + 1) / 2 : rout;
    struct natgrad *pout = natgrad_new(dout, &o, 2);
    struct rng r;
    rng_seed(&r, 1);
    enum { B = 4 };
    struct matrix in[B], deriv[B], x, y, wt, out, in_deriv, dw;
    for (int b = 0; b < B; b++) {
        matrix_init(&in[b], n, din);
        matrix_set_randn(&in[b], &r, 1.0f);
        matrix_init(&deriv[b], n, dout);
        matrix_set_randn(&deriv[b], &r, 0.1f);
    }
    matrix_init(&x, n, din + 1);
    matrix_init(&y, n, dout);
    matrix_init(&wt, dout, din);
    matrix_set_randn(&wt, &r, 0.03f);
    matrix_init(&out, n, dout);
    matrix_init(&in_deriv, n, din);
    matrix_init(&dw, dout, din);
    struct vector xn, yn;
    vector_init(&xn, n);
    vector_init(&yn, n);
    float s;
    for (int i = 0; i < 11; i++) {
        natgrad_precondition_copy(pin, &in[i % B], &x, &s, &xn);
        natgrad_precondition_copy(pout, &deriv[i % B], &y, &s, &yn);
    }
    double t0 = cpu_now();
    CALLGRIND_START_INSTRUMENTATION;
    for (int i = 0; i < calls; i++) {
        natgrad_precondition_copy(pin, &in[i % B], &x, &s, &xn);
        natgrad_precondition_copy(pout, &deriv[i % B], &y, &s, &yn);
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    double t1 = cpu_now();
    for (int i = 0; i < gemm_calls; i++) {
        matrix_add_mat_mat(&out, 1.0f, &in[i % B], MATRIX_NO_TRANS, &wt, MATRIX_TRANS, 0.0f);
        matrix_add_mat_mat(&in_deriv, 1.0f, &deriv[i % B], MATRIX_NO_TRANS, &wt, MATRIX_NO_TRANS, 0.0f);
        matrix_add_mat_mat(&dw, 1.0f, &deriv[i % B], MATRIX_TRANS, &in[i % B], MATRIX_NO_TRANS, 0.0f);
    }
    double t2 = cpu_now();
    double ng = (t1 - t0) / calls, gemm = gemm_calls ? (t2 - t1) / gemm_calls : 0;
    printf("N=%d in=%d out=%d threads=%d ng_cpu_ms=%.4f gemm_cpu_ms=%.4f ng_over_gemm=%.4f\n", n,
           din, dout, threads, 1e3 * ng, 1e3 * gemm, gemm > 0 ? ng / gemm : 0.0);
    natgrad_free(pin);
    natgrad_free(pout);
    return 0;
}
