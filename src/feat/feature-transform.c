/* Input normalisation (nnet-get-feature-transform): per-dimension mean/variance, or LDA on
 * spliced frames (Kaldi nnet2's get_lda.sh / nnet-get-feature-transform), as the (out x in+1)
 * matrix a FixedAffineComponent reads (matrix=F: linear part | bias column). */
#include "feat/feat.h"
#include "io/io.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void feature_transform_options_default(struct feature_transform_options *o) {
    memset(o, 0, sizeof *o);
    o->type = FEATURE_TRANSFORM_MEANVAR;
}

/* Accumulators in double: count, sum, scatter (full for LDA, diagonal for mean/variance), and for
 * LDA the per-class counts and sums. */
struct acc {
    int dim, full;
    double count, *sum, *scatter;
    int num_classes;
    double *class_count, *class_sum;
};

static void acc_frame(struct acc *a, const double *x, int label) {
    int d = a->dim;
    a->count++;
    for (int i = 0; i < d; i++) a->sum[i] += x[i];
    if (a->full) {
        for (int i = 0; i < d; i++) {
            double xi = x[i];
            if (xi == 0) continue;
            double *row = a->scatter + (size_t)i * d;
            for (int j = 0; j <= i; j++) row[j] += xi * x[j];
        }
    } else {
        for (int i = 0; i < d; i++) a->scatter[i] += x[i] * x[i];
    }
    if (label >= 0) {
        if (label >= a->num_classes) {
            int n = label + 1;
            a->class_count = xrealloc(a->class_count, sizeof(double) * n);
            a->class_sum = xrealloc(a->class_sum, sizeof(double) * (size_t)n * d);
            for (int c = a->num_classes; c < n; c++) {
                a->class_count[c] = 0;
                memset(a->class_sum + (size_t)c * d, 0, sizeof(double) * d);
            }
            a->num_classes = n;
        }
        a->class_count[label]++;
        double *cs = a->class_sum + (size_t)label * d;
        for (int i = 0; i < d; i++) cs[i] += x[i];
    }
}

/* 1 / stddev of dimension j, or 1 for a constant one (variance 0 up to the rounding of the sums;
 * the test is relative to the dimension's own mean, so that scales from 1e-3 to 1e4 all count). */
static double inv_stddev(double mean, double var) {
    return var > 1e-12 * mean * mean && var > 0 ? 1 / sqrt(var) : 1;
}

static void meanvar_transform(const struct acc *a, struct matrix *out) {
    int d = a->dim;
    matrix_init_on(out, d, d + 1, MATRIX_CPU);
    matrix_set_zero(out);
    for (int i = 0; i < d; i++) {
        double m = a->sum[i] / a->count, v = a->scatter[i] / a->count - m * m;
        double s = inv_stddev(m, v);
        float *row = out->data + (size_t)i * out->stride;
        row[i] = (float)s;
        row[d] = (float)(-s * m);
    }
}

/* LDA: W (within-class) and B (between-class) covariances of the dimensions scaled to unit
 * variance first (S = diag(1/stddev), so that features on any scale count alike); W^-1/2 from its eigendecomposition
 * (floored at 1e-6 of its mean eigenvalue), then the eigenvectors U of W^-1/2 B W^-1/2; the rows
 * of U^T W^-1/2, largest between-class variance s first, scaled by 1/sqrt(1 + s) so that every
 * output dimension has unit total variance; bias -A mean. */
static int lda_transform(const struct acc *a, int out_dim, struct matrix *out) {
    int d = a->dim;
    size_t dd = (size_t)d * d;
    double *w = xcalloc(dd, sizeof *w), *b = xcalloc(dd, sizeof *b), *ev = xmalloc(sizeof *ev * d);
    double *mean = xmalloc(sizeof *mean * d), *diff = xmalloc(sizeof *diff * d);
    double *t = xcalloc(dd, sizeof *t), *m2 = xmalloc(dd * sizeof *m2), *sc = NULL;
    int rc = 0;
    for (int i = 0; i < d; i++) mean[i] = a->sum[i] / a->count;
    for (int c = 0; c < a->num_classes; c++) {
        double n = a->class_count[c];
        if (n == 0) continue;
        for (int i = 0; i < d; i++) diff[i] = a->class_sum[(size_t)c * d + i] / n - mean[i];
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++) b[(size_t)i * d + j] += n * diff[i] * diff[j] / a->count;
    }
    for (int i = 0; i < d; i++)
        for (int j = 0; j <= i; j++) {
            double tot = a->scatter[(size_t)i * d + j] / a->count - mean[i] * mean[j];
            w[(size_t)i * d + j] = w[(size_t)j * d + i] = tot - b[(size_t)i * d + j];
        }
    sc = xmalloc(sizeof *sc * d);
    for (int i = 0; i < d; i++)
        sc[i] = inv_stddev(mean[i], a->scatter[(size_t)i * d + i] / a->count - mean[i] * mean[i]);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            w[(size_t)i * d + j] *= sc[i] * sc[j];
            b[(size_t)i * d + j] *= sc[i] * sc[j];
        }
    if (dense_sym_eig(d, w, ev)) { rc = -1; goto done; }
    double mean_ev = 0;
    for (int i = 0; i < d; i++) mean_ev += ev[i] > 0 ? ev[i] : 0;
    mean_ev /= d;
    if (!(mean_ev > 0)) { rc = error_set("LDA: the within-class covariance is zero"); goto done; }
    /* t = W^-1/2 = V^T diag(1/sqrt(ev)) V, V's rows the eigenvectors */
    for (int k = 0; k < d; k++) {
        double e = ev[k] > 1e-6 * mean_ev ? ev[k] : 1e-6 * mean_ev, s = 1 / sqrt(e);
        const double *v = w + (size_t)k * d;
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++) t[(size_t)i * d + j] += s * v[i] * v[j];
    }
    /* m2 = t B t (OpenBLAS), with w as the scratch for t B */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1, t, d, b, d, 0, w, d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1, w, d, t, d, 0, m2, d);
    for (int i = 0; i < d; i++) /* symmetrise against rounding */
        for (int j = 0; j < i; j++)
            m2[(size_t)i * d + j] = m2[(size_t)j * d + i] =
                0.5 * (m2[(size_t)i * d + j] + m2[(size_t)j * d + i]);
    if (dense_sym_eig(d, m2, ev)) { rc = -1; goto done; }
    matrix_init_on(out, out_dim, d + 1, MATRIX_CPU);
    for (int r = 0; r < out_dim; r++) {
        int k = d - 1 - r; /* ascending eigenvalues: the largest first */
        double s = ev[k] > 0 ? ev[k] : 0, scale = 1 / sqrt(1 + s);
        const double *u = m2 + (size_t)k * d;
        float *row = out->data + (size_t)r * out->stride;
        double bias = 0;
        for (int j = 0; j < d; j++) {
            double aj = 0;
            for (int i = 0; i < d; i++) aj += u[i] * t[(size_t)i * d + j];
            aj *= scale * sc[j];
            row[j] = (float)aj;
            bias -= aj * mean[j];
        }
        row[d] = (float)bias;
    }
done:
    free(sc);
    free(w); free(b); free(ev); free(mean); free(diff); free(t); free(m2);
    return rc;
}

int feature_transform_estimate(const char *feats_rspec, const char *labels_rspec,
                                const struct feature_transform_options *o, struct matrix *out,
                                long long *num_frames) {
    int lda = o->type == FEATURE_TRANSFORM_LDA;
    if (lda && !labels_rspec) return error_set("LDA needs the labels");
    if (o->left_context < 0 || o->right_context < 0)
        return error_set("negative context");
    int ctx = lda ? o->left_context + o->right_context + 1 : 1;
    struct table_reader feats, labels;
    if (table_reader_open(&feats, feats_rspec, &holder_matrix)) return -1;
    if (lda && table_reader_open(&labels, labels_rspec, &holder_int32_vector)) {
        table_reader_close(&feats);
        return -1;
    }
    struct acc a = {0};
    struct matrix m = {0};
    struct int32_vec lab = {0};
    double *x = NULL;
    int rc, bad = 0;
    long long skipped = 0;
    while ((rc = table_reader_next(&feats, &m)) > 0) {
        const char *key = table_reader_key(&feats);
        if (io_check_finite(&m)) { /* the readers' NaN/Inf policy (io.h) */
            bad = error_wrap("'%s': key '%s': ", feats_rspec, key);
            break;
        }
        if (!a.dim) {
            a.dim = m.cols * ctx;
            a.full = lda;
            if (lda && a.dim > 4000) {
                bad = error_set("'%s': LDA on %d spliced dimensions is too large (at most 4000)",
                                feats_rspec, a.dim);
                break;
            }
            a.sum = xcalloc(a.dim, sizeof(double));
            a.scatter = xcalloc(a.full ? (size_t)a.dim * a.dim : (size_t)a.dim, sizeof(double));
            x = xmalloc(sizeof(double) * a.dim);
        } else if (m.cols * ctx != a.dim) {
            bad = error_set("'%s': key '%s' has dimension %d, the first had %d", feats_rspec, key,
                            m.cols, a.dim / ctx);
            break;
        }
        if (lda) {
            int got = table_reader_lookup(&labels, key, &lab);
            if (got < 0) { bad = -1; break; }
            if (!got || lab.dim != m.rows) {
                skipped++;
                continue;
            }
        }
        for (int t0 = 0; t0 < m.rows; t0++) {
            for (int k = 0; k < ctx; k++) {
                int t = t0 - o->left_context + k;
                t = t < 0 ? 0 : t >= m.rows ? m.rows - 1 : t;
                const float *row = m.data + (size_t)t * m.stride;
                for (int j = 0; j < m.cols; j++) x[k * m.cols + j] = row[j];
            }
            int label = lda ? lab.data[t0] : -1;
            if (lda && label < 0) {
                bad = error_set("'%s': key '%s': negative label %d", labels_rspec, key, label);
                break;
            }
            acc_frame(&a, x, label);
        }
        if (bad) break;
    }
    if (rc < 0) bad = -1;
    if (table_reader_close(&feats) && !bad) bad = -1;
    if (lda) table_reader_close(&labels);
    matrix_release(&m);
    int32_vec_release(&lab);
    free(x);
    if (skipped) WARN("%lld utterances without matching labels were left out", skipped);
    if (!bad && a.count < 2) bad = error_set("'%s': fewer than 2 frames", feats_rspec);
    if (!bad) {
        if (lda) {
            int out_dim = o->dim > 0 ? o->dim : a.dim;
            if (out_dim > a.dim) out_dim = a.dim;
            bad = lda_transform(&a, out_dim, out);
        } else {
            meanvar_transform(&a, out);
        }
    }
    if (num_frames) *num_frames = (long long)a.count;
    free(a.sum); free(a.scatter); free(a.class_count); free(a.class_sum);
    return bad ? -1 : 0;
}
