/* oneDNN's max-pooling forward alone, 2x2 windows, stride 2, on one thread: with the workspace
 * the backward needs (forward_training, what training runs) and without (forward_inference), in
 * fp32 and bf16 (docs/BENCHMARKS.md, the CNN section):
 *   pool-rate <images> <channels> <height=width> [reps]
 * prints the minimum milliseconds per call over reps (default 30) and the input's bytes per second
 * at the minimum, for the channels-last layout parnet uses.
 * Build: cc -O2 bench/pool-rate.c -ldnnl -o pool-rate (OMP_NUM_THREADS=1 for one thread) */
#define BENCH_NAME "pool-rate"
#include "dnnl-bench.h"

/* Minimum seconds per forward call; *bytes = the input's size. */
static double forward_time(dnnl_engine_t eng, dnnl_stream_t st, int n, int c, int h,
                           dnnl_data_type_t type, int train, int reps, size_t *bytes) {
    dnnl_dims_t src_dims = {n, c, h, h}, dst_dims = {n, c, h / 2, h / 2};
    dnnl_dims_t window = {2, 2}, strides = {2, 2}, dilation = {0, 0}, pad = {0, 0};
    dnnl_memory_desc_t src_md, dst_md;
    CHECK(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, type, dnnl_nhwc));
    CHECK(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, type, dnnl_nhwc));
    dnnl_pooling_v2_desc_t desc;
    CHECK(dnnl_pooling_v2_forward_desc_init(
        &desc, train ? dnnl_forward_training : dnnl_forward_inference, dnnl_pooling_max, &src_md,
        &dst_md, strides, window, dilation, pad, pad));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &desc, NULL, eng, NULL));
    dnnl_primitive_t prim;
    CHECK(dnnl_primitive_create(&prim, pd));
    dnnl_memory_t src, dst, ws = NULL;
    CHECK(dnnl_memory_create(&src, &src_md, eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&dst, &dst_md, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    int num_args = 2;
    const dnnl_memory_desc_t *ws_md = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    if (ws_md && ws_md->ndims) {
        CHECK(dnnl_memory_create(&ws, ws_md, eng, DNNL_MEMORY_ALLOCATE));
        args[num_args++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, ws};
    }
    bench_fill(src);
    *bytes = dnnl_memory_desc_get_size(&src_md);
    double best = bench_min_seconds(prim, st, num_args, args, reps);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_destroy(src);
    dnnl_memory_destroy(dst);
    if (ws) dnnl_memory_destroy(ws);
    return best;
}

int main(int argc, char **argv) {
    int n, c, h, reps;
    bench_image_args(argc, argv, &n, &c, &h, &reps);
    if (h < 2 || h % 2) {
        fprintf(stderr, "pool-rate: the height must be even (2 x 2 windows, stride 2)\n");
        return 2;
    }
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
    for (int bf16 = 0; bf16 <= 1; bf16++)
        for (int train = 1; train >= 0; train--) {
            size_t bytes;
            double t = forward_time(eng, st, n, c, h, bf16 ? dnnl_bf16 : dnnl_f32, train, reps,
                                    &bytes);
            printf("%dx%dx%dx%d %s %-9s %.3f ms (%.1f GB/s of input)\n", n, h, h, c,
                   bf16 ? "bf16" : "fp32", train ? "training" : "inference", 1e3 * t,
                   bytes / t * 1e-9);
        }
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
