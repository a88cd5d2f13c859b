/* matrix: the precision of the layer products (--precision=fp32|bf16) and their dispatch: bf16
 * products go to oneDNN (src/matrix/onednn.h), split over parnet's pool; everything else to
 * matrix_add_mat_mat. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matrix/onednn.h"
#include "matrix/matrix-internal.h"

static int precision = MATRIX_FP32;

int matrix_get_precision(void) { return precision; }

int matrix_bf16_supported(void) {
    char isa[64];
    return onednn_bf16_check(isa, sizeof isa);
}

int matrix_set_precision(const char *name) {
    ASSERT(name);
    if (!strcmp(name, "fp32")) {
        precision = MATRIX_FP32;
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
    precision = MATRIX_BF16;
    static int said;
    if (!said++)
        LOG("--precision=bf16: layer products in bf16 with fp32 accumulation on oneDNN (%s); "
            "parameters, updates and natural-gradient statistics stay fp32", isa);
    return 0;
}

int matrix_cli_apply(const struct matrix_cli *mc) {
    if (mc->num_threads < 1) return error_set("--num-threads=%d: must be at least 1", mc->num_threads);
    matrix_set_num_threads(mc->num_threads);
    if (matrix_select_device(mc->use_gpu)) return -1;
    return matrix_set_precision(mc->precision);
}

void matrix_layer_pass(int pass) {
    ASSERT(pass == MATRIX_PASS_FORWARD || pass == MATRIX_PASS_BACKWARD || pass == MATRIX_PASS_END);
    onednn_pass(pass);
}

void matrix_add_mat_mat_layer(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                              const struct matrix *b, int trans_b, float beta) {
    matrix_layer_product(c, alpha, a, trans_a, MATRIX_KEEP_NONE, b, trans_b, MATRIX_KEEP_NONE,
                         beta);
}

/* bf16 pays where the output is wide enough for the engines' tiles and the sums long enough to
 * pay for the conversions (MATRIX_BF16_MIN_SIDE, MATRIX_BF16_MIN_INNER: bench/gemm-rates.c); a
 * thinner product stays fp32 (and forgets kept copies it writes over). */
static int bf16_for(int m, int n, int k) {
    return precision == MATRIX_BF16 && m >= MATRIX_BF16_MIN_SIDE && n >= MATRIX_BF16_MIN_SIDE &&
           k >= MATRIX_BF16_MIN_INNER;
}

/* Under bf16, a product that stays fp32 and is thin (the 10-class layer) runs on oneDNN's fp32
 * kernels; the bias column (a side of 1) and the wide ones stay with OpenBLAS. */
static int onednn_f32_for(int m, int n, int k) {
    int lo = m < n ? m : n;
    if (k < lo) lo = k;
    return precision == MATRIX_BF16 && lo >= MATRIX_F32_THIN_MIN &&
           lo < MATRIX_BF16_MIN_SIDE;
}

void matrix_layer_product(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                          int keep_a, const struct matrix *b, int trans_b, int keep_b, float beta) {
    ASSERT(trans_a == MATRIX_NO_TRANS || trans_a == MATRIX_TRANS);
    ASSERT(trans_b == MATRIX_NO_TRANS || trans_b == MATRIX_TRANS);
    ASSERT(keep_a >= MATRIX_KEEP_NONE && keep_a <= MATRIX_KEEP_DERIV);
    ASSERT(keep_b >= MATRIX_KEEP_NONE && keep_b <= MATRIX_KEEP_DERIV);
    int m = trans_a == MATRIX_TRANS ? a->cols : a->rows;
    int k = trans_a == MATRIX_TRANS ? a->rows : a->cols;
    int kb = trans_b == MATRIX_TRANS ? b->cols : b->rows;
    int n = trans_b == MATRIX_TRANS ? b->rows : b->cols;
    ASSERT(k == kb && c->rows == m && c->cols == n);
    ASSERT(m == 0 || n == 0 || (c->data != a->data && c->data != b->data)); /* BLAS: no aliasing */
    if (precision == MATRIX_BF16 && m > 0 && n > 0) onednn_forget(KM(c));
    DISPATCH(GPU3(c, a, b), cuda_gemm(CM(c), alpha, CM(a), trans_a, CM(b), trans_b, beta),
             bf16_for(m, n, k)
                 ? onednn_gemm(KM(c), alpha, KM(a), trans_a, keep_a, KM(b), trans_b, keep_b, NULL,
                               beta)
             : onednn_f32_for(m, n, k)
                 ? onednn_gemm_f32(KM(c), alpha, KM(a), trans_a, KM(b), trans_b, beta)
                 : cpu_gemm(KM(c), alpha, KM(a), trans_a, KM(b), trans_b, beta));
}

void matrix_layer_affine(struct matrix *out, const struct matrix *in, const struct matrix *w,
                         const struct vector *b) {
    ASSERT(in->cols == w->cols && out->rows == in->rows && out->cols == w->rows);
    ASSERT(b->dim == w->rows);
    int m = in->rows, n = w->rows, k = in->cols;
    if (out->device == MATRIX_CPU && bf16_for(m, n, k)) {
        ASSERT(in->device == MATRIX_CPU && w->device == MATRIX_CPU && b->device == MATRIX_CPU);
        ASSERT(out->data != in->data && out->data != w->data);
        onednn_gemm(KM(out), 1, KM(in), MATRIX_NO_TRANS, MATRIX_KEEP_VALUE, KM(w), MATRIX_TRANS,
                    MATRIX_KEEP_VALUE, b->data, 0);
        return;
    }
    matrix_set_rows(out, b); /* then beta 1: one pass fewer than a product and a bias pass */
    matrix_layer_product(out, 1, in, MATRIX_NO_TRANS, MATRIX_KEEP_VALUE, w, MATRIX_TRANS,
                         MATRIX_KEEP_VALUE, 1);
}
