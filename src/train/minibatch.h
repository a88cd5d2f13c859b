/* minibatch: what every loop over minibatches shares, in one place. Internal to src/train (the
 * loops train_sgd, train_eval_prob, train_sync; combine and TWA through the in-memory set).
 *
 *   minibatch_source: examples -> minibatches on a reading thread (base.h's prefetch: the next
 *     minibatch is read, decoded and assembled while the current one computes).
 *   minibatch_loop: the per-minibatch bookkeeping of a pass: the checks of a minibatch against
 *     the network (input dimension, labels), the forward pass from the input on the right device,
 *     the scoring (objective, derivative, accuracy) into the pass's train_stats, the progress
 *     line every N minibatches and the divergence warning. A loop's body is then
 *     check -> forward -> score -> its own update -> progress.
 *   minibatch_set: minibatches held in memory (validation examples for nnet-combine and TWA),
 *     loaded once (with the same checks) and passed over many times.
 *
 * Objective (Kaldi nnet2): weighted cross-entropy, sum over labels of w * log p(label); the
 * gradient is SUMMED over the minibatch, so learning rates are per sample. Accuracy counts a
 * label's weight as correct when the output row's argmax equals the label index.
 *
 * Errors: 0, or -1 with error_set naming the archive ("'egs.ark': label 12 out of range ..."). */
#ifndef PARNET_TRAIN_MINIBATCH_H
#define PARNET_TRAIN_MINIBATCH_H

#include "train/train.h"

/* ---- source: examples -> minibatches, read ahead on a thread ---- */
struct minibatch_source;
/* Open egs_rspec (a table of examples) and start the reading thread. left/right: the network's
 * context, to which each example's surplus context is trimmed. NULL with error_set on failure. */
struct minibatch_source *minibatch_source_new(const char *egs_rspec, int minibatch_size,
                                              int left, int right);
/* The next minibatch (valid until the next call): 1, 0 at the end, -1 on error. */
int minibatch_source_next(struct minibatch_source *s, const struct egs_minibatch **mb);
/* Stops the thread and closes the archive; returns -1 if closing reported an error. */
int minibatch_source_free(struct minibatch_source *s);

/* ---- the per-minibatch bookkeeping of a pass ---- */
struct minibatch_loop {
    struct nnet *n;
    const char *rspec;       /* named in errors */
    struct train_stats *st;  /* the pass's totals (minibatch_loop_score adds to them) */
    struct matrix deriv;     /* d objective / d output of the last scored minibatch */
    struct matrix dev_input; /* the input copied to the device (GPU runs) */
    int *argmax, argmax_cap;
    /* progress: a line every `every` minibatches (0: none), `who` after the range ("" or
     * " (rank 0)"); with warn, the divergence warning at each line and at the end */
    int every, warn;
    const char *who;
    double phase_objf, phase_weight, phase_correct, phase_start;
    long long phase_first;
};
void minibatch_loop_init(struct minibatch_loop *l, struct nnet *n, const char *rspec,
                         struct train_stats *st, int progress_every, const char *who, int warn,
                         double start);
void minibatch_loop_release(struct minibatch_loop *l);
/* The minibatch's input dimension and labels against the network: 0, or -1 (error_set). */
int minibatch_check(const struct egs_minibatch *mb, const struct nnet *n, const char *rspec);
/* nnet_forward of the minibatch (its input copied to the device first when there is one). */
const struct matrix *minibatch_loop_forward(struct minibatch_loop *l,
                                            const struct egs_minibatch *mb, int training);
/* Objective, derivative (into l->deriv) and accuracy of the last forward (out) against the
 * minibatch's labels, added to l->st and to the progress phase; *objf and *weight (may be NULL)
 * receive this minibatch's. */
void minibatch_loop_score(struct minibatch_loop *l, const struct matrix *out,
                          const struct egs_minibatch *mb, double *objf, double *weight);
/* After the minibatch's update: the progress line (and the divergence warning) when due. */
void minibatch_loop_progress(struct minibatch_loop *l);
/* The end of a pass: the divergence warning over the whole pass (with warn). */
void minibatch_loop_finish(struct minibatch_loop *l);

/* The minibatch input where the network computes: the host matrix itself on the CPU, else a copy
 * in dev (on the device, kept between minibatches). */
const struct matrix *minibatch_input_on_device(const struct egs_minibatch *mb, struct matrix *dev);

/* ---- a set of minibatches held in memory ---- */
struct minibatch_set {
    struct egs_minibatch *mbs; /* (num) host copies */
    int num, num_egs;
    double total_weight; /* sum of label weights */
};
/* Read up to max_examples examples of rspec in minibatches of minibatch_size, trimmed to n's
 * context, checked by minibatch_check. 0, or -1 with error_set (the set is then still released
 * by minibatch_set_release). */
int minibatch_set_load(struct minibatch_set *s, const char *rspec, int minibatch_size,
                       int max_examples, struct nnet *n);
void minibatch_set_release(struct minibatch_set *s);
/* Forward minibatch b of the set through n (copied to the device when there is one); returns the
 * objective sum and leaves d objective / d output in deriv. */
double minibatch_set_forward(struct minibatch_set *s, int b, struct nnet *n,
                             struct matrix *dev_input, struct matrix *deriv);

#endif
