/* The network's wiring (nnet.h "Graphs"): names, input descriptors in a subset of Kaldi nnet3's
 * syntax (a name, input, Sum, Append, Offset), each compiled when its component is appended into
 * a small table of terms (struct wire_term), and the gather (forward) and scatter (backward) that
 * run the table. A network without name or input keys compiles to one direct term per component:
 * the previous output as it is, no copy, exactly the sequential network. */
#include "nnet/nnet-internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define GRAPH_MAX_NAME 128
#define GRAPH_MAX_TEXT 4000 /* a descriptor's characters (a model file's token holds it) */
#define GRAPH_MAX_DEPTH 64
#define GRAPH_MAX_SHIFT 10000 /* |t| of Offset(d, t), as Splice's offsets */
#define GRAPH_MAX_CONTEXT 100000000
#define GRAPH_MAX_DIM 100000000

/* ---- parsing a descriptor ---- */

struct parser {
    const struct nnet *n; /* the nodes so far: names and dims */
    const char *text, *p;
    int input_dim; /* node 0's dim: 1 while the first component's is not known */
    int depth;
    struct wire_term *terms;
    int num, cap;
    char canon[GRAPH_MAX_TEXT + 1]; /* the descriptor without spaces, as a model file keeps it */
    size_t len;
};

static int name_char(int ch) { return isalnum(ch) || ch == '_' || ch == '.' || ch == '-'; }

static void skip_space(struct parser *ps) {
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

static int emit(struct parser *ps, const char *s, size_t len) {
    if (ps->len + len > GRAPH_MAX_TEXT)
        return error_set("longer than %d characters", GRAPH_MAX_TEXT);
    memcpy(ps->canon + ps->len, s, len);
    ps->len += len;
    ps->canon[ps->len] = 0;
    return 0;
}

static int expect(struct parser *ps, char ch) {
    skip_space(ps);
    if (*ps->p != ch)
        return error_set("expected '%c' at '%.20s'", ch, *ps->p ? ps->p : "the end");
    ps->p++;
    return emit(ps, &ch, 1);
}

static int node_dim(const struct parser *ps, int node) {
    return node ? ps->n->comps[node - 1]->output_dim : ps->input_dim;
}

static int find_node(const struct nnet *n, const char *name) {
    if (!strcmp(name, "input")) return 0;
    for (int i = 0; i < n->num; i++)
        if (n->wires[i].name && !strcmp(n->wires[i].name, name)) return i + 1;
    return -1;
}

static int parse(struct parser *ps, int col, int *dim);

/* Sum(d, ...): every d into the same columns, of one dim; Append(d, ...): side by side. */
static int parse_args(struct parser *ps, int append, int col, int *dim) {
    long total = 0;
    int first = 0, k = 0;
    do {
        if (k && emit(ps, ",", 1)) return -1;
        int d;
        if (parse(ps, append ? col + (int)total : col, &d)) return -1;
        if (!append && k && d != first)
            return error_set("Sum of dims %d and %d (its terms must have one dim)", first, d);
        if (!k) first = d;
        total += d;
        if (total > GRAPH_MAX_DIM) return error_set("dim too large (over %d)", GRAPH_MAX_DIM);
        k++;
        skip_space(ps);
        if (*ps->p != ',') break;
        ps->p++;
    } while (1);
    *dim = append ? (int)total : first;
    return expect(ps, ')');
}

/* Offset(d, t): every term of d shifted by t frames. */
static int parse_offset(struct parser *ps, int col, int *dim) {
    int start = ps->num;
    if (parse(ps, col, dim) || expect(ps, ',')) return -1;
    skip_space(ps);
    char *end;
    long t = strtol(ps->p, &end, 10);
    if (end == ps->p || t < -GRAPH_MAX_SHIFT || t > GRAPH_MAX_SHIFT)
        return error_set("Offset needs a frame offset in [-%d, %d] at '%.20s'", GRAPH_MAX_SHIFT,
                         GRAPH_MAX_SHIFT, *ps->p ? ps->p : "the end");
    ps->p = end;
    char num[16];
    if (emit(ps, num, (size_t)snprintf(num, sizeof num, "%ld", t))) return -1;
    for (int k = start; k < ps->num; k++) {
        ps->terms[k].shift += (int)t;
        if (abs(ps->terms[k].shift) > GRAPH_MAX_SHIFT * GRAPH_MAX_DEPTH)
            return error_set("Offsets add up to more than %d", GRAPH_MAX_SHIFT * GRAPH_MAX_DEPTH);
    }
    return expect(ps, ')');
}

static int parse(struct parser *ps, int col, int *dim) {
    skip_space(ps);
    const char *w = ps->p;
    while (name_char((unsigned char)*ps->p))
        ps->p++;
    size_t len = (size_t)(ps->p - w);
    if (!len || len > GRAPH_MAX_NAME)
        return error_set("expected a name, Sum(, Append( or Offset( at '%.20s'",
                         *w ? w : "the end");
    char word[GRAPH_MAX_NAME + 1];
    memcpy(word, w, len);
    word[len] = 0;
    if (emit(ps, word, len)) return -1;
    skip_space(ps);
    if (*ps->p == '(') {
        if (++ps->depth > GRAPH_MAX_DEPTH)
            return error_set("nested deeper than %d", GRAPH_MAX_DEPTH);
        ps->p++;
        int r;
        if (emit(ps, "(", 1)) return -1;
        if (!strcmp(word, "Sum") || !strcmp(word, "Append"))
            r = parse_args(ps, word[0] == 'A', col, dim);
        else if (!strcmp(word, "Offset")) r = parse_offset(ps, col, dim);
        else return error_set("unknown function '%s' (Sum, Append and Offset are known)", word);
        ps->depth--;
        return r;
    }
    int node = find_node(ps->n, word);
    if (node < 0)
        return error_set("unknown name '%s' (a line reads 'input' and the names of earlier lines)",
                         word);
    if (ps->num == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 4;
        ps->terms = xrealloc(ps->terms, ps->cap * sizeof *ps->terms);
    }
    *dim = node_dim(ps, node);
    ps->terms[ps->num++] = (struct wire_term){.node = node, .col = col, .dim = *dim};
    return 0;
}

/* The terms of `text` over the nodes of n, node 0 of dim input_dim; *dim its dim. */
static int parse_all(struct parser *ps, const struct nnet *n, const char *text, int input_dim,
                     int *dim) {
    memset(ps, 0, sizeof *ps);
    ps->n = n;
    ps->text = ps->p = text;
    ps->input_dim = input_dim;
    if (strlen(text) > GRAPH_MAX_TEXT)
        return error_set("longer than %d characters", GRAPH_MAX_TEXT);
    if (parse(ps, 0, dim)) return -1;
    skip_space(ps);
    if (*ps->p) return error_set("unexpected '%.20s' after the descriptor", ps->p);
    return 0;
}

/* ---- compiling a component's wiring ---- */

int graph_node_left(const struct nnet *n, int j) {
    return j ? n->wires[j - 1].left + n->comps[j - 1]->left_context : 0;
}

int graph_node_right(const struct nnet *n, int j) {
    return j ? n->wires[j - 1].right + n->comps[j - 1]->right_context : 0;
}

static int check_name(const struct nnet *n, const char *name) {
    size_t len = strlen(name);
    if (!len || len > GRAPH_MAX_NAME || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return error_set("name '%.40s': a letter or '_' first, at most %d characters", name,
                         GRAPH_MAX_NAME);
    for (size_t k = 0; k < len; k++)
        if (!name_char((unsigned char)name[k]))
            return error_set("name '%.40s': only letters, digits, '_', '.' and '-'", name);
    if (!strcmp(name, "Sum") || !strcmp(name, "Append") || !strcmp(name, "Offset") ||
        find_node(n, name) >= 0)
        return error_set("name '%s' is %s", name,
                         find_node(n, name) > 0 ? "given twice" : "reserved");
    return 0;
}

/* The input's context is the largest of its terms' (at least 0: rows outside the chunk do not
 * exist), each term's rows cropped to it: row i of the input is frame i + left of the chunk,
 * which is row i + left - (node's left - shift) of the node. */
static int compile(const struct nnet *n, struct wiring *w) {
    long long l = 0, r = 0;
    for (int k = 0; k < w->num_terms; k++) {
        const struct wire_term *t = &w->terms[k];
        long long lk = (long long)graph_node_left(n, t->node) - t->shift;
        long long rk = (long long)graph_node_right(n, t->node) + t->shift;
        l = lk > l ? lk : l;
        r = rk > r ? rk : r;
    }
    if (w->input && (l > GRAPH_MAX_CONTEXT || r > GRAPH_MAX_CONTEXT))
        return error_set("context too large (%lld, %lld frames)", l, r);
    w->left = (int)l;
    w->right = (int)r;
    for (int k = 0; k < w->num_terms; k++) {
        struct wire_term *t = &w->terms[k];
        t->row_offset = (int)(l - graph_node_left(n, t->node) + t->shift);
        t->add = 0;
        for (int e = 0; e < k; e++) /* a Sum's later terms find their columns written */
            t->add |= t->col < w->terms[e].col + w->terms[e].dim &&
                      w->terms[e].col < t->col + t->dim;
    }
    const struct wire_term *t = &w->terms[0];
    w->direct = w->num_terms == 1 && t->row_offset == 0 &&
                l + r == graph_node_left(n, t->node) + graph_node_right(n, t->node);
    return 0;
}

int graph_wire(const struct nnet *n, const struct component *c, const char *name,
               const char *input, struct wiring *w) {
    memset(w, 0, sizeof *w);
    if (name && check_name(n, name)) return -1;
    int dim;
    if (!input) {
        dim = n->num ? n->comps[n->num - 1]->output_dim : c->input_dim;
        if (dim != c->input_dim) {
            const struct component *prev = n->comps[n->num - 1];
            return error_set("input dim %d of %s does not match output dim %d of %s",
                             c->input_dim, c->ops->type, prev->output_dim, prev->ops->type);
        }
        w->terms = xcalloc(1, sizeof *w->terms);
        w->terms[0] = (struct wire_term){.node = n->num, .dim = dim};
        w->num_terms = 1;
    } else {
        struct parser ps;
        int input_dim = n->num ? n->input_dim : 1;
        int bad = parse_all(&ps, n, input, input_dim, &dim);
        if (!bad && !n->num) { /* the first line: `input` k times, each of dim input-dim / k */
            if (c->input_dim % dim) {
                bad = error_set("input dim %d of %s is not a multiple of %d (the copies of 'input' "
                                "side by side in %s)", c->input_dim, c->ops->type, dim, input);
            } else {
                free(ps.terms);
                bad = parse_all(&ps, n, input, c->input_dim / dim, &dim);
            }
        }
        if (!bad && dim != c->input_dim)
            bad = error_set("input dim %d of %s does not match dim %d of its input %s",
                            c->input_dim, c->ops->type, dim, ps.canon);
        w->terms = ps.terms;
        w->num_terms = ps.num;
        if (bad) {
            graph_wiring_release(w);
            return -1;
        }
        w->input = xstrdup(ps.canon);
    }
    if (name) w->name = xstrdup(name);
    if (compile(n, w)) {
        graph_wiring_release(w);
        return -1;
    }
    return 0;
}

int graph_input_dim(const struct nnet *n, const char *input) {
    if (!input) return n->num ? n->comps[n->num - 1]->output_dim : 0;
    struct parser ps;
    int dim, bad = parse_all(&ps, n, input, n->num ? n->input_dim : 1, &dim);
    free(ps.terms);
    return bad ? -1 : n->num ? dim : 0;
}

void graph_wiring_release(struct wiring *w) {
    free(w->name);
    free(w->input);
    free(w->terms);
    memset(w, 0, sizeof *w);
}

/* ---- the whole network ---- */

void graph_finalize(struct nnet *n) {
    free(n->nodes);
    n->nodes = xcalloc(n->num + 1, sizeof *n->nodes);
    for (int i = 0; i < n->num; i++) {
        struct node_info *node = &n->nodes[i + 1];
        const struct wiring *w = &n->wires[i];
        node->left = graph_node_left(n, i + 1);
        node->right = graph_node_right(n, i + 1);
        node->needs_deriv = n->comps[i]->ops->updatable;
        for (int k = 0; k < w->num_terms; k++)
            node->needs_deriv |= n->nodes[w->terms[k].node].needs_deriv;
    }
    /* The backward visits the components last to first: the first term it meets of a node
     * copies its derivative when it covers the node's rows, and every other one adds. */
    char *met = xcalloc(n->num + 1, 1);
    for (int i = n->num - 1; i >= 0; i--) {
        struct wiring *w = &n->wires[i];
        for (int k = 0; k < w->num_terms; k++) {
            struct wire_term *t = &w->terms[k];
            struct node_info *node = &n->nodes[t->node];
            t->deriv_add = 1;
            if (!node->needs_deriv || met[t->node]) continue;
            met[t->node] = 1;
            int whole = t->row_offset == 0 && w->left + w->right == node->left + node->right;
            t->deriv_add = !whole;
            node->zero_deriv = !whole;
        }
    }
    free(met);
    /* A node that only a ReLU reads, from a component that can apply the ReLU itself: the
     * forward skips it (component_ops propagate_relu). The ReLU's backward reads its output,
     * and its producer's its input, so nothing reads the skipped node's values. */
    int *readers = xcalloc(n->num + 1, sizeof *readers);
    for (int i = 0; i < n->num; i++)
        for (int k = 0; k < n->wires[i].num_terms; k++) readers[n->wires[i].terms[k].node]++;
    for (int i = 0; i + 1 < n->num; i++) {
        const struct wiring *w = &n->wires[i + 1];
        n->nodes[i + 1].fused = n->comps[i]->ops->propagate_relu && w->direct &&
                                w->terms[0].node == i + 1 && readers[i + 1] == 1 &&
                                !strcmp(n->comps[i + 1]->ops->type, "RectifiedLinearComponent");
    }
    free(readers);
}

int graph_check_used(const struct nnet *n) {
    char *used = xcalloc(n->num + 1, 1);
    for (int i = 0; i < n->num; i++)
        for (int k = 0; k < n->wires[i].num_terms; k++)
            used[n->wires[i].terms[k].node] = 1;
    int j = 1;
    while (j < n->num && used[j])
        j++;
    free(used);
    if (j >= n->num) return 0;
    const struct component *c = n->comps[j - 1];
    const char *name = n->wires[j - 1].name;
    char where[32];
    if (c->config_line) snprintf(where, sizeof where, "line %d", c->config_line);
    else snprintf(where, sizeof where, "component %d", j - 1);
    return error_set("%s: the output of %s%s%s%s is read by no later line (the last line is the "
                     "network's output)", where, c->ops->type, name ? " (name '" : "",
                     name ? name : "", name ? "')" : "");
}

int graph_same_wiring(const struct nnet *a, const struct nnet *b, int i) {
    const struct wiring *x = &a->wires[i], *y = &b->wires[i];
    if (x->num_terms != y->num_terms) return 0;
    for (int k = 0; k < x->num_terms; k++) {
        const struct wire_term *s = &x->terms[k], *t = &y->terms[k];
        if (s->node != t->node || s->shift != t->shift || s->col != t->col || s->dim != t->dim)
            return 0;
    }
    return 1;
}

const char *graph_describe_input(const struct nnet *n, int i) {
    if (n->wires[i].input) return n->wires[i].input;
    return i ? "the previous output" : "input";
}

/* ---- running the table ---- */

const struct matrix *nnet_node_output(const struct nnet *n, int j) {
    return j ? &n->acts[j] : n->input;
}

/* Term t's rows of a node's matrix (each chunk's, from row_offset on) and its columns of a
 * component's input (or of that input's derivative): to = from, or to += from (add). One call
 * when the rows line up, else one per chunk (as Splice works). */
static void term_move(const struct wire_term *t, const struct matrix *node,
                      const struct matrix *comp, int num_chunks, int to_node, int add) {
    int s = node->rows / num_chunks, r = comp->rows / num_chunks;
    int whole = t->row_offset == 0 && s == r, pieces = whole ? 1 : num_chunks;
    for (int k = 0; k < pieces; k++) {
        struct matrix a = matrix_view(node, whole ? 0 : k * s + t->row_offset,
                                      whole ? node->rows : r, 0, t->dim);
        struct matrix b = matrix_view(comp, whole ? 0 : k * r, whole ? comp->rows : r, t->col,
                                      t->dim);
        struct matrix *dst = to_node ? &a : &b, *src = to_node ? &b : &a;
        if (add) matrix_add(dst, 1, src);
        else matrix_copy(dst, src);
    }
}

const struct matrix *graph_input(const struct nnet *n, int i) {
    const struct wiring *w = &n->wires[i];
    return w->direct ? nnet_node_output(n, w->terms[0].node) : &n->ins[i];
}

const struct matrix *graph_gather(struct nnet *n, int i) {
    const struct wiring *w = &n->wires[i];
    if (w->direct) return graph_input(n, i);
    int chunk = n->input->rows / n->num_chunks - w->left - w->right;
    ASSERT(n->input->rows % n->num_chunks == 0 && chunk > 0);
    struct matrix *in = &n->ins[i];
    matrix_resize(in, n->num_chunks * chunk, n->comps[i]->input_dim);
    for (int k = 0; k < w->num_terms; k++) {
        const struct wire_term *t = &w->terms[k];
        term_move(t, nnet_node_output(n, t->node), in, n->num_chunks, 0, t->add);
    }
    return in;
}

struct matrix *graph_in_deriv(struct nnet *n, int i) {
    const struct wiring *w = &n->wires[i];
    int any = 0;
    for (int k = 0; k < w->num_terms; k++)
        any |= n->nodes[w->terms[k].node].needs_deriv;
    if (!any) return NULL;
    if (w->direct && !w->terms[0].deriv_add) return &n->derivs[w->terms[0].node];
    const struct matrix *in = graph_input(n, i);
    matrix_resize(&n->dins[i], in->rows, in->cols);
    return &n->dins[i];
}

void graph_scatter(struct nnet *n, int i, const struct matrix *d_in) {
    const struct wiring *w = &n->wires[i];
    if (d_in != &n->dins[i]) return; /* written in place */
    for (int k = 0; k < w->num_terms; k++) {
        const struct wire_term *t = &w->terms[k];
        if (n->nodes[t->node].needs_deriv)
            term_move(t, &n->derivs[t->node], d_in, n->num_chunks, 1, t->deriv_add);
    }
}

void graph_prepare_derivs(struct nnet *n) {
    for (int j = 1; j < n->num; j++) {
        if (!n->nodes[j].needs_deriv) continue;
        matrix_resize(&n->derivs[j], n->acts[j].rows, n->acts[j].cols);
        if (n->nodes[j].zero_deriv) matrix_set_zero(&n->derivs[j]);
    }
}
