/* cpu: the layer products' engine, chosen here and nowhere else (cpu.h cpu_layer_gemm): bf16 on
 * oneDNN where the shape gains, oneDNN's fp32 kernels for the thin ones under bf16, else OpenBLAS. */
#include <limits.h>

#include "matrix/cpu-internal.h"
#include "matrix/matrix.h"
#include "matrix/onednn.h"

static int layer_bf16; /* --precision=bf16 (matrix_set_precision) */

void cpu_set_layer_bf16(int on) { layer_bf16 = on; }
int cpu_layer_bf16(void) { return layer_bf16; }

/* bf16 pays where the output is wide enough for the engines' tiles and the sums long enough to
 * pay for the conversions (MATRIX_BF16_MIN_SIDE, MATRIX_BF16_MIN_INNER: bench/gemm-rates.c); a
 * thinner product stays fp32 (and forgets kept copies it writes over). */
static int bf16_for(int m, int n, int k) {
    return layer_bf16 && m >= MATRIX_BF16_MIN_SIDE && n >= MATRIX_BF16_MIN_SIDE &&
           k >= MATRIX_BF16_MIN_INNER;
}

/* Under bf16, a product that stays fp32 and is thin (the 10-class layer) runs on oneDNN's fp32
 * kernels; the bias column (a side of 1) and the wide ones stay with OpenBLAS. */
static int onednn_f32_for(int m, int n, int k) {
    int lo = m < n ? m : n;
    if (k < lo) lo = k;
    return layer_bf16 && lo >= MATRIX_F32_THIN_MIN && lo < MATRIX_BF16_MIN_SIDE;
}

/* The kept bf16 copies of a product's operands a and b, by its role (onednn.h). */
static const int keeps[][2] = {
    [CPU_LAYER_PLAIN] = {ONEDNN_SCRATCH, ONEDNN_SCRATCH},
    [CPU_LAYER_FORWARD] = {ONEDNN_STORE, ONEDNN_STORE},
    [CPU_LAYER_BACKPROP] = {ONEDNN_STORE, ONEDNN_REUSE},
    [CPU_LAYER_WEIGHT_GRAD] = {ONEDNN_REUSE, ONEDNN_REUSE},
};

void cpu_layer_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, struct cpu_mat b,
                    int trans_b, float beta, int role) {
    int m = c.rows, n = c.cols, k = trans_a ? a.rows : a.cols;
    if (layer_bf16 && m > 0 && n > 0) {
        onednn_forget(c);
        if (role == CPU_LAYER_BACKPROP || role == CPU_LAYER_WEIGHT_GRAD) onednn_layer_backward();
    }
    if (bf16_for(m, n, k))
        onednn_gemm(c, alpha, a, trans_a, keeps[role][0], b, trans_b, keeps[role][1], NULL, beta);
    else if (onednn_f32_for(m, n, k))
        onednn_gemm_f32(c, alpha, a, trans_a, b, trans_b, beta);
    else
        cpu_gemm(c, alpha, a, trans_a, b, trans_b, beta);
}

void cpu_layer_new_storage(const float *p, size_t n) {
    if (!layer_bf16 || !n) return;
    int len = n < INT_MAX ? (int)n : INT_MAX;
    struct cpu_mat m = {(float *)p, 1, len, len};
    onednn_forget(m);
}

void cpu_layer_affine(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *bias) {
    if (layer_bf16) onednn_layer_forward();
    if (bf16_for(in.rows, w.rows, in.cols)) { /* the bias added by the product as it writes */
        onednn_gemm(out, 1, in, MATRIX_NO_TRANS, ONEDNN_STORE, w, MATRIX_TRANS, ONEDNN_STORE,
                    bias, 0);
        return;
    }
    cpu_set_rows(out, bias); /* then beta 1: one pass fewer than a product and a bias pass */
    cpu_layer_gemm(out, 1, in, MATRIX_NO_TRANS, w, MATRIX_TRANS, 1, CPU_LAYER_FORWARD);
}
