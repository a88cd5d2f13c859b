/* Minibatches held in memory (train-internal.h). */
#include "train/train-internal.h"

#include <stdlib.h>
#include <string.h>

int minibatch_set_load(struct minibatch_set *s, const char *rspec, int minibatch_size,
                       int max_examples, struct nnet *n) {
    memset(s, 0, sizeof *s);
    struct minibatch_source *src =
        minibatch_source_new(rspec, minibatch_size, nnet_left_context(n), nnet_right_context(n));
    if (!src) return -1;
    const struct egs_minibatch *mb;
    int rc = 0, cap = 0;
    while (s->num_egs < max_examples && (rc = minibatch_source_next(src, &mb)) == 1) {
        if (minibatch_check(mb, n, rspec)) { /* the message first: mb belongs to src */
            minibatch_source_free(src);
            return -1;
        }
        if (s->num == cap) {
            cap = cap ? 2 * cap : 8;
            s->mbs = xrealloc(s->mbs, sizeof *s->mbs * cap);
        }
        struct egs_minibatch *dst = &s->mbs[s->num++];
        *dst = *mb; /* take a deep copy of what the source will reuse */
        dst->input = (struct matrix){0};
        dst->storage = (struct matrix){0}; /* the source's rows, not ours */
        matrix_init_on(&dst->input, mb->input.rows, mb->input.cols, MATRIX_CPU);
        matrix_copy(&dst->input, &mb->input);
        dst->label_row = xmalloc(sizeof(int) * (mb->num_labels + 1));
        dst->label_index = xmalloc(sizeof(int32_t) * (mb->num_labels + 1));
        dst->label_weight = xmalloc(sizeof(float) * (mb->num_labels + 1));
        dst->label_cap = mb->num_labels + 1;
        memcpy(dst->label_row, mb->label_row, sizeof(int) * mb->num_labels);
        memcpy(dst->label_index, mb->label_index, sizeof(int32_t) * mb->num_labels);
        memcpy(dst->label_weight, mb->label_weight, sizeof(float) * mb->num_labels);
        for (int i = 0; i < mb->num_labels; i++)
            s->total_weight += mb->label_weight[i];
        s->num_egs += mb->num_egs;
    }
    if (minibatch_source_free(src) || rc < 0) return -1;
    if (!(s->total_weight > 0)) return error_set("'%s': no labelled examples", rspec);
    return 0;
}

void minibatch_set_release(struct minibatch_set *s) {
    for (int b = 0; b < s->num; b++)
        egs_minibatch_release(&s->mbs[b]);
    free(s->mbs);
    matrix_release(&s->dev_input);
    matrix_release(&s->deriv);
    memset(s, 0, sizeof *s);
}

double minibatch_set_forward(struct minibatch_set *s, int b, struct nnet *n) {
    const struct egs_minibatch *mb = &s->mbs[b];
    nnet_forward(n, minibatch_input_on_device(mb, &s->dev_input), mb->num_egs, 0);
    return nnet_objective_xent(n, mb->num_labels, mb->label_row, (const int *)mb->label_index,
                               mb->label_weight, &s->deriv);
}
