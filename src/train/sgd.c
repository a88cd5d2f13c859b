/* The SGD loop (nnet-train), evaluation (nnet-compute-prob) and inference (nnet-forward). */
#include "train/train.h"
#include "train/train-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void train_options_default(struct train_options *o) {
    o->minibatch_size = 512;
    o->srand = 0;
    o->progress_every = 50;
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

static int run_pass(struct nnet *n, const char *egs_rspec, int minibatch_size, int update,
                    int progress_every, struct train_stats *st) {
    memset(st, 0, sizeof *st);
    double start = time_now();
    struct minibatch_source *src = minibatch_source_new(
        egs_rspec, minibatch_size, nnet_left_context(n), nnet_right_context(n));
    if (!src) return -1;
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
        const struct matrix *out =
            nnet_forward(n, train_input_on_device(mb, &dev_input), mb->num_egs, update);
        double correct_before = st->correct, o, w;
        train_score_minibatch(n, out, mb, &deriv, &argmax, &argmax_cap, st, &o, &w);
        if (update && nnet_backward(n, &deriv, NNET_UPDATE)) st->num_skipped++;
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
            phase_objf = phase_weight = phase_correct = 0;
            phase_first = st->num_minibatches;
            phase_start = now;
        }
    }
    if (minibatch_source_free(src) && rc == 0) rc = -1;
    matrix_release(&deriv);
    matrix_release(&dev_input);
    free(argmax);
    st->seconds = time_now() - start;
    return rc < 0 ? -1 : 0;
}

int train_sgd(struct nnet *n, const char *egs_rspec, const struct train_options *o,
              struct train_stats *st) {
    nnet_set_seed(n, o->srand);
    return run_pass(n, egs_rspec, o->minibatch_size, 1, o->progress_every, st);
}

int eval_prob(struct nnet *n, const char *egs_rspec, int minibatch_size, struct train_stats *st) {
    return run_pass(n, egs_rspec, minibatch_size, 0, 0, st);
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
