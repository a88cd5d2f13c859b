/* GAF's rule over vectors (update.h): the cosine distance, the agreement test and the fusion. */
#include "update/update.h"

#include <math.h>
#include <string.h>

double gaf_cosine_distance(const struct vector *a, const struct vector *b) {
    ASSERT(a->dim == b->dim);
    double na = vector_norm2(a), nb = vector_norm2(b);
    if (!isfinite(na) || !isfinite(nb)) return NAN;
    if (na == 0 || nb == 0) return 1;
    double d = 1 - vector_dot(a, b) / (na * nb);
    return d < 0 ? 0 : d > 2 ? 2 : d; /* rounding */
}

void gaf_init(struct gaf *g, int dim, float threshold, enum gaf_fusion fusion) {
    memset(g, 0, sizeof *g);
    g->threshold = threshold;
    g->fusion = fusion;
    vector_init(&g->fused, dim);
}

void gaf_release(struct gaf *g) { vector_release(&g->fused); }

void gaf_begin(struct gaf *g) { g->num_offered = g->num_accepted = 0; }

int gaf_offer(struct gaf *g, const struct vector *grad, double *distance) {
    ASSERT(grad->dim == g->fused.dim);
    g->num_offered++;
    if (g->num_accepted == 0) {
        vector_copy(&g->fused, grad);
        g->num_accepted = 1;
        if (distance) *distance = 0;
        return 1;
    }
    double d = gaf_cosine_distance(&g->fused, grad);
    if (distance) *distance = d;
    if (!(d <= g->threshold)) return 0;
    g->num_accepted++;
    /* halving: G <- G/2 + g/2; mean over k accepted: G <- G + (g - G)/k */
    float w = g->fusion == GAF_FUSION_HALVING ? 0.5f : 1.0f / g->num_accepted;
    vector_scale(&g->fused, 1 - w);
    vector_add(&g->fused, w, grad);
    return 1;
}
