/* Minibatches of examples for the trainer (egs.h). */
#include "egs/egs.h"

#include <stdlib.h>
#include <string.h>

void egs_minibatch_init(struct egs_minibatch *mb) { memset(mb, 0, sizeof *mb); }

void egs_minibatch_release(struct egs_minibatch *mb) {
    matrix_release(&mb->input); /* frees nothing when it is a view of storage */
    matrix_release(&mb->storage);
    free(mb->label_row);
    free(mb->label_index);
    free(mb->label_weight);
    memset(mb, 0, sizeof *mb);
}

int egs_minibatch_build(struct egs_minibatch *mb, const struct example *const *egs, int n, int left,
                        int right) {
    ASSERT(n >= 1);
    ASSERT((left < 0) == (right < 0));
    const struct example *e0 = egs[0];
    int trim = left >= 0;
    if (!trim) {
        left = e0->left_context;
        right = example_right_context(e0);
    }
    int frames = e0->num_frames, dim = example_input_dim(e0);
    int total_labels = 0;
    for (int k = 0; k < n; k++) {
        const struct example *eg = egs[k];
        if (eg->num_frames != frames || example_input_dim(eg) != dim)
            return error_set("example %d of the minibatch has %d frames of dim %d, example 0 has "
                             "%d of dim %d",
                             k, eg->num_frames, example_input_dim(eg), frames, dim);
        if (eg->left_context < left || example_right_context(eg) < right)
            return error_set("example %d of the minibatch has context (%d, %d), needs (%d, %d)", k,
                             eg->left_context, example_right_context(eg), left, right);
        if (!trim && (eg->left_context != left || example_right_context(eg) != right))
            return error_set("example %d of the minibatch has context (%d, %d), example 0 has "
                             "(%d, %d)",
                             k, eg->left_context, example_right_context(eg), left, right);
        total_labels += example_num_labels(eg);
    }
    int rows_per_eg = left + frames + right;
    if (mb->input.rows != n * rows_per_eg || mb->input.cols != dim) {
        matrix_release(&mb->input);
        matrix_init_on(&mb->input, n * rows_per_eg, dim, MATRIX_CPU);
    }
    if (total_labels > mb->label_cap) {
        mb->label_cap = total_labels;
        mb->label_row = xrealloc(mb->label_row, sizeof(int) * total_labels);
        mb->label_index = xrealloc(mb->label_index, sizeof(int32_t) * total_labels);
        mb->label_weight = xrealloc(mb->label_weight, sizeof(float) * total_labels);
    }
    mb->num_egs = n;
    mb->rows_per_eg = rows_per_eg;
    mb->frames_per_eg = frames;
    mb->input_dim = dim;
    mb->left_context = left;
    mb->right_context = right;
    int nl = 0;
    for (int k = 0; k < n; k++) {
        const struct example *eg = egs[k];
        struct matrix dst = matrix_rows(&mb->input, k * rows_per_eg, rows_per_eg);
        if (example_input_decode_rows(eg, eg->left_context - left, rows_per_eg, &dst))
            return error_wrap("example %d of the minibatch: ", k);
        for (int t = 0; t < frames; t++)
            for (int i = eg->label_start[t]; i < eg->label_start[t + 1]; i++, nl++) {
                mb->label_row[nl] = k * frames + t;
                mb->label_index[nl] = eg->label_index[i];
                mb->label_weight[nl] = eg->label_weight[i];
            }
    }
    mb->num_labels = nl;
    return 0;
}
