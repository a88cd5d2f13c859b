/* twa: trainable weight averaging (Li, Huang, Tao, Wu, Huang, "Trainable Weight Averaging: A
 * General Approach for Subspace Training", ICLR 2023, arXiv 2205.13104), a model-level operation
 * (nnet-combine --method=twa, steps/twa_head.sh): the combination coefficients of the last K
 * models are trained inside their span. The basis helpers (Gram-Schmidt in double, projection)
 * are exposed for the unit tests. Errors: NULL with error_set. */
#ifndef PARNET_TRAIN_TWA_H
#define PARNET_TRAIN_TWA_H

#include "nnet/nnet.h"

/* Modified Gram-Schmidt in double over num vectors of length dim (rows of v, row-major, in place):
 * on return rows 0..k-1 are orthonormal, spanning the input rows, k is returned. A row whose
 * remaining norm is below 1e-9 of its original norm is dropped as linearly dependent. */
int twa_gram_schmidt(double *v, int num, int dim);
/* alpha = P x (k values) and x = P^T alpha, P being k orthonormal rows of length dim. */
void twa_basis_project(const double *p, int k, int dim, const double *x, double *alpha);
void twa_basis_expand(const double *p, int k, int dim, const double *alpha, double *x);

struct twa_options {
    int num_epochs;           /* passes over the examples (10) */
    float learning_rate;      /* on the per-frame average log-probability (0.5) */
    float momentum;           /* heavy ball (0.9) */
    int minibatch_size;       /* (256) */
    int max_examples;         /* kept in memory (10000) */
    const char *train_rspec;  /* NULL: fit on the validation examples (TWA-v), else on these */
};
void twa_options_default(struct twa_options *o);
/* Orthonormal basis of the models' parameter blocks (Gram-Schmidt in double), start at their
 * mean, then gradient ascent on the coefficients alpha with the projected gradient P g; returns
 * the best of (mean, trained) on the validation examples (always the trained one when fitting on
 * the validation examples and it improved). */
struct nnet *twa_combine(struct nnet *const *models, int num, const char *valid_rspec,
                         const struct twa_options *o);

#endif
