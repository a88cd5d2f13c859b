/* matrix: elementwise operations, nonlinearities, softmax, p-norm, normalize, splicing, sparse
 * access. Each operation checks its arguments and dispatches to src/matrix/cpu.h or (CUDA=1,
 * GPU operands) src/cuda/cuda.h (matrix-internal.h). */
#include <stdlib.h>

#include "matrix/matrix-internal.h"

/* ---- elementwise and row/column scaling ---- */

void matrix_mul_elements(struct matrix *m, const struct matrix *a) {
    SAME_SHAPE(m, a);
    DISPATCH(GPU2(m, a), cuda_mul_elements(CM(m), CM(a)), cpu_mul_elements(KM(m), KM(a)));
}

void matrix_mul_rows(struct matrix *m, const struct vector *scale) {
    ASSERT(scale->dim == m->rows);
    DISPATCH(GPU2(m, scale), cuda_mul_rows(CM(m), scale->data), cpu_mul_rows(KM(m), scale->data));
}

void matrix_mul_cols(struct matrix *m, const struct vector *scale) {
    ASSERT(scale->dim == m->cols);
    DISPATCH(GPU2(m, scale), cuda_mul_cols(CM(m), scale->data), cpu_mul_cols(KM(m), scale->data));
}

void matrix_add_diag(struct matrix *m, float alpha) {
    ASSERT(m->rows == m->cols);
    DISPATCH(GPU1(m), cuda_add_diag(CM(m), alpha), cpu_add_diag(KM(m), alpha));
}

void matrix_add_const(struct matrix *m, float alpha) {
    DISPATCH(GPU1(m), cuda_add_const(CM(m), alpha), cpu_add_const(KM(m), alpha));
}

void vector_mul_elements(struct vector *v, const struct vector *a) {
    ASSERT(v->dim == a->dim);
    DISPATCH(GPU2(v, a), cuda_mul_elements(CV(v), CV(a)), cpu_mul_elements(KV(v), KV(a)));
}

void vector_add_const(struct vector *v, float alpha) {
    DISPATCH(GPU1(v), cuda_add_const(CV(v), alpha), cpu_add_const(KV(v), alpha));
}

void vector_row_sq_norms(struct vector *v, const struct matrix *m) {
    ASSERT(v->dim == m->rows);
    DISPATCH(GPU2(v, m), cuda_row_sq_norms(v->data, CM(m)), cpu_row_sq_norms(v->data, KM(m)));
}

/* The GPU's x - h w with the norms before and after, as ordinary operations. */
static inline void project_out_residual(struct matrix *x, const struct matrix *h,
                                        const struct matrix *w, struct vector *in_sq,
                                        struct vector *out_sq) {
    if (in_sq) vector_row_sq_norms(in_sq, x);
    matrix_add_mat_mat(x, -1.0f, h, MATRIX_NO_TRANS, w, MATRIX_NO_TRANS, 1.0f);
    if (out_sq) vector_row_sq_norms(out_sq, x);
}

/* c = op(a) op(b) of the composed projection; on the CPU in fixed parts of 64 rows (256 columns
 * on oneDNN) (cpu_project_gemm), so that it does not depend on the threads, as the fused pass
 * does not. */
static void project_product(struct matrix *c, const struct matrix *a, int trans_a,
                            const struct matrix *b, int trans_b) {
    matrix_check_product(c, a, trans_a, b, trans_b);
    DISPATCH(GPU3(c, a, b), cuda_gemm(CM(c), 1, CM(a), trans_a, CM(b), trans_b, 0),
             cpu_project_gemm(KM(c), KM(a), trans_a, KM(b), trans_b, 64));
}

/* matrix_project_out(_j) composed of the ordinary operations: x = x0 (copied from src), h = x w^T
 * (unless have_h), j = h^T x (if j), then x - h w with the norms; on the CPU that last step is
 * cpu_project_out with h given (one pass, the norms from its registers), and without j it reads
 * x0 from src itself (no copy). The GPU's way, and the
 * CPU's for matrix_project_out_j where the fused kernel is not the faster (project_j_fused).
 * Under --precision=bf16 on the CPU, where the layer rules put h's product on bf16
 * (cpu_layer_project_bf16), h and x - h w are bf16 products (h from src's kept bf16 copy when src
 * is a full-width layer derivative); j stays fp32. */
static void project_out_composed(struct matrix *x, struct matrix *h, struct matrix *j,
                                 const struct matrix *w, int have_h, const struct matrix *src,
                                 struct vector *in_sq, struct vector *out_sq) {
    int n = x->rows;
    int bf16 = DISPATCH_VALUE(GPU3(x, h, w), 0, cpu_layer_project_bf16(n, w->rows, w->cols));
    if (src && !j && !bf16 && DISPATCH_VALUE(GPU3(x, h, w), 0, 1)) {
        /* An ordinary call on the CPU: h from src, then x = x0 - h w reading x0 from src (no
         * copy of it into x first: one pass over the rows less). */
        cpu_project_h(KM(h), KM(src), KM(w));
        cpu_project_out(KM(x), KM(h), KM(w), 1, KM(src), in_sq ? in_sq->data : NULL,
                        out_sq ? out_sq->data : NULL);
        return;
    }
    if (bf16 && src && src->cols == x->cols && in_sq && out_sq) {
        /* x0 = src as wide as x (an output side): h from src's kept copy, j = h^T src, and x =
         * src - h w without copying src into x first (cpu_layer_project_residual_from). */
        ASSERT(!have_h);
        cpu_layer_project_h(KM(h), KM(src), 1, KM(w));
        if (j) project_product(j, h, MATRIX_TRANS, src, MATRIX_NO_TRANS);
        cpu_layer_project_residual_from(KM(x), KM(src), KM(h), KM(w), in_sq->data, out_sq->data);
        return;
    }
    if (src) {
        ASSERT(src->device == x->device);
        struct matrix xs = matrix_view(x, 0, n, 0, src->cols);
        matrix_copy(&xs, src);
        if (src->cols < x->cols) {
            struct matrix one = matrix_view(x, 0, n, src->cols, 1);
            matrix_set_const(&one, 1.0f);
        }
    }
    if (!have_h && bf16) {
        int kept = src && src->cols == x->cols;
        cpu_layer_project_h(KM(h), kept ? KM(src) : KM(x), kept, KM(w));
    } else if (!have_h) {
        project_product(h, x, MATRIX_NO_TRANS, w, MATRIX_TRANS);
    }
    if (j) project_product(j, h, MATRIX_TRANS, x, MATRIX_NO_TRANS);
    struct cpu_mat none = {0};
    if (bf16) {
        cpu_layer_project_residual(KM(x), KM(h), KM(w), in_sq ? in_sq->data : NULL,
                                   out_sq ? out_sq->data : NULL);
        return;
    }
    DISPATCH(GPU3(x, h, w), project_out_residual(x, h, w, in_sq, out_sq),
             cpu_project_out(KM(x), KM(h), KM(w), 1, none, in_sq ? in_sq->data : NULL,
                             out_sq ? out_sq->data : NULL));
}

static void project_out_check(const struct matrix *x, const struct matrix *h,
                              const struct matrix *w, const struct matrix *src,
                              const struct vector *in_sq, const struct vector *out_sq) {
    int n = x->rows;
    ASSERT(w->rows >= 1 && w->cols == x->cols && h->rows == n && h->cols == w->rows);
    ASSERT(!src || (src->rows == n && (src->cols == x->cols || src->cols == x->cols - 1)));
    ASSERT(!in_sq || in_sq->dim == n);
    ASSERT(!out_sq || out_sq->dim == n);
    if (!matrix_on_gpu(x->device, h->device, w->device, -1)) {
        if (src) ASSERT(src->device == MATRIX_CPU);
        if (in_sq) ASSERT(in_sq->device == MATRIX_CPU);
        if (out_sq) ASSERT(out_sq->device == MATRIX_CPU);
    }
}

/* On the CPU: the fused pass where it is the faster (cpu_project_fused_preferred), else the
 * products one by one. */
static void project_out_cpu(struct matrix *x, struct matrix *h, const struct matrix *w, int have_h,
                            const struct matrix *src, struct vector *in_sq,
                            struct vector *out_sq) {
    int fused = matrix_project_path < 0 ? cpu_project_fused_preferred() : matrix_project_path;
    if (cpu_layer_project_bf16(x->rows, w->rows, w->cols) || (!have_h && !fused)) {
        project_out_composed(x, h, NULL, w, have_h, src, in_sq, out_sq);
        return;
    }
    struct cpu_mat none = {0};
    cpu_project_out(KM(x), KM(h), KM(w), have_h, src ? KM(src) : none,
                    in_sq ? in_sq->data : NULL, out_sq ? out_sq->data : NULL);
}

void matrix_project_out(struct matrix *x, struct matrix *h, const struct matrix *w, int have_h,
                        const struct matrix *src, struct vector *in_sq, struct vector *out_sq) {
    project_out_check(x, h, w, src, in_sq, out_sq);
    ASSERT(!have_h || !src);
    DISPATCH(GPU3(x, h, w), project_out_composed(x, h, NULL, w, have_h, src, in_sq, out_sq),
             project_out_cpu(x, h, w, have_h, src, in_sq, out_sq));
}

int matrix_project_out_fused(const struct matrix *x) { return DISPATCH_VALUE(GPU1(x), 0, 1); }

int matrix_project_j_path = -1;
int matrix_project_path = -1;

/* 1 if matrix_project_out_j runs the fused kernel on the CPU for this rank. */
static int project_j_fused(int rank) {
    return matrix_project_j_path < 0 ? cpu_project_j_preferred(rank) : matrix_project_j_path;
}

int matrix_project_out_j_scratch(const struct matrix *x, int rank) {
    return DISPATCH_VALUE(GPU1(x), 0,
                          project_j_fused(rank) ? (cpu_project_parts(x->rows) - 1) * rank : 0);
}

/* On the CPU: the fused kernel where it is the faster (project_j_fused), else the products. */
static void project_out_j_cpu(struct matrix *x, struct matrix *h, struct matrix *j,
                              const struct matrix *w, const struct matrix *src,
                              struct vector *in_sq, struct vector *out_sq,
                              struct matrix *scratch) {
    if (cpu_layer_project_bf16(x->rows, w->rows, w->cols) || !project_j_fused(w->rows)) {
        project_out_composed(x, h, j, w, 0, src, in_sq, out_sq);
        return;
    }
    int need = matrix_project_out_j_scratch(x, w->rows);
    struct cpu_mat none = {0};
    if (need > 0)
        ASSERT(scratch && scratch->device == MATRIX_CPU && scratch->rows >= need &&
               scratch->cols == x->cols);
    cpu_project_out_j(KM(x), KM(h), KM(j), KM(w), src ? KM(src) : none,
                      in_sq ? in_sq->data : NULL, out_sq ? out_sq->data : NULL,
                      need > 0 ? KM(scratch) : none);
}

void matrix_project_out_j(struct matrix *x, struct matrix *h, struct matrix *j,
                          const struct matrix *w, const struct matrix *src, struct vector *in_sq,
                          struct vector *out_sq, struct matrix *scratch) {
    project_out_check(x, h, w, src, in_sq, out_sq);
    ASSERT(j->rows == w->rows && j->cols == x->cols && j->device == x->device);
    DISPATCH(GPU3(x, h, w), project_out_composed(x, h, j, w, 0, src, in_sq, out_sq),
             project_out_j_cpu(x, h, j, w, src, in_sq, out_sq, scratch));
}

/* ---- nonlinearities ----
 * The backends number the nonlinearities alike (cpu.h enum cpu_nonlin, cuda.h enum cuda_nonlin:
 * checked in matrix-internal.h), so one kind serves both dispatch slots. */

static void nonlin(int which, struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
    DISPATCH(GPU2(dst, src), cuda_nonlin(which, CM(dst), CM(src)),
             cpu_nonlin(which, KM(dst), KM(src)));
}

void matrix_sigmoid(struct matrix *dst, const struct matrix *src) { nonlin(CPU_SIGMOID, dst, src); }
void matrix_tanh(struct matrix *dst, const struct matrix *src) { nonlin(CPU_TANH, dst, src); }
void matrix_relu(struct matrix *dst, const struct matrix *src) { nonlin(CPU_RELU, dst, src); }

/* The derivatives (from the forward output) share their checks. */
static void check_diff(const struct matrix *in_deriv, const struct matrix *out_value,
                       const struct matrix *out_deriv) {
    SAME_SHAPE(in_deriv, out_value);
    SAME_SHAPE(in_deriv, out_deriv);
}

/* in_deriv = f'(.) .* out_deriv */
static void diff_nonlin(int which, struct matrix *in_deriv, const struct matrix *out_value,
                        const struct matrix *out_deriv) {
    check_diff(in_deriv, out_value, out_deriv);
    DISPATCH(GPU3(in_deriv, out_value, out_deriv),
             cuda_diff_nonlin(which, CM(in_deriv), CM(out_value), CM(out_deriv)),
             cpu_diff_nonlin(which, KM(in_deriv), KM(out_value), KM(out_deriv)));
}

void matrix_diff_sigmoid(struct matrix *in_deriv, const struct matrix *out_value,
                         const struct matrix *out_deriv) {
    diff_nonlin(CPU_SIGMOID, in_deriv, out_value, out_deriv);
}

void matrix_diff_tanh(struct matrix *in_deriv, const struct matrix *out_value,
                      const struct matrix *out_deriv) {
    diff_nonlin(CPU_TANH, in_deriv, out_value, out_deriv);
}

void matrix_diff_relu(struct matrix *in_deriv, const struct matrix *out_value,
                      const struct matrix *out_deriv) {
    diff_nonlin(CPU_RELU, in_deriv, out_value, out_deriv);
}

/* log_softmax: 0 for softmax, 1 for log-softmax, in both backends. */
static void softmax(int log_softmax, struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
    DISPATCH(GPU2(dst, src), cuda_softmax_rows(CM(dst), CM(src), log_softmax),
             cpu_softmax_rows(KM(dst), KM(src), log_softmax));
}

void matrix_softmax_rows(struct matrix *dst, const struct matrix *src) { softmax(0, dst, src); }
void matrix_log_softmax_rows(struct matrix *dst, const struct matrix *src) { softmax(1, dst, src); }

static void diff_softmax(int log_softmax, struct matrix *in_deriv, const struct matrix *out_value,
                         const struct matrix *out_deriv) {
    check_diff(in_deriv, out_value, out_deriv);
    DISPATCH(GPU3(in_deriv, out_value, out_deriv),
             cuda_diff_softmax(CM(in_deriv), CM(out_value), CM(out_deriv), log_softmax),
             cpu_diff_softmax(KM(in_deriv), KM(out_value), KM(out_deriv), log_softmax));
}

void matrix_diff_softmax(struct matrix *in_deriv, const struct matrix *out_value,
                         const struct matrix *out_deriv) {
    diff_softmax(0, in_deriv, out_value, out_deriv);
}

void matrix_diff_log_softmax(struct matrix *in_deriv, const struct matrix *out_value,
                             const struct matrix *out_deriv) {
    diff_softmax(1, in_deriv, out_value, out_deriv);
}

/* Group size of a p-norm, or 0 when both sides are empty. */
static int pnorm_group(const struct matrix *in, const struct matrix *out) {
    ASSERT(in->rows == out->rows);
    if (out->cols == 0) {
        ASSERT(in->cols == 0);
        return 0;
    }
    int g = in->cols / out->cols;
    ASSERT(g * out->cols == in->cols);
    return g;
}

void matrix_pnorm(struct matrix *dst, const struct matrix *src, float p) {
    ASSERT(p > 0.0f);
    int g = pnorm_group(src, dst);
    if (g == 0) return;
    DISPATCH(GPU2(dst, src), cuda_pnorm(CM(dst), CM(src), g, p),
             cpu_pnorm(KM(dst), KM(src), g, p));
}

void matrix_diff_pnorm(struct matrix *in_deriv, const struct matrix *in_value,
                       const struct matrix *out_value, const struct matrix *out_deriv, float p) {
    SAME_SHAPE(in_deriv, in_value);
    SAME_SHAPE(out_value, out_deriv);
    ASSERT(p > 0.0f);
    int g = pnorm_group(in_value, out_value);
    if (g == 0) return;
    DISPATCH(GPU4(in_deriv, in_value, out_value, out_deriv),
             cuda_diff_pnorm(CM(in_deriv), CM(in_value), CM(out_value), CM(out_deriv), g, p),
             cpu_diff_pnorm(KM(in_deriv), KM(in_value), KM(out_value), KM(out_deriv), g, p));
}

void matrix_normalize_rows(struct matrix *dst, const struct matrix *src) {
    SAME_SHAPE(dst, src);
    DISPATCH(GPU2(dst, src), cuda_normalize_rows(CM(dst), CM(src)),
             cpu_normalize_rows(KM(dst), KM(src)));
}

void matrix_diff_normalize_rows(struct matrix *in_deriv, const struct matrix *in_value,
                                const struct matrix *out_deriv) {
    check_diff(in_deriv, in_value, out_deriv);
    DISPATCH(GPU3(in_deriv, in_value, out_deriv),
             cuda_diff_normalize_rows(CM(in_deriv), CM(in_value), CM(out_deriv)),
             cpu_diff_normalize_rows(KM(in_deriv), KM(in_value), KM(out_deriv)));
}

/* ---- splicing ---- */

static void check_splice(const struct matrix *small, const struct matrix *big, const int *offsets,
                         int num_offsets) {
    ASSERT(num_offsets >= 0 && (num_offsets == 0 || offsets));
    ASSERT((long)small->cols * num_offsets == big->cols);
    for (int k = 0; k < num_offsets; k++)
        ASSERT(offsets[k] >= 0 && (long)big->rows + offsets[k] <= small->rows);
}

void matrix_splice(struct matrix *dst, const struct matrix *src, const int *offsets,
                   int num_offsets) {
    check_splice(src, dst, offsets, num_offsets);
    DISPATCH(GPU2(dst, src), cuda_splice(CM(dst), CM(src), offsets, num_offsets),
             cpu_splice(KM(dst), KM(src), offsets, num_offsets));
}

void matrix_add_splice_backward(struct matrix *src_deriv, const struct matrix *dst_deriv,
                                const int *offsets, int num_offsets) {
    check_splice(src_deriv, dst_deriv, offsets, num_offsets);
    DISPATCH(GPU2(src_deriv, dst_deriv),
             cuda_add_splice_backward(CM(src_deriv), CM(dst_deriv), offsets, num_offsets),
             cpu_add_splice_backward(KM(src_deriv), KM(dst_deriv), offsets, num_offsets));
}

/* ---- sparse access ---- */

static void check_indices(const struct matrix *m, int n, const int *rows, const int *cols) {
    for (int i = 0; i < n; i++)
        ASSERT(rows[i] >= 0 && rows[i] < m->rows && cols[i] >= 0 && cols[i] < m->cols);
}

void matrix_add_at(struct matrix *m, float alpha, int n, const int *rows, const int *cols,
                   const float *values) {
    check_indices(m, n, rows, cols);
    DISPATCH(GPU1(m), cuda_add_at(CM(m), alpha, n, rows, cols, values),
             cpu_add_at(KM(m), alpha, n, rows, cols, values));
}

void matrix_get_at(const struct matrix *m, int n, const int *rows, const int *cols, float *out) {
    check_indices(m, n, rows, cols);
    DISPATCH(GPU1(m), cuda_get_at(CM(m), n, rows, cols, out),
             cpu_get_at(KM(m), n, rows, cols, out));
}

void matrix_row_argmax(const struct matrix *m, int *out) {
    ASSERT(m->cols > 0 || m->rows == 0);
    DISPATCH(GPU1(m), cuda_row_argmax(CM(m), out), cpu_row_argmax(KM(m), out));
}
