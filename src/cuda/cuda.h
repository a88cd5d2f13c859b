/* cuda: the device backend behind matrix.h (built only with `make CUDA=1`).
 *
 * Who calls this. Only the matrix layer (src/matrix/), from inside its operations, after it has
 * checked shapes and that every operand lives on the GPU (docs/STYLE.md §4). Nothing else includes
 * this header: programs choose the device with matrix_select_device() from matrix.h.
 *
 * Plain C, no CUDA types: the .cu files implement it with the CUDA runtime and cuBLAS, one file
 * per family (device.cu: device choice, allocator, copies; blas.cu: cuBLAS; elementwise.cu;
 * reduce.cu; rowwise.cu: softmax and normalize; splice.cu: splicing and sparse access; conv.c
 * and conv.cu: convolution, pooling and batch norm on cuDNN).
 *
 * Matrices are passed as struct cuda_mat, a row-major strided view of device memory: element
 * (r, c) at data[r * stride + c]. A vector is the 1 x dim matrix {data, 1, dim, dim}; a
 * "vector argument" below is a device pointer to a contiguous array.
 *
 * Execution. Everything runs on the CUDA legacy default stream of the device chosen by
 * cuda_device_open, so operations execute in the order they were issued and the caching
 * allocator may hand out a block as soon as it is freed. Kernels are asynchronous; functions
 * returning a value to the host (reductions, downloads) wait for the work before them.
 *
 * Errors. A CUDA or cuBLAS failure here is not bad input but a broken device or a programmer bug
 * (bad launch, out of device memory after the cache was emptied): the backend prints the call,
 * file:line and CUDA's message, and aborts. Only device selection reports failure by return.
 */
#ifndef PARNET_CUDA_CUDA_H
#define PARNET_CUDA_CUDA_H

#include <stddef.h>

#include "matrix/conv-geometry.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cuda_mat {
    float *data;
    int rows, cols, stride;
};

/* ---- device (device.cu) ---- */
/* Choose a GPU among those CUDA_VISIBLE_DEVICES leaves visible and make it current, create the
 * cuBLAS handle and register cuda_device_release at exit. Several GPUs in the default compute
 * mode: the one with the largest fraction of free memory (Kaldi's rule); exclusive-process GPUs:
 * the first that lets us create a context, so jobs sharing a machine each get a free GPU.
 * Returns the device number; -1 when no GPU is visible (or all are 'prohibited'); -2 when every
 * GPU is busy or fails to start (worth retrying: --use-gpu=wait). why[why_len] gets the reason.
 * On success info[info_len] names the GPU and its free memory. Once a device is open, later
 * calls return it again. */
int cuda_device_open(char *why, size_t why_len, char *info, size_t info_len);
/* Before the first cuda_device_open: try the visible GPUs from number (first % count) onwards,
 * in that order, instead of by free memory (one GPU per MPI rank: first = the local rank).
 * -1 (the default): the rule above. */
void cuda_device_prefer(int first);
/* Free the allocator's cache and the cuBLAS handle (also registered with atexit). */
void cuda_device_release(void);
/* Wait for all queued device work (timing). */
void cuda_sync(void);

/* ---- memory (device.cu) ---- */
/* Caching allocator: blocks are kept on per-size free lists when freed and reused for the next
 * request of that (rounded) size; when the device runs out, the cache is emptied and the
 * allocation retried. Never returns NULL (aborts when the device is really full). */
void *cuda_malloc(size_t bytes);
void cuda_free(void *p); /* NULL is a no-op */

/* rows x cols floats between any two of host/device memory (dst_gpu/src_gpu say which side is
 * which); returns when a copy to the host has landed. */
void cuda_copy2d(float *dst, int dst_stride, int dst_gpu, const float *src, int src_stride,
                 int src_gpu, int rows, int cols);
void cuda_set_zero(struct cuda_mat m);

/* ---- cuBLAS (blas.cu); trans: 0 no, 1 yes; shapes already checked; no aliasing ---- */
/* c = alpha op(a) op(b) + beta c, with k = inner dimension (k == 0: c = beta c). */
void cuda_gemm(struct cuda_mat c, float alpha, struct cuda_mat a, int trans_a, struct cuda_mat b,
               int trans_b, float beta);
/* c = alpha a a^T + beta c (trans 0) or alpha a^T a + beta c (trans 1), both triangles filled; the
 * lower triangle of c is read on entry. */
void cuda_syrk(struct cuda_mat c, float alpha, struct cuda_mat a, int trans, float beta);
/* y = alpha op(m) x + beta y */
void cuda_gemv(float *y, float alpha, struct cuda_mat m, int trans, const float *x, float beta);
/* m += alpha a b^T */
void cuda_ger(struct cuda_mat m, float alpha, const float *a, const float *b);

/* ---- elementwise (elementwise.cu); operands have m's shape unless said ---- */
void cuda_set_const(struct cuda_mat m, float value);
void cuda_scale(struct cuda_mat m, float alpha); /* alpha == 0 writes zeros (BLAS) */
void cuda_add(struct cuda_mat m, float alpha, struct cuda_mat a);
void cuda_add_const(struct cuda_mat m, float alpha);
void cuda_add_diag(struct cuda_mat m, float alpha);
void cuda_mul_elements(struct cuda_mat m, struct cuda_mat a);
void cuda_mul_rows(struct cuda_mat m, const float *scale); /* dim rows */
void cuda_mul_cols(struct cuda_mat m, const float *scale); /* dim cols */
void cuda_add_vec_to_rows(struct cuda_mat m, float alpha, const float *v);
void cuda_copy_transposed(struct cuda_mat dst, struct cuda_mat src); /* dst = src^T */

enum cuda_nonlin { CUDA_SIGMOID, CUDA_TANH, CUDA_RELU };
void cuda_nonlin(int which, struct cuda_mat dst, struct cuda_mat src);
/* in_deriv = f'(.) * out_deriv from the forward output */
void cuda_diff_nonlin(int which, struct cuda_mat in_deriv, struct cuda_mat out_value,
                      struct cuda_mat out_deriv);
/* dst->cols = src->cols / group, group >= 1 */
void cuda_pnorm(struct cuda_mat dst, struct cuda_mat src, int group, float p);
void cuda_diff_pnorm(struct cuda_mat in_deriv, struct cuda_mat in_value,
                     struct cuda_mat out_value, struct cuda_mat out_deriv, int group, float p);

/* ---- reductions (reduce.cu); sums in double ---- */
enum cuda_reduce_op {
    CUDA_SUM,        /* sum a */
    CUDA_SUM_SQ,     /* sum a^2 */
    CUDA_DOT,        /* sum a .* b, same shape */
    CUDA_DOT_TRANS,  /* sum_ij a_ij b_ji: tr(A B) */
    CUDA_TRACE,      /* sum_i a_ii */
    CUDA_NONFINITE   /* sum (a - a): 0 when all finite, NaN otherwise */
};
double cuda_reduce(int op, struct cuda_mat a, struct cuda_mat b);
/* v = alpha * column sums of m + beta v (dim cols); beta == 0: v not read */
void cuda_add_row_sums(float *v, float alpha, struct cuda_mat m, float beta);
/* v = alpha * row sums of m + beta v (dim rows); beta == 0: v not read */
void cuda_add_col_sums(float *v, float alpha, struct cuda_mat m, float beta);
void cuda_row_sq_norms(float *v, struct cuda_mat m); /* dim rows */
/* host out[r] = first index of the row maximum */
void cuda_row_argmax(struct cuda_mat m, int *out);

/* ---- row-wise (rowwise.cu): softmax and normalize; dst may alias src ---- */
void cuda_softmax_rows(struct cuda_mat dst, struct cuda_mat src, int log_softmax);
/* in_deriv from the forward output and out_deriv; log_softmax: out_value is log-softmax's */
void cuda_diff_softmax(struct cuda_mat in_deriv, struct cuda_mat out_value,
                       struct cuda_mat out_deriv, int log_softmax);
void cuda_normalize_rows(struct cuda_mat dst, struct cuda_mat src);
void cuda_diff_normalize_rows(struct cuda_mat in_deriv, struct cuda_mat in_value,
                              struct cuda_mat out_deriv);

/* ---- splicing and sparse access (splice.cu); index arrays are on the host ---- */
void cuda_splice(struct cuda_mat dst, struct cuda_mat src, const int *offsets, int num_offsets);
void cuda_add_splice_backward(struct cuda_mat src_deriv, struct cuda_mat dst_deriv,
                              const int *offsets, int num_offsets);
void cuda_add_at(struct cuda_mat m, float alpha, int n, const int *rows, const int *cols,
                 const float *values);
void cuda_get_at(struct cuda_mat m, int n, const int *rows, const int *cols, float *out);

/* ---- images in rows (conv.c: cuDNN; conv.cu: the patch matrix and a per-channel scale) ----
 * Shapes as matrix.h's "images in rows" (NHWC, filters OHWI), g already checked by
 * matrix_conv_setup, every image matrix dense (stride == cols). cuDNN runs in fp32 arithmetic
 * (CUDNN_FMA_MATH: no TF32) and picks deterministic algorithms only. */
void cuda_conv_forward(struct cuda_mat out, struct cuda_mat in, struct cuda_mat w, const float *b,
                       const struct matrix_conv *g);
void cuda_conv_backward_data(struct cuda_mat in_deriv, struct cuda_mat out_deriv,
                             struct cuda_mat w, const struct matrix_conv *g);
/* dw = alpha dL/dw + beta dw, db likewise (beta 0 or 1) */
void cuda_conv_backward_weights(struct cuda_mat dw, float *db, float alpha, struct cuda_mat in,
                                struct cuda_mat out_deriv, const struct matrix_conv *g,
                                float beta);
void cuda_conv_patches(struct cuda_mat patches, struct cuda_mat in, const struct matrix_conv *g);
void cuda_max_pool_forward(struct cuda_mat out, struct cuda_mat in, const struct matrix_conv *g);
void cuda_max_pool_backward(struct cuda_mat in_deriv, struct cuda_mat in,
                            struct cuda_mat out_deriv, const struct matrix_conv *g);
/* Batch norm without scale and offset over `channels` (every column c % channels one channel):
 * train: mean and var (biased) of the batch written, then used; else the given ones used. */
void cuda_batch_norm_forward(struct cuda_mat out, struct cuda_mat in, int channels, float eps,
                             float *mean, float *var, int train);
void cuda_batch_norm_backward(struct cuda_mat in_deriv, struct cuda_mat in,
                              struct cuda_mat out_deriv, int channels, float eps,
                              const float *mean, const float *var, int train);
/* m's column c times (var[c % channels] + eps)^-1/2 (conv.cu; batch norm with fixed statistics) */
void cuda_scale_by_inv_std(struct cuda_mat dst, struct cuda_mat src, int channels,
                           const float *var, float eps);
/* Destroy the cuDNN handle (cuda_device_release calls it). */
void cuda_dnn_release(void);

/* ---- sums across processes (comm.c: NCCL; only nnet-train-mpi links it, with -lnccl) ----
 * cuda_comm_new is collective over the size processes: rank 0 draws the communicator's id and
 * bcast hands it to the others. 0, or -1 with error_set (NCCL's message). cuda_comm_sum: data
 * (device memory) summed over the processes in place, done when it returns. */
struct cuda_comm;
int cuda_comm_new(struct cuda_comm **out, int rank, int size,
                  void (*bcast)(void *ctx, void *buf, int bytes), void *ctx);
int cuda_comm_sum(struct cuda_comm *c, float *data, size_t count);
void cuda_comm_free(struct cuda_comm *c);

#ifdef __cplusplus
}
#endif

#endif
