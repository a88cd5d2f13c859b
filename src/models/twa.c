/* TWA (models.h; Li et al., ICLR 2023, arXiv 2205.13104): train the combination
 * coefficients of the last K models inside their span. P holds an orthonormal basis of the span
 * (Gram-Schmidt in double, rows); the iterate is w = P^T alpha, so the gradient with respect to
 * alpha is P g (g the ordinary gradient), and w never leaves the span. Start: the models' mean. */
#include "train/train.h"
#include "models/models.h"
#include "models/models-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the basis ---- */

static double ddot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

int twa_gram_schmidt(double *v, int num, int dim) {
    int k = 0;
    for (int i = 0; i < num; i++) {
        double *r = v + (size_t)k * dim;
        if (k != i) memcpy(r, v + (size_t)i * dim, sizeof(double) * dim);
        double norm0 = sqrt(ddot(r, r, dim));
        if (!(norm0 > 0)) continue;
        /* modified Gram-Schmidt, twice ("twice is enough") for orthogonality to rounding */
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j < k; j++) {
                const double *q = v + (size_t)j * dim;
                double a = ddot(q, r, dim);
                for (int t = 0; t < dim; t++)
                    r[t] -= a * q[t];
            }
        double norm = sqrt(ddot(r, r, dim));
        if (!(norm > 1e-9 * norm0)) continue;
        for (int t = 0; t < dim; t++)
            r[t] /= norm;
        k++;
    }
    return k;
}

void twa_basis_project(const double *p, int k, int dim, const double *x, double *alpha) {
    for (int j = 0; j < k; j++)
        alpha[j] = ddot(p + (size_t)j * dim, x, dim);
}

void twa_basis_expand(const double *p, int k, int dim, const double *alpha, double *x) {
    memset(x, 0, sizeof(double) * dim);
    for (int j = 0; j < k; j++) {
        const double *q = p + (size_t)j * dim;
        for (int t = 0; t < dim; t++)
            x[t] += alpha[j] * q[t];
    }
}

void twa_options_default(struct twa_options *o) {
    o->num_epochs = 10;
    o->learning_rate = 0.5f;
    o->momentum = 0.9f;
    o->minibatch_size = 256;
    o->max_examples = 10000;
    o->train_rspec = NULL;
}

struct twa {
    double *p; /* (k, dim) orthonormal rows */
    int k, dim;
    double *w; /* (dim) scratch */
    float *wf; /* (dim) scratch */
    struct nnet *work;
};

static void set_alpha(struct twa *t, const double *alpha) {
    twa_basis_expand(t->p, t->k, t->dim, alpha, t->w);
    for (int i = 0; i < t->dim; i++)
        t->wf[i] = (float)t->w[i];
    struct vector p = nnet_params(t->work);
    vector_from_host(&p, t->wf);
}

/* Average log-probability per frame of the set at the current parameters. */
static double objective(struct twa *t, struct minibatch_set *s) {
    double objf = 0;
    for (int b = 0; b < s->num; b++)
        objf += minibatch_set_forward(s, b, t->work);
    return objf / s->total_weight;
}

/* The coefficients alpha trained by SGD with momentum on the set fit, o->num_epochs passes, the
 * gradient projected onto the basis (the network left at the last alpha). */
static void fit_coefficients(struct twa *t, struct minibatch_set *fit, const struct twa_options *o,
                             double *alpha) {
    double *vel = xcalloc(t->k, sizeof(double)), *ga = xcalloc(t->k, sizeof(double));
    struct vector delta = nnet_delta(t->work);
    float *gf = t->wf;
    double *g = t->w;
    for (int ep = 0; ep < o->num_epochs; ep++) {
        /* step schedule of the reference code: x0.1 at 50% and 75% of the epochs */
        double lr = o->learning_rate * (2 * ep >= o->num_epochs ? 0.1 : 1) *
                    (4 * ep >= 3 * o->num_epochs ? 0.1 : 1);
        double objf = 0;
        for (int b = 0; b < fit->num; b++) {
            double wsum = 0;
            const struct egs_minibatch *mb = &fit->mbs[b];
            for (int i = 0; i < mb->num_labels; i++)
                wsum += mb->label_weight[i];
            objf += minibatch_set_forward(fit, b, t->work);
            if (!(wsum > 0)) continue;
            nnet_backward(t->work, &fit->deriv, NNET_GRADIENT);
            vector_to_host(&delta, gf);
            for (int i = 0; i < t->dim; i++)
                g[i] = gf[i] / wsum;
            twa_basis_project(t->p, t->k, t->dim, g, ga); /* the projected gradient */
            for (int j = 0; j < t->k; j++) {
                vel[j] = o->momentum * vel[j] + lr * ga[j];
                alpha[j] += vel[j];
            }
            set_alpha(t, alpha); /* clobbers g (t->w): recomputed next minibatch */
        }
        VLOG(1, "TWA epoch %d: learning rate %g, objective per frame while fitting %.6f", ep, lr,
             objf / fit->total_weight);
    }
    free(vel);
    free(ga);
}

struct nnet *twa_combine(const struct model_set *models, const char *valid_rspec,
                         const struct twa_options *o) {
    int num = models->num;
    ASSERT(num >= 1);
    struct twa t = {0};
    t.work = nnet_copy(models->first);
    t.dim = nnet_num_params(t.work);
    struct minibatch_set valid = {0}, train = {0};
    struct nnet *result = NULL;
    double *alpha = NULL, *mean_alpha = NULL;
    t.p = xmalloc(sizeof(double) * (size_t)num * (t.dim ? t.dim : 1));
    t.w = xmalloc(sizeof(double) * (t.dim ? t.dim : 1));
    t.wf = xmalloc(sizeof(float) * (t.dim ? t.dim : 1));
    for (int m = 0; m < num; m++) {
        vector_to_host(&models->params[m], t.wf);
        for (int i = 0; i < t.dim; i++)
            t.p[(size_t)m * t.dim + i] = t.wf[i];
    }
    /* the mean, before the rows become the basis */
    double *mean = t.w;
    memset(mean, 0, sizeof(double) * t.dim);
    for (int m = 0; m < num; m++)
        for (int i = 0; i < t.dim; i++)
            mean[i] += t.p[(size_t)m * t.dim + i] / num;
    double *mean_copy = xmalloc(sizeof(double) * (t.dim ? t.dim : 1));
    memcpy(mean_copy, mean, sizeof(double) * t.dim);
    t.k = twa_gram_schmidt(t.p, num, t.dim);
    LOG("TWA: %d models span %d dimensions", num, t.k);
    if (t.k == 0) {
        free(mean_copy);
        error_set("the models' parameters are all zero: nothing to combine");
        goto done;
    }
    alpha = xcalloc(t.k, sizeof(double));
    mean_alpha = xcalloc(t.k, sizeof(double));
    twa_basis_project(t.p, t.k, t.dim, mean_copy, mean_alpha);
    free(mean_copy);

    if (minibatch_set_load(&valid, valid_rspec, o->minibatch_size, o->max_examples, t.work))
        goto done;
    struct minibatch_set *fit = &valid;
    if (o->train_rspec) {
        if (minibatch_set_load(&train, o->train_rspec, o->minibatch_size, o->max_examples, t.work))
            goto done;
        fit = &train;
    }
    LOG("TWA: fitting the coefficients on %d %s examples, checking on %d validation examples",
        fit->num_egs, o->train_rspec ? "training" : "validation", valid.num_egs);
    memcpy(alpha, mean_alpha, sizeof(double) * t.k);
    set_alpha(&t, alpha);
    double start = objective(&t, &valid);
    LOG("TWA: the mean of the %d models: objective per frame %.6f", num, start);

    fit_coefficients(&t, fit, o, alpha);
    double final = objective(&t, &valid);
    int finite = 1;
    for (int j = 0; j < t.k; j++)
        finite &= isfinite(alpha[j]);
    LOG("TWA: objective per frame on the validation examples changed from %.6f to %.6f", start,
        final);
    if (!finite || !(final >= start)) {
        LOG("TWA: the trained combination is no better than the mean: using the mean");
        set_alpha(&t, mean_alpha);
    }
    result = models_take_finite(&t.work, "the TWA model");
done:
    minibatch_set_release(&valid);
    minibatch_set_release(&train);
    free(t.p);
    free(t.w);
    free(t.wf);
    free(alpha);
    free(mean_alpha);
    nnet_free(t.work);
    return result;
}
