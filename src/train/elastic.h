/* elastic: the two vector rules of the elastic and local-entropy methods, over whole parameter
 * blocks (docs/STYLE.md §3):
 *   EASGD (Zhang, Choromanska, LeCun, "Deep learning with Elastic Averaging SGD", NIPS 2015,
 *     arXiv 1412.6651): the worker's pull toward the centre;
 *   Parle (Chaudhari, Baldassi, Zecchina, Soatto, Talwalkar, Oberman, arXiv 1707.00424): the
 *     inner iterate's coupling to the reference;
 *   Entropy-SGD (Chaudhari et al., ICLR 2017, arXiv 1611.01838): the inner loop's running mean
 *     and the outer step toward it.
 * The loops that use them: train_sgd (--proximal-model, --entropy-*; train.h) and train_sync's
 * elastic and Parle modes (sync.h). Sizes must match (assertions); nothing is allocated. */
#ifndef PARNET_TRAIN_ELASTIC_H
#define PARNET_TRAIN_ELASTIC_H

#include "matrix/matrix.h"

/* x <- x - c (x - ref) = (1 - c) x + c ref: the proximal/elastic pull (EASGD worker step, Parle's
 * coupling to the reference, Entropy-SGD's outer step toward the inner mean with c = eta). */
void elastic_pull(struct vector *x, const struct vector *ref, float c);
/* mu <- beta mu + (1 - beta) y (Entropy-SGD's running mean of the inner iterates). */
void elastic_ema(struct vector *mu, const struct vector *y, float beta);

#endif
