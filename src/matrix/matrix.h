/* matrix: float32 matrices and vectors, and every numeric operation the networks use.
 *
 * Layout. A matrix is row-major: element (r, c) lives at data[r * stride + c], stride >= cols.
 * Owned matrices (matrix_init) are contiguous (stride == cols) so that a parameter block can be
 * viewed as a matrix and back. A vector is contiguous.
 *
 * Ownership. *_init allocates (zeroed) and sets owns = 1; *_release frees only if owns, and is a
 * no-op on a zeroed struct. Views (matrix_view, matrix_row, vector_range, matrix_from_vector, ...)
 * are structs by value that never own: they are valid while their parent lives and is not resized.
 *
 * Device. `device` is MATRIX_CPU (0) or MATRIX_GPU (1). New storage goes to matrix_default_device
 * (set once at start-up by the device-selection code; CPU unless a GPU was chosen), or to an
 * explicit device with *_init_on. Code outside this module never dereferences `data` of a matrix
 * that may live on the GPU: it uses the operations below, and moves data to or from the host with
 * matrix_copy (works across devices), matrix_to_host / matrix_from_host. Every BLAS/cuBLAS call
 * is reached from this module only; the #if HAVE_CUDA branches live here and nowhere else.
 * Inside, each operation checks shapes and dispatches to a backend's kernel: src/matrix/cpu.h
 * (OpenBLAS and our loops, threaded) or src/cuda/cuda.h (matrix-internal.h says how).
 *
 * Shapes. Operations put the destination first and check shapes with ASSERT: a mismatch is a
 * programmer bug, not bad input. "alpha"/"beta" follow BLAS: dst = alpha * op(...) + beta * dst.
 *
 * Small dense problems (the R x R eigenproblems and Cholesky factorizations of natural gradient,
 * the L-BFGS of nnet-combine) are done on the host in double precision with LAPACK: see
 * dense_sym_eig and dense_cholesky at the end.
 */
#ifndef PARNET_MATRIX_MATRIX_H
#define PARNET_MATRIX_MATRIX_H

#include <stdint.h>

#include "base/base.h"
#include "matrix/conv-geometry.h"

enum matrix_device { MATRIX_CPU = 0, MATRIX_GPU = 1 };
enum matrix_trans { MATRIX_NO_TRANS = 0, MATRIX_TRANS = 1 };

struct matrix {
    float *data;
    int rows, cols, stride;
    int device; /* enum matrix_device */
    int owns;
};

struct vector {
    float *data;
    int dim;
    int device;
    int owns;
};

extern int matrix_default_device;

/* ---- device selection (programs call this right after option parsing) ----
 * use_gpu is the value of --use-gpu:
 *   "no"        the CPU;
 *   "yes"       a GPU, or -1 with error_set("--use-gpu=yes but no GPU: <reason>");
 *   "optional"  a GPU if one can be had, else the CPU with a LOG line saying why; returns 0;
 *   "wait"      like "yes", but while every visible GPU is busy (exclusive mode: other jobs hold
 *               them) retry every 10 s; no visible GPU at all fails at once;
 *   anything else: -1, "--use-gpu: expected yes, no, optional or wait, got '...'".
 * Sets matrix_default_device (new storage goes there). Which GPU: those CUDA_VISIBLE_DEVICES
 * leaves visible; in exclusive-process mode the first one free, else the one with the largest
 * fraction of free memory; a LOG line names it. Built without CUDA (make CUDA=1), "yes" and
 * "wait" fail with that reason and "optional" gives the CPU. Model files are the same on both.
 * In a program: if (matrix_select_device(use_gpu) < 0) die("%s", error_get());   (exit 1) */
int matrix_select_device(const char *use_gpu);
/* matrix_select_device for one of several processes on a node (MPI ranks): with several visible
 * GPUs, the one numbered local_rank modulo their number is tried first, then the next ones in
 * turn (exclusive mode: the first free from there), so that ranks spread one per GPU; one GPU:
 * every rank shares it. local_rank < 0: as matrix_select_device. */
int matrix_select_device_rank(const char *use_gpu, int local_rank);
/* Wait for queued GPU work (for timing; transfers to the host wait by themselves). No-op on the
 * CPU or without CUDA. */
void matrix_sync(void);

/* n >= 1 threads for the CPU matrix work: parnet's pool (base.h parallel_run) splits the products
 * and the elementwise passes over them and OpenBLAS runs single-threaded under it; n <= 0 leaves
 * both as they are. Call it at start-up. Other threads (an example reader) may still call matrix
 * operations: one that finds the pool busy runs serially. Warns once when OpenBLAS runs its generic kernels on a
 * CPU that has AVX2/AVX-512 (see tools/blas-env.sh). */
void matrix_set_num_threads(int n);

/* ---- precision of the layer products (--precision) ----
 * The layer products (a layer's forward X W^T, its input derivative dY W and its weight gradient
 * dY^T X) go through matrix_add_mat_mat_layer, which computes them in the precision chosen here:
 *   "fp32"  (the default) matrix_add_mat_mat's product to fp32 rounding (not bit for bit): cuBLAS
 *           on the GPU; on the CPU OpenBLAS, or oneDNN's fp32 kernels where a rule of
 *           cpu-layer.c says they are faster for the shape on this CPU (the thin 10-class
 *           products everywhere, every wide one where oneDNN runs AVX-512). The rules are facts
 *           about the CPU, not timings: the same CPU and options always pick the same engines,
 *           and every engine's result is the same whatever the threads;
 *   "bf16"  mixed precision on the CPU's matrix engines (oneDNN on AMX-BF16 or AVX512-BF16):
 *           both operands rounded to bf16 (nearest even), products accumulated and written in
 *           fp32. Shapes that do not gain stay fp32 (bench/gemm-rates.c): a side below
 *           MATRIX_BF16_MIN_SIDE (the 10-class output layer, the bias column), or an inner
 *           dimension below MATRIX_BF16_MIN_INNER (the weight gradient dY^T X below minibatch
 *           128: on AMX, nnet-train at minibatch 128 ran 1.1-1.2x faster with that product in
 *           bf16 than in fp32; on the earlier gemm:jit path it had lost); of those,
 *           those run on fp32's engines, as above.
 * Under bf16 natural gradient's projection of a minibatch (matrix_project_out: h = x0 w^T and
 * x0 - h w) is also two bf16 products where its rank and widths are those of a bf16 layer product
 * (the output side's rank 80 of a 1024-wide layer, not the input side's rank 20): its share of an
 * NG-SGD step in bf16 roughly halves, and the preconditioned derivative moves by ~1e-3 relative
 * (precision-test). Everything else stays fp32 whatever the setting: parameters, updates,
 * averaging, model files, nonlinearities, objectives, and natural gradient's statistics (j = h^T
 * x0 and what follows) and eigenproblems (matrix_add_mat_mat itself never changes precision).
 * matrix_set_precision returns 0, or -1 with error_set when the name is unknown, when bf16 was
 * asked for and parnet was built without oneDNN, the CPU has neither AMX-BF16 nor AVX512-BF16
 * (oneDNN would emulate bf16, slower than fp32), or the matrices live on the GPU. Call it after
 * matrix_select_device; every program that computes takes the option as MATRIX_PRECISION_OPTION:
 *     const char *precision = "fp32";
 *     struct option_spec specs[] = { ..., MATRIX_PRECISION_OPTION(precision) };
 *     ...
 *     if (matrix_set_precision(precision)) die("%s", error_get());        (exit 1) */
enum matrix_precision { MATRIX_FP32 = 0, MATRIX_BF16 = 1 };
#define MATRIX_BF16_MIN_SIDE 32
#define MATRIX_BF16_MIN_INNER 128
#define MATRIX_F32_THIN_MIN 8
#define MATRIX_PRECISION_OPTION(var)                                                           \
    {"precision", OPT_STRING, &(var),                                                         \
     "fp32|bf16: precision of the layer products (bf16: AMX/AVX512-BF16 via oneDNN, fp32 "     \
     "accumulation and fp32 parameters)"}
int matrix_set_precision(const char *name);
/* The option group of a program that computes but does not train (nnet-forward, nnet-compute-prob,
 * nnet-combine; the trainers have theirs in train.h): --num-threads, --precision, --use-gpu.
 *     struct matrix_cli mc = MATRIX_CLI_DEFAULTS;
 *     struct option_spec specs[] = { ..., MATRIX_CLI_OPTIONS(mc) };
 *     ...  (after options_parse)
 *     if (matrix_cli_apply(&mc)) die("%s", error_get());
 * matrix_cli_apply sets the threads, selects the device, then the precision (that order, as above);
 * 0, or -1 with error_set. */
struct matrix_cli {
    int num_threads;
    const char *use_gpu, *precision;
};
#define MATRIX_CLI_DEFAULTS {1, "no", "fp32"}
#define MATRIX_CLI_OPTIONS(mc)                                                                 \
    {"num-threads", OPT_INT, &(mc).num_threads, "threads for the matrix work"},               \
        MATRIX_PRECISION_OPTION((mc).precision),                                               \
        {"use-gpu", OPT_STRING, &(mc).use_gpu, "yes|no|optional|wait: run on a GPU (make CUDA=1)"}
int matrix_cli_apply(const struct matrix_cli *mc);
/* matrix_cli_apply for one of several processes that must agree on the device (MPI ranks: NCCL
 * all-reduces device buffers, MPI host ones). rank numbers this process, local_rank its place on
 * its node (matrix_select_device_rank spreads a node's processes over its GPUs); all_min(ctx, x)
 * returns the minimum of x over the processes, a collective that every process calls alike. If
 * some process cannot have the device ("yes"/"wait" without a GPU, a bad option), every one
 * fails; if some got no GPU under "optional", every one runs on the CPU (a WARN line); then the
 * precision, checked alike. Returns 0 on every process; or, on failure, -1 with error_set on the
 * lowest-numbered process that failed (it alone says why) and 1 on the others. */
int matrix_cli_apply_ranks(const struct matrix_cli *mc, int rank, int local_rank,
                           int (*all_min)(void *ctx, int x), void *ctx);
/* Sums of device buffers across the processes of a job, for programs whose ranks compute on
 * GPUs (NCCL with make CUDA=1; the program links -lnccl). matrix_device_comm_new is collective
 * (after matrix_cli_apply_ranks): rank 0 draws the communicator's id, bcast(ctx, buf, bytes)
 * hands it to the others. *out is NULL where the ranks compute on the CPU (their buffers are on
 * the host: the caller sums them itself). 0, or -1 with error_set. matrix_device_comm_sum: count
 * floats at data, which live on `device` (the ->device of the vector or matrix they belong to),
 * summed over the processes in place where that is the GPU: 0, or -1 with error_set; 1 where it
 * is the host, which the caller then sums itself (c may be NULL there). The choice by device is
 * this layer's (docs/STYLE.md §4): a caller never tests it. */
struct matrix_device_comm;
int matrix_device_comm_new(struct matrix_device_comm **out, int rank, int size,
                           void (*bcast)(void *ctx, void *buf, int bytes), void *ctx);
int matrix_device_comm_sum(struct matrix_device_comm *c, float *data, size_t count, int device);
void matrix_device_comm_free(struct matrix_device_comm *c);
int matrix_get_precision(void); /* enum matrix_precision */
/* 0 when --precision=bf16 can run here, else -1 with error_set saying why (see above). */
int matrix_bf16_supported(void);
/* C = alpha op(A) op(B) + beta C, a layer product: as matrix_add_mat_mat, in the precision
 * above (under bf16 the result differs from fp32 by bf16's rounding of A and B: a relative
 * error of about 2^-9 per element of A and B, which averages down over the inner dimension). */
void matrix_add_mat_mat_layer(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                              const struct matrix *b, int trans_b, float beta);
/* A layer's three products, in the precision above: its forward, out = in W^T + 1 b^T (under
 * bf16 the bias is added by the product itself as it writes out; otherwise matrix_set_rows then
 * the product with beta 1); its input derivative, in_deriv = out_deriv W; its weight gradient,
 * dw = alpha out_deriv^T in + beta dw. Contract: a layer's backward products follow its forward,
 * with in, W and out_deriv unchanged in between except by these products (as a backward needs
 * anyway). Under bf16 the matrix layer then converts each operand once per step and reuses the
 * copy (onednn.h says how long a copy lives); under fp32 and on the GPU they are
 * matrix_add_mat_mat_layer with those operands. */
void matrix_layer_affine(struct matrix *out, const struct matrix *in, const struct matrix *w,
                         const struct vector *b);
/* matrix_layer_affine and then out = max(0, out), the same values, the ReLU applied by the
 * product as it writes where oneDNN runs it (no pass of its own over out). */
void matrix_layer_affine_relu(struct matrix *out, const struct matrix *in, const struct matrix *w,
                              const struct vector *b);
void matrix_layer_backprop(struct matrix *in_deriv, const struct matrix *out_deriv,
                           const struct matrix *w);
void matrix_layer_weight_grad(struct matrix *dw, float alpha, const struct matrix *out_deriv,
                              const struct matrix *in, float beta);
/* ||m||_F of a layer operand between its products (the step bound's ||X|| and ||dY||): under
 * bf16 from the sum of squares its conversion took as it went, where a kept copy exists (no pass
 * over m), or from the copy made now for the weight gradient to reuse (the first layer's dY, which
 * no input derivative converted); else matrix_frobenius_norm. The two agree to 1e-6 relative (the
 * conversion's partial sums are float). */
double matrix_layer_frobenius_norm(const struct matrix *m);
/* db = alpha (sum of out_deriv's rows) + beta db: the Affine bias gradient, vector_add_row_sums
 * but under bf16 from the sums out_deriv's conversion took (its input derivative's, or the step
 * bound's), where it has one: the same values to double rounding, without a pass over dY. */
void matrix_layer_bias_grad(struct vector *db, float alpha, const struct matrix *out_deriv,
                            float beta);

/* ---- storage and views ---- */
void matrix_init(struct matrix *m, int rows, int cols);
void matrix_init_on(struct matrix *m, int rows, int cols, int device);
void matrix_release(struct matrix *m);
/* Reallocate if the shape differs (contents then zero), else keep storage and contents. */
void matrix_resize(struct matrix *m, int rows, int cols);
struct matrix matrix_view(const struct matrix *m, int row0, int num_rows, int col0, int num_cols);
struct matrix matrix_rows(const struct matrix *m, int row0, int num_rows);
/* Wrap caller memory on the given device (a view). */
struct matrix matrix_wrap(float *data, int rows, int cols, int stride, int device);

void vector_init(struct vector *v, int dim);
void vector_init_on(struct vector *v, int dim, int device);
/* dim zeros on the device where `like` lives (a copy's storage, without asking which). */
void vector_init_like(struct vector *v, int dim, const struct vector *like);
void vector_release(struct vector *v);
void vector_resize(struct vector *v, int dim);
struct vector vector_range(const struct vector *v, int offset, int dim);
struct vector vector_wrap(float *data, int dim, int device);
struct vector matrix_row(const struct matrix *m, int r);
/* A contiguous vector (e.g. a slice of the parameter block) seen as a rows x cols matrix. */
struct matrix matrix_from_vector(const struct vector *v, int rows, int cols);
/* A contiguous matrix (stride == cols) seen as a vector. */
struct vector vector_from_matrix(const struct matrix *m);

/* ---- staging between the host and the compute device ----
 * src where the caller needs it: src itself when it is there already, else a copy in *staging
 * (resized, or allocated from a zeroed struct, where it must be; the caller releases it).
 * matrix_on_default_device: on matrix_default_device (a host minibatch before the network's
 * forward); matrix_on_host, vector_on_host: on the host (a writer's copy of parameters; an empty
 * one is returned as it is, since nothing in it is read). */
const struct matrix *matrix_on_default_device(const struct matrix *src, struct matrix *staging);
const struct matrix *matrix_on_host(const struct matrix *src, struct matrix *staging);
const struct vector *vector_on_host(const struct vector *src, struct vector *staging);

/* ---- host transfer (dst/src are host arrays, row-major rows x cols, or dim floats) ---- */
void matrix_to_host(const struct matrix *m, float *dst);
void matrix_from_host(struct matrix *m, const float *src);
void vector_to_host(const struct vector *v, float *dst);
void vector_from_host(struct vector *v, const float *src);
/* Single elements: slow on a GPU; for tests and diagnostics. */
float matrix_get(const struct matrix *m, int r, int c);
void matrix_set(struct matrix *m, int r, int c, float value);
float vector_get(const struct vector *v, int i);
void vector_set(struct vector *v, int i, float value);

/* ---- copies and fills ---- */
void matrix_copy(struct matrix *dst, const struct matrix *src); /* any devices, same shape */
void matrix_copy_transposed(struct matrix *dst, const struct matrix *src); /* dst = src^T */
void matrix_set_zero(struct matrix *m);
void matrix_set_const(struct matrix *m, float value);
void matrix_set_randn(struct matrix *m, struct rng *r, float stddev); /* N(0, stddev^2) */
void vector_copy(struct vector *dst, const struct vector *src);
void vector_set_zero(struct vector *v);
void vector_set_const(struct vector *v, float value);
void vector_set_randn(struct vector *v, struct rng *r, float stddev);

/* ---- BLAS level 1 ---- */
void matrix_scale(struct matrix *m, float alpha);
void matrix_add(struct matrix *m, float alpha, const struct matrix *a);    /* m += alpha a */
void vector_scale(struct vector *v, float alpha);
void vector_add(struct vector *v, float alpha, const struct vector *a);    /* v += alpha a */
double vector_dot(const struct vector *a, const struct vector *b);
double vector_sum(const struct vector *v);
double vector_norm2(const struct vector *v);                              /* sqrt(sum v^2) */
double matrix_sum(const struct matrix *m);
double matrix_frobenius_norm(const struct matrix *m);
/* tr(A op(B)) */
double matrix_trace_mat_mat(const struct matrix *a, const struct matrix *b, int trans_b);
double matrix_trace(const struct matrix *m);
/* 1 if every element is finite, else 0. */
int matrix_is_finite(const struct matrix *m);
int vector_is_finite(const struct vector *v);

/* ---- BLAS level 2 and 3 ---- */
/* C = alpha op(A) op(B) + beta C; C must not overlap A or B. beta = 0: C is not read. */
void matrix_add_mat_mat(struct matrix *c, float alpha, const struct matrix *a, int trans_a,
                        const struct matrix *b, int trans_b, float beta);
/* C = alpha A A^T + beta C (trans == MATRIX_NO_TRANS) or alpha A^T A + beta C; C is filled whole
 * (both triangles). C is taken to be symmetric on entry: only its lower triangle is read. */
void matrix_sym_add_mat_mat(struct matrix *c, float alpha, const struct matrix *a, int trans,
                            float beta);
/* y = alpha op(M) x + beta y */
void vector_add_mat_vec(struct vector *y, float alpha, const struct matrix *m, int trans,
                        const struct vector *x, float beta);
/* M += alpha a b^T */
void matrix_add_vec_vec(struct matrix *m, float alpha, const struct vector *a,
                        const struct vector *b);
/* The natural gradient's thin products (natgrad.h): the residual of x0's rows after projecting
 * them on w's rows, x = x0 - (x0 w^T) w, with h (N x R) receiving H = x0 w^T, or, with have_h,
 * holding it already (then only read). x: N x D; w: R x D, R >= 1; x0 = src when src is not NULL
 * (N x D, or N x (D - 1) and then a last column of ones that is never stored: x receives its
 * residual too), else x itself (in place). in_sq, out_sq (dim N, may be NULL): squared row norms
 * of x0 and of x after. src must not overlap x unless it is x. On the CPU, where it is the
 * faster way (cpu.h cpu_project_fused_preferred: Intel's AVX-512 cores), one fused pass over the
 * rows split over the pool (cpu_project_out), else h as a product (cpu.h cpu_project_gemm:
 * oneDNN's fp32 kernels or OpenBLAS, in fixed parts) and then that pass with h given, reading x0
 * from src;
 * under --precision=bf16, where the shape qualifies (above), h and x0 - h w as bf16 products;
 * on the GPU the ordinary operations. The fp32 ways agree to float roundoff, not bit for bit. */
void matrix_project_out(struct matrix *x, struct matrix *h, const struct matrix *w, int have_h,
                        const struct matrix *src, struct vector *in_sq, struct vector *out_sq);
/* matrix_project_out (h computed) for an update call of the natural gradient: also
 * j = h^T x0 (R x D; the implicit ones give its last column h's column sums). On the CPU, where
 * it is the faster way (per CPU, build and rank: cpu.h cpu_project_j_preferred), one fused
 * pass whose sum over the rows is taken in fixed parts of the rows whatever the thread count (so
 * the result does not depend on it), parts after the first summed in scratch; elsewhere, and on
 * the GPU, the products one by one (h = x0 w^T and j = h^T x0 as products, cpu_project_gemm on
 * the CPU, cuBLAS on the GPU; x0 copied into x first
 * when it is src, then x - h w as matrix_project_out with have_h): the same results to float
 * roundoff, not bit for bit. scratch: a CPU matrix of at least matrix_project_out_j_scratch(x, R)
 * rows of D columns, or NULL if that is 0 (the GPU, the products one by one). j must not overlap
 * x, h, w or src. */
int matrix_project_out_j_scratch(const struct matrix *x, int rank);
/* 1 when matrix_project_out(_j) with src takes the copy into x, the products and both norms in
 * one call with host norms (the CPU backend, fused or not), in_sq and out_sq then readable by the caller on the host
 * (host vectors of x's device); 0 where they are composed of the ordinary operations (the GPU), when
 * the caller does as well to copy first and call them with src NULL. */
int matrix_project_out_fused(const struct matrix *x);
void matrix_project_out_j(struct matrix *x, struct matrix *h, struct matrix *j,
                          const struct matrix *w, const struct matrix *src, struct vector *in_sq,
                          struct vector *out_sq, struct matrix *scratch);
/* every row r: m[r] = v   (v has dim cols) */
void matrix_set_rows(struct matrix *m, const struct vector *v);
/* every row r: m[r] += alpha v   (v has dim cols) */
void matrix_add_vec_to_rows(struct matrix *m, float alpha, const struct vector *v);
/* v = alpha * (sum over rows of m) + beta v   (column sums; v has dim cols) */
void vector_add_row_sums(struct vector *v, float alpha, const struct matrix *m, float beta);
/* v = alpha * (sum over columns of m) + beta v   (row sums; v has dim rows) */
void vector_add_col_sums(struct vector *v, float alpha, const struct matrix *m, float beta);

/* ---- elementwise and row/column scaling ---- */
void matrix_mul_elements(struct matrix *m, const struct matrix *a);  /* m *= a */
void matrix_mul_rows(struct matrix *m, const struct vector *scale);  /* m[r] *= scale[r] */
void matrix_mul_cols(struct matrix *m, const struct vector *scale);  /* m[:,c] *= scale[c] */
void matrix_add_diag(struct matrix *m, float alpha);                 /* square: m[i][i] += alpha */
void matrix_add_const(struct matrix *m, float alpha);
void vector_mul_elements(struct vector *v, const struct vector *a);
void vector_add_const(struct vector *v, float alpha);
/* v[r] = sum_c m[r][c]^2 */
void vector_row_sq_norms(struct vector *v, const struct matrix *m);
/* Each element of m becomes scale with probability keep, else 0 (dropout masks; drawn on the
 * host from r, row by row). */
void matrix_set_bernoulli(struct matrix *m, struct rng *r, float keep, float scale);

/* ---- nonlinearities: forward dst = f(src); backward in_deriv = f'(.) * out_deriv ---- */
/* dst may alias src in the forwards; in_deriv may alias out_deriv in the backwards. exp is
 * computed to a few float ulps; e^x for x < -87 is taken as 0 (sigmoid, tanh and softmax are
 * finite for every finite input; NaN stays NaN). */
void matrix_sigmoid(struct matrix *dst, const struct matrix *src);
void matrix_diff_sigmoid(struct matrix *in_deriv, const struct matrix *out_value,
                         const struct matrix *out_deriv);
void matrix_tanh(struct matrix *dst, const struct matrix *src);
void matrix_diff_tanh(struct matrix *in_deriv, const struct matrix *out_value,
                      const struct matrix *out_deriv);
void matrix_relu(struct matrix *dst, const struct matrix *src);
void matrix_diff_relu(struct matrix *in_deriv, const struct matrix *out_value,
                      const struct matrix *out_deriv);
/* Row-wise softmax / log-softmax (stable: subtracts the row max). */
void matrix_softmax_rows(struct matrix *dst, const struct matrix *src);
void matrix_log_softmax_rows(struct matrix *dst, const struct matrix *src);
/* Softmax backward: in_deriv[r] = y[r] .* (g[r] - <g[r], y[r]>), y = softmax output. */
void matrix_diff_softmax(struct matrix *in_deriv, const struct matrix *out_value,
                         const struct matrix *out_deriv);
/* Log-softmax backward: in_deriv[r] = g[r] - exp(z[r]) * sum(g[r]), z = log-softmax output. */
void matrix_diff_log_softmax(struct matrix *in_deriv, const struct matrix *out_value,
                             const struct matrix *out_deriv);
/* P-norm over groups: dst has src->cols / group_size columns;
 * dst[r][j] = (sum_{k<group} |src[r][j*group+k]|^p)^(1/p). */
void matrix_pnorm(struct matrix *dst, const struct matrix *src, float p);
void matrix_diff_pnorm(struct matrix *in_deriv, const struct matrix *in_value,
                       const struct matrix *out_value, const struct matrix *out_deriv, float p);
/* Kaldi's NormalizeComponent: y = x / rms(x), rms over the row (target rms 1), with a floor of
 * 2^-66 on the mean square; backward is the exact derivative (no term through a floored rms). */
void matrix_normalize_rows(struct matrix *dst, const struct matrix *src);
void matrix_diff_normalize_rows(struct matrix *in_deriv, const struct matrix *in_value,
                                const struct matrix *out_deriv);

/* ---- images in rows: convolution and max-pooling ----
 * Each row of a matrix holds one image of height h, width w and c channels, channel fastest:
 * element (y, x, ch) at column (y * w + x) * c + ch ("height x width(time) x channels", as Kaldi
 * nnet3's convolution lays it out; oneDNN's nhwc). A filter bank is an out_c x (k_h * k_w * in_c)
 * matrix whose row o holds filter o in the same order (oneDNN's ohwi), so a convolution is the
 * product of the patch matrix (matrix_conv_patches) with the filters transposed, plus a bias.
 * Padding adds pad_h zero rows above and below and pad_w zero columns left and right (for
 * max-pooling the padded cells never win). Output sizes are floor((in + 2 pad - k) / stride) + 1.
 * On the CPU these run on oneDNN's convolution and pooling primitives (fp32; the convolution's
 * products in bf16 with fp32 accumulation under --precision=bf16 where in_c, out_c >= 16), or,
 * built without oneDNN (DNNL=0), as patch matrices and OpenBLAS products, and pooling loops.
 * On the GPU they run on cuDNN (fp32 arithmetic, no TF32), the patch matrix on a gather kernel.
 * matrix_conv_setup checks g and fills out_h, out_w: 0, or -1 with error_set naming the field. */
/* struct matrix_conv: matrix/conv-geometry.h (shared with the CUDA backend) */
int matrix_conv_setup(struct matrix_conv *g, int pooling);
/* out (N x out_h*out_w*out_c) = in (N x in_h*in_w*in_c) conv w (out_c x k_h*k_w*in_c) + b. */
void matrix_conv_forward(struct matrix *out, const struct matrix *in, const struct matrix *w,
                         const struct vector *b, const struct matrix_conv *g);
/* in_deriv = d objective / d in from out_deriv (overwritten). */
void matrix_conv_backward_data(struct matrix *in_deriv, const struct matrix *out_deriv,
                               const struct matrix *w, const struct matrix_conv *g);
/* dw = alpha d/dw + beta dw, db = alpha d/db + beta db (beta 0 or 1). */
void matrix_conv_backward_weights(struct matrix *dw, struct vector *db, float alpha,
                                  const struct matrix *in, const struct matrix *out_deriv,
                                  const struct matrix_conv *g, float beta);
/* The patch matrix: (N * out_h * out_w) x (k_h * k_w * in_c), row (n, y, x) holding the window
 * of output position (y, x) of image n (zeros where it covers padding). With the output
 * derivatives viewed as (N * out_h * out_w) x out_c, the filters' gradient is their product:
 * natural gradient preconditions these two (the convolution component). */
void matrix_conv_patches(struct matrix *patches, const struct matrix *in,
                         const struct matrix_conv *g);
/* Max-pooling over g's windows, channel by channel (out_c == in_c). argmax (may be NULL; a host
 * matrix the caller owns, resized here) receives where the maxima are, for the backward pass:
 * oneDNN's workspace on the CPU; left as it is on the GPU and without oneDNN, whose backward
 * passes find the maxima again. */
void matrix_max_pool_forward(struct matrix *out, const struct matrix *in,
                             const struct matrix_conv *g, struct matrix *argmax);
/* in_deriv = out_deriv routed to each window's maximum (overwritten; ties: one of them). argmax:
 * the forward pass's over this same input, or NULL (the maxima are found again). */
void matrix_max_pool_backward(struct matrix *in_deriv, const struct matrix *in,
                              const struct matrix *out_deriv, const struct matrix_conv *g,
                              const struct matrix *argmax);

/* ---- batch normalisation over channels ----
 * Each row holds positions x channels values, channel fastest (channels divides cols; images in
 * rows, above, or plain vectors with channels == cols); every channel is normalised over all rows
 * and positions: y = (x - mean_c) / sqrt(var_c + eps). Forward, train = 1: mean and var
 * (channels each) are outputs, the batch's mean and biased variance; train = 0: they are inputs
 * (stored statistics). Backward: in_deriv (overwritten) from out_deriv with the forward's mean
 * and var; train = 1 through the batch statistics, train = 0 with them constant. On the CPU,
 * oneDNN's batch-normalisation primitive (fp32 whatever the precision), or loops with DNNL=0; on
 * the GPU, cuDNN's spatial batch norm (scale 1, offset 0). */
void matrix_batch_norm_forward(struct matrix *out, const struct matrix *in, int channels,
                               float eps, struct vector *mean, struct vector *var, int train);
void matrix_batch_norm_backward(struct matrix *in_deriv, const struct matrix *in,
                                const struct matrix *out_deriv, int channels, float eps,
                                const struct vector *mean, const struct vector *var, int train);

/* ---- splicing (context windows) ---- */
/* dst row r, column block k (width src->cols) = src row r + offsets[k]; offsets >= 0 and
 * dst->rows + max(offsets) <= src->rows; dst->cols == num_offsets * src->cols. */
void matrix_splice(struct matrix *dst, const struct matrix *src, const int *offsets,
                   int num_offsets);
/* The adjoint: src_deriv (rows of src) += the blocks of dst_deriv scattered back. */
void matrix_add_splice_backward(struct matrix *src_deriv, const struct matrix *dst_deriv,
                                const int *offsets, int num_offsets);

/* ---- sparse access with host index arrays (objectives, labels) ---- */
/* m[rows[i]][cols[i]] += alpha * values[i] */
void matrix_add_at(struct matrix *m, float alpha, int n, const int *rows, const int *cols,
                   const float *values);
/* out[i] = m[rows[i]][cols[i]] */
void matrix_get_at(const struct matrix *m, int n, const int *rows, const int *cols, float *out);
/* out[r] = argmax_c m[r][c] (first on ties); out is a host array of m->rows ints. */
void matrix_row_argmax(const struct matrix *m, int *out);

/* ---- small dense host problems in double precision (LAPACK) ---- */
/* Symmetric eigendecomposition of the n x n row-major matrix a: on return a holds the
 * eigenvectors as ROWS (a[i*n..] is the i-th), w the eigenvalues in ascending order.
 * Returns 0, or -1 with error_set if LAPACK fails. */
int dense_sym_eig(int n, double *a, double *w);
/* Cholesky a = L L^T of the n x n row-major symmetric positive-definite a; on return the lower
 * triangle holds L and the upper is zeroed. Returns 0, or -1 (not positive definite). */
int dense_cholesky(int n, double *a);

#endif
