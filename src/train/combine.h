/* combine: model-level combination as Kaldi nnet2's nnet-combine-fast (nnet-combine): one weight
 * per (model, updatable component) found by L-BFGS on validation examples, without Kaldi's Fisher
 * preconditioning; the weights are not constrained to sum to 1. Errors: NULL with error_set. */
#ifndef PARNET_TRAIN_COMBINE_H
#define PARNET_TRAIN_COMBINE_H

#include "nnet/nnet.h"

struct combine_options {
    int num_iters;            /* L-BFGS iterations (20) */
    int minibatch_size;       /* for the objective's passes (1024) */
    int max_examples;         /* examples kept in memory from the validation archive (10000) */
};
void combine_options_default(struct combine_options *o);
/* One weight per (model, updatable component), found by L-BFGS maximising the average
 * log-probability on the validation examples, starting from the plain average. The result is never
 * worse on that objective than the best of the inputs and their average (the best of these is
 * returned if the search does not beat it). Logs the weights and the objective. */
struct nnet *combine_models(struct nnet *const *models, int num, const char *valid_rspec,
                            const struct combine_options *o);

#endif
