/* GAF's step on a network (train-internal.h), shared by train_sgd and train_sync; the rule itself
 * is update.h's. */
#include "train/train-internal.h"

enum nnet_backward_mode train_gaf_backward_mode(const struct train_options *o) {
    return o->gaf_on_steps ? NNET_STEP : NNET_GRADIENT;
}

int train_gaf_offer(struct gaf *g, const struct vector *micro) {
    double dist;
    int taken = gaf_offer(g, micro, &dist);
    if (g->num_offered > 1)
        VLOG(2, "GAF: microbatch %d: cosine distance %.4f, %s", g->num_offered, dist,
             taken ? "accepted" : "rejected");
    return taken;
}

int train_gaf_finish(struct gaf *g, struct nnet *n, const struct train_options *o,
                     struct train_stats *st, int *skipped, struct momentum *m,
                     double frames_per_micro) {
    int attempted = 0;
    if (g->num_offered == 1) {
        VLOG(1, "GAF: the last microbatch has nothing to agree with: dropped");
    } else if (g->num_offered > 1) {
        st->gaf_steps++;
        st->gaf_offered += g->num_offered - 1;
        if (g->num_accepted < 2) {
            st->gaf_skipped++;
            VLOG(1, "GAF: no microbatch agreed with the first of %d: step skipped",
                 g->num_offered);
        } else {
            st->gaf_accepted += g->num_accepted - 1;
            attempted = 1;
            /* num_accepted x the fusion (a GAF step with tau >= 2 and the mean fusion is one SGD
             * step on the union), or the fusion itself (gaf_unit_scale: the reference) */
            float scale = o->gaf_unit_scale ? 1.0f : (float)g->num_accepted;
            *skipped = momentum_apply(m, n, &g->fused, o->gaf_on_steps, scale,
                                      frames_per_micro * scale);
        }
    }
    gaf_begin(g);
    return attempted;
}
