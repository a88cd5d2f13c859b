/* Online natural-gradient preconditioner; section numbers refer to
 * docs/NATURAL-GRADIENT.md. The per-minibatch algorithm is §1.4; the guards are §1.5.
 *
 * Notation: D dim, R rank, N rows of X. W = E^{1/2} R (R x D) where E = diag(e),
 * e_i = 1 / (1 + beta / d_i); by Woodbury beta G^{-1} = I - R^T E R, so Xhat = X - (X W^T) W.
 */
#include "natgrad/natgrad.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NATGRAD_INITIAL_UPDATES 10    /* §1.5 update schedule */
#define NATGRAD_CONDITION 1.0e6       /* §1.4: re-orthogonalize if c_0 > 1e6 c_{R-1} */
#define NATGRAD_ORTH_TOLERANCE 1.0e-3 /* §1.5: O within this of I needs no re-orthogonalization */
#define NATGRAD_MAX_CINV 100.0        /* §1.5: larger C^{-1} elements -> Gram-Schmidt */

struct natgrad {
    struct natgrad_options o;
    int dim, rank;    /* D, R; R == 0 is the identity */
    int t;            /* calls that did something, for the update schedule */
    int initialized;  /* 0 before the first minibatch and after a failed update */
    int have_storage; /* device buffers exist (made on the first call, on x's device) */
    int device;
    struct rng rng;
    double rho, *d; /* (R) */
    /* Device. wj[cur] rows [0,R) hold W; rows [R,2R) receive J = H^T X. The new W_{t+1} is
     * written into the rows [0,R) of wj[!cur], whose rows [R,2R) are scratch. */
    struct matrix wj[2]; /* (2R, D) each */
    int cur;
    struct matrix h;  /* (capacity, R): H = X W^T in the first N rows */
    struct matrix kl; /* (2R, R): L = H^T H above K = J J^T */
    struct matrix a;  /* (R, 2R): [A diag(b_coef), A], so that W_{t+1} = a [W; J] */
    struct matrix sq; /* (R, R): O, then the re-orthogonalization transform */
    struct matrix x0; /* (capacity, D): the first minibatch, copied for each init pass */
    struct vector in_sq; /* (capacity): squared row norms of X (natgrad_precondition_copy) */
    struct matrix js;    /* (matrix_project_out_j_scratch rows, D): J's partial sums */
    /* Host. */
    float *kl_host; /* 2R x R */
    float *a_host;  /* R x 2R; also R x R for sq */
    double *z;      /* R x R: Z, then its eigenvectors as rows; O when re-orthogonalizing */
    double *tmp;    /* R x R: eigenvalues of Z; C^{-1} when re-orthogonalizing */
    double *vec;    /* 8 R: c, e, ... (see natgrad_update_host) */
    float *gs_host; /* R x D, only if Gram-Schmidt was ever needed */
    double *gs;     /* R x D */
    /* An update's host part (natgrad_update_host: Z, its eigenproblem, d', rho' and A), which
     * only the next call needs (§1.3: Xhat uses the old W). With pending it has been handed to the
     * helper thread (or is to be run by natgrad_join); natgrad_join, at the start of the next
     * call, waits for it and finishes the update (W' = A [W; J], in wj[!cur]; J stays in wj[cur]
     * meanwhile). Everything it touches is host scratch that nothing else uses in between. */
    int pending, helper_running;
    pthread_t helper;
    int up_n;              /* inputs: N and tr(X^T X) of the minibatch */
    double up_tr_xx;
    double up_rho1;        /* outputs: rho' (d' in vec + 3R), the re-orthogonalization flag */
    int up_reorth, up_status;
    char up_error[256];    /* the helper's error message (error_get is per thread) */
};

/* The host part of an update goes to a helper thread (then the next minibatch's products run
 * while it solves) for ranks from this on; below it a thread costs about what it saves (the
 * R = 20 eigenproblem takes ~0.03 ms, creating and joining a thread ~0.02-0.05 ms). Tests set
 * these to compare both ways. */
#ifndef NATGRAD_ASYNC_MIN_RANK
#define NATGRAD_ASYNC_MIN_RANK 40
#endif
static int natgrad_async = 1;
static int natgrad_async_min_rank = NATGRAD_ASYNC_MIN_RANK;

void natgrad_options_default(struct natgrad_options *o) {
    o->rank = 20;
    o->update_period = 4;
    o->num_samples_history = 2000.0f;
    o->alpha = 4.0f;
    o->epsilon = 1.0e-10f;
    o->delta = 5.0e-4f;
}

int natgrad_options_check(const struct natgrad_options *o) {
    if (o->rank < 1) return error_set("natural gradient: rank %d < 1", o->rank);
    if (o->update_period < 1)
        return error_set("key 'update-period': must be >= 1, got %d", o->update_period);
    if (!(o->num_samples_history > 0.0f && o->num_samples_history <= 1.0e6f))
        return error_set("key 'num-samples-history': must be in (0, 1e6], got %g",
                         o->num_samples_history);
    if (!(o->alpha >= 0.0f && isfinite(o->alpha)))
        return error_set("key 'alpha': must be >= 0 and finite, got %g", o->alpha);
    if (!(o->epsilon > 0.0f && o->epsilon <= 1.0e-5f))
        return error_set("natural gradient: epsilon %g not in (0, 1e-5]", o->epsilon);
    if (!(o->delta > 0.0f && o->delta <= 1.0e-2f))
        return error_set("natural gradient: delta %g not in (0, 1e-2]", o->delta);
    return 0;
}

struct natgrad *natgrad_new(int dim, const struct natgrad_options *o, uint64_t seed) {
    ASSERT(dim >= 1);
    ASSERT(natgrad_options_check(o) == 0);
    struct natgrad *p = xcalloc(1, sizeof *p);
    p->o = *o;
    p->dim = dim;
    p->rank = o->rank;
    if (p->rank >= dim) { /* §1.5 */
        if (dim > 1)
            WARN("natural gradient rank %d >= dim %d: using rank %d", o->rank, dim, dim - 1);
        p->rank = dim - 1;
    }
    rng_seed(&p->rng, seed);
    int R = p->rank;
    if (R > 0) {
        p->d = xcalloc((size_t)R, sizeof *p->d);
        p->kl_host = xcalloc((size_t)2 * R * R, sizeof *p->kl_host);
        p->a_host = xcalloc((size_t)2 * R * R, sizeof *p->a_host);
        p->z = xcalloc((size_t)R * R, sizeof *p->z);
        p->tmp = xcalloc((size_t)R * R, sizeof *p->tmp);
        p->vec = xcalloc((size_t)8 * R, sizeof *p->vec);
    }
    return p;
}

void natgrad_free(struct natgrad *p) {
    if (!p) return;
    if (p->helper_running) pthread_join(p->helper, NULL);
    for (int i = 0; i < 2; i++)
        matrix_release(&p->wj[i]);
    matrix_release(&p->h);
    matrix_release(&p->kl);
    matrix_release(&p->a);
    matrix_release(&p->sq);
    matrix_release(&p->x0);
    matrix_release(&p->js);
    vector_release(&p->in_sq);
    free(p->d);
    free(p->kl_host);
    free(p->a_host);
    free(p->z);
    free(p->tmp);
    free(p->vec);
    free(p->gs_host);
    free(p->gs);
    free(p);
}

int natgrad_rank(const struct natgrad *p) { return p->rank; }

/* §1.2: eta = 1 - exp(-N / num_samples_history), capped at 0.9 (near 1 gives NaN on zero input). */
static double natgrad_eta(const struct natgrad *p, int n) {
    double eta = 1.0 - exp(-(double)n / p->o.num_samples_history);
    return eta > 0.9 ? 0.9 : eta;
}

/* e_i = 1 / (1 + beta / d_i) with beta = rho (1 + alpha) + (alpha / D) sum(d) (§1.3). */
static void natgrad_compute_e(const struct natgrad *p, const double *d, double rho, double *sqrt_e,
                              double *inv_sqrt_e) {
    double sum = 0, alpha = p->o.alpha;
    for (int i = 0; i < p->rank; i++)
        sum += d[i];
    double beta = rho * (1.0 + alpha) + alpha / p->dim * sum;
    for (int i = 0; i < p->rank; i++) {
        double e = 1.0 / (1.0 + beta / d[i]);
        sqrt_e[i] = sqrt(e);
        inv_sqrt_e[i] = 1.0 / sqrt_e[i];
    }
}

/* Grow-only row capacity: a view of the first n rows of m (cols columns). */
static struct matrix natgrad_rows(struct natgrad *p, struct matrix *m, int n, int cols) {
    if (m->rows < n) {
        matrix_release(m);
        matrix_init_on(m, n, cols, p->device);
    }
    return matrix_rows(m, 0, n);
}

static void natgrad_alloc_device(struct natgrad *p, int device) {
    int R = p->rank, D = p->dim;
    p->device = device;
    for (int i = 0; i < 2; i++)
        matrix_init_on(&p->wj[i], 2 * R, D, device);
    matrix_init_on(&p->kl, 2 * R, R, device);
    matrix_init_on(&p->a, R, 2 * R, device);
    matrix_init_on(&p->sq, R, R, device);
    p->have_storage = 1;
}

/* §1.5 initialization, first part: rho = d_i = epsilon and W = sqrt(e) R_0, where row r of R_0
 * has equal entries at columns r, r+R, r+2R, ... except 1.1 for the first (symmetry breaking),
 * normalized; e = 1 / (2 + alpha (D + R) / D). */
static void natgrad_init_default(struct natgrad *p) {
    int R = p->rank, D = p->dim;
    float *w = p->gs_host;
    if (!w) w = p->gs_host = xmalloc((size_t)R * D * sizeof *w);
    memset(w, 0, (size_t)R * D * sizeof *w);
    double sqrt_e = sqrt(1.0 / (2.0 + p->o.alpha * (D + R) / (double)D));
    for (int r = 0; r < R; r++) {
        int count = (D - 1 - r) / R + 1; /* columns r, r+R, ... < D */
        double norm = 1.0 / sqrt(1.1 * 1.1 + (count - 1));
        for (int k = 0; k < count; k++)
            w[(size_t)r * D + r + (size_t)k * R] = (float)(sqrt_e * norm * (k == 0 ? 1.1 : 1.0));
    }
    struct matrix wm = matrix_rows(&p->wj[p->cur], 0, R);
    matrix_from_host(&wm, w);
    p->rho = p->o.epsilon;
    for (int i = 0; i < R; i++)
        p->d[i] = p->o.epsilon;
}

/* Kaldi's OrthogonalizeRows: Gram-Schmidt in double on the host, restarting a row from random
 * values when it vanishes. Returns 0, or -1 if a row would not orthogonalize. */
static int natgrad_gram_schmidt(struct natgrad *p, double *m, int rows, int cols) {
    for (int i = 0; i < rows; i++) {
        double *ri = m + (size_t)i * cols;
        for (int counter = 0;; counter++) {
            if (counter > 100) return error_set("natural gradient: Gram-Schmidt did not converge");
            double start = 0;
            for (int c = 0; c < cols; c++)
                start += ri[c] * ri[c];
            if (!isfinite(start) || start == 0.0) {
                for (int c = 0; c < cols; c++)
                    ri[c] = rng_gauss(&p->rng);
                continue;
            }
            for (int j = 0; j < i; j++) {
                const double *rj = m + (size_t)j * cols;
                double dot = 0;
                for (int c = 0; c < cols; c++)
                    dot += ri[c] * rj[c];
                for (int c = 0; c < cols; c++)
                    ri[c] -= dot * rj[c];
            }
            double end = 0;
            for (int c = 0; c < cols; c++)
                end += ri[c] * ri[c];
            if (end <= 0.01 * start) { /* mostly cancelled: do it again, for roundoff */
                if (end == 0.0)
                    for (int c = 0; c < cols; c++)
                        ri[c] = rng_gauss(&p->rng);
                continue;
            }
            double s = 1.0 / sqrt(end);
            for (int c = 0; c < cols; c++)
                ri[c] *= s;
            break;
        }
    }
    return 0;
}

/* §1.5 re-orthogonalization of R_{t+1} = E'^{-1/2} W' (W' = rows [0,R) of wj[!cur]; d1, rho1 its
 * d and rho). O = E'^{-1/2} W'W'^T E'^{-1/2}; if O is not within 1e-3 of I, O = C C^T (Cholesky)
 * and W' <- (E'^{1/2} C^{-1} E'^{-1/2}) W', which leaves the leading rows alone; if Cholesky fails
 * or max(C^{-1}) >= 100, Gram-Schmidt on the host and rescale the rows by sqrt(e'). */
static int natgrad_reorthogonalize(struct natgrad *p, const double *d1, double rho1) {
    int R = p->rank, D = p->dim;
    double *sqrt_e1 = p->vec + 6 * R, *inv_sqrt_e1 = p->vec + 7 * R;
    natgrad_compute_e(p, d1, rho1, sqrt_e1, inv_sqrt_e1);
    struct matrix wnew = matrix_rows(&p->wj[!p->cur], 0, R);
    struct matrix temp = matrix_rows(&p->wj[!p->cur], R, R);

    matrix_sym_add_mat_mat(&p->sq, 1.0f, &wnew, MATRIX_NO_TRANS, 0.0f);
    matrix_to_host(&p->sq, p->a_host);
    double *o = p->z, worst = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < R; j++) {
            o[i * R + j] = p->a_host[i * R + j] * inv_sqrt_e1[i] * inv_sqrt_e1[j];
            double err = fabs(o[i * R + j] - (i == j));
            if (!(err <= worst)) worst = err; /* NaN propagates */
        }
    if (worst <= NATGRAD_ORTH_TOLERANCE) return 0;

    int ok = isfinite(worst) && dense_cholesky(R, o) == 0;
    double *cinv = p->tmp; /* C^{-1}, lower triangular, by forward substitution */
    if (ok) {
        memset(cinv, 0, (size_t)R * R * sizeof *cinv);
        double max = -INFINITY;
        for (int j = 0; j < R && ok; j++) {
            for (int i = j; i < R; i++) {
                double s = (i == j);
                for (int k = j; k < i; k++)
                    s -= o[i * R + k] * cinv[k * R + j];
                cinv[i * R + j] = s / o[i * R + i];
                if (!isfinite(cinv[i * R + j])) ok = 0;
                if (cinv[i * R + j] > max) max = cinv[i * R + j];
            }
        }
        if (ok && !(max < NATGRAD_MAX_CINV)) {
            WARN("natural gradient (dim %d, rank %d): Cholesky out of expected range (max of "
                 "C^-1 %.3g), using Gram-Schmidt", D, R, max);
            ok = 0;
        }
    } else {
        WARN("natural gradient (dim %d, rank %d): Cholesky failed while re-orthogonalizing, "
             "using Gram-Schmidt", D, R);
    }
    if (!ok) {
        if (!p->gs) p->gs = xmalloc((size_t)R * D * sizeof *p->gs);
        if (!p->gs_host) p->gs_host = xmalloc((size_t)R * D * sizeof *p->gs_host);
        matrix_to_host(&wnew, p->gs_host);
        for (size_t k = 0; k < (size_t)R * D; k++)
            p->gs[k] = p->gs_host[k];
        if (natgrad_gram_schmidt(p, p->gs, R, D) < 0) return -1;
        for (int i = 0; i < R; i++)
            for (int c = 0; c < D; c++)
                p->gs_host[(size_t)i * D + c] = (float)(sqrt_e1[i] * p->gs[(size_t)i * D + c]);
        matrix_from_host(&wnew, p->gs_host);
        return 0;
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < R; j++)
            p->a_host[i * R + j] =
                j <= i ? (float)(sqrt_e1[i] * cinv[i * R + j] * inv_sqrt_e1[j]) : 0.0f;
    matrix_from_host(&p->sq, p->a_host);
    matrix_copy(&temp, &wnew);
    matrix_add_mat_mat(&wnew, 1.0f, &p->sq, MATRIX_NO_TRANS, &temp, MATRIX_NO_TRANS, 0.0f);
    return 0;
}

/* The host part of the update of §1.4, from K, L (kl_host), d, rho, up_n and up_tr_xx: Z, its
 * eigendecomposition, d' (vec + 3R), rho' (up_rho1), the re-orthogonalization flag and A
 * (a_host). Host memory only, so it may run on the helper thread. 0, or -1 (error_set). */
static int natgrad_update_host(struct natgrad *p) {
    int N = p->up_n, D = p->dim, R = p->rank;
    double tr_xx = p->up_tr_xx;
    const float *lh = p->kl_host, *kh = p->kl_host + (size_t)R * R;
    double *c = p->vec, *sqrt_e = p->vec + R, *inv_sqrt_e = p->vec + 2 * R;
    double *d1 = p->vec + 3 * R, *sqrt_e1 = p->vec + 4 * R, *inv_sqrt_e1 = p->vec + 5 * R;
    double *z = p->z, eta = natgrad_eta(p, N), rho = p->rho, sum_d = 0;
    for (int i = 0; i < R; i++)
        sum_d += p->d[i];
    natgrad_compute_e(p, p->d, rho, sqrt_e, inv_sqrt_e);

    /* Z = Y Y^T in double (§1.4, with Y = (eta/N) E^{-1/2} J + (1-eta)(D+rho) E^{-1/2} W) */
    double a = eta / N, b = 1.0 - eta, ztrace = 0;
    for (int i = 0; i < R; i++) {
        double gi = p->d[i] + rho;
        for (int k = 0; k < R; k++) {
            double gk = p->d[k] + rho, s = inv_sqrt_e[i] * inv_sqrt_e[k];
            double kk = 0.5 * ((double)kh[i * R + k] + kh[k * R + i]);
            double ll = 0.5 * ((double)lh[i * R + k] + lh[k * R + i]);
            z[i * R + k] = a * a * s * kk + a * b * s * ll * (gi + gk);
            if (i == k) z[i * R + k] += b * b * gi * gi;
        }
        ztrace += z[i * R + i];
    }
    /* §1.5: Z grows like the 4th power of the data: normalize by its trace before eig. */
    double zscale = ztrace > 1.0 ? ztrace : 1.0;
    if (!isfinite(zscale)) return error_set("natural gradient: non-finite Z");
    for (int k = 0; k < R * R; k++)
        z[k] /= zscale;
    if (dense_sym_eig(R, z, p->tmp) < 0) return error_wrap("natural gradient: ");
    for (int i = 0; i < R; i++)
        c[i] = p->tmp[R - 1 - i] * zscale; /* descending */
    /* Now U_ki (k-th element of eigenvector i) is z[(R-1-i)*R + k]. */

    for (int i = 0; i < R; i++)
        if (!isfinite(c[i])) return error_set("natural gradient: non-finite eigenvalue of Z");
    int reorth = c[0] > NATGRAD_CONDITION * c[R - 1]; /* tested before the floor */
    /* §1.5: c >= ((1-eta) rho)^2 in exact arithmetic; below it is roundoff: re-orthogonalize. */
    double cfloor = (1.0 - eta) * rho * (1.0 - eta) * rho;
    double sum_sqrt_c = 0, max_sqrt_c = 0;
    for (int i = 0; i < R; i++) {
        if (c[i] < cfloor) {
            c[i] = cfloor;
            reorth = 1;
        }
        c[i] = sqrt(c[i]); /* from here on c holds sqrt(c) */
        sum_sqrt_c += c[i];
        if (c[i] > max_sqrt_c) max_sqrt_c = c[i];
    }
    /* rho' keeps the trace (§1.2); then the epsilon / delta floors (§1.5). */
    double rho1 = (eta * tr_xx / N + (1.0 - eta) * (D * rho + sum_d) - sum_sqrt_c) / (D - R);
    if (!isfinite(rho1)) return error_set("natural gradient: non-finite rho");
    double f = p->o.delta * max_sqrt_c;
    if (f < p->o.epsilon) f = p->o.epsilon;
    for (int i = 0; i < R; i++)
        d1[i] = c[i] - rho1 > f ? c[i] - rho1 : f; /* d' = sqrt(c) - rho' */
    if (rho1 < f) rho1 = f;
    natgrad_compute_e(p, d1, rho1, sqrt_e1, inv_sqrt_e1);
    p->up_rho1 = rho1;
    p->up_reorth = reorth;

    /* W' = A B with B = J + diag((1-eta)/(eta/N) (d_i + rho)) W and
     * A_ik = (eta/N) sqrt(e'_i) c_i^{-1/2} U_ki e_k^{-1/2}, computed as one product
     * W' = [A diag(coef), A] [W; J]. */
    for (int i = 0; i < R; i++) {
        for (int k = 0; k < R; k++) {
            double u = z[(size_t)(R - 1 - i) * R + k] * sqrt_e1[i] / c[i] * inv_sqrt_e[k];
            p->a_host[(size_t)i * 2 * R + k] = (float)(b * (p->d[k] + rho) * u);
            p->a_host[(size_t)i * 2 * R + R + k] = (float)(a * u);
        }
    }
    return 0;
}

/* The rest of the update, on the calling thread: W' = A [W; J] on the device, re-orthogonalized
 * if the host part asked for it; then the estimate becomes F_{t+1}. 0, or -1 (error_set) and
 * the estimate is unchanged. */
static int natgrad_update_finish(struct natgrad *p) {
    int R = p->rank;
    struct matrix wj = p->wj[p->cur];
    double *d1 = p->vec + 3 * R, rho1 = p->up_rho1;
    struct matrix wnew = matrix_rows(&p->wj[!p->cur], 0, R);
    matrix_from_host(&p->a, p->a_host);
    matrix_add_mat_mat(&wnew, 1.0f, &p->a, MATRIX_NO_TRANS, &wj, MATRIX_NO_TRANS, 0.0f);
    if (p->up_reorth && natgrad_reorthogonalize(p, d1, rho1) < 0) return -1;
    if (!matrix_is_finite(&wnew)) return error_set("natural gradient: non-finite W");

    p->cur = !p->cur;
    p->rho = rho1;
    memcpy(p->d, d1, (size_t)R * sizeof *d1);
    return 0;
}

static void *natgrad_helper(void *arg) {
    struct natgrad *p = arg;
    p->up_status = natgrad_update_host(p);
    if (p->up_status < 0) snprintf(p->up_error, sizeof p->up_error, "%s", error_get());
    return NULL;
}

/* Finish an update left pending by the last call (waiting for its helper thread). A failure is
 * handled as natgrad_precondition_rows handles one of its own: warned, and the estimate is
 * initialized again from the next minibatch (the one of the call that joins). */
static void natgrad_join(struct natgrad *p) {
    if (!p->pending) return;
    p->pending = 0;
    int status;
    if (p->helper_running) {
        pthread_join(p->helper, NULL);
        p->helper_running = 0;
        status = p->up_status;
        if (status < 0) error_set("%s", p->up_error);
    } else {
        status = natgrad_update_host(p);
    }
    if (status == 0) status = natgrad_update_finish(p);
    if (status < 0) {
        WARN("natural gradient: update discarded, re-initializing (%s)", error_get());
        p->initialized = 0;
    }
}

/* The products of one call of §1.4 with the old W (§1.3): x (N x D, N >= 1) receives Xhat =
 * X0 - H W, row_sq (may be NULL) its squared row norms; on update calls H and J = H^T X0 are
 * kept (J in wj) for natgrad_update. X0 = src when src is not NULL (N x D, or N x (D - 1) and a
 * last column of ones), with the squared norms of its rows in in_sq; else x itself. */
static void natgrad_project(struct natgrad *p, struct matrix *x, const struct matrix *src,
                            struct vector *in_sq, int update, struct vector *row_sq) {
    int N = x->rows, R = p->rank;
    struct matrix wj = p->wj[p->cur];
    struct matrix w = matrix_rows(&wj, 0, R), j = matrix_rows(&wj, R, R);
    struct matrix h = natgrad_rows(p, &p->h, N, R);
    if (!update) { /* H = X W^T, Xhat = X - H W (on some CPUs one fused pass) */
        matrix_project_out(x, &h, &w, 0, src, in_sq, row_sq);
        return;
    }
    /* and J = H^T X, W no longer needed: matrix_project_out_j does them the faster way for the
     * device and rank (on the CPU one pass, or the products one by one). */
    int js_rows = matrix_project_out_j_scratch(x, R);
    struct matrix js = js_rows > 0 ? natgrad_rows(p, &p->js, js_rows, p->dim) : (struct matrix){0};
    matrix_project_out_j(x, &h, &j, &w, src, in_sq, row_sq, js_rows > 0 ? &js : NULL);
}

/* The rest of an update after natgrad_project (H and J of a minibatch of N rows with
 * tr(X^T X) = tr_xx): replaces the estimate by F_{t+1}, or, with defer, leaves the host part to
 * the helper thread and natgrad_join. Returns -1 (error_set) if that failed, and then the
 * estimate is unchanged. */
static int natgrad_update(struct natgrad *p, int N, double tr_xx, int defer) {
    int D = p->dim, R = p->rank;
    struct matrix wj = p->wj[p->cur];
    struct matrix j = matrix_rows(&wj, R, R), h = matrix_rows(&p->h, 0, N);
    if (N > D) { /* [L; K] = [W; J] J^T in one product (L = W J^T = H^T H) */
        matrix_add_mat_mat(&p->kl, 1.0f, &wj, MATRIX_NO_TRANS, &j, MATRIX_TRANS, 0.0f);
    } else {
        struct matrix l = matrix_rows(&p->kl, 0, R), k = matrix_rows(&p->kl, R, R);
        matrix_sym_add_mat_mat(&k, 1.0f, &j, MATRIX_NO_TRANS, 0.0f);
        matrix_sym_add_mat_mat(&l, 1.0f, &h, MATRIX_TRANS, 0.0f);
    }
    matrix_to_host(&p->kl, p->kl_host);

    p->up_n = N;
    p->up_tr_xx = tr_xx;
    if (defer && natgrad_async && R >= natgrad_async_min_rank) { /* the helper: host work only */
        p->pending = 1; /* natgrad_join finishes it, at the next call */
        p->helper_running = pthread_create(&p->helper, NULL, natgrad_helper, p) == 0;
        return 0;
    }
    if (natgrad_update_host(p) < 0) return -1;
    return natgrad_update_finish(p);
}

/* §1.5 initialization: the default estimate, then 3 update passes over a copy of the first
 * minibatch (1 if N <= R). */
static int natgrad_init(struct natgrad *p, const struct matrix *x) {
    natgrad_init_default(p);
    struct matrix x0 = natgrad_rows(p, &p->x0, x->rows, p->dim);
    int passes = x->rows <= p->rank ? 1 : 3;
    for (int i = 0; i < passes; i++) {
        matrix_copy(&x0, x);
        double norm = matrix_frobenius_norm(&x0);
        natgrad_project(p, &x0, NULL, NULL, 1, NULL);
        if (natgrad_update(p, x->rows, norm * norm, 0) < 0) {
            natgrad_init_default(p);
            return -1;
        }
    }
    return 0;
}

/* Whether this call updates the estimate (§1.5 schedule). */
static int natgrad_update_due(const struct natgrad *p) {
    return p->initialized && (p->t <= NATGRAD_INITIAL_UPDATES ||
                              (p->t - NATGRAD_INITIAL_UPDATES) % p->o.update_period == 0);
}

/* The end of a call whose products are done: the update if due (a failure warned, and the
 * estimate initialized again from the next minibatch), then the schedule moves on. */
static void natgrad_end_call(struct natgrad *p, int N, double tr_xx, int update) {
    if (update && natgrad_update(p, N, tr_xx, 1) < 0) {
        WARN("natural gradient: update discarded, re-initializing (%s)", error_get());
        p->initialized = 0;
    }
    p->t++;
}

void natgrad_precondition(struct natgrad *p, struct matrix *x, float *scale) {
    natgrad_precondition_rows(p, x, scale, NULL);
}

void natgrad_precondition_rows(struct natgrad *p, struct matrix *x, float *scale,
                               struct vector *row_sq) {
    ASSERT(x->cols == p->dim);
    ASSERT(!row_sq || row_sq->dim == x->rows);
    natgrad_join(p);
    *scale = 1.0f;
    if (p->rank == 0 || x->rows == 0) { /* §1.5: D == 1 is the identity */
        if (row_sq) vector_row_sq_norms(row_sq, x);
        return;
    }
    if (!p->have_storage) natgrad_alloc_device(p, x->device);
    ASSERT(x->device == p->device);

    double norm = matrix_frobenius_norm(x), tr_xx = norm * norm;
    if (!isfinite(tr_xx)) { /* leave NaN/inf for the trainer's check; state untouched */
        if (row_sq) vector_row_sq_norms(row_sq, x);
        return;
    }
    if (!p->initialized) {
        if (natgrad_init(p, x) == 0)
            p->initialized = 1;
        else
            WARN("natural gradient: initialization failed (%s)", error_get());
    }
    int update = natgrad_update_due(p);
    /* The row norms, when wanted, come from the pass and give tr(Xhat Xhat^T) too. */
    natgrad_project(p, x, NULL, NULL, update, row_sq);
    natgrad_end_call(p, x->rows, tr_xx, update);
    if (tr_xx > 0) { /* §1.3: gamma = sqrt(tr(X X^T) / tr(Xhat Xhat^T)), 1 if either is 0 */
        double out = row_sq ? sqrt(vector_sum(row_sq)) : matrix_frobenius_norm(x);
        if (out > 0 && isfinite(out)) *scale = (float)(norm / out);
    }
}

/* x = src, or [src | 1] when src is a column short. */
static void natgrad_copy_in(struct matrix *x, const struct matrix *src) {
    struct matrix xs = matrix_view(x, 0, x->rows, 0, src->cols);
    matrix_copy(&xs, src);
    if (src->cols < x->cols) {
        struct matrix one = matrix_view(x, 0, x->rows, src->cols, 1);
        matrix_set_const(&one, 1.0f);
    }
}

void natgrad_precondition_copy(struct natgrad *p, const struct matrix *src, struct matrix *x,
                               float *scale, struct vector *row_sq) {
    ASSERT(x->cols == p->dim && x->rows == src->rows);
    ASSERT(src->cols == p->dim || src->cols == p->dim - 1);
    ASSERT(!row_sq || row_sq->dim == x->rows);
    natgrad_join(p);
    int N = x->rows;
    if (p->rank == 0 || N == 0 || !p->initialized || !matrix_project_out_fused(x) || !row_sq) {
        natgrad_copy_in(x, src); /* the general way: copy, then natgrad_precondition_rows */
        natgrad_precondition_rows(p, x, scale, row_sq);
        return;
    }
    /* On the CPU with an estimate: copy, norms of X, the products (H, Xhat; J on update calls)
     * and the row norms of Xhat in one pass; tr(X^T X) from the norms after it. */
    *scale = 1.0f;
    if (p->in_sq.dim < N) {
        vector_release(&p->in_sq);
        vector_init_on(&p->in_sq, N, x->device);
    }
    struct vector in_sq = vector_range(&p->in_sq, 0, N);
    int update = natgrad_update_due(p);
    natgrad_project(p, x, src, &in_sq, update, row_sq);
    double tr_xx = 0, out = 0;
    for (int i = 0; i < N; i++) {
        tr_xx += in_sq.data[i];
        out += row_sq->data[i];
    }
    if (!isfinite(tr_xx)) { /* as natgrad_precondition_rows: x is the copy, state untouched */
        natgrad_copy_in(x, src);
        vector_row_sq_norms(row_sq, x);
        return;
    }
    natgrad_end_call(p, N, tr_xx, update);
    out = sqrt(out);
    if (tr_xx > 0 && out > 0 && isfinite(out)) *scale = (float)(sqrt(tr_xx) / out);
}

int natgrad_get_state(struct natgrad *p, float *w, double *d, double *rho) {
    natgrad_join(p);
    if (p->rank == 0 || !p->have_storage || !p->initialized) return 0;
    struct matrix wm = matrix_rows(&p->wj[p->cur], 0, p->rank);
    matrix_to_host(&wm, w);
    memcpy(d, p->d, (size_t)p->rank * sizeof *d);
    *rho = p->rho;
    return p->rank;
}
