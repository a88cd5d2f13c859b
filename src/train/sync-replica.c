/* Parle and EASGD inside the synchronous loop (train.h: TRAIN_SYNC_PARLE, TRAIN_SYNC_ELASTIC):
 * the per-rank state (centre, anchor, EMA, outer velocity) and the exchange every L or tau
 * minibatches, and the two modes' tables (sync_elastic_ops, sync_parle_ops); every exchange is a sum
 * all-reduce of one parameter-sized vector (docs/STYLE.md §3). */
#include "update/update.h"
#include "train/train-internal.h"
#include "io/io.h"

#include <math.h>
#include <string.h>

void train_replica_init(struct train_replica *r, struct nnet *n,
                        const struct train_sync_options *o) {
    memset(r, 0, sizeof *r);
    r->mode = o->mode;
    if (o->mode != TRAIN_SYNC_ELASTIC && o->mode != TRAIN_SYNC_PARLE) return;
    int dim = nnet_num_params(n);
    struct vector p = nnet_params(n);
    vector_init(&r->center, dim);
    vector_copy(&r->center, &p);
    vector_init(&r->scratch, dim);
    if (o->mode == TRAIN_SYNC_PARLE) {
        vector_init(&r->anchor, dim);
        vector_copy(&r->anchor, &p);
        vector_init(&r->ema, dim);
        vector_copy(&r->ema, &p);
        vector_init(&r->outer_velocity, dim);
        r->t = o->parle_step_offset;
        /* the reference advances its counter once per parameter tensor per inner step: W and b
         * of every updatable component here */
        r->scope_k = o->parle_scope_per_step > 0 ? o->parle_scope_per_step
                                                 : 2 * nnet_num_updatable(n);
    }
}

void train_replica_release(struct train_replica *r) {
    vector_release(&r->center);
    vector_release(&r->scratch);
    vector_release(&r->anchor);
    vector_release(&r->ema);
    vector_release(&r->outer_velocity);
}

/* gamma and rho at the current t, as parle_mpi.py: couplings grow by (1 + 0.5/nb) every L steps
 * of its counter, up to the caps; rho starts at rho0 L N. */
static void parle_scope(struct train_replica *r, const struct train_sync_options *o, int size) {
    double s = 1;
    if (o->parle_minibatches_per_epoch > 0) {
        long long k = r->t * (long long)(r->scope_k > 0 ? r->scope_k : 1);
        s = pow(1 + 0.5 / (double)o->parle_minibatches_per_epoch,
                (double)(k / o->parle_inner_steps));
    }
    double g = o->parle_gamma * s, rho = (double)o->parle_rho * o->parle_inner_steps * size * s;
    r->gamma = g < o->parle_gamma_max ? g : o->parle_gamma_max;
    r->rho = rho < o->parle_rho_max ? rho : o->parle_rho_max;
}

void train_replica_couple(struct train_replica *r, struct nnet *n,
                          const struct train_sync_options *o, int size, struct vector *step,
                          double weight) {
    if (r->mode != TRAIN_SYNC_PARLE) return;
    parle_scope(r, o, size);
    if (!(r->gamma > 0)) return;
    /* s -= gamma lr_c W (y - x^a) */
    struct vector y = nnet_params(n);
    vector_copy(&r->scratch, &y);
    vector_add(&r->scratch, -1, &r->anchor);
    nnet_add_by_learning_rates(n, step, (float)(-r->gamma * weight), &r->scratch);
}

int train_replica_after_step(struct train_replica *r, struct nnet *n,
                             const struct train_sync_options *o, double weight) {
    if (r->mode == TRAIN_SYNC_PARLE) {
        struct vector y = nnet_params(n);
        elastic_ema(&r->ema, &y, o->parle_ema);
        r->t++;
        r->round_weight += weight;
        return ++r->count == o->parle_inner_steps;
    }
    if (r->mode == TRAIN_SYNC_ELASTIC) return ++r->count == o->average_every;
    return 0;
}

int train_replica_exchange(struct train_replica *r, struct nnet *n,
                           const struct train_sync_options *o, const struct train_comm *c,
                           struct train_sync_stats *st) {
    struct vector x = nnet_params(n);
    const float inv_size = 1.0f / (float)c->size;
    if (r->mode == TRAIN_SYNC_ELASTIC) {
        float alpha = o->elastic_alpha > 0 ? o->elastic_alpha : 0.9f * inv_size;
        /* delta = alpha (x - c); x -= delta; c += sum delta */
        vector_copy(&r->scratch, &x);
        vector_add(&r->scratch, -1, &r->center);
        vector_scale(&r->scratch, alpha);
        vector_add(&x, -1, &r->scratch);
        if (train_sync_exchange(c, &r->scratch, 1, st)) return -1;
        vector_add(&r->center, 1, &r->scratch);
        r->count = 0;
        return 0;
    }
    ASSERT(r->mode == TRAIN_SYNC_PARLE);
    parle_scope(r, o, c->size);
    double w = r->count > 0 ? r->round_weight / r->count : 0;
    /* x~ = mean of z^a */
    vector_copy(&r->center, &r->ema);
    if (train_sync_exchange(c, &r->center, inv_size, st)) return -1;
    /* s = - lr_c W ((x^a - z^a) + rho (x^a - x~)), applied from y through the outer filter */
    struct vector *d = &r->scratch;
    vector_copy(d, &r->anchor);
    vector_add(d, -1, &r->ema);
    vector_add(d, (float)r->rho, &r->anchor);
    vector_add(d, (float)-r->rho, &r->center);
    struct vector step = nnet_delta(n);
    vector_set_zero(&step);
    nnet_add_by_learning_rates(n, &step, (float)-w, d);
    if (vector_is_finite(&step)) {
        if (o->train.momentum > 0)
            momentum_filter(&r->outer_velocity, &step, o->train.momentum, o->train.nesterov);
        vector_add(&x, 1, &step);
    } else {
        WARN("Parle: non-finite outer step: skipped");
        st->local.num_skipped++;
    }
    /* x^a <- y; x~ = mean of x^a */
    vector_copy(&r->anchor, &x);
    vector_copy(&r->center, &r->anchor);
    if (train_sync_exchange(c, &r->center, inv_size, st)) return -1;
    st->local.outer_steps++;
    r->count = 0;
    r->round_weight = 0;
    return 0;
}

int train_replica_last_exchange(struct train_replica *r, struct nnet *n,
                                const struct train_sync_options *o, const struct train_comm *c,
                                struct train_sync_stats *st) {
    if (r->mode != TRAIN_SYNC_ELASTIC && r->mode != TRAIN_SYNC_PARLE) return 0;
    /* every rank stopped at the same minibatch, so count is the same everywhere */
    return r->count > 0 ? train_replica_exchange(r, n, o, c, st) : 0;
}

void train_replica_finish(struct train_replica *r, struct nnet *n,
                          const struct train_sync_options *o, const struct train_comm *c,
                          struct train_sync_stats *st) {
    if (r->mode != TRAIN_SYNC_ELASTIC && r->mode != TRAIN_SYNC_PARLE) return;
    struct vector x = nnet_params(n);
    vector_copy(&x, &r->center);
    if (r->mode == TRAIN_SYNC_PARLE) {
        parle_scope(r, o, c->size);
        st->parle_gamma = r->gamma;
        st->parle_rho = r->rho;
        st->parle_steps = r->t;
    }
}

/* ---- the two modes as tables (train-internal.h: struct sync_mode_ops) ---- */
/* A local step of the replica (Parle: with its coupling), then maybe the exchange. */
static int replica_minibatch(struct sync_run *r, const struct egs_minibatch *mb, double weight) {
    struct vector delta = nnet_delta(r->n);
    nnet_backward(r->n, r->deriv, NNET_STEP);
    momentum_weight_decay(r->n, &delta, r->o->train.weight_decay, weight);
    train_replica_couple(&r->rep, r->n, r->o, r->comm->size, &delta, weight);
    if (momentum_apply_filtered(&r->mom, r->n, &delta)) r->st->local.num_skipped++;
    else r->st->local.num_updates++;
    if (!train_replica_after_step(&r->rep, r->n, r->o, weight)) return 0;
    return train_replica_exchange(&r->rep, r->n, r->o, r->comm, r->st);
}

static int replica_end(struct sync_run *r) {
    return train_replica_last_exchange(&r->rep, r->n, r->o, r->comm, r->st);
}

/* The model is the centre, everywhere. */
static int replica_result(struct sync_run *r) {
    train_replica_finish(&r->rep, r->n, r->o, r->comm, r->st);
    return train_sync_checked(r, r->comm, "after setting the centre at minibatch",
                              r->st->local.num_minibatches);
}

/* The two differ inside train_replica_* (by the mode), not in the loop's steps. */
const struct sync_mode_ops sync_elastic_ops = {
    .exchanged = "elastic differences", .minibatch = replica_minibatch, .end = replica_end,
    .result = replica_result};
const struct sync_mode_ops sync_parle_ops = {
    .exchanged = "EMAs and anchors", .minibatch = replica_minibatch, .end = replica_end,
    .result = replica_result};

/* ---- the state file (--state-in / --state-out of nnet-train-mpi) ----
 * Kaldi token style, binary:
 *   <TrainState> <Version> 1 <Mode> int32 <Step> double (Parle's t)
 *   <Replica> FV <Anchor> FV <Ema> FV <Velocity> FV <OuterVelocity> FV </TrainState>
 * A vector a mode does not use is empty (dim 0). The centre is not stored: it is the model. */
static const char *const state_names[5] = {"<Replica>", "<Anchor>", "<Ema>", "<Velocity>",
                                           "<OuterVelocity>"};

static struct vector *state_vectors(struct train_replica *r, struct momentum *m,
                                    struct vector *replica, int i) {
    struct vector *v[5] = {replica, &r->anchor, &r->ema, &m->velocity, &r->outer_velocity};
    return v[i];
}

int train_replica_write_state(struct train_replica *r, struct momentum *m,
                              struct nnet *n, const char *wxfilename) {
    struct vector replica = r->center.dim ? nnet_params(n) : (struct vector){0};
    struct kout out = {0};
    if (kout_open(&out, wxfilename)) return -1;
    int bad = io_write_header(&out, 1) || io_write_token(&out, 1, "<TrainState>") ||
              io_write_token(&out, 1, "<Version>") || io_write_int32(&out, 1, 1) ||
              io_write_token(&out, 1, "<Mode>") || io_write_int32(&out, 1, (int32_t)r->mode) ||
              io_write_token(&out, 1, "<Step>") || io_write_double(&out, 1, (double)r->t);
    for (int i = 0; i < 5 && !bad; i++) {
        const struct vector *v = state_vectors(r, m, &replica, i);
        struct vector h = {0};
        vector_init_on(&h, v->dim, MATRIX_CPU);
        if (v->dim) vector_to_host(v, h.data);
        bad = io_write_token(&out, 1, state_names[i]) || io_write_vector(&out, 1, &h);
        vector_release(&h);
    }
    if (bad || io_write_token(&out, 1, "</TrainState>")) {
        kout_abort(&out);
        return -1;
    }
    return kout_close(&out);
}

int train_replica_read_state(struct train_replica *r, struct momentum *m,
                             struct nnet *n, const char *rxfilename) {
    struct kin in = {0};
    int binary;
    int32_t version, mode;
    double step;
    if (kin_open(&in, rxfilename)) return -1;
    int bad = io_read_header(&in, &binary) || io_expect_token(&in, binary, "<TrainState>") ||
              io_expect_token(&in, binary, "<Version>") || io_read_int32(&in, binary, &version);
    if (!bad && version != 1) bad = kin_error(&in, "state version %d: expected 1", (int)version);
    if (!bad)
        bad = io_expect_token(&in, binary, "<Mode>") || io_read_int32(&in, binary, &mode) ||
              io_expect_token(&in, binary, "<Step>") || io_read_double(&in, binary, &step);
    if (!bad && mode != (int32_t)r->mode)
        bad = kin_error(&in, "<Mode> %d: this run's mode is %d", (int)mode, (int)r->mode);
    struct vector replica = r->center.dim ? nnet_params(n) : (struct vector){0};
    for (int i = 0; i < 5 && !bad; i++) {
        struct vector *v = state_vectors(r, m, &replica, i);
        struct vector h = {0};
        bad = io_expect_token(&in, binary, state_names[i]) || io_read_vector(&in, binary, &h);
        if (!bad && h.dim != v->dim)
            bad = kin_error(&in, "%s has %d values, expected %d (another model or mode?)",
                            state_names[i], h.dim, v->dim);
        if (!bad && h.dim) vector_from_host(v, h.data);
        vector_release(&h);
    }
    if (!bad) bad = io_expect_token(&in, binary, "</TrainState>");
    if (kin_close(&in)) bad = 1;
    if (bad) return error_wrap("state '%s': ", rxfilename);
    if (!(step >= 0)) return error_set("state '%s': negative <Step>", rxfilename);
    r->t = (long long)step;
    return 0;
}
