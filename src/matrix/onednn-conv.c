/* onednn: convolution, max-pooling and batch-normalisation primitives for images in rows
 * (contract in onednn.h). */
#include "matrix/onednn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "matrix/matrix.h"

#if HAVE_DNNL
#include "matrix/onednn-internal.h"

enum kind { CONV_FWD = 1, CONV_BWD_DATA, CONV_BWD_WEIGHTS, POOL_FWD, POOL_BWD, BN_FWD, BN_BWD };

/* Compared with memcmp: built from a zeroed struct. */
struct key {
    int kind, n, bf16; /* batch norm: bf16 is 1 for batch statistics (training), 0 for stored */
    struct matrix_conv g; /* batch norm: in_h positions, in_c channels */
    float eps;
};

/* One cached primitive and its memory descriptors: a = the image side (src or diff_src), w = the
 * filters (or diff), b = the bias (or diff), o = the output side (dst or diff_dst), ws = the
 * pooling's workspace; pool_fwd is the forward pass max-pooling's backward needs (workspace). */
struct entry {
    struct key key;
    dnnl_primitive_t prim, pool_fwd;
    dnnl_memory_desc_t a, w, b, o, ws;
    size_t ws_bytes;
    /* The filters as parnet stores them (ohwi) and, where the primitive chose another layout
     * for w (its fast kernels want blocked filters), the reorder between the two. */
    dnnl_memory_desc_t wu;
    dnnl_primitive_t reorder;
};

enum { CONV_CACHE_SIZE = 32 };

struct conv_cache {
    struct entry e[CONV_CACHE_SIZE];
    int used, next;
    struct grow_buf src16, out16, w16, ws, tmp, wprim;
};

static _Thread_local struct conv_cache *my_cache;

static void entry_release(struct entry *e) {
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->pool_fwd) dnnl_primitive_destroy(e->pool_fwd);
    if (e->reorder) dnnl_primitive_destroy(e->reorder);
    memset(e, 0, sizeof *e);
}

static void cache_release(void *p) {
    struct conv_cache *t = p;
    for (int i = 0; i < t->used; i++) entry_release(&t->e[i]);
    struct grow_buf *bufs[] = {&t->src16, &t->out16, &t->w16, &t->ws, &t->tmp, &t->wprim};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]->p);
    free(t);
}

static struct conv_cache *cache(void) {
    if (my_cache) return my_cache;
    struct conv_cache *t = xcalloc(1, sizeof *t);
    onednn_thread_register(t, cache_release);
    return my_cache = t;
}

static void image_desc(dnnl_memory_desc_t *d, int n, int h, int w, int c, dnnl_data_type_t dt) {
    dnnl_dims_t dims = {n, c, h, w};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(d, 4, dims, dt, dnnl_nhwc));
}

/* tag: dnnl_ohwi (parnet's layout) or dnnl_format_tag_any (the primitive chooses) */
static void filter_desc(dnnl_memory_desc_t *d, const struct matrix_conv *g, dnnl_data_type_t dt,
                        dnnl_format_tag_t tag) {
    dnnl_dims_t dims = {g->out_c, g->in_c, g->k_h, g->k_w};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(d, 4, dims, dt, tag));
}

/* e->w from pd (query: weights or diff_weights), e->wu parnet's layout of the same type, and the
 * reorder between them (to_user: from the primitive's layout to parnet's). */
static void filters_chosen(struct entry *e, dnnl_primitive_desc_t pd, dnnl_query_t query,
                           const struct matrix_conv *g, int to_user) {
    e->w = *dnnl_primitive_desc_query_md(pd, query, 0);
    filter_desc(&e->wu, g, e->w.data_type, dnnl_ohwi);
    if (dnnl_memory_desc_equal(&e->w, &e->wu)) return;
    dnnl_primitive_desc_t rpd;
    dnnl_engine_t eng = onednn_engine_handle();
    DNNL_CHECK(dnnl_reorder_primitive_desc_create(&rpd, to_user ? &e->w : &e->wu, eng,
                                                  to_user ? &e->wu : &e->w, eng, NULL));
    DNNL_CHECK(dnnl_primitive_create(&e->reorder, rpd));
    dnnl_primitive_desc_destroy(rpd);
}

static void bias_desc(dnnl_memory_desc_t *d, int oc) {
    dnnl_dims_t dims = {oc};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(d, 1, dims, dnnl_f32, dnnl_a));
}

static dnnl_primitive_desc_t conv_fwd_pd(const struct matrix_conv *g, int n, dnnl_data_type_t in_t,
                                         dnnl_data_type_t out_t, struct entry *e) {
    dnnl_memory_desc_t a, w, b, o;
    image_desc(&a, n, g->in_h, g->in_w, g->in_c, in_t);
    filter_desc(&w, g, in_t, dnnl_format_tag_any);
    bias_desc(&b, g->out_c);
    image_desc(&o, n, g->out_h, g->out_w, g->out_c, out_t);
    dnnl_dims_t strides = {g->stride_h, g->stride_w}, pad = {g->pad_h, g->pad_w};
    dnnl_convolution_desc_t cd;
    DNNL_CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training,
                                                  dnnl_convolution_direct, &a, &w, &b, &o,
                                                  strides, pad, pad));
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, onednn_engine_handle(), NULL));
    if (e) {
        e->a = a;
        e->w = w;
        e->b = b;
        e->o = o;
    }
    return pd;
}

static dnnl_primitive_desc_t pool_fwd_pd(const struct matrix_conv *g, int n, struct entry *e) {
    dnnl_memory_desc_t a, o;
    image_desc(&a, n, g->in_h, g->in_w, g->in_c, dnnl_f32);
    image_desc(&o, n, g->out_h, g->out_w, g->out_c, dnnl_f32);
    dnnl_dims_t strides = {g->stride_h, g->stride_w}, kernel = {g->k_h, g->k_w},
                pad = {g->pad_h, g->pad_w};
    dnnl_pooling_desc_t pd_desc;
    DNNL_CHECK(dnnl_pooling_forward_desc_init(&pd_desc, dnnl_forward_training, dnnl_pooling_max,
                                              &a, &o, strides, kernel, pad, pad));
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &pd_desc, NULL, onednn_engine_handle(), NULL));
    e->a = a;
    e->o = o;
    e->ws = *dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    e->ws_bytes = dnnl_memory_desc_get_size(&e->ws);
    return pd;
}

/* Batch statistics (k->bf16 = 1: training) or stored ones; e->a the data, e->b the statistics. */
static dnnl_primitive_desc_t bn_fwd_pd(const struct key *k, struct entry *e) {
    image_desc(&e->a, k->n, k->g.in_h, 1, k->g.in_c, dnnl_f32);
    bias_desc(&e->b, k->g.in_c);
    dnnl_batch_normalization_desc_t bd;
    DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(
        &bd, dnnl_forward_training, &e->a, k->eps,
        k->bf16 ? dnnl_normalization_flags_none : dnnl_use_global_stats));
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(dnnl_primitive_desc_create(&pd, &bd, NULL, onednn_engine_handle(), NULL));
    return pd;
}

static void entry_create(struct entry *e, const struct key *k) {
    const struct matrix_conv *g = &k->g;
    dnnl_data_type_t lo = k->bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_primitive_desc_t pd = NULL, hint = NULL;
    dnnl_dims_t strides = {g->stride_h, g->stride_w}, pad = {g->pad_h, g->pad_w},
                kernel = {g->k_h, g->k_w};
    dnnl_convolution_desc_t cd;
    dnnl_pooling_desc_t pld;
    dnnl_batch_normalization_desc_t bd;
    switch (k->kind) {
    case CONV_FWD:
        pd = conv_fwd_pd(g, k->n, lo, dnnl_f32, e);
        filters_chosen(e, pd, dnnl_query_weights_md, g, 0);
        break;
    case CONV_BWD_DATA:
        hint = conv_fwd_pd(g, k->n, lo, lo, e);
        image_desc(&e->a, k->n, g->in_h, g->in_w, g->in_c, dnnl_f32);
        DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &e->a,
                                                            &e->w, &e->o, strides, pad, pad));
        DNNL_CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, onednn_engine_handle(), hint));
        filters_chosen(e, pd, dnnl_query_weights_md, g, 0);
        break;
    case CONV_BWD_WEIGHTS:
        hint = conv_fwd_pd(g, k->n, lo, lo, e);
        filter_desc(&e->w, g, dnnl_f32, dnnl_format_tag_any);
        DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(
            &cd, dnnl_convolution_direct, &e->a, &e->w, &e->b, &e->o, strides, pad, pad));
        DNNL_CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, onednn_engine_handle(), hint));
        filters_chosen(e, pd, dnnl_query_diff_weights_md, g, 1);
        break;
    case POOL_FWD:
        pd = pool_fwd_pd(g, k->n, e);
        break;
    case BN_FWD:
        pd = bn_fwd_pd(k, e);
        break;
    case BN_BWD:
        hint = bn_fwd_pd(k, e);
        DNNL_CHECK(dnnl_batch_normalization_backward_desc_init(
            &bd, dnnl_backward_data, &e->a, &e->a, k->eps,
            k->bf16 ? dnnl_normalization_flags_none : dnnl_use_global_stats));
        DNNL_CHECK(dnnl_primitive_desc_create(&pd, &bd, NULL, onednn_engine_handle(), hint));
        break;
    case POOL_BWD:
        hint = pool_fwd_pd(g, k->n, e);
        DNNL_CHECK(dnnl_primitive_create(&e->pool_fwd, hint));
        DNNL_CHECK(dnnl_pooling_backward_desc_init(&pld, dnnl_pooling_max, &e->a, &e->o, strides,
                                                   kernel, pad, pad));
        DNNL_CHECK(dnnl_primitive_desc_create(&pd, &pld, NULL, onednn_engine_handle(), hint));
        break;
    default:
        ASSERT(0);
    }
    DNNL_CHECK(dnnl_primitive_create(&e->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    e->key = *k;
}

static struct entry *entry_get_eps(struct conv_cache *t, int kind, int n, int bf16,
                                   const struct matrix_conv *g, float eps) {
    struct key k;
    memset(&k, 0, sizeof k);
    k.kind = kind;
    k.n = n;
    k.bf16 = bf16;
    k.g = *g;
    k.eps = eps;
    for (int i = 0; i < t->used; i++)
        if (!memcmp(&t->e[i].key, &k, sizeof k)) return &t->e[i];
    int evict;
    struct entry *e = &t->e[onednn_cache_slot(&t->used, &t->next, CONV_CACHE_SIZE, &evict)];
    if (evict) entry_release(e);
    entry_create(e, &k);
    return e;
}

static struct entry *entry_get(struct conv_cache *t, int kind, int n, int bf16,
                               const struct matrix_conv *g) {
    return entry_get_eps(t, kind, n, bf16, g, 0);
}

/* Runs prim with args (arg kind, descriptor, data) on the calling thread's stream. */
struct arg {
    int kind;
    const dnnl_memory_desc_t *md;
    void *data;
};

static void run(dnnl_primitive_t prim, const struct arg *args, int nargs) {
    dnnl_exec_arg_t ex[6];
    ASSERT(nargs <= 6);
    for (int i = 0; i < nargs; i++) {
        ex[i].arg = args[i].kind;
        DNNL_CHECK(dnnl_memory_create(&ex[i].memory, args[i].md, onednn_engine_handle(),
                                      args[i].data));
    }
    dnnl_stream_t s = onednn_stream_handle();
    DNNL_CHECK(dnnl_primitive_execute(prim, s, nargs, ex));
    DNNL_CHECK(dnnl_stream_wait(s));
    for (int i = 0; i < nargs; i++) dnnl_memory_destroy(ex[i].memory);
}

/* Rows [r0, r0 + n) of m as bf16 in b (contiguous), or m's own data under fp32. */
static void *operand(struct grow_buf *b, struct cpu_mat m, int r0, int n, int bf16) {
    struct cpu_mat part = {m.data + (long)r0 * m.stride, n, m.cols, m.stride};
    if (!bf16) return part.data;
    uint16_t *d = grow_buf_get(b, (size_t)n * m.cols * sizeof *d);
    onednn_to_bf16(d, m.cols, part);
    return d;
}

/* The filters w (parnet's layout) as the primitive of e wants them: w itself, or reordered into
 * the thread's buffer. */
static void *filters_in(struct conv_cache *c, struct entry *e, void *w) {
    if (!e->reorder) return w;
    void *d = grow_buf_get(&c->wprim, dnnl_memory_desc_get_size(&e->w));
    struct arg a[] = {{DNNL_ARG_FROM, &e->wu, w}, {DNNL_ARG_TO, &e->w, d}};
    run(e->reorder, a, 2);
    return d;
}

/* The bytes of e's pooling workspace per image, when it is laid out image by image (the images
 * outermost, as for the images themselves), so that a share of the images has its share of the
 * caller's workspace; else 0. */
static size_t pool_ws_per_image(const struct entry *e) {
    const dnnl_memory_desc_t *d = &e->ws;
    if (d->ndims != 4 || d->format_kind != dnnl_blocked || d->dims[0] < 1 ||
        d->padded_dims[0] != d->dims[0] || d->format_desc.blocking.inner_nblks)
        return 0;
    size_t per = (size_t)d->format_desc.blocking.strides[0] * dnnl_data_type_size(d->data_type);
    for (int i = 1; i < 4; i++) /* the images outermost */
        if (d->format_desc.blocking.strides[i] > d->format_desc.blocking.strides[0]) return 0;
    return per * (size_t)d->dims[0] == e->ws_bytes ? per : 0;
}

size_t onednn_max_pool_workspace_bytes(const struct matrix_conv *g, int images) {
    struct entry e; /* the descriptors alone: no primitive, nothing in the thread's cache */
    memset(&e, 0, sizeof e);
    dnnl_primitive_desc_destroy(pool_fwd_pd(g, images, &e));
    return pool_ws_per_image(&e) ? e.ws_bytes : 0;
}

/* One call split by images over the pool. */
struct job {
    int kind, bf16;
    const struct matrix_conv *g;
    struct cpu_mat x, w, y; /* image side, filters, output side (as the kind reads them) */
    const float *b;
    float *db;
    float *partial; /* CONV_BWD_WEIGHTS: thread t > 0 writes its sums at (t - 1) * (nw + oc) */
    int ran;        /* the parts parallel_run made (fewer than parallel_threads if it was busy) */
    char *ws;       /* pooling: the caller's workspace (onednn_max_pool_workspace_bytes), or NULL */
};

static void job_part(void *arg, int t, int num) {
    struct job *j = arg;
    const struct matrix_conv *g = j->g;
    int begin, end;
    if (!t) j->ran = num;
    parallel_part(j->x.rows, t, num, 1, &begin, &end);
    int n = end - begin;
    if (n <= 0 && j->kind != CONV_BWD_WEIGHTS) return;
    struct conv_cache *c = cache();
    long nw = (long)g->out_c * g->k_h * g->k_w * g->in_c;
    float *xp = j->x.data + (long)begin * j->x.stride, *yp = j->y.data + (long)begin * j->y.stride;
    switch (j->kind) {
    case CONV_FWD: {
        struct entry *e = entry_get(c, CONV_FWD, n, j->bf16, g);
        void *x = operand(&c->src16, j->x, begin, n, j->bf16);
        void *w = filters_in(c, e, operand(&c->w16, j->w, 0, j->w.rows, j->bf16));
        struct arg a[] = {{DNNL_ARG_SRC, &e->a, x},
                          {DNNL_ARG_WEIGHTS, &e->w, w},
                          {DNNL_ARG_BIAS, &e->b, (void *)j->b},
                          {DNNL_ARG_DST, &e->o, yp}};
        run(e->prim, a, 4);
        break;
    }
    case CONV_BWD_DATA: {
        struct entry *e = entry_get(c, CONV_BWD_DATA, n, j->bf16, g);
        void *dy = operand(&c->out16, j->y, begin, n, j->bf16);
        void *w = filters_in(c, e, operand(&c->w16, j->w, 0, j->w.rows, j->bf16));
        struct arg a[] = {{DNNL_ARG_DIFF_DST, &e->o, dy},
                          {DNNL_ARG_WEIGHTS, &e->w, w},
                          {DNNL_ARG_DIFF_SRC, &e->a, xp}};
        run(e->prim, a, 3);
        break;
    }
    case CONV_BWD_WEIGHTS: {
        float *dw = t ? j->partial + (t - 1) * (nw + g->out_c) : j->w.data;
        float *db = t ? dw + nw : j->db;
        if (n <= 0) {
            memset(dw, 0, (size_t)nw * sizeof *dw);
            memset(db, 0, (size_t)g->out_c * sizeof *db);
            return;
        }
        struct entry *e = entry_get(c, CONV_BWD_WEIGHTS, n, j->bf16, g);
        void *x = operand(&c->src16, j->x, begin, n, j->bf16);
        void *dy = operand(&c->out16, j->y, begin, n, j->bf16);
        void *dwp = e->reorder ? grow_buf_get(&c->wprim, dnnl_memory_desc_get_size(&e->w)) : dw;
        struct arg a[] = {{DNNL_ARG_SRC, &e->a, x},
                          {DNNL_ARG_DIFF_DST, &e->o, dy},
                          {DNNL_ARG_DIFF_WEIGHTS, &e->w, dwp},
                          {DNNL_ARG_DIFF_BIAS, &e->b, db}};
        run(e->prim, a, 4);
        if (e->reorder) { /* back into parnet's layout */
            struct arg r[] = {{DNNL_ARG_FROM, &e->w, dwp}, {DNNL_ARG_TO, &e->wu, dw}};
            run(e->reorder, r, 2);
        }
        break;
    }
    case POOL_FWD: {
        struct entry *e = entry_get(c, POOL_FWD, n, 0, g);
        size_t per = pool_ws_per_image(e);
        void *ws = j->ws && per ? j->ws + begin * per
                                : grow_buf_get(&c->ws, e->ws_bytes ? e->ws_bytes : 1);
        struct arg a[] = {{DNNL_ARG_SRC, &e->a, xp},
                          {DNNL_ARG_DST, &e->o, yp},
                          {DNNL_ARG_WORKSPACE, &e->ws, ws}};
        run(e->prim, a, 3);
        break;
    }
    case POOL_BWD: { /* x: in_deriv, w: the input, y: out_deriv */
        struct entry *e = entry_get(c, POOL_BWD, n, 0, g);
        size_t per = pool_ws_per_image(e);
        void *ws;
        if (j->ws && per) {
            ws = j->ws + begin * per; /* the forward's */
        } else { /* the forward again, for the workspace (where the maxima are) */
            ws = grow_buf_get(&c->ws, e->ws_bytes ? e->ws_bytes : 1);
            float *out = grow_buf_get(&c->tmp, (size_t)n * j->y.cols * sizeof(float));
            struct arg f[] = {{DNNL_ARG_SRC, &e->a, j->w.data + (long)begin * j->w.stride},
                              {DNNL_ARG_DST, &e->o, out},
                              {DNNL_ARG_WORKSPACE, &e->ws, ws}};
            run(e->pool_fwd, f, 3);
        }
        struct arg a[] = {{DNNL_ARG_DIFF_DST, &e->o, yp},
                          {DNNL_ARG_WORKSPACE, &e->ws, ws},
                          {DNNL_ARG_DIFF_SRC, &e->a, xp}};
        run(e->prim, a, 3);
        break;
    }
    default:
        ASSERT(0);
    }
}

void onednn_conv_forward(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *b,
                         const struct matrix_conv *g, int bf16) {
    struct job j = {CONV_FWD, bf16, g, in, w, out, b, NULL, NULL, 0, NULL};
    parallel_run(job_part, &j);
}

void onednn_conv_backward_data(struct cpu_mat in_deriv, struct cpu_mat out_deriv,
                               struct cpu_mat w, const struct matrix_conv *g, int bf16) {
    struct job j = {CONV_BWD_DATA, bf16, g, in_deriv, w, out_deriv, NULL, NULL, NULL, 0, NULL};
    parallel_run(job_part, &j);
}

void onednn_conv_backward_weights(struct cpu_mat dw, float *db, struct cpu_mat in,
                                  struct cpu_mat out_deriv, const struct matrix_conv *g,
                                  int bf16) {
    int num = parallel_threads();
    long nw = (long)dw.rows * dw.cols, size = nw + g->out_c;
    float *partial = num > 1 ? xmalloc((size_t)(num - 1) * size * sizeof *partial) : NULL;
    struct job j = {CONV_BWD_WEIGHTS, bf16, g, in, dw, out_deriv, NULL, db, partial, 1, NULL};
    parallel_run(job_part, &j);
    ASSERT(j.ran <= num);
    for (int t = 1; t < j.ran; t++) { /* in part order: the sum does not depend on timing */
        const float *p = partial + (long)(t - 1) * size;
        for (long i = 0; i < nw; i++) dw.data[i] += p[i];
        for (int o = 0; o < g->out_c; o++) db[o] += p[nw + o];
    }
    free(partial);
}

void onednn_max_pool_forward(struct cpu_mat out, struct cpu_mat in, const struct matrix_conv *g,
                             void *ws) {
    struct job j = {POOL_FWD, 0, g, in, in, out, NULL, NULL, NULL, 0, ws};
    parallel_run(job_part, &j);
}

void onednn_max_pool_backward(struct cpu_mat in_deriv, struct cpu_mat in, struct cpu_mat out_deriv,
                              const struct matrix_conv *g, const void *ws) {
    struct job j = {POOL_BWD, 0, g, in_deriv, in, out_deriv, NULL, NULL, NULL, 0, (char *)ws};
    parallel_run(job_part, &j);
}

static struct entry *bn_entry(int kind, struct cpu_mat m, int channels, float eps, int train) {
    struct matrix_conv g;
    memset(&g, 0, sizeof g);
    g.in_h = m.cols / channels;
    g.in_c = channels;
    return entry_get_eps(cache(), kind, m.rows, train, &g, eps);
}

void onednn_batch_norm_forward(struct cpu_mat out, struct cpu_mat in, int channels, float eps,
                               float *mean, float *var, int train) {
    struct entry *e = bn_entry(BN_FWD, in, channels, eps, train);
    struct arg a[] = {{DNNL_ARG_SRC, &e->a, in.data},
                      {DNNL_ARG_DST, &e->a, out.data},
                      {DNNL_ARG_MEAN, &e->b, mean},
                      {DNNL_ARG_VARIANCE, &e->b, var}};
    run(e->prim, a, 4);
}

void onednn_batch_norm_backward(struct cpu_mat in_deriv, struct cpu_mat in,
                                struct cpu_mat out_deriv, int channels, float eps,
                                const float *mean, const float *var, int train) {
    struct entry *e = bn_entry(BN_BWD, in, channels, eps, train);
    struct arg a[] = {{DNNL_ARG_SRC, &e->a, in.data},
                      {DNNL_ARG_MEAN, &e->b, (void *)mean},
                      {DNNL_ARG_VARIANCE, &e->b, (void *)var},
                      {DNNL_ARG_DIFF_DST, &e->a, out_deriv.data},
                      {DNNL_ARG_DIFF_SRC, &e->a, in_deriv.data}};
    run(e->prim, a, 5);
}

#else /* !HAVE_DNNL */

void onednn_conv_forward(struct cpu_mat out, struct cpu_mat in, struct cpu_mat w, const float *b,
                         const struct matrix_conv *g, int bf16) {
    die("onednn: parnet was built without oneDNN");
}
void onednn_conv_backward_data(struct cpu_mat in_deriv, struct cpu_mat out_deriv,
                               struct cpu_mat w, const struct matrix_conv *g, int bf16) {
    die("onednn: parnet was built without oneDNN");
}
void onednn_conv_backward_weights(struct cpu_mat dw, float *db, struct cpu_mat in,
                                  struct cpu_mat out_deriv, const struct matrix_conv *g,
                                  int bf16) {
    die("onednn: parnet was built without oneDNN");
}
size_t onednn_max_pool_workspace_bytes(const struct matrix_conv *g, int images) { return 0; }
void onednn_max_pool_forward(struct cpu_mat out, struct cpu_mat in, const struct matrix_conv *g,
                             void *ws) {
    die("onednn: parnet was built without oneDNN");
}
void onednn_max_pool_backward(struct cpu_mat in_deriv, struct cpu_mat in, struct cpu_mat out_deriv,
                              const struct matrix_conv *g, const void *ws) {
    die("onednn: parnet was built without oneDNN");
}
void onednn_batch_norm_forward(struct cpu_mat out, struct cpu_mat in, int channels, float eps,
                               float *mean, float *var, int train) {
    die("onednn: parnet was built without oneDNN");
}
void onednn_batch_norm_backward(struct cpu_mat in_deriv, struct cpu_mat in,
                                struct cpu_mat out_deriv, int channels, float eps,
                                const float *mean, const float *var, int train) {
    die("onednn: parnet was built without oneDNN");
}
void *onednn_engine_handle(void) { return NULL; }
void *onednn_stream_handle(void) { return NULL; }

#endif
