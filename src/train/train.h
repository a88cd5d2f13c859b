/* train: the training and evaluation loops over example archives (nnet-train, nnet-compute-prob,
 * nnet-forward), their options, and the option group the trainers' programs share.
 *
 * src/train, by concept (one header each, contract at the top):
 *   loops       train.h (this: train_sgd, train_eval_prob, train_forward_utterance; the options
 *               and their command-line group), sync.h (train_sync: synchronous data-parallel
 *               training over a caller-supplied all-reduce, nnet-train-mpi), minibatch.h
 *               (internal: reading ahead, the per-minibatch checks, scoring and progress every
 *               loop shares, the in-memory set of combine and TWA)
 *   rules       gaf.h (gradient agreement filtering), momentum.h (momentum and weight decay),
 *               elastic.h (the proximal/elastic pull and the EMA of EASGD, Parle, Entropy-SGD)
 *   model-level average.h (weighted, agreement-filtered and elastic-centre averages of model
 *               files), combine.h (Kaldi's nnet-combine-fast: L-BFGS weights), twa.h (trainable
 *               weight averaging), feature-transform.h (input normalisation: mean/variance, LDA)
 * Every rule is a vector operation over the whole parameter block (docs/STYLE.md §3).
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
 *   GAF (gaf.h; Chaubard et al., arXiv 2412.18052): one update per M microbatches at the same
 *     parameters, from those that agree with the first.
 *   The proximal pull toward a reference model (EASGD's worker step, elastic.h) and Entropy-SGD's
 *     inner loop (Chaudhari et al., ICLR 2017, arXiv 1611.01838): an EMA of SGLD iterates.
 *   Momentum and weight decay (momentum.h) on every update, GAF's fused one included.
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
#include "train/gaf.h"

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
    /* Momentum and weight decay (momentum.h), 0: off. With either on, train_sgd takes
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
 * With sync set (nnet-train-mpi; sync.h's train_sync_cli), the texts speak of ranks, --momentum
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

/* Forward one utterance: feats (host, T x input_dim) padded at both ends by repeating the first and
 * last frame for the network's context; out (host, resized to T x output_dim) receives the output,
 * log-probabilities when apply_log (floored at 1e-20 before the log), probabilities otherwise. */
void train_forward_utterance(struct nnet *n, const struct matrix *feats, int apply_log,
                             struct matrix *out);

#endif
