/* Private to src/train: what the loops share: the minibatch source, loop and set (below), GAF's
 * step on a network (gaf-step.c: train_sgd's M microbatches in sequence, train_sync's
 * microbatches of all ranks), and inside train_sync its collectives, a rank's state file
 * (sync-state.c) and the modes' table (struct sync_mode_ops).
 */
#ifndef PARNET_TRAIN_TRAIN_INTERNAL_H
#define PARNET_TRAIN_TRAIN_INTERNAL_H

#include "train/train.h"

/* ---- minibatch: what every loop over minibatches shares, in one place (the loops train_sgd,
 * train_eval_prob, train_sync; the in-memory set, for combine and TWA, is in train.h).
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

/* GAF's step, shared by train_sgd (M microbatches in sequence) and train_sync (microbatches of
 * all ranks, gathered): gaf_begin, then train_gaf_offer for every microbatch in a fixed order, then
 * train_gaf_finish. Each microbatch's vector is nnet_delta(n) after nnet_backward with
 * train_gaf_backward_mode(o): its raw gradient, or its step with --gaf-on=step. */
enum nnet_backward_mode train_gaf_backward_mode(const struct train_options *o);
/* gaf_offer, logging the distance at verbose level 2; returns 1 if taken. */
int train_gaf_offer(struct gaf *g, const struct vector *micro);
/* Close the step and gaf_begin the next. A lone microbatch (nothing to agree with: the end of the
 * data) is dropped without counting a step; if nothing agreed with the anchor, the step counts as
 * skipped; else num_accepted x the fusion is applied with nnet_apply_step (steps) or
 * nnet_apply_gradient (gradients), or, when m is on (momentum/weight decay), through
 * momentum_apply_* with frames = frames_per_micro x num_accepted. Returns 1 if an update was
 * attempted, *skipped then being 1 if the network refused it as non-finite; 0 otherwise. The
 * caller counts num_updates/num_skipped. */
int train_gaf_finish(struct gaf *g, struct nnet *n, const struct train_options *o,
                     struct train_stats *st, int *skipped, struct momentum *m,
                     double frames_per_micro);

/* ---- inside train_sync: the state the loop (sync.c) shares with its modes ---- */
struct sync_run {
    struct nnet *n;
    const struct train_sync_options *o;
    const struct train_comm *comm;
    struct train_sync_stats *st;
    const struct sync_mode_ops *ops;
    struct momentum mom;        /* every mode's last stage (update.h) */
    const struct matrix *deriv; /* the minibatch's output derivative, after the scoring */
    float *scratch;             /* the host copy of the parameters that the checks hash */
    void *mode;                 /* the mode's own state: ops->state_size bytes, zeroed (or NULL) */
    double start;               /* time_now() at the start of the pass */
};

/* A synchronous mode as a table (one file each): what train_sync's loop calls. Every operation
 * is collective (the same calls on every rank) and returns 0, or -1 with error_set on every rank.
 * Only minibatch is required; a NULL operation does nothing.
 *   init: its own state, collective checks (before this rank's state file is read into it);
 *   minibatch: one minibatch after its forward and scoring (label weight w): the backward, the
 *     update, and the exchanges that fall on it; the local counts in r->st->local;
 *   end: the pass ended at the same minibatch on every rank: the last exchange;
 *   result: after this rank's state was written: set the network to the mode's model;
 *   release: free the mode's state (also after a failure);
 *   state: what of its state goes into the state file (sync-state.c; NULL: only the velocity). */
struct sync_state;
struct sync_mode_ops {
    const char *exchanged; /* what its all-reduces carry, for nnet-train-mpi's summary */
    size_t state_size;
    int (*init)(struct sync_run *r);
    int (*minibatch)(struct sync_run *r, const struct egs_minibatch *mb, double weight);
    int (*end)(struct sync_run *r);
    int (*result)(struct sync_run *r);
    void (*release)(struct sync_run *r);
    void (*state)(struct sync_run *r, struct sync_state *s);
};

/* What a mode keeps in a rank's state file besides the momentum's velocity: replica, the network's
 * parameters (elastic, Parle); Parle's vectors and inner-step counter (NULL: stored empty, or 0). */
struct sync_state {
    int replica;
    struct vector *anchor, *ema, *outer_velocity;
    long long *t;
};
/* This rank's state (train.h: train_sync_options.state_*): 0, or -1 with error_set. Reading
 * checks the mode and every vector's size, and sets the network to the stored replica. */
int train_sync_write_state(struct sync_run *r, const char *wxfilename);
int train_sync_read_state(struct sync_run *r, const char *rxfilename);

/* The minibatch's step after the backward (nnet_delta), with this rank's weight decay (label
 * weight w). */
struct vector train_sync_step(struct sync_run *r, double weight);
/* The result of the replica modes (elastic, Parle): the network set to the centre, the same on
 * every rank (checked with check_sync). Collective. */
int train_sync_set_centre(struct sync_run *r, const struct vector *centre);
/* Apply a local step through momentum (update.h), counted as an update or as skipped. */
void train_sync_apply(struct sync_run *r, struct vector *step);
/* sync-params.c (local SGD, block momentum, post-local warm-up, groups), sync-steps.c (summed
 * steps), sync-gaf.c (GAF across ranks), sync-elastic.c (EASGD), sync-parle.c (Parle). */
extern const struct sync_mode_ops sync_params_ops, sync_steps_ops, sync_gaf_ops,
    sync_elastic_ops, sync_parle_ops;

/* Sum v over ranks in place (one all-reduce, timed and counted in st), then scale it. */
int train_sync_exchange(const struct train_comm *c, struct vector *v, float scale,
                        struct train_sync_stats *st);
/* With check_sync: 0 if every rank of c holds bitwise the same parameters, else -1 (error_set
 * naming when and the minibatch). Without: 0. Collective. */
int train_sync_checked(struct sync_run *r, const struct train_comm *c, const char *when,
                       long long minibatch);
/* Every rank's status of a local operation (0, or -1 with error_set): 0 if all succeeded, else
 * -1 on every rank, the failing ones with their own error, the others saying another failed to
 * `what` its state. Collective. */
int train_sync_agree(const struct train_comm *c, int status, const char *what);

#endif
