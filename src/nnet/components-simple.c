/* Components without parameters: nonlinearities, Normalize, Pnorm, Dropout, Splice. */
#include "nnet/nnet-internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- nonlinear components: <Dim> d <ValueSum> FV <DerivSum> FV <Count> f ---- */

static int nonlinear_init(struct component *c, struct config_line *cl, int prev_dim,
                          struct rng *r) {
    int dim;
    if (component_dim_from_config(cl, "dim", prev_dim, &dim)) return -1;
    c->input_dim = c->output_dim = dim;
    return 0;
}

/* Kaldi keeps activation statistics (for mixing-up and fixing saturated units); parnet does not,
 * so they are written empty and ignored when read. */
static int nonlinear_read(struct component *c, struct nnet_stream *s) {
    int dim;
    struct vector stats = {0};
    float count;
    if (nio_expect_int(s, "<Dim>", &dim)) return -1;
    if (dim <= 0) return error_set("<Dim> must be positive, got %d", dim);
    for (int k = 0; k < 2; k++) {
        if (nio_expect_token(s, k ? "<DerivSum>" : "<ValueSum>")) return -1;
        if (nio_read_vector(s, &stats)) return -1;
        int sd = stats.dim;
        vector_release(&stats);
        if (sd != 0 && sd != dim)
            return error_set("%s has dim %d, expected 0 or %d", k ? "<DerivSum>" : "<ValueSum>", sd,
                             dim);
    }
    if (nio_expect_float(s, "<Count>", &count)) return -1;
    c->input_dim = c->output_dim = dim;
    return 0;
}

static int nonlinear_write(const struct component *c, struct nnet_stream *s) {
    struct vector empty = {0};
    if (nio_write_token(s, "<Dim>") || nio_write_int(s, c->input_dim) ||
        nio_write_token(s, "<ValueSum>") || nio_write_vector(s, &empty) ||
        nio_write_token(s, "<DerivSum>") || nio_write_vector(s, &empty) ||
        nio_write_token(s, "<Count>") || nio_write_float(s, 0))
        return -1;
    return 0;
}

static void sigmoid_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                              int num_chunks, int train) {
    matrix_sigmoid(out, in);
}
static void sigmoid_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                             const struct matrix *out_deriv, struct matrix *in_deriv,
                             int num_chunks, struct vector *delta, enum backprop_mode mode) {
    if (in_deriv) matrix_diff_sigmoid(in_deriv, out, out_deriv);
}

static void tanh_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                           int num_chunks, int train) {
    matrix_tanh(out, in);
}
static void tanh_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                          const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                          struct vector *delta, enum backprop_mode mode) {
    if (in_deriv) matrix_diff_tanh(in_deriv, out, out_deriv);
}

static void relu_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                           int num_chunks, int train) {
    matrix_relu(out, in);
}
static void relu_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                          const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                          struct vector *delta, enum backprop_mode mode) {
    if (in_deriv) matrix_diff_relu(in_deriv, out, out_deriv);
}

static void softmax_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                              int num_chunks, int train) {
    matrix_softmax_rows(out, in);
}
static void softmax_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                             const struct matrix *out_deriv, struct matrix *in_deriv,
                             int num_chunks, struct vector *delta, enum backprop_mode mode) {
    if (in_deriv) matrix_diff_softmax(in_deriv, out, out_deriv);
}

static void log_softmax_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                                  int num_chunks, int train) {
    matrix_log_softmax_rows(out, in);
}
static void log_softmax_backprop(struct component *c, const struct matrix *in,
                                 const struct matrix *out, const struct matrix *out_deriv,
                                 struct matrix *in_deriv, int num_chunks, struct vector *delta,
                                 enum backprop_mode mode) {
    if (in_deriv) matrix_diff_log_softmax(in_deriv, out, out_deriv);
}

static void normalize_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                                int num_chunks, int train) {
    matrix_normalize_rows(out, in);
}
static void normalize_backprop(struct component *c, const struct matrix *in,
                               const struct matrix *out, const struct matrix *out_deriv,
                               struct matrix *in_deriv, int num_chunks, struct vector *delta,
                               enum backprop_mode mode) {
    if (in_deriv) matrix_diff_normalize_rows(in_deriv, in, out_deriv);
}

#define NONLINEAR_OPS(name, type_str, aliases_, is_log, prop, back)                                \
    const struct component_ops name = {                                                            \
        .type = type_str,                                                                          \
        .aliases = aliases_,                                                                       \
        .output_is_log = is_log,                                                                   \
        .init = nonlinear_init,                                                                    \
        .read = nonlinear_read,                                                                    \
        .write = nonlinear_write,                                                                  \
        .propagate = prop,                                                                         \
        .backprop = back,                                                                          \
    }

static const char *const relu_aliases[] = {"ReluComponent", NULL};

NONLINEAR_OPS(sigmoid_component_ops, "SigmoidComponent", NULL, 0, sigmoid_propagate,
              sigmoid_backprop);
NONLINEAR_OPS(tanh_component_ops, "TanhComponent", NULL, 0, tanh_propagate, tanh_backprop);
NONLINEAR_OPS(relu_component_ops, "RectifiedLinearComponent", relu_aliases, 0, relu_propagate,
              relu_backprop);
NONLINEAR_OPS(softmax_component_ops, "SoftmaxComponent", NULL, 0, softmax_propagate,
              softmax_backprop);
NONLINEAR_OPS(log_softmax_component_ops, "LogSoftmaxComponent", NULL, 1, log_softmax_propagate,
              log_softmax_backprop);
NONLINEAR_OPS(normalize_component_ops, "NormalizeComponent", NULL, 0, normalize_propagate,
              normalize_backprop);

/* ---- Pnorm: <InputDim> i <OutputDim> o <P> f ---- */

struct pnorm_priv {
    float p;
};

static int pnorm_check(struct component *c, float p) {
    if (c->input_dim <= 0 || c->output_dim <= 0 || c->input_dim % c->output_dim)
        return error_set("input-dim %d must be a positive multiple of output-dim %d", c->input_dim,
                         c->output_dim);
    if (!(p >= 1)) return error_set("key 'p': must be >= 1, got %g", p);
    struct pnorm_priv *pp = xmalloc(sizeof *pp);
    pp->p = p;
    c->priv = pp;
    return 0;
}

static int pnorm_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    float p = 2;
    if (component_dim_from_config(cl, "input-dim", prev_dim, &c->input_dim) ||
        component_dim_from_config(cl, "output-dim", -1, &c->output_dim) ||
        config_get_float(cl, "p", &p) < 0)
        return -1;
    return pnorm_check(c, p);
}

static int pnorm_read(struct component *c, struct nnet_stream *s) {
    float p;
    if (nio_expect_int(s, "<InputDim>", &c->input_dim) ||
        nio_expect_int(s, "<OutputDim>", &c->output_dim) || nio_expect_float(s, "<P>", &p) ||
        pnorm_check(c, p))
        return -1;
    return 0;
}

static int pnorm_write(const struct component *c, struct nnet_stream *s) {
    const struct pnorm_priv *pp = c->priv;
    if (nio_write_token(s, "<InputDim>") || nio_write_int(s, c->input_dim) ||
        nio_write_token(s, "<OutputDim>") || nio_write_int(s, c->output_dim) ||
        nio_write_token(s, "<P>") || nio_write_float(s, pp->p))
        return -1;
    return 0;
}

static void pnorm_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                            int num_chunks, int train) {
    matrix_pnorm(out, in, ((struct pnorm_priv *)c->priv)->p);
}

static void pnorm_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                           const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                           struct vector *delta, enum backprop_mode mode) {
    if (in_deriv)
        matrix_diff_pnorm(in_deriv, in, out, out_deriv, ((struct pnorm_priv *)c->priv)->p);
}

static void pnorm_info(const struct component *c, char *buf, size_t size) {
    snprintf(buf, size, ", p=%g", ((struct pnorm_priv *)c->priv)->p);
}

static void pnorm_copy_priv(struct component *dst, const struct component *src) {
    component_priv_copy_bytes(dst, src, sizeof(struct pnorm_priv));
}

const struct component_ops pnorm_component_ops = {
    .type = "PnormComponent",
    .init = pnorm_init,
    .read = pnorm_read,
    .write = pnorm_write,
    .propagate = pnorm_propagate,
    .backprop = pnorm_backprop,
    .info = pnorm_info,
    .copy_priv = pnorm_copy_priv,
    .free_priv = component_priv_free,
};

/* ---- Dropout: <Dim> d <DropoutProportion> f ----
 * Training: each value is kept with probability 1 - proportion and then scaled by
 * 1 / (1 - proportion) ("inverted" dropout), so the component is the identity at test time and a
 * trained model needs no rescaling. */

struct dropout_priv {
    float proportion;
    struct rng rng;
    struct matrix mask; /* (rows, dim) of the last training forward */
    int masked;         /* the last forward was in training mode */
};

static int dropout_setup(struct component *c, float proportion) {
    if (!(proportion >= 0 && proportion < 1))
        return error_set("key 'dropout-proportion': must be in [0, 1), got %g", proportion);
    struct dropout_priv *d = xcalloc(1, sizeof *d);
    d->proportion = proportion;
    rng_seed(&d->rng, c->seed);
    c->priv = d;
    return 0;
}

static int dropout_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    float proportion = 0.5f;
    int dim;
    if (component_dim_from_config(cl, "dim", prev_dim, &dim) ||
        config_get_float(cl, "dropout-proportion", &proportion) < 0)
        return -1;
    c->input_dim = c->output_dim = dim;
    return dropout_setup(c, proportion);
}

static int dropout_read(struct component *c, struct nnet_stream *s) {
    int dim;
    float proportion;
    if (nio_expect_int(s, "<Dim>", &dim) || nio_expect_float(s, "<DropoutProportion>", &proportion))
        return -1;
    if (dim <= 0) return error_set("<Dim> must be positive, got %d", dim);
    c->input_dim = c->output_dim = dim;
    return dropout_setup(c, proportion);
}

static int dropout_write(const struct component *c, struct nnet_stream *s) {
    const struct dropout_priv *d = c->priv;
    if (nio_write_token(s, "<Dim>") || nio_write_int(s, c->input_dim) ||
        nio_write_token(s, "<DropoutProportion>") || nio_write_float(s, d->proportion))
        return -1;
    return 0;
}

static void dropout_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                              int num_chunks, int train) {
    struct dropout_priv *d = c->priv;
    matrix_copy(out, in);
    d->masked = train && d->proportion > 0;
    if (!d->masked) return;
    matrix_resize(&d->mask, in->rows, in->cols);
    float keep = 1 - d->proportion;
    matrix_set_bernoulli(&d->mask, &d->rng, keep, 1 / keep);
    matrix_mul_elements(out, &d->mask);
}

static void dropout_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                             const struct matrix *out_deriv, struct matrix *in_deriv,
                             int num_chunks, struct vector *delta, enum backprop_mode mode) {
    struct dropout_priv *d = c->priv;
    if (!in_deriv) return;
    if (in_deriv != out_deriv) matrix_copy(in_deriv, out_deriv);
    if (d->masked) matrix_mul_elements(in_deriv, &d->mask);
}

static void dropout_info(const struct component *c, char *buf, size_t size) {
    snprintf(buf, size, ", dropout-proportion=%g", ((struct dropout_priv *)c->priv)->proportion);
}

static void dropout_copy_priv(struct component *dst, const struct component *src) {
    const struct dropout_priv *s = src->priv;
    struct dropout_priv *d = xcalloc(1, sizeof *d);
    d->proportion = s->proportion;
    d->rng = s->rng;
    dst->priv = d;
}

static void dropout_free_priv(struct component *c) {
    struct dropout_priv *d = c->priv;
    if (d) matrix_release(&d->mask);
    free(d);
    c->priv = NULL;
}

/* The network reseeds through bind() after nnet_set_seed changed c->seed. */
static void dropout_bind(struct component *c) {
    struct dropout_priv *d = c->priv;
    if (d) rng_seed(&d->rng, c->seed);
}

const struct component_ops dropout_component_ops = {
    .type = "DropoutComponent",
    .init = dropout_init,
    .read = dropout_read,
    .write = dropout_write,
    .bind = dropout_bind,
    .propagate = dropout_propagate,
    .backprop = dropout_backprop,
    .info = dropout_info,
    .copy_priv = dropout_copy_priv,
    .free_priv = dropout_free_priv,
};

/* ---- Splice: <InputDim> i <Context> [ offsets ] <ConstComponentDim> 0 ----
 * Output row t of a chunk is the concatenation of input rows t + left + context[k], k = 0..K-1,
 * where left = -context[0]; each chunk loses left + right rows. */

struct splice_priv {
    int num;
    int *context; /* as configured: strictly increasing, context[0] <= 0 <= context[num-1] */
    int *rel;     /* context[k] - context[0]: offsets into the chunk, >= 0 */
};

static int splice_setup(struct component *c, int *context, int num) {
    if (num <= 0) {
        free(context);
        return error_set("empty context");
    }
    for (int k = 1; k < num; k++) {
        if (context[k] <= context[k - 1]) {
            free(context);
            return error_set("key 'context': offsets must be strictly increasing");
        }
    }
    if (context[0] > 0 || context[num - 1] < 0) {
        int first = context[0], last = context[num - 1];
        free(context);
        return error_set("key 'context': offsets must include 0 between them (got %d..%d)", first,
                         last);
    }
    if (context[0] < -10000 || context[num - 1] > 10000) {
        int first = context[0], last = context[num - 1];
        free(context);
        return error_set("key 'context': offsets %d..%d out of range (|offset| <= 10000)", first,
                         last);
    }
    if (num > 100000 || (long)num * c->input_dim > 100000000L) {
        free(context);
        return error_set("context too large (%d offsets)", num);
    }
    struct splice_priv *sp = xmalloc(sizeof *sp);
    sp->num = num;
    sp->context = context;
    sp->rel = xmalloc(num * sizeof *sp->rel);
    for (int k = 0; k < num; k++)
        sp->rel[k] = context[k] - context[0];
    c->priv = sp;
    c->left_context = -context[0];
    c->right_context = context[num - 1];
    c->output_dim = num * c->input_dim;
    return 0;
}

static int splice_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    int *context = NULL, num = 0, left = -1, right = -1, const_dim = 0;
    if (component_dim_from_config(cl, "input-dim", prev_dim, &c->input_dim)) return -1;
    int got = config_get_int_list(cl, "context", &context, &num);
    if (got < 0) return -1;
    int gl = config_get_int(cl, "left-context", &left);
    int gr = config_get_int(cl, "right-context", &right);
    if (config_get_int(cl, "const-component-dim", &const_dim) < 0 || gl < 0 || gr < 0) {
        free(context);
        return -1;
    }
    if (const_dim != 0) {
        free(context);
        return error_set("key 'const-component-dim': only 0 is supported, got %d", const_dim);
    }
    if (got) {
        if (gl || gr) {
            free(context);
            return error_set("key 'context': give either context or left/right-context");
        }
    } else {
        if (gl && left < 0) return error_set("key 'left-context': negative (%d)", left);
        if (gr && right < 0) return error_set("key 'right-context': negative (%d)", right);
        if (!gl && !gr) return error_set("missing key 'context' (or left-context/right-context)");
        left = gl ? left : 0;
        right = gr ? right : 0;
        if (left > 10000 || right > 10000) return error_set("context too large");
        num = left + right + 1;
        context = xmalloc(num * sizeof *context);
        for (int k = 0; k < num; k++)
            context[k] = k - left;
    }
    return splice_setup(c, context, num);
}

static int splice_read(struct component *c, struct nnet_stream *s) {
    int *context = NULL, num = 0, const_dim;
    if (nio_expect_int(s, "<InputDim>", &c->input_dim)) return -1;
    if (c->input_dim <= 0) return error_set("<InputDim> must be positive, got %d", c->input_dim);
    if (nio_expect_token(s, "<Context>") || nio_read_int_vector(s, &context, &num)) return -1;
    if (splice_setup(c, context, num)) return -1;
    if (nio_expect_int(s, "<ConstComponentDim>", &const_dim)) return -1;
    if (const_dim != 0) return error_set("<ConstComponentDim> %d is not supported", const_dim);
    return 0;
}

static int splice_write(const struct component *c, struct nnet_stream *s) {
    const struct splice_priv *sp = c->priv;
    if (nio_write_token(s, "<InputDim>") || nio_write_int(s, c->input_dim) ||
        nio_write_token(s, "<Context>") || nio_write_int_vector(s, sp->context, sp->num) ||
        nio_write_token(s, "<ConstComponentDim>") || nio_write_int(s, 0))
        return -1;
    return 0;
}

static void splice_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                             int num_chunks, int train) {
    const struct splice_priv *sp = c->priv;
    int in_chunk = in->rows / num_chunks, out_chunk = out->rows / num_chunks;
    for (int k = 0; k < num_chunks; k++) {
        struct matrix src = matrix_rows(in, k * in_chunk, in_chunk);
        struct matrix dst = matrix_rows(out, k * out_chunk, out_chunk);
        matrix_splice(&dst, &src, sp->rel, sp->num);
    }
}

static void splice_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                            const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                            struct vector *delta, enum backprop_mode mode) {
    const struct splice_priv *sp = c->priv;
    if (!in_deriv) return;
    matrix_set_zero(in_deriv);
    int in_chunk = in_deriv->rows / num_chunks, out_chunk = out_deriv->rows / num_chunks;
    for (int k = 0; k < num_chunks; k++) {
        struct matrix dst = matrix_rows(in_deriv, k * in_chunk, in_chunk);
        struct matrix src = matrix_rows(out_deriv, k * out_chunk, out_chunk);
        matrix_add_splice_backward(&dst, &src, sp->rel, sp->num);
    }
}

static void splice_info(const struct component *c, char *buf, size_t size) {
    const struct splice_priv *sp = c->priv;
    int n = snprintf(buf, size, ", context=");
    for (int k = 0; k < sp->num && n >= 0 && (size_t)n < size; k++)
        n += snprintf(buf + n, size - n, "%s%d", k ? ":" : "", sp->context[k]);
}

static void splice_copy_priv(struct component *dst, const struct component *src) {
    const struct splice_priv *s = src->priv;
    struct splice_priv *d = xmalloc(sizeof *d);
    d->num = s->num;
    d->context = xmalloc(s->num * sizeof *d->context);
    d->rel = xmalloc(s->num * sizeof *d->rel);
    memcpy(d->context, s->context, s->num * sizeof *d->context);
    memcpy(d->rel, s->rel, s->num * sizeof *d->rel);
    dst->priv = d;
}

static void splice_free_priv(struct component *c) {
    struct splice_priv *sp = c->priv;
    if (sp) {
        free(sp->context);
        free(sp->rel);
    }
    free(sp);
    c->priv = NULL;
}

const struct component_ops splice_component_ops = {
    .type = "SpliceComponent",
    .init = splice_init,
    .read = splice_read,
    .write = splice_write,
    .propagate = splice_propagate,
    .backprop = splice_backprop,
    .info = splice_info,
    .copy_priv = splice_copy_priv,
    .free_priv = splice_free_priv,
};
