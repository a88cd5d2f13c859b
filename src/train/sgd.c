/* The SGD loop (nnet-train), evaluation (nnet-compute-prob) and inference (nnet-forward). */
#include "train/train.h"
#include "train/train-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void train_options_default(struct train_options *o) {
    memset(o, 0, sizeof *o);
    o->minibatch_size = 512;
    o->srand = 0;
    o->progress_every = 50;
    o->gaf_threshold = 0.97f;
    o->gaf_fusion = GAF_FUSION_HALVING;
    o->entropy_coupling = 0.01f;
    o->entropy_ema = 0.75f;
    o->entropy_outer_rate = 1;
}

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
    struct train_momentum mom;  /* momentum and weight decay (off: the plain NNET_UPDATE path) */
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
    train_momentum_init(&e->mom, n, o);
}

static void extras_release(struct extras *e) {
    if (e->gaf_on) gaf_release(&e->gaf);
    vector_release(&e->outer);
    vector_release(&e->mu);
    vector_release(&e->noise);
    train_momentum_release(&e->mom);
}

/* Entropy-SGD's outer step: x <- x - eta (x - mu), the elastic pull of x, then y = mu = x. */
static void outer_step(struct extras *e, struct train_stats *st) {
    const struct train_options *o = e->o;
    struct vector p = nnet_params(e->n);
    proximal_pull(&e->outer, &e->mu, o->entropy_outer_rate);
    if (e->ref.dim) proximal_pull(&e->outer, &e->ref, o->proximal_coupling);
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
        proximal_pull(&p, &e->outer, o->entropy_coupling);
        if (o->entropy_noise > 0) {
            vector_set_randn(&e->noise, &e->rng, o->entropy_noise);
            vector_add(&p, 1, &e->noise);
        }
        vector_ema(&e->mu, &p, o->entropy_ema);
        if (++e->inner_count == o->entropy_inner_steps) outer_step(e, st);
    } else if (e->ref.dim) {
        proximal_pull(&p, &e->ref, o->proximal_coupling);
    }
}

enum nnet_backward_mode train_gaf_backward_mode(const struct train_options *o) {
    return o->gaf_on_steps ? NNET_STEP : NNET_GRADIENT;
}

int train_gaf_offer(struct gaf *g, const struct vector *micro) {
    double dist;
    int taken = gaf_offer(g, micro, &dist);
    if (g->num_offered > 1)
        VLOG(2, "GAF: microbatch %d: cosine distance %.4f, %s", g->num_offered, dist,
             taken ? "accepted" : "rejected");
    return taken;
}

int train_gaf_finish(struct gaf *g, struct nnet *n, const struct train_options *o,
                     struct train_stats *st, int *skipped, struct train_momentum *m,
                     double frames_per_micro) {
    int attempted = 0;
    if (g->num_offered == 1) {
        VLOG(1, "GAF: the last microbatch has nothing to agree with: dropped");
    } else if (g->num_offered > 1) {
        st->gaf_steps++;
        st->gaf_offered += g->num_offered - 1;
        if (g->num_accepted < 2) {
            st->gaf_skipped++;
            VLOG(1, "GAF: no microbatch agreed with the first of %d: step skipped",
                 g->num_offered);
        } else {
            st->gaf_accepted += g->num_accepted - 1;
            attempted = 1;
            /* num_accepted x the fusion (a GAF step with tau >= 2 and the mean fusion is one SGD
             * step on the union), or the fusion itself (gaf_unit_scale: the reference) */
            float scale = o->gaf_unit_scale ? 1.0f : (float)g->num_accepted;
            double frames = frames_per_micro * scale;
            if (m && m->on && o->gaf_on_steps) {
                vector_scale(&g->fused, scale);
                *skipped = train_momentum_apply_step(m, n, &g->fused, frames);
            } else if (m && m->on) {
                *skipped = train_momentum_apply_gradient(m, n, &g->fused, scale, frames);
            } else if (o->gaf_on_steps) {
                vector_scale(&g->fused, scale);
                *skipped = nnet_apply_step(n, &g->fused);
            } else {
                *skipped = nnet_apply_gradient(n, &g->fused, scale);
            }
        }
    }
    gaf_begin(g);
    return attempted;
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
    if (!e->gaf_on && e->mom.on) {
        nnet_backward(e->n, deriv, NNET_STEP);
        struct vector d = nnet_delta(e->n);
        after_update(e, train_momentum_apply_step(&e->mom, e->n, &d, w), st);
        return;
    }
    if (!e->gaf_on) {
        after_update(e, nnet_backward(e->n, deriv, NNET_UPDATE), st);
        return;
    }
    nnet_backward(e->n, deriv, train_gaf_backward_mode(e->o));
    struct vector d = nnet_delta(e->n);
    e->gaf_weight += w;
    train_gaf_offer(&e->gaf, &d);
    if (e->gaf.num_offered == e->o->gaf_microbatches) gaf_finish(e, st);
}

const struct matrix *train_input_on_device(const struct egs_minibatch *mb, struct matrix *dev) {
    if (matrix_default_device == MATRIX_CPU) return &mb->input;
    if (dev->rows != mb->input.rows || dev->cols != mb->input.cols) {
        matrix_release(dev);
        matrix_init(dev, mb->input.rows, mb->input.cols);
    }
    matrix_copy(dev, &mb->input);
    return dev;
}

void train_score_minibatch(struct nnet *n, const struct matrix *out, const struct egs_minibatch *mb,
                           struct matrix *deriv, int **argmax, int *argmax_cap,
                           struct train_stats *st, double *objf, double *weight) {
    const int *rows = mb->label_row, *cols = (const int *)mb->label_index;
    double o = nnet_objective_xent(n, mb->num_labels, rows, cols, mb->label_weight, deriv);
    if (*argmax_cap < out->rows) {
        *argmax_cap = out->rows;
        *argmax = xrealloc(*argmax, sizeof(int) * out->rows);
    }
    matrix_row_argmax(out, *argmax);
    double w = 0, correct = 0;
    for (int i = 0; i < mb->num_labels; i++) {
        w += mb->label_weight[i];
        if ((*argmax)[rows[i]] == cols[i]) correct += mb->label_weight[i];
    }
    st->objf += o;
    st->weight += w;
    st->correct += correct;
    st->num_egs += mb->num_egs;
    st->num_frames += (long long)mb->num_egs * mb->frames_per_eg;
    st->num_minibatches++;
    *objf = o;
    *weight = w;
}

/* Labels must index the network's outputs: a bad label is bad input, named here. */
int train_check_labels(const struct egs_minibatch *mb, int output_dim) {
    for (int i = 0; i < mb->num_labels; i++)
        if (mb->label_index[i] < 0 || mb->label_index[i] >= output_dim)
            return error_set("label %d out of range for a network with %d outputs",
                             (int)mb->label_index[i], output_dim);
    return 0;
}

/* Divergence warning (training only): an average objective that is not finite, or far below the
 * uniform prediction's log(1/C) (below 2 log(1/C) - 2), means the step is too large. */
static void warn_if_diverging(const struct nnet *n, double objf, double weight, long long first,
                              long long last) {
    if (!(weight > 0)) return;
    double avg = objf / weight, uniform = -log((double)nnet_output_dim(n));
    if (!isfinite(avg) || avg < 2 * uniform - 2)
        WARN("minibatches %lld-%lld: average objective %g is %s the uniform prediction's %.4f: "
             "training is diverging (lower the learning rate, keep --max-change on, normalise "
             "the inputs)", first, last, avg, isfinite(avg) ? "far below" : "not finite, vs",
             uniform);
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
    struct matrix deriv = {0}, dev_input = {0};
    int *argmax = NULL, argmax_cap = 0, rc;
    const struct egs_minibatch *mb;
    double phase_objf = 0, phase_weight = 0, phase_correct = 0, phase_start = start;
    long long phase_first = 0;
    while ((rc = minibatch_source_next(src, &mb)) == 1) {
        if (mb->input_dim != nnet_input_dim(n)) {
            rc = error_set("'%s': examples have input dimension %d, the network expects %d",
                           egs_rspec, mb->input_dim, nnet_input_dim(n));
            break;
        }
        if (train_check_labels(mb, nnet_output_dim(n))) {
            rc = error_wrap("'%s': ", egs_rspec);
            break;
        }
        const struct matrix *out = nnet_forward(n, train_input_on_device(mb, &dev_input),
                                                mb->num_egs, update != NULL);
        double correct_before = st->correct, o, w;
        train_score_minibatch(n, out, mb, &deriv, &argmax, &argmax_cap, st, &o, &w);
        if (update) update_minibatch(&ex, &deriv, w, st);
        phase_objf += o;
        phase_weight += w;
        phase_correct += st->correct - correct_before;
        if (progress_every > 0 && st->num_minibatches % progress_every == 0) {
            double now = time_now();
            LOG("Minibatches %lld-%lld: average objective %.5f, accuracy %.4f over %.0f frames, "
                "%.0f frames/s", phase_first, st->num_minibatches - 1,
                phase_weight > 0 ? phase_objf / phase_weight : 0.0,
                phase_weight > 0 ? phase_correct / phase_weight : 0.0, phase_weight,
                phase_weight / (now - phase_start > 1e-9 ? now - phase_start : 1e-9));
            if (update) warn_if_diverging(n, phase_objf, phase_weight, phase_first,
                                          st->num_minibatches - 1);
            phase_objf = phase_weight = phase_correct = 0;
            phase_first = st->num_minibatches;
            phase_start = now;
        }
    }
    if (minibatch_source_free(src) && rc == 0) rc = -1;
    if (update && rc == 0) warn_if_diverging(n, st->objf, st->weight, 0, st->num_minibatches - 1);
    if (update) {
        if (rc == 0 && ex.gaf_on) gaf_finish(&ex, st); /* a short last step */
        if (rc == 0 && ex.entropy_on && ex.inner_count > 0) outer_step(&ex, st);
        extras_release(&ex);
    }
    matrix_release(&deriv);
    matrix_release(&dev_input);
    free(argmax);
    st->seconds = time_now() - start;
    return rc < 0 ? -1 : 0;
}

int train_sgd(struct nnet *n, const char *egs_rspec, const struct train_options *o,
              struct train_stats *st) {
    nnet_set_seed(n, o->srand);
    if (o->proximal_model && !nnet_same_structure(n, o->proximal_model))
        return error_set("the proximal model does not have the structure of the model trained");
    return run_pass(n, egs_rspec, o->minibatch_size, o, o->progress_every, st);
}

int eval_prob(struct nnet *n, const char *egs_rspec, int minibatch_size, struct train_stats *st) {
    return run_pass(n, egs_rspec, minibatch_size, NULL, 0, st);
}

void forward_utterance(struct nnet *n, const struct matrix *feats, int apply_log,
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
    const struct matrix *in = &padded;
    if (matrix_default_device != MATRIX_CPU) {
        matrix_init(&dev, padded.rows, padded.cols);
        matrix_copy(&dev, &padded);
        in = &dev;
    }
    const struct matrix *y = nnet_forward(n, in, 1, 0);
    ASSERT(y->rows == t_max);
    matrix_resize(out, y->rows, y->cols);
    if (out->device != MATRIX_CPU) ASSERT(!"forward_utterance: out must be a host matrix");
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
