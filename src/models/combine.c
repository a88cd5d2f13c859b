/* nnet-combine: per-(model, updatable component) weights by L-BFGS on validation examples, as
 * Kaldi's nnet-combine-fast (nnet2/combine-nnet-fast.cc), without its Fisher preconditioning.
 * The weights are not constrained to sum to 1. */
#include "models/models.h"
#include "models/models-internal.h"
#include "train/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void combine_options_default(struct combine_options *o) {
    o->num_iters = 20;
    o->minibatch_size = 1024;
    o->max_examples = 10000;
}

struct combiner {
    const struct vector *params;    /* (num_models) the models' parameter blocks */
    int num_models, num_comps;
    int *offset, *size;             /* (num_comps) slices of the parameter block */
    struct nnet *work;              /* the combined network */
    struct minibatch_set set;              /* validation minibatches, host */
    struct vector grad;             /* summed gradient over the validation set */
    int num_evals;
};

/* alpha is (num_models x num_comps), model-major. */
static void set_params(struct combiner *c, const double *alpha) {
    struct vector p = nnet_params(c->work);
    for (int k = 0; k < c->num_comps; k++) {
        struct vector dst = vector_range(&p, c->offset[k], c->size[k]);
        vector_set_zero(&dst);
        for (int m = 0; m < c->num_models; m++) {
            struct vector src = vector_range(&c->params[m], c->offset[k], c->size[k]);
            vector_add(&dst, (float)alpha[m * c->num_comps + k], &src);
        }
    }
}

/* Average log-probability per frame of the combination alpha; with grad, also its gradient. */
static double evaluate(struct combiner *c, const double *alpha, double *grad) {
    set_params(c, alpha);
    c->num_evals++;
    double objf = 0;
    if (grad) vector_set_zero(&c->grad);
    struct vector delta = nnet_delta(c->work);
    for (int b = 0; b < c->set.num; b++) {
        objf += minibatch_set_forward(&c->set, b, c->work);
        if (grad) {
            nnet_backward(c->work, &c->set.deriv, NNET_GRADIENT);
            vector_add(&c->grad, 1.0f, &delta);
        }
    }
    if (grad) {
        for (int m = 0; m < c->num_models; m++) {
            for (int k = 0; k < c->num_comps; k++) {
                struct vector g = vector_range(&c->grad, c->offset[k], c->size[k]);
                struct vector p = vector_range(&c->params[m], c->offset[k], c->size[k]);
                grad[m * c->num_comps + k] = vector_dot(&g, &p) / c->set.total_weight;
            }
        }
    }
    return objf / c->set.total_weight;
}

static double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Maximise evaluate() from x (in place) by L-BFGS with a backtracking line search. */
static double lbfgs_maximise(struct combiner *c, double *x, int dim, int num_iters) {
    enum { MEMORY = 10 };
    double *g = xmalloc(sizeof(double) * dim), *d = xmalloc(sizeof(double) * dim);
    double *xn = xmalloc(sizeof(double) * dim), *gn = xmalloc(sizeof(double) * dim);
    double *s = xcalloc((size_t)MEMORY * dim, sizeof(double));
    double *y = xcalloc((size_t)MEMORY * dim, sizeof(double));
    double rho[MEMORY], a[MEMORY];
    int stored = 0, head = 0;
    /* Work on f = -objective, minimised. */
    double f = -evaluate(c, x, g);
    for (int i = 0; i < dim; i++) g[i] = -g[i];
    for (int it = 0; it < num_iters; it++) {
        /* d = -H g (two-loop recursion). */
        for (int i = 0; i < dim; i++) d[i] = -g[i];
        for (int j = 0; j < stored; j++) {
            int k = (head - 1 - j + MEMORY) % MEMORY;
            a[k] = rho[k] * dot(s + k * dim, d, dim);
            for (int i = 0; i < dim; i++) d[i] -= a[k] * y[k * dim + i];
        }
        if (stored > 0) {
            int k = (head - 1 + MEMORY) % MEMORY;
            double scale = dot(s + k * dim, y + k * dim, dim) / dot(y + k * dim, y + k * dim, dim);
            for (int i = 0; i < dim; i++) d[i] *= scale;
        } else {
            /* First step: aim for an improvement of 0.01 per frame (Kaldi's initial-impr). */
            double gg = dot(g, g, dim);
            for (int i = 0; i < dim; i++) d[i] *= gg > 0 ? 0.01 / gg : 0;
        }
        for (int j = stored - 1; j >= 0; j--) {
            int k = (head - 1 - j + MEMORY) % MEMORY;
            double b = rho[k] * dot(y + k * dim, d, dim);
            for (int i = 0; i < dim; i++) d[i] += (a[k] - b) * s[k * dim + i];
        }
        double slope = dot(g, d, dim);
        if (!(slope < 0)) { /* not a descent direction: restart from the gradient */
            stored = 0;
            double gg = dot(g, g, dim);
            if (!(gg > 1e-20)) break;
            for (int i = 0; i < dim; i++) d[i] = -g[i] * 0.01 / gg;
            slope = dot(g, d, dim);
        }
        double step = 1, fn = 0;
        int accepted = 0;
        for (int ls = 0; ls < 12; ls++, step *= 0.5) {
            for (int i = 0; i < dim; i++) xn[i] = x[i] + step * d[i];
            fn = -evaluate(c, xn, gn);
            if (isfinite(fn) && fn <= f + 1e-4 * step * slope) {
                accepted = 1;
                break;
            }
        }
        if (!accepted) break;
        for (int i = 0; i < dim; i++) gn[i] = -gn[i];
        double *sk = s + head * dim, *yk = y + head * dim;
        for (int i = 0; i < dim; i++) {
            sk[i] = xn[i] - x[i];
            yk[i] = gn[i] - g[i];
        }
        double sy = dot(sk, yk, dim);
        if (sy > 1e-12) {
            rho[head] = 1.0 / sy;
            head = (head + 1) % MEMORY;
            if (stored < MEMORY) stored++;
        }
        VLOG(1, "L-BFGS iteration %d: objective per frame %.6f (step %g)", it, -fn, step);
        memcpy(x, xn, sizeof(double) * dim);
        memcpy(g, gn, sizeof(double) * dim);
        double improvement = f - fn;
        f = fn;
        if (improvement < 1e-7) break;
    }
    free(g), free(d), free(xn), free(gn), free(s), free(y);
    return -f;
}

int model_set_read(struct model_set *s, char *const *paths, int num) {
    ASSERT(num >= 1);
    *s = (struct model_set){.params = xcalloc(num, sizeof *s->params)};
    for (int m = 0; m < num; m++) {
        struct nnet *n = nnet_read_file(paths[m]);
        if (!n) {
            model_set_release(s);
            return error_wrap("cannot read model '%s': ", paths[m]);
        }
        if (m > 0 && nnet_check_same_structure(s->first, n)) {
            nnet_free(n);
            model_set_release(s);
            return error_wrap("model '%s' does not have the structure of '%s': ", paths[m],
                              paths[0]);
        }
        struct vector p = nnet_params(n);
        vector_init_like(&s->params[m], p.dim, &p);
        vector_copy(&s->params[m], &p);
        s->num = m + 1;
        if (m == 0) s->first = n;
        else nnet_free(n);
    }
    return 0;
}

void model_set_release(struct model_set *s) {
    for (int m = 0; m < s->num; m++) vector_release(&s->params[m]);
    free(s->params);
    nnet_free(s->first);
    *s = (struct model_set){0};
}

struct nnet *models_take_finite(struct nnet **work, const char *what) {
    struct vector p = nnet_params(*work);
    if (!vector_is_finite(&p)) {
        error_set("%s is not finite", what);
        return NULL;
    }
    struct nnet *result = *work;
    *work = NULL;
    return result;
}

struct nnet *combine_models(const struct model_set *models, const char *valid_rspec,
                            const struct combine_options *o) {
    int num = models->num;
    ASSERT(num >= 1);
    struct combiner c = {.params = models->params, .num_models = num};
    c.work = nnet_copy(models->first);
    int nc = nnet_num_components(c.work);
    c.offset = xmalloc(sizeof(int) * nc);
    c.size = xmalloc(sizeof(int) * nc);
    for (int i = 0; i < nc; i++) {
        struct component *comp = nnet_component(c.work, i);
        if (comp->ops->updatable && comp->num_params > 0) {
            c.offset[c.num_comps] = comp->param_offset;
            c.size[c.num_comps++] = comp->num_params;
        }
    }
    vector_init(&c.grad, nnet_num_params(c.work));
    struct nnet *result = NULL;
    double *alpha = NULL, *best_alpha = NULL;
    if (minibatch_set_load(&c.set, valid_rspec, o->minibatch_size, o->max_examples, c.work))
        goto done;
    LOG("Read %d validation examples (%d minibatches, total weight %g)", c.set.num_egs, c.set.num,
        c.set.total_weight);

    int dim = num * c.num_comps;
    alpha = xmalloc(sizeof(double) * (dim ? dim : 1));
    best_alpha = xmalloc(sizeof(double) * (dim ? dim : 1));
    /* Candidates: every input alone, and the plain average (the starting point). */
    double best = -INFINITY;
    for (int m = 0; m <= num; m++) {
        for (int i = 0; i < dim; i++)
            alpha[i] = m == num ? 1.0 / num : (i / c.num_comps == m ? 1.0 : 0.0);
        double f = evaluate(&c, alpha, NULL);
        if (m < num) LOG("Model %d: objective per frame %.6f", m + 1, f);
        else LOG("Average of the %d models: objective per frame %.6f", num, f);
        if (f > best || m == 0) {
            best = f;
            memcpy(best_alpha, alpha, sizeof(double) * dim);
        }
    }
    double start = evaluate(&c, alpha, NULL); /* alpha holds the average */
    double final = dim ? lbfgs_maximise(&c, alpha, dim, o->num_iters) : start;
    LOG("Combining nnets, objf per frame changed from %.6f to %.6f (%d evaluations)", start, final,
        c.num_evals);
    if (!(final >= best)) {
        LOG("The combination is no better than the best candidate (%.6f): using that", best);
        memcpy(alpha, best_alpha, sizeof(double) * dim);
    }
    char buf[4096];
    size_t used = 0;
    for (int i = 0; i < dim && used < sizeof buf - 32; i++)
        used += snprintf(buf + used, sizeof buf - used, "%s%.4f", i ? " " : "", alpha[i]);
    LOG("Scale parameters are [ %s ] (model-major, %d updatable components)", buf, c.num_comps);
    set_params(&c, alpha);
    result = models_take_finite(&c.work, "the combined model");
done:
    minibatch_set_release(&c.set);
    free(c.offset);
    free(c.size);
    free(alpha);
    free(best_alpha);
    vector_release(&c.grad);
    nnet_free(c.work);
    return result;
}
