/* Components over images in rows (matrix.h "images in rows": height x width x channels per row,
 * channel fastest): Convolution (trained filters, plain SGD or natural gradient) and MaxPooling.
 *
 * Convolution's parameters: c->params = [W (num-filters x filter-height*filter-width*
 * input-channels, row-major, each row one filter in image order) | b (num-filters)], the affine
 * layout with the patch as the input. Its natural gradient (use-natural-gradient=true, the
 * default, as in Kaldi nnet3) preconditions the patch matrix [patches | 1] (one row per output
 * position of each image) and the output derivatives at those positions (num-filters columns),
 * exactly as NaturalGradientAffine does its input and output, with the same options. */
#include "nnet/nnet-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the image geometry, shared ---- */

/* input-height/-width/-channels, then the window keys (prefix "filter" or "pool"), strides and
 * padding; checks that the image matches the previous component's output (prev_dim) and the
 * input-dim key if given. */
static int geometry_from_config(struct matrix_conv *g, struct config_line *cl, int prev_dim,
                                const char *window, int pooling) {
    char kh[32], kw[32];
    snprintf(kh, sizeof kh, "%s-height", window);
    snprintf(kw, sizeof kw, "%s-width", window);
    memset(g, 0, sizeof *g);
    g->stride_h = g->stride_w = 1;
    int input_dim = -1;
    const char *keys[] = {"input-height", "input-width", "input-channels", kh, kw, "num-filters"};
    int *vals[] = {&g->in_h, &g->in_w, &g->in_c, &g->k_h, &g->k_w, &g->out_c};
    for (int i = 0; i < (pooling ? 5 : 6); i++) {
        int got = config_get_int(cl, keys[i], vals[i]);
        if (got < 0) return -1;
        if (!got) return error_set("missing key '%s'", keys[i]);
    }
    if (pooling) { /* windows side by side unless a stride is given */
        g->stride_h = g->k_h;
        g->stride_w = g->k_w;
    }
    if (config_get_int(cl, "stride-height", &g->stride_h) < 0 ||
        config_get_int(cl, "stride-width", &g->stride_w) < 0 ||
        config_get_int(cl, "pad-height", &g->pad_h) < 0 ||
        config_get_int(cl, "pad-width", &g->pad_w) < 0 ||
        config_get_int(cl, "input-dim", &input_dim) < 0)
        return -1;
    if (matrix_conv_setup(g, pooling)) return -1;
    long dim = (long)g->in_h * g->in_w * g->in_c;
    if (input_dim >= 0 && input_dim != dim)
        return error_set("input-height x input-width x input-channels = %d x %d x %d = %ld, but "
                         "input-dim is %d",
                         g->in_h, g->in_w, g->in_c, dim, input_dim);
    if (prev_dim > 0 && prev_dim != dim)
        return error_set("input-height x input-width x input-channels = %d x %d x %d = %ld, but "
                         "the previous component's output-dim is %d",
                         g->in_h, g->in_w, g->in_c, dim, prev_dim);
    return 0;
}

static int geometry_read(struct matrix_conv *g, struct nnet_stream *s, const char *window,
                         int pooling) {
    char kh[32], kw[32];
    snprintf(kh, sizeof kh, "<%sHeight>", window);
    snprintf(kw, sizeof kw, "<%sWidth>", window);
    memset(g, 0, sizeof *g);
    if (nio_expect_int(s, "<InputHeight>", &g->in_h) ||
        nio_expect_int(s, "<InputWidth>", &g->in_w) ||
        nio_expect_int(s, "<InputChannels>", &g->in_c) ||
        (!pooling && nio_expect_int(s, "<NumFilters>", &g->out_c)) ||
        nio_expect_int(s, kh, &g->k_h) || nio_expect_int(s, kw, &g->k_w) ||
        nio_expect_int(s, "<StrideHeight>", &g->stride_h) ||
        nio_expect_int(s, "<StrideWidth>", &g->stride_w) ||
        nio_expect_int(s, "<PadHeight>", &g->pad_h) || nio_expect_int(s, "<PadWidth>", &g->pad_w))
        return -1;
    return matrix_conv_setup(g, pooling);
}

static int geometry_write(const struct matrix_conv *g, struct nnet_stream *s, const char *window,
                          int pooling) {
    char kh[32], kw[32];
    snprintf(kh, sizeof kh, "<%sHeight>", window);
    snprintf(kw, sizeof kw, "<%sWidth>", window);
    if (nio_write_token(s, "<InputHeight>") || nio_write_int(s, g->in_h) ||
        nio_write_token(s, "<InputWidth>") || nio_write_int(s, g->in_w) ||
        nio_write_token(s, "<InputChannels>") || nio_write_int(s, g->in_c) ||
        (!pooling && (nio_write_token(s, "<NumFilters>") || nio_write_int(s, g->out_c))) ||
        nio_write_token(s, kh) || nio_write_int(s, g->k_h) || nio_write_token(s, kw) ||
        nio_write_int(s, g->k_w) || nio_write_token(s, "<StrideHeight>") ||
        nio_write_int(s, g->stride_h) || nio_write_token(s, "<StrideWidth>") ||
        nio_write_int(s, g->stride_w) || nio_write_token(s, "<PadHeight>") ||
        nio_write_int(s, g->pad_h) || nio_write_token(s, "<PadWidth>") ||
        nio_write_int(s, g->pad_w))
        return -1;
    return 0;
}

static void set_dims(struct component *c, const struct matrix_conv *g) {
    c->input_dim = g->in_h * g->in_w * g->in_c;
    c->output_dim = g->out_h * g->out_w * g->out_c;
}

static int geometry_info(const struct matrix_conv *g, char *buf, size_t size) {
    return snprintf(buf, size, ", input=%dx%dx%d, window=%dx%d, stride=%dx%d, pad=%dx%d, output=%dx%dx%d",
                    g->in_h, g->in_w, g->in_c, g->k_h, g->k_w, g->stride_h, g->stride_w, g->pad_h,
                    g->pad_w, g->out_h, g->out_w, g->out_c);
}

/* ---- Convolution ---- */

struct conv_priv {
    struct matrix_conv g;
    int use_ng;
    struct ng_priv *ng;     /* options and preconditioners (use_ng) */
    struct matrix patches;  /* natural gradient's scratch: the patch matrix */
    struct vector step;     /* plain SGD's step, from conv_step_bound to conv_step_add */
};

static int filter_size(const struct matrix_conv *g) { return g->k_h * g->k_w * g->in_c; }

static struct matrix conv_filters(const struct component *c) {
    const struct conv_priv *p = c->priv;
    struct vector w = vector_range(&c->params, 0, p->g.out_c * filter_size(&p->g));
    return matrix_from_vector(&w, p->g.out_c, filter_size(&p->g));
}

static struct vector conv_bias(const struct component *c) {
    const struct conv_priv *p = c->priv;
    return vector_range(&c->params, p->g.out_c * filter_size(&p->g), p->g.out_c);
}

static int conv_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    struct conv_priv *p = xcalloc(1, sizeof *p);
    c->priv = p;
    p->use_ng = 1;
    p->ng = ng_priv_new();
    int got_in = 0, got_out = 0;
    if (updatable_from_config(c, cl) || geometry_from_config(&p->g, cl, prev_dim, "filter", 0) ||
        config_get_bool(cl, "use-natural-gradient", &p->use_ng) < 0 ||
        ng_options_from_config(p->ng, cl, &got_in, &got_out))
        return -1;
    set_dims(c, &p->g);
    int k = filter_size(&p->g);
    ng_default_ranks(p->ng, got_in, got_out, k, p->g.out_c);
    if (ng_check(p->ng)) return -1;
    float param_stddev = 1 / sqrtf((float)k), bias_stddev = 1.0f;
    if (config_get_float(cl, "param-stddev", &param_stddev) < 0 ||
        config_get_float(cl, "bias-stddev", &bias_stddev) < 0)
        return -1;
    if (!(param_stddev >= 0)) return error_set("key 'param-stddev': negative (%g)", param_stddev);
    if (!(bias_stddev >= 0)) return error_set("key 'bias-stddev': negative (%g)", bias_stddev);
    component_alloc_params(c, p->g.out_c * (k + 1));
    struct matrix w = conv_filters(c);
    struct vector b = conv_bias(c);
    matrix_set_randn(&w, r, param_stddev);
    vector_set_randn(&b, r, bias_stddev);
    return 0;
}

static int conv_read(struct component *c, struct nnet_stream *s) {
    struct conv_priv *p = xcalloc(1, sizeof *p);
    c->priv = p;
    p->ng = ng_priv_new();
    if (updatable_read_header(c, s) || geometry_read(&p->g, s, "Filter", 0)) return -1;
    set_dims(c, &p->g);
    int k = filter_size(&p->g);
    struct matrix m = {0};
    struct vector b = {0};
    if (nio_expect_token(s, "<Filters>") || nio_read_matrix(s, &m)) return -1;
    int bad = 0;
    if (m.rows != p->g.out_c || m.cols != k)
        bad = error_set("<Filters> is %dx%d, expected %dx%d", m.rows, m.cols, p->g.out_c, k);
    if (!bad && (nio_expect_token(s, "<BiasParams>") || nio_read_vector(s, &b)))
        bad = -1;
    if (!bad && b.dim != p->g.out_c)
        bad = error_set("<BiasParams> has dim %d, expected %d", b.dim, p->g.out_c);
    if (!bad) {
        component_alloc_params(c, p->g.out_c * (k + 1));
        struct matrix w = conv_filters(c);
        struct vector bv = conv_bias(c);
        matrix_copy(&w, &m);
        vector_copy(&bv, &b);
    }
    matrix_release(&m);
    vector_release(&b);
    if (bad || nio_expect_token(s, "<UseNaturalGradient>") || nio_read_bool(s, &p->use_ng) ||
        ng_options_read(p->ng, s))
        return -1;
    return 0;
}

static int conv_write(const struct component *c, struct nnet_stream *s) {
    const struct conv_priv *p = c->priv;
    struct matrix w = conv_filters(c);
    struct vector b = conv_bias(c);
    if (updatable_write_header(c, s) || geometry_write(&p->g, s, "Filter", 0) ||
        nio_write_token(s, "<Filters>") || nio_write_matrix(s, &w) ||
        nio_write_token(s, "<BiasParams>") || nio_write_vector(s, &b) ||
        nio_write_token(s, "<UseNaturalGradient>") || nio_write_bool(s, p->use_ng) ||
        ng_options_write(p->ng, s))
        return -1;
    return 0;
}

static void conv_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                           int num_chunks, int train) {
    const struct conv_priv *p = c->priv;
    struct matrix w = conv_filters(c);
    struct vector b = conv_bias(c);
    matrix_conv_forward(out, in, &w, &b, &p->g);
}

/* dst = alpha [dW | db] + beta dst, the plain gradient scaled */
static void conv_gradient_into(const struct component *c, const struct matrix *in,
                               const struct matrix *out_deriv, struct vector *dst, float alpha,
                               float beta) {
    const struct conv_priv *p = c->priv;
    int k = filter_size(&p->g);
    struct vector dw = vector_range(dst, 0, p->g.out_c * k);
    struct matrix dwm = matrix_from_vector(&dw, p->g.out_c, k);
    struct vector db = vector_range(dst, p->g.out_c * k, p->g.out_c);
    matrix_conv_backward_weights(&dwm, &db, alpha, in, out_deriv, &p->g, beta);
}

/* The output derivatives as (N * out_h * out_w) x num-filters: one row per output position. */
static struct matrix positions(const struct conv_priv *p, const struct matrix *out_deriv) {
    struct matrix v = *out_deriv;
    v.owns = 0;
    v.rows = out_deriv->rows * p->g.out_h * p->g.out_w;
    v.cols = v.stride = p->g.out_c;
    return v;
}

/* Natural gradient: precondition the patches and the output derivatives (ng_prepare_rows). */
static double conv_ng_prepare(struct component *c, const struct matrix *in,
                              const struct matrix *out_deriv) {
    struct conv_priv *p = c->priv;
    matrix_resize(&p->patches, in->rows * p->g.out_h * p->g.out_w, filter_size(&p->g));
    matrix_conv_patches(&p->patches, in, &p->g);
    struct matrix y = positions(p, out_deriv);
    return ng_prepare_rows(c, p->ng, &p->patches, &y);
}

/* Plain SGD: the step itself, into p->step, and its norm as the bound. The filters are tiny
 * beside the data (F (C kh kw + 1) numbers against N positions F derivatives), so computing the
 * step before adding it costs nothing, where a bound from ||X||_F and ||dY||_F read both
 * activations once more (3 ms of a 40 ms step of the main job's CNN in bf16 on an AMX Xeon). */
static double conv_step_bound(struct component *c, const struct matrix *in,
                              const struct matrix *out_deriv) {
    struct conv_priv *p = c->priv;
    if (p->use_ng) return conv_ng_prepare(c, in, out_deriv);
    if (p->step.dim != c->num_params) {
        vector_release(&p->step);
        vector_init_like(&p->step, c->num_params, &c->params);
    }
    conv_gradient_into(c, in, out_deriv, &p->step, c->learning_rate, 0);
    return vector_norm2(&p->step);
}

static void conv_step_add(struct component *c, const struct matrix *in,
                          const struct matrix *out_deriv, struct vector *dst, float beta) {
    struct conv_priv *p = c->priv;
    if (p->use_ng) {
        ng_step_add_rows(p->ng, dst, beta);
    } else if (beta == 0) {
        vector_copy(dst, &p->step);
    } else {
        vector_add(dst, 1, &p->step);
    }
}

static void conv_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                          const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                          struct vector *delta, enum backprop_mode mode) {
    const struct conv_priv *p = c->priv;
    if (in_deriv) {
        struct matrix w = conv_filters(c);
        matrix_conv_backward_data(in_deriv, out_deriv, &w, &p->g);
    }
    if (!delta) return;
    if (mode == BACKPROP_GRADIENT) {
        conv_gradient_into(c, in, out_deriv, delta, 1, 0);
    } else {
        conv_step_bound(c, in, out_deriv); /* what conv_step_add reads */
        conv_step_add(c, in, out_deriv, delta, 0);
    }
}

static void conv_info(const struct component *c, char *buf, size_t size) {
    const struct conv_priv *p = c->priv;
    int k = geometry_info(&p->g, buf, size);
    if (k >= 0 && (size_t)k < size)
        k += snprintf(buf + k, size - k, ", use-natural-gradient=%s", p->use_ng ? "true" : "false");
    if (p->use_ng && k >= 0 && (size_t)k < size) ng_options_info(p->ng, buf + k, size - k);
}

static void conv_copy_priv(struct component *dst, const struct component *src) {
    const struct conv_priv *s = src->priv;
    struct conv_priv *d = xcalloc(1, sizeof *d);
    d->g = s->g;
    d->use_ng = s->use_ng;
    d->ng = ng_priv_copy(s->ng);
    dst->priv = d;
}

static void conv_free_priv(struct component *c) {
    struct conv_priv *p = c->priv;
    if (p) {
        ng_priv_free(p->ng);
        matrix_release(&p->patches);
        vector_release(&p->step);
    }
    free(p);
    c->priv = NULL;
}

const struct component_ops convolution_component_ops = {
    .type = "ConvolutionComponent",
    .updatable = 1,
    .init = conv_init,
    .read = conv_read,
    .write = conv_write,
    .propagate = conv_propagate,
    .backprop = conv_backprop,
    .step_bound = conv_step_bound,
    .step_add = conv_step_add,
    .info = conv_info,
    .copy_priv = conv_copy_priv,
    .free_priv = conv_free_priv,
};

/* ---- MaxPooling ----
 * The private data: the geometry, and where the last forward found the maxima (the backward pass
 * of the same input reads them rather than pooling again). */

struct pool_priv {
    struct matrix_conv g;
    struct matrix argmax; /* host: matrix_max_pool_forward's */
};

static struct pool_priv *pool_new(struct component *c) {
    struct pool_priv *p = xcalloc(1, sizeof *p);
    matrix_init_on(&p->argmax, 0, 0, MATRIX_CPU);
    c->priv = p;
    return p;
}

static int pool_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    struct pool_priv *p = pool_new(c);
    if (geometry_from_config(&p->g, cl, prev_dim, "pool", 1)) return -1;
    set_dims(c, &p->g);
    return 0;
}

static int pool_read(struct component *c, struct nnet_stream *s) {
    struct pool_priv *p = pool_new(c);
    if (geometry_read(&p->g, s, "Pool", 1)) return -1;
    set_dims(c, &p->g);
    return 0;
}

static int pool_write(const struct component *c, struct nnet_stream *s) {
    return geometry_write(&((const struct pool_priv *)c->priv)->g, s, "Pool", 1);
}

static void pool_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                           int num_chunks, int train) {
    struct pool_priv *p = c->priv;
    matrix_max_pool_forward(out, in, &p->g, &p->argmax);
}

static void pool_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                          const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                          struct vector *delta, enum backprop_mode mode) {
    struct pool_priv *p = c->priv;
    if (in_deriv) matrix_max_pool_backward(in_deriv, in, out_deriv, &p->g, &p->argmax);
}

static void pool_info(const struct component *c, char *buf, size_t size) {
    geometry_info(&((const struct pool_priv *)c->priv)->g, buf, size);
}

static void pool_copy_priv(struct component *dst, const struct component *src) {
    pool_new(dst)->g = ((const struct pool_priv *)src->priv)->g;
}

static void pool_free_priv(struct component *c) {
    struct pool_priv *p = c->priv;
    if (p) matrix_release(&p->argmax);
    free(p);
    c->priv = NULL;
}

const struct component_ops max_pooling_component_ops = {
    .type = "MaxPoolingComponent",
    .init = pool_init,
    .read = pool_read,
    .write = pool_write,
    .propagate = pool_propagate,
    .backprop = pool_backprop,
    .info = pool_info,
    .copy_priv = pool_copy_priv,
    .free_priv = pool_free_priv,
};

/* ---- BatchNorm ----
 * y = (x - mean_c) / sqrt(var_c + epsilon) per channel c of block-dim channels (each row holds
 * dim / block-dim positions of block-dim values, channel fastest: images in rows, or plain
 * vectors with block-dim = dim), no learned scale or offset (Kaldi nnet3's BatchNormComponent;
 * the next affine or convolution layer provides them). Training (train = 1): the minibatch's
 * mean and biased variance, and the stored statistics move towards them:
 * s = (1 - momentum) s + momentum batch, for the mean and for the second moment E[x^2]. Test
 * (train = 0): mean and variance from the stored statistics (var = E[x^2] - mean^2). The stored
 * statistics are the component's own (not parameters, not trained); nnet-average averages them
 * with the models' weights (nnet_add_stats), and because they are first and second moments, the
 * average is the statistics of the jobs' data pooled (with equal counts). */

struct bn_priv {
    int block;
    float eps, momentum;
    struct vector stats;     /* 2 block: the stored mean, then the stored second moment */
    struct vector mean, var; /* the last forward's (the batch's, or from the stored ones) */
    int last_train;          /* whether the last forward used batch statistics */
};

static struct bn_priv *bn_new(struct component *c, int dim, int block, float eps, float momentum) {
    struct bn_priv *p = xcalloc(1, sizeof *p);
    c->priv = p;
    c->input_dim = c->output_dim = dim;
    p->block = block;
    p->eps = eps;
    p->momentum = momentum;
    vector_init(&p->stats, 2 * block);
    vector_init(&p->mean, block);
    vector_init(&p->var, block);
    return p;
}

static int bn_check(int dim, int block, float eps, float momentum) {
    if (block < 1 || dim % block)
        return error_set("key 'block-dim': %d does not divide dim %d", block, dim);
    if (!(eps > 0)) return error_set("key 'epsilon': must be > 0, got %g", eps);
    if (!(momentum >= 0 && momentum <= 1))
        return error_set("key 'momentum': must be in [0, 1], got %g", momentum);
    return 0;
}

static int bn_init(struct component *c, struct config_line *cl, int prev_dim, struct rng *r) {
    int dim, block = -1;
    float eps = 1e-3f, momentum = 0.1f;
    if (component_dim_from_config(cl, "dim", prev_dim, &dim) ||
        config_get_int(cl, "block-dim", &block) < 0 ||
        config_get_float(cl, "epsilon", &eps) < 0 ||
        config_get_float(cl, "momentum", &momentum) < 0)
        return -1;
    if (block < 0) block = dim;
    if (bn_check(dim, block, eps, momentum)) return -1;
    struct bn_priv *p = bn_new(c, dim, block, eps, momentum);
    struct vector second = vector_range(&p->stats, block, block);
    vector_set_const(&second, 1); /* mean 0, variance 1: the identity until trained */
    return 0;
}

static int bn_read(struct component *c, struct nnet_stream *s) {
    int dim, block;
    float eps, momentum;
    if (nio_expect_int(s, "<Dim>", &dim) || nio_expect_int(s, "<BlockDim>", &block) ||
        nio_expect_float(s, "<Epsilon>", &eps) || nio_expect_float(s, "<Momentum>", &momentum))
        return -1;
    if (dim < 1) return error_set("<Dim> must be positive, got %d", dim);
    if (bn_check(dim, block, eps, momentum)) return -1;
    struct bn_priv *p = bn_new(c, dim, block, eps, momentum);
    for (int k = 0; k < 2; k++) {
        const char *token = k ? "<StatsSecondMoment>" : "<StatsMean>";
        struct vector v = {0};
        if (nio_expect_token(s, token) || nio_read_vector(s, &v)) return -1;
        int bad = v.dim != block ? error_set("%s has dim %d, expected %d", token, v.dim, block)
                                 : 0;
        if (!bad) {
            struct vector dst = vector_range(&p->stats, k * block, block);
            vector_copy(&dst, &v);
        }
        vector_release(&v);
        if (bad) return -1;
    }
    return 0;
}

static int bn_write(const struct component *c, struct nnet_stream *s) {
    const struct bn_priv *p = c->priv;
    struct vector m = vector_range(&p->stats, 0, p->block),
                  q = vector_range(&p->stats, p->block, p->block);
    if (nio_write_token(s, "<Dim>") || nio_write_int(s, c->input_dim) ||
        nio_write_token(s, "<BlockDim>") || nio_write_int(s, p->block) ||
        nio_write_token(s, "<Epsilon>") || nio_write_float(s, p->eps) ||
        nio_write_token(s, "<Momentum>") || nio_write_float(s, p->momentum) ||
        nio_write_token(s, "<StatsMean>") || nio_write_vector(s, &m) ||
        nio_write_token(s, "<StatsSecondMoment>") || nio_write_vector(s, &q))
        return -1;
    return 0;
}

static void bn_propagate(struct component *c, const struct matrix *in, struct matrix *out,
                         int num_chunks, int train) {
    struct bn_priv *p = c->priv;
    int b = p->block;
    float *h = xmalloc(4 * (size_t)b * sizeof *h); /* stored mean, second moment; mean, var */
    vector_to_host(&p->stats, h);
    p->last_train = train && in->rows > 0;
    if (p->last_train) {
        matrix_batch_norm_forward(out, in, b, p->eps, &p->mean, &p->var, 1);
        vector_to_host(&p->mean, h + 2 * b);
        vector_to_host(&p->var, h + 3 * b);
        float m = p->momentum;
        for (int i = 0; i < b; i++) {
            float mean = h[2 * b + i], second = h[3 * b + i] + mean * mean;
            h[i] = (1 - m) * h[i] + m * mean;
            h[b + i] = (1 - m) * h[b + i] + m * second;
        }
        vector_from_host(&p->stats, h);
    } else {
        for (int i = 0; i < b; i++) {
            float v = h[b + i] - h[i] * h[i];
            h[2 * b + i] = h[i];
            h[3 * b + i] = v > 0 ? v : 0;
        }
        vector_from_host(&p->mean, h + 2 * b);
        vector_from_host(&p->var, h + 3 * b);
        matrix_batch_norm_forward(out, in, b, p->eps, &p->mean, &p->var, 0);
    }
    free(h);
}

static void bn_backprop(struct component *c, const struct matrix *in, const struct matrix *out,
                        const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                        struct vector *delta, enum backprop_mode mode) {
    const struct bn_priv *p = c->priv;
    if (in_deriv)
        matrix_batch_norm_backward(in_deriv, in, out_deriv, p->block, p->eps, &p->mean, &p->var,
                                   p->last_train);
}

static void bn_info(const struct component *c, char *buf, size_t size) {
    const struct bn_priv *p = c->priv;
    snprintf(buf, size, ", block-dim=%d, epsilon=%g, momentum=%g", p->block, p->eps, p->momentum);
}

static struct vector bn_stats(const struct component *c) {
    return ((const struct bn_priv *)c->priv)->stats;
}

static void bn_set_stats_momentum(struct component *c, float momentum) {
    ((struct bn_priv *)c->priv)->momentum = momentum;
}

static void bn_copy_priv(struct component *dst, const struct component *src) {
    const struct bn_priv *s = src->priv;
    struct bn_priv *d = bn_new(dst, src->input_dim, s->block, s->eps, s->momentum);
    vector_copy(&d->stats, &s->stats);
}

static void bn_free_priv(struct component *c) {
    struct bn_priv *p = c->priv;
    if (p) {
        vector_release(&p->stats);
        vector_release(&p->mean);
        vector_release(&p->var);
    }
    free(p);
    c->priv = NULL;
}

const struct component_ops batch_norm_component_ops = {
    .type = "BatchNormComponent",
    .init = bn_init,
    .read = bn_read,
    .write = bn_write,
    .propagate = bn_propagate,
    .backprop = bn_backprop,
    .info = bn_info,
    .stats = bn_stats,
    .set_stats_momentum = bn_set_stats_momentum,
    .copy_priv = bn_copy_priv,
    .free_priv = bn_free_priv,
};
