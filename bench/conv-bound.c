/* The oneDNN bound of a CNN's convolutions: the three convolution passes of one training step
 * (forward, input derivative, weight gradient; the first layer's input derivative left out, as a
 * trainer skips it), each primitive in the layouts oneDNN prefers (format "any": blocked images
 * and filters), operands created once, outside the timing. No reorders, pooling, activations or
 * update: what oneDNN's convolutions alone allow, the bound bench/cnn-throughput.sh compares
 * parnet's training rate with.
 *   conv-bound <mb> <seconds> <f32|bf16> <layer> [<layer> ...]
 *       layer = "H,W,C,F,KH,KW,PAD" (an image H x W x C, F filters KH x KW, stride 1, PAD zeros
 *       on every side); threads: OMP_NUM_THREADS (oneDNN's own OpenMP pool).
 * Prints "samples_per_sec=S cpu_samples_per_sec=C gflops=G" (C: per OMP_NUM_THREADS seconds of
 * process CPU time). Built by bench/cnn-throughput.sh. */
#define BENCH_NAME "conv-bound"
#include "dnnl-bench.h"

enum { MAX_LAYERS = 8, MAX_PASSES = 3 * MAX_LAYERS };

struct pass {
    dnnl_primitive_t prim;
    int nargs;
    dnnl_exec_arg_t args[5];
};

static dnnl_engine_t engine;

static dnnl_memory_t memory(const dnnl_primitive_desc_t pd, dnnl_query_t what) {
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, dnnl_primitive_desc_query_md(pd, what, 0), engine,
                             DNNL_MEMORY_ALLOCATE));
    return m;
}

/* The passes of one layer appended to p; returns how many. */
static int layer_passes(struct pass *p, int mb, dnnl_data_type_t dt, int first, const int g[7]) {
    int h = g[0], w = g[1], c = g[2], f = g[3], kh = g[4], kw = g[5], pad = g[6];
    int oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kw + 1;
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_dims_t sd = {mb, c, h, w}, wd = {f, c, kh, kw}, bd = {f}, dd = {mb, f, oh, ow};
    CHECK(dnnl_memory_desc_init_by_tag(&src, 4, sd, dt, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&wei, 4, wd, dt, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a));
    CHECK(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dt, dnnl_format_tag_any));
    dnnl_dims_t strides = {1, 1}, padding = {pad, pad};
    dnnl_convolution_desc_t fd, bdd, bwd;
    dnnl_primitive_desc_t fpd, dpd, wpd;
    CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct,
                                             &src, &wei, &bias, &dst, strides, padding, padding));
    CHECK(dnnl_primitive_desc_create(&fpd, &fd, NULL, engine, NULL));
    CHECK(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &src, &wei,
                                                      &bias, &dst, strides, padding, padding));
    CHECK(dnnl_primitive_desc_create(&wpd, &bwd, NULL, engine, fpd));
    int n = 0;
    dnnl_memory_t x = memory(fpd, dnnl_query_src_md), y = memory(fpd, dnnl_query_dst_md);
    p[n].nargs = 4;
    p[n].args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, x};
    p[n].args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, memory(fpd, dnnl_query_weights_md)};
    p[n].args[2] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, NULL};
    CHECK(dnnl_memory_create(&p[n].args[2].memory, &bias, engine, DNNL_MEMORY_ALLOCATE));
    p[n].args[3] = (dnnl_exec_arg_t){DNNL_ARG_DST, y};
    CHECK(dnnl_primitive_create(&p[n++].prim, fpd));
    p[n].nargs = 4;
    p[n].args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, memory(wpd, dnnl_query_src_md)};
    p[n].args[1] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, memory(wpd, dnnl_query_diff_dst_md)};
    p[n].args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, memory(wpd, dnnl_query_diff_weights_md)};
    p[n].args[3] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, NULL};
    CHECK(dnnl_memory_create(&p[n].args[3].memory, &bias, engine, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_primitive_create(&p[n++].prim, wpd));
    if (!first) {
        CHECK(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &src, &wei,
                                                       &dst, strides, padding, padding));
        CHECK(dnnl_primitive_desc_create(&dpd, &bdd, NULL, engine, fpd));
        p[n].nargs = 3;
        p[n].args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, memory(dpd, dnnl_query_diff_dst_md)};
        p[n].args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, memory(dpd, dnnl_query_weights_md)};
        p[n].args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, memory(dpd, dnnl_query_diff_src_md)};
        CHECK(dnnl_primitive_create(&p[n++].prim, dpd));
    }
    return n;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc - 4 > MAX_LAYERS) {
        fprintf(stderr, "usage: conv-bound <mb> <seconds> <f32|bf16> H,W,C,F,KH,KW,PAD ...\n");
        return 2;
    }
    int mb = atoi(argv[1]);
    double seconds = atof(argv[2]), flops = 0;
    dnnl_data_type_t dt = argv[3][0] == 'b' ? dnnl_bf16 : dnnl_f32;
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    dnnl_stream_t stream;
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    struct pass p[MAX_PASSES];
    int np = 0;
    for (int l = 0; l < argc - 4; l++) {
        int g[7];
        if (sscanf(argv[4 + l], "%d,%d,%d,%d,%d,%d,%d", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5],
                   &g[6]) != 7) {
            fprintf(stderr, "conv-bound: bad layer '%s' (expected H,W,C,F,KH,KW,PAD)\n",
                    argv[4 + l]);
            return 2;
        }
        int before = np;
        np += layer_passes(p + np, mb, dt, l == 0, g);
        double oh = g[0] + 2 * g[6] - g[4] + 1, ow = g[1] + 2 * g[6] - g[5] + 1;
        flops += (np - before) * 2.0 * mb * oh * ow * g[3] * g[2] * g[4] * g[5];
    }
    int steps = 0;
    double t0, t;
    for (int warm = 0; warm < 3; warm++)
        for (int i = 0; i < np; i++) CHECK(dnnl_primitive_execute(p[i].prim, stream, p[i].nargs,
                                                                  p[i].args));
    CHECK(dnnl_stream_wait(stream));
    t0 = bench_clock(CLOCK_MONOTONIC);
    double cpu0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
    do {
        for (int i = 0; i < np; i++)
            CHECK(dnnl_primitive_execute(p[i].prim, stream, p[i].nargs, p[i].args));
        CHECK(dnnl_stream_wait(stream));
        steps++;
        t = bench_clock(CLOCK_MONOTONIC) - t0;
    } while (t < seconds);
    double cpu = bench_clock(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    const char *omp = getenv("OMP_NUM_THREADS");
    int threads = omp ? atoi(omp) : 1;
    /* cpu_samples_per_sec: per `threads` seconds of the process's CPU time (it overcounts the
     * work of runs whose idle OpenMP threads spin: a lower bound on the rate alone) */
    printf("samples_per_sec=%.1f cpu_samples_per_sec=%.1f gflops=%.2f\n", steps * mb / t,
           steps * mb * (threads > 0 ? threads : 1) / cpu, steps * flops / t * 1e-9);
    return 0;
}
