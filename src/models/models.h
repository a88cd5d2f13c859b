/* models: operations on model files, after training: averages of N models (nnet-average: plain,
 * job-level agreement, EASGD's centre, block momentum; its methods as a table), combination with
 * per-component weights found by L-BFGS on validation examples (nnet-combine, as Kaldi nnet2's
 * nnet-combine-fast) and trainable weight averaging (nnet-combine --method=twa). They stream the
 * files (at most a few models in memory) and score on the loops' in-memory set of validation
 * minibatches (train.h: minibatch_set). Each section below opens with its own contract.
 * Errors: NULL (or -1) with error_set naming the file and the reason; nothing exits. */
#ifndef PARNET_MODELS_MODELS_H
#define PARNET_MODELS_MODELS_H

#include "nnet/nnet.h"
#include "update/update.h"

/* ======== average: averages of model files ======== */
/* average: model-level averaging over model files (nnet-average; the offline levels of
 * steps/train.sh's averaging methods), streaming: at most a few models in memory.
 *   Plain weighted averages (Kaldi nnet2's parameter averaging; HWA's offline level, a window
 *     average of synchronised models: Gu et al., IEEE TNNLS 2023, arXiv 2304.11519).
 *   Job-level agreement (parnet's own, no anchor in the literature): each job's change since the
 *     previous model is compared with the consensus (mean) change by gaf_cosine_distance;
 *     disagreeing jobs are left out.
 *   EASGD's centre update (Zhang, Choromanska, LeCun, NIPS 2015, arXiv 1412.6651), over files.
 * Everything but the parameters (learning rates, fixed components) comes from the first model (the
 * centre). Errors: NULL (or -1) with error_set naming the file and the reason. */

/* Weighted average of the models' parameter blocks, streaming: at most two models in memory.
 * weights: num values (renormalised to sum 1; NULL = uniform). Everything but the parameters
 * (learning rates, fixed components) comes from the first model. Structures must match. */
struct nnet *average_model_files(const char *const *rxfilenames, int num, const float *weights);

/* Job-level agreement. changes[j] = model_j - previous; the consensus is their weighted mean c.
 * Job j is kept when gaf_cosine_distance(changes[j], c) <= tau. keep[j] (0/1) and distance[j]
 * (may be NULL) are filled; returns the number kept. Sum_j w_j <c_j, c> = |c|^2 >= 0, so with
 * tau >= 1 at least one job is kept unless every change is zero. */
int average_agreement_select(const struct vector *changes, int num, const float *weights,
                             float tau, int *keep, double *distance);
/* The file form, streaming (previous, consensus and one job in memory): the weighted average of
 * the jobs kept by average_agreement_select against previous_rxfilename. Logs each job's distance
 * and which were left out; if none is kept the previous model is returned (the step is skipped).
 * *num_kept (may be NULL) receives the count. */
struct nnet *average_model_files_agreement(const char *const *rxfilenames, int num,
                                           const float *weights, const char *previous_rxfilename,
                                           float tau, int *num_kept);
/* EASGD's centre update, x~ <- x~ + alpha sum_i (x_i - x~), over files (streaming); alpha = 1/num
 * gives the plain average. Structures must match the centre's. */
struct nnet *average_elastic_center_files(const char *center_rxfilename,
                                          const char *const *rxfilenames, int num, float alpha);

/* Block momentum over files (update.h): previous = S(t-1), the model the jobs started from (its
 * non-parameter settings are kept); the result is S(t). The velocity m(t-1) comes from
 * state_in ("" or NULL: zero, the first block) and m(t) goes to state_out (NULL: not written),
 * checked against the model's size, num and o->nesterov. eta = bmuf_resolve_momentum(o, num). */
struct nnet *average_bmuf_files(const char *const *rxfilenames, int num, const float *weights,
                                const char *previous_rxfilename, const struct bmuf_options *o,
                                const char *state_in, const char *state_out);

/* nnet-average's methods, one table each (docs/STYLE.md §5). A request holds every option of the
 * program; a method is chosen when its options are present (`wanted`), at most one at a time.
 * check: its options' ranges and companions, before any model is read (0, or -1 with
 * error_set); run: the averaged model, and a summary for the log line in summary. */
struct average_request {
    const char *const *models;
    int num;
    const float *weights;      /* NULL: uniform */
    const char *previous;      /* "" when not given */
    float tau;                 /* agreement: < 0 off */
    float alpha;               /* elastic: 0 off */
    const char *center;
    struct bmuf_options bmuf;
    const char *bmuf_state_in, *bmuf_state_out; /* "" when not given */
};
struct average_method {
    const char *name;
    int (*wanted)(const struct average_request *r);
    int (*check)(const struct average_request *r);
    struct nnet *(*run)(const struct average_request *r, char *summary, size_t size);
};
/* The methods, NULL-terminated; the last one, plain, is wanted when nothing else is. */
extern const struct average_method *const average_methods[];
/* The wanted method (plain when none), or NULL with error_set when two exclude each other or
 * its check fails. */
const struct average_method *average_method_select(const struct average_request *r);

/* ======== combine: nnet-combine-fast ======== */
/* model_set: the models a combination reads (nnet-combine: the per-layer combination, TWA). The
 * first network whole (the structure, and where the result is built), and of every model its
 * parameter block alone: N models cost N parameter blocks, not N networks with their gradient
 * blocks and natural-gradient state (the combination's memory must not grow by more than that
 * with the number of models it combines). model_set_read reads the files one at a time; 0, or -1
 * with error_set naming the file that cannot be read or whose structure differs from the first's.
 * model_set_release frees everything (a zeroed set too). */
struct model_set {
    struct nnet *first;       /* owned */
    struct vector *params;    /* (num) owned copies of each model's nnet_params */
    int num;
};
int model_set_read(struct model_set *s, char *const *paths, int num);
void model_set_release(struct model_set *s);

/* combine: model-level combination as Kaldi nnet2's nnet-combine-fast (nnet-combine): one weight
 * per (model, updatable component) found by L-BFGS on validation examples, without Kaldi's Fisher
 * preconditioning; the weights are not constrained to sum to 1. Errors: NULL with error_set. */

struct combine_options {
    int num_iters;            /* L-BFGS iterations (20) */
    int minibatch_size;       /* for the objective's passes (1024) */
    int max_examples;         /* examples kept in memory from the validation archive (10000) */
};
void combine_options_default(struct combine_options *o);
/* One weight per (model, updatable component), found by L-BFGS maximising the average
 * log-probability on the validation examples, starting from the plain average. The result is never
 * worse on that objective than the best of the inputs and their average (the best of these is
 * returned if the search does not beat it). Logs the weights and the objective. */
struct nnet *combine_models(const struct model_set *models, const char *valid_rspec,
                            const struct combine_options *o);

/* ======== twa: trainable weight averaging ======== */
/* twa: trainable weight averaging (Li, Huang, Tao, Wu, Huang, "Trainable Weight Averaging: A
 * General Approach for Subspace Training", ICLR 2023, arXiv 2205.13104), a model-level operation
 * (nnet-combine --method=twa, steps/twa_head.sh): the combination coefficients of the last K
 * models are trained inside their span. The basis helpers (Gram-Schmidt in double, projection)
 * are exposed for the unit tests. Errors: NULL with error_set. */

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
struct nnet *twa_combine(const struct model_set *models, const char *valid_rspec,
                         const struct twa_options *o);

#endif
