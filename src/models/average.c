/* nnet-average: a weighted average of parameter blocks, two models in memory at a time. */
#include "models/models.h"

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
    nnet_scale_stats(avg, (float)w[0]); /* BatchNorm's stored moments, averaged alike */
    for (int i = 1; i < num; i++) {
        struct nnet *m = nnet_read_file(rxfilenames[i]);
        if (!m) {
            error_wrap("cannot read model '%s': ", rxfilenames[i]);
            goto fail;
        }
        if (nnet_check_same_structure(avg, m)) {
            nnet_free(m);
            error_wrap("model '%s' does not have the structure of '%s': ", rxfilenames[i],
                       rxfilenames[0]);
            goto fail;
        }
        struct vector p = nnet_params(m);
        vector_add(&acc, (float)w[i], &p);
        nnet_add_stats(avg, (float)w[i], m);
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

/* Read a model of the structure of ref (ref may be NULL: anything). NULL with error_set. */
static struct nnet *read_like(const char *rxfilename, struct nnet *ref, const char *ref_name) {
    struct nnet *m = nnet_read_file(rxfilename);
    if (!m) {
        error_wrap("cannot read model '%s': ", rxfilename);
        return NULL;
    }
    if (ref && nnet_check_same_structure(ref, m)) {
        nnet_free(m);
        error_wrap("model '%s' does not have the structure of '%s': ", rxfilename, ref_name);
        return NULL;
    }
    return m;
}

struct nnet *average_model_files_agreement(const char *const *rxfilenames, int num,
                                           const float *weights, const char *previous_rxfilename,
                                           float tau, int *num_kept) {
    ASSERT(num >= 1);
    struct nnet *prev = read_like(previous_rxfilename, NULL, NULL), *out = NULL;
    if (!prev) return NULL;
    struct vector pp = nnet_params(prev), consensus, change;
    vector_init(&consensus, pp.dim);
    vector_init(&change, pp.dim);
    double *dist = xmalloc(sizeof(double) * num), wsum = 0;
    int *keep = xcalloc(num, sizeof(int)), kept = 0;
    for (int j = 0; j < num; j++) wsum += weights ? weights[j] : 1;
    if (!(wsum > 0)) {
        error_set("the averaging weights must have a positive sum");
        goto done;
    }
    /* Pass 1: the consensus change sum_j w_j (x_j - prev) / sum w. */
    for (int j = 0; j < num; j++) {
        struct nnet *m = read_like(rxfilenames[j], prev, previous_rxfilename);
        if (!m) goto done;
        struct vector p = nnet_params(m);
        float w = (float)((weights ? weights[j] : 1) / wsum);
        vector_add(&consensus, w, &p);
        vector_add(&consensus, -w, &pp);
        nnet_free(m);
    }
    /* Pass 2: each job's distance to it; the kept jobs' weighted average. */
    out = nnet_copy(prev);
    struct vector acc = nnet_params(out);
    vector_set_zero(&acc);
    double kept_w = 0;
    for (int j = 0; j < num; j++) {
        struct nnet *m = read_like(rxfilenames[j], prev, previous_rxfilename);
        if (!m) {
            nnet_free(out);
            out = NULL;
            goto done;
        }
        struct vector p = nnet_params(m);
        vector_copy(&change, &p);
        vector_add(&change, -1, &pp);
        dist[j] = gaf_cosine_distance(&change, &consensus);
        float w = weights ? weights[j] : 1;
        keep[j] = dist[j] <= tau && w > 0;
        LOG("Job %d ('%s'): cosine distance to the consensus change %.4f: %s", j + 1,
            rxfilenames[j], dist[j], keep[j] ? "kept" : "LEFT OUT");
        if (keep[j]) {
            vector_add(&acc, w, &p);
            kept_w += w;
            kept++;
        }
        nnet_free(m);
    }
    if (kept == 0) {
        WARN("no job agrees with the consensus change (threshold %g): keeping the previous model",
             tau);
        vector_copy(&acc, &pp);
    } else {
        vector_scale(&acc, (float)(1 / kept_w));
    }
    if (!vector_is_finite(&acc)) {
        error_set("the average of the models is not finite");
        nnet_free(out);
        out = NULL;
    }
done:
    if (num_kept) *num_kept = kept;
    free(dist);
    free(keep);
    vector_release(&consensus);
    vector_release(&change);
    nnet_free(prev);
    return out;
}

struct nnet *average_elastic_center_files(const char *center_rxfilename,
                                          const char *const *rxfilenames, int num, float alpha) {
    struct nnet *center = read_like(center_rxfilename, NULL, NULL);
    if (!center) return NULL;
    struct vector c = nnet_params(center), sum;
    vector_init(&sum, c.dim);
    for (int j = 0; j < num; j++) {
        struct nnet *m = read_like(rxfilenames[j], center, center_rxfilename);
        if (!m) {
            vector_release(&sum);
            nnet_free(center);
            return NULL;
        }
        struct vector p = nnet_params(m);
        vector_add(&sum, 1, &p);
        nnet_free(m);
    }
    /* x~ + alpha sum_i (x_i - x~) = (1 - num alpha) x~ + alpha sum_i x_i */
    vector_scale(&c, 1 - num * alpha);
    vector_add(&c, alpha, &sum);
    vector_release(&sum);
    if (!vector_is_finite(&c)) {
        error_set("the elastic centre is not finite");
        nnet_free(center);
        return NULL;
    }
    return center;
}

int average_agreement_select(const struct vector *changes, int num, const float *weights, float tau,
                     int *keep, double *distance) {
    ASSERT(num >= 1);
    struct vector c;
    vector_init_on(&c, changes[0].dim, changes[0].device);
    double wsum = 0;
    for (int j = 0; j < num; j++)
        wsum += weights ? weights[j] : 1;
    ASSERT(wsum > 0);
    for (int j = 0; j < num; j++)
        vector_add(&c, (float)((weights ? weights[j] : 1) / wsum), &changes[j]);
    int kept = 0;
    for (int j = 0; j < num; j++) {
        double d = gaf_cosine_distance(&changes[j], &c);
        if (distance) distance[j] = d;
        keep[j] = d <= tau && (!weights || weights[j] > 0);
        kept += keep[j];
    }
    vector_release(&c);
    return kept;
}
