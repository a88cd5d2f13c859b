/* train: the training and evaluation loops, model averaging and model combination.
 *
 * Everything here works on a whole network through nnet.h and on example archives through egs.h;
 * the programs (nnet-train, nnet-compute-prob, nnet-forward, nnet-average, nnet-combine) are thin
 * wrappers around one call each.
 *
 * Objective (Kaldi nnet2): weighted cross-entropy, sum over labels of w * log p(label); the gradient
 * is SUMMED over the minibatch, so learning rates are per sample. Accuracy counts a label's weight
 * as correct when the output row's argmax equals the label index.
 *
 * Reading ahead. train_sgd and eval_prob read examples and assemble minibatches (decoding stored
 * inputs) on a second thread, so the next minibatch is ready while the current one computes.
 *
 * Beyond plain averaging (reference/averaging-methods.md): every rule below is a vector operation
 * over the whole parameter block (STYLE.md §3); the pure rules (gaf_*, cosine_distance,
 * agreement_select, proximal_pull, vector_ema, gram_schmidt, basis_project) are exposed so that
 * unit tests can check them on tiny vectors.
 *   GAF (Chaubard et al. 2024): a step takes M microbatches at the same parameters; each
 *     microgradient is compared with the fusion so far by the cosine distance over the whole
 *     flattened gradient, D = 1 - <G,g>/(|G||g|), accepted when D <= tau; nothing agreed = no step.
 *   Job-level agreement (parnet's own, no anchor in the literature): each job's change since the
 *     previous model is compared with the consensus (mean) change; disagreeing jobs are left out.
 *   EASGD / Parle / Entropy-SGD: a proximal pull toward a reference model, an elastic centre
 *     update, and the local-entropy inner loop (an EMA of SGLD iterates).
 *   HWA: the offline level is a window average of synchronised models (average_model_files on
 *     the last W). TWA: training inside the span of the last K models (twa_combine).
 *
 * Errors: functions return 0, or -1 with error_set (bad input: file, key and reason); they never
 * exit. A non-finite step is skipped by the network (counted in num_skipped), never applied.
 */
#ifndef PARNET_TRAIN_TRAIN_H
#define PARNET_TRAIN_TRAIN_H

#include <stdint.h>

#include "base/base.h"
#include "egs/egs.h"
#include "nnet/nnet.h"

/* Totals of a pass over examples. */
struct train_stats {
    double objf;          /* sum of w * log p */
    double weight;        /* sum of w */
    double correct;       /* sum of w where argmax == label */
    long long num_egs, num_frames, num_minibatches, num_skipped;
    long long num_updates;           /* updates applied (not skipped) */
    long long gaf_steps, gaf_skipped; /* GAF steps attempted, and those where nothing agreed */
    long long gaf_offered, gaf_accepted; /* non-anchor microgradients offered / accepted */
    long long outer_steps;           /* Entropy-SGD outer updates */
    double seconds;
};

/* ---- minibatch source: examples -> minibatches, read ahead on a thread ---- */
struct minibatch_source;
/* Open egs_rspec (a table of examples) and start the reading thread. left/right: the network's
 * context, to which each example's surplus context is trimmed. NULL with error_set on failure. */
struct minibatch_source *minibatch_source_new(const char *egs_rspec, int minibatch_size,
                                              int left, int right);
/* The next minibatch (valid until the next call): 1, 0 at the end, -1 on error. */
int minibatch_source_next(struct minibatch_source *s, const struct egs_minibatch **mb);
/* Stops the thread and closes the archive; returns -1 if closing reported an error. */
int minibatch_source_free(struct minibatch_source *s);

/* ---- GAF: gradient agreement filtering ---- */
/* 1 - <a,b> / (|a| |b|) in double, in [0, 2]; 1 (orthogonal) if either vector is zero; NaN if
 * either is not finite (NaN never passes a "<= tau" test). */
double cosine_distance(const struct vector *a, const struct vector *b);

enum gaf_fusion {
    GAF_FUSION_HALVING = 0, /* G <- (G + g) / 2: the reference code (step_GAF) */
    GAF_FUSION_MEAN = 1,    /* G <- uniform mean of the accepted microgradients */
};
/* One GAF step: gaf_begin, then gaf_offer for each microgradient in a fixed order. The first one
 * is the anchor (always taken); each later g is compared with the current fusion G and fused
 * when cosine_distance(G, g) <= threshold, else dropped (G unchanged: with halving, a rejected g
 * leaves the anchor as the comparison point). The step is applied only if num_accepted >= 2. */
struct gaf {
    float threshold;          /* tau (0.97; >= 2 accepts everything) */
    enum gaf_fusion fusion;
    struct vector fused;      /* G, block layout */
    int num_offered;          /* this step, the anchor included */
    int num_accepted;         /* this step, the anchor included */
};
void gaf_init(struct gaf *g, int dim, float threshold, enum gaf_fusion fusion);
void gaf_release(struct gaf *g);
void gaf_begin(struct gaf *g);
/* Returns 1 if taken (the anchor, or agreed), 0 if rejected; *distance (may be NULL) receives
 * D(G, grad), 0 for the anchor. */
int gaf_offer(struct gaf *g, const struct vector *grad, double *distance);

/* ---- update rules of the elastic and local-entropy methods ---- */
/* x <- x - c (x - ref) = (1 - c) x + c ref: the proximal/elastic pull (EASGD worker step, Parle's
 * coupling to the reference, Entropy-SGD's outer step toward the inner mean with c = eta). */
void proximal_pull(struct vector *x, const struct vector *ref, float c);
/* mu <- beta mu + (1 - beta) y (Entropy-SGD's running mean of the inner iterates). */
void vector_ema(struct vector *mu, const struct vector *y, float beta);

/* ---- momentum and weight decay: the last stage of an update (momentum.c) ----
 * Momentum as Kaldi nnet3's --momentum (NnetTrainer): the velocity v accumulates the steps,
 * v <- mu v + s, and the parameters move by (1 - mu) v, so that a constant step s gives the same
 * asymptotic change per minibatch with or without momentum (the effective learning rate is not
 * multiplied by 1/(1 - mu)). Nesterov's form moves by (1 - mu)(s + mu v) instead (PyTorch's
 * nesterov=True with the same (1 - mu) normalisation). With PyTorch's un-normalised buffer,
 * lr_torch = (1 - mu) x lr x frames-per-minibatch gives the same trajectory (lr per sample here).
 *   Kaldi clips per component on v before the (1 - mu) factor; here max-change (per component
 *   and global) clips the applied step (1 - mu) v, so a component's max-change bounds its applied
 *   change exactly; the global max-change is then the same as Kaldi's.
 * Weight decay (L2): the step gains - lambda x frames x lr_c x theta_c on each updatable
 * component c (every parameter, biases included: PyTorch's weight_decay, which the GAF and Parle
 * references use), frames being the label weight the step was computed on. With lr per sample
 * this is PyTorch's weight_decay=lambda at lr_torch = lr x frames. The decay enters the step
 * before the momentum filter (as PyTorch). */
struct train_momentum {
    int on;                 /* momentum > 0 or weight_decay > 0 */
    float momentum, weight_decay;
    int nesterov;
    struct vector velocity; /* v, block layout; dim 0 without momentum */
};
struct train_options;
void train_momentum_init(struct train_momentum *m, struct nnet *n, const struct train_options *o);
void train_momentum_release(struct train_momentum *m);
/* step += coef x lr_c x x_c on each updatable component c's slice (block layout). */
void train_add_lr_scaled(struct nnet *n, struct vector *step, float coef, const struct vector *x);
/* step -= lambda x frames x lr_c x theta_c (n's current parameters); nothing when lambda <= 0. */
void train_weight_decay(struct nnet *n, struct vector *step, float lambda, double frames);
/* v <- mu v + s, then s <- (1 - mu) v, or (1 - mu)(s + mu v) with nesterov; in place. */
void momentum_filter(struct vector *velocity, struct vector *step, float mu, int nesterov);
/* Decay (frames as above), filter, nnet_apply_step; returns nnet_apply_step's 0/1. step is
 * modified (it may be nnet_delta(n)). A non-finite step is refused without touching v. */
int train_momentum_apply_step(struct train_momentum *m, struct nnet *n, struct vector *step,
                              double frames);
/* The filter and nnet_apply_step alone (the decay already in step). */
int train_momentum_apply_filtered(struct train_momentum *m, struct nnet *n, struct vector *step);
/* The step scale x lr_c x grad_c (what nnet_apply_gradient applies), through the stage above;
 * it is formed in nnet_delta(n). */
int train_momentum_apply_gradient(struct train_momentum *m, struct nnet *n,
                                  const struct vector *grad, float scale, double frames);

/* 0, or -1 with error_set naming the option: momentum in [0, 1), weight_decay >= 0, nesterov only
 * with momentum (shared by nnet-train and nnet-train-mpi). */
int train_momentum_options_check(const struct train_options *o);

/* ---- training ---- */
struct train_options {
    int minibatch_size;       /* examples per minibatch (512); the microbatch under GAF */
    uint64_t srand;           /* seeds the network's random draws (Dropout) and Langevin noise */
    int progress_every;       /* a progress line every this many minibatches (0: none) */
    /* GAF, on when gaf_microbatches >= 2: one update per gaf_microbatches minibatches. The fused
     * gradient is a mean; with per-sample learning rates (Kaldi) the update is
     * num_accepted x lr x fused, so that with tau >= 2 and the mean fusion a GAF step is exactly
     * one SGD step on the M minibatches together. gaf_on_steps compares and fuses each
     * microbatch's step (NNET_STEP: natural-gradient preconditioning and max-change-per-sample
     * included) instead of its raw gradient (then NaturalGradientAffine trains as plain SGD).
     * The last step of a pass may be short; a lone last microbatch is dropped. */
    int gaf_microbatches;     /* M (0: off) */
    float gaf_threshold;      /* tau (0.97) */
    enum gaf_fusion gaf_fusion;
    int gaf_on_steps;         /* 0: raw gradients (the paper), 1: preconditioned steps */
    /* The size of an applied GAF update. 0 (default): num_accepted x lr x fused. 1: lr x fused,
     * as the reference (step_GAF hands the fusion to optimizer.step: with lr per sample and the
     * gradient summed over a microbatch of B, lr x fused is lr_torch = lr x B times the fused
     * mean-loss gradient). With M = 2 an applied step always has num_accepted = 2, so the two
     * differ by the constant 2 (a learning rate); with M > 2 the default grows with the number
     * that agreed and the reference does not. The fusion for M > 2: halving (the reference)
     * weights the newest accepted microgradient 1/2 and the anchor 1/2^k after k acceptances;
     * mean weights all accepted ones 1/num_accepted. Weight decay counts the frames of
     * num_accepted microbatches (default) or of one (unit scale). */
    int gaf_unit_scale;
    /* Proximal (elastic) coupling to a reference model of the same structure (NULL: off): after
     * every update (every outer update under Entropy-SGD) x <- x - proximal_coupling (x - ref). */
    struct nnet *proximal_model;
    float proximal_coupling;
    /* Entropy-SGD inner loop, on when entropy_inner_steps L >= 1: the updates move an inner
     * iterate y that starts at the outer x; after each update y <- y - entropy_coupling (y - x)
     * + N(0, entropy_noise^2 I) (SGLD), mu <- ema mu + (1 - ema) y; every L updates (and at the
     * end of the data) x <- x - entropy_outer_rate (x - mu), then y = mu = x. Output: x. */
    int entropy_inner_steps;
    float entropy_coupling;   /* gamma-coupling per inner step (0.01) */
    float entropy_ema;        /* beta_1 (0.75) */
    float entropy_noise;      /* stddev per parameter per inner step (0) */
    float entropy_outer_rate; /* eta (1: x becomes mu) */
    /* Momentum and weight decay (train_momentum below), 0: off. With either on, train_sgd takes
     * each update as a step (NNET_STEP, or GAF's fused update turned into one), adds the decay,
     * filters it through the velocity and applies it with nnet_apply_step (max-change clips the
     * filtered step; the velocity keeps the unclipped one, as Kaldi's delta_nnet). */
    float momentum;           /* mu in [0, 1) */
    int nesterov;             /* 1: Nesterov's form of the filter */
    float weight_decay;       /* lambda: L2 penalty lambda/2 |theta|^2 per frame */
};
void train_options_default(struct train_options *o);

/* One pass of SGD (or NG-SGD, per component) over the examples, updating n in place. */
int train_sgd(struct nnet *n, const char *egs_rspec, const struct train_options *o,
              struct train_stats *st);

/* ---- synchronous data-parallel training (nnet-train-mpi) ----
 * N ranks each train a copy of the same network on their own examples and keep the copies in step
 * through collective operations that the caller supplies (struct train_comm): MPI in
 * nnet-train-mpi, NCCL for GPU buffers, threads in the unit tests. The library itself never links
 * against MPI.
 *
 * Modes (reference/averaging-methods.md §3, §4, §7):
 *   TRAIN_SYNC_PARAMS: local SGD / PR-SGD / Su & Chen. Each rank updates its own copy; every K
 *     minibatches (average_every) the parameter blocks are averaged (all-reduce sum, then / N),
 *     and once more at the end, so that every rank ends with the same model. With N ranks, use N x
 *     the single-process learning rate (as Kaldi's parameter averaging): with K = 1 and plain SGD
 *     this is exactly TRAIN_SYNC_STEPS.
 *   TRAIN_SYNC_STEPS: synchronous data-parallel SGD. Each rank computes its step (NNET_STEP), the
 *     steps are summed over ranks, and every rank applies the sum (max-change clipping after the
 *     sum). For Affine components the step is lr x gradient, so this is single-process SGD on the
 *     concatenated minibatch (N x minibatch_size examples) at the same learning rate. A
 *     NaturalGradientAffine component preconditions its gradient with its own rank's Fisher
 *     estimate (and applies max-change-per-sample locally) before the sum: the ranks still apply
 *     identical steps, but the result differs from single-process NG-SGD on the big minibatch.
 *   GAF (TRAIN_SYNC_STEPS with train.gaf_microbatches = M >= 1): gradient agreement filtering
 *     across ranks, the same rule and options as train_sgd's GAF (train.gaf_*). A step takes M
 *     minibatches on every rank; each rank's M microgradients (or steps, gaf_on_steps) are
 *     gathered by one all-reduce of N x M x num_params floats (own slots filled, others zero) and
 *     every rank offers all N x M of them in the order rank 0's M, rank 1's M, ... to the same
 *     GAF step, so every rank applies the same update. With N = 1 this is train_sgd's GAF with M
 *     microbatches; with M = 1 each rank's minibatch is one microbatch (the paper's distributed
 *     setting). N x M < 2 never trains (a lone microbatch is dropped). Ignored in params mode.
 *   TRAIN_SYNC_ELASTIC: EASGD in the all-reduce form (torch-distlearn's AllReduceEA; §2b). Each
 *     rank runs local SGD on its replica x (with train.momentum/nesterov: EAMSGD) at the
 *     SINGLE-worker learning rate; every tau = average_every minibatches, delta = alpha (x - c),
 *     x <- x - delta, c <- c + sum over ranks of delta, c being the centre, which every rank holds
 *     (bitwise the same). At the end of the pass (after a last exchange if steps were taken
 *     since the previous one) every rank's network is set to the centre: that is the model.
 *   TRAIN_SYNC_PARLE: Parle (§2c), as the reference code runs it, in step units (maximising;
 *     lr_c per sample, W the minibatch's label weight, so lr_c W is the reference's lr). Every
 *     rank keeps its anchor x^a, its EMA z^a (persistent: never reset), an outer velocity, and
 *     the network holds the inner iterate y. Inner step (each minibatch): the step s of y
 *     (NNET_STEP, plus weight decay) gains - gamma lr_c W (y - x^a), goes through the momentum
 *     filter (train.momentum/nesterov) and is applied; z^a <- alpha z^a + (1 - alpha) y. Every L
 *     minibatches: x~ = mean over ranks of z^a (all-reduce); the outer step
 *     s = - lr_c W ((x^a - z^a) + rho (x^a - x~)) through its own momentum filter is applied
 *     from the LAST INNER ITERATE y (not from x^a); x^a <- y; x~ <- mean over ranks of x^a
 *     (all-reduce). The model is x~: at the end (after a last exchange if inner steps were taken
 *     since the previous one) every rank's network is set to it. Use the single-worker rate.
 *   Momentum (train.momentum, nesterov, weight_decay: train_momentum above) applies in every
 *   mode: params, elastic and Parle keep each rank's velocity local; steps mode filters the summed
 *   step (each rank adds its own decay, lr_c lambda W_rank theta, before the sum, so the sum
 *   decays by the total weight), so the velocities stay identical. GAF across ranks turns the
 *   fused update into a step with the nominal weight minibatch_size x frames-per-example per
 *   microbatch (identical on every rank).
 * The natural-gradient state is never communicated: it stays local to each rank in all modes.
 *
 * Stopping together. Before every minibatch the ranks all-reduce (MIN) a flag: 1 = have a
 * minibatch, 0 = archive ended, < 0 = this rank failed (bad or truncated input). The first rank
 * to run out ends the pass for everyone (the others' remaining examples are not used: Kaldi cuts
 * archives to equal sizes, so this is at most a minibatch or two there); a failure anywhere makes
 * every rank return -1. So the function returns the same status on every rank and never leaves a
 * rank waiting in a collective; only a rank that dies outright needs the launcher (mpirun, srun
 * --kill-on-bad-exit) to end the job.
 *
 * Checks. At the start the ranks compare a hash of their parameter blocks (they must start from
 * the same model); with check_sync they compare again after every averaging (params mode) or every
 * step (steps mode) and fail if the copies differ in any bit.
 */
enum comm_type { COMM_FLOAT, COMM_DOUBLE, COMM_INT64 };
enum comm_op { COMM_SUM, COMM_MIN, COMM_MAX };

struct train_comm {
    int rank, size;
    void *ctx;
    /* In place over all ranks: data[i] = op over ranks of data[i], count elements of type.
     * device: where data lives (MATRIX_GPU only for COMM_FLOAT). Every rank must receive bitwise
     * the same result. Returns 0, or -1 (error_set). */
    int (*allreduce)(void *ctx, void *data, size_t count, enum comm_type type, enum comm_op op,
                     int device);
};

enum train_sync_mode {
    TRAIN_SYNC_PARAMS = 0,
    TRAIN_SYNC_STEPS = 1,
    TRAIN_SYNC_ELASTIC = 2, /* EASGD / EAMSGD, all-reduce form (see below) */
    TRAIN_SYNC_PARLE = 3,   /* Parle, as ucla-vision/parle parle_mpi.py (see below) */
};

struct train_sync_options {
    struct train_options train; /* minibatch size, srand (+ rank for each rank), progress, GAF
                                 * (gaf_*: steps mode only; M per rank); the other methods of
                                 * train_sgd (proximal, Entropy-SGD) are not used here */
    enum train_sync_mode mode;
    int average_every;          /* K >= 1 (params mode), or 0: average only at the end;
                                 * tau >= 1 in elastic mode */
    int check_sync;             /* compare the ranks' parameters after every exchange */
    /* elastic: alpha of the exchange (0: 0.9 / N, i.e. beta = N alpha = 0.9) */
    float elastic_alpha;
    /* Parle (the reference's names and defaults): L inner steps per exchange (25); the couplings
     * gamma = min(gamma_max, parle_gamma s), rho = min(rho_max, parle_rho L N s), scoped by
     * s = (1 + 0.5 / nb)^floor(t k / L), t the inner steps so far (parle_step_offset at the
     * start of this pass: the steps of earlier passes), nb the minibatches per epoch (0: s = 1),
     * k = parle_scope_per_step (0: the network's number of parameter tensors, W and b of each
     * updatable component, as the reference code, whose counter advances once per parameter
     * tensor per inner step; 1: the README's formula, t counting inner steps); z's EMA factor
     * alpha (0.75). With k = 1 the couplings barely grow in a few epochs (e^(0.5/L) per pass over
     * the data), so the replicas stay loosely coupled; the reference's k reaches the caps. */
    int parle_inner_steps;
    float parle_gamma, parle_rho, parle_gamma_max, parle_rho_max, parle_ema;
    long long parle_minibatches_per_epoch, parle_step_offset;
    int parle_scope_per_step;
    /* This rank's optimiser state across passes (NULL: none): read at the start, written at the
     * end (write-then-rename). It holds the momentum velocity in every mode and, for elastic and
     * Parle, the rank's replica (x, or y), Parle's anchor, EMA, outer velocity and t; the centre
     * is the model itself. With it, a run split into passes (steps/train_mpi.sh's iterations)
     * computes what one long pass would, except for the reading order of the examples. */
    const char *state_rxfilename, *state_wxfilename;
};
void train_sync_options_default(struct train_sync_options *o);

struct train_sync_stats {
    struct train_stats local;   /* this rank's examples */
    struct train_stats total;   /* summed over ranks (seconds: the slowest rank's; GAF counts and
                                 * num_updates: the same on every rank, taken once) */
    long long num_exchanges;    /* parameter averages (params), step sums or GAF gathers */
    long long num_stopped_early; /* ranks that still had examples when the pass ended */
    long long num_close_failed; /* ranks whose archive failed on closing (then -1 everywhere) */
    double exchange_bytes;      /* payload of the parameter/step all-reduces, per rank */
    double exchange_seconds;    /* in those all-reduces (includes waiting for slower ranks) */
    double flag_seconds;        /* in the per-minibatch "have data" all-reduce */
    double parle_gamma, parle_rho; /* Parle: the couplings at the end of the pass */
    long long parle_steps;      /* Parle: t at the end of the pass (offset included) */
};

/* One pass over this rank's examples (egs_rspec is already this rank's), updating n in place.
 * Collective: every rank of comm must call it with the same options and a network of the same
 * structure. Returns 0 or -1 (error_set) on every rank alike (see above). */
int train_sync(struct nnet *n, const char *egs_rspec, const struct train_sync_options *o,
               const struct train_comm *comm, struct train_sync_stats *st);

/* Objective and accuracy of n on the examples (no update), in minibatches of minibatch_size. */
int eval_prob(struct nnet *n, const char *egs_rspec, int minibatch_size, struct train_stats *st);

/* Forward one utterance: feats (host, T x input_dim) padded at both ends by repeating the first and
 * last frame for the network's context; out (host, resized to T x output_dim) receives the output,
 * log-probabilities when apply_log (floored at 1e-20 before the log), probabilities otherwise. */
void forward_utterance(struct nnet *n, const struct matrix *feats, int apply_log,
                       struct matrix *out);

/* ---- averaging ---- */
/* Weighted average of the models' parameter blocks, streaming: at most two models in memory.
 * weights: num values (renormalised to sum 1; NULL = uniform). Everything but the parameters
 * (learning rates, fixed components) comes from the first model. Structures must match. */
struct nnet *average_model_files(const char *const *rxfilenames, int num, const float *weights);

/* Job-level agreement. changes[j] = model_j - previous; the consensus is their weighted mean c.
 * Job j is kept when cosine_distance(changes[j], c) <= tau. keep[j] (0/1) and distance[j] (may be
 * NULL) are filled; returns the number kept. Sum_j w_j <c_j, c> = |c|^2 >= 0, so with tau >= 1 at
 * least one job is kept unless every change is zero. */
int agreement_select(const struct vector *changes, int num, const float *weights, float tau,
                     int *keep, double *distance);
/* The file form, streaming (previous, consensus and one job in memory): the weighted average of
 * the jobs kept by agreement_select against previous_rxfilename. Logs each job's distance and
 * which were left out; if none is kept the previous model is returned (the step is skipped).
 * *num_kept (may be NULL) receives the count. */
struct nnet *average_model_files_agreement(const char *const *rxfilenames, int num,
                                           const float *weights, const char *previous_rxfilename,
                                           float tau, int *num_kept);
/* EASGD's centre update, x~ <- x~ + alpha sum_i (x_i - x~), over files (streaming); alpha = 1/num
 * gives the plain average. Structures must match the centre's. */
struct nnet *elastic_center_files(const char *center_rxfilename, const char *const *rxfilenames,
                                  int num, float alpha);

/* ---- combination (Kaldi nnet-combine-fast) ---- */
struct combine_options {
    int num_iters;            /* L-BFGS iterations (20) */
    int minibatch_size;       /* for the objective's passes (1024) */
    int max_examples;         /* examples kept in memory from the validation archive (10000) */
};
void combine_options_default(struct combine_options *o);
/* One weight per (model, updatable component), found by L-BFGS maximising the average
 * log-probability on the validation examples, starting from the plain average. The result is never
 * worse on that objective than the best of the inputs and their average (the best of these is
 * returned if the search does not beat it). Logs the weights and the objective. */
struct nnet *combine_models(struct nnet *const *models, int num, const char *valid_rspec,
                            const struct combine_options *o);

/* ---- TWA: trainable weight averaging (Li et al., ICLR 2023) ---- */
/* Modified Gram-Schmidt in double over num vectors of length dim (rows of v, row-major, in place):
 * on return rows 0..k-1 are orthonormal, spanning the input rows, k is returned. A row whose
 * remaining norm is below 1e-9 of its original norm is dropped as linearly dependent. */
int gram_schmidt(double *v, int num, int dim);
/* alpha = P x (k values) and x = P^T alpha, P being k orthonormal rows of length dim. */
void basis_project(const double *p, int k, int dim, const double *x, double *alpha);
void basis_expand(const double *p, int k, int dim, const double *alpha, double *x);

struct twa_options {
    int num_epochs;           /* passes over the examples (10) */
    float learning_rate;      /* on the per-frame average log-probability (0.5) */
    float momentum;           /* heavy ball (0.9) */
    int minibatch_size;       /* (256) */
    int max_examples;         /* kept in memory (10000) */
    const char *train_rspec;  /* NULL: fit on the validation examples (TWA-v), else on these */
};
void twa_options_default(struct twa_options *o);
/* Orthonormal basis of the models' parameter blocks (Gram-Schmidt in double), start at their
 * mean, then gradient ascent on the coefficients alpha with the projected gradient P g; returns
 * the best of (mean, trained) on the validation examples (always the trained one when fitting on
 * the validation examples and it improved). */
struct nnet *twa_combine(struct nnet *const *models, int num, const char *valid_rspec,
                         const struct twa_options *o);

/* ---- input normalisation (nnet-get-feature-transform; Kaldi nnet2's get_lda.sh) ---- */
enum train_transform_type {
    TRAIN_TRANSFORM_MEANVAR, /* x -> (x - mean) / stddev per dimension (a constant one: centred) */
    TRAIN_TRANSFORM_LDA,     /* LDA on frames spliced with left/right context: the rows, largest
                              * between-class variance first, decorrelate the within-class
                              * covariance; each output dimension has unit total variance */
};
struct train_transform_options {
    enum train_transform_type type;
    int left_context, right_context; /* LDA: frames spliced around each frame (edges repeated) */
    int dim;                          /* LDA: output dimension (0: all) */
};
void train_transform_options_default(struct train_transform_options *o);
/* Statistics of every frame of feats_rspec (labels_rspec: per-frame int32 labels, LDA only; an
 * utterance without matching labels is left out with a warning) -> *out (host, matrix_init'ed):
 * the (out x in + 1) matrix [A | b] of a FixedAffineComponent's matrix=F, y = A x + b. *num_frames
 * (may be NULL) receives the frames used. Returns 0, or -1 (error_set: file, key, reason). */
int train_get_feature_transform(const char *feats_rspec, const char *labels_rspec,
                                const struct train_transform_options *o, struct matrix *out,
                                long long *num_frames);

#endif
