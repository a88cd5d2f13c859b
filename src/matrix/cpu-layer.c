/* cpu: the layer products' engine, chosen here and nowhere else (cpu.h cpu_layer_gemm), by a
 * table of rules on the shape and the CPU: bf16 on oneDNN where the shape gains, oneDNN's fp32
 * kernels where they are faster, else OpenBLAS. */
#include <limits.h>
#include <pthread.h>

#include "matrix/cpu-internal.h"
#include "matrix/matrix.h"
#include "matrix/onednn.h"

#ifndef HAVE_DNNL
#define HAVE_DNNL 0
#endif

static int layer_bf16; /* --precision=bf16 (matrix_set_precision) */

void cpu_set_layer_bf16(int on) { layer_bf16 = on; }
int cpu_layer_bf16(void) { return layer_bf16; }

/* The engines a layer product can run on. */
enum layer_engine { ENGINE_OPENBLAS, ENGINE_ONEDNN_F32, ENGINE_ONEDNN_BF16 };

/* What decides an engine: the product's shape (c is m x n, k the inner dimension) and, once per
 * process, the precision and what each library can use on this CPU. */
struct engine_case {
    int m, n, k;
    int bf16;         /* --precision=bf16 */
    int onednn_avx512; /* oneDNN's fp32 kernels use AVX-512 here */
    int have_onednn;  /* built with oneDNN */
};

/* bf16 pays where the output is wide enough for the engines' tiles and the sums long enough to
 * pay for the conversions (MATRIX_BF16_MIN_SIDE, MATRIX_BF16_MIN_INNER). */
static int bf16_shape(const struct engine_case *e) {
    return e->bf16 && e->m >= MATRIX_BF16_MIN_SIDE && e->n >= MATRIX_BF16_MIN_SIDE &&
           e->k >= MATRIX_BF16_MIN_INNER;
}
/* Thin in its rows or its sums (the 10-class layer's input derivative, k = 10, and weight
 * gradient, m = 10): oneDNN fp32 1.3-2.5x OpenBLAS on every CPU measured; thin in its columns
 * (that layer's forward, n = 10) OpenBLAS was faster on both EPYCs. */
static int thin_rows_or_sums(const struct engine_case *e) {
    int lo = e->m < e->n ? e->m : e->n;
    if (e->k < lo) lo = e->k;
    return e->have_onednn && lo >= MATRIX_F32_THIN_MIN && lo < MATRIX_BF16_MIN_SIDE && e->n > lo;
}
/* Wide fp32 products: oneDNN 1.05-1.2x OpenBLAS (per CPU-second) wherever oneDNN runs AVX-512
 * (AVX-512 EPYC, 1 and 2 threads, OpenBLAS on its SkylakeX or Haswell kernel; the AMX Xeon); a
 * tie within 6% where it runs AVX2, left to OpenBLAS. */
static int wide_on_avx512(const struct engine_case *e) {
    int lo = e->m < e->n ? e->m : e->n;
    if (e->k < lo) lo = e->k;
    return e->have_onednn && e->onednn_avx512 && lo >= MATRIX_BF16_MIN_SIDE;
}

/* The rules, first match wins (bench/gemm-rates.c shapes; docs/BENCHMARKS.md "Matrix products:
 * which engine at which shape"). A rule is a fact about the CPU and the shape, never a timing
 * taken at run time: the same CPU and options give the same engines, so the same bits. */
static const struct engine_rule {
    int (*applies)(const struct engine_case *e);
    enum layer_engine engine;
} engine_rules[] = {
    {bf16_shape, ENGINE_ONEDNN_BF16},
    {thin_rows_or_sums, ENGINE_ONEDNN_F32},
    {wide_on_avx512, ENGINE_ONEDNN_F32},
};

static int onednn_avx512; /* set once: cpu_layer_engines_init */

static void cpu_layer_engines_init(void) { onednn_avx512 = onednn_has_avx512(); }

static int onednn_avx512_here(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cpu_layer_engines_init);
    return onednn_avx512;
}

static enum layer_engine engine_for(int m, int n, int k) {
    struct engine_case e = {m, n, k, layer_bf16, onednn_avx512_here(), HAVE_DNNL};
    for (size_t i = 0; i < sizeof engine_rules / sizeof *engine_rules; i++)
        if (engine_rules[i].applies(&e)) return engine_rules[i].engine;
    return ENGINE_OPENBLAS;
}

/* The kept bf16 copies of a product's operands a and b, by its role (onednn.h). */
static const int keeps[][2] = {
    [CPU_LAYER_PLAIN] = {ONEDNN_SCRATCH, ONEDNN_SCRATCH},
    [CPU_LAYER_FORWARD] = {ONEDNN_STORE, ONEDNN_STORE},
    [CPU_LAYER_BACKPROP] = {ONEDNN_STORE_SUMS, ONEDNN_REUSE},
    [CPU_LAYER_WEIGHT_GRAD] = {ONEDNN_REUSE, ONEDNN_REUSE},
};

/* The product of a role with an epilogue (onednn.h; NULL: none) on the engine the rules pick:
 * OpenBLAS has none, so the epilogue's ReLU is a pass after it there (its bias: the caller's). */
static void layer_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a,
                       struct cpu_mat b, int trans_b, float beta, int role,
                       const struct onednn_epilogue *ep) {
    int m = c.rows, n = c.cols, k = trans_a ? a.rows : a.cols;
    if (layer_bf16 && m > 0 && n > 0) {
        onednn_forget(c);
        if (role == CPU_LAYER_BACKPROP || role == CPU_LAYER_WEIGHT_GRAD) onednn_layer_backward();
    }
    switch (engine_for(m, n, k)) {
    case ENGINE_ONEDNN_BF16:
        onednn_gemm(c, alpha, a, trans_a, keeps[role][0], b, trans_b, keeps[role][1], ep, beta);
        break;
    case ENGINE_ONEDNN_F32: onednn_gemm_f32(c, alpha, a, trans_a, b, trans_b, ep, beta); break;
    case ENGINE_OPENBLAS:
        ASSERT(!ep || !ep->bias);
        cpu_gemm(c, alpha, a, trans_a, b, trans_b, beta);
        if (ep && ep->relu) cpu_nonlin(CPU_RELU, c, c);
        break;
    }
}

void cpu_layer_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, struct cpu_mat b,
                    int trans_b, float beta, int role) {
    layer_gemm(c, alpha, a, trans_a, b, trans_b, beta, role, NULL);
}

/* Natural gradient's thin products (H = X W^T, J = H^T X: one side the rank, 8-80), in fp32
 * always: on oneDNN where it runs AVX-512 (AVX-512 EPYC, 1 thread: H 1.5-2.1x and J 1.9-2.3x
 * OpenBLAS in the same fixed parts, ranks 20 and 80; docs/BENCHMARKS.md "Natural gradient's
 * products"), else on OpenBLAS (on an AVX2 EPYC its thin-column product ran 2.2x oneDNN's). */
void cpu_project_gemm(struct cpu_mat c, struct cpu_mat a, int trans_a, struct cpu_mat b,
                      int trans_b, int part) {
    int k = trans_a ? a.rows : a.cols;
    if (HAVE_DNNL && onednn_avx512_here() && c.rows > 0 && c.cols > 0 && k > 0)
        onednn_gemm_parts_f32(c, 1, a, trans_a, b, trans_b, 0, part);
    else
        cpu_gemm_parts(c, 1, a, trans_a, b, trans_b, 0, part);
}

void cpu_project_h(struct cpu_mat h, struct cpu_mat x0, struct cpu_mat w) {
    struct cpu_mat w_read = {w.data, w.rows, x0.cols, w.stride};
    cpu_project_gemm(h, x0, MATRIX_NO_TRANS, w_read, MATRIX_TRANS, 64);
    if (x0.cols < w.cols) /* x0's implicit last column of ones: h += 1 w[:, D-1]^T */
        for (int i = 0; i < h.rows; i++)
            for (int r = 0; r < h.cols; r++)
                h.data[(long)i * h.stride + r] += w.data[(long)r * w.stride + x0.cols];
}

int cpu_layer_project_bf16(int n, int r, int d) {
    return layer_bf16 && n > 0 && engine_for(n, r, d) == ENGINE_ONEDNN_BF16;
}

void cpu_layer_project_h(struct cpu_mat h, struct cpu_mat x0, int x0_kept, struct cpu_mat w) {
    onednn_gemm(h, 1, x0, MATRIX_NO_TRANS, x0_kept ? ONEDNN_REUSE : ONEDNN_SCRATCH, w,
                MATRIX_TRANS, ONEDNN_SCRATCH, NULL, 0);
}

/* The sum of r terms is short (r < MATRIX_BF16_MIN_INNER), but its operands h and w are thin, so
 * their conversions are cheap against the product's N d r: 2-3 points of natural gradient's cost
 * in bf16 on the 784 MLP (mb 512, AVX-512 EPYC) over fp32 with the norms fused into the pass. */
void cpu_layer_project_residual(struct cpu_mat x, struct cpu_mat h, struct cpu_mat w, float *in_sq,
                                float *out_sq) {
    if (in_sq) cpu_row_sq_norms(in_sq, x);
    onednn_gemm(x, -1, h, MATRIX_NO_TRANS, ONEDNN_SCRATCH, w, MATRIX_NO_TRANS, ONEDNN_SCRATCH, NULL,
                1);
    if (out_sq) cpu_row_sq_norms(out_sq, x);
}

void cpu_layer_project_residual_from(struct cpu_mat x, struct cpu_mat x0, struct cpu_mat h,
                                     struct cpu_mat w, float *in_sq, float *out_sq) {
    onednn_gemm(x, -1, h, MATRIX_NO_TRANS, ONEDNN_SCRATCH, w, MATRIX_NO_TRANS, ONEDNN_SCRATCH, NULL,
                0);
    cpu_add_rows_sq(x, x0, in_sq, out_sq);
}

int cpu_layer_kept_sum_sq(struct cpu_mat m, double *sum_sq) {
    return layer_bf16 && m.rows > 0 && m.cols > 0 && onednn_kept_sum_sq(m, sum_sq);
}

/* A weight gradient's operand (out_deriv or in) is bf16 only where it is this wide and long. */
static int weight_grad_operand_bf16(struct cpu_mat m) {
    return layer_bf16 && m.cols >= MATRIX_BF16_MIN_SIDE && m.rows >= MATRIX_BF16_MIN_INNER;
}

int cpu_layer_step_sum_sq(struct cpu_mat m, double *sum_sq) {
    if (!layer_bf16 || m.rows < 1 || m.cols < 1) return 0;
    if (!onednn_kept_sum_sq(m, sum_sq) && weight_grad_operand_bf16(m))
        onednn_keep(m, ONEDNN_STORE_SUMS);
    return onednn_kept_sum_sq(m, sum_sq);
}

int cpu_layer_add_row_sums(float *v, float alpha, struct cpu_mat m, float beta) {
    const double *sums = layer_bf16 && m.rows > 0 && m.cols > 0 ? onednn_kept_row_sums(m) : NULL;
    if (!sums) return 0;
    for (int c = 0; c < m.cols; c++) /* as cpu_add_row_sums writes them */
        v[c] = (float)(alpha * sums[c] + (beta == 0.0f ? 0.0 : (double)beta * v[c]));
    return 1;
}

void cpu_layer_new_storage(const float *p, size_t n) {
    if (!layer_bf16 || !n) return;
    int len = n < INT_MAX ? (int)n : INT_MAX;
    struct cpu_mat m = {(float *)p, 1, len, len};
    onednn_forget(m);
}

void cpu_layer_affine(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *bias,
                      int relu) {
    if (layer_bf16) onednn_layer_forward();
    if (engine_for(in.rows, w.rows, in.cols) == ENGINE_ONEDNN_BF16) { /* the bias added by the product as it writes */
        struct onednn_epilogue ep = {bias, relu};
        layer_gemm(out, 1, in, MATRIX_NO_TRANS, w, MATRIX_TRANS, 0, CPU_LAYER_FORWARD, &ep);
        return;
    }
    cpu_set_rows(out, bias); /* then beta 1: one pass fewer than a product and a bias pass */
    struct onednn_epilogue ep = {NULL, relu};
    layer_gemm(out, 1, in, MATRIX_NO_TRANS, w, MATRIX_TRANS, 1, CPU_LAYER_FORWARD, &ep);
}
