/* nnet-average: a weighted average of parameter blocks, two models in memory at a time. */
#include "train/train.h"

#include <math.h>
#include <stdlib.h>

struct nnet *average_model_files(const char *const *rxfilenames, int num, const float *weights) {
    ASSERT(num >= 1);
    double *w = xmalloc(sizeof(double) * num), sum = 0;
    for (int i = 0; i < num; i++) sum += w[i] = weights ? weights[i] : 1.0 / num;
    if (!(sum > 0) || !isfinite(sum)) {
        free(w);
        error_set("the averaging weights must have a positive sum");
        return NULL;
    }
    if (fabs(sum - 1.0) > 0.01) WARN("averaging weights sum to %g; renormalising", sum);
    for (int i = 0; i < num; i++) w[i] /= sum;

    struct nnet *avg = nnet_read_file(rxfilenames[0]);
    if (!avg) {
        error_wrap("cannot read model '%s': ", rxfilenames[0]);
        free(w);
        return NULL;
    }
    struct vector acc = nnet_params(avg);
    vector_scale(&acc, (float)w[0]);
    for (int i = 1; i < num; i++) {
        struct nnet *m = nnet_read_file(rxfilenames[i]);
        if (!m) {
            error_wrap("cannot read model '%s': ", rxfilenames[i]);
            goto fail;
        }
        if (!nnet_same_structure(avg, m)) {
            nnet_free(m);
            error_set("model '%s' does not have the structure of '%s'", rxfilenames[i],
                      rxfilenames[0]);
            goto fail;
        }
        struct vector p = nnet_params(m);
        vector_add(&acc, (float)w[i], &p);
        nnet_free(m);
    }
    if (!vector_is_finite(&acc)) {
        error_set("the average of the models is not finite");
        goto fail;
    }
    free(w);
    return avg;
fail:
    free(w);
    nnet_free(avg);
    return NULL;
}
