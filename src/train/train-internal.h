/* Private to src/train: the pieces the two training loops share beyond minibatch.h: GAF's step
 * on a network (gaf-step.c: train_sgd's M microbatches in sequence, train_sync's microbatches of
 * all ranks), the exchange of train_sync, and the Parle / EASGD state of a rank (sync-replica.c).
 */
#ifndef PARNET_TRAIN_TRAIN_INTERNAL_H
#define PARNET_TRAIN_TRAIN_INTERNAL_H

#include "train/minibatch.h"
#include "train/momentum.h"
#include "train/sync.h"
#include "train/train.h"

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

/* Sum v over ranks in place (one all-reduce, timed and counted in st), then scale it. */
int train_sync_exchange(const struct train_comm *c, struct vector *v, float scale,
                        struct train_sync_stats *st);

/* Parle / EASGD state of one rank inside train_sync (sync-replica.c; the maths is in sync.h). The
 * network holds the replica (EASGD's x, Parle's inner iterate y). Per minibatch: form the step,
 * train_replica_couple (Parle's gamma term), apply it, train_replica_after_step, and
 * train_replica_exchange when that returned 1; at the end train_replica_finish sets the network
 * to the centre (after a last exchange). Outside these two modes every call does nothing. */
struct train_replica {
    enum train_sync_mode mode;
    struct vector center;         /* EASGD's c, Parle's x~: the same on every rank */
    struct vector anchor, ema;    /* Parle: x^a, z^a */
    struct vector outer_velocity; /* Parle: the outer loop's momentum */
    struct vector scratch;
    long long t;                  /* Parle: inner steps, the scoping counter */
    int scope_k;                  /* Parle: the counter's advance per inner step */
    int count;                    /* minibatches since the last exchange */
    double round_weight;          /* Parle: label weight of those minibatches */
    double gamma, rho;            /* Parle: the couplings last computed */
};
void train_replica_init(struct train_replica *r, struct nnet *n,
                        const struct train_sync_options *o);
void train_replica_release(struct train_replica *r);
void train_replica_couple(struct train_replica *r, struct nnet *n,
                          const struct train_sync_options *o, int size, struct vector *step,
                          double weight);
int train_replica_after_step(struct train_replica *r, struct nnet *n,
                             const struct train_sync_options *o, double weight);
int train_replica_exchange(struct train_replica *r, struct nnet *n,
                           const struct train_sync_options *o, const struct train_comm *c,
                           struct train_sync_stats *st);
/* The last exchange (if minibatches were taken since the previous one), then the network is set
 * to the centre. Split in two so that the state can be written in between. */
int train_replica_last_exchange(struct train_replica *r, struct nnet *n,
                                const struct train_sync_options *o, const struct train_comm *c,
                                struct train_sync_stats *st);
void train_replica_finish(struct train_replica *r, struct nnet *n,
                          const struct train_sync_options *o, const struct train_comm *c,
                          struct train_sync_stats *st);
/* This rank's state (sync.h: train_sync_options.state_*): 0, or -1 with error_set. Reading
 * sets the network to the stored replica (elastic, Parle) and loads the vectors and t. */
int train_replica_write_state(struct train_replica *r, struct momentum *m,
                              struct nnet *n, const char *wxfilename);
int train_replica_read_state(struct train_replica *r, struct momentum *m,
                             struct nnet *n, const char *rxfilename);

#endif
