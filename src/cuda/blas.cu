/* cuda: BLAS levels 2 and 3 through cuBLAS.
 *
 * cuBLAS is column-major; a row-major matrix X (r x c, row stride s) read column-major is X^T
 * (c x r, leading dimension s). So row-major C = op(A) op(B) is computed as the column-major
 * C^T = op(B)^T op(A)^T, i.e. gemm with the operands swapped and the same transpose flags. */
#include "cuda/cuda-internal.h"

static int ld_of(const cuda_mat &m) {
    return m.stride > 1 ? m.stride : 1; /* cuBLAS wants ld >= 1 */
}

static cublasOperation_t op_of(int trans) {
    return trans ? CUBLAS_OP_T : CUBLAS_OP_N;
}

void cuda_gemm(struct cuda_mat c, float alpha, struct cuda_mat a, int trans_a, struct cuda_mat b,
               int trans_b, float beta) {
    int m = c.rows, n = c.cols, k = trans_a ? a.rows : a.cols;
    if (m == 0 || n == 0) return;
    if (k == 0) {
        if (beta != 1.0f) cuda_scale(c, beta);
        return;
    }
    CUBLAS_CHECK(cublasSgemm(cuda_blas_handle(), op_of(trans_b), op_of(trans_a), n, m, k, &alpha,
                             b.data, ld_of(b), a.data, ld_of(a), &beta, c.data, ld_of(c)));
}

void cuda_syrk(struct cuda_mat c, float alpha, struct cuda_mat a, int trans, float beta) {
    int n = c.rows, k = trans ? a.rows : a.cols;
    if (n == 0) return;
    if (k == 0) {
        if (beta != 1.0f) cuda_scale(c, beta);
        return;
    }
    /* Row-major A A^T is A'^T A' for the column-major A' = A^T: cuBLAS op T; A^T A is op N.
     * The row-major lower triangle is the column-major upper one. */
    CUBLAS_CHECK(cublasSsyrk(cuda_blas_handle(), CUBLAS_FILL_MODE_UPPER,
                             trans ? CUBLAS_OP_N : CUBLAS_OP_T, n, k, &alpha, a.data, ld_of(a),
                             &beta, c.data, ld_of(c)));
    /* Mirror the lower triangle (row-major) into the upper one. */
    float *p = c.data;
    long ld = c.stride;
    map2d(n, n, [=] __device__(int r, int col) {
        if (col > r) p[r * ld + col] = p[col * ld + r];
    });
}

void cuda_gemv(float *y, float alpha, struct cuda_mat m, int trans, const float *x, float beta) {
    int out = trans ? m.cols : m.rows, in = trans ? m.rows : m.cols;
    if (out == 0) return;
    if (in == 0) {
        if (beta != 1.0f) {
            struct cuda_mat v = {y, 1, out, out};
            cuda_scale(v, beta);
        }
        return;
    }
    /* Column-major view: m' is cols x rows; y = m x is y = m'^T x. */
    CUBLAS_CHECK(cublasSgemv(cuda_blas_handle(), trans ? CUBLAS_OP_N : CUBLAS_OP_T, m.cols, m.rows,
                             &alpha, m.data, ld_of(m), x, 1, &beta, y, 1));
}

void cuda_ger(struct cuda_mat m, float alpha, const float *a, const float *b) {
    if (mat_empty(m)) return;
    /* Column-major m' = m^T gets alpha b a^T. */
    CUBLAS_CHECK(cublasSger(cuda_blas_handle(), m.cols, m.rows, &alpha, b, 1, a, 1, m.data,
                            ld_of(m)));
}
