/* onednn: the second host backend behind matrix.h, beside cpu.h: the layer products on the CPU's
 * matrix engines (AMX-BF16, AVX512-BF16) through oneDNN's matmul, in bf16 with fp32 accumulation.
 *
 * Who calls this. Only the matrix layer's operations, after they have checked shapes: the layer
 * products (precision.c) go to cpu_layer_gemm (cpu-layer.c), whose rules send a product to
 * onednn_gemm (bf16), onednn_gemm_f32 or cpu_gemm. Nothing outside src/matrix/ includes this.
 *
 * Built with oneDNN (Debian's libdnnl-dev) when the Makefile finds it (HAVE_DNNL=1). Without it
 * onednn_bf16_check() reports that and precision.c never calls the products; the conversions and
 * the kept copies are plain C and always built.
 *
 * Operands. struct cpu_mat views (cpu.h) or raw pointers with a leading dimension; a transposed
 * operand is the same memory with its strides swapped, so no copy is made for op(). bf16 values
 * are IEEE fp32's upper 16 bits (round to nearest even), stored as uint16_t.
 *
 * Threads. onednn_gemm splits a product over parnet's pool (by C's rows wherever it has 64 or
 * more, so that every share is a dense matmul, which oneDNN 2.6's AMX kernels need; one oneDNN
 * matmul per share, oneDNN's own OpenMP threads kept at one per caller) after converting both
 * operands, split by rows, into bf16. onednn_gemm_raw works on the calling thread
 * only. Each thread keeps its own small cache of matmul primitives keyed by shape, strides,
 * transposes, data type, alpha and beta (constants of a primitive: oneDNN 2.6 runs its AMX
 * kernels only without a run-time scale), its own stream and scratchpad.
 *
 * Errors. A oneDNN failure on a shape the matrix layer has already checked is a broken library or
 * a programmer bug: it is reported with the call and oneDNN's status, and the program aborts.
 */
#ifndef PARNET_MATRIX_ONEDNN_H
#define PARNET_MATRIX_ONEDNN_H

#include <stddef.h>
#include <stdint.h>

#include "matrix/cpu.h"

enum onednn_type { ONEDNN_TYPE_F32 = 0, ONEDNN_TYPE_BF16 = 1 };

/* 0 when bf16 products can run natively here (oneDNN's best ISA has AMX-BF16 or AVX512-BF16);
 * else -1 with error_set naming what is missing: oneDNN not built in, or the CPU (or
 * ONEDNN_MAX_CPU_ISA) offering neither instruction set. isa[isa_len] gets oneDNN's ISA name
 * ("avx512_core_amx", "avx512_core_bf16", "avx2", ...; "none" without oneDNN). */
int onednn_bf16_check(char *isa, size_t isa_len);

/* 1 where oneDNN's fp32 kernels can use AVX-512 here (its best ISA is avx512_core or above),
 * else 0 (AVX2 or less, or built without oneDNN). */
int onednn_has_avx512(void);

/* dst (src.rows x src.cols, leading dimension ld >= cols) = src rounded to bf16 (nearest even;
 * NaN stays NaN, inf stays inf; the AVX512-BF16 path flushes fp32 subnormals to zero). */
void onednn_to_bf16(uint16_t *dst, int ld, struct cpu_mat src);
/* The inverse, exact: dst = (float)src. */
void onednn_from_bf16(struct cpu_mat dst, const uint16_t *src, int ld);

/* c = alpha op(a) op(b) + beta c on the calling thread, c an m x n fp32 view, op(a) m x k,
 * op(b) k x n, a and b of the given type (both fp32 or both bf16) at leading dimensions lda and
 * ldb (the stored matrix's row length). Accumulates in fp32. beta == 0: c is not read.
 * m, n, k >= 1. */
void onednn_gemm_raw(struct cpu_mat c, float alpha, int type, const void *a, int lda, int trans_a,
                   const void *b, int ldb, int trans_b, int k, float beta);

/* onednn_gemm_raw split over the pool as onednn_gemm splits it (for bench/gemm-rates.c's bound,
 * on operands converted beforehand). */
void onednn_gemm_split(struct cpu_mat c, float alpha, int type, const void *a, int lda,
                       int trans_a, const void *b, int ldb, int trans_b, int k, float beta);
/* What a bf16 layer product does with an operand's bf16 copy (cpu-layer.c chooses by the
 * product's role in a layer, matrix.h): ONEDNN_SCRATCH converts it for this call only;
 * ONEDNN_STORE converts it and keeps the copy for the rest of the epoch; ONEDNN_REUSE takes this
 * epoch's kept copy of the same memory (address, shape and stride), or converts it for this call.
 * Converting an operand costs a pass over memory, as much as a third of an AMX product, and each
 * operand of a layer is used twice: X and W in the forward and again in the backward, dY by both
 * backward products. An epoch ends when a layer's forward follows a backward product
 * (onednn_layer_forward after onednn_layer_backward); a product that writes over a kept copy's
 * memory drops it (onednn_forget), and so does new storage there (matrix.c). Per calling
 * thread. */
enum onednn_keep { ONEDNN_SCRATCH = 0, ONEDNN_STORE = 1, ONEDNN_REUSE = 2, ONEDNN_STORE_SUMS = 3 };
/* ONEDNN_STORE_SUMS (a product's first operand, or onednn_keep) is ONEDNN_STORE whose conversion
 * also sums the rows of m (onednn_kept_row_sums): an Affine layer's dY, whose sum of rows is its
 * bias gradient, so that no pass of its own reads dY again. onednn_keep makes a kept copy without
 * a product (keep ONEDNN_STORE or ONEDNN_STORE_SUMS), for the products that follow. */
void onednn_keep(struct cpu_mat m, int keep);
void onednn_layer_forward(void);
void onednn_layer_backward(void);
void onednn_forget(struct cpu_mat c);
/* 1 and *sum_sq = the sum of m's squares (fp32 values, double sums), where this epoch keeps a
 * copy of m (its conversion summed them); else 0. */
int onednn_kept_sum_sq(struct cpu_mat m, double *sum_sq);
/* This epoch's sum of m's rows (m.cols doubles) where a copy made with ONEDNN_STORE_SUMS is kept;
 * else NULL. */
const double *onednn_kept_row_sums(struct cpu_mat m);
/* What a product does to c as it writes it, after beta c is added: bias (NULL, or c.cols floats
 * added to every row: the Affine forward's bias), then relu (max(0, .): a RectifiedLinear that
 * follows the layer), each instead of a pass of its own. NULL: nothing. */
struct onednn_epilogue {
    const float *bias;
    int relu;
};
/* The bf16 layer product: c = alpha op(a) op(b) + beta c with fp32 a, b rounded to bf16 (kept
 * copies as keep_a, keep_b say), then the epilogue ep, split over the pool. m, n, k >= 1, c
 * overlaps neither operand. alpha != 1 is folded into the rounding of an operand converted for
 * this call only (c = op(bf16(alpha a)) op(bf16(b)) + beta c, or with alpha b), so that a scale
 * changing every call (natural gradient's) does not make a new primitive. */
void onednn_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, int keep_a,
                 struct cpu_mat b, int trans_b, int keep_b, const struct onednn_epilogue *ep,
                 float beta);
/* The same product on fp32 operands through oneDNN's fp32 kernels, split over the pool likewise
 * (the layer products where cpu-layer.c's rules find them faster than OpenBLAS). alpha != 1 is
 * folded into a scaled copy of the smaller operand (one primitive for every alpha). Needs
 * oneDNN. */
void onednn_gemm_f32(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a,
                     struct cpu_mat b, int trans_b, const struct onednn_epilogue *ep, float beta);

/* The same product cut along C's longer side into fixed parts (`part` rows, or 4 `part`
 * columns), one oneDNN fp32 product on one thread each, the parts shared out over the pool: the
 * same calls whatever the threads, so the same bits (cpu.h cpu_gemm_parts on OpenBLAS; for
 * natural gradient's products). alpha is a constant of the primitive: keep it fixed. Needs
 * oneDNN. */
void onednn_gemm_parts_f32(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a,
                           struct cpu_mat b, int trans_b, float beta, int part);

/* How many oneDNN primitives this process has created (each costs a JIT compilation; the cache
 * should keep this flat during training). 0 without oneDNN. */
long onednn_primitives_created(void);

/* ---- convolution, max-pooling and batch-normalisation primitives (onednn-conv.c; matrix.h's
 * images in rows) ----
 * Shapes checked by the caller; rows of images contiguous. Each call is split by images over the
 * pool (one primitive per thread and share shape, cached per thread like the matmuls). bf16: the
 * convolution's operands are rounded to bf16 per call, accumulation and outputs stay fp32.
 * onednn_conv_backward_weights overwrites dw and db with the gradient. Need oneDNN. */
struct matrix_conv;
void onednn_conv_forward(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *b,
                         const struct matrix_conv *g, int bf16);
void onednn_conv_backward_data(struct cpu_mat in_deriv, struct cpu_mat out_deriv,
                               struct cpu_mat w, const struct matrix_conv *g, int bf16);
void onednn_conv_backward_weights(struct cpu_mat dw, float *db, struct cpu_mat in,
                                  struct cpu_mat out_deriv, const struct matrix_conv *g, int bf16);
/* Max-pooling; ws (NULL: the thread's own, and the backward runs the forward again to fill it):
 * onednn_max_pool_workspace_bytes(g, in.rows) bytes, image by image, that the forward fills and
 * the backward reads. The size is 0 where oneDNN's workspace is not laid out image by image. */
size_t onednn_max_pool_workspace_bytes(const struct matrix_conv *g, int images);
void onednn_max_pool_forward(struct cpu_mat out, struct cpu_mat in, const struct matrix_conv *g,
                             void *ws);
void onednn_max_pool_backward(struct cpu_mat in_deriv, struct cpu_mat in, struct cpu_mat out_deriv,
                              const struct matrix_conv *g, const void *ws);
/* Batch normalisation (matrix.h), on the calling thread. */
void onednn_batch_norm_forward(struct cpu_mat out, struct cpu_mat in, int channels, float eps,
                               float *mean, float *var, int train);
void onednn_batch_norm_backward(struct cpu_mat in_deriv, struct cpu_mat in,
                                struct cpu_mat out_deriv, int channels, float eps,
                                const float *mean, const float *var, int train);
/* The engine and the calling thread's stream (dnnl_engine_t, dnnl_stream_t), for onednn-conv.c;
 * the thread's OpenMP threads are set to one on its first call. */
void *onednn_engine_handle(void);
void *onednn_stream_handle(void);

#endif
