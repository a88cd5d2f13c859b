/* The component registry and what every component shares. */
#include "nnet/nnet-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every ops table defined in src/nnet/components-*.c, in file order: the Makefile writes the list
 * (build/gen/nnet/component-list.h, one COMPONENT(name) per table) from their definition lines. */
#define COMPONENT(name) extern const struct component_ops name;
#include "nnet/component-list.h"
#undef COMPONENT

static const struct component_ops *const registry[] = {
#define COMPONENT(name) &name,
#include "nnet/component-list.h"
#undef COMPONENT
    NULL,
};

const struct component_ops *const *component_ops_all(void) { return registry; }

const char *component_type_names(void) {
    static char text[2048];
    if (text[0]) return text;
    size_t n = 0, line = 0;
    for (int i = 0; registry[i]; i++) {
        size_t len = strlen(registry[i]->type);
        if (line > 0 && line + 1 + len > 96) {
            text[n++] = '\n';
            line = 0;
        }
        ASSERT(n + len + 4 < sizeof text);
        n += (size_t)sprintf(text + n, line ? " %s" : "  %s", registry[i]->type);
        line += len + (line ? 1 : 2);
    }
    text[n++] = '\n';
    text[n] = 0;
    return text;
}

/* Accept "Foo", "<Foo>" and, for config convenience, "Foo" without the "Component" suffix. */
static int name_matches(const char *name, size_t len, const char *type) {
    size_t tl = strlen(type);
    if (len == tl && !strncmp(name, type, len)) return 1;
    static const char suffix[] = "Component";
    size_t sl = sizeof suffix - 1;
    return tl > sl && len == tl - sl && !strcmp(type + len, suffix) && !strncmp(name, type, len);
}

const struct component_ops *component_ops_find(const char *name) {
    size_t len = strlen(name);
    if (len >= 2 && name[0] == '<' && name[len - 1] == '>') {
        name++;
        len -= 2;
    }
    if (!len) return NULL;
    for (int i = 0; registry[i]; i++) {
        const struct component_ops *ops = registry[i];
        if (name_matches(name, len, ops->type)) return ops;
        for (int k = 0; ops->aliases && ops->aliases[k]; k++)
            if (name_matches(name, len, ops->aliases[k])) return ops;
    }
    return NULL;
}

struct component *component_new_from_config_line(struct config_line *cl, int prev_dim,
                                                 struct rng *r) {
    const struct component_ops *ops = component_ops_find(cl->type);
    if (!ops) {
        error_set("unknown component type '%s'", cl->type);
        return NULL;
    }
    struct component *c = xcalloc(1, sizeof *c);
    c->ops = ops;
    int bad = ops->init(c, cl, prev_dim, r) || config_check_unused(cl);
    if (!bad && ops->updatable) ASSERT(c->num_params == c->params.dim);
    if (bad) {
        error_wrap("%s: ", cl->type);
        component_free(c);
        return NULL;
    }
    return c;
}

struct component *component_new_from_config(const char *line, int prev_dim, struct rng *r) {
    struct config_line cl;
    if (config_line_parse(&cl, line)) return NULL;
    struct component *c = component_new_from_config_line(&cl, prev_dim, r);
    config_line_release(&cl);
    return c;
}

void component_free(struct component *c) {
    if (!c) return;
    if (c->ops && c->ops->free_priv) c->ops->free_priv(c);
    vector_release(&c->params);
    free(c);
}

struct component *component_copy(const struct component *src) {
    struct component *c = xmalloc(sizeof *c);
    *c = *src;
    memset(&c->params, 0, sizeof c->params);
    if (src->params.dim) {
        vector_init_like(&c->params, src->params.dim, &src->params);
        vector_copy(&c->params, &src->params);
    }
    c->priv = NULL;
    if (src->ops->copy_priv) src->ops->copy_priv(c, src);
    if (c->ops->bind) c->ops->bind(c);
    return c;
}

int component_output_rows(const struct component *c, int in_rows, int num_chunks) {
    int ctx = c->left_context + c->right_context;
    if (!ctx) return in_rows;
    ASSERT(num_chunks > 0 && in_rows % num_chunks == 0);
    int chunk = in_rows / num_chunks;
    ASSERT(chunk > ctx);
    return num_chunks * (chunk - ctx);
}

void component_info(const struct component *c, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s, input-dim=%d, output-dim=%d", c->ops->type, c->input_dim,
                     c->output_dim);
    if (n < 0 || (size_t)n >= size) return;
    if (c->ops->updatable) {
        n += snprintf(buf + n, size - n, ", learning-rate=%g", c->learning_rate);
        if (c->max_change > 0 && (size_t)n < size)
            n += snprintf(buf + n, size - n, ", max-change=%g", c->max_change);
        if ((size_t)n < size) n += snprintf(buf + n, size - n, ", num-params=%d", c->num_params);
    }
    if ((size_t)n < size && c->ops->info) c->ops->info(c, buf + n, size - n);
}

int component_dim_from_config(struct config_line *cl, const char *key, int prev_dim, int *out) {
    int got = config_get_int(cl, key, out);
    if (got < 0) return -1;
    if (!got) {
        if (prev_dim <= 0) return error_set("missing key '%s'", key);
        *out = prev_dim;
    }
    if (*out <= 0) return error_set("key '%s': must be positive, got %d", key, *out);
    return 0;
}

void component_alloc_params(struct component *c, int n) {
    vector_release(&c->params);
    vector_init(&c->params, n);
    c->num_params = n;
}

void component_priv_copy_bytes(struct component *dst, const struct component *src, size_t n) {
    dst->priv = xmalloc(n);
    memcpy(dst->priv, src->priv, n);
}

void component_priv_free(struct component *c) {
    free(c->priv);
    c->priv = NULL;
}

struct matrix component_linear_view(const struct component *c) {
    struct vector w = vector_range(&c->params, 0, c->output_dim * c->input_dim);
    return matrix_from_vector(&w, c->output_dim, c->input_dim);
}

struct vector component_bias_view(const struct component *c) {
    return vector_range(&c->params, c->output_dim * c->input_dim, c->output_dim);
}
