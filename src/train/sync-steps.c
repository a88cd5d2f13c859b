/* gradients mode of train_sync (train.h: TRAIN_SYNC_STEPS without GAF): every minibatch the ranks'
 * steps are summed and every rank applies the sum. */
#include "train/train-internal.h"

static int steps_minibatch(struct sync_run *r, const struct egs_minibatch *mb, double weight) {
    /* each rank's own decay before the sum: the sum decays by the total weight */
    struct vector delta = train_sync_step(r, weight);
    if (train_sync_exchange(r->comm, &delta, 1, r->st)) return -1;
    if (momentum_apply_filtered(&r->mom, r->n, &delta)) r->st->local.num_skipped++;
    return train_sync_checked(r, r->comm, "after the step of minibatch",
                              r->st->local.num_minibatches - 1);
}

const struct sync_mode_ops sync_steps_ops = {.exchanged = "steps", .minibatch = steps_minibatch};
