/* parle mode of train_sync (train.h: TRAIN_SYNC_PARLE): Parle as ucla-vision/parle's parle_mpi.py
 * runs it (Chaudhari et al., arXiv 1707.00424). The network holds this rank's inner iterate y;
 * each inner step is coupled to the anchor x^a (gamma) and feeds the EMA z^a; every L inner steps
 * the ranks' EMAs are averaged into x~ and an outer step moves the anchor toward its EMA and x~
 * (rho), through its own momentum. Every exchange is one all-reduce of a parameter-sized vector
 * (docs/STYLE.md §3). The model is x~. */
#include "update/update.h"
#include "train/train-internal.h"

#include <math.h>

struct parle_mode {
    struct vector center;         /* x~: the same on every rank */
    struct vector anchor, ema;    /* x^a, z^a */
    struct vector outer_velocity; /* the outer loop's momentum */
    struct vector scratch;
    long long t;                  /* inner steps, the scoping counter */
    int scope_k;                  /* the counter's advance per inner step */
    int count;                    /* minibatches since the last exchange */
    double round_weight;          /* label weight of those minibatches */
    double gamma, rho;            /* the couplings last computed */
};

static int parle_init(struct sync_run *r) {
    struct parle_mode *pm = r->mode;
    struct vector p = nnet_params(r->n);
    struct vector *copies[3] = {&pm->center, &pm->anchor, &pm->ema};
    for (int i = 0; i < 3; i++) {
        vector_init(copies[i], p.dim);
        vector_copy(copies[i], &p);
    }
    vector_init(&pm->outer_velocity, p.dim);
    vector_init(&pm->scratch, p.dim);
    pm->t = r->o->parle_step_offset;
    /* the reference advances its counter once per parameter tensor per inner step: W and b of
     * every updatable component here */
    pm->scope_k = r->o->parle_scope_per_step > 0 ? r->o->parle_scope_per_step
                                                 : 2 * nnet_num_updatable(r->n);
    return 0;
}

static void parle_release(struct sync_run *r) {
    struct parle_mode *pm = r->mode;
    vector_release(&pm->center);
    vector_release(&pm->anchor);
    vector_release(&pm->ema);
    vector_release(&pm->outer_velocity);
    vector_release(&pm->scratch);
}

/* gamma and rho at the current t, as parle_mpi.py: couplings grow by (1 + 0.5/nb) every L steps
 * of its counter, up to the caps; rho starts at rho0 L N. */
static void parle_scope(struct sync_run *r) {
    struct parle_mode *pm = r->mode;
    const struct train_sync_options *o = r->o;
    double s = 1;
    if (o->parle_minibatches_per_epoch > 0) {
        long long k = pm->t * (long long)(pm->scope_k > 0 ? pm->scope_k : 1);
        s = pow(1 + 0.5 / (double)o->parle_minibatches_per_epoch,
                (double)(k / o->parle_inner_steps));
    }
    double g = o->parle_gamma * s;
    double rho = (double)o->parle_rho * o->parle_inner_steps * r->comm->size * s;
    pm->gamma = g < o->parle_gamma_max ? g : o->parle_gamma_max;
    pm->rho = rho < o->parle_rho_max ? rho : o->parle_rho_max;
}

/* The outer step and the averages: x~ = mean of z^a; s = - lr_c W ((x^a - z^a) + rho (x^a - x~)),
 * applied from y through the outer filter; x^a <- y; x~ = mean of x^a. */
static int parle_exchange(struct sync_run *r) {
    struct parle_mode *pm = r->mode;
    const struct train_sync_options *o = r->o;
    const float inv_size = 1.0f / (float)r->comm->size;
    struct vector x = nnet_params(r->n);
    parle_scope(r);
    double w = pm->count > 0 ? pm->round_weight / pm->count : 0;
    vector_copy(&pm->center, &pm->ema);
    if (train_sync_exchange(r->comm, &pm->center, inv_size, r->st)) return -1;
    struct vector *d = &pm->scratch;
    vector_copy(d, &pm->anchor);
    vector_add(d, -1, &pm->ema);
    vector_add(d, (float)pm->rho, &pm->anchor);
    vector_add(d, (float)-pm->rho, &pm->center);
    struct vector step = nnet_delta(r->n);
    vector_set_zero(&step);
    nnet_add_by_learning_rates(r->n, &step, (float)-w, d);
    if (vector_is_finite(&step)) {
        if (o->train.momentum > 0)
            momentum_filter(&pm->outer_velocity, &step, o->train.momentum, o->train.nesterov);
        vector_add(&x, 1, &step);
    } else {
        WARN("Parle: non-finite outer step: skipped");
        r->st->local.num_skipped++;
    }
    vector_copy(&pm->anchor, &x);
    vector_copy(&pm->center, &pm->anchor);
    if (train_sync_exchange(r->comm, &pm->center, inv_size, r->st)) return -1;
    r->st->local.outer_steps++;
    pm->count = 0;
    pm->round_weight = 0;
    return 0;
}

/* An inner step (coupled to the anchor: s -= gamma lr_c W (y - x^a)), the EMA, then the exchange
 * every L inner steps. */
static int parle_minibatch(struct sync_run *r, const struct egs_minibatch *mb, double weight) {
    struct parle_mode *pm = r->mode;
    struct vector delta = train_sync_step(r, weight);
    parle_scope(r);
    if (pm->gamma > 0) {
        struct vector y = nnet_params(r->n);
        vector_copy(&pm->scratch, &y);
        vector_add(&pm->scratch, -1, &pm->anchor);
        nnet_add_by_learning_rates(r->n, &delta, (float)(-pm->gamma * weight), &pm->scratch);
    }
    train_sync_apply(r, &delta);
    struct vector y = nnet_params(r->n);
    elastic_ema(&pm->ema, &y, r->o->parle_ema);
    pm->t++;
    pm->round_weight += weight;
    return ++pm->count == r->o->parle_inner_steps ? parle_exchange(r) : 0;
}

/* Every rank stopped at the same minibatch, so count is the same everywhere. */
static int parle_end(struct sync_run *r) {
    struct parle_mode *pm = r->mode;
    return pm->count > 0 ? parle_exchange(r) : 0;
}

/* The couplings and t for the summary; the model is x~. */
static int parle_result(struct sync_run *r) {
    struct parle_mode *pm = r->mode;
    parle_scope(r);
    r->st->parle_gamma = pm->gamma;
    r->st->parle_rho = pm->rho;
    r->st->parle_steps = pm->t;
    return train_sync_set_centre(r, &pm->center);
}

static void parle_state(struct sync_run *r, struct sync_state *s) {
    struct parle_mode *pm = r->mode;
    *s = (struct sync_state){.replica = 1, .anchor = &pm->anchor, .ema = &pm->ema,
                             .outer_velocity = &pm->outer_velocity, .t = &pm->t};
}

const struct sync_mode_ops sync_parle_ops = {
    .exchanged = "EMAs and anchors", .state_size = sizeof(struct parle_mode), .init = parle_init,
    .minibatch = parle_minibatch, .end = parle_end, .result = parle_result,
    .release = parle_release, .state = parle_state};
