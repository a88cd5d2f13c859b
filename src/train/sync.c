/* Synchronous data-parallel training over a caller-supplied all-reduce (sync.h: train_sync):
 * local SGD with periodic parameter averaging, or summed steps every minibatch. */
#include "train/train-internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int reduce(const struct train_comm *c, void *data, size_t count, enum comm_type type,
                  enum comm_op op) {
    if (c->allreduce(c->ctx, data, count, type, op, MATRIX_CPU))
        return error_wrap("rank %d: all-reduce failed: ", c->rank);
    return 0;
}

/* FNV-1a over the bits of the parameter block (host copy in *scratch). */
static int64_t params_hash(struct nnet *n, float **scratch) {
    struct vector p = nnet_params(n);
    if (!*scratch) *scratch = xmalloc(sizeof(float) * (p.dim ? p.dim : 1));
    vector_to_host(&p, *scratch);
    const unsigned char *b = (const unsigned char *)*scratch;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < sizeof(float) * (size_t)p.dim; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return (int64_t)(h >> 1); /* non-negative, so MIN and MAX compare plainly */
}

/* Collective: 0 if every rank holds bitwise the same parameters, else -1 on every rank. */
static int check_identical(struct nnet *n, const struct train_comm *c, float **scratch,
                           const char *when, long long minibatch) {
    int64_t lo = params_hash(n, scratch), hi = lo;
    if (reduce(c, &lo, 1, COMM_INT64, COMM_MIN) || reduce(c, &hi, 1, COMM_INT64, COMM_MAX))
        return -1;
    if (lo != hi)
        return error_set("the ranks' parameters differ %s %lld (hashes %llx ... %llx)", when,
                         minibatch, (unsigned long long)lo, (unsigned long long)hi);
    return 0;
}

/* Sum v over ranks in place, then scale it: the one exchange of either mode. */
int train_sync_exchange(const struct train_comm *c, struct vector *v, float scale,
                        struct train_sync_stats *st) {
    double t0 = time_now();
    if (c->allreduce(c->ctx, v->data, (size_t)v->dim, COMM_FLOAT, COMM_SUM, v->device))
        return error_wrap("rank %d: all-reduce of %d floats failed: ", c->rank, v->dim);
    st->exchange_seconds += time_now() - t0;
    st->exchange_bytes += sizeof(float) * (double)v->dim;
    st->num_exchanges++;
    if (scale != 1) vector_scale(v, scale);
    return 0;
}

/* Collective: every rank's status of a local operation (0 or -1 with error_set); 0 if all
 * succeeded, else -1 on every rank, the failing ones with their own error. */
static int agree(const struct train_comm *c, int status, const char *what) {
    char *mine = status ? xstrdup(error_get()) : NULL;
    int64_t ok = status == 0;
    if (reduce(c, &ok, 1, COMM_INT64, COMM_MIN)) {
        free(mine);
        return -1;
    }
    int rc = 0;
    if (mine) rc = error_set("rank %d: %s", c->rank, mine);
    else if (!ok) rc = error_set("another rank failed to %s its state (see its error)", what);
    free(mine);
    return rc;
}

/* Sum the per-rank counts into st->total (the slowest rank's time). Collective. */
static int gather_stats(const struct train_comm *c, enum train_sync_mode mode, int stopped_early,
                        int close_failed, struct train_sync_stats *st) {
    const struct train_stats *l = &st->local;
    double v[9] = {l->objf,
                   l->weight,
                   l->correct,
                   (double)l->num_egs,
                   (double)l->num_frames,
                   (double)l->num_minibatches,
                   (double)l->num_skipped,
                   (double)stopped_early,
                   (double)close_failed};
    double secs = l->seconds;
    if (reduce(c, v, 9, COMM_DOUBLE, COMM_SUM) || reduce(c, &secs, 1, COMM_DOUBLE, COMM_MAX))
        return -1;
    struct train_stats *t = &st->total;
    t->objf = v[0];
    t->weight = v[1];
    t->correct = v[2];
    t->num_egs = (long long)v[3];
    t->num_frames = (long long)v[4];
    t->num_minibatches = (long long)v[5];
    /* Summed steps and GAF steps are applied (or skipped) by every rank alike: count them once. */
    t->num_skipped = mode == TRAIN_SYNC_STEPS ? l->num_skipped : (long long)v[6];
    t->num_updates = l->num_updates;
    t->gaf_steps = l->gaf_steps;
    t->gaf_skipped = l->gaf_skipped;
    t->gaf_offered = l->gaf_offered;
    t->gaf_accepted = l->gaf_accepted;
    t->outer_steps = l->outer_steps;
    t->seconds = secs;
    st->num_stopped_early = (long long)v[7];
    st->num_close_failed = (long long)v[8];
    return 0;
}

/* GAF across ranks: all holds N x M slots of the block's size, slot r x M + j for rank r's j-th
 * microbatch of the step; each rank has filled its own `count` slots, the rest are zero, so the
 * all-reduce sum is an all-gather (x + 0 = x: bitwise). Every rank then offers the same vectors in
 * the same order (rank 0's, then rank 1's, ...) and applies the same update. */
static int gaf_step(struct nnet *n, const struct train_sync_options *o,
                    const struct train_comm *c, struct gaf *g, struct vector *all, int count,
                    struct momentum *mom, double frames_per_micro,
                    struct train_sync_stats *st) {
    if (train_sync_exchange(c, all, 1, st)) return -1;
    int dim = nnet_num_params(n), m = o->train.gaf_microbatches, skipped;
    gaf_begin(g);
    for (int r = 0; r < c->size; r++)
        for (int j = 0; j < count; j++) {
            struct vector slot = vector_range(all, (r * m + j) * dim, dim);
            train_gaf_offer(g, &slot);
        }
    if (train_gaf_finish(g, n, &o->train, &st->local, &skipped, mom, frames_per_micro)) {
        if (skipped) st->local.num_skipped++;
        else st->local.num_updates++;
    }
    vector_set_zero(all);
    return 0;
}

/* ---- params mode: local SGD, with block momentum, post-local warm-up and groups (sync.h) ---- */
struct params_mode {
    struct vector start, velocity; /* BMUF: S, the block's start, and m; dim 0 when off */
    float eta;
    long long step;                /* the run's minibatches so far (minibatch_offset included) */
    int since_average, since_group;
};

/* Collective. The group's shape and the block momentum's state. */
static int params_mode_init(struct params_mode *pm, struct nnet *n,
                            const struct train_sync_options *o, const struct train_comm *c) {
    memset(pm, 0, sizeof *pm);
    pm->step = o->minibatch_offset;
    if (o->mode != TRAIN_SYNC_PARAMS) return 0;
    if (o->group_size > 1 &&
        (c->size % o->group_size || !c->group || c->group->size != o->group_size ||
         c->group->rank != c->rank % o->group_size))
        return error_set("--group-size=%d: must divide the %d ranks", o->group_size, c->size);
    if (!o->bmuf.on) return 0;
    struct vector p = nnet_params(n);
    vector_init(&pm->start, p.dim);
    vector_copy(&pm->start, &p);
    vector_init(&pm->velocity, p.dim);
    pm->eta = bmuf_resolve_momentum(&o->bmuf, c->size);
    if (!o->bmuf_state_rxfilename) return 0;
    return agree(c, bmuf_state_read(o->bmuf_state_rxfilename, &pm->velocity, c->size,
                                    o->bmuf.nesterov), "read");
}

static void params_mode_release(struct params_mode *pm) {
    vector_release(&pm->start);
    vector_release(&pm->velocity);
}

/* Collective: the average over all ranks, through block momentum when on. */
static int params_average(struct params_mode *pm, struct nnet *n,
                          const struct train_sync_options *o, const struct train_comm *c,
                          struct train_sync_stats *st) {
    struct vector params = nnet_params(n);
    pm->since_average = pm->since_group = 0;
    if (train_sync_exchange(c, &params, 1.0f / (float)c->size, st)) return -1;
    if (!o->bmuf.on) return 0;
    bmuf_update(&pm->start, &pm->velocity, &params, pm->eta, o->bmuf.learning_rate,
                o->bmuf.nesterov);
    vector_copy(&params, &pm->start);
    return 0;
}

/* One minibatch of params mode after the forward pass; returns -1 on a failed exchange. */
static int params_minibatch(struct params_mode *pm, struct nnet *n, struct matrix *deriv,
                            const struct train_sync_options *o, const struct train_comm *c,
                            struct momentum *mom, double weight, struct train_sync_stats *st,
                            float **scratch) {
    struct vector params = nnet_params(n), delta = nnet_delta(n);
    const long long mb = st->local.num_minibatches - 1;
    if (pm->step++ < o->warmup_steps) {
        /* post-local SGD's warm-up: the mean of the ranks' steps, applied everywhere */
        nnet_backward(n, deriv, NNET_STEP);
        momentum_weight_decay(n, &delta, o->train.weight_decay, weight);
        if (train_sync_exchange(c, &delta, 1.0f / (float)c->size, st)) return -1;
        if (mom->on ? momentum_apply_filtered(mom, n, &delta) : nnet_apply_step(n, &delta))
            st->local.num_skipped++;
        st->num_warmup_steps++;
        pm->since_average = pm->since_group = 0;
        if (pm->start.dim) vector_copy(&pm->start, &params); /* the next block starts here */
        return o->check_sync ? check_identical(n, c, scratch, "after the warm-up step", mb) : 0;
    }
    int skipped;
    if (mom->on) {
        nnet_backward(n, deriv, NNET_STEP);
        skipped = momentum_apply_step(mom, n, &delta, weight);
    } else {
        skipped = nnet_backward(n, deriv, NNET_UPDATE);
    }
    if (skipped) st->local.num_skipped++;
    pm->since_average++;
    pm->since_group++;
    if (o->average_every > 0 && pm->since_average == o->average_every) {
        if (params_average(pm, n, o, c, st)) return -1;
        return o->check_sync ? check_identical(n, c, scratch, "after averaging at minibatch", mb)
                             : 0;
    }
    if (o->group_size > 1 && pm->since_group == o->group_average_every) {
        pm->since_group = 0;
        st->num_group_averages++;
        if (train_sync_exchange(c->group, &params, 1.0f / (float)o->group_size, st)) return -1;
        return o->check_sync ? check_identical(n, c->group, scratch,
                                               "within the group after averaging at minibatch", mb)
                             : 0;
    }
    return 0;
}

int train_sync(struct nnet *n, const char *egs_rspec, const struct train_sync_options *o,
               const struct train_comm *comm, struct train_sync_stats *st) {
    ASSERT(o->average_every >= 0 && comm->size >= 1 && comm->rank >= 0 && comm->rank < comm->size);
    memset(st, 0, sizeof *st);
    double start = time_now();
    struct train_stats *ls = &st->local;
    float *scratch = NULL;
    nnet_set_seed(n, o->train.srand + (uint64_t)comm->rank); /* e.g. different Dropout masks */
    if (check_identical(n, comm, &scratch, "at the start (same model-in everywhere?), minibatch",
                        0)) {
        free(scratch);
        return -1;
    }

    /* GAF: this rank's microbatches of the step so far, the gathered slots, the agreement */
    const int gaf_m = o->mode == TRAIN_SYNC_STEPS ? o->train.gaf_microbatches : 0;
    int gaf_count = 0;
    struct vector gaf_all = {0};
    struct gaf gaf = {0};
    if (gaf_m > 0) {
        long long slots = (long long)comm->size * gaf_m * nnet_num_params(n);
        if (slots > INT_MAX) {
            free(scratch);
            return error_set("GAF: %d ranks x %d microbatches x %d parameters do not fit one "
                             "vector", comm->size, gaf_m, nnet_num_params(n));
        }
        vector_init(&gaf_all, (int)slots);
        gaf_init(&gaf, nnet_num_params(n), o->train.gaf_threshold, o->train.gaf_fusion);
    }

    struct minibatch_source *src = minibatch_source_new(
        egs_rspec, o->train.minibatch_size, nnet_left_context(n), nnet_right_context(n));
    char *my_error = src ? NULL : xstrdup(error_get());
    /* momentum and weight decay (momentum.c); Parle / EASGD state (sync-replica.c) */
    struct momentum mom;
    momentum_init(&mom, n, o->train.momentum, o->train.nesterov, o->train.weight_decay);
    struct train_replica rep;
    train_replica_init(&rep, n, o);
    const int replica_mode = o->mode == TRAIN_SYNC_ELASTIC || o->mode == TRAIN_SYNC_PARLE;
    double nominal_frames = o->train.minibatch_size; /* per GAF microbatch, the same everywhere */
    struct vector delta = nnet_delta(n);
    struct minibatch_loop loop; /* progress lines on rank 0 only */
    minibatch_loop_init(&loop, n, egs_rspec, ls, comm->rank == 0 ? o->train.progress_every : 0,
                        " (rank 0)", 0, start);
    struct matrix *deriv = &loop.deriv;
    int rc = 0, stopped_early = 0;
    struct params_mode pm = {0};
    if (o->state_rxfilename)
        rc = agree(comm, train_replica_read_state(&rep, &mom, n, o->state_rxfilename), "read");
    if (rc == 0) rc = params_mode_init(&pm, n, o, comm);
    while (rc == 0) {
        /* 1: a minibatch, 0: end of this rank's archive, -1 - rank: this rank failed. */
        const struct egs_minibatch *mb = NULL;
        int have = -1;
        if (!my_error) {
            have = minibatch_source_next(src, &mb);
            if (have == 1 && minibatch_check(mb, n, egs_rspec)) have = -1;
            if (have < 0) my_error = xstrdup(error_get());
        }
        int64_t flag = have < 0 ? -1 - (int64_t)comm->rank : have;
        double t0 = time_now();
        if (reduce(comm, &flag, 1, COMM_INT64, COMM_MIN)) {
            rc = -1;
            break;
        }
        st->flag_seconds += time_now() - t0;
        if (flag < 0) {
            if (my_error) rc = error_set("rank %d: %s", comm->rank, my_error);
            else rc = error_set("rank %lld failed (see its error)", (long long)(-1 - flag));
            break;
        }
        if (flag == 0) {
            stopped_early = have == 1;
            break;
        }

        const struct matrix *out = minibatch_loop_forward(&loop, mb, 1);
        double weight;
        minibatch_loop_score(&loop, out, mb, NULL, &weight);
        nominal_frames = (double)o->train.minibatch_size * mb->frames_per_eg;
        if (gaf_m > 0) {
            nnet_backward(n, deriv, train_gaf_backward_mode(&o->train));
            struct vector slot = vector_range(
                &gaf_all, (comm->rank * gaf_m + gaf_count) * nnet_num_params(n), delta.dim);
            vector_copy(&slot, &delta);
            if (++gaf_count == gaf_m) {
                gaf_count = 0;
                if (gaf_step(n, o, comm, &gaf, &gaf_all, gaf_m, &mom, nominal_frames, st)) {
                    rc = -1;
                    break;
                }
                if (o->check_sync &&
                    (rc = check_identical(n, comm, &scratch, "after the GAF step of minibatch",
                                          ls->num_minibatches - 1)))
                    break;
            }
        } else if (o->mode == TRAIN_SYNC_STEPS) {
            nnet_backward(n, deriv, NNET_STEP);
            /* each rank's own decay before the sum: the sum decays by the total weight */
            momentum_weight_decay(n, &delta, o->train.weight_decay, weight);
            if (train_sync_exchange(comm, &delta, 1, st)) {
                rc = -1;
                break;
            }
            if (mom.on ? momentum_apply_filtered(&mom, n, &delta)
                       : nnet_apply_step(n, &delta))
                ls->num_skipped++;
            if (o->check_sync &&
                (rc = check_identical(n, comm, &scratch, "after the step of minibatch",
                                      ls->num_minibatches - 1)))
                break;
        } else if (replica_mode) {
            /* a local step of the replica (Parle: with its coupling), then maybe the exchange */
            nnet_backward(n, deriv, NNET_STEP);
            momentum_weight_decay(n, &delta, o->train.weight_decay, weight);
            train_replica_couple(&rep, n, o, comm->size, &delta, weight);
            if (momentum_apply_filtered(&mom, n, &delta)) ls->num_skipped++;
            else ls->num_updates++;
            if (train_replica_after_step(&rep, n, o, weight)) {
                if (train_replica_exchange(&rep, n, o, comm, st)) {
                    rc = -1;
                    break;
                }
            }
        } else if ((rc = params_minibatch(&pm, n, deriv, o, comm, &mom, weight, st, &scratch))) {
            break;
        }

        minibatch_loop_progress(&loop);
    }
    /* Every rank stopped at the same minibatch, so a short last GAF step is short everywhere. */
    if (rc == 0 && gaf_m > 0 && gaf_count > 0) {
        rc = gaf_step(n, o, comm, &gaf, &gaf_all, gaf_count, &mom, nominal_frames, st);
        if (rc == 0 && o->check_sync)
            rc = check_identical(n, comm, &scratch, "after the last GAF step at minibatch",
                                 ls->num_minibatches);
    }
    if (gaf_m > 0) {
        gaf_release(&gaf);
        vector_release(&gaf_all);
    }
    /* The pass ended on every rank at the same minibatch; leave every copy equal to the average. */
    if (rc == 0 && o->mode == TRAIN_SYNC_PARAMS && pm.since_average > 0) {
        rc = params_average(&pm, n, o, comm, st);
        if (rc == 0 && o->check_sync)
            rc = check_identical(n, comm, &scratch, "after the final average at minibatch",
                                 ls->num_minibatches);
    }
    if (rc == 0 && o->bmuf.on && o->bmuf_state_wxfilename) /* m is the same on every rank */
        rc = agree(comm,
                   comm->rank ? 0
                              : bmuf_state_write(o->bmuf_state_wxfilename, &pm.velocity,
                                                 comm->size, pm.eta, o->bmuf.learning_rate,
                                                 o->bmuf.nesterov),
                   "write");
    params_mode_release(&pm);
    /* Parle / EASGD: the last exchange; this rank's state; the model is the centre everywhere */
    if (rc == 0) rc = train_replica_last_exchange(&rep, n, o, comm, st);
    if (rc == 0 && o->state_wxfilename)
        rc = agree(comm, train_replica_write_state(&rep, &mom, n, o->state_wxfilename), "write");
    if (rc == 0 && replica_mode) {
        train_replica_finish(&rep, n, o, comm, st);
        if (o->check_sync)
            rc = check_identical(n, comm, &scratch, "after setting the centre at minibatch",
                                 ls->num_minibatches);
    }
    train_replica_release(&rep);
    momentum_release(&mom);
    /* A pipe we stopped reading early is not an error (table_reader_close knows); a fully read
     * one whose command failed is (its data may be cut short), and only this rank sees it. */
    int close_failed = src && minibatch_source_free(src);
    if (close_failed && rc == 0) {
        free(my_error);
        my_error = xstrdup(error_get());
    }
    minibatch_loop_release(&loop);
    free(scratch);
    ls->seconds = time_now() - start;
    if (rc == 0) rc = gather_stats(comm, o->mode, stopped_early, close_failed, st);
    if (rc == 0 && st->num_close_failed > 0) {
        if (close_failed) rc = error_set("rank %d: %s", comm->rank, my_error);
        else rc = error_set("%lld rank(s) failed to close their examples", st->num_close_failed);
    }
    free(my_error);
    return rc < 0 ? -1 : 0;
}
