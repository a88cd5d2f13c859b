/* params mode of train_sync (train.h: TRAIN_SYNC_PARAMS): local SGD with periodic averaging, block
 * momentum on the averages (update.h), post-local SGD's synchronous warm-up, and hierarchical
 * averaging within groups. */
#include "train/train-internal.h"

#include <string.h>

struct params_mode {
    struct vector start, velocity; /* BMUF: S, the block's start, and m; dim 0 when off */
    float eta;
    long long step;                /* the run's minibatches so far (minibatch_offset included) */
    int since_average, since_group;
};

/* The group's shape and the block momentum's state. */
static int params_init(struct sync_run *r) {
    struct params_mode *pm = r->mode;
    const struct train_sync_options *o = r->o;
    const struct train_comm *c = r->comm;
    pm->step = o->minibatch_offset;
    if (o->group_size > 1 &&
        (c->size % o->group_size || !c->group || c->group->size != o->group_size ||
         c->group->rank != c->rank % o->group_size))
        return error_set("--group-size=%d: must divide the %d ranks", o->group_size, c->size);
    if (!o->bmuf.on) return 0;
    struct vector p = nnet_params(r->n);
    vector_init(&pm->start, p.dim);
    vector_copy(&pm->start, &p);
    vector_init(&pm->velocity, p.dim);
    pm->eta = bmuf_resolve_momentum(&o->bmuf, c->size);
    if (!o->bmuf_state_rxfilename) return 0;
    return train_sync_agree(c, bmuf_state_read(o->bmuf_state_rxfilename, &pm->velocity, c->size,
                                               o->bmuf.nesterov), "read");
}

static void params_release(struct sync_run *r) {
    struct params_mode *pm = r->mode;
    vector_release(&pm->start);
    vector_release(&pm->velocity);
}

/* The average over all ranks, through block momentum when on. */
static int params_average(struct sync_run *r) {
    struct params_mode *pm = r->mode;
    const struct train_sync_options *o = r->o;
    struct vector params = nnet_params(r->n);
    pm->since_average = pm->since_group = 0;
    if (train_sync_exchange(r->comm, &params, 1.0f / (float)r->comm->size, r->st)) return -1;
    if (!o->bmuf.on) return 0;
    bmuf_update(&pm->start, &pm->velocity, &params, pm->eta, o->bmuf.learning_rate,
                o->bmuf.nesterov);
    vector_copy(&params, &pm->start);
    return 0;
}

/* post-local SGD's warm-up: the mean of the ranks' steps, applied everywhere */
static int warmup_minibatch(struct sync_run *r, double weight) {
    struct params_mode *pm = r->mode;
    struct vector params = nnet_params(r->n), delta = train_sync_step(r, weight);
    if (train_sync_exchange(r->comm, &delta, 1.0f / (float)r->comm->size, r->st)) return -1;
    if (momentum_apply_filtered(&r->mom, r->n, &delta)) r->st->local.num_skipped++;
    r->st->num_warmup_steps++;
    pm->since_average = pm->since_group = 0;
    if (pm->start.dim) vector_copy(&pm->start, &params); /* the next block starts here */
    return train_sync_checked(r, r->comm, "after the warm-up step",
                              r->st->local.num_minibatches - 1);
}

static int params_minibatch(struct sync_run *r, const struct egs_minibatch *mb, double weight) {
    struct params_mode *pm = r->mode;
    const struct train_sync_options *o = r->o;
    const long long at = r->st->local.num_minibatches - 1;
    if (pm->step++ < o->warmup_steps) return warmup_minibatch(r, weight);
    if (momentum_backward_update(&r->mom, r->n, r->deriv, weight)) r->st->local.num_skipped++;
    pm->since_average++;
    pm->since_group++;
    if (o->average_every > 0 && pm->since_average == o->average_every) {
        if (params_average(r)) return -1;
        return train_sync_checked(r, r->comm, "after averaging at minibatch", at);
    }
    if (o->group_size > 1 && pm->since_group == o->group_average_every) {
        pm->since_group = 0;
        r->st->num_group_averages++;
        struct vector params = nnet_params(r->n);
        if (train_sync_exchange(r->comm->group, &params, 1.0f / (float)o->group_size, r->st))
            return -1;
        return train_sync_checked(r, r->comm->group,
                                  "within the group after averaging at minibatch", at);
    }
    return 0;
}

/* Leave every copy equal to the average; rank 0 writes m (the same on every rank). */
static int params_end(struct sync_run *r) {
    struct params_mode *pm = r->mode;
    const struct train_sync_options *o = r->o;
    const struct train_comm *c = r->comm;
    if (pm->since_average > 0 &&
        (params_average(r) || train_sync_checked(r, c, "after the final average at minibatch",
                                                 r->st->local.num_minibatches)))
        return -1;
    if (!o->bmuf.on || !o->bmuf_state_wxfilename) return 0;
    return train_sync_agree(c,
                            c->rank ? 0
                                    : bmuf_state_write(o->bmuf_state_wxfilename, &pm->velocity,
                                                       c->size, pm->eta, o->bmuf.learning_rate,
                                                       o->bmuf.nesterov),
                            "write");
}

const struct sync_mode_ops sync_params_ops = {
    .exchanged = "parameters", .state_size = sizeof(struct params_mode), .init = params_init,
    .minibatch = params_minibatch, .end = params_end, .release = params_release};
