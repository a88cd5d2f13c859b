/* Synchronous data-parallel training over a caller-supplied all-reduce (train.h: train_sync): the
 * loop every mode shares (reading together, stopping together, the state file, the counts), and
 * the collectives the modes use. Each mode is a table of operations in its own file
 * (train-internal.h: struct sync_mode_ops). */
#include "train/train-internal.h"

#include <stdlib.h>
#include <string.h>

static const struct sync_mode_ops *mode_ops(const struct train_sync_options *o) {
    switch (o->mode) {
    case TRAIN_SYNC_STEPS: return o->train.gaf_microbatches > 0 ? &sync_gaf_ops : &sync_steps_ops;
    case TRAIN_SYNC_ELASTIC: return &sync_elastic_ops;
    case TRAIN_SYNC_PARLE: return &sync_parle_ops;
    default: return &sync_params_ops;
    }
}

const char *train_sync_exchanged(const struct train_sync_options *o) {
    return mode_ops(o)->exchanged;
}

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
static int check_identical(struct sync_run *r, const struct train_comm *c, const char *when,
                           long long minibatch) {
    int64_t lo = params_hash(r->n, &r->scratch), hi = lo;
    if (reduce(c, &lo, 1, COMM_INT64, COMM_MIN) || reduce(c, &hi, 1, COMM_INT64, COMM_MAX))
        return -1;
    if (lo != hi)
        return error_set("the ranks' parameters differ %s %lld (hashes %llx ... %llx)", when,
                         minibatch, (unsigned long long)lo, (unsigned long long)hi);
    return 0;
}

int train_sync_checked(struct sync_run *r, const struct train_comm *c, const char *when,
                       long long minibatch) {
    return r->o->check_sync ? check_identical(r, c, when, minibatch) : 0;
}

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

struct vector train_sync_step(struct sync_run *r, double weight) {
    struct vector delta = nnet_delta(r->n);
    nnet_backward(r->n, r->deriv, NNET_STEP);
    momentum_weight_decay(r->n, &delta, r->o->train.weight_decay, weight);
    return delta;
}

void train_sync_apply(struct sync_run *r, struct vector *step) {
    if (momentum_apply_filtered(&r->mom, r->n, step)) r->st->local.num_skipped++;
    else r->st->local.num_updates++;
}

int train_sync_set_centre(struct sync_run *r, const struct vector *centre) {
    struct vector x = nnet_params(r->n);
    vector_copy(&x, centre);
    return train_sync_checked(r, r->comm, "after setting the centre at minibatch",
                              r->st->local.num_minibatches);
}

int train_sync_agree(const struct train_comm *c, int status, const char *what) {
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
    *t = *l; /* the GAF counts, num_updates and outer_steps: the same on every rank */
    t->objf = v[0];
    t->weight = v[1];
    t->correct = v[2];
    t->num_egs = (long long)v[3];
    t->num_frames = (long long)v[4];
    t->num_minibatches = (long long)v[5];
    /* Summed steps and GAF steps are applied (or skipped) by every rank alike: count them once. */
    t->num_skipped = mode == TRAIN_SYNC_STEPS ? l->num_skipped : (long long)v[6];
    t->seconds = secs;
    st->num_stopped_early = (long long)v[7];
    st->num_close_failed = (long long)v[8];
    return 0;
}

/* This rank's next minibatch, agreed on by all: 1 (every rank has one), 0 (some rank's archive
 * ended: *stopped_early says whether this one still had examples), or -1 (some rank failed: the
 * error on every rank). *my_error keeps this rank's own failure (reading stops at the first). */
static int next_together(struct sync_run *r, struct minibatch_source *src, const char *egs_rspec,
                         char **my_error, const struct egs_minibatch **mb, int *stopped_early) {
    const struct train_comm *comm = r->comm;
    int have = -1;
    if (!*my_error) {
        have = minibatch_source_next(src, mb);
        if (have == 1 && minibatch_check(*mb, r->n, egs_rspec)) have = -1;
        if (have < 0) *my_error = xstrdup(error_get());
    }
    /* 1: a minibatch, 0: end of this rank's archive, -1 - rank: this rank failed */
    int64_t flag = have < 0 ? -1 - (int64_t)comm->rank : have;
    double t0 = time_now();
    if (reduce(comm, &flag, 1, COMM_INT64, COMM_MIN)) return -1;
    r->st->flag_seconds += time_now() - t0;
    if (flag < 0) {
        if (*my_error) return error_set("rank %d: %s", comm->rank, *my_error);
        return error_set("rank %lld failed (see its error)", (long long)(-1 - flag));
    }
    if (flag == 0) *stopped_early = have == 1;
    return flag == 1;
}

/* The loop proper: the minibatches every rank has, then the mode's last exchange, this rank's
 * state and the mode's model. */
static int run_modes(struct sync_run *r, struct minibatch_source *src, const char *egs_rspec,
                     char **my_error, int *stopped_early) {
    const struct train_sync_options *o = r->o;
    struct minibatch_loop loop; /* progress lines on rank 0 only */
    minibatch_loop_init(&loop, r->n, egs_rspec, &r->st->local,
                        r->comm->rank == 0 ? o->train.progress_every : 0, " (rank 0)", 0,
                        r->start);
    r->deriv = &loop.deriv;
    int rc = r->ops->init ? r->ops->init(r) : 0;
    if (rc == 0 && o->state_rxfilename)
        rc = train_sync_agree(r->comm, train_sync_read_state(r, o->state_rxfilename), "read");
    const struct egs_minibatch *mb;
    while (rc == 0 && (rc = next_together(r, src, egs_rspec, my_error, &mb, stopped_early)) == 1) {
        const struct matrix *out = minibatch_loop_forward(&loop, mb, 1);
        double weight;
        minibatch_loop_score(&loop, out, mb, NULL, &weight);
        if ((rc = r->ops->minibatch(r, mb, weight)) == 0) minibatch_loop_progress(&loop);
    }
    /* Every rank stopped at the same minibatch, so each mode's last exchange happens everywhere. */
    if (rc == 0 && r->ops->end) rc = r->ops->end(r);
    if (rc == 0 && o->state_wxfilename)
        rc = train_sync_agree(r->comm, train_sync_write_state(r, o->state_wxfilename), "write");
    if (rc == 0 && r->ops->result) rc = r->ops->result(r);
    if (r->ops->release) r->ops->release(r);
    minibatch_loop_release(&loop);
    return rc;
}

int train_sync(struct nnet *n, const char *egs_rspec, const struct train_sync_options *o,
               const struct train_comm *comm, struct train_sync_stats *st) {
    ASSERT(o->average_every >= 0 && comm->size >= 1 && comm->rank >= 0 && comm->rank < comm->size);
    memset(st, 0, sizeof *st);
    struct sync_run r = {.n = n, .o = o, .comm = comm, .st = st, .ops = mode_ops(o),
                         .start = time_now()};
    nnet_set_seed(n, o->train.srand + (uint64_t)comm->rank); /* e.g. different Dropout masks */
    if (check_identical(&r, comm, "at the start (same model-in everywhere?), minibatch", 0)) {
        free(r.scratch);
        return -1;
    }
    struct minibatch_source *src = minibatch_source_new(
        egs_rspec, o->train.minibatch_size, nnet_left_context(n), nnet_right_context(n));
    char *my_error = src ? NULL : xstrdup(error_get());
    /* momentum and weight decay (momentum.c) */
    momentum_init(&r.mom, n, o->train.momentum, o->train.nesterov, o->train.weight_decay);
    r.mode = r.ops->state_size ? xcalloc(1, r.ops->state_size) : NULL;
    int stopped_early = 0;
    int rc = run_modes(&r, src, egs_rspec, &my_error, &stopped_early);
    free(r.mode);
    momentum_release(&r.mom);
    /* A pipe we stopped reading early is not an error (table_reader_close knows); a fully read
     * one whose command failed is (its data may be cut short), and only this rank sees it. */
    int close_failed = src && minibatch_source_free(src);
    if (close_failed && rc == 0) {
        free(my_error);
        my_error = xstrdup(error_get());
    }
    free(r.scratch);
    st->local.seconds = time_now() - r.start;
    if (rc == 0) rc = gather_stats(comm, o->mode, stopped_early, close_failed, st);
    if (rc == 0 && st->num_close_failed > 0) {
        if (close_failed) rc = error_set("rank %d: %s", comm->rank, my_error);
        else rc = error_set("%lld rank(s) failed to close their examples", st->num_close_failed);
    }
    free(my_error);
    return rc < 0 ? -1 : 0;
}
