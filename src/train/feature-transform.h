/* feature-transform: input normalisation (nnet-get-feature-transform; Kaldi nnet2's get_lda.sh /
 * nnet-get-feature-transform): per-dimension mean/variance, or LDA on spliced frames, as the
 * (out x in+1) matrix a FixedAffineComponent reads (matrix=F: linear part | bias column). A
 * model-level operation on features, not a loop: it reads feature tables, not example archives. */
#ifndef PARNET_TRAIN_FEATURE_TRANSFORM_H
#define PARNET_TRAIN_FEATURE_TRANSFORM_H

#include "matrix/matrix.h"

enum feature_transform_type {
    FEATURE_TRANSFORM_MEANVAR, /* x -> (x - mean) / stddev per dimension (constant: centred) */
    FEATURE_TRANSFORM_LDA,     /* LDA on frames spliced with left/right context: the rows, largest
                                * between-class variance first, decorrelate the within-class
                                * covariance; each output dimension has unit total variance */
};
struct feature_transform_options {
    enum feature_transform_type type;
    int left_context, right_context; /* LDA: frames spliced around each frame (edges repeated) */
    int dim;                          /* LDA: output dimension (0: all) */
};
void feature_transform_options_default(struct feature_transform_options *o);
/* Statistics of every frame of feats_rspec (labels_rspec: per-frame int32 labels, LDA only; an
 * utterance without matching labels is left out with a warning) -> *out (host, matrix_init'ed):
 * the (out x in + 1) matrix [A | b] of a FixedAffineComponent's matrix=F, y = A x + b. *num_frames
 * (may be NULL) receives the frames used. Returns 0, or -1 (error_set: file, key, reason). */
int feature_transform_estimate(const char *feats_rspec, const char *labels_rspec,
                               const struct feature_transform_options *o, struct matrix *out,
                               long long *num_frames);

#endif
