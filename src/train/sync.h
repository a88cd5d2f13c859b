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
 *   Momentum (train.momentum, nesterov, weight_decay: momentum.h) applies in every
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
 * (train-internal.h: struct sync_mode_ops; sync-params.c, sync-steps.c, sync-gaf.c, and
 * sync-replica.c for EASGD and Parle), the GAF step is shared with train_sgd (gaf-step.c), the
 * checks and progress of every minibatch are minibatch.h's. The choice between the momentum
 * stage and the network's plain update is momentum.h's alone.
 */
#ifndef PARNET_TRAIN_SYNC_H
#define PARNET_TRAIN_SYNC_H

#include "train/bmuf.h"
#include "train/train.h"

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
     *   bmuf.on: block momentum (bmuf.h) on every average over all ranks, a block being the
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
    struct bmuf_cli bmuf;       /* --bmuf ...: bmuf.h; state_in/out: o->bmuf_state_* */
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
