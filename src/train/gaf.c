/* The update rules beyond plain averaging, as single vector operations over a parameter block:
 * GAF's agreement test and fusion, job-level agreement, the proximal/elastic pull, the EMA of
 * Entropy-SGD, and TWA's Gram-Schmidt basis (reference/averaging-methods.md §1, §2, §6). */
#include "train/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double cosine_distance(const struct vector *a, const struct vector *b) {
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
    double d = cosine_distance(&g->fused, grad);
    if (distance) *distance = d;
    if (!(d <= g->threshold)) return 0;
    g->num_accepted++;
    /* halving: G <- G/2 + g/2; mean over k accepted: G <- G + (g - G)/k */
    float w = g->fusion == GAF_FUSION_HALVING ? 0.5f : 1.0f / g->num_accepted;
    vector_scale(&g->fused, 1 - w);
    vector_add(&g->fused, w, grad);
    return 1;
}

void proximal_pull(struct vector *x, const struct vector *ref, float c) {
    ASSERT(x->dim == ref->dim);
    vector_scale(x, 1 - c);
    vector_add(x, c, ref);
}

void vector_ema(struct vector *mu, const struct vector *y, float beta) {
    proximal_pull(mu, y, 1 - beta);
}

int agreement_select(const struct vector *changes, int num, const float *weights, float tau,
                     int *keep, double *distance) {
    ASSERT(num >= 1);
    struct vector c;
    vector_init_on(&c, changes[0].dim, changes[0].device);
    double wsum = 0;
    for (int j = 0; j < num; j++)
        wsum += weights ? weights[j] : 1;
    ASSERT(wsum > 0);
    for (int j = 0; j < num; j++)
        vector_add(&c, (float)((weights ? weights[j] : 1) / wsum), &changes[j]);
    int kept = 0;
    for (int j = 0; j < num; j++) {
        double d = cosine_distance(&changes[j], &c);
        if (distance) distance[j] = d;
        keep[j] = d <= tau && (!weights || weights[j] > 0);
        kept += keep[j];
    }
    vector_release(&c);
    return kept;
}

/* ---- TWA's basis ---- */

static double ddot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

int gram_schmidt(double *v, int num, int dim) {
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

void basis_project(const double *p, int k, int dim, const double *x, double *alpha) {
    for (int j = 0; j < k; j++)
        alpha[j] = ddot(p + (size_t)j * dim, x, dim);
}

void basis_expand(const double *p, int k, int dim, const double *alpha, double *x) {
    memset(x, 0, sizeof(double) * dim);
    for (int j = 0; j < k; j++) {
        const double *q = p + (size_t)j * dim;
        for (int t = 0; t < dim; t++)
            x[t] += alpha[j] * q[t];
    }
}
