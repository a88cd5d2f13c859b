/* matrix: the precision of the layer products (--precision=fp32|bf16), the option group that sets
 * it with the threads and the device, and the layer products' dispatch lines (their engine on the
 * CPU is chosen by cpu_layer_gemm, cpu-layer.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/onednn.h"
#include "matrix/matrix-internal.h"

int matrix_get_precision(void) { return cpu_layer_bf16() ? MATRIX_BF16 : MATRIX_FP32; }

int matrix_bf16_supported(void) {
    char isa[64];
    return onednn_bf16_check(isa, sizeof isa);
}

int matrix_set_precision(const char *name) {
    ASSERT(name);
    if (!strcmp(name, "fp32")) {
        cpu_set_layer_bf16(0);
        return 0;
    }
    if (strcmp(name, "bf16"))
        return error_set("--precision: expected fp32 or bf16, got '%s'", name);
    char isa[64], why[512];
    if (onednn_bf16_check(isa, sizeof isa)) {
        snprintf(why, sizeof why, "%s", error_get()); /* error_set would overwrite it */
        return error_set("--precision=bf16 cannot run here: %s; use --precision=fp32", why);
    }
    if (matrix_default_device != MATRIX_CPU)
        return error_set("--precision=bf16 runs on the CPU (oneDNN); with --use-gpu use "
                         "--precision=fp32");
    cpu_set_layer_bf16(1);
    static int said;
    if (!said++)
        LOG("--precision=bf16: layer products in bf16 with fp32 accumulation on oneDNN (%s); "
            "natural gradient's projections too where they gain; parameters, updates and "
            "natural-gradient statistics stay fp32", isa);
    return 0;
}

int matrix_cli_apply(const struct matrix_cli *mc) {
    if (mc->num_threads < 1) return error_set("--num-threads=%d: must be at least 1", mc->num_threads);
    matrix_set_num_threads(mc->num_threads);
    if (matrix_select_device(mc->use_gpu)) return -1;
    return matrix_set_precision(mc->precision);
}

/* -1 on the lowest-numbered process that failed, 1 on the others, 0 if none did. */
static int agree(int failed, int rank, int (*all_min)(void *, int), void *ctx) {
    int first = all_min(ctx, failed ? rank : INT32_MAX);
    return first == INT32_MAX ? 0 : first == rank ? -1 : 1;
}

int matrix_cli_apply_ranks(const struct matrix_cli *mc, int rank, int local_rank,
                           int (*all_min)(void *ctx, int x), void *ctx) {
    int failed = mc->num_threads < 1;
    if (failed) error_set("--num-threads=%d: must be at least 1", mc->num_threads);
    else matrix_set_num_threads(mc->num_threads);
    if (!failed) failed = matrix_select_device_rank(mc->use_gpu, local_rank) != 0;
    int rc = agree(failed, rank, all_min, ctx);
    if (rc) return rc;
    int on_gpu = matrix_default_device == MATRIX_GPU;
    if (on_gpu && !all_min(ctx, on_gpu)) { /* only with "optional": some process got no GPU */
        WARN("rank %d: --use-gpu=%s: another rank has no GPU; every rank runs on the CPU", rank,
             mc->use_gpu);
        matrix_default_device = MATRIX_CPU;
    }
    return agree(matrix_set_precision(mc->precision) != 0, rank, all_min, ctx);
}

void matrix_add_mat_mat_layer(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                              const struct matrix *b, int trans_b, float beta) {
    matrix_check_product(c, a, trans_a, b, trans_b);
    DISPATCH(GPU3(c, a, b), cuda_gemm(CM(c), alpha, CM(a), trans_a, CM(b), trans_b, beta),
             cpu_layer_gemm(KM(c), alpha, KM(a), trans_a, KM(b), trans_b, beta, CPU_LAYER_PLAIN));
}

void matrix_layer_backprop(struct matrix *in_deriv, const struct matrix *out_deriv,
                           const struct matrix *w) {
    matrix_check_product(in_deriv, out_deriv, MATRIX_NO_TRANS, w, MATRIX_NO_TRANS);
    DISPATCH(GPU3(in_deriv, out_deriv, w),
             cuda_gemm(CM(in_deriv), 1, CM(out_deriv), MATRIX_NO_TRANS, CM(w), MATRIX_NO_TRANS, 0),
             cpu_layer_gemm(KM(in_deriv), 1, KM(out_deriv), MATRIX_NO_TRANS, KM(w),
                            MATRIX_NO_TRANS, 0, CPU_LAYER_BACKPROP));
}

void matrix_layer_weight_grad(struct matrix *dw, float alpha, const struct matrix *out_deriv,
                              const struct matrix *in, float beta) {
    matrix_check_product(dw, out_deriv, MATRIX_TRANS, in, MATRIX_NO_TRANS);
    DISPATCH(GPU3(dw, out_deriv, in),
             cuda_gemm(CM(dw), alpha, CM(out_deriv), MATRIX_TRANS, CM(in), MATRIX_NO_TRANS, beta),
             cpu_layer_gemm(KM(dw), alpha, KM(out_deriv), MATRIX_TRANS, KM(in), MATRIX_NO_TRANS,
                            beta, CPU_LAYER_WEIGHT_GRAD));
}

double matrix_layer_frobenius_norm(const struct matrix *m) {
    double sum_sq;
    int kept = DISPATCH_VALUE(GPU1(m), 0, cpu_layer_step_sum_sq(KM(m), &sum_sq));
    return kept ? sqrt(sum_sq) : matrix_frobenius_norm(m);
}

void matrix_layer_bias_grad(struct vector *db, float alpha, const struct matrix *out_deriv,
                            float beta) {
    ASSERT(db->dim == out_deriv->cols);
    int kept = DISPATCH_VALUE(GPU2(db, out_deriv), 0,
                              cpu_layer_add_row_sums(db->data, alpha, KM(out_deriv), beta));
    if (!kept) vector_add_row_sums(db, alpha, out_deriv, beta);
}

static void layer_affine(struct matrix *out, const struct matrix *in, const struct matrix *w,
                         const struct vector *b, int relu) {
    ASSERT(in->cols == w->cols && out->rows == in->rows && out->cols == w->rows);
    ASSERT(b->dim == w->rows);
    ASSERT(out->rows == 0 || out->cols == 0 || (out->data != in->data && out->data != w->data));
    DISPATCH(GPU4(out, in, w, b),
             (cuda_set_zero(CM(out)), cuda_add_vec_to_rows(CM(out), 1, b->data),
              cuda_gemm(CM(out), 1, CM(in), MATRIX_NO_TRANS, CM(w), MATRIX_TRANS, 1),
              relu ? cuda_nonlin(CUDA_RELU, CM(out), CM(out)) : (void)0),
             cpu_layer_affine(KM(out), KM(in), KM(w), b->data, relu));
}

void matrix_layer_affine(struct matrix *out, const struct matrix *in, const struct matrix *w,
                         const struct vector *b) {
    layer_affine(out, in, w, b, 0);
}

void matrix_layer_affine_relu(struct matrix *out, const struct matrix *in, const struct matrix *w,
                              const struct vector *b) {
    layer_affine(out, in, w, b, 1);
}
