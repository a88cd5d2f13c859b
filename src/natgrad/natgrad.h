/* natgrad: the online natural-gradient preconditioner of Kaldi (nnet3 OnlineNaturalGradient,
 * nnet2 OnlinePreconditioner). A NaturalGradientAffine layer owns two: one for its input rows
 * with a column of ones appended (dim Di+1), one for its output-derivative rows (dim Do); its
 * step is lr * gamma_in * gamma_out * Yhat^T Xhat. Maths: docs/NATURAL-GRADIENT.md §1.
 *
 * What it computes. For a stream of minibatches X_t (N x D, one vector per row) it keeps
 *     F_t = R_t^T diag(d_t) R_t + rho_t I      R_t: R x D with orthonormal rows, 1 <= R < D,
 * a running estimate of the scatter of the rows, and replaces X_t in place by
 *     Xhat_t = beta_t X_t G_t^{-1},   G_t = F_t + (alpha/D) tr(F_t) I,
 *     beta_t = rho_t (1 + alpha) + (alpha/D) sum(d_t),
 * returning gamma_t = ||X_t||_F / ||Xhat_t||_F (1 if either is 0) in *scale: gamma * Xhat has the
 * norm of X_t; the caller folds gamma into its learning rate (§1.3). Minibatch t is preconditioned
 * with F_t, the estimate from before it (§1.3). On update steps the estimate then becomes F_{t+1},
 * one power-iteration step towards eta S_t + (1 - eta) F_t with S_t = X_t^T X_t / N and
 * eta = min(0.9, 1 - exp(-N / num_samples_history)), keeping the trace (§1.2). Updates happen on
 * calls 0..10 and then every update_period-th call (nnet3's schedule, §1.5). The first minibatch
 * also initializes the estimate (3 update passes from a fixed orthonormal R_0, §1.5).
 *
 * Cost. About 3 N D R multiply-adds on update steps and 2 N D R otherwise, all through matrix.h
 * (so on the GPU when X lives there; on the CPU H = X W^T and X - H W are matrix_project_out,
 * one fused pass where the matrix layer finds it faster; on update calls matrix_project_out_j,
 * where J = H^T X joins that pass likewise), plus an R x R eigenproblem on the host in double. That
 * eigenproblem and the rest of an update's host work are needed only by the next call (Xhat
 * uses the old W), so on the CPU, for R >= 40, they run on a helper thread started by the update
 * call and joined by the next call on the same object, which then forms the new W: the same
 * arithmetic in the same order as solving them at once, so the same results, bit for bit.
 *
 * Rank. R >= D is reduced to D - 1 with a warning; D == 1 gives R == 0, the identity (X is left
 * alone, *scale = 1), as Kaldi does. Kaldi's components choose rank = min(20 or 80, (dim+1)/2);
 * that choice belongs to the caller.
 *
 * Ownership and threads. A struct natgrad owns its state (W = E^{1/2} R on the device of the first
 * X it sees; d and rho on the host in double) and all scratch. After the first call nothing is
 * allocated unless N grows. One object per preconditioner, used by one thread at a time (its
 * helper thread, if any, touches only the object's host scratch and is joined by the next call,
 * natgrad_get_state or natgrad_free).
 *
 * Errors. Invalid options are a programmer bug (ASSERT in natgrad_new; configuration readers check
 * them with natgrad_options_check first). Nothing else is reported to the caller:
 *   - a minibatch with a non-finite element is left as it is, *scale = 1, state untouched (the
 *     trainer's non-finite check then skips the step);
 *   - an update that fails (eigensolver failure, non-finite new state) is discarded with a warning:
 *     the minibatch is still preconditioned with the old estimate, and the estimate is initialized
 *     again from the next minibatch.
 * The options are stored by the component (model files); the state is not saved (Kaldi neither).
 */
#ifndef PARNET_NATGRAD_NATGRAD_H
#define PARNET_NATGRAD_NATGRAD_H

#include <stdint.h>

#include "base/base.h"
#include "matrix/matrix.h"

struct natgrad_options {
    int rank;                  /* R; Kaldi: 20 on the input side, 80 on the output side */
    int update_period;         /* after the first 10 calls, update every this many calls */
    float num_samples_history; /* eta = 1 - exp(-N / num_samples_history), capped at 0.9 */
    float alpha;               /* smoothing of F by (alpha/D) tr(F) I before inverting */
    float epsilon;             /* absolute floor on rho and d */
    float delta;               /* floor on rho and d relative to the largest sqrt(c) */
};

/* nnet3 NaturalGradientAffineComponent's defaults (§1.6): rank 20, update_period 4,
 * num_samples_history 2000, alpha 4, epsilon 1e-10, delta 5e-4. */
void natgrad_options_default(struct natgrad_options *o);
/* 0 if the options are usable (rank >= 1, update_period >= 1, 0 < num_samples_history <= 1e6,
 * alpha >= 0, 0 < epsilon <= 1e-5, 0 < delta <= 1e-2, as Kaldi asserts), else -1 (error_set). */
int natgrad_options_check(const struct natgrad_options *o); /* messages name the config keys */

/* A preconditioner for rows of dimension dim >= 1. seed drives the random restarts of the
 * Gram-Schmidt fallback only; everything else is deterministic. */
struct natgrad *natgrad_new(int dim, const struct natgrad_options *o, uint64_t seed);
void natgrad_free(struct natgrad *p); /* NULL is a no-op */

/* Precondition the rows of x (N x dim, any N >= 0, on any device; the same device on every call)
 * in place and set *scale = gamma; update the estimate when the schedule says so. */
void natgrad_precondition(struct natgrad *p, struct matrix *x, float *scale);
/* The same, and row_sq (dim N, on x's device) receives the squared norms of the rows of the
 * result (before gamma): what NaturalGradientAffine's max-change-per-sample needs (Kaldi nnet2's
 * PreconditionDirections returns them too), at no extra pass over x. */
void natgrad_precondition_rows(struct natgrad *p, struct matrix *x, float *scale,
                               struct vector *row_sq);

/* natgrad_precondition_rows on a copy: x (N x dim) receives src (N x dim, or N x (dim - 1) and
 * then a last column of ones: an affine layer's input) and is preconditioned in place; src is
 * left alone. The same result as copying and calling natgrad_precondition_rows (row_sq may be
 * NULL), to float roundoff, but on the CPU with row_sq, once the estimate exists (not on the
 * first minibatch), a call makes one pass over the rows, block by block across the pool: copy,
 * norms of X, H = X W^T, on update calls J = H^T X (where the matrix layer fuses it), X - H W and
 * the norms of the result; tr(X^T X) for the update is the sum of X's row norms. */
void natgrad_precondition_copy(struct natgrad *p, const struct matrix *src, struct matrix *x,
                               float *scale, struct vector *row_sq);
/* The rank in use: R after the reduction above, 0 for the identity. */
int natgrad_rank(const struct natgrad *p);
/* For tests and diagnostics: copy the current estimate to the host, w (R x dim, row-major,
 * W = E^{1/2} R with e_i = d_i / (d_i + beta)), d (R) and *rho. Returns R, or 0 (nothing copied)
 * before the estimate exists. */
int natgrad_get_state(struct natgrad *p, float *w, double *d, double *rho); /* finishes a pending update first */

#endif
