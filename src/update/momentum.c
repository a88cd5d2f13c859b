/* Momentum and weight decay (update.h). */
#include "update/update.h"

#include <string.h>

void momentum_weight_decay(struct nnet *n, struct vector *step, float lambda, double frames) {
    if (!(lambda > 0) || !(frames > 0)) return;
    struct vector p = nnet_params(n);
    nnet_add_by_learning_rates(n, step, (float)(-lambda * frames), &p);
}

void momentum_filter(struct vector *velocity, struct vector *step, float mu, int nesterov) {
    ASSERT(velocity->dim == step->dim && mu >= 0 && mu < 1);
    /* v <- mu v + s */
    vector_scale(velocity, mu);
    vector_add(velocity, 1, step);
    if (nesterov) {
        /* s <- (1 - mu) (s + mu v) */
        vector_add(step, mu, velocity);
        vector_scale(step, 1 - mu);
    } else {
        /* s <- (1 - mu) v */
        vector_copy(step, velocity);
        vector_scale(step, 1 - mu);
    }
}

void momentum_init(struct momentum *m, struct nnet *n, float mu, int nesterov,
                   float weight_decay) {
    memset(m, 0, sizeof *m);
    m->momentum = mu;
    m->nesterov = nesterov;
    m->weight_decay = weight_decay;
    m->on = mu > 0 || weight_decay > 0;
    if (mu > 0) vector_init(&m->velocity, nnet_num_params(n));
}

void momentum_release(struct momentum *m) { vector_release(&m->velocity); }

int momentum_apply_step(struct momentum *m, struct nnet *n, struct vector *step,
                              double frames) {
    momentum_weight_decay(n, step, m->weight_decay, frames);
    return momentum_apply_filtered(m, n, step);
}

int momentum_apply_filtered(struct momentum *m, struct nnet *n, struct vector *step) {
    if (m->momentum > 0) {
        /* A step the network would refuse must not enter the velocity either. */
        if (!vector_is_finite(step)) return nnet_apply_step(n, step); /* warns, returns 1 */
        momentum_filter(&m->velocity, step, m->momentum, m->nesterov);
    }
    return nnet_apply_step(n, step);
}

int momentum_apply_gradient(struct momentum *m, struct nnet *n,
                                  const struct vector *grad, float scale, double frames) {
    struct vector d = nnet_delta(n);
    if (grad->data != d.data) vector_copy(&d, grad);
    nnet_scale_by_learning_rates(n, &d, scale); /* the step nnet_apply_gradient would take */
    return momentum_apply_step(m, n, &d, frames);
}

/* The one place that chooses between the momentum stage and the network's own update. */
int momentum_backward_update(struct momentum *m, struct nnet *n, const struct matrix *deriv,
                             double frames) {
    if (!m->on) return nnet_backward(n, deriv, NNET_UPDATE);
    nnet_backward(n, deriv, NNET_STEP);
    struct vector d = nnet_delta(n);
    return momentum_apply_step(m, n, &d, frames);
}

int momentum_apply(struct momentum *m, struct nnet *n, struct vector *v, int is_step,
                   float scale, double frames) {
    int on = m && m->on;
    if (!is_step)
        return on ? momentum_apply_gradient(m, n, v, scale, frames)
                  : nnet_apply_gradient(n, v, scale);
    vector_scale(v, scale);
    return on ? momentum_apply_step(m, n, v, frames) : nnet_apply_step(n, v);
}

int momentum_check(float mu, int nesterov, float weight_decay) {
    if (!(mu >= 0 && mu < 1)) return error_set("--momentum=%g: must lie in [0, 1)", mu);
    if (!(weight_decay >= 0))
        return error_set("--weight-decay=%g: must not be negative", weight_decay);
    if (nesterov && !(mu > 0))
        return error_set("--nesterov needs --momentum > 0");
    return 0;
}
