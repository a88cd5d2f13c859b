/* oneDNN's batch normalisation alone (training: forward with batch statistics, backward data), on
 * one thread, for images in rows as parnet keeps them (channels last), in fp32 and bf16, with the
 * data described two ways: 4-D nhwc (what parnet passes) and 2-D nc ((images x positions) x
 * channels, the same bytes) (docs/BENCHMARKS.md, the CNN section):
 *   bn-rate <images> <channels> <height=width> [reps]
 * prints the minimum milliseconds per call of each pass over reps (default 30) and oneDNN's
 * implementation.
 * Build: cc -O2 bench/bn-rate.c -ldnnl -o bn-rate (OMP_NUM_THREADS=1 for one thread) */
#define BENCH_NAME "bn-rate"
#include "dnnl-bench.h"

static void measure(dnnl_engine_t eng, dnnl_stream_t st, int n, int c, int h, int bf16, int nc,
                    int reps) {
    dnnl_data_type_t dt = bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_memory_desc_t d, s;
    if (nc) {
        dnnl_dims_t dims = {(dnnl_dim_t)n * h * h, c};
        CHECK(dnnl_memory_desc_init_by_tag(&d, 2, dims, dt, dnnl_nc));
    } else {
        dnnl_dims_t dims = {n, c, h, h};
        CHECK(dnnl_memory_desc_init_by_tag(&d, 4, dims, dt, dnnl_nhwc));
    }
    dnnl_dims_t sd = {c};
    CHECK(dnnl_memory_desc_init_by_tag(&s, 1, sd, dnnl_f32, dnnl_a));
    dnnl_batch_normalization_desc_t fd, bd;
    CHECK(dnnl_batch_normalization_forward_desc_init(&fd, dnnl_forward_training, &d, 1e-5f,
                                                     dnnl_normalization_flags_none));
    CHECK(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward_data, &d, &d, 1e-5f,
                                                      dnnl_normalization_flags_none));
    dnnl_primitive_desc_t fpd, bpd;
    CHECK(dnnl_primitive_desc_create(&fpd, &fd, NULL, eng, NULL));
    CHECK(dnnl_primitive_desc_create(&bpd, &bd, NULL, eng, fpd));
    dnnl_primitive_t fp, bp;
    CHECK(dnnl_primitive_create(&fp, fpd));
    CHECK(dnnl_primitive_create(&bp, bpd));
    const char *impl;
    CHECK(dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, &impl));
    dnnl_memory_t x, y, dy, dx, mean, var;
    dnnl_memory_t *data[] = {&x, &y, &dy, &dx};
    for (int i = 0; i < 4; i++) CHECK(dnnl_memory_create(data[i], &d, eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&mean, &s, eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&var, &s, eng, DNNL_MEMORY_ALLOCATE));
    bench_fill(x);
    bench_fill(dy);
    dnnl_exec_arg_t fa[] = {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}, {DNNL_ARG_MEAN, mean},
                            {DNNL_ARG_VARIANCE, var}};
    dnnl_exec_arg_t ba[] = {{DNNL_ARG_SRC, x}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var},
                            {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, dx}};
    double tf = bench_min_seconds(fp, st, 4, fa, reps), tb = bench_min_seconds(bp, st, 5, ba, reps);
    printf("%dx%dx%dx%d %s %-4s forward %.3f ms, backward %.3f ms (%s)\n", n, h, h, c,
           bf16 ? "bf16" : "fp32", nc ? "nc" : "nhwc", 1e3 * tf, 1e3 * tb, impl);
    dnnl_primitive_destroy(fp);
    dnnl_primitive_destroy(bp);
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
    for (int i = 0; i < 4; i++) dnnl_memory_destroy(*data[i]);
    dnnl_memory_destroy(mean);
    dnnl_memory_destroy(var);
}

int main(int argc, char **argv) {
    int n, c, h, reps;
    bench_image_args(argc, argv, &n, &c, &h, &reps);
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    for (int bf16 = 0; bf16 <= 1; bf16++)
        for (int nc = 0; nc <= 1; nc++) measure(eng, st, n, c, h, bf16, nc, nc ? 2 : reps);
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
