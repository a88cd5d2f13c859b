/* momentum: momentum and weight decay, the last stage of an update, kept apart from the loops
 * that form the step (train_sgd, train_sync and its Parle/EASGD modes all end here).
 *
 * Momentum as Kaldi nnet3's --momentum (NnetTrainer): the velocity v accumulates the steps,
 * v <- mu v + s, and the parameters move by (1 - mu) v, so that a constant step s gives the same
 * asymptotic change per minibatch with or without momentum (the effective learning rate is not
 * multiplied by 1/(1 - mu)). Nesterov's form moves by (1 - mu)(s + mu v) instead (PyTorch's
 * nesterov=True with the same (1 - mu) normalisation). With PyTorch's un-normalised buffer,
 * lr_torch = (1 - mu) x lr x frames-per-minibatch gives the same trajectory (lr per sample here).
 *   Kaldi clips per component on v before the (1 - mu) factor; here max-change (per component
 *   and global) clips the applied step (1 - mu) v, so a component's max-change bounds its applied
 *   change exactly; the global max-change is then the same as Kaldi's.
 * Weight decay (L2): the step gains - lambda x frames x lr_c x theta_c on each updatable
 * component c (every parameter, biases included: PyTorch's weight_decay, which the GAF and Parle
 * references use), frames being the label weight the step was computed on. With lr per sample
 * this is PyTorch's weight_decay=lambda at lr_torch = lr x frames. The decay enters the step
 * before the momentum filter (as PyTorch).
 *
 * Everything is a vector operation over the parameter block, per updatable component only where
 * the component's learning rate enters. struct momentum owns its velocity (momentum_init /
 * momentum_release). A non-finite step is refused by the network (nnet_apply_step) and never
 * enters the velocity. */
#ifndef PARNET_TRAIN_MOMENTUM_H
#define PARNET_TRAIN_MOMENTUM_H

#include "nnet/nnet.h"

struct momentum {
    int on;                 /* momentum > 0 or weight_decay > 0 */
    float momentum, weight_decay;
    int nesterov;
    struct vector velocity; /* v, block layout; dim 0 without momentum */
};
/* mu = 0 and weight_decay = 0: off (m->on = 0; the loops then take their plain update path). */
void momentum_init(struct momentum *m, struct nnet *n, float mu, int nesterov,
                   float weight_decay);
void momentum_release(struct momentum *m);
/* 0, or -1 with error_set naming the option: mu in [0, 1), weight_decay >= 0, nesterov only
 * with mu > 0 (the check of train_options_check and train_sync_options_check). */
int momentum_check(float mu, int nesterov, float weight_decay);
/* step -= lambda x frames x lr_c x theta_c (n's current parameters); nothing when lambda <= 0. */
void momentum_weight_decay(struct nnet *n, struct vector *step, float lambda, double frames);
/* v <- mu v + s, then s <- (1 - mu) v, or (1 - mu)(s + mu v) with nesterov; in place. */
void momentum_filter(struct vector *velocity, struct vector *step, float mu, int nesterov);
/* Decay (frames as above), filter, nnet_apply_step; returns nnet_apply_step's 0/1. step is
 * modified (it may be nnet_delta(n)). A non-finite step is refused without touching v. */
int momentum_apply_step(struct momentum *m, struct nnet *n, struct vector *step, double frames);
/* The filter (when mu > 0) and nnet_apply_step alone (the decay already in step): with the
 * stage off, exactly nnet_apply_step. */
int momentum_apply_filtered(struct momentum *m, struct nnet *n, struct vector *step);
/* The step scale x lr_c x grad_c (what nnet_apply_gradient applies), through the stage above;
 * it is formed in nnet_delta(n). */
int momentum_apply_gradient(struct momentum *m, struct nnet *n, const struct vector *grad,
                            float scale, double frames);
/* The choice between this stage and the network's plain update, made here only (every loop
 * calls one of these two):
 *   momentum_backward_update: one minibatch's update from its output derivative (after the
 *     forward and the scoring; frames its label weight): nnet_backward(NNET_UPDATE) when the
 *     stage is off (the network applies its step itself, the fastest path), else NNET_STEP and
 *     momentum_apply_step.
 *   momentum_apply: a formed vector v (GAF's fusion): scale x v when is_step, else the step
 *     scale x lr_c x v_c of a gradient, through the stage when on (m may be NULL: off), else
 *     nnet_apply_step / nnet_apply_gradient. v may be modified.
 * Both return 1 if the network refused the step as non-finite, else 0. */
int momentum_backward_update(struct momentum *m, struct nnet *n, const struct matrix *deriv,
                             double frames);
int momentum_apply(struct momentum *m, struct nnet *n, struct vector *v, int is_step,
                   float scale, double frames);

#endif
