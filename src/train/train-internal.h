/* Private to src/train: helpers shared by the training loops of this module (sgd.c, sync.c,
 * combine.c, twa.c), and a set of minibatches held in memory (validation examples for nnet-combine
 * and TWA), loaded once and passed over many times. */
#ifndef PARNET_TRAIN_TRAIN_INTERNAL_H
#define PARNET_TRAIN_TRAIN_INTERNAL_H

#include "train/train.h"

/* The minibatch input where the network computes: the host matrix itself on the CPU, else a copy
 * in dev (on the device, kept between minibatches). */
const struct matrix *train_input_on_device(const struct egs_minibatch *mb, struct matrix *dev);

/* Objective, derivative (into deriv) and accuracy of the last forward (out) against the
 * minibatch's labels; adds them to st and returns this minibatch's objf and weight. argmax is a
 * scratch buffer of argmax_cap ints, grown as needed (free it after the loop). */
void train_score_minibatch(struct nnet *n, const struct matrix *out, const struct egs_minibatch *mb,
                           struct matrix *deriv, int **argmax, int *argmax_cap,
                           struct train_stats *st, double *objf, double *weight);

/* 0 if every label indexes one of output_dim outputs, else -1 (error_set names the label). */
int train_check_labels(const struct egs_minibatch *mb, int output_dim);

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
