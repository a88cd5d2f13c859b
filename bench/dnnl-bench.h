/* What the oneDNN micro-benchmarks share (bench/bn-rate.c, bench/conv-bound.c, bench/pool-rate.c):
 * CHECK(call) exits 1 naming the failed call and oneDNN's status; bench_clock(clock) reads a clock
 * in seconds (CLOCK_MONOTONIC for wall time, CLOCK_PROCESS_CPUTIME_ID for CPU time); for the
 * single-primitive ones, their arguments, data and timing. A program defines BENCH_NAME (its name,
 * for the messages) and includes this before anything else. */
#ifndef PARNET_BENCH_DNNL_BENCH_H
#define PARNET_BENCH_DNNL_BENCH_H

#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        dnnl_status_t st_ = (call);                                                                \
        if (st_ != dnnl_success) {                                                                 \
            fprintf(stderr, "%s: %s: oneDNN status %d\n", BENCH_NAME, #call, (int)st_);            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline double bench_clock(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* "<images> <channels> <height=width> [reps]" (reps default 30) into n, c, h, reps, or the usage
 * and exit 2. */
static inline void bench_image_args(int argc, char **argv, int *n, int *c, int *h, int *reps) {
    if (argc >= 4) {
        *n = atoi(argv[1]), *c = atoi(argv[2]), *h = atoi(argv[3]);
        *reps = argc > 4 ? atoi(argv[4]) : 30;
        if (*n >= 1 && *c >= 1 && *h >= 1 && *reps >= 1) return;
    }
    fprintf(stderr, "usage: %s <images> <channels> <height=width> [reps] (each >= 1)\n"
                    "e.g.: OMP_NUM_THREADS=1 %s 128 32 28\n", BENCH_NAME, BENCH_NAME);
    exit(2);
}

/* m's data (fp32 or bf16, as its descriptor says) set to values in [-1, 1): no NaN, no
 * subnormal; bf16 holds the upper halves of such floats. */
static inline void bench_fill(dnnl_memory_t m) {
    const dnnl_memory_desc_t *d;
    void *p;
    CHECK(dnnl_memory_get_memory_desc(m, &d));
    CHECK(dnnl_memory_get_data_handle(m, &p));
    int bf16 = d->data_type == dnnl_bf16;
    size_t count = dnnl_memory_desc_get_size(d) / (bf16 ? 2 : 4);
    uint32_t state = 12345;
    for (size_t i = 0; i < count; i++) {
        state = state * 1664525u + 1013904223u;
        union { float f; uint32_t u; } v = {(float)(state >> 8) / (1 << 23) - 1.0f};
        if (bf16)
            ((uint16_t *)p)[i] = (uint16_t)(v.u >> 16);
        else
            ((float *)p)[i] = v.f;
    }
}

/* The fastest of reps runs of p, in seconds. */
static inline double bench_min_seconds(dnnl_primitive_t p, dnnl_stream_t st, int nargs,
                                       const dnnl_exec_arg_t *args, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = bench_clock(CLOCK_MONOTONIC);
        CHECK(dnnl_primitive_execute(p, st, nargs, args));
        CHECK(dnnl_stream_wait(st));
        t = bench_clock(CLOCK_MONOTONIC) - t;
        if (t < best) best = t;
    }
    return best;
}

#endif
