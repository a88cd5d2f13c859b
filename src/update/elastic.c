/* The proximal/elastic pull and the EMA (update.h). */
#include "update/update.h"

void elastic_pull(struct vector *x, const struct vector *ref, float c) {
    ASSERT(x->dim == ref->dim);
    vector_scale(x, 1 - c);
    vector_add(x, c, ref);
}

void elastic_ema(struct vector *mu, const struct vector *y, float beta) {
    elastic_pull(mu, y, 1 - beta);
}
