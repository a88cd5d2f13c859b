/* nnet: components, the network, model files.
 *
 * A network is an ordered list of components; component i maps a (rows_i x input_dim_i) matrix to
 * a (rows_{i+1} x output_dim_i) matrix, its input the previous output or, in a graph (below), a
 * descriptor over earlier outputs. Every component works row by row except Splice, which
 * takes a window of rows (context) and so shortens each chunk of rows (see "Chunks" below).
 *
 * Components as tables of operations (docs/STYLE.md §5). Each type has one `const struct
 * component_ops`: its type token, config aliases, init from a config line, read/write, propagate,
 * backprop, info. component_ops_find() maps a type name ("AffineComponent", "<AffineComponent>"
 * or a Kaldi nnet2 alias such as "AffineComponentPreconditionedOnline") to its ops; the config
 * parser and the model reader both use it.
 *
 * One parameter block (docs/STYLE.md §3). The trainable parameters of every updatable component
 * live in ONE contiguous vector, nnet_params(n); component i's parameters are the slice
 * [param_offset, param_offset + num_params), which it sees through views (matrix_from_vector /
 * vector_range). Averaging, all-reduce, elastic coupling are single vector ops over that block.
 * The block holds only the updatable parameters (Kaldi's "parameter-dim"); fixed components
 * (FixedAffine, FixedScale, FixedBias) own their own storage. A second block of the same layout,
 * nnet_delta(n), receives the gradient or the step computed by nnet_backward().
 *   Layout per type:  Affine, NaturalGradientAffine: W (output_dim x input_dim, row-major), then b
 *   (output_dim). Convolution: its filters (num-filters x filter size, row-major), then b.
 *
 * Chunks. nnet_forward() takes the input as num_chunks equal chunks of rows (one per example, or
 * one per utterance); Splice acts inside each chunk, so a chunk of C rows becomes C - left - right
 * rows, where left/right = nnet_left_context/nnet_right_context. With no Splice the row count is
 * unchanged. A time-delay network (Kaldi nnet2's multisplice TDNN) is Splice lines between the
 * layers: each layer runs once on every row of the chunk it receives, so a frame that several
 * output frames see (in an example's shared context, or a whole utterance) is computed once.
 *
 * Graphs (graph.c; docs/COMPONENTS.md "Residual connections"). A component may name its output
 * and read a descriptor over the network input and earlier names instead of the previous output:
 * Sum (elementwise), Append (columns side by side), Offset (frames shifted), nested. The list of
 * components stays in order and each reads only earlier ones, so the order is a topological one:
 * the forward runs them first to last, keeping every output, and the backward last to first, a
 * node read by several components receiving the sum of their derivatives. Each component's
 * descriptor is compiled, when it is appended, into a table of terms (struct wire_term,
 * nnet-internal.h): copy or add rows of a node into columns of the component's input, the rows of
 * each chunk cropped so that row i of every term is the same frame (a node's context is its input's
 * plus its component's; an input's is the largest of its terms'). A component that reads the
 * previous output as it is (every component of a network without the keys) has one direct term:
 * no copy, no extra pass, the network as it was. The network's contexts are its last node's;
 * every other node must be read by some component (nnet_init_from_config, nnet_read).
 *
 * Learning and updates (Kaldi nnet2 conventions). The objective is maximised; gradients are SUMMED
 * over the minibatch, so learning rates are per sample. nnet_backward(n, d, NNET_UPDATE) computes
 * each updatable component's step (lr * gradient for Affine, the natural-gradient step for
 * NaturalGradientAffine, with its max-change-per-sample), clips it to the component's max-change
 * (Frobenius norm of the step, 0 = off), then clips the whole step to the network's global
 * max-change (nnet_set_max_change, 0 = off), and adds it to the parameters. A step that is not
 * finite is skipped with a warning and never written into the parameters.
 *
 * Model file (binary or text, Kaldi nnet2's token layout):
 *     <Nnet> <Version> 1 <NumComponents> N <Components>
 *       <AffineComponent> <LearningRate> f <MaxChange> f <LinearParams> FM.. <BiasParams> FV..
 *         <IsGradient> F </AffineComponent>
 *       ...
 *     </Components> </Nnet>
 * A graph (above) writes <Version> 2 and, before a component's token, <Name> NAME and then
 * <Input> DESCRIPTOR (one token, no spaces) where it has them; a network without them writes
 * version 1, byte for byte as before, and a version 1 file with those tokens is an error.
 * A file without <Version> (Kaldi nnet2's raw nnet) is read as version 0. Binary streams start with
 * "\0B" (written by the io layer's output opener, not here). Component bodies per type:
 *     Splice:  <InputDim> i <Context> [ int32 vector ] <ConstComponentDim> 0
 *     Affine:  <LearningRate> f <MaxChange> f <LinearParams> FM <BiasParams> FV <IsGradient> F
 *     NaturalGradientAffine: the Affine fields, then <RankIn> <RankOut> <UpdatePeriod>
 *              <NumSamplesHistory> <Alpha> <MaxChangePerSample> (before <IsGradient>)
 *     Sigmoid, Tanh, RectifiedLinear, Softmax, LogSoftmax, Normalize:
 *              <Dim> d <ValueSum> FV <DerivSum> FV <Count> f   (statistics are not kept: empty)
 *     Pnorm:   <InputDim> i <OutputDim> o <P> f
 *     Dropout: <Dim> d <DropoutProportion> f
 *     FixedAffine: <LinearParams> FM <BiasParams> FV
 *     FixedScale: <Scales> FV;   FixedBias: <Bias> FV
 *     Convolution: <LearningRate> f <MaxChange> f, the image geometry (<InputHeight> <InputWidth>
 *              <InputChannels> <NumFilters> <FilterHeight> <FilterWidth> <StrideHeight>
 *              <StrideWidth> <PadHeight> <PadWidth>, ints), <Filters> FM <BiasParams> FV
 *              <UseNaturalGradient> b, then NaturalGradientAffine's <RankIn> .. <MaxChangePerSample>
 *     MaxPooling: <InputHeight> <InputWidth> <InputChannels> <PoolHeight> <PoolWidth>
 *              <StrideHeight> <StrideWidth> <PadHeight> <PadWidth> (ints)
 *   (docs/COMPONENTS.md: images in rows, height x width x channels per row, channel fastest.)
 * <MaxChange> is optional on read (Kaldi files lack it), and so are <IsGradient> F and, in
 * NaturalGradientAffine, <UpdatePeriod> (then 1); Kaldi's name AffineComponentPreconditionedOnline
 * reads as NaturalGradientAffine (written under parnet's name).
 *
 * Config file (nnet_init_from_config, Kaldi nnet2 syntax): one component per line,
 * "<Type> key=value ...", '#' starts a comment. An unknown key, a missing required key or a bad
 * value is an error naming the line and the key. input-dim (or dim) may be omitted after the first
 * line: it is then the previous component's output dim (or its input descriptor's). Every line
 * also takes name=NAME and input=DESCRIPTOR (Graphs above); a value runs on over spaces inside
 * parentheses (input=Sum(a, b)).
 *
 * Errors: the readers and the config parser return -1 / NULL with error_set(); they never exit.
 * Shape mismatches in forward/backward calls are programmer bugs (ASSERT).
 */
#ifndef PARNET_NNET_NNET_H
#define PARNET_NNET_NNET_H

#include <stdio.h>

#include "base/base.h"
#include "io/io.h"
#include "matrix/matrix.h"

#define NNET_FORMAT_VERSION 2

/* ---- config lines ---- */
/* One parsed config line: the type word and its key=value pairs. Keys are marked as used when
 * read; config_check_unused() then reports the first unused key (an unparsed key is fatal). */
struct config_line {
    char *type;
    int num;
    char **keys, **values;
    int *used;
};
/* Split "Type key=value ..." (whitespace separated). Returns 0, or -1 (error_set). */
int config_line_parse(struct config_line *cl, const char *text);
void config_line_release(struct config_line *cl);
/* Getters: return 1 if the key is present and valid (stored in *out), 0 if absent (*out
 * untouched), -1 on a bad value (error_set names the key). */
int config_get_int(struct config_line *cl, const char *key, int *out);
int config_get_float(struct config_line *cl, const char *key, float *out);
int config_get_string(struct config_line *cl, const char *key, const char **out);
int config_get_bool(struct config_line *cl, const char *key, int *out); /* true|false|1|0 */
/* Colon-separated integers ("-4:-3:0:2"); *out is xmalloc'ed. */
/* a:b:c (Kaldi nnet2) or a,b,c (nnet3) */
int config_get_int_list(struct config_line *cl, const char *key, int **out, int *num);
int config_check_unused(const struct config_line *cl);

/* ---- components ---- */
struct component;

/* What a component reads from (in) or writes to (out), and the mode (Kaldi binary or text). */
struct nnet_stream {
    struct kin *in;
    struct kout *out;
    int binary;
};

enum backprop_mode {
    BACKPROP_GRADIENT = 0, /* delta = the plain gradient of the objective w.r.t. the parameters */
    BACKPROP_STEP = 1,     /* delta = the update step (learning rate, preconditioning included) */
};

struct component_ops {
    const char *type;           /* "AffineComponent": the token is "<AffineComponent>" */
    const char *const *aliases; /* (optional) other names, NULL-terminated: Kaldi nnet2 names */
    int updatable;              /* has parameters in the block, a learning rate and max-change */
    int output_is_log;          /* (LogSoftmax) output holds log-probabilities */
    /* From a config line; prev_dim is the previous component's output dim or -1. Fills input_dim,
     * output_dim, num_params (updatable), left/right context and creates the parameters in an
     * owned c->params (initialised randomly from r). */
    int (*init)(struct component *c, struct config_line *cl, int prev_dim, struct rng *r);
    /* The body between "<Type>" and "</Type>" (the network reads and writes those two tokens);
     * same effects as init. */
    int (*read)(struct component *c, struct nnet_stream *s);
    int (*write)(const struct component *c, struct nnet_stream *s);
    /* (optional) Called after c->params or c->seed changed under the component: the network
     * moved the parameters into its block (nnet_finalize), copied the component, or set the seed
     * (nnet_set_seed). Resets what the private data derives from them; today only Dropout has
     * one (it reseeds its mask stream). Components take their parameter views from c->params
     * when they run, so none keeps a view that could go stale. */
    void (*bind)(struct component *c);
    /* out is sized by the caller (rows from component_output_rows). */
    void (*propagate)(struct component *c, const struct matrix *in, struct matrix *out,
                      int num_chunks, int train);
    /* (optional) propagate and then a RectifiedLinearComponent's max(0, .), into out: the
     * network calls it instead of the two where a ReLU alone reads this component's output
     * (nnet_forward), so that the product applies the ReLU as it writes. */
    void (*propagate_relu)(struct component *c, const struct matrix *in, struct matrix *out,
                           int num_chunks, int train);
    /* in_deriv may be NULL (not needed: first component). delta (updatable only, may be NULL) is
     * the component's slice of the delta block, overwritten according to mode. */
    void (*backprop)(struct component *c, const struct matrix *in, const struct matrix *out,
                     const struct matrix *out_deriv, struct matrix *in_deriv, int num_chunks,
                     struct vector *delta, enum backprop_mode mode);
    /* (optional, updatable; both or neither) The step of BACKPROP_STEP in two calls, so that the
     * network can add a step it knows to be finite straight into the parameters, with no pass
     * over the delta block. step_bound, called after backprop computed in_deriv, does whatever
     * precedes the last product (NaturalGradientAffine: the preconditioning, so once per
     * minibatch) and returns a bound on the absolute value of every element of the step
     * (non-finite if it has none). step_add then sets dst = step + beta dst (beta 0 or 1) from
     * the same in and out_deriv. */
    double (*step_bound)(struct component *c, const struct matrix *in,
                         const struct matrix *out_deriv);
    void (*step_add)(struct component *c, const struct matrix *in, const struct matrix *out_deriv,
                     struct vector *dst, float beta);
    /* (optional) The statistics the component stores in the model besides parameters
     * (BatchNorm's running moments): not trained and not in the parameter block, but averaged
     * with the parameters by nnet-average (nnet_add_stats). A view, valid while c lives. */
    struct vector (*stats)(const struct component *c);
    /* (optional, with stats) The weight a training forward gives the minibatch's statistics
     * when it moves the stored ones towards them (BatchNorm's momentum): set per minibatch by
     * train_recompute_stats, so that the stored ones become the pooled statistics exactly. */
    void (*set_stats_momentum)(struct component *c, float momentum);
    /* (optional) Type-specific text for nnet-info, appended after the common part. */
    void (*info)(const struct component *c, char *buf, size_t size);
    /* (optional) Deep copy of the private data (dst is a shallow copy of src). */
    void (*copy_priv)(struct component *dst, const struct component *src);
    /* (optional) Free the private data. */
    void (*free_priv)(struct component *c);
};

struct component {
    const struct component_ops *ops;
    int input_dim, output_dim;
    int left_context, right_context; /* rows consumed per chunk (Splice), else 0 */
    float learning_rate;             /* updatable only */
    float max_change;                /* updatable only; 0 = off */
    int max_change_default;          /* 1: the config line gave no max-change (a default) */
    long long mc_steps, mc_clipped;  /* max-change statistics of this job: steps seen, clipped */
    double mc_scale_sum;             /* sum over steps of the scale applied (1 when not clipped) */
    int num_params;                  /* in the parameter block; 0 if not updatable */
    int param_offset;                /* into the block, valid once in a network */
    struct vector params;            /* owned before joining a network, then a view of the block */
    uint64_t seed;                   /* for components that draw (Dropout), set by the network */
    int config_line;                 /* its line in the config it came from; 0: read from a model */
    void *priv;                      /* type-specific */
};

const struct component_ops *component_ops_find(const char *name);
/* A NULL-terminated list of every registered type. */
const struct component_ops *const *component_ops_all(void);
/* Every registered type's name, in lines of at most 96 characters that start with two spaces and
 * end with a newline (for a usage text: nnet-init's). Static storage, built on the first call. */
const char *component_type_names(void);
/* New component from one config line (the type word is looked up). NULL on error. */
struct component *component_new_from_config(const char *line, int prev_dim, struct rng *r);
void component_free(struct component *c);
struct component *component_copy(const struct component *c);
int component_output_rows(const struct component *c, int in_rows, int num_chunks);
/* Kaldi's Info() shape: "AffineComponent, input-dim=40, output-dim=100, learning-rate=0.01, ..." */
void component_info(const struct component *c, char *buf, size_t size);

/* ---- the network ---- */
struct nnet;

struct nnet *nnet_new(void);
void nnet_free(struct nnet *n);
/* Append a component (the network takes ownership); checks that dims chain. -1 on mismatch. */
int nnet_append(struct nnet *n, struct component *c);
/* The same with its wiring ("Graphs" above): name (NULL: none) names its output; input (NULL: the
 * previous component's output) is a descriptor over the network input and earlier names. -1
 * (error_set) on a bad name or descriptor, or dims that do not match; the network keeps copies. */
int nnet_append_node(struct nnet *n, struct component *c, const char *name, const char *input);
/* Component i's name and input descriptor as a model file keeps them (no spaces), or NULL. */
const char *nnet_component_name(const struct nnet *n, int i);
const char *nnet_component_input(const struct nnet *n, int i);
/* Gather the parameters of all components into one block and make them views of it. Called by
 * the readers and init; call it yourself after nnet_append. */
void nnet_finalize(struct nnet *n);

/* Config file text (whole file) -> network; seed drives the random initialisation. NULL on
 * error. The _file variant reads a plain file name. */
struct nnet *nnet_init_from_config_text(const char *text, uint64_t seed);
struct nnet *nnet_init_from_config(const char *filename, uint64_t seed);

/* Model I/O on io streams, after the "\0B" header (io_read_header / io_write_header). */
struct nnet *nnet_read(struct kin *in, int binary);
int nnet_write(const struct nnet *n, struct kout *out, int binary);
/* Whole files through io extended filenames, header included; binary chooses the output mode.
 * The io layer writes a plain file under a temporary name and renames it when complete. */
struct nnet *nnet_read_file(const char *rxfilename);
int nnet_write_file(const struct nnet *n, const char *wxfilename, int binary);

/* Same structure and parameters; fresh activations. */
struct nnet *nnet_copy(const struct nnet *n);
/* 1 if a and b have the same components with the same dims (parameters may differ). */
int nnet_same_structure(const struct nnet *a, const struct nnet *b);
/* The same test, saying what differs: 0, or -1 with error_set("component 3 (AffineComponent)
 * has input-dim 50, not 40") -- b's value first, a's second. */
int nnet_check_same_structure(const struct nnet *a, const struct nnet *b);

int nnet_num_components(const struct nnet *n);
struct component *nnet_component(const struct nnet *n, int i);
int nnet_num_updatable(const struct nnet *n);
int nnet_input_dim(const struct nnet *n);
int nnet_output_dim(const struct nnet *n);
int nnet_left_context(const struct nnet *n);
int nnet_right_context(const struct nnet *n);
/* 0 if every input row the network reads lies within left frames before and right frames after
 * the frames it labels (the examples' context, nnet-get-egs --left-context/--right-context);
 * else -1 with error_set naming the first component that reaches past it, by its config line
 * ("line 5: SpliceComponent, input-dim=.., output-dim=.., context=-3:0:3: needs 7 frames of left
 * context by here; the examples have 5"). */
int nnet_check_context(const struct nnet *n, int left, int right);
int nnet_num_params(const struct nnet *n);
/* The parameter block and the delta block (a view; valid while n lives). */
struct vector nnet_params(struct nnet *n);
struct vector nnet_delta(struct nnet *n);

void nnet_set_learning_rate(struct nnet *n, float lr); /* every updatable component */
/* One rate per updatable component, in order; num must equal nnet_num_updatable. */
int nnet_set_learning_rates(struct nnet *n, const float *lrs, int num);
void nnet_scale_learning_rates(struct nnet *n, float factor);
void nnet_set_max_change(struct nnet *n, float max_change); /* global; 0 = off */
float nnet_get_max_change(const struct nnet *n);

/* Default guards (Kaldi nnet3's): a config line of an affine type that gives no max-change gets
 * NNET_DEFAULT_MAX_CHANGE_HIDDEN, the last updatable component of a config (the layer feeding the
 * softmax) NNET_DEFAULT_MAX_CHANGE_FINAL; max-change=0 on the line turns it off. The trainers'
 * global max-change defaults to NNET_DEFAULT_MAX_CHANGE_GLOBAL (--max-change=0: off). */
#define NNET_DEFAULT_MAX_CHANGE_HIDDEN 0.75f
#define NNET_DEFAULT_MAX_CHANGE_FINAL 1.5f
#define NNET_DEFAULT_MAX_CHANGE_GLOBAL 2.0f
/* Max-change statistics (like nnet3's): every applied or skipped step counts; the first
 * NNET_MAX_CHANGE_LOG_EVENTS clipping events of a network are logged at LOG level (later ones at
 * verbose 2). nnet_log_max_change_stats logs one line per component with a limit (steps clipped,
 * mean scale) and one for the global limit; nnet_reset_max_change_stats zeroes the counts. */
#define NNET_MAX_CHANGE_LOG_EVENTS 5
void nnet_log_max_change_stats(const struct nnet *n);
/* Parameter change between two networks of the same structure (nnet-show-progress, as Kaldi's):
 * for the k-th updatable component, diff[k] = ||b_k - a_k|| and rel[k] = diff[k] / ||a_k|| (0 when
 * ||a_k|| is 0); the arrays hold nnet_num_updatable(a) entries. -1 with the error set when the
 * structures differ. */
int nnet_param_change(const struct nnet *a, const struct nnet *b, double *diff, double *rel);
void nnet_reset_max_change_stats(struct nnet *n);
/* Stored statistics (the components' stats op: BatchNorm's running moments), component by
 * component. nnet_stats_dim: their total size (0 for a network without them); nnet_scale_stats:
 * every one *= alpha; nnet_add_stats: n's += alpha m's (m of n's structure, ASSERT). nnet-average
 * (average_model_files) averages them with the weights it gives the parameters. The other ways
 * of combining models (nnet-combine, TWA, the synchronous modes' averaging) keep the stored
 * statistics of the model they start from; train_recompute_stats (nnet-recompute-stats) sets
 * them to those of the combined network. */
int nnet_stats_dim(const struct nnet *n);
void nnet_scale_stats(struct nnet *n, float alpha);
void nnet_add_stats(struct nnet *n, float alpha, const struct nnet *m);
/* Every stats component's momentum (set_stats_momentum) := momentum, in [0, 1]. */
void nnet_set_stats_momentum(struct nnet *n, float momentum);
/* Seed the random streams of the components that draw (Dropout masks, and the natural-gradient
 * preconditioners' fallback). nnet_init_from_config seeds with its seed, nnet_read with 0; a
 * trainer calls this with its --srand. */
void nnet_set_seed(struct nnet *n, uint64_t seed);

/* Forward. input: num_chunks chunks of rows, each of the same number of rows. The input must stay
 * valid and unchanged until nnet_backward. Returns the output (owned by n, valid until the next
 * forward). train selects training behaviour (Dropout). */
const struct matrix *nnet_forward(struct nnet *n, const struct matrix *input, int num_chunks,
                                  int train);
/* The output of component i (0-based) in the last forward (owned by n, valid until the next).
 * An affine component followed by a RectifiedLinearComponent that alone reads its output writes
 * the ReLU's output itself (component_ops propagate_relu): its own output then has its shape but
 * no values. nnet_fuse_relu = 0 (tests) turns that off. */
const struct matrix *nnet_layer_output(const struct nnet *n, int i);
extern int nnet_fuse_relu;

enum nnet_backward_mode {
    NNET_GRADIENT = 0, /* nnet_delta(n) = gradient of the objective (no update) */
    NNET_UPDATE = 1,   /* compute the step, clip, and add it to the params (nnet_delta(n) is
                        * then unspecified: without max-change, a step known to be finite goes
                        * straight into the parameters) */
    NNET_STEP = 2,     /* compute the step (learning rates, preconditioning, max-change-per-sample)
                        * into nnet_delta(n), unclipped, without applying it */
};
/* Backward after nnet_forward. out_deriv: d objective / d output (rows and dim of the output).
 * Returns 0, or 1 if NNET_UPDATE skipped a non-finite step (warned; parameters untouched).
 * NNET_UPDATE is NNET_STEP followed by nnet_apply_step on nnet_delta(n) itself (in effect: the
 * parameters may instead receive the step directly, equal up to float rounding). */
int nnet_backward(struct nnet *n, const struct matrix *out_deriv, enum nnet_backward_mode mode);

/* Apply an externally formed update, with the same safety as NNET_UPDATE: clip to each
 * component's max-change, then to the global max-change, skip (warn, return 1) if not finite,
 * else add to the parameters and return 0. Both take a vector of the block's layout (it may be
 * nnet_delta(n) itself; it is not modified unless it is that block). They let a trainer combine
 * steps or gradients (GAF's fusion, a sum over MPI ranks) before applying them.
 *   nnet_apply_step: step is already a parameter change (e.g. fused or summed NNET_STEP outputs).
 *   nnet_apply_gradient: step = scale * learning_rate_c * grad on component c's slice. This is
 *     plain SGD for every component: NaturalGradientAffine preconditions the per-sample input and
 *     output derivatives of a minibatch, which a given (e.g. fused) gradient no longer carries, so
 *     neither its preconditioning nor its max-change-per-sample is applied here. */
int nnet_apply_step(struct nnet *n, const struct vector *step);
int nnet_apply_gradient(struct nnet *n, const struct vector *grad, float scale);
/* Vectors of the block's layout weighted by the learning rates, on each updatable component c's
 * slice only (what a trainer needs to form a step outside nnet_backward):
 *   nnet_scale_by_learning_rates: v_c *= scale lr_c (nnet_apply_gradient's step);
 *   nnet_add_by_learning_rates: y_c += alpha lr_c x_c. */
void nnet_scale_by_learning_rates(const struct nnet *n, struct vector *v, float scale);
void nnet_add_by_learning_rates(const struct nnet *n, struct vector *y, float alpha,
                                const struct vector *x);

/* Weighted cross-entropy against sparse labels on the last forward's output: label i is
 * (rows[i], cols[i], weights[i]); weights NULL means all 1. Returns sum_i w_i log p(rows[i],
 * cols[i]) (p floored at 1e-20 when the last component is Softmax; read directly for LogSoftmax)
 * and sets out_deriv (resized to the output's shape) to d objective / d output: w/p for Softmax,
 * w for LogSoftmax. */
double nnet_objective_xent(struct nnet *n, int num, const int *rows, const int *cols,
                           const float *weights, struct matrix *out_deriv);

#endif
