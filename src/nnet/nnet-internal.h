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

/* Shared component helpers (component.c). */
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

#endif
