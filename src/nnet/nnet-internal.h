/* Private to src/nnet: the component ops tables and the token I/O helpers they share. */
#ifndef PARNET_NNET_NNET_INTERNAL_H
#define PARNET_NNET_NNET_INTERNAL_H

#include "nnet/nnet.h"

/* Token-level model I/O (nnet-io.c), thin wrappers over the io layer. Each returns 0 or -1 with
 * error_set naming what was expected. Readers check sizes against what is left in the stream. */
int nio_write_token(struct nnet_stream *s, const char *token);
int nio_expect_token(struct nnet_stream *s, const char *token);
/* Read the next token into buf (size bytes, NUL-terminated). */
int nio_read_token(struct nnet_stream *s, char *buf, size_t size);
/* 1 if the next token is `token` (then consumed), 0 if not (nothing consumed), -1 on error. */
int nio_try_token(struct nnet_stream *s, const char *token);
int nio_write_int(struct nnet_stream *s, int v);
int nio_read_int(struct nnet_stream *s, int *v);
int nio_write_float(struct nnet_stream *s, float v);
int nio_read_float(struct nnet_stream *s, float *v);
int nio_write_bool(struct nnet_stream *s, int v);
int nio_read_bool(struct nnet_stream *s, int *v);
int nio_write_int_vector(struct nnet_stream *s, const int *v, int n);
int nio_read_int_vector(struct nnet_stream *s, int **v, int *n); /* *v xmalloc'ed */
int nio_write_matrix(struct nnet_stream *s, const struct matrix *m);
/* Reads into m (matrix_init'ed here, any shape the file says). */
int nio_read_matrix(struct nnet_stream *s, struct matrix *m);
int nio_write_vector(struct nnet_stream *s, const struct vector *v);
int nio_read_vector(struct nnet_stream *s, struct vector *v);

/* "<Token>" value helpers used by every component. */
int nio_expect_int(struct nnet_stream *s, const char *token, int *v);
int nio_expect_float(struct nnet_stream *s, const char *token, float *v);

/* Matrix and vector files (FixedAffine matrix=, FixedScale scales=) are read with io.h's
 * io_read_matrix_file / io_read_object(holder_vector): one reader for object files. */

/* Shared component helpers (component.c). component_new_from_config_line: the component of a
 * parsed line (component_new_from_config without the parsing; the caller releases cl). */
struct component *component_new_from_config_line(struct config_line *cl, int prev_dim,
                                                 struct rng *r);
int component_dim_from_config(struct config_line *cl, const char *key, int prev_dim, int *out);
/* Allocate an owned parameter vector of n floats (zeroed). */
void component_alloc_params(struct component *c, int n);
/* copy_priv and free_priv of a type whose priv is one plain block of n bytes (no pointers). */
void component_priv_copy_bytes(struct component *dst, const struct component *src, size_t n);
void component_priv_free(struct component *c);
/* Affine-like parameter views into c->params: W (out x in), then b (out). */
struct matrix component_linear_view(const struct component *c);
struct vector component_bias_view(const struct component *c);

/* What the updatable types share (components-affine.c): learning-rate and max-change from a
 * config line (max_change_default set), and <LearningRate> f <MaxChange> f in a model file. */
int updatable_from_config(struct component *c, struct config_line *cl);
int updatable_read_header(struct component *c, struct nnet_stream *s);
int updatable_write_header(const struct component *c, struct nnet_stream *s);

/* Natural gradient of a weight matrix whose gradient is dY^T [X | 1] (components-affine.c): the
 * state of NaturalGradientAffine, shared with Convolution (X: its patch matrix). Options from a
 * config line (rank-in rank-out update-period num-samples-history alpha max-change-per-sample;
 * *got_in, *got_out: whether the ranks were given, for ng_default_ranks) and a model file
 * (<RankIn> .. <MaxChangePerSample>); ng_check validates them. ng_prepare_rows preconditions
 * [in | 1] and out_deriv (rows are samples; preconditioners created on the first call, seeded
 * from c->seed) with c's learning rate and the max-change-per-sample limit, and returns a bound
 * on every element of the step; ng_step_add_rows then sets dst = [dW | db] step + beta dst. */
struct ng_priv;
struct ng_priv *ng_priv_new(void);
struct ng_priv *ng_priv_copy(const struct ng_priv *p); /* options only: fresh preconditioners */
void ng_priv_free(struct ng_priv *p);
int ng_options_from_config(struct ng_priv *p, struct config_line *cl, int *got_in, int *got_out);
void ng_default_ranks(struct ng_priv *p, int got_in, int got_out, int din, int dout);
int ng_check(const struct ng_priv *p);
int ng_options_read(struct ng_priv *p, struct nnet_stream *s);
int ng_options_write(const struct ng_priv *p, struct nnet_stream *s);
int ng_options_info(const struct ng_priv *p, char *buf, size_t size);
double ng_prepare_rows(const struct component *c, struct ng_priv *p, const struct matrix *in,
                       const struct matrix *out_deriv);
void ng_step_add_rows(struct ng_priv *p, struct vector *dst, float beta);

/* ---- the network (nnet.c) and its wiring (graph.c) ---- */

/* One term of a component's input (nnet.h "Graphs"): the output of node `node` (0: the network
 * input; j >= 1: component j - 1's output), shifted by `shift` frames (Offset), written into
 * columns [col, col + dim) of the component's input. Compiled at append time: row_offset is the
 * first row of each of the node's chunks that the input reads (the input's left context minus
 * the term's), add whether the forward adds (the columns were written by an earlier term of a
 * Sum) or copies; at finalize, deriv_add whether the backward adds into the node's derivative
 * or copies (the first writer, when its rows are all of the node's). */
struct wire_term {
    int node, shift, col, dim;
    int row_offset;
    int add, deriv_add;
};

/* What component i reads. name, input: as configured (owned; NULL when absent: input NULL is the
 * previous component's output, or the network input for the first). */
struct wiring {
    char *name, *input;
    int num_terms;
    struct wire_term *terms;
    int left, right; /* frames of context consumed before the component (of its input's rows) */
    int direct;      /* the input is one node's output as it is: no gather, no scatter */
};

/* Per node (0 .. num): its context and what the backward does with its derivative. */
struct node_info {
    int left, right;
    int needs_deriv; /* an updatable component computes it, or reads what does */
    int zero_deriv;  /* accumulated from zero (read by several terms, or cropped) */
    int fused;       /* written by no one: its producer's propagate_relu writes the output of the
                        RectifiedLinear that alone reads it (nnet_forward) */
};

struct nnet {
    int num, cap;
    struct component **comps;
    struct wiring *wires;     /* one per component */
    struct node_info *nodes;  /* num + 1, filled by nnet_finalize */
    int input_dim;            /* the network input's (node 0) */
    int graph;                /* some component has a name or an input: the model file says so */
    struct vector params;     /* the parameter block, owned */
    struct vector delta;      /* gradient or step, same layout, owned */
    float max_change;         /* global, 0 = off */
    long long mc_steps, mc_clipped; /* global max-change statistics */
    double mc_scale_sum;
    int mc_logged;            /* clipping events logged at LOG level so far */
    /* activations of the last forward: acts[j] is node j's output (acts[0] unused: input) */
    struct matrix *acts;
    struct matrix *derivs;    /* derivs[j]: d objective / d node j's output (1 <= j < num) */
    struct matrix *ins;       /* ins[i]: component i's gathered input (not direct) */
    struct matrix *dins;      /* dins[i]: d objective / d that input, before the scatter */
    const struct matrix *input;
    const struct matrix *out_deriv; /* of the backward under way */
    int num_chunks;
    int forwarded;
};

/* graph.c. graph_wire: parse `input` (NULL: the previous node) against the nodes so far, check
 * the name, and fill *w for component c about to be appended as number n->num (its dims checked
 * against the descriptor's; for the first component, a descriptor over `input` alone sets the
 * network's input dim). -1 with error_set on a bad descriptor or name. graph_input_dim: the
 * dim of a descriptor over the nodes so far (for a config line's default dims), -1 (error_set)
 * if it is bad, 0 if unknown (the first line). */
int graph_wire(const struct nnet *n, const struct component *c, const char *name,
               const char *input, struct wiring *w);
int graph_input_dim(const struct nnet *n, const char *input);
void graph_wiring_release(struct wiring *w);
/* Node j's context: frames consumed before its rows (left) and after them (right). */
int graph_node_left(const struct nnet *n, int j);
int graph_node_right(const struct nnet *n, int j);
/* Node contexts and the backward's flags (nnet_finalize); graph_check_used: -1 (error_set
 * naming the component) when some component's output is read by nothing. */
void graph_finalize(struct nnet *n);
int graph_check_used(const struct nnet *n);
/* 1 if component i of a and of b read the same terms; graph_describe_input: its input as text
 * ("the previous component" when it has no input key). */
int graph_same_wiring(const struct nnet *a, const struct nnet *b, int i);
const char *graph_describe_input(const struct nnet *n, int i);
/* The forward's input of component i (gathered into n->ins[i] unless direct); the matrix its
 * backprop writes the input derivative into (NULL when no node below needs it), and the scatter
 * of that into the nodes' derivatives (nothing when it was written in place); the derivatives'
 * storage sized (and zeroed where they are accumulated) before a backward. */
const struct matrix *graph_gather(struct nnet *n, int i);
const struct matrix *graph_input(const struct nnet *n, int i);
struct matrix *graph_in_deriv(struct nnet *n, int i);
void graph_scatter(struct nnet *n, int i, const struct matrix *d_in);
void graph_prepare_derivs(struct nnet *n);
/* node j's output and its derivative in the last forward / the backward under way */
const struct matrix *nnet_node_output(const struct nnet *n, int j);

#endif
