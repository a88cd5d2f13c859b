/* The SGD loop (nnet-train), evaluation (nnet-compute-prob) and inference (nnet-forward). */
#include "update/update.h"
#include "train/train-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* State of the methods layered on the update: GAF, the proximal pull, Entropy-SGD. */
struct extras {
    const struct train_options *o;
    struct nnet *n;
    struct gaf gaf;
    int gaf_on, entropy_on;
    struct vector ref;          /* view of the proximal model's block, dim 0 when off */
    struct vector outer, mu;    /* Entropy-SGD: x and the running mean of the inner iterates */
    struct vector noise;
    struct rng rng;
    int inner_count;
    struct momentum mom;  /* momentum and weight decay (off: the plain NNET_UPDATE path) */
    double gaf_weight;          /* label weight of the current GAF step's microbatches */
};

static void extras_init(struct extras *e, struct nnet *n, const struct train_options *o) {
    memset(e, 0, sizeof *e);
    e->o = o;
    e->n = n;
    int dim = nnet_num_params(n);
    e->gaf_on = o->gaf_microbatches >= 2;
    if (e->gaf_on) gaf_init(&e->gaf, dim, o->gaf_threshold, o->gaf_fusion);
    if (o->proximal_model) e->ref = nnet_params(o->proximal_model);
    e->entropy_on = o->entropy_inner_steps >= 1;
    if (e->entropy_on) {
        struct vector p = nnet_params(n);
        vector_init(&e->outer, dim);
        vector_init(&e->mu, dim);
        vector_copy(&e->outer, &p);
        vector_copy(&e->mu, &p);
        if (o->entropy_noise > 0) vector_init(&e->noise, dim);
    }
    rng_seed(&e->rng, o->srand ^ 0x5eed0e17ULL);
    momentum_init(&e->mom, n, o->momentum, o->nesterov, o->weight_decay);
}

static void extras_release(struct extras *e) {
    if (e->gaf_on) gaf_release(&e->gaf);
    vector_release(&e->outer);
    vector_release(&e->mu);
    vector_release(&e->noise);
    momentum_release(&e->mom);
}

/* Entropy-SGD's outer step: x <- x - eta (x - mu), the elastic pull of x, then y = mu = x. */
static void outer_step(struct extras *e, struct train_stats *st) {
    const struct train_options *o = e->o;
    struct vector p = nnet_params(e->n);
    elastic_pull(&e->outer, &e->mu, o->entropy_outer_rate);
    if (e->ref.dim) elastic_pull(&e->outer, &e->ref, o->proximal_coupling);
    vector_copy(&p, &e->outer);
    vector_copy(&e->mu, &e->outer);
    e->inner_count = 0;
    st->outer_steps++;
}

/* After an update attempt (skipped: the network refused a non-finite step). */
static void after_update(struct extras *e, int skipped, struct train_stats *st) {
    const struct train_options *o = e->o;
    if (skipped) {
        st->num_skipped++;
        return;
    }
    st->num_updates++;
    struct vector p = nnet_params(e->n);
    if (e->entropy_on) {
        /* SGLD inner step: the coupling -gamma (y - x) and the noise, then the running mean */
        elastic_pull(&p, &e->outer, o->entropy_coupling);
        if (o->entropy_noise > 0) {
            vector_set_randn(&e->noise, &e->rng, o->entropy_noise);
            vector_add(&p, 1, &e->noise);
        }
        elastic_ema(&e->mu, &p, o->entropy_ema);
        if (++e->inner_count == o->entropy_inner_steps) outer_step(e, st);
    } else if (e->ref.dim) {
        elastic_pull(&p, &e->ref, o->proximal_coupling);
    }
}

/* Close the GAF step (train_gaf_finish) and follow an applied update with the extras. */
static void gaf_finish(struct extras *e, struct train_stats *st) {
    int skipped, offered = e->gaf.num_offered;
    double per_micro = offered > 0 ? e->gaf_weight / offered : 0;
    e->gaf_weight = 0;
    if (train_gaf_finish(&e->gaf, e->n, e->o, st, &skipped, &e->mom, per_micro))
        after_update(e, skipped, st);
}

/* The update for one minibatch (label weight w) after its forward and scoring. */
static void update_minibatch(struct extras *e, const struct matrix *deriv, double w,
                             struct train_stats *st) {
    if (!e->gaf_on) {
        after_update(e, momentum_backward_update(&e->mom, e->n, deriv, w), st);
        return;
    }
    nnet_backward(e->n, deriv, train_gaf_backward_mode(e->o));
    struct vector d = nnet_delta(e->n);
    e->gaf_weight += w;
    train_gaf_offer(&e->gaf, &d);
    if (e->gaf.num_offered == e->o->gaf_microbatches) gaf_finish(e, st);
}

static int run_pass(struct nnet *n, const char *egs_rspec, int minibatch_size,
                    const struct train_options *update, int progress_every,
                    struct train_stats *st) {
    memset(st, 0, sizeof *st);
    double start = time_now();
    struct minibatch_source *src = minibatch_source_new(
        egs_rspec, minibatch_size, nnet_left_context(n), nnet_right_context(n));
    if (!src) return -1;
    struct extras ex;
    if (update) extras_init(&ex, n, update);
    struct minibatch_loop loop;
    minibatch_loop_init(&loop, n, egs_rspec, st, progress_every, "", update != NULL, start);
    const struct egs_minibatch *mb;
    int rc;
    while ((rc = minibatch_source_next(src, &mb)) == 1) {
        if ((rc = minibatch_check(mb, n, egs_rspec))) break;
        const struct matrix *out = minibatch_loop_forward(&loop, mb, update != NULL);
        double w;
        minibatch_loop_score(&loop, out, mb, NULL, &w);
        if (update) update_minibatch(&ex, &loop.deriv, w, st);
        if (update && update->average_period > 0 &&
            st->num_minibatches % update->average_period == 0) {
            /* the running average: avg <- avg + (x - avg) / (count + 1) */
            struct vector avg = nnet_params(update->average_model), x = nnet_params(n);
            long long *count = update->average_count;
            elastic_ema(&avg, &x, (float)((double)*count / (double)(*count + 1)));
            ++*count;
        }
        minibatch_loop_progress(&loop);
    }
    if (minibatch_source_free(src) && rc == 0) rc = -1;
    if (rc == 0) minibatch_loop_finish(&loop);
    if (update) {
        if (rc == 0 && ex.gaf_on) gaf_finish(&ex, st); /* a short last step */
        if (rc == 0 && ex.entropy_on && ex.inner_count > 0) outer_step(&ex, st);
        extras_release(&ex);
    }
    minibatch_loop_release(&loop);
    st->seconds = time_now() - start;
    return rc < 0 ? -1 : 0;
}

int train_sgd(struct nnet *n, const char *egs_rspec, const struct train_options *o,
              struct train_stats *st) {
    nnet_set_seed(n, o->srand);
    if (o->average_period > 0 &&
        (!o->average_model || !o->average_count || !nnet_same_structure(n, o->average_model)))
        return error_set("the running average does not have the structure of the model trained");
    if (o->proximal_model && !nnet_same_structure(n, o->proximal_model))
        return error_set("the proximal model does not have the structure of the model trained");
    return run_pass(n, egs_rspec, o->minibatch_size, o, o->progress_every, st);
}

int train_eval_prob(struct nnet *n, const char *egs_rspec, int minibatch_size,
                    struct train_stats *st) {
    return run_pass(n, egs_rspec, minibatch_size, NULL, 0, st);
}

int train_recompute_stats(struct nnet *n, const char *egs_rspec, int minibatch_size,
                          struct train_stats *st) {
    memset(st, 0, sizeof *st);
    if (nnet_stats_dim(n) == 0)
        return error_set("the model stores no statistics (no BatchNorm component): nothing to "
                         "recompute");
    double start = time_now();
    struct minibatch_source *src = minibatch_source_new(
        egs_rspec, minibatch_size, nnet_left_context(n), nnet_right_context(n));
    if (!src) return -1;
    struct nnet *work = nnet_copy(n); /* its momentum changes per minibatch; n keeps its own */
    struct minibatch_loop loop;
    minibatch_loop_init(&loop, work, egs_rspec, st, 0, "", 0, start);
    const struct egs_minibatch *mb;
    long long seen = 0;
    int rc;
    while ((rc = minibatch_source_next(src, &mb)) == 1) {
        if ((rc = minibatch_check(mb, work, egs_rspec))) break;
        seen += mb->num_egs;
        /* the running mean over minibatches: this one weighs its share of the examples so far
         * (the first replaces the stored statistics) */
        nnet_set_stats_momentum(work, (float)((double)mb->num_egs / (double)seen));
        minibatch_loop_score(&loop, minibatch_loop_forward(&loop, mb, 1), mb, NULL, NULL);
    }
    if (minibatch_source_free(src) && rc == 0) rc = -1;
    if (rc == 0 && seen == 0) rc = error_set("no examples in '%s'", egs_rspec);
    if (rc == 0) {
        nnet_scale_stats(n, 0);
        nnet_add_stats(n, 1, work);
    }
    minibatch_loop_release(&loop);
    nnet_free(work);
    st->seconds = time_now() - start;
    return rc < 0 ? -1 : 0;
}

void train_forward_utterance(struct nnet *n, const struct matrix *feats, int apply_log,
                       struct matrix *out) {
    int left = nnet_left_context(n), right = nnet_right_context(n);
    int t_max = feats->rows, dim = feats->cols;
    ASSERT(dim == nnet_input_dim(n) && t_max > 0);
    struct matrix padded;
    matrix_init_on(&padded, left + t_max + right, dim, MATRIX_CPU);
    for (int r = 0; r < padded.rows; r++) {
        int t = r - left;
        t = t < 0 ? 0 : t >= t_max ? t_max - 1 : t;
        memcpy(padded.data + (size_t)r * padded.stride, feats->data + (size_t)t * feats->stride,
               sizeof(float) * dim);
    }
    struct matrix dev = {0};
    const struct matrix *y = nnet_forward(n, matrix_on_default_device(&padded, &dev), 1, 0);
    ASSERT(y->rows == t_max);
    matrix_resize(out, y->rows, y->cols);
    ASSERT(out->device == MATRIX_CPU); /* train.h: a host matrix */
    matrix_copy(out, y);
    int last_is_log = nnet_component(n, nnet_num_components(n) - 1)->ops->output_is_log;
    for (int r = 0; r < out->rows; r++) {
        float *row = out->data + (size_t)r * out->stride;
        for (int c = 0; c < out->cols; c++) {
            if (apply_log && !last_is_log) row[c] = logf(row[c] > 1e-20f ? row[c] : 1e-20f);
            else if (!apply_log && last_is_log) row[c] = expf(row[c]);
        }
    }
    matrix_release(&dev);
    matrix_release(&padded);
}
