/* train-internal: helpers shared by the training loops of this module (sgd.c, sync.c). */
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

#endif
