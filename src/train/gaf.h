/* gaf: gradient agreement filtering, the rule alone over vectors (Chaubard, Eddy, Kochenderfer,
 * "Beyond Gradient Averaging in Parallel Optimization: Improved Robustness through Gradient
 * Agreement Filtering", arXiv 2412.18052, 2024).
 *
 * A step takes M microgradients computed at the same parameters; each is compared with the fusion
 * so far by the cosine distance over the whole flattened gradient, D = 1 - <G,g>/(|G||g|), and
 * fused when D <= tau; nothing agreed = no step. The loops that feed the rule (train_sgd's M
 * microbatches in sequence, train_sync's microbatches of all ranks) are in train.h and sync.h;
 * here only vectors, so that unit tests check the rule on tiny ones. The cosine distance also
 * serves the job-level agreement of averaging (average.h).
 *
 * Ownership: struct gaf owns its fused vector (gaf_init / gaf_release). No errors: wrong sizes
 * are programmer bugs (assertions). */
#ifndef PARNET_TRAIN_GAF_H
#define PARNET_TRAIN_GAF_H

#include "matrix/matrix.h"

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

#endif
