/* update: the update rules, each a vector operation over the whole parameter block (docs/STYLE.md
 * §3), applied by the training loops (src/train) and the model-file operations (src/models). A
 * rule knows vectors and, where a learning rate or the network's safety enters, the nnet API
 * (nnet_apply_step, nnet_*_by_learning_rates); it never reads examples. Four rules, each section
 * below opening with its own contract:
 *   gaf       gradient agreement filtering over microgradients (gaf_*)
 *   momentum  momentum and weight decay, the last stage of every update, and the one choice
 *             between that stage and the network's plain update (momentum_*)
 *   elastic   the proximal/elastic pull and the EMA of EASGD, Parle and Entropy-SGD (elastic_*)
 *   bmuf      block momentum over averaged models and its state file (bmuf_*)
 * Ownership: a rule's struct owns its vectors (*_init / *_release). Errors: sizes are checked by
 * assertions (programmer bugs); only bmuf's state file and option checks return -1 with
 * error_set. */
#ifndef PARNET_UPDATE_UPDATE_H
#define PARNET_UPDATE_UPDATE_H

#include "matrix/matrix.h"
#include "nnet/nnet.h"

/* ======== gaf: gradient agreement filtering ======== */
/* gaf: gradient agreement filtering, the rule alone over vectors (Chaubard, Eddy, Kochenderfer,
 * "Beyond Gradient Averaging in Parallel Optimization: Improved Robustness through Gradient
 * Agreement Filtering", arXiv 2412.18052, 2024).
 *
 * A step takes M microgradients computed at the same parameters; each is compared with the fusion
 * so far by the cosine distance over the whole flattened gradient, D = 1 - <G,g>/(|G||g|), and
 * fused when D <= tau; nothing agreed = no step. The loops that feed the rule (train_sgd's M
 * microbatches in sequence, train_sync's microbatches of all ranks) are in train.h;
 * here only vectors, so that unit tests check the rule on tiny ones. The cosine distance also
 * serves the job-level agreement of averaging (models.h).
 *
 * Ownership: struct gaf owns its fused vector (gaf_init / gaf_release). No errors: wrong sizes
 * are programmer bugs (assertions). */

/* 1 - <a,b> / (|a| |b|) in double, in [0, 2]; 1 (orthogonal) if either vector is zero; NaN if
 * either is not finite (NaN never passes a "<= tau" test). */
double gaf_cosine_distance(const struct vector *a, const struct vector *b);

enum gaf_fusion {
    GAF_FUSION_HALVING = 0, /* G <- (G + g) / 2: the reference code (step_GAF) */
    GAF_FUSION_MEAN = 1,    /* G <- uniform mean of the accepted microgradients */
};
/* One GAF step: gaf_begin, then gaf_offer for each microgradient in a fixed order. The first one
 * is the anchor (always taken); each later g is compared with the current fusion G and fused
 * when gaf_cosine_distance(G, g) <= threshold, else dropped (G unchanged: with halving, a
 * rejected g leaves the anchor as the comparison point). The step is applied only if
 * num_accepted >= 2. */
struct gaf {
    float threshold;          /* tau (0.97; >= 2 accepts everything) */
    enum gaf_fusion fusion;
    struct vector fused;      /* G, block layout */
    int num_offered;          /* this step, the anchor included */
    int num_accepted;         /* this step, the anchor included */
};
void gaf_init(struct gaf *g, int dim, float threshold, enum gaf_fusion fusion);
void gaf_release(struct gaf *g);
void gaf_begin(struct gaf *g);
/* Returns 1 if taken (the anchor, or agreed), 0 if rejected; *distance (may be NULL) receives
 * D(G, grad), 0 for the anchor. */
int gaf_offer(struct gaf *g, const struct vector *grad, double *distance);

/* ======== momentum: momentum and weight decay ======== */
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

/* ======== elastic: the elastic pull and the EMA ======== */
/* elastic: the two vector rules of the elastic and local-entropy methods, over whole parameter
 * blocks (docs/STYLE.md §3):
 *   EASGD (Zhang, Choromanska, LeCun, "Deep learning with Elastic Averaging SGD", NIPS 2015,
 *     arXiv 1412.6651): the worker's pull toward the centre;
 *   Parle (Chaudhari, Baldassi, Zecchina, Soatto, Talwalkar, Oberman, arXiv 1707.00424): the
 *     inner iterate's coupling to the reference;
 *   Entropy-SGD (Chaudhari et al., ICLR 2017, arXiv 1611.01838): the inner loop's running mean
 *     and the outer step toward it.
 * The loops that use them: train_sgd (--proximal-model, --entropy-*; train.h) and train_sync's
 * elastic and Parle modes (train.h). Sizes must match (assertions); nothing is allocated. */

/* x <- x - c (x - ref) = (1 - c) x + c ref: the proximal/elastic pull (EASGD worker step, Parle's
 * coupling to the reference, Entropy-SGD's outer step toward the inner mean with c = eta). */
void elastic_pull(struct vector *x, const struct vector *ref, float c);
/* mu <- beta mu + (1 - beta) y (Entropy-SGD's running mean of the inner iterates). */
void elastic_ema(struct vector *mu, const struct vector *y, float beta);

/* ======== bmuf: block momentum ======== */
/* bmuf: block momentum over averaged models, the update rule after the average (BMUF: Chen &
 * Huo, "Scalable training of deep learning machines by incremental block training with intra-block
 * parallel optimization and blockwise model-update filtering", ICASSP 2016; DiLoCo's outer
 * Nesterov SGD: Douillard et al., arXiv 2311.08105). Used by nnet-average --bmuf (steps/train.sh
 * --averaging bmuf, one block = one iteration) and nnet-train-mpi --bmuf (params mode, one block
 * = --average-every minibatches).
 *
 * The rule, per block t (all vectors the parameter block, docs/STYLE.md §3):
 *   S(t-1)  the model the N jobs started the block from (the model file of the iteration);
 *   A(t)    the average of the N jobs' models at the end of the block;
 *   G(t)  = A(t) - S(t-1)                    the block's averaged update;
 *   m(t)  = eta m(t-1) + zeta G(t)           block momentum eta, block learning rate zeta;
 *   W(t)  = W(t-1) + m(t)                    the global model;
 *   S(t)  = W(t)            classic block momentum (CBM);
 *   S(t)  = W(t) + eta m(t) Nesterov block momentum (NBM): the jobs start from the look-ahead.
 * Only S and m are stored: W(t-1) = S(t-1) - eta m(t-1) under NBM (= S(t-1) under CBM), so one
 * model file per iteration, the one the jobs start from, as with every other method; validation,
 * combination and final.mdl use S (DiLoCo's model is the same point, see below).
 * Defaults (the paper's recommendation for N jobs): eta = 1 - 1/N, zeta = 1, Nesterov. With those,
 * a constant G is amplified by zeta / (1 - eta) = N in the steady state: the jobs should train at
 * the single-job learning rate, not N times it (steps/train.sh scales the per-job rate by
 * N (1 - eta) / zeta, 1 at the defaults, so that --initial-learning-rate keeps its meaning).
 * eta = 0, zeta = 1 is plain averaging.
 *
 * DiLoCo's outer step is the same rule. With the pseudo-gradient g = S(t-1) - A(t) = -G(t) and
 * PyTorch's Nesterov SGD (outer rate lr, momentum mu): v(t) = mu v(t-1) + g,
 * theta(t) = theta(t-1) - lr (g + mu v(t)), the workers starting from theta. Put theta = S,
 * eta = mu, zeta = lr and m = -lr v: then m(t) = mu m(t-1) + lr G(t) (the BMUF recursion) and
 *   S(t) = W(t) + mu m(t) = S(t-1) - mu m(t-1) + (1 + mu) m(t) = S(t-1) + lr G(t) + mu m(t),
 * while DiLoCo's theta(t) = theta(t-1) + lr (G(t) - mu v(t)) = theta(t-1) + lr G(t) + mu m(t):
 * the same sequence of models, step for step. So DiLoCo with outer
 * lr 0.7 and momentum 0.9 is --block-learning-rate 0.7 --block-momentum 0.9 --block-nesterov
 * true; DiLoCo's model is S. Its plain-SGD outer optimiser is --block-nesterov false.
 *
 * The state file (write-then-rename; parnet's own format, binary Kaldi tokens):
 *   <BlockMomentum> <Version> int32 1 <NumJobs> int32 <Nesterov> bool <Momentum> float
 *   <LearningRate> float <Velocity> FV (m, the parameter block's size) </BlockMomentum>
 * A reader checks the velocity's size against the model, N and the Nesterov flag against the run
 * (a state of NBM stands beside a look-ahead model), and refuses a mismatch with one line; eta and
 * zeta may change between blocks (they are recorded for the record). Errors: -1 with error_set. */

struct bmuf_options {
    int on;
    float momentum;      /* eta in [0, 1); < 0 before bmuf_resolve: 1 - 1/N */
    float learning_rate; /* zeta > 0 */
    int nesterov;
};

/* The options shared by nnet-average and nnet-train-mpi (docs/STYLE.md §12): --bmuf,
 * --block-momentum (auto = 1 - 1/N), --block-learning-rate, --block-nesterov, --block-state-in,
 * --block-state-out. bmuf_cli_check: the ranges, before anything is read or trained. */
struct bmuf_cli {
    struct bmuf_options *o;
    const char *momentum;            /* "auto" or a number */
    const char *state_in, *state_out; /* "" when not given */
};
#define BMUF_CLI_NUM_SPECS 6
int bmuf_cli_register(struct bmuf_cli *c, struct bmuf_options *o, struct option_spec *specs);
int bmuf_cli_check(struct bmuf_cli *c);
/* eta for N jobs: the option, or 1 - 1/N for auto. */
float bmuf_resolve_momentum(const struct bmuf_options *o, int num_jobs);

/* The rule above, in place: start holds S(t-1) and becomes S(t); velocity holds m(t-1) and
 * becomes m(t); avg is A(t). Same dimensions, any device. */
void bmuf_update(struct vector *start, struct vector *velocity, const struct vector *avg,
                 float eta, float zeta, int nesterov);

/* The state file. read: velocity must be initialised to the model's size; the stored N and
 * Nesterov flag must equal num_jobs and nesterov. */
int bmuf_state_write(const char *wxfilename, const struct vector *velocity, int num_jobs,
                     float eta, float zeta, int nesterov);
int bmuf_state_read(const char *rxfilename, struct vector *velocity, int num_jobs, int nesterov);
/* The reader on an open stream (the fuzz target): the velocity of any size. */
int bmuf_state_read_stream(struct kin *in, struct vector *velocity, int *num_jobs, int *nesterov);

#endif
