/* elastic mode of train_sync (train.h: TRAIN_SYNC_ELASTIC): EASGD in the all-reduce form. The
 * network holds this rank's replica x; every tau (--average-every) minibatches each rank moves
 * alpha (x - c) toward the centre c, and the centre takes the sum of those moves (Zhang et al.,
 * NIPS 2015, arXiv 1412.6651); every exchange is one all-reduce of a parameter-sized vector
 * (docs/STYLE.md §3). The model is the centre. */
#include "train/train-internal.h"

struct elastic_mode {
    struct vector center; /* c: the same on every rank */
    struct vector scratch;
    int count;            /* minibatches since the last exchange */
};

static int elastic_init(struct sync_run *r) {
    struct elastic_mode *em = r->mode;
    struct vector p = nnet_params(r->n);
    vector_init(&em->center, p.dim);
    vector_copy(&em->center, &p);
    vector_init(&em->scratch, p.dim);
    return 0;
}

static void elastic_release(struct sync_run *r) {
    struct elastic_mode *em = r->mode;
    vector_release(&em->center);
    vector_release(&em->scratch);
}

/* delta = alpha (x - c); x -= delta; c += sum delta */
static int elastic_exchange(struct sync_run *r) {
    struct elastic_mode *em = r->mode;
    struct vector x = nnet_params(r->n);
    const float inv_size = 1.0f / (float)r->comm->size;
    float alpha = r->o->elastic_alpha > 0 ? r->o->elastic_alpha : 0.9f * inv_size;
    vector_copy(&em->scratch, &x);
    vector_add(&em->scratch, -1, &em->center);
    vector_scale(&em->scratch, alpha);
    vector_add(&x, -1, &em->scratch);
    if (train_sync_exchange(r->comm, &em->scratch, 1, r->st)) return -1;
    vector_add(&em->center, 1, &em->scratch);
    em->count = 0;
    return 0;
}

/* A local step of the replica, then the exchange every tau minibatches. */
static int elastic_minibatch(struct sync_run *r, const struct egs_minibatch *mb, double weight) {
    struct elastic_mode *em = r->mode;
    struct vector delta = train_sync_step(r, weight);
    train_sync_apply(r, &delta);
    return ++em->count == r->o->average_every ? elastic_exchange(r) : 0;
}

/* Every rank stopped at the same minibatch, so count is the same everywhere. */
static int elastic_end(struct sync_run *r) {
    struct elastic_mode *em = r->mode;
    return em->count > 0 ? elastic_exchange(r) : 0;
}

static int elastic_result(struct sync_run *r) {
    struct elastic_mode *em = r->mode;
    return train_sync_set_centre(r, &em->center);
}

static void elastic_state(struct sync_run *r, struct sync_state *s) { s->replica = 1; }

const struct sync_mode_ops sync_elastic_ops = {
    .exchanged = "elastic differences", .state_size = sizeof(struct elastic_mode),
    .init = elastic_init, .minibatch = elastic_minibatch, .end = elastic_end,
    .result = elastic_result, .release = elastic_release, .state = elastic_state};
