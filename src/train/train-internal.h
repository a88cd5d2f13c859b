/* Private to src/train: a set of minibatches held in memory (validation examples for nnet-combine
 * and TWA), loaded once and passed over many times. */
#ifndef PARNET_TRAIN_TRAIN_INTERNAL_H
#define PARNET_TRAIN_TRAIN_INTERNAL_H

#include "train/train.h"

struct mb_set {
    struct egs_minibatch *mbs; /* (num) host copies */
    int num, num_egs;
    double total_weight; /* sum of label weights */
};
/* Read up to max_examples examples of rspec in minibatches of minibatch_size, trimmed to n's
 * context, checking labels against n's outputs. 0, or -1 with error_set (the set is then still
 * released by mb_set_release). */
int mb_set_load(struct mb_set *s, const char *rspec, int minibatch_size, int max_examples,
                struct nnet *n);
void mb_set_release(struct mb_set *s);
/* Forward minibatch b of the set through n (copied to the device when there is one); returns the
 * objective sum and leaves d objective / d output in deriv. */
double mb_set_forward(struct mb_set *s, int b, struct nnet *n, struct matrix *dev_input,
                      struct matrix *deriv);

#endif
