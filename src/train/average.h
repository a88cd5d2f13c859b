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
#ifndef PARNET_TRAIN_AVERAGE_H
#define PARNET_TRAIN_AVERAGE_H

#include "nnet/nnet.h"
#include "train/bmuf.h"
#include "train/gaf.h"

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

/* Block momentum over files (bmuf.h): previous = S(t-1), the model the jobs started from (its
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

#endif
