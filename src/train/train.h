/* train: the loops over example archives: training (train_sgd: nnet-train; train_sync:
 * nnet-train-mpi, below), evaluation (train_eval_prob: nnet-compute-prob), inference
 * (train_forward_utterance: nnet-forward); their options and the command-line groups the
 * trainers share; the in-memory set of minibatches that the model-file operations score on.
 * The update rules they apply are update.h's (GAF, momentum, the elastic pull, block momentum);
 * averaging and combining model files is models.h's.
 *
 * Objective (Kaldi nnet2): weighted cross-entropy, sum over labels of w * log p(label); the
 * gradient is SUMMED over the minibatch, so learning rates are per sample. Accuracy counts a
 * label's weight as correct when the output row's argmax equals the label index.
 *
 * Reading ahead. train_sgd and train_eval_prob read examples and assemble minibatches (decoding
 * stored inputs) on a second thread, so the next minibatch is ready while the current one
 * computes.
 *
 * Beyond plain SGD, train_sgd runs (each off by default):
 *   GAF (update.h; Chaubard et al., arXiv 2412.18052): one update per M microbatches at the same
 *     parameters, from those that agree with the first.
 *   The proximal pull toward a reference model (EASGD's worker step, update.h's elastic) and
 *     Entropy-SGD's inner loop (Chaudhari et al., ICLR 2017, arXiv 1611.01838): an EMA of SGLD
 *     iterates.
 *   Momentum and weight decay (update.h's momentum) on every update, GAF's fused one included.
 *
 * Errors: functions return 0, or -1 with error_set (bad input: file, key and reason); they never
 * exit. A non-finite step is skipped by the network (counted in num_skipped), never applied.
 *
 * Inside (train-internal.h): minibatch-source.c, minibatch-loop.c, minibatch-set.c (what every
 * loop over minibatches shares), sgd.c, options.c, gaf-step.c (GAF's step on a network, shared
 * by both trainers), sync.c and one file per synchronous mode (see the sync section).
 */
#ifndef PARNET_TRAIN_TRAIN_H
#define PARNET_TRAIN_TRAIN_H

#include <stdint.h>

#include "base/base.h"
#include "egs/egs.h"
#include "nnet/nnet.h"
#include "update/update.h"

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
     * every update (every outer update under Entropy-SGD) x <- x - proximal_coupling (x - ref)
     * (elastic_pull). */
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
    /* Momentum and weight decay (update.h), 0: off. With either on, train_sgd takes
     * each update as a step (NNET_STEP, or GAF's fused update turned into one), adds the decay,
     * filters it through the velocity and applies it with nnet_apply_step (max-change clips the
     * filtered step; the velocity keeps the unclipped one, as Kaldi's delta_nnet). */
    float momentum;           /* mu in [0, 1) */
    int nesterov;             /* 1: Nesterov's form of the filter */
    float weight_decay;       /* lambda: L2 penalty lambda/2 |theta|^2 per frame */
    /* A running average of the model (icefall's model_avg; off when average_period is 0): after
     * every average_period-th minibatch, average_model (the caller's network of the same
     * structure, holding the mean of *average_count earlier snapshots) becomes the mean of those
     * and the current model: avg <- avg + (x - avg) / (count + 1), count + 1. With count 0 at the
     * start it is the mean of the snapshots at minibatches P, 2P, ... of this pass, as icefall's
     * update with weight P / batch_idx_train. */
    int average_period;
    struct nnet *average_model;
    long long *average_count;
};
void train_options_default(struct train_options *o);

/* ---- the trainers' command-line options (Kaldi's Register(&po)) ----
 * nnet-train and nnet-train-mpi share these groups: train_cli_register puts their entries into the
 * program's option table, bound to a struct train_options and to the string and program values
 * of struct train_cli; after options_parse, train_cli_check turns the strings into o's enums and
 * checks every range (one message naming the option: the program dies with it, exit 1) but those
 * of the matrix_cli part (--num-threads, --precision, --use-gpu), which matrix_cli_apply checks
 * as it applies them (both trainers call it).
 *   TRAIN_CLI_COMMON    --minibatch-size, --srand, --num-threads, --precision, --use-gpu,
 *                       --minibatches-per-phase, --max-change, --binary
 *   TRAIN_CLI_GAF       --gaf-microbatches, --gaf-threshold, --gaf-fusion, --gaf-on, --gaf-scale
 *   TRAIN_CLI_PROXIMAL  --proximal-model, --proximal-coupling, --entropy-* (train_sgd only)
 *   TRAIN_CLI_MOMENTUM  --momentum, --nesterov, --weight-decay
 *   TRAIN_CLI_AVERAGE   --average-period, --average-in, --average-count, --average-out (the
 *                       program reads and writes the files: train_sgd only)
 * With sync set (nnet-train-mpi; train.h's train_sync_cli), the texts speak of ranks, --momentum
 * defaults to -1 (by mode: train_sync_cli_check resolves it) and --nesterov is true|false|auto. */
enum {
    TRAIN_CLI_COMMON = 1,
    TRAIN_CLI_GAF = 2,
    TRAIN_CLI_PROXIMAL = 4,
    TRAIN_CLI_MOMENTUM = 8,
    TRAIN_CLI_AVERAGE = 16,
    TRAIN_CLI_ALL = 31,
    TRAIN_CLI_MAX_SPECS = 28, /* entries of all groups */
};
struct train_cli {
    struct train_options *o;
    int groups, sync;
    int srand, binary;
    float max_change;          /* global max-change (NNET_DEFAULT_MAX_CHANGE_GLOBAL; 0: none) */
    struct matrix_cli mc;      /* --num-threads, --use-gpu, --precision (matrix_cli_apply) */
    const char *gaf_fusion, *gaf_on, *gaf_scale;
    const char *proximal;      /* --proximal-model ("" none) */
    const char *nesterov;      /* sync: true|false|auto */
    const char *average_in, *average_out; /* "" when not given */
    int average_count;
};
/* Defaults into *c and *o (train_options_default); the entries of the groups into specs (room for
 * TRAIN_CLI_MAX_SPECS); returns their number. The pointers stay valid while *c and *o live. */
int train_cli_register(struct train_cli *c, struct train_options *o, int groups, int sync,
                       struct option_spec *specs);
/* The enums and o->srand from the strings, then the ranges of the registered groups (the
 * momentum group's only without sync: train_sync_cli_check checks it once the mode is known).
 * 0, or -1 with error_set naming the option. */
int train_cli_check(struct train_cli *c);

/* One pass of SGD (or NG-SGD, per component) over the examples, updating n in place. */
int train_sgd(struct nnet *n, const char *egs_rspec, const struct train_options *o,
              struct train_stats *st);

/* Objective and accuracy of n on the examples (no update), in minibatches of minibatch_size. */
int train_eval_prob(struct nnet *n, const char *egs_rspec, int minibatch_size,
                    struct train_stats *st);

/* BatchNorm's stored statistics of n recomputed from the examples: forward passes in training
 * mode (the minibatch's own statistics, as in training), each minibatch weighted by its share of
 * the examples, so that the stored mean and second moment become those of all the examples'
 * minibatches pooled. Needed after combining models (averages of different points of a run,
 * TWA, nnet-combine), whose stored statistics are not those of the combined network. Nothing
 * else of n changes. st: the training-mode objective and accuracy. -1 (error_set) for a model
 * without statistics, no examples or a bad archive. */
int train_recompute_stats(struct nnet *n, const char *egs_rspec, int minibatch_size,
                          struct train_stats *st);

/* Forward one utterance: feats (host, T x input_dim) padded at both ends by repeating the first and
 * last frame for the network's context; out (host, resized to T x output_dim) receives the output,
 * log-probabilities when apply_log (floored at 1e-20 before the log), probabilities otherwise. */
void train_forward_utterance(struct nnet *n, const struct matrix *feats, int apply_log,
                             struct matrix *out);

/* ---- a set of minibatches held in memory ---- */
struct minibatch_set {
    struct egs_minibatch *mbs; /* (num) host copies */
    int num, num_egs;
    double total_weight; /* sum of label weights */
    struct matrix dev_input, deriv; /* minibatch_set_forward's: the input on the device, and
                                     * d objective / d output of the last minibatch forwarded */
};
/* Read up to max_examples examples of rspec in minibatches of minibatch_size, trimmed to n's
 * context, checked by minibatch_check. 0, or -1 with error_set (the set is then still released
 * by minibatch_set_release). */
int minibatch_set_load(struct minibatch_set *s, const char *rspec, int minibatch_size,
                       int max_examples, struct nnet *n);
void minibatch_set_release(struct minibatch_set *s);
/* Forward minibatch b of the set through n (copied to the device when there is one); returns the
 * objective sum and leaves d objective / d output in s->deriv (for nnet_backward). */
double minibatch_set_forward(struct minibatch_set *s, int b, struct nnet *n);

/* ======== sync: synchronous data-parallel training (nnet-train-mpi) ======== */
/* sync: synchronous data-parallel training (nnet-train-mpi), a training loop beside train_sgd.
 *
 * N ranks each train a copy of the same network on their own examples and keep the copies in step
 * through collective operations that the caller supplies (struct train_comm): MPI in
 * nnet-train-mpi, NCCL for GPU buffers, threads in the unit tests. The library itself never links
 * against MPI.
 *
 * Modes (papers: Su & Chen, "Experiments on Parallel Training of Deep Neural Network using Model
 * Averaging", arXiv 1507.01239; PR-SGD: Yu, Yang, Zhu, AAAI 2019, arXiv 1807.06629; EASGD:
 * Zhang, Choromanska, LeCun, NIPS 2015, arXiv 1412.6651, in torch-distlearn's all-reduce form;
 * Parle: Chaudhari et al., arXiv 1707.00424, as ucla-vision/parle runs it):
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
 *   TRAIN_SYNC_ELASTIC: EASGD in the all-reduce form (torch-distlearn's AllReduceEA). Each
 *     rank runs local SGD on its replica x (with train.momentum/nesterov: EAMSGD) at the
 *     SINGLE-worker learning rate; every tau = average_every minibatches, delta = alpha (x - c),
 *     x <- x - delta, c <- c + sum over ranks of delta, c being the centre, which every rank holds
 *     (bitwise the same). At the end of the pass (after a last exchange if steps were taken
 *     since the previous one) every rank's network is set to the centre: that is the model.
 *   TRAIN_SYNC_PARLE: Parle, as the reference code runs it, in step units (maximising;
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
 *   Momentum (train.momentum, nesterov, weight_decay: update.h) applies in every
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
 *
 * Inside: sync.c is the loop every mode shares; each mode is a table of operations in its own file
 * (train-internal.h: struct sync_mode_ops; sync-params.c, sync-steps.c, sync-gaf.c, sync-elastic.c
 * and sync-parle.c; a rank's state file is sync-state.c), the GAF step is shared with train_sgd (gaf-step.c), the
 * checks and progress of every minibatch are train-internal.h's. The choice between the momentum
 * stage and the network's plain update is update.h's alone.
 */

enum comm_type { COMM_FLOAT, COMM_DOUBLE, COMM_INT64 };
enum comm_op { COMM_SUM, COMM_MIN, COMM_MAX };

struct train_comm {
    int rank, size;
    void *ctx;
    /* In place over all ranks: data[i] = op over ranks of data[i], count elements of type.
     * device: where data lives (MATRIX_GPU only for COMM_FLOAT and COMM_SUM); pass it on to
     * matrix_device_comm_sum, which sums device data there and leaves host data to the caller.
     * Every rank must receive bitwise the same result. Returns 0, or -1 (error_set). */
    int (*allreduce)(void *ctx, void *data, size_t count, enum comm_type type, enum comm_op op,
                     int device);
    /* The ranks of this rank's group for hierarchical averaging (train_sync_options.group_size:
     * ranks r with the same r / group_size, in rank order), or NULL. */
    const struct train_comm *group;
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
    /* Params mode beyond plain local SGD (docs/AVERAGING.md):
     *   bmuf.on: block momentum (update.h) on every average over all ranks, a block being the
     *     minibatches since the previous one; eta = bmuf_resolve_momentum(N ranks). m (the same on
     *     every rank) comes from bmuf_state_rxfilename (NULL: zero), and rank 0 writes it to
     *     bmuf_state_wxfilename at the end. The model in and out are the start models S.
     *   warmup_steps W: post-local SGD (Lin, Stich, Patel, Jaggi, ICLR 2020, arXiv 1808.07217;
     *     PyTorch's PostLocalSGDOptimizer): the run's first W minibatches (minibatch_offset of
     *     them in earlier passes) are synchronous, every rank applying the mean of the ranks'
     *     steps (at N x the single-process rate: gradients mode's summed step); local SGD after.
     *   group_size G > 1: hierarchical averaging (PyTorch's HierarchicalModelAverager): every
     *     group_average_every minibatches the G ranks of a group average (comm->group), every
     *     average_every all ranks do (the group counter restarts then). G must divide N; with
     *     ranks placed node by node, a group is a node. */
    const char *bmuf_state_rxfilename, *bmuf_state_wxfilename;
    struct bmuf_options bmuf;
    long long warmup_steps, minibatch_offset;
    int group_size, group_average_every;
};
void train_sync_options_default(struct train_sync_options *o);

/* nnet-train-mpi's options: train.h's groups (common, GAF, momentum; with sync texts) and the
 * modes' own (--mode, --average-every, --check-sync, --elastic-alpha, --parle-*, --state-in/out),
 * registered and checked as train_cli (train.h). After train_sync_cli_check, mode names the mode
 * ("params", "gradients", "elastic", "parle"), o->train.momentum and nesterov are resolved by mode
 * (-1: parle 0.9, elastic 0.99, else 0; auto: Nesterov in parle and elastic), and the ranges of
 * every mode are checked. state_in/state_out are the option strings (JOB not yet replaced). */
struct train_sync_cli {
    struct train_cli train;
    struct train_sync_options *o;
    const char *mode;
    int nb, step_offset;     /* parle_minibatches_per_epoch, parle_step_offset */
    const char *state_in, *state_out;
    struct bmuf_cli bmuf;       /* --bmuf ...: update.h; state_in/out: o->bmuf_state_* */
    int warmup_steps, minibatch_offset;
};
#define TRAIN_SYNC_CLI_MAX_SPECS (TRAIN_CLI_MAX_SPECS + 20 + BMUF_CLI_NUM_SPECS)
int train_sync_cli_register(struct train_sync_cli *c, struct train_sync_options *o,
                            struct option_spec *specs);
int train_sync_cli_check(struct train_sync_cli *c);

struct train_sync_stats {
    struct train_stats local;   /* this rank's examples */
    struct train_stats total;   /* summed over ranks (seconds: the slowest rank's; GAF counts and
                                 * num_updates: the same on every rank, taken once) */
    long long num_exchanges;    /* parameter averages (params), step sums or GAF gathers */
    long long num_group_averages, num_warmup_steps; /* params: hierarchical, post-local */
    long long num_stopped_early; /* ranks that still had examples when the pass ended */
    long long num_close_failed; /* ranks whose archive failed on closing (then -1 everywhere) */
    double exchange_bytes;      /* payload of the parameter/step all-reduces, per rank */
    double exchange_seconds;    /* in those all-reduces (includes waiting for slower ranks) */
    double flag_seconds;        /* in the per-minibatch "have data" all-reduce */
    double parle_gamma, parle_rho; /* Parle: the couplings at the end of the pass */
    long long parle_steps;      /* Parle: t at the end of the pass (offset included) */
};

/* Rank 0's log lines: the run's settings before the pass, the summary after a successful one
 * (its last line: log-prob-per-frame=X, for scripts). train_sync_exchanged: what the mode's
 * all-reduces carry ("parameters", "steps", ...). */
void train_sync_log_start(const struct train_sync_cli *c, int size, const struct nnet *n);
void train_sync_log_summary(const struct train_sync_options *o,
                            const struct train_sync_stats *st, int size, struct nnet *n);
const char *train_sync_exchanged(const struct train_sync_options *o);

/* One pass over this rank's examples (egs_rspec is already this rank's), updating n in place.
 * Collective: every rank of comm must call it with the same options and a network of the same
 * structure. Returns 0 or -1 (error_set) on every rank alike (see above). */
int train_sync(struct nnet *n, const char *egs_rspec, const struct train_sync_options *o,
               const struct train_comm *comm, struct train_sync_stats *st);

#endif
