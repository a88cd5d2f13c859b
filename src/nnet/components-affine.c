/* Affine components: Affine (plain SGD), NaturalGradientAffine (online NG-SGD), and the fixed
 * (non-trained) FixedAffine, FixedScale, FixedBias.
 *
 * Parameters of Affine and NaturalGradientAffine: c->params = [W (out x in, row-major) | b (out)];
 * for the fixed ones c->params is owned by the component and never joins the network's block. */
#include "nnet/nnet-internal.h"
#include "natgrad/natgrad.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared by the affine types ---- */
/* (The "stddev" in info lines is Kaldi's: the root mean square of the parameters.) */

/* Kaldi's matrix=F: an out x (in + 1) matrix whose last column is the bias. */
static int affine_from_matrix_file(struct component *c, const char *file) {
    struct matrix m = {0};
    if (io_read_matrix_file(file, &m)) return error_wrap("key 'matrix': ");
    if (m.rows < 1 || m.cols < 2) {
        int r = m.rows, k = m.cols;
        matrix_release(&m);
        return error_set("key 'matrix': '%s' is %dx%d, need at least 1x2 (linear | bias)", file, r,
                         k);
    }
    c->output_dim = m.rows;
    c->input_dim = m.cols - 1;
    component_alloc_params(c, c->output_dim * (c->input_dim + 1));
    struct matrix w = component_linear_view(c);
    struct matrix src_w = matrix_view(&m, 0, m.rows, 0, c->input_dim);
    matrix_copy(&w, &src_w);
    struct vector b = component_bias_view(c);
    struct matrix bm = matrix_from_vector(&b, c->output_dim, 1);
    struct matrix src_b = matrix_view(&m, 0, m.rows, c->input_dim, 1);
    matrix_copy(&bm, &src_b);
    matrix_release(&m);
    return 0;
}

/* input-dim/output-dim/param-stddev/bias-stddev, or matrix=F. */
static int affine_params_from_config(struct component *c, struct config_line *cl, int prev_dim,
                                     struct rng *r, float default_bias_stddev) {
    const char *file = NULL;
    int got = config_get_string(cl, "matrix", &file);
    if (got < 0) return -1;
    if (got) return affine_from_matrix_file(c, file);
    if (component_dim_from_config(cl, "input-dim", prev_dim, &c->input_dim) ||
        component_dim_from_config(cl, "output-dim", -1, &c->output_dim))
        return -1;
    if ((long)c->input_dim * c->output_dim > 500000000L)
        return error_set("%d x %d parameters are too many", c->output_dim, c->input_dim);
    float param_stddev = 1 / sqrtf((float)c->input_dim), bias_stddev = default_bias_stddev;
    if (config_get_float(cl, "param-stddev", &param_stddev) < 0 ||
        config_get_float(cl, "bias-stddev", &bias_stddev) < 0)
        return -1;
    if (param_stddev < 0) return error_set("key 'param-stddev': negative (%g)", param_stddev);
    if (bias_stddev < 0) return error_set("key 'bias-stddev': negative (%g)", bias_stddev);
    component_alloc_params(c, c->output_dim * (c->input_dim + 1));
    struct matrix w = component_linear_view(c);
    struct vector b = component_bias_view(c);
    matrix_set_randn(&w, r, param_stddev);
    vector_set_randn(&b, r, bias_stddev);
    return 0;
}

int updatable_from_config(struct component *c, struct config_line *cl) {
    c->learning_rate = 0.001f;
    c->max_change = NNET_DEFAULT_MAX_CHANGE_HIDDEN; /* the network may raise the last layer's */
    int got = config_get_float(cl, "max-change", &c->max_change);
    if (config_get_float(cl, "learning-rate", &c->learning_rate) < 0 || got < 0) return -1;
    c->max_change_default = !got;
    if (c->learning_rate < 0)
        return error_set("key 'learning-rate': negative (%g)", c->learning_rate);
    if (c->max_change < 0) return error_set("key 'max-change': negative (%g)", c->max_change);
    return 0;
}

/* <LinearParams> FM <BiasParams> FV -> c->params (owned) and the dims. */
static int affine_read_params(struct component *c, struct nnet_stream *s) {
    struct matrix m = {0};
    struct vector b = {0};
    if (nio_expect_token(s, "<LinearParams>") || nio_read_matrix(s, &m)) return -1;
    if (nio_expect_token(s, "<BiasParams>") || nio_read_vector(s, &b)) {
        matrix_release(&m);
        return -1;
    }
    int bad = 0;
    if (m.rows < 1 || m.cols < 1)
        bad = error_set("<LinearParams> is empty");
    else if (b.dim != m.rows)
        bad = error_set("<BiasParams> has dim %d, expected %d", b.dim, m.rows);
    if (!bad) {
        c->output_dim = m.rows;
        c->input_dim = m.cols;
        component_alloc_params(c, m.rows * (m.cols + 1));
        struct matrix w = component_linear_view(c);
        struct vector bv = component_bias_view(c);
        matrix_copy(&w, &m);
        vector_copy(&bv, &b);
    }
    matrix_release(&m);
    vector_release(&b);
    return bad;
}

static int affine_write_params(const struct component *c, struct nnet_stream *s) {
    struct matrix w = component_linear_view(c);
    struct vector b = component_bias_view(c);
    if (nio_write_token(s, "<LinearParams>") || nio_write_matrix(s, &w) ||
        nio_write_token(s, "<BiasParams>") || nio_write_vector(s, &b))
        return -1;
    return 0;
}

int updatable_read_header(struct component *c, struct nnet_stream *s) {
    if (nio_expect_float(s, "<LearningRate>", &c->learning_rate)) return -1;
    int got = nio_try_token(s, "<MaxChange>");
    if (got < 0) return -1;
    c->max_change = 0;
    if (got && nio_read_float(s, &c->max_change)) return -1;
    if (!(c->learning_rate >= 0)) return error_set("<LearningRate> is negative or NaN");
    if (!(c->max_change >= 0)) return error_set("<MaxChange> is negative or NaN");
    return 0;
}

int updatable_write_header(const struct component *c, struct nnet_stream *s) {
    if (nio_write_token(s, "<LearningRate>") || nio_write_float(s, c->learning_rate) ||
        nio_write_token(s, "<MaxChange>") || nio_write_float(s, c->max_change))
        return -1;
    return 0;
}

/* Kaldi's is_gradient flag: parnet keeps gradients in the network's delta block instead, so a
 * model is never a gradient. */
static int read_is_gradient(struct nnet_stream *s) {
    int got = nio_try_token(s, "<IsGradient>");
    if (got <= 0) return got;
    int g;
    if (nio_read_bool(s, &g)) return -1;
    if (g) return error_set("<IsGradient> T is not supported");
    return 0;
}

/* in_deriv = out_deriv W */
static void affine_backprop_input(const struct component *c, const struct matrix *out_deriv,
                                  struct matrix *in_deriv) {
    if (!in_deriv) return;
    struct matrix w = component_linear_view(c);
    matrix_layer_backprop(in_deriv, out_deriv, &w);
}

/* dst = alpha * [out_deriv^T in | column sums of out_deriv] + beta dst (beta 0 or 1) */
static void affine_step_into(const struct component *c, const struct matrix *in,
                             const struct matrix *out_deriv, struct vector *dst, float alpha,
                             float beta) {
    struct vector dw = vector_range(dst, 0, c->output_dim * c->input_dim);
    struct matrix dwm = matrix_from_vector(&dw, c->output_dim, c->input_dim);
    struct vector db = vector_range(dst, c->output_dim * c->input_dim, c->output_dim);
    matrix_layer_weight_grad(&dwm, alpha, out_deriv, in, beta);
    matrix_layer_bias_grad(&db, alpha, out_deriv, beta);
}

/* Every element of lr * [dY^T X | column sums of dY] is at most lr ||dY||_F max(||X||_F, sqrt N)
 * in absolute value (Cauchy-Schwarz per element). */
static double affine_step_bound(struct component *c, const struct matrix *in,
                                const struct matrix *out_deriv) {
    double x = matrix_layer_frobenius_norm(in), root_n = sqrt((double)in->rows);
    return c->learning_rate * matrix_layer_frobenius_norm(out_deriv) * (x > root_n ? x : root_n);
}

static void affine_step_add(struct component *c, const struct matrix *in,
                            const struct matrix *out_deriv, struct vector *dst, float beta) {
    affine_step_into(c, in, out_deriv, dst, c->learning_rate, beta);
}

static void affine_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                             int num_chunks, int train) {
    struct matrix w = component_linear_view(c);
    struct vector b = component_bias_view(c);
    matrix_layer_affine(out, in, &w, &b);
}

static void affine_propagate_relu(struct component *c, const struct matrix *in, struct matrix *out,
                                  int num_chunks, int train) {
    struct matrix w = component_linear_view(c);
    struct vector b = component_bias_view(c);
    matrix_layer_affine_relu(out, in, &w, &b);
}

static void affine_info_stats(const struct component *c, char *buf, size_t size) {
    struct matrix w = component_linear_view(c);
    struct vector b = component_bias_view(c);
    double wn = matrix_frobenius_norm(&w), bn = vector_norm2(&b);
    snprintf(buf, size, ", linear-params-stddev=%.4g, bias-params-stddev=%.4g",
             wn / sqrt((double)w.rows * w.cols), bn / sqrt((double)b.dim));
}

/* ---- Affine ---- */

static int affine_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    if (updatable_from_config(c, cl)) return -1;
    return affine_params_from_config(c, cl, prev_dim, r, 1.0f);
}

static int affine_read(struct component *c, struct nnet_stream *s) {
    if (updatable_read_header(c, s) || affine_read_params(c, s)) return -1;
    return read_is_gradient(s);
}

static int affine_write(const struct component *c, struct nnet_stream *s) {
    if (updatable_write_header(c, s) || affine_write_params(c, s) ||
        nio_write_token(s, "<IsGradient>") || nio_write_bool(s, 0))
        return -1;
    return 0;
}

static void affine_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                            const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                            struct vector *delta, enum backprop_mode mode) {
    affine_backprop_input(c, out_deriv, in_deriv);
    if (delta)
        affine_step_into(c, in, out_deriv, delta, mode == BACKPROP_STEP ? c->learning_rate : 1, 0);
}

const struct component_ops affine_component_ops = {
    .type = "AffineComponent",
    .updatable = 1,
    .init = affine_init,
    .read = affine_read,
    .write = affine_write,
    .propagate = affine_propagate,
    .propagate_relu = affine_propagate_relu,
    .backprop = affine_backprop,
    .step_bound = affine_step_bound,
    .step_add = affine_step_add,
    .info = affine_info_stats,
};

/* ---- NaturalGradientAffine (docs/NATURAL-GRADIENT.md §1.1, §2) ----
 * The step is lr * gamma_in * gamma_out * Y^T X, where X = [in | 1] and Y = out_deriv after each
 * went through its own online preconditioner (the bias shares the input side through the column
 * of ones). Kaldi nnet2's max-change-per-sample then bounds lr * gamma_in * gamma_out *
 * sum_i |x_i| |y_i| (an upper bound on the step's Frobenius norm) by max_change_per_sample * N. */

struct ng_priv { /* (declared in nnet-internal.h) */
    int rank_in, rank_out, update_period;
    float num_samples_history, alpha, max_change_per_sample;
    struct natgrad *pre_in, *pre_out; /* created on the first training step */
    struct matrix x, y;               /* (N, in + 1), (N, out) scratch: Xhat, Yhat */
    struct vector xn, yn;             /* (N) row squared norms of Xhat, Yhat */
    struct vector x1;                 /* (N) Xhat's last column (the bias's), contiguous */
    float scale;                      /* the step is scale * Yhat^T Xhat (ng_prepare) */
};

/* The natural-gradient options are natgrad.h's: their defaults (natgrad_options_default) and
 * ranges (natgrad_options_check) are defined there once; here only what the component adds. */
int ng_check(const struct ng_priv *p) {
    if (p->rank_in < 1) return error_set("key 'rank-in': must be >= 1, got %d", p->rank_in);
    if (p->rank_out < 1) return error_set("key 'rank-out': must be >= 1, got %d", p->rank_out);
    if (!(p->max_change_per_sample >= 0))
        return error_set("key 'max-change-per-sample': negative (%g)", p->max_change_per_sample);
    struct natgrad_options o;
    natgrad_options_default(&o);
    o.rank = p->rank_in;
    o.update_period = p->update_period;
    o.num_samples_history = p->num_samples_history;
    o.alpha = p->alpha;
    return natgrad_options_check(&o);
}

struct ng_priv *ng_priv_new(void) {
    struct ng_priv *p = xcalloc(1, sizeof *p);
    struct natgrad_options o;
    natgrad_options_default(&o);
    p->rank_in = o.rank;
    p->rank_out = 80; /* Kaldi: 20 on the input side, 80 on the output side */
    p->update_period = o.update_period;
    p->num_samples_history = o.num_samples_history;
    p->alpha = o.alpha;
    p->max_change_per_sample = 0.1f;
    return p;
}

int ng_options_from_config(struct ng_priv *p, struct config_line *cl, int *got_in,
                           int *got_out) {
    if ((*got_in = config_get_int(cl, "rank-in", &p->rank_in)) < 0 ||
        (*got_out = config_get_int(cl, "rank-out", &p->rank_out)) < 0 ||
        config_get_int(cl, "update-period", &p->update_period) < 0 ||
        config_get_float(cl, "num-samples-history", &p->num_samples_history) < 0 ||
        config_get_float(cl, "alpha", &p->alpha) < 0 ||
        config_get_float(cl, "max-change-per-sample", &p->max_change_per_sample) < 0)
        return -1;
    return 0;
}

void ng_default_ranks(struct ng_priv *p, int got_in, int got_out, int din, int dout) {
    /* nnet3's rule when the line gives no rank: min(20, (D_in+1)/2), min(80, (D_out+1)/2). */
    if (!got_in) p->rank_in = din + 1 < 40 ? (din + 1) / 2 : 20;
    if (!got_out) p->rank_out = dout + 1 < 160 ? (dout + 1) / 2 : 80;
}

static int ng_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    struct ng_priv *p = ng_priv_new();
    c->priv = p;
    int got_in, got_out;
    if (updatable_from_config(c, cl) || ng_options_from_config(p, cl, &got_in, &got_out) ||
        affine_params_from_config(c, cl, prev_dim, r, 1.0f))
        return -1;
    ng_default_ranks(p, got_in, got_out, c->input_dim, c->output_dim);
    return ng_check(p);
}

int ng_options_read(struct ng_priv *p, struct nnet_stream *s) {
    if (nio_expect_int(s, "<RankIn>", &p->rank_in) || nio_expect_int(s, "<RankOut>", &p->rank_out))
        return -1;
    /* Kaldi nnet2 files from before update-period existed lack it (then 1). */
    int got = nio_try_token(s, "<UpdatePeriod>");
    p->update_period = 1;
    if (got < 0 || (got && nio_read_int(s, &p->update_period)) ||
        nio_expect_float(s, "<NumSamplesHistory>", &p->num_samples_history) ||
        nio_expect_float(s, "<Alpha>", &p->alpha) ||
        nio_expect_float(s, "<MaxChangePerSample>", &p->max_change_per_sample) || ng_check(p))
        return -1;
    return 0;
}

static int ng_read(struct component *c, struct nnet_stream *s) {
    struct ng_priv *p = ng_priv_new();
    c->priv = p;
    if (updatable_read_header(c, s) || affine_read_params(c, s) || ng_options_read(p, s))
        return -1;
    return read_is_gradient(s);
}

int ng_options_write(const struct ng_priv *p, struct nnet_stream *s) {
    if (nio_write_token(s, "<RankIn>") || nio_write_int(s, p->rank_in) ||
        nio_write_token(s, "<RankOut>") || nio_write_int(s, p->rank_out) ||
        nio_write_token(s, "<UpdatePeriod>") || nio_write_int(s, p->update_period) ||
        nio_write_token(s, "<NumSamplesHistory>") || nio_write_float(s, p->num_samples_history) ||
        nio_write_token(s, "<Alpha>") || nio_write_float(s, p->alpha) ||
        nio_write_token(s, "<MaxChangePerSample>") ||
        nio_write_float(s, p->max_change_per_sample))
        return -1;
    return 0;
}

static int ng_write(const struct component *c, struct nnet_stream *s) {
    if (updatable_write_header(c, s) || affine_write_params(c, s) ||
        ng_options_write(c->priv, s) || nio_write_token(s, "<IsGradient>") ||
        nio_write_bool(s, 0))
        return -1;
    return 0;
}

static struct natgrad *ng_new_preconditioner(const struct ng_priv *p, int dim, int rank,
                                             uint64_t seed, const char *side) {
    struct natgrad_options o;
    natgrad_options_default(&o);
    /* The estimate needs rank < dim: like Kaldi nnet2, use dim - 1 (dim 1 = identity), with a
     * warning (a config that omits the ranks gets ranks that fit: ng_init). */
    o.rank = rank < dim ? rank : dim > 1 ? dim - 1 : 1;
    if (rank >= dim && dim > 1)
        WARN("NaturalGradientAffine: rank %d >= dimension %d of its %s side: using rank %d", rank,
             dim, side, o.rank);
    o.update_period = p->update_period;
    o.num_samples_history = p->num_samples_history;
    o.alpha = p->alpha;
    return natgrad_new(dim, &o, seed);
}

/* Sum over rows of sqrt(xn[i] * yn[i]), on the host (N floats each). */
static double sum_row_norm_products(const struct vector *xn, const struct vector *yn) {
    int n = xn->dim;
    float *a = xmalloc(2 * (size_t)n * sizeof *a);
    vector_to_host(xn, a);
    vector_to_host(yn, a + n);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += sqrt((double)a[i] * a[n + i]);
    free(a);
    return sum;
}

/* Precondition [in | 1] and out_deriv into p->x, p->y and set p->scale (max-change-per-sample
 * included). Returns a bound on every element of the step scale * Yhat^T Xhat: by Cauchy-Schwarz
 * per element, scale * sum_i |xhat_i| |yhat_i| (the quantity max-change-per-sample limits). */
double ng_prepare_rows(const struct component *c, struct ng_priv *p, const struct matrix *in,
                       const struct matrix *out_deriv) {
    int n = in->rows, din = in->cols, dout = out_deriv->cols;
    if (!p->pre_in) {
        p->pre_in = ng_new_preconditioner(p, din + 1, p->rank_in, c->seed, "input");
        p->pre_out = ng_new_preconditioner(p, dout, p->rank_out, c->seed + 1, "output");
    }
    matrix_resize(&p->x, n, din + 1);
    matrix_resize(&p->y, n, dout);
    vector_resize(&p->xn, n);
    vector_resize(&p->yn, n);
    float scale_in = 1, scale_out = 1; /* [in | 1] and out_deriv, copied and preconditioned */
    natgrad_precondition_copy(p->pre_in, in, &p->x, &scale_in, &p->xn);
    natgrad_precondition_copy(p->pre_out, out_deriv, &p->y, &scale_out, &p->yn);
    float scale = c->learning_rate * scale_in * scale_out;
    double bound = scale * sum_row_norm_products(&p->xn, &p->yn);
    if (p->max_change_per_sample > 0) {
        double limit = (double)p->max_change_per_sample * n;
        /* A non-finite bound leaves the step as it is: the network then skips it. */
        if (isfinite(bound) && bound > limit) {
            scale = (float)(scale * (limit / bound));
            bound = limit;
        }
    }
    p->scale = scale;
    return bound;
}

static double ng_prepare(struct component *c, const struct matrix *in,
                         const struct matrix *out_deriv) {
    return ng_prepare_rows(c, c->priv, in, out_deriv);
}

/* dst = p->scale * Yhat^T Xhat + beta dst, from the last ng_prepare_rows. */
void ng_step_add_rows(struct ng_priv *p, struct vector *dst, float beta) {
    int n = p->x.rows, din = p->x.cols - 1, dout = p->y.cols;
    struct matrix x_in = matrix_view(&p->x, 0, n, 0, din);
    struct matrix x_one = matrix_view(&p->x, 0, n, din, 1);
    struct vector dw = vector_range(dst, 0, dout * din);
    struct matrix dwm = matrix_from_vector(&dw, dout, din);
    struct vector db = vector_range(dst, dout * din, dout);
    matrix_add_mat_mat_layer(&dwm, p->scale, &p->y, MATRIX_TRANS, &x_in, MATRIX_NO_TRANS, beta);
    /* The bias's Yhat^T xhat_1 as a product with one strided column ran 5-10x slower than a
     * matrix-vector product on the column copied out. */
    vector_resize(&p->x1, n);
    struct matrix x1 = matrix_from_vector(&p->x1, n, 1);
    matrix_copy(&x1, &x_one);
    vector_add_mat_vec(&db, p->scale, &p->y, MATRIX_TRANS, &p->x1, beta);
}

static void ng_step_add(struct component *c, const struct matrix *in,
                        const struct matrix *out_deriv, struct vector *dst, float beta) {
    ng_step_add_rows(c->priv, dst, beta);
}

static void ng_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                        const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                        struct vector *delta, enum backprop_mode mode) {
    affine_backprop_input(c, out_deriv, in_deriv);
    if (!delta) return;
    if (mode == BACKPROP_GRADIENT)
        affine_step_into(c, in, out_deriv, delta, 1, 0);
    else {
        ng_prepare(c, in, out_deriv);
        ng_step_add(c, in, out_deriv, delta, 0);
    }
}

int ng_options_info(const struct ng_priv *p, char *buf, size_t size) {
    return snprintf(buf, size,
                     ", rank-in=%d, rank-out=%d, update-period=%d, num-samples-history=%g, "
                     "alpha=%g, max-change-per-sample=%g",
                     p->rank_in, p->rank_out, p->update_period, p->num_samples_history, p->alpha,
                     p->max_change_per_sample);
}

static void ng_info(const struct component *c, char *buf, size_t size) {
    int k = ng_options_info(c->priv, buf, size);
    if (k >= 0 && (size_t)k < size) affine_info_stats(c, buf + k, size - k);
}

/* A copy starts with fresh preconditioners (their state is not part of the model, as in Kaldi). */
struct ng_priv *ng_priv_copy(const struct ng_priv *s) {
    struct ng_priv *d = xcalloc(1, sizeof *d);
    d->rank_in = s->rank_in;
    d->rank_out = s->rank_out;
    d->update_period = s->update_period;
    d->num_samples_history = s->num_samples_history;
    d->alpha = s->alpha;
    d->max_change_per_sample = s->max_change_per_sample;
    return d;
}

static void ng_copy_priv(struct component *dst, const struct component *src) {
    dst->priv = ng_priv_copy(src->priv);
}

void ng_priv_free(struct ng_priv *p) {
    if (p) {
        natgrad_free(p->pre_in);
        natgrad_free(p->pre_out);
        matrix_release(&p->x);
        matrix_release(&p->y);
        vector_release(&p->xn);
        vector_release(&p->yn);
        vector_release(&p->x1);
    }
    free(p);
}

static void ng_free_priv(struct component *c) {
    ng_priv_free(c->priv);
    c->priv = NULL;
}

static const char *const ng_aliases[] = {"AffineComponentPreconditionedOnline", NULL};

const struct component_ops natural_gradient_affine_component_ops = {
    .type = "NaturalGradientAffineComponent",
    .aliases = ng_aliases,
    .updatable = 1,
    .init = ng_init,
    .read = ng_read,
    .write = ng_write,
    .propagate = affine_propagate,
    .propagate_relu = affine_propagate_relu,
    .backprop = ng_backprop,
    .step_bound = ng_prepare,
    .step_add = ng_step_add,
    .info = ng_info,
    .copy_priv = ng_copy_priv,
    .free_priv = ng_free_priv,
};

/* ---- FixedAffine: <LinearParams> FM <BiasParams> FV ---- */

static int fixed_affine_init(struct component *c, struct config_line *cl, int prev_dim,
                             struct rng *r) {
    if (affine_params_from_config(c, cl, prev_dim, r, 0.0f)) return -1;
    c->num_params = 0; /* its parameters stay out of the network's block */
    return 0;
}

static int fixed_affine_read(struct component *c, struct nnet_stream *s) {
    if (affine_read_params(c, s)) return -1;
    c->num_params = 0;
    return 0;
}

static void fixed_affine_backprop(struct component *c, const struct matrix *in,
                                  const struct matrix *out, const struct matrix *out_deriv,
                                  struct matrix *in_deriv, int num_chunks, struct vector *delta,
                                  enum backprop_mode mode) {
    affine_backprop_input(c, out_deriv, in_deriv);
}

const struct component_ops fixed_affine_component_ops = {
    .type = "FixedAffineComponent",
    .aliases = NULL,
    .init = fixed_affine_init,
    .read = fixed_affine_read,
    .write = affine_write_params,
    .propagate = affine_propagate,
    .propagate_relu = affine_propagate_relu,
    .backprop = fixed_affine_backprop,
    .info = affine_info_stats,
};

/* ---- FixedScale (<Scales> FV) and FixedBias (<Bias> FV): c->params is the vector ---- */

/* scales=F / bias=F (a vector file), or dim=D with a constant value=V. */
static int fixed_vector_init(struct component *c, struct config_line *cl, int prev_dim,
                             const char *file_key, float default_value) {
    const char *file = NULL;
    int got = config_get_string(cl, file_key, &file);
    if (got < 0) return -1;
    if (got) {
        struct vector v = {0};
        if (io_read_object(file, &holder_vector, &v)) return error_wrap("key '%s': ", file_key);
        if (v.dim < 1) {
            vector_release(&v);
            return error_set("key '%s': '%s' is an empty vector", file_key, file);
        }
        c->input_dim = c->output_dim = v.dim;
        vector_init(&c->params, v.dim); /* on the default device; v is on the host */
        vector_copy(&c->params, &v);
        vector_release(&v);
        return 0;
    }
    int dim;
    float value = default_value;
    if (component_dim_from_config(cl, "dim", prev_dim, &dim) ||
        config_get_float(cl, "value", &value) < 0)
        return -1;
    c->input_dim = c->output_dim = dim;
    vector_init(&c->params, dim);
    vector_set_const(&c->params, value);
    return 0;
}

static int fixed_vector_read(struct component *c, struct nnet_stream *s, const char *token) {
    struct vector v = {0};
    if (nio_expect_token(s, token) || nio_read_vector(s, &v)) return -1;
    if (v.dim < 1) {
        vector_release(&v);
        return error_set("%s is empty", token);
    }
    c->input_dim = c->output_dim = v.dim;
    vector_init(&c->params, v.dim);
    vector_copy(&c->params, &v);
    vector_release(&v);
    return 0;
}

static int fixed_scale_init(struct component *c, struct config_line *cl, int prev_dim,
                            struct rng *r) {
    return fixed_vector_init(c, cl, prev_dim, "scales", 1.0f);
}
static int fixed_scale_read(struct component *c, struct nnet_stream *s) {
    return fixed_vector_read(c, s, "<Scales>");
}
static int fixed_scale_write(const struct component *c, struct nnet_stream *s) {
    return nio_write_token(s, "<Scales>") || nio_write_vector(s, &c->params) ? -1 : 0;
}
static void fixed_scale_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                                  int num_chunks, int train) {
    matrix_copy(out, in);
    matrix_mul_cols(out, &c->params);
}
static void fixed_scale_backprop(struct component *c, const struct matrix *in,
                                 const struct matrix *out, const struct matrix *out_deriv,
                                 struct matrix *in_deriv, int num_chunks, struct vector *delta,
                                 enum backprop_mode mode) {
    if (!in_deriv) return;
    if (in_deriv != out_deriv) matrix_copy(in_deriv, out_deriv);
    matrix_mul_cols(in_deriv, &c->params);
}

const struct component_ops fixed_scale_component_ops = {
    .type = "FixedScaleComponent",
    .init = fixed_scale_init,
    .read = fixed_scale_read,
    .write = fixed_scale_write,
    .propagate = fixed_scale_propagate,
    .backprop = fixed_scale_backprop,
};

static int fixed_bias_init(struct component *c, struct config_line *cl, int prev_dim,
                           struct rng *r) {
    return fixed_vector_init(c, cl, prev_dim, "bias", 0.0f);
}
static int fixed_bias_read(struct component *c, struct nnet_stream *s) {
    return fixed_vector_read(c, s, "<Bias>");
}
static int fixed_bias_write(const struct component *c, struct nnet_stream *s) {
    return nio_write_token(s, "<Bias>") || nio_write_vector(s, &c->params) ? -1 : 0;
}
static void fixed_bias_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                                 int num_chunks, int train) {
    matrix_copy(out, in);
    matrix_add_vec_to_rows(out, 1, &c->params);
}
static void fixed_bias_backprop(struct component *c, const struct matrix *in,
                                const struct matrix *out, const struct matrix *out_deriv,
                                struct matrix *in_deriv, int num_chunks, struct vector *delta,
                                enum backprop_mode mode) {
    if (in_deriv && in_deriv != out_deriv) matrix_copy(in_deriv, out_deriv);
}

const struct component_ops fixed_bias_component_ops = {
    .type = "FixedBiasComponent",
    .init = fixed_bias_init,
    .read = fixed_bias_read,
    .write = fixed_bias_write,
    .propagate = fixed_bias_propagate,
    .backprop = fixed_bias_backprop,
};
