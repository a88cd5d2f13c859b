/* GEMM rates at the benchmark MLPs' layer shapes: OpenBLAS sgemm against oneDNN fp32 and oneDNN
 * bf16 (src/matrix/onednn.h), and the bound they set on a training step.
 *   gemm-rates shapes <threads> <seconds-per-figure> <mb,...> <d0,d1,...> [<d0,d1,...> ...]
 *       one line per distinct product (forward X W^T, input derivative dY W, weight gradient
 *       dY^T X of every layer): GFLOP/s of OpenBLAS, oneDNN fp32, oneDNN bf16 on operands already
 *       in bf16, and parnet's bf16 layer product (matrix_add_mat_mat_layer: the conversions of both
 *       operands to bf16 included), the engines measured in turn, round after round (3 rounds,
 *       median); then which engine is fastest for that product. GEMM_RATES_CPU_TIME=1 in the
 *       environment: rates per thread-second of process CPU time instead of wall clock.
 *   gemm-rates bound <openblas|dnnl-f32|dnnl-bf16|dnnl-bf16-update> <mb> <threads> <d0,d1,...>
 *                    [seconds]
 *       the three products of every layer of one step (the first layer's input derivative left
 *       out), as bench/sgemm-bound.c; prints "samples_per_sec=S gflops=G". bf16 operands are
 *       converted once, outside the timing: the bound of the engine, not of parnet.
 *       dnnl-bf16-update: the weight gradients added into C (beta 1, oneDNN's sum post-op), as
 *       the training step's direct update W += lr dY^T X runs them; also prints
 *       "plain_samples_per_sec=P", dnnl-bf16 timed in alternate steps of the same run.
 * Threads: parnet's pool, each thread one share of C (as the library splits its products:
 * cpu_gemm's split for OpenBLAS, onednn_gemm_split for oneDNN), every engine single-threaded
 * under it.
 * Built by bench/train-throughput.sh against lib/libparnet.a. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"
#include "matrix/cpu.h"
#include "matrix/onednn.h"
#include "matrix/matrix.h"

/* struct matrix -> the backends' view */
static struct cpu_mat cm(const struct matrix *m) {
    struct cpu_mat c = {m->data, m->rows, m->cols, m->stride};
    return c;
}

void openblas_set_num_threads(int n);

enum engine { E_OPENBLAS, E_DNNL_F32, E_DNNL_BF16, E_LAYER_BF16, E_NUM };
static const char *engine_names[] = {"openblas", "dnnl-f32", "dnnl-bf16", "layer-bf16"};

struct prod {
    int m, n, k, ta, tb;
    float *a, *b, *c;      /* fp32 operands: a stored (ta ? k x m : m x k), b (tb ? n x k : k x n) */
    uint16_t *a16, *b16;   /* the same in bf16 */
    int engine;
    float beta;            /* C = op(A) op(B) + beta C (oneDNN engines) */
};

static int lda_of(const struct prod *p) { return p->ta ? p->m : p->k; }
static int ldb_of(const struct prod *p) { return p->tb ? p->k : p->n; }

/* OpenBLAS: rows [lo, hi) of C (or columns when m < n), as cpu_gemm splits. */
static void prod_share(void *arg, int t, int num) {
    struct prod *p = arg;
    int by_rows = p->m >= p->n, lo, hi;
    parallel_part(by_rows ? p->m : p->n, t, num, 32, &lo, &hi);
    if (lo >= hi) return;
    int lda = lda_of(p), ldb = ldb_of(p);
    long aoff = by_rows ? (p->ta ? lo : (long)lo * lda) : 0;
    long boff = by_rows ? 0 : (p->tb ? (long)lo * ldb : lo);
    int m = by_rows ? hi - lo : p->m, n = by_rows ? p->n : hi - lo;
    float *c = p->c + (by_rows ? (long)lo * p->n : lo);
    cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans,
                m, n, p->k, 1.0f, p->a + aoff, lda, p->b + boff, ldb, 0.0f, c, p->n);
}

static void prod_run(struct prod *p) {
    if (p->engine == E_LAYER_BF16) {
        struct matrix a = matrix_wrap(p->a, p->ta ? p->k : p->m, p->ta ? p->m : p->k, lda_of(p),
                                      MATRIX_CPU);
        struct matrix b = matrix_wrap(p->b, p->tb ? p->n : p->k, p->tb ? p->k : p->n, ldb_of(p),
                                      MATRIX_CPU);
        struct matrix c = matrix_wrap(p->c, p->m, p->n, p->n, MATRIX_CPU);
        matrix_add_mat_mat_layer(&c, 1.0f, &a, p->ta, &b, p->tb, 0.0f);
        return;
    }
    if (p->engine == E_OPENBLAS) {
        parallel_run(prod_share, p);
        return;
    }
    struct cpu_mat c = {p->c, p->m, p->n, p->n}; /* oneDNN: split as onednn_gemm splits */
    if (p->engine == E_DNNL_F32)
        onednn_gemm_split(c, 1.0f, ONEDNN_TYPE_F32, p->a, lda_of(p), p->ta, p->b, ldb_of(p),
                          p->tb, p->k, p->beta);
    else
        onednn_gemm_split(c, 1.0f, ONEDNN_TYPE_BF16, p->a16, lda_of(p), p->ta, p->b16,
                          ldb_of(p), p->tb, p->k, p->beta);
}

static void prod_init(struct prod *p, int m, int n, int k, int ta, int tb) {
    p->m = m, p->n = n, p->k = k, p->ta = ta, p->tb = tb, p->beta = 0.0f;
    size_t na = (size_t)m * k, nb = (size_t)k * n;
    p->a = malloc(na * 4), p->b = malloc(nb * 4), p->c = calloc((size_t)m * n, 4);
    p->a16 = malloc(na * 2), p->b16 = malloc(nb * 2);
    for (size_t i = 0; i < na; i++) p->a[i] = 0.01f * (float)(i % 97) - 0.48f;
    for (size_t i = 0; i < nb; i++) p->b[i] = 0.01f * (float)(i % 89) - 0.44f;
    struct matrix a = matrix_wrap(p->a, 1, (int)na, (int)na, MATRIX_CPU);
    struct matrix b = matrix_wrap(p->b, 1, (int)nb, (int)nb, MATRIX_CPU);
    onednn_to_bf16(p->a16, (int)na, cm(&a));
    onednn_to_bf16(p->b16, (int)nb, cm(&b));
}

static void prod_free(struct prod *p) {
    free(p->a), free(p->b), free(p->c), free(p->a16), free(p->b16);
}

/* GFLOP/s of p on its engine over about `seconds` of wall clock (after one warm-up call); with
 * use_cpu, per `threads` seconds of process CPU time instead (on a shared machine closer to what
 * the product runs at alone). */
static int use_cpu, bench_threads = 1;
static double rate(struct prod *p, double seconds) {
    prod_run(p);
    long it = 0;
    double start = time_now(), cpu0 = (double)clock() / CLOCKS_PER_SEC, el;
    do {
        prod_run(p);
        it++;
    } while ((el = time_now() - start) < seconds);
    if (use_cpu) el = ((double)clock() / CLOCKS_PER_SEC - cpu0) / bench_threads;
    return 2.0 * p->m * p->n * p->k * it / el / 1e9;
}

static int parse_dims(char *s, int *d, int max) {
    int n = 0;
    for (char *t = strtok(s, ","); t && n < max; t = strtok(NULL, ",")) d[n++] = atoi(t);
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int shapes_main(int argc, char **argv) {
    int threads = atoi(argv[2]);
    double seconds = atof(argv[3]);
    int mbs[8], nmb = parse_dims(argv[4], mbs, 8);
    use_cpu = getenv("GEMM_RATES_CPU_TIME") != NULL;
    bench_threads = threads;
    matrix_set_num_threads(threads);
    /* Without AVX512-BF16 or AMX the bf16 engines are left out (n/a): fp32's choice remains. */
    int bf16 = matrix_bf16_supported() == 0;
    if (bf16 && matrix_set_precision("bf16")) die("%s", error_get());
    int n_engines = bf16 ? E_NUM : E_DNNL_BF16;
    int seen[256][5], nseen = 0;
    printf("| m x n x k (op) | OpenBLAS | oneDNN fp32 | oneDNN bf16 | parnet bf16 layer product | "
           "bf16/OpenBLAS | fastest |\n|---|---:|---:|---:|---:|---:|---|\n");
    for (int a = 5; a < argc; a++) {
        int d[64], nd = parse_dims(argv[a], d, 64);
        for (int mi = 0; mi < nmb; mi++)
            for (int l = 0; l + 1 < nd; l++) {
                int mb = mbs[mi], in = d[l], out = d[l + 1];
                int ops[3][5] = {{mb, out, in, 0, 1}, {mb, in, out, 0, 0}, {out, in, mb, 1, 0}};
                const char *opname[3] = {"X W^T", "dY W", "dY^T X"};
                for (int o = 0; o < 3; o++) {
                    if (o == 1 && l == 0) continue; /* no input derivative for the first layer */
                    int dup = 0;
                    for (int s = 0; s < nseen; s++)
                        dup |= !memcmp(seen[s], ops[o], sizeof seen[s]);
                    if (dup || nseen == 256) continue;
                    memcpy(seen[nseen++], ops[o], sizeof seen[0]);
                    struct prod p;
                    prod_init(&p, ops[o][0], ops[o][1], ops[o][2], ops[o][3], ops[o][4]);
                    double r[E_NUM][3], med[E_NUM] = {0};
                    for (int round = 0; round < 3; round++)
                        for (int e = 0; e < n_engines; e++) {
                            p.engine = e;
                            r[e][round] = rate(&p, seconds);
                        }
                    int best = 0;
                    for (int e = 0; e < n_engines; e++) {
                        qsort(r[e], 3, sizeof r[e][0], cmp_double);
                        med[e] = r[e][1];
                    }
                    for (int e = 1; e < n_engines; e++)
                        if (e != E_DNNL_BF16 && med[e] > med[best]) best = e;
                    char b16[3][32] = {"n/a", "n/a", "n/a"};
                    if (bf16) {
                        snprintf(b16[0], sizeof b16[0], "%.0f", med[E_DNNL_BF16]);
                        snprintf(b16[1], sizeof b16[1], "%.0f", med[E_LAYER_BF16]);
                        snprintf(b16[2], sizeof b16[2], "%.2f", med[E_LAYER_BF16] / med[E_OPENBLAS]);
                    }
                    printf("| %d x %d x %d (%s) | %.0f | %.0f | %s | %s | %s | %s |\n", p.m, p.n,
                           p.k, opname[o], med[0], med[1], b16[0], b16[1], b16[2],
                           engine_names[best]);
                    fflush(stdout);
                    prod_free(&p);
                }
            }
    }
    printf("\nGFLOP/s (%s), median of 3 rounds of %.1f s per figure, %d thread(s); fastest "
           "among OpenBLAS, oneDNN fp32 and the bf16 layer product (conversions included)\n",
           use_cpu ? "per thread-second of CPU time" : "wall clock", seconds, threads);
    return 0;
}

static int bound_main(int argc, char **argv) {
    const char *eng = argv[2];
    int mb = atoi(argv[3]), threads = atoi(argv[4]);
    int d[64], nd = parse_dims(argv[5], d, 64);
    double seconds = argc > 6 ? atof(argv[6]) : 2.0;
    int update = !strcmp(eng, "dnnl-bf16-update");
    int engine = !strcmp(eng, "openblas") ? E_OPENBLAS
                 : !strcmp(eng, "dnnl-f32") ? E_DNNL_F32
                 : !strcmp(eng, "dnnl-bf16") || update ? E_DNNL_BF16 : -1;
    if (engine < 0)
        die("unknown engine '%s': openblas, dnnl-f32, dnnl-bf16 or dnnl-bf16-update", eng);
    matrix_set_num_threads(threads);
    if (engine == E_DNNL_BF16 && matrix_bf16_supported()) die("%s", error_get());
    struct prod p[64][3];
    int np = 0;
    double flops = 0;
    for (int l = 0; l + 1 < nd; l++) {
        int in = d[l], out = d[l + 1];
        prod_init(&p[l][0], mb, out, in, 0, 1);
        if (l > 0) prod_init(&p[l][1], mb, in, out, 0, 0);
        prod_init(&p[l][2], out, in, mb, 1, 0);
        flops += (l > 0 ? 6.0 : 4.0) * mb * in * out;
        np = l + 1;
    }
    /* With update, steps alternate between the weight gradients added into C and written (beta
     * 0), each timed on its own: the two rates see the same drift of the machine's speed. */
    long steps = 0;
    double start = 0, cpu_start = 0, el_plain = 0;
    for (int it = 0;; it++) {
        if (it == 2) {
            start = time_now();
            cpu_start = (double)clock() / CLOCKS_PER_SEC;
        }
        for (int pass = 0; pass <= update; pass++) {
            double t0 = time_now();
            for (int l = 0; l < np; l++) {
                p[l][2].beta = update && pass == 0 ? 1.0f : 0.0f;
                for (int o = 0; o < 3; o++) {
                    if (o == 1 && l == 0) continue;
                    p[l][o].engine = engine;
                    prod_run(&p[l][o]);
                }
            }
            if (pass == 1 && it >= 2) el_plain += time_now() - t0;
        }
        if (it >= 2) steps++;
        if (it >= 2 && time_now() - start >= seconds) break;
    }
    double el = time_now() - start - el_plain;
    double cpu = (double)clock() / CLOCKS_PER_SEC - cpu_start;
    printf("samples_per_sec=%.1f gflops=%.1f cpu_samples_per_sec=%.1f", steps * (double)mb / el,
           steps * flops / el / 1e9, steps * (double)mb * threads / cpu * (update ? 2 : 1));
    if (update) printf(" plain_samples_per_sec=%.1f", steps * (double)mb / el_plain);
    printf("\n");
    for (int l = 0; l < np; l++)
        for (int o = 0; o < 3; o++)
            if (!(o == 1 && l == 0)) prod_free(&p[l][o]);
    return 0;
}

int main(int argc, char **argv) {
    openblas_set_num_threads(1);
    if (argc >= 6 && !strcmp(argv[1], "shapes")) return shapes_main(argc, argv);
    if (argc >= 6 && !strcmp(argv[1], "bound")) return bound_main(argc, argv);
    fprintf(stderr, "usage: gemm-rates shapes <threads> <seconds> <mb,...> <d0,d1,...> ...\n"
                    "       gemm-rates bound <openblas|dnnl-f32|dnnl-bf16|dnnl-bf16-update> <mb> "
                    "<threads> "
                    "<d0,d1,...> [seconds]\n");
    return 2;
}
