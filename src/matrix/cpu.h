/* cpu: the host backend behind matrix.h, the twin of src/cuda/cuda.h.
 *
 * Who calls this. Only the matrix layer's operations (matrix.c, matrix-ops.c), after they have
 * checked shapes and found every operand on the CPU. Nothing outside src/matrix/ includes it.
 *
 * Matrices are passed as struct cpu_mat, a row-major strided view of host memory: element (r, c)
 * at data[r * stride + c]. A vector is the 1 x dim matrix {data, 1, dim, dim} (KV in
 * matrix-internal.h); a "vector argument" below is a pointer to a contiguous array. The names and
 * arguments follow cuda.h kernel for kernel, so an operation's two branches read alike:
 *     DISPATCH(GPU2(m, a), cuda_add(CM(m), alpha, CM(a)), cpu_add(KM(m), alpha, KM(a)));
 *
 * Files, one per family as in src/cuda/: cpu-blas.c (OpenBLAS: every cblas_* call of parnet),
 * cpu-elementwise.c (fills, copies, elementwise, nonlinearities, softmax, p-norm, normalize),
 * cpu-reduce.c (sums, dots, traces, row/column sums, argmax), cpu-splice.c (splicing, sparse
 * access), cpu-split.c (the thread split below), cpu-layer.c (the layer products' engine),
 * cpu-project.c (the natural gradient's thin
 * products, one fused kernel with no cuda.h twin: on the GPU matrix_project_out is composed of
 * ordinary operations).
 *
 * Threads. A kernel runs on parnet's pool (base.h parallel_run) when its work is worth it: the
 * kernel body is written once, over whole views, as a cpu_kernel of a struct cpu_args, and handed
 * to cpu_split_rows (or cpu_split_cols), which cuts every operand into each thread's share and
 * runs the body on the shares. A body never knows whether it runs whole or on a share. Results
 * do not depend on the split: each output element is computed by one thread in the same order,
 * and split sums are added in a fixed order.
 *
 * Adding a kernel: a body `static double foo_k(const struct cpu_args *a)` over a->m[0..n-1], and
 * `void cpu_foo(...) { struct cpu_args a = {...}; cpu_split_rows(foo_k, &a); }` (or a plain loop
 * for work that cannot be cut by rows). A second host backend provides kernels over the same
 * views: onednn.h (bf16 layer products on AMX / AVX512-BF16, and fp32 ones where faster), picked
 * for the layer products by cpu_layer_gemm (cpu-layer.c).
 *
 * Errors: none; shapes are the caller's contract (checked there with ASSERT).
 */
#ifndef PARNET_MATRIX_CPU_H
#define PARNET_MATRIX_CPU_H

struct cpu_mat {
    float *data;
    int rows, cols, stride;
};

/* ---- the thread split (cpu-split.c) ---- */
/* A kernel's operands: matrices m[0..n-1] and the scalars and vector arguments it needs. */
struct cpu_args {
    struct cpu_mat m[4];
    int n;            /* matrices in m */
    float alpha, beta; /* BLAS-style scalars */
    float p;          /* p-norm exponent */
    int which;        /* enum cpu_nonlin, a log-softmax flag, a p-norm group, ... */
    const float *v;   /* a vector argument that every share sees whole (dim cols) */
};
/* A kernel body over the views in a (whole, or one thread's share); returns a partial sum for
 * reductions, else 0. */
typedef double (*cpu_kernel)(const struct cpu_args *a);
/* Work below this many elements (largest operand) runs on the calling thread: waking a worker
 * costs more than it saves. */
#define CPU_SPLIT_MIN_ELEMS 32768L
/* Runs k on shares of m[0]'s rows: every m[j] with m[0]'s row count is cut to the same rows (the
 * others, and v, are passed whole). Runs k(a) itself when the pool has one thread, inside a task,
 * for one row or for less than CPU_SPLIT_MIN_ELEMS elements. Returns the sum of k's returns,
 * added in thread order. */
double cpu_split_rows(cpu_kernel k, const struct cpu_args *a);
/* The same over columns, shares aligned to 16 columns: every m[j] with m[0]'s column count is
 * cut. For work whose rows depend on each other (column sums). Splits only from 64 columns. */
double cpu_split_cols(cpu_kernel k, const struct cpu_args *a);
/* For kernels whose every element stands alone (elementwise on operands of m[0]'s shape, or a
 * sum over all elements): a vector (m[0] one row, every m[j] the same row length) longer than
 * 64K elements is cut into fixed parts of its elements, shared out over the pool, and the parts'
 * returns added in part order, so that a sum does not depend on the threads (a model's step norm
 * and update are such passes over millions of parameters: on one thread while the others waited,
 * ~5% of a 2-thread bf16 step). A matrix goes to cpu_split_rows. */
double cpu_split_flat(cpu_kernel k, const struct cpu_args *a);

/* ---- BLAS (cpu-blas.c); trans: 0 no, 1 yes; shapes already checked; no aliasing ---- */
/* n >= 1: OpenBLAS single-threaded under parnet's pool of n threads; n <= 0: as they are. Warns
 * once when OpenBLAS runs its generic kernels on an AVX2/AVX-512 CPU. */
void cpu_set_num_threads(int n);
/* c = alpha op(a) op(b) + beta c, with k = inner dimension (k == 0: c = beta c); split over the
 * pool along c's longer side when each part is still a good product. */
void cpu_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, struct cpu_mat b,
              int trans_b, float beta);
/* cpu_gemm cut along C's longer side into parts of `part` rows (columns), one sgemm each, the
 * parts shared out over the pool: the same calls whatever the threads, so the same bits
 * (OpenBLAS picks its kernels by a call's shape, so a share that changes with the thread count
 * can change an element's rounding). For products whose result must not depend on the threads. */
void cpu_gemm_parts(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, struct cpu_mat b,
                    int trans_b, float beta, int part);
/* The layer products (matrix_layer_affine, matrix_layer_backprop, matrix_layer_weight_grad,
 * matrix_add_mat_mat_layer): the one place that picks their engine, by a table of rules on the
 * precision (cpu_set_layer_bf16, from matrix_set_precision), the shape and the CPU: under bf16,
 * onednn_gemm (onednn.h) where both sides are >= MATRIX_BF16_MIN_SIDE and the inner dimension
 * >= MATRIX_BF16_MIN_INNER; onednn_gemm_f32 where the rows or the inner dimension are thin (in
 * [MATRIX_F32_THIN_MIN, MATRIX_BF16_MIN_SIDE)), and for wide products where oneDNN runs
 * AVX-512; cpu_gemm otherwise.
 * role: the product's place in a layer, which says which bf16 copies are kept and reused
 * (onednn.h enum onednn_keep). cpu_layer_affine: out = in w^T + 1 bias^T, the forward, and with
 * relu max(0, .) of it, applied by oneDNN's products as they write. */
enum cpu_layer_role {
    CPU_LAYER_PLAIN = 0,   /* nothing kept */
    CPU_LAYER_FORWARD,     /* out = X W^T: X and W kept */
    CPU_LAYER_BACKPROP,    /* dX = dY W: dY kept, W reused */
    CPU_LAYER_WEIGHT_GRAD, /* dW = dY^T X: both reused */
};
/* c = op(a) op(b) for natural gradient's thin products (H = X W^T, J = H^T X) in fixed parts of
 * `part` rows (or columns), so that the bits do not depend on the threads: on the faster engine
 * for such shapes on this CPU (cpu-layer.c), always fp32. */
void cpu_project_gemm(struct cpu_mat c, struct cpu_mat a, int trans_a, struct cpu_mat b,
                      int trans_b, int part);
/* h = [x0 | 1] w^T (x0 a column short of w: an implicit last column of ones) or x0 w^T (as
 * wide), by cpu_project_gemm. */
void cpu_project_h(struct cpu_mat h, struct cpu_mat x0, struct cpu_mat w);
void cpu_set_layer_bf16(int on);
int cpu_layer_bf16(void);
void cpu_layer_gemm(struct cpu_mat c, float alpha, struct cpu_mat a, int trans_a, struct cpu_mat b,
                    int trans_b, float beta, int role);
/* 1 and the sum of m's squares where the bf16 layer products keep a copy of m (onednn.h
 * onednn_kept_sum_sq); else 0. */
int cpu_layer_kept_sum_sq(struct cpu_mat m, double *sum_sq);
/* A weight gradient's operand before its product (the step bound's ||X||, ||dY||): 1 and the sum
 * of m's squares from its kept copy, made now (with the sum of its rows) where none is kept yet
 * and the product will want one; 0 under fp32 and where bf16 would not take m. */
int cpu_layer_step_sum_sq(struct cpu_mat m, double *sum_sq);
/* v = alpha (sum of m's rows) + beta v from m's kept sums (the Affine bias gradient, dY summed by
 * its conversion: onednn.h ONEDNN_STORE_SUMS), returning 1; 0 (v untouched) where none is kept. */
int cpu_layer_add_row_sums(float *v, float alpha, struct cpu_mat m, float beta);
/* n floats at p are new storage: kept bf16 copies of the memory that was there go. */
void cpu_layer_new_storage(const float *p, size_t n);
void cpu_layer_affine(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *bias,
                      int relu);
/* Natural gradient's projection of n rows of width d on r directions (matrix_project_out, its
 * composed way) under --precision=bf16: cpu_layer_project_bf16 says whether it runs in bf16, which
 * is where the rules put its h = x0 w^T on bf16 (on the benchmark MLPs the output side's rank 80,
 * not the input side's rank 20). Then cpu_layer_project_h makes h from x0's bf16 copy (with
 * x0_kept, the one its layer's backward product kept this epoch if there is one: x0 must not have
 * been written since; else a new one), and cpu_layer_project_residual x -= h w, with the squared
 * row norms of x before (in_sq) and after (out_sq), each NULL or n floats. */
int cpu_layer_project_bf16(int n, int r, int d);
void cpu_layer_project_h(struct cpu_mat h, struct cpu_mat x0, int x0_kept, struct cpu_mat w);
void cpu_layer_project_residual(struct cpu_mat x, struct cpu_mat h, struct cpu_mat w, float *in_sq,
                                float *out_sq);
/* The same with x0 apart (as wide as x, not copied into x first): x = x0 - h w, written by the
 * product as -h w and then added to x0 in the pass that takes both norms (cpu_add_rows_sq); the
 * same bits as copying x0 into x and cpu_layer_project_residual. */
void cpu_layer_project_residual_from(struct cpu_mat x, struct cpu_mat x0, struct cpu_mat h,
                                     struct cpu_mat w, float *in_sq, float *out_sq);
/* c = alpha a a^T + beta c (trans 0) or alpha a^T a + beta c (trans 1), both triangles filled; the
 * lower triangle of c is read on entry. */
void cpu_syrk(struct cpu_mat c, float alpha, struct cpu_mat a, int trans, float beta);
/* y = alpha op(m) x + beta y */
void cpu_gemv(float *y, float alpha, struct cpu_mat m, int trans, const float *x, float beta);
/* m += alpha a b^T */
void cpu_ger(struct cpu_mat m, float alpha, const float *a, const float *b);

/* ---- elementwise (cpu-elementwise.c); operands have m's shape unless said ---- */
void cpu_copy(struct cpu_mat dst, struct cpu_mat src); /* overlapping rows allowed (memmove) */
void cpu_copy_transposed(struct cpu_mat dst, struct cpu_mat src); /* dst = src^T */
void cpu_set_zero(struct cpu_mat m);
void cpu_set_const(struct cpu_mat m, float value);
void cpu_scale(struct cpu_mat m, float alpha); /* alpha == 0 writes zeros (BLAS) */
void cpu_add(struct cpu_mat m, float alpha, struct cpu_mat a);
void cpu_add_const(struct cpu_mat m, float alpha);
void cpu_add_diag(struct cpu_mat m, float alpha);
void cpu_mul_elements(struct cpu_mat m, struct cpu_mat a);
void cpu_mul_rows(struct cpu_mat m, const float *scale); /* dim rows */
void cpu_mul_cols(struct cpu_mat m, const float *scale); /* dim cols */
void cpu_set_rows(struct cpu_mat m, const float *v);     /* every row = v (dim cols) */
/* Random fills, drawn from r in row order: CPU_RANDN, m = N(0, a^2); CPU_BERNOULLI, each element b
 * with probability a, else 0. */
enum cpu_random { CPU_RANDN = 0, CPU_BERNOULLI = 1 };
struct rng;
void cpu_set_random(struct cpu_mat m, struct rng *r, int kind, float a, float b);
void cpu_add_vec_to_rows(struct cpu_mat m, float alpha, const float *v);

enum cpu_nonlin { CPU_SIGMOID, CPU_TANH, CPU_RELU };
void cpu_nonlin(int which, struct cpu_mat dst, struct cpu_mat src); /* dst may alias src */
/* in_deriv = f'(.) * out_deriv from the forward output */
void cpu_diff_nonlin(int which, struct cpu_mat in_deriv, struct cpu_mat out_value,
                     struct cpu_mat out_deriv);
/* dst->cols = src->cols / group, group >= 1 */
void cpu_pnorm(struct cpu_mat dst, struct cpu_mat src, int group, float p);
void cpu_diff_pnorm(struct cpu_mat in_deriv, struct cpu_mat in_value, struct cpu_mat out_value,
                    struct cpu_mat out_deriv, int group, float p);
/* row-wise; dst may alias src */
void cpu_softmax_rows(struct cpu_mat dst, struct cpu_mat src, int log_softmax);
/* in_deriv from the forward output and out_deriv; log_softmax: out_value is log-softmax's */
void cpu_diff_softmax(struct cpu_mat in_deriv, struct cpu_mat out_value, struct cpu_mat out_deriv,
                      int log_softmax);
void cpu_normalize_rows(struct cpu_mat dst, struct cpu_mat src);
void cpu_diff_normalize_rows(struct cpu_mat in_deriv, struct cpu_mat in_value,
                             struct cpu_mat out_deriv);

/* ---- reductions (cpu-reduce.c); sums in double ---- */
enum cpu_reduce_op {
    CPU_SUM,        /* sum a */
    CPU_SUM_SQ,     /* sum a^2 (split over the pool) */
    CPU_DOT,        /* sum a .* b, same shape */
    CPU_DOT_TRANS,  /* sum_ij a_ij b_ji: tr(A B) */
    CPU_TRACE,      /* sum_i a_ii */
    CPU_NONFINITE   /* 0 when all finite, NaN otherwise */
};
double cpu_reduce(int op, struct cpu_mat a, struct cpu_mat b);
/* v = alpha * column sums of m + beta v (dim cols); beta == 0: v not read */
void cpu_add_row_sums(float *v, float alpha, struct cpu_mat m, float beta);
/* v = alpha * row sums of m + beta v (dim rows); beta == 0: v not read */
void cpu_add_col_sums(float *v, float alpha, struct cpu_mat m, float beta);
void cpu_row_sq_norms(float *v, struct cpu_mat m); /* dim rows */
/* x += x0 (the same shape), with the squared row norms of x0 in in_sq and of the sum in out_sq
 * (rows floats each): one pass where a copy, a product onto it and two norm passes took four. */
void cpu_add_rows_sq(struct cpu_mat x, struct cpu_mat x0, float *in_sq, float *out_sq);
/* out[r] = first index of the row maximum (NaN never wins, a NaN first element wins) */
void cpu_row_argmax(struct cpu_mat m, int *out);

/* ---- the natural gradient's thin products (cpu-project.c) ---- */
/* matrix.h matrix_project_out: h = x0 w^T (unless have_h: h holds it and is only read) and
 * x = x0 - h w, in one pass over blocks of 4 rows split by rows over the pool; x0 is src
 * (src.data != NULL: x.cols or x.cols - 1 columns, the missing last one taken as ones) or x.
 * in_sq / out_sq (may be NULL): squared row norms of x0 and of the result. w: R >= 1 rows of
 * x.cols; h: x.rows x R. src does not overlap x unless it is x. */
void cpu_project_out(struct cpu_mat x, struct cpu_mat h, struct cpu_mat w, int have_h,
                     struct cpu_mat src, float *in_sq, float *out_sq);
/* matrix.h matrix_project_out_j: cpu_project_out (h computed) and j = h^T x0 (R x x.cols), in
 * the same pass; j's sum over rows is taken in cpu_project_parts(x.rows) fixed parts of the
 * rows, parts 1.. in scratch ((parts - 1) R rows of x.cols), and added in part order. */
int cpu_project_parts(int n);
/* 1 where cpu_project_out_j is faster than its products one by one (cpu_gemm for h and j, then
 * cpu_project_out with have_h): measured, per build and rank; matrix_project_out_j's choice. */
int cpu_project_j_preferred(int rank);
/* 1 where cpu_project_out's fused pass (h and x - h w together) is faster than h by cpu_gemm and
 * then cpu_project_out with have_h: on Intel's AVX-512 cores (a fact about the CPU, measured
 * there); matrix_project_out's choice. */
int cpu_project_fused_preferred(void);
void cpu_project_out_j(struct cpu_mat x, struct cpu_mat h, struct cpu_mat j, struct cpu_mat w,
                       struct cpu_mat src, float *in_sq, float *out_sq, struct cpu_mat scratch);

/* ---- splicing and sparse access (cpu-splice.c); indices already checked ---- */
void cpu_splice(struct cpu_mat dst, struct cpu_mat src, const int *offsets, int num_offsets);
void cpu_add_splice_backward(struct cpu_mat src_deriv, struct cpu_mat dst_deriv,
                             const int *offsets, int num_offsets);
void cpu_add_at(struct cpu_mat m, float alpha, int n, const int *rows, const int *cols,
                const float *values);
void cpu_get_at(struct cpu_mat m, int n, const int *rows, const int *cols, float *out);

/* ---- images in rows (cpu-conv.c): matrix.h's convolution, max-pooling and batch normalisation,
 * on oneDNN's primitives (onednn-conv.c) where built, else on patch matrices and cpu_gemm, and
 * loops ---- */
struct matrix_conv;
void cpu_conv_forward(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *b,
                      const struct matrix_conv *g);
void cpu_conv_backward_data(struct cpu_mat in_deriv, struct cpu_mat out_deriv, struct cpu_mat w,
                            const struct matrix_conv *g);
void cpu_conv_backward_weights(struct cpu_mat dw, float *db, float alpha, struct cpu_mat in,
                               struct cpu_mat out_deriv, const struct matrix_conv *g, float beta);
void cpu_conv_patches(struct cpu_mat patches, struct cpu_mat in, const struct matrix_conv *g);
/* ws: cpu_max_pool_workspace_bytes(g, in.rows) bytes where the forward records the maxima and
 * the backward reads them (NULL: not kept, found again; always NULL without oneDNN, whose
 * workspace size is 0). */
size_t cpu_max_pool_workspace_bytes(const struct matrix_conv *g, int images);
void cpu_max_pool_forward(struct cpu_mat out, struct cpu_mat in, const struct matrix_conv *g,
                          void *ws);
void cpu_max_pool_backward(struct cpu_mat in_deriv, struct cpu_mat in, struct cpu_mat out_deriv,
                           const struct matrix_conv *g, const void *ws);
void cpu_batch_norm_forward(struct cpu_mat out, struct cpu_mat in, int channels, float eps,
                            float *mean, float *var, int train);
void cpu_batch_norm_backward(struct cpu_mat in_deriv, struct cpu_mat in, struct cpu_mat out_deriv,
                             int channels, float eps, const float *mean, const float *var,
                             int train);

#endif
