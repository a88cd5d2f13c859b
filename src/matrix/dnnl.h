/* dnnl: the oneDNN backend behind matrix.h: matrix products on the CPU's matrix engines (AMX,
 * AVX512-BF16) in bf16 with fp32 accumulation, and oneDNN's fp32 kernels.
 *
 * Who calls this. Only the matrix layer (src/matrix/), from inside its operations, after it has
 * checked shapes; nothing else includes this header. Programs choose the precision with
 * matrix_set_precision() from matrix.h (--precision=fp32|bf16).
 *
 * Built with oneDNN (Debian's libdnnl-dev) when the Makefile finds it (HAVE_DNNL=1). Without it
 * matrix_dnnl_bf16_check() reports that and nothing else here may be called.
 *
 * Operands. Row-major strided views of host memory, as struct matrix or as raw pointers with a
 * leading dimension; a transposed operand is the same memory with its strides swapped, so no
 * copy is made for op(). bf16 values are IEEE fp32 with the low 16 bits dropped (round to nearest
 * even), stored as uint16_t.
 *
 * Threads. Every function works on the calling thread only (oneDNN's own OpenMP threads are kept
 * at one per caller): the matrix layer splits a product over parnet's pool and calls this once per
 * share, from each pool thread. Each thread keeps its own small cache of matmul primitives keyed
 * by shape, strides, transposes, data type and beta (alpha is passed at run time), its own stream
 * and its own scratchpad, so calls from different threads share nothing but the engine.
 *
 * Errors. A oneDNN failure on a shape the matrix layer has already checked is a broken library or
 * a programmer bug: it is reported with the call and oneDNN's status, and the program aborts.
 */
#ifndef PARNET_MATRIX_DNNL_H
#define PARNET_MATRIX_DNNL_H

#include <stddef.h>
#include <stdint.h>

#include "matrix/matrix.h"

enum matrix_dnnl_type { MATRIX_DNNL_F32 = 0, MATRIX_DNNL_BF16 = 1 };

/* 0 when bf16 products can run natively here (oneDNN's best ISA has AMX-BF16 or AVX512-BF16);
 * else -1 with error_set naming what is missing: oneDNN not built in, or the CPU (or
 * ONEDNN_MAX_CPU_ISA) offering neither instruction set. isa[isa_len] gets oneDNN's ISA name
 * ("avx512_core_amx", "avx512_core_bf16", "avx2", ...; "none" without oneDNN). */
int matrix_dnnl_bf16_check(char *isa, size_t isa_len);

/* dst (rows x cols, leading dimension ld >= cols) = src rounded to bf16 (nearest even; NaN stays
 * NaN, inf stays inf). Pure C: needs no oneDNN. */
void matrix_dnnl_to_bf16(uint16_t *dst, int ld, const struct matrix *src);
/* The inverse, exact: dst = (float)src. */
void matrix_dnnl_from_bf16(struct matrix *dst, const uint16_t *src, int ld);

/* c = alpha op(a) op(b) + beta c, c an m x n fp32 view, op(a) m x k, op(b) k x n, with a and b
 * of the given type (both fp32 or both bf16) at leading dimensions lda and ldb (the stored
 * matrix's row length: k for an untransposed a, m for a transposed one). Accumulates in fp32.
 * beta == 0: c is not read. m, n, k >= 1. */
void matrix_dnnl_gemm(struct matrix *c, float alpha, int type, const void *a, int lda,
                      int trans_a, const void *b, int ldb, int trans_b, int k, float beta);

#endif
