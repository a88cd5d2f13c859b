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

/* ---- training ---- */
struct train_options {
    int minibatch_size;       /* examples per minibatch (512) */
    uint64_t srand;           /* seeds the network's random draws (Dropout) */
    int progress_every;       /* a progress line every this many minibatches (0: none) */
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
 * The natural-gradient state is never communicated: it stays local to each rank in both modes.
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

enum train_sync_mode { TRAIN_SYNC_PARAMS = 0, TRAIN_SYNC_STEPS = 1 };

struct train_sync_options {
    struct train_options train; /* minibatch size, srand (+ rank for each rank), progress */
    enum train_sync_mode mode;
    int average_every;          /* K >= 1 (params mode), or 0: average only at the end */
    int check_sync;             /* compare the ranks' parameters after every exchange */
};
void train_sync_options_default(struct train_sync_options *o);

struct train_sync_stats {
    struct train_stats local;   /* this rank's examples */
    struct train_stats total;   /* summed over ranks (seconds: the slowest rank's) */
    long long num_exchanges;    /* parameter averages (params) or step sums (steps) */
    long long num_stopped_early; /* ranks that still had examples when the pass ended */
    long long num_close_failed; /* ranks whose archive failed on closing (then -1 everywhere) */
    double exchange_bytes;      /* payload of the parameter/step all-reduces, per rank */
    double exchange_seconds;    /* in those all-reduces (includes waiting for slower ranks) */
    double flag_seconds;        /* in the per-minibatch "have data" all-reduce */
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

#endif
