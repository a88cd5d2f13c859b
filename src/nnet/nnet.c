/* The network: components, the parameter block, forward and backward, the objective. */
#include "nnet/nnet-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct nnet *nnet_new(void) {
    return xcalloc(1, sizeof(struct nnet));
}

static void release_activations(struct nnet *n) {
    if (n->acts)
        for (int i = 0; i <= n->num; i++) {
            matrix_release(&n->acts[i]);
            matrix_release(&n->derivs[i]);
            matrix_release(&n->ins[i]);
            matrix_release(&n->dins[i]);
        }
    free(n->acts);
    free(n->derivs);
    free(n->ins);
    free(n->dins);
    n->acts = n->derivs = n->ins = n->dins = NULL;
    n->forwarded = 0;
}

void nnet_free(struct nnet *n) {
    if (!n) return;
    release_activations(n);
    for (int i = 0; i < n->num; i++) {
        component_free(n->comps[i]);
        graph_wiring_release(&n->wires[i]);
    }
    free(n->comps);
    free(n->wires);
    free(n->nodes);
    vector_release(&n->params);
    vector_release(&n->delta);
    free(n);
}

int nnet_append_node(struct nnet *n, struct component *c, const char *name, const char *input) {
    struct wiring w;
    if (graph_wire(n, c, name, input, &w)) return -1;
    if (n->num == n->cap) {
        n->cap = n->cap ? 2 * n->cap : 8;
        n->comps = xrealloc(n->comps, n->cap * sizeof *n->comps);
        n->wires = xrealloc(n->wires, n->cap * sizeof *n->wires);
    }
    release_activations(n);
    if (!n->num) n->input_dim = input ? w.terms[0].dim : c->input_dim;
    n->graph |= name || input;
    n->wires[n->num] = w;
    n->comps[n->num++] = c;
    return 0;
}

int nnet_append(struct nnet *n, struct component *c) { return nnet_append_node(n, c, NULL, NULL); }

void nnet_finalize(struct nnet *n) {
    int total = 0;
    for (int i = 0; i < n->num; i++) {
        struct component *c = n->comps[i];
        if (!c->ops->updatable) continue;
        ASSERT(c->num_params == c->params.dim);
        c->param_offset = total;
        total += c->num_params;
    }
    struct vector block;
    vector_init(&block, total);
    for (int i = 0; i < n->num; i++) {
        struct component *c = n->comps[i];
        if (c->ops->updatable && c->num_params) {
            struct vector slice = vector_range(&block, c->param_offset, c->num_params);
            vector_copy(&slice, &c->params);
            vector_release(&c->params); /* a no-op if it was a view of the old block */
            c->params = slice;
        }
        if (c->ops->bind) c->ops->bind(c);
    }
    vector_release(&n->params);
    vector_release(&n->delta);
    n->params = block;
    vector_init(&n->delta, total);
    release_activations(n);
    graph_finalize(n);
}

/* ---- config ---- */

/* One config line: its wiring keys (name, input), then the component with the dim its input
 * gives as the default input-dim, appended. */
static int config_line_init_component(struct nnet *n, const char *text, int line_no,
                                      struct rng *r) {
    struct config_line cl;
    if (config_line_parse(&cl, text)) return -1;
    const char *name = NULL, *input = NULL;
    struct component *c = NULL;
    int prev_dim = -1, bad = config_get_string(&cl, "name", &name) < 0 ||
                             config_get_string(&cl, "input", &input) < 0;
    if (!bad && (prev_dim = graph_input_dim(n, input)) < 0) bad = error_wrap("key 'input': ");
    if (!bad) bad = !(c = component_new_from_config_line(&cl, prev_dim ? prev_dim : -1, r));
    if (!bad) {
        c->config_line = line_no;
        bad = nnet_append_node(n, c, name, input);
        if (bad) component_free(c);
    }
    config_line_release(&cl);
    return bad ? -1 : 0;
}

struct nnet *nnet_init_from_config_text(const char *text, uint64_t seed) {
    struct rng r;
    rng_seed(&r, seed);
    struct nnet *n = nnet_new();
    const char *p = text;
    int line_no = 0;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        line_no++;
        char *line = xmalloc(len + 1);
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (e ? 1 : 0);
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        int blank = 1;
        for (char *q = line; *q; q++)
            blank &= *q == ' ' || *q == '\t' || *q == '\r';
        if (blank) {
            free(line);
            continue;
        }
        int bad = config_line_init_component(n, line, line_no, &r);
        free(line);
        if (bad) {
            error_wrap("line %d: ", line_no);
            nnet_free(n);
            return NULL;
        }
    }
    if (!n->num || graph_check_used(n)) {
        if (!n->num) error_set("no components");
        nnet_free(n);
        return NULL;
    }
    /* The layer feeding the output gets the larger default max-change (Kaldi nnet3's configs). */
    for (int i = n->num - 1; i >= 0; i--)
        if (n->comps[i]->ops->updatable) {
            if (n->comps[i]->max_change_default)
                n->comps[i]->max_change = NNET_DEFAULT_MAX_CHANGE_FINAL;
            break;
        }
    nnet_finalize(n);
    nnet_set_seed(n, seed);
    return n;
}

struct nnet *nnet_init_from_config(const char *filename, uint64_t seed) {
    struct kin in = {0};
    if (kin_open(&in, filename)) return NULL;
    size_t cap = 4096, len = 0;
    char *text = xmalloc(cap);
    int ch;
    while ((ch = kin_getc(&in)) >= 0) {
        if (len + 1 >= cap) text = xrealloc(text, cap *= 2);
        if (ch == 0) {
            free(text);
            kin_error(&in, "NUL byte in config file");
            kin_close(&in);
            return NULL;
        }
        text[len++] = (char)ch;
    }
    text[len] = 0;
    if (kin_close(&in)) {
        free(text);
        return NULL;
    }
    struct nnet *n = nnet_init_from_config_text(text, seed);
    free(text);
    if (!n) error_wrap("config '%s': ", filename);
    return n;
}

/* ---- structure ---- */

struct nnet *nnet_copy(const struct nnet *src) {
    struct nnet *n = nnet_new();
    for (int i = 0; i < src->num; i++) {
        const struct wiring *w = &src->wires[i];
        int r = nnet_append_node(n, component_copy(src->comps[i]), w->name, w->input);
        ASSERT(r == 0);
    }
    n->max_change = src->max_change;
    nnet_finalize(n);
    return n;
}

int nnet_same_structure(const struct nnet *a, const struct nnet *b) {
    if (a->num != b->num || a->params.dim != b->params.dim) return 0;
    for (int i = 0; i < a->num; i++) {
        const struct component *x = a->comps[i], *y = b->comps[i];
        if (!graph_same_wiring(a, b, i) || x->ops != y->ops || x->input_dim != y->input_dim ||
            x->output_dim != y->output_dim || x->num_params != y->num_params ||
            x->left_context != y->left_context || x->right_context != y->right_context ||
            (x->ops->stats && x->ops->stats(x).dim != y->ops->stats(y).dim))
            return 0;
    }
    return 1;
}

int nnet_check_same_structure(const struct nnet *a, const struct nnet *b) {
    if (a->num != b->num)
        return error_set("%d components, not %d", b->num, a->num);
    for (int i = 0; i < a->num; i++) {
        const struct component *x = a->comps[i], *y = b->comps[i];
        const char *what = NULL;
        int vx = 0, vy = 0;
        if (x->ops != y->ops)
            return error_set("component %d is %s, not %s", i, y->ops->type, x->ops->type);
        if (!graph_same_wiring(a, b, i))
            return error_set("component %d (%s) reads %s, not %s", i, x->ops->type,
                             graph_describe_input(b, i), graph_describe_input(a, i));
        if (x->input_dim != y->input_dim) what = "input-dim", vx = x->input_dim, vy = y->input_dim;
        else if (x->output_dim != y->output_dim)
            what = "output-dim", vx = x->output_dim, vy = y->output_dim;
        else if (x->num_params != y->num_params)
            what = "parameter count", vx = x->num_params, vy = y->num_params;
        else if (x->left_context != y->left_context)
            what = "left-context", vx = x->left_context, vy = y->left_context;
        else if (x->right_context != y->right_context)
            what = "right-context", vx = x->right_context, vy = y->right_context;
        else if (x->ops->stats && x->ops->stats(x).dim != y->ops->stats(y).dim)
            what = "stored-statistics dim", vx = x->ops->stats(x).dim, vy = y->ops->stats(y).dim;
        if (what)
            return error_set("component %d (%s) has %s %d, not %d", i, x->ops->type, what, vy, vx);
    }
    if (a->params.dim != b->params.dim)
        return error_set("parameter dimension %d, not %d", b->params.dim, a->params.dim);
    return 0;
}

int nnet_num_components(const struct nnet *n) { return n->num; }

struct component *nnet_component(const struct nnet *n, int i) {
    ASSERT(i >= 0 && i < n->num);
    return n->comps[i];
}

const char *nnet_component_name(const struct nnet *n, int i) {
    ASSERT(i >= 0 && i < n->num);
    return n->wires[i].name;
}

const char *nnet_component_input(const struct nnet *n, int i) {
    ASSERT(i >= 0 && i < n->num);
    return n->wires[i].input;
}

int nnet_num_updatable(const struct nnet *n) {
    int k = 0;
    for (int i = 0; i < n->num; i++)
        k += n->comps[i]->ops->updatable;
    return k;
}

int nnet_input_dim(const struct nnet *n) { return n->num ? n->input_dim : 0; }

int nnet_output_dim(const struct nnet *n) { return n->num ? n->comps[n->num - 1]->output_dim : 0; }

int nnet_left_context(const struct nnet *n) { return graph_node_left(n, n->num); }

int nnet_right_context(const struct nnet *n) { return graph_node_right(n, n->num); }

/* The output's context decides (an Offset to later frames can leave a node's context larger
 * than the output's); the line named is the first node past the examples' (along a chain, where
 * the sum of the splices' contexts goes past them). */
int nnet_check_context(const struct nnet *n, int left, int right) {
    if (nnet_left_context(n) <= left && nnet_right_context(n) <= right) return 0;
    for (int i = 0; i < n->num; i++) {
        const struct component *c = n->comps[i];
        int l = graph_node_left(n, i + 1), r = graph_node_right(n, i + 1);
        if (l <= left && r <= right) continue;
        char where[32], info[256];
        if (c->config_line) snprintf(where, sizeof where, "line %d", c->config_line);
        else snprintf(where, sizeof where, "component %d", i);
        component_info(c, info, sizeof info);
        int over_left = l > left;
        return error_set("%s: %s: needs %d frames of %s context by here; the examples have %d",
                         where, info, over_left ? l : r,
                         over_left ? "left" : "right", over_left ? left : right);
    }
    return 0;
}

int nnet_num_params(const struct nnet *n) { return n->params.dim; }

struct vector nnet_params(struct nnet *n) {
    return vector_range(&n->params, 0, n->params.dim);
}

struct vector nnet_delta(struct nnet *n) {
    return vector_range(&n->delta, 0, n->delta.dim);
}

void nnet_set_learning_rate(struct nnet *n, float lr) {
    for (int i = 0; i < n->num; i++)
        if (n->comps[i]->ops->updatable) n->comps[i]->learning_rate = lr;
}

int nnet_set_learning_rates(struct nnet *n, const float *lrs, int num) {
    if (num != nnet_num_updatable(n))
        return error_set("%d learning rates given for %d updatable components", num,
                         nnet_num_updatable(n));
    for (int i = 0, k = 0; i < n->num; i++)
        if (n->comps[i]->ops->updatable) n->comps[i]->learning_rate = lrs[k++];
    return 0;
}

void nnet_scale_learning_rates(struct nnet *n, float factor) {
    for (int i = 0; i < n->num; i++)
        if (n->comps[i]->ops->updatable) n->comps[i]->learning_rate *= factor;
}

void nnet_set_max_change(struct nnet *n, float max_change) {
    ASSERT(max_change >= 0);
    n->max_change = max_change;
}

float nnet_get_max_change(const struct nnet *n) { return n->max_change; }

void nnet_reset_max_change_stats(struct nnet *n) {
    n->mc_steps = n->mc_clipped = 0;
    n->mc_scale_sum = 0;
    for (int i = 0; i < n->num; i++) {
        n->comps[i]->mc_steps = n->comps[i]->mc_clipped = 0;
        n->comps[i]->mc_scale_sum = 0;
    }
}

void nnet_log_max_change_stats(const struct nnet *n) {
    for (int i = 0; i < n->num; i++) {
        const struct component *c = n->comps[i];
        if (!c->ops->updatable || !c->num_params || !(c->max_change > 0) || !c->mc_steps) continue;
        LOG("Max-change of component %d (%s, max-change=%g): clipped %lld of %lld steps "
            "(%.1f%%), mean scale %.4f", i, c->ops->type, c->max_change, c->mc_clipped,
            c->mc_steps, 100.0 * c->mc_clipped / c->mc_steps, c->mc_scale_sum / c->mc_steps);
    }
    if (n->max_change > 0 && n->mc_steps)
        LOG("Global max-change %g: clipped %lld of %lld steps (%.1f%%), mean scale %.4f",
            n->max_change, n->mc_clipped, n->mc_steps, 100.0 * n->mc_clipped / n->mc_steps,
            n->mc_scale_sum / n->mc_steps);
}

int nnet_param_change(const struct nnet *a, const struct nnet *b, double *diff, double *rel) {
    if (nnet_check_same_structure(a, b)) return -1;
    struct vector d;
    int k = 0;
    for (int i = 0; i < a->num; i++) {
        const struct component *x = a->comps[i], *y = b->comps[i];
        if (!x->ops->updatable) continue;
        vector_init_like(&d, x->num_params, &x->params);
        if (x->num_params) {
            vector_copy(&d, &y->params);
            vector_add(&d, -1.0f, &x->params);
        }
        double na = x->num_params ? vector_norm2(&x->params) : 0;
        diff[k] = x->num_params ? vector_norm2(&d) : 0;
        rel[k] = na > 0 ? diff[k] / na : 0;
        vector_release(&d);
        k++;
    }
    return 0;
}

void nnet_set_seed(struct nnet *n, uint64_t seed) {
    for (int i = 0; i < n->num; i++) {
        struct component *c = n->comps[i];
        /* splitmix-style spreading so neighbouring seeds give unrelated streams */
        uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        c->seed = z ^ (z >> 31);
        if (c->ops->bind) c->ops->bind(c);
    }
}

/* ---- forward and backward ---- */

static void ensure_activations(struct nnet *n) {
    if (n->acts) return;
    n->acts = xcalloc(n->num + 1, sizeof *n->acts);
    n->derivs = xcalloc(n->num + 1, sizeof *n->derivs);
    n->ins = xcalloc(n->num + 1, sizeof *n->ins);
    n->dins = xcalloc(n->num + 1, sizeof *n->dins);
}

int nnet_fuse_relu = 1;

const struct matrix *nnet_forward(struct nnet *n, const struct matrix *input, int num_chunks,
                                  int train) {
    ASSERT(n->num > 0 && num_chunks > 0);
    ASSERT(input->cols == nnet_input_dim(n));
    ensure_activations(n);
    n->input = input;
    n->num_chunks = num_chunks;
    for (int i = 0; i < n->num; i++) {
        struct component *c = n->comps[i];
        const struct matrix *in = graph_gather(n, i);
        int rows = component_output_rows(c, in->rows, num_chunks);
        matrix_resize(&n->acts[i + 1], rows, c->output_dim);
        if (n->nodes[i + 1].fused && nnet_fuse_relu) { /* c and the ReLU after it in one pass */
            matrix_resize(&n->acts[i + 2], rows, n->comps[i + 1]->output_dim);
            c->ops->propagate_relu(c, in, &n->acts[i + 2], num_chunks, train);
            i++;
            continue;
        }
        c->ops->propagate(c, in, &n->acts[i + 1], num_chunks, train);
    }
    n->forwarded = 1;
    return &n->acts[n->num];
}

const struct matrix *nnet_layer_output(const struct nnet *n, int i) {
    ASSERT(n->forwarded && i >= 0 && i < n->num);
    return &n->acts[i + 1];
}

/* Scale each component's step to its max-change, then the whole step to the global one.
 * Returns the final step norm (inf or NaN if the step is not finite). */
static double clip_step(struct nnet *n) {
    double total_sq = 0;
    for (int i = 0; i < n->num; i++) {
        struct component *c = n->comps[i];
        if (!c->ops->updatable || !c->num_params) continue;
        struct vector d = vector_range(&n->delta, c->param_offset, c->num_params);
        double norm = vector_norm2(&d);
        if (!isfinite(norm)) return norm;
        double scale = 1;
        if (c->max_change > 0 && norm > c->max_change) {
            scale = c->max_change / norm;
            if (n->mc_logged < NNET_MAX_CHANGE_LOG_EVENTS) {
                n->mc_logged++;
                LOG("component %d (%s): step norm %g > max-change %g, scaling it by %.4g%s", i,
                    c->ops->type, norm, c->max_change, scale,
                    n->mc_logged == NNET_MAX_CHANGE_LOG_EVENTS ? " (later events: verbose 2)" : "");
            } else {
                VLOG(2, "component %d: step norm %g > max-change %g, scaling it down", i, norm,
                     c->max_change);
            }
            vector_scale(&d, (float)scale);
            norm = c->max_change;
            c->mc_clipped++;
        }
        c->mc_steps++;
        c->mc_scale_sum += scale;
        total_sq += norm * norm;
    }
    double total = sqrt(total_sq), scale = 1;
    if (n->max_change > 0 && total > n->max_change) {
        scale = n->max_change / total;
        if (n->mc_logged < NNET_MAX_CHANGE_LOG_EVENTS) {
            n->mc_logged++;
            LOG("step norm %g > global max-change %g, scaling it by %.4g%s", total, n->max_change,
                scale, n->mc_logged == NNET_MAX_CHANGE_LOG_EVENTS ? " (later events: verbose 2)" : "");
        } else {
            VLOG(2, "step norm %g > global max-change %g, scaling it down", total, n->max_change);
        }
        vector_scale(&n->delta, (float)scale);
        total = n->max_change;
        n->mc_clipped++;
    }
    n->mc_steps++;
    n->mc_scale_sum += scale;
    return total;
}

/* Clip n->delta, then add it to the parameters unless it is not finite (then 1). */
static int apply_delta(struct nnet *n) {
    double norm = clip_step(n);
    if (!isfinite(norm)) {
        WARN("non-finite parameter step (norm %g): skipping this update", norm);
        return 1;
    }
    vector_add(&n->params, 1, &n->delta);
    return 0;
}

/* A step element bounded by this is finite, with room for rounding in its sum. */
#define NNET_DIRECT_STEP_LIMIT 1e30

/* NNET_UPDATE without max-change: each updatable component's step is bounded first (its
 * step_bound, after the input derivatives of the whole network are done, so every product still
 * sees the old parameters); if every bound is below NNET_DIRECT_STEP_LIMIT the whole step is
 * finite and each component adds it straight into its parameters (GEMM with beta 1: no write,
 * norm and add passes over the delta block, which cost several percent of a step). Otherwise the
 * step goes through the delta block and apply_delta, which skips it exactly as before. */
static int direct_update_possible(const struct nnet *n) {
    if (n->max_change > 0) return 0;
    for (int i = 0; i < n->num; i++) {
        const struct component *c = n->comps[i];
        if (c->ops->updatable && c->num_params && (c->max_change > 0 || !c->ops->step_add))
            return 0;
    }
    return 1;
}

/* d objective / d node j's output in the backward under way */
static const struct matrix *node_deriv(const struct nnet *n, int j) {
    return j == n->num ? n->out_deriv : &n->derivs[j];
}

/* Component i's backprop: its input derivative, where a node below needs one, handed to the
 * nodes it read (graph.c), and its delta into dp (NULL: none). */
static void backprop_component(struct nnet *n, int i, struct vector *dp, enum backprop_mode mode) {
    struct component *c = n->comps[i];
    struct matrix *d_in = graph_in_deriv(n, i);
    if (!d_in && !dp) return;
    c->ops->backprop(c, graph_input(n, i), &n->acts[i + 1], node_deriv(n, i + 1), d_in,
                     n->num_chunks, dp, mode);
    if (d_in) graph_scatter(n, i, d_in);
}

/* Components run last to first, each once its output's derivative is complete (every reader of a
 * node comes after it); those with no updatable component at or below them are skipped. */
static int backward_direct(struct nnet *n) {
    int ok = 1;
    for (int i = n->num - 1; i >= 0; i--) {
        struct component *c = n->comps[i];
        if (!n->nodes[i + 1].needs_deriv) continue;
        backprop_component(n, i, NULL, BACKPROP_STEP);
        if (c->ops->updatable && c->num_params) {
            double bound = c->ops->step_bound(c, graph_input(n, i), node_deriv(n, i + 1));
            if (!(bound <= NNET_DIRECT_STEP_LIMIT)) ok = 0; /* NaN too */
        }
    }
    for (int i = n->num - 1; i >= 0; i--) {
        struct component *c = n->comps[i];
        if (!c->ops->updatable || !c->num_params) continue;
        struct vector dst = vector_range(ok ? &n->params : &n->delta, c->param_offset,
                                         c->num_params);
        c->ops->step_add(c, graph_input(n, i), node_deriv(n, i + 1), &dst, ok ? 1.0f : 0.0f);
    }
    return ok ? 0 : apply_delta(n);
}

int nnet_backward(struct nnet *n, const struct matrix *out_deriv, enum nnet_backward_mode mode) {
    ASSERT(n->forwarded);
    const struct matrix *out = &n->acts[n->num];
    ASSERT(out_deriv->rows == out->rows && out_deriv->cols == out->cols);
    n->out_deriv = out_deriv;
    graph_prepare_derivs(n);
    if (mode == NNET_UPDATE && direct_update_possible(n)) return backward_direct(n);
    enum backprop_mode bmode = mode == NNET_GRADIENT ? BACKPROP_GRADIENT : BACKPROP_STEP;
    for (int i = n->num - 1; i >= 0; i--) {
        struct component *c = n->comps[i];
        if (!n->nodes[i + 1].needs_deriv) continue;
        struct vector delta, *dp = NULL;
        if (c->ops->updatable && c->num_params) {
            delta = vector_range(&n->delta, c->param_offset, c->num_params);
            dp = &delta;
        }
        backprop_component(n, i, dp, bmode);
    }
    if (mode != NNET_UPDATE) return 0;
    return apply_delta(n);
}

int nnet_apply_step(struct nnet *n, const struct vector *step) {
    ASSERT(step->dim == n->delta.dim);
    if (step->data != n->delta.data) vector_copy(&n->delta, step);
    return apply_delta(n);
}

void nnet_scale_by_learning_rates(const struct nnet *n, struct vector *v, float scale) {
    ASSERT(v->dim == n->delta.dim);
    for (int i = 0; i < n->num; i++) {
        const struct component *c = n->comps[i];
        if (!c->ops->updatable || !c->num_params) continue;
        struct vector d = vector_range(v, c->param_offset, c->num_params);
        vector_scale(&d, scale * c->learning_rate);
    }
}

void nnet_add_by_learning_rates(const struct nnet *n, struct vector *y, float alpha,
                                const struct vector *x) {
    ASSERT(y->dim == n->delta.dim && x->dim == y->dim);
    for (int i = 0; i < n->num; i++) {
        const struct component *c = n->comps[i];
        if (!c->ops->updatable || !c->num_params) continue;
        struct vector s = vector_range(y, c->param_offset, c->num_params);
        struct vector v = vector_range(x, c->param_offset, c->num_params);
        vector_add(&s, alpha * c->learning_rate, &v);
    }
}

int nnet_apply_gradient(struct nnet *n, const struct vector *grad, float scale) {
    ASSERT(grad->dim == n->delta.dim);
    if (grad->data != n->delta.data) vector_copy(&n->delta, grad);
    nnet_scale_by_learning_rates(n, &n->delta, scale);
    return apply_delta(n);
}

double nnet_objective_xent(struct nnet *n, int num, const int *rows, const int *cols,
                           const float *weights, struct matrix *out_deriv) {
    ASSERT(n->forwarded);
    const struct matrix *out = &n->acts[n->num];
    int is_log = n->comps[n->num - 1]->ops->output_is_log;
    matrix_resize(out_deriv, out->rows, out->cols);
    matrix_set_zero(out_deriv);
    if (num == 0) return 0;
    for (int i = 0; i < num; i++)
        ASSERT(rows[i] >= 0 && rows[i] < out->rows && cols[i] >= 0 && cols[i] < out->cols);
    float *vals = xmalloc((size_t)num * sizeof *vals);
    matrix_get_at(out, num, rows, cols, vals);
    double objf = 0;
    for (int i = 0; i < num; i++) {
        float w = weights ? weights[i] : 1.0f;
        if (is_log) {
            objf += (double)w * vals[i];
            vals[i] = w;
        } else {
            float p = vals[i] < 1e-20f ? 1e-20f : vals[i];
            objf += (double)w * log(p);
            vals[i] = w / p;
        }
    }
    matrix_add_at(out_deriv, 1, num, rows, cols, vals);
    free(vals);
    return objf;
}

int nnet_stats_dim(const struct nnet *n) {
    int dim = 0;
    for (int i = 0; i < n->num; i++)
        if (n->comps[i]->ops->stats) dim += n->comps[i]->ops->stats(n->comps[i]).dim;
    return dim;
}

void nnet_scale_stats(struct nnet *n, float alpha) {
    for (int i = 0; i < n->num; i++)
        if (n->comps[i]->ops->stats) {
            struct vector v = n->comps[i]->ops->stats(n->comps[i]);
            vector_scale(&v, alpha);
        }
}

void nnet_set_stats_momentum(struct nnet *n, float momentum) {
    ASSERT(momentum >= 0 && momentum <= 1);
    for (int i = 0; i < n->num; i++)
        if (n->comps[i]->ops->set_stats_momentum)
            n->comps[i]->ops->set_stats_momentum(n->comps[i], momentum);
}

void nnet_add_stats(struct nnet *n, float alpha, const struct nnet *m) {
    ASSERT(n->num == m->num);
    for (int i = 0; i < n->num; i++) {
        ASSERT(n->comps[i]->ops == m->comps[i]->ops);
        if (!n->comps[i]->ops->stats) continue;
        struct vector v = n->comps[i]->ops->stats(n->comps[i]);
        struct vector w = m->comps[i]->ops->stats(m->comps[i]);
        ASSERT(v.dim == w.dim);
        vector_add(&v, alpha, &w);
    }
}
