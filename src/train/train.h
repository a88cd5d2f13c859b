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
