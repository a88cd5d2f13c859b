/* The per-minibatch bookkeeping of a pass (train-internal.h): checks, forward, scoring, progress. */
#include "train/train-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void minibatch_loop_init(struct minibatch_loop *l, struct nnet *n, const char *rspec,
                         struct train_stats *st, int progress_every, const char *who, int warn,
                         double start) {
    memset(l, 0, sizeof *l);
    l->n = n;
    l->rspec = rspec;
    l->st = st;
    l->every = progress_every;
    l->who = who;
    l->warn = warn;
    l->phase_start = start;
}

void minibatch_loop_release(struct minibatch_loop *l) {
    matrix_release(&l->deriv);
    matrix_release(&l->dev_input);
    free(l->argmax);
    l->argmax = NULL;
    l->argmax_cap = 0;
}

/* Labels must index the network's outputs: a bad label is bad input, named here. */
int minibatch_check(const struct egs_minibatch *mb, const struct nnet *n, const char *rspec) {
    if (mb->input_dim != nnet_input_dim(n))
        return error_set("'%s': examples have input dimension %d, the network expects %d", rspec,
                         mb->input_dim, nnet_input_dim(n));
    int output_dim = nnet_output_dim(n);
    for (int i = 0; i < mb->num_labels; i++)
        if (mb->label_index[i] < 0 || mb->label_index[i] >= output_dim)
            return error_set("'%s': label %d out of range for a network with %d outputs", rspec,
                             (int)mb->label_index[i], output_dim);
    return 0;
}

const struct matrix *minibatch_input_on_device(const struct egs_minibatch *mb, struct matrix *dev) {
    return matrix_on_default_device(&mb->input, dev);
}

const struct matrix *minibatch_loop_forward(struct minibatch_loop *l,
                                            const struct egs_minibatch *mb, int training) {
    return nnet_forward(l->n, minibatch_input_on_device(mb, &l->dev_input), mb->num_egs,
                        training);
}

void minibatch_loop_score(struct minibatch_loop *l, const struct matrix *out,
                          const struct egs_minibatch *mb, double *objf, double *weight) {
    const int *rows = mb->label_row, *cols = (const int *)mb->label_index;
    double o = nnet_objective_xent(l->n, mb->num_labels, rows, cols, mb->label_weight, &l->deriv);
    if (l->argmax_cap < out->rows) {
        l->argmax_cap = out->rows;
        l->argmax = xrealloc(l->argmax, sizeof(int) * out->rows);
    }
    matrix_row_argmax(out, l->argmax);
    double w = 0, correct = 0;
    for (int i = 0; i < mb->num_labels; i++) {
        w += mb->label_weight[i];
        if (l->argmax[rows[i]] == cols[i]) correct += mb->label_weight[i];
    }
    struct train_stats *st = l->st;
    st->objf += o;
    st->weight += w;
    st->correct += correct;
    st->num_egs += mb->num_egs;
    st->num_frames += (long long)mb->num_egs * mb->frames_per_eg;
    st->num_minibatches++;
    l->phase_objf += o;
    l->phase_weight += w;
    l->phase_correct += correct;
    if (objf) *objf = o;
    if (weight) *weight = w;
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

void minibatch_loop_progress(struct minibatch_loop *l) {
    long long done = l->st->num_minibatches;
    if (l->every <= 0 || done % l->every != 0) return;
    double now = time_now();
    LOG("Minibatches %lld-%lld%s: average objective %.5f, accuracy %.4f over %.0f frames, "
        "%.0f frames/s", l->phase_first, done - 1, l->who,
        l->phase_weight > 0 ? l->phase_objf / l->phase_weight : 0.0,
        l->phase_weight > 0 ? l->phase_correct / l->phase_weight : 0.0, l->phase_weight,
        l->phase_weight / (now - l->phase_start > 1e-9 ? now - l->phase_start : 1e-9));
    if (l->warn) warn_if_diverging(l->n, l->phase_objf, l->phase_weight, l->phase_first, done - 1);
    l->phase_objf = l->phase_weight = l->phase_correct = 0;
    l->phase_first = done;
    l->phase_start = now;
}

void minibatch_loop_finish(struct minibatch_loop *l) {
    if (l->warn)
        warn_if_diverging(l->n, l->st->objf, l->st->weight, 0, l->st->num_minibatches - 1);
}
