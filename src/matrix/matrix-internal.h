/* matrix-internal: how the matrix module's operations reach a backend; not part of the API.
 *
 * Every public operation does two things and nothing else:
 *   1. check its arguments (shapes, transposes, indices) with ASSERT: a mismatch is a programmer
 *      bug (matrix.h);
 *   2. one dispatch line, handing the operands to the GPU backend (src/cuda/cuda.h) or the CPU
 *      backend (src/matrix/cpu.h), which have a kernel of the same name each:
 *          DISPATCH(GPU2(m, a), cuda_add(CM(m), alpha, CM(a)), cpu_add(KM(m), alpha, KM(a)));
 *          return DISPATCH_VALUE(GPU2(a, b), cuda_reduce(op, CM(a), CM(b)),
 *                                cpu_reduce(op, KM(a), KM(b)));
 * A family of operations that differ only in a kernel's kind (the nonlinearities, softmax and
 * log-softmax, the reductions) shares one static helper holding that line, which takes the kind.
 * Threading, loops and BLAS calls live in the kernels. Built without CUDA the first call
 * vanishes (cuda.h is not even included), so no operation carries an #if HAVE_CUDA of its own;
 * the only ones left are storage (matrix.c alloc_on/free_on). A GPU path composed of several
 * calls is a parenthesized comma list in the first slot (matrix_set_rows), or a static helper
 * (the random fills: drawn on the host, then uploaded).
 *
 * GPUn(...) is 1 when the operands live on the GPU and asserts that they all live on the same
 * device: mixing devices in one operation is a programmer bug (matrix_copy and vector_copy are
 * the only operations that cross: GPU_EITHER). Without CUDA it asserts they are all on the CPU.
 *
 * The layer products (matrix_layer_affine, _backprop, _weight_grad, matrix_add_mat_mat_layer:
 * precision.c) dispatch like the others; on the CPU,
 * cpu_layer_gemm (cpu-layer.c) picks their engine (OpenBLAS, or onednn.h in bf16 or fp32) by
 * --precision and shape.
 *
 * Adding an operation: its declaration in matrix.h, a kernel in cpu.h (and cuda.h for the GPU),
 * and here a function that checks shapes and dispatches.
 */
#ifndef PARNET_MATRIX_MATRIX_INTERNAL_H
#define PARNET_MATRIX_MATRIX_INTERNAL_H

#include "matrix/cpu.h"
#include "matrix/matrix.h"

#if HAVE_CUDA
#include "cuda/cuda.h"
#define DISPATCH(gpu, cuda_call, cpu_call) \
    do {                                   \
        if (gpu) {                         \
            cuda_call;                     \
        } else {                           \
            cpu_call;                      \
        }                                  \
    } while (0)
#define DISPATCH_VALUE(gpu, cuda_expr, cpu_expr) ((gpu) ? (cuda_expr) : (cpu_expr))
#else
#define DISPATCH(gpu, cuda_call, cpu_call) \
    do {                                   \
        (void)(gpu);                       \
        cpu_call;                          \
    } while (0)
#define DISPATCH_VALUE(gpu, cuda_expr, cpu_expr) ((void)(gpu), (cpu_expr))
#endif

static inline int matrix_on_gpu(int d0, int d1, int d2, int d3) {
    ASSERT(d1 < 0 || d1 == d0);
    ASSERT(d2 < 0 || d2 == d0);
    ASSERT(d3 < 0 || d3 == d0);
#if HAVE_CUDA
    return d0 == MATRIX_GPU;
#else
    ASSERT(d0 == MATRIX_CPU);
    return 0;
#endif
}
/* For the copy across devices: 1 when either operand lives on the GPU (without CUDA it asserts
 * both are on the CPU). */
static inline int matrix_either_on_gpu(int d0, int d1) {
#if HAVE_CUDA
    return d0 == MATRIX_GPU || d1 == MATRIX_GPU;
#else
    ASSERT(d0 == MATRIX_CPU && d1 == MATRIX_CPU);
    return 0;
#endif
}
#define GPU_EITHER(a, b) matrix_either_on_gpu((a)->device, (b)->device)
#define GPU1(a) matrix_on_gpu((a)->device, -1, -1, -1)
#define GPU2(a, b) matrix_on_gpu((a)->device, (b)->device, -1, -1)
#define GPU3(a, b, c) matrix_on_gpu((a)->device, (b)->device, (c)->device, -1)
#define GPU4(a, b, c, d) matrix_on_gpu((a)->device, (b)->device, (c)->device, (d)->device)

/* A vector as a 1 x dim matrix (a view): a vector operation that a matrix one covers goes through
 * it (matrix.c: the reductions), and so do the backends' views of a vector. */
static inline struct matrix vector_as_row(const struct vector *v) {
    struct matrix m = {v->data, 1, v->dim, v->dim, v->device, 0};
    return m;
}

/* The backends' views of a matrix, and of a vector (its row): CM/CV for cuda.h, KM/KV for cpu.h. */
static inline struct cpu_mat cpu_mat_of(struct matrix m) {
    return (struct cpu_mat){m.data, m.rows, m.cols, m.stride};
}
#define KM(m) cpu_mat_of(*(m))
#define KV(v) cpu_mat_of(vector_as_row(v))
#if HAVE_CUDA
static inline struct cuda_mat cuda_mat_of(struct matrix m) {
    return (struct cuda_mat){m.data, m.rows, m.cols, m.stride};
}
#define CM(m) cuda_mat_of(*(m))
#define CV(v) cuda_mat_of(vector_as_row(v))
/* The backends number their nonlinearities and reductions alike, so that one kind (cpu.h's
 * name) fills both slots of a dispatch (matrix-ops.c nonlin, matrix.c reduce). */
#define SAME_KIND(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME_KIND(CPU_SIGMOID, CUDA_SIGMOID) && SAME_KIND(CPU_TANH, CUDA_TANH) &&
                   SAME_KIND(CPU_RELU, CUDA_RELU),
               "enum cpu_nonlin and enum cuda_nonlin differ");
_Static_assert(SAME_KIND(CPU_SUM, CUDA_SUM) && SAME_KIND(CPU_SUM_SQ, CUDA_SUM_SQ) &&
                   SAME_KIND(CPU_DOT, CUDA_DOT) && SAME_KIND(CPU_DOT_TRANS, CUDA_DOT_TRANS) &&
                   SAME_KIND(CPU_TRACE, CUDA_TRACE) && SAME_KIND(CPU_NONFINITE, CUDA_NONFINITE),
               "enum cpu_reduce_op and enum cuda_reduce_op differ");
#undef SAME_KIND
#endif

/* For tests and benchmarks (matrix-ops.c): how matrix_project_out_j goes on the CPU. -1, the
 * default: the fused kernel where cpu_project_j_preferred says so, else the products one by one;
 * 1: always the fused kernel; 0: always the products. matrix_project_out_j_scratch follows it. */
extern int matrix_project_j_path;
/* The same for matrix_project_out (without have_h): -1 the fused pass where
 * cpu_project_fused_preferred says so; 1 always; 0 never (H by BLAS, then the pass with have_h). */
extern int matrix_project_path;

/* The shape checks of a product c = alpha op(a) op(b) + beta c (BLAS: c aliases neither). */
static inline void matrix_check_product(const struct matrix *c, const struct matrix *a,
                                        int trans_a, const struct matrix *b, int trans_b) {
    ASSERT(trans_a == MATRIX_NO_TRANS || trans_a == MATRIX_TRANS);
    ASSERT(trans_b == MATRIX_NO_TRANS || trans_b == MATRIX_TRANS);
    int m = trans_a == MATRIX_TRANS ? a->cols : a->rows;
    int k = trans_a == MATRIX_TRANS ? a->rows : a->cols;
    int kb = trans_b == MATRIX_TRANS ? b->cols : b->rows;
    int n = trans_b == MATRIX_TRANS ? b->rows : b->cols;
    ASSERT(k == kb && c->rows == m && c->cols == n);
    ASSERT(m == 0 || n == 0 || (c->data != a->data && c->data != b->data));
}

#define SAME_SHAPE(a, b) ASSERT((a)->rows == (b)->rows && (a)->cols == (b)->cols)

static inline int matrix_contiguous(const struct matrix *m) {
    return m->stride == m->cols || m->rows <= 1;
}

#endif
