/* GAF across ranks (train.h: TRAIN_SYNC_STEPS with train.gaf_microbatches = M >= 1). all holds
 * N x M slots of the block's size, slot r x M + j for rank r's j-th microbatch of the step; each
 * rank fills its own, the rest are zero, so the all-reduce sum is an all-gather (x + 0 = x:
 * bitwise). Every rank then offers the same vectors in the same order (rank 0's, then rank 1's,
 * ...) to the step of gaf-step.c and applies the same update. */
#include "train/train-internal.h"

#include <limits.h>

struct gaf_mode {
    struct gaf gaf;
    struct vector all;     /* the N x M gathered slots */
    int count;             /* this rank's microbatches of the step so far */
    double nominal_frames; /* per microbatch, the same everywhere */
};

static int gaf_mode_init(struct sync_run *r) {
    struct gaf_mode *g = r->mode;
    const int m = r->o->train.gaf_microbatches, dim = nnet_num_params(r->n);
    long long slots = (long long)r->comm->size * m * dim;
    if (slots > INT_MAX)
        return error_set("GAF: %d ranks x %d microbatches x %d parameters do not fit one "
                         "vector", r->comm->size, m, dim);
    vector_init(&g->all, (int)slots);
    gaf_init(&g->gaf, dim, r->o->train.gaf_threshold, r->o->train.gaf_fusion);
    g->nominal_frames = r->o->train.minibatch_size;
    return 0;
}

static void gaf_mode_release(struct sync_run *r) {
    struct gaf_mode *g = r->mode;
    if (g->all.dim) gaf_release(&g->gaf);
    vector_release(&g->all);
}

/* Gather the step's microbatches (count per rank), offer them in rank order, apply. */
static int gaf_mode_step(struct sync_run *r, const char *when, long long minibatch) {
    struct gaf_mode *g = r->mode;
    struct train_stats *ls = &r->st->local;
    if (train_sync_exchange(r->comm, &g->all, 1, r->st)) return -1;
    int dim = nnet_num_params(r->n), m = r->o->train.gaf_microbatches, skipped;
    gaf_begin(&g->gaf);
    for (int k = 0; k < r->comm->size; k++)
        for (int j = 0; j < g->count; j++) {
            struct vector slot = vector_range(&g->all, (k * m + j) * dim, dim);
            train_gaf_offer(&g->gaf, &slot);
        }
    if (train_gaf_finish(&g->gaf, r->n, &r->o->train, ls, &skipped, &r->mom, g->nominal_frames)) {
        if (skipped) ls->num_skipped++;
        else ls->num_updates++;
    }
    vector_set_zero(&g->all);
    g->count = 0;
    return train_sync_checked(r, r->comm, when, minibatch);
}

static int gaf_mode_minibatch(struct sync_run *r, const struct egs_minibatch *mb, double weight) {
    struct gaf_mode *g = r->mode;
    const int m = r->o->train.gaf_microbatches;
    struct vector delta = nnet_delta(r->n);
    g->nominal_frames = (double)r->o->train.minibatch_size * mb->frames_per_eg;
    nnet_backward(r->n, r->deriv, train_gaf_backward_mode(&r->o->train));
    struct vector slot = vector_range(&g->all, (r->comm->rank * m + g->count) * delta.dim,
                                      delta.dim);
    vector_copy(&slot, &delta);
    if (++g->count < m) return 0;
    return gaf_mode_step(r, "after the GAF step of minibatch", r->st->local.num_minibatches - 1);
}

/* Every rank stopped at the same minibatch, so a short last step is short everywhere. */
static int gaf_mode_end(struct sync_run *r) {
    struct gaf_mode *g = r->mode;
    if (g->count == 0) return 0;
    return gaf_mode_step(r, "after the last GAF step at minibatch", r->st->local.num_minibatches);
}

const struct sync_mode_ops sync_gaf_ops = {
    .exchanged = "gathered microgradients", .state_size = sizeof(struct gaf_mode),
    .init = gaf_mode_init, .minibatch = gaf_mode_minibatch, .end = gaf_mode_end,
    .release = gaf_mode_release};
