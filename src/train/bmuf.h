/* bmuf: block momentum over averaged models, the update rule after the average (BMUF: Chen &
 * Huo, "Scalable training of deep learning machines by incremental block training with intra-block
 * parallel optimization and blockwise model-update filtering", ICASSP 2016; DiLoCo's outer
 * Nesterov SGD: Douillard et al., arXiv 2311.08105). Used by nnet-average --bmuf (steps/train.sh
 * --averaging bmuf, one block = one iteration) and nnet-train-mpi --bmuf (params mode, one block
 * = --average-every minibatches).
 *
 * The rule, per block t (all vectors the parameter block, docs/STYLE.md §3):
 *   S(t-1)  the model the N jobs started the block from (the model file of the iteration);
 *   A(t)    the average of the N jobs' models at the end of the block;
 *   G(t)  = A(t) - S(t-1)                    the block's averaged update;
 *   m(t)  = eta m(t-1) + zeta G(t)           block momentum eta, block learning rate zeta;
 *   W(t)  = W(t-1) + m(t)                    the global model;
 *   S(t)  = W(t)            classic block momentum (CBM);
 *   S(t)  = W(t) + eta m(t) Nesterov block momentum (NBM): the jobs start from the look-ahead.
 * Only S and m are stored: W(t-1) = S(t-1) - eta m(t-1) under NBM (= S(t-1) under CBM), so one
 * model file per iteration, the one the jobs start from, as with every other method; validation,
 * combination and final.mdl use S (DiLoCo's model is the same point, see below).
 * Defaults (the paper's recommendation for N jobs): eta = 1 - 1/N, zeta = 1, Nesterov. With those,
 * a constant G is amplified by zeta / (1 - eta) = N in the steady state: the jobs should train at
 * the single-job learning rate, not N times it (steps/train.sh scales the per-job rate by
 * N (1 - eta) / zeta, 1 at the defaults, so that --initial-learning-rate keeps its meaning).
 * eta = 0, zeta = 1 is plain averaging.
 *
 * DiLoCo's outer step is the same rule. With the pseudo-gradient g = S(t-1) - A(t) = -G(t) and
 * PyTorch's Nesterov SGD (outer rate lr, momentum mu): v(t) = mu v(t-1) + g,
 * theta(t) = theta(t-1) - lr (g + mu v(t)), the workers starting from theta. Put theta = S,
 * eta = mu, zeta = lr and m = -lr v: then m(t) = mu m(t-1) + lr G(t) (the BMUF recursion) and
 *   S(t) = W(t) + mu m(t) = S(t-1) - mu m(t-1) + (1 + mu) m(t) = S(t-1) + lr G(t) + mu m(t),
 * while DiLoCo's theta(t) = theta(t-1) + lr (G(t) - mu v(t)) = theta(t-1) + lr G(t) + mu m(t):
 * the same sequence of models, step for step. So DiLoCo with outer
 * lr 0.7 and momentum 0.9 is --block-learning-rate 0.7 --block-momentum 0.9 --block-nesterov
 * true; DiLoCo's model is S. Its plain-SGD outer optimiser is --block-nesterov false.
 *
 * The state file (write-then-rename; parnet's own format, binary Kaldi tokens):
 *   <BlockMomentum> <Version> int32 1 <NumJobs> int32 <Nesterov> bool <Momentum> float
 *   <LearningRate> float <Velocity> FV (m, the parameter block's size) </BlockMomentum>
 * A reader checks the velocity's size against the model, N and the Nesterov flag against the run
 * (a state of NBM stands beside a look-ahead model), and refuses a mismatch with one line; eta and
 * zeta may change between blocks (they are recorded for the record). Errors: -1 with error_set. */
#ifndef PARNET_TRAIN_BMUF_H
#define PARNET_TRAIN_BMUF_H

#include "nnet/nnet.h"

struct bmuf_options {
    int on;
    float momentum;      /* eta in [0, 1); < 0 before bmuf_resolve: 1 - 1/N */
    float learning_rate; /* zeta > 0 */
    int nesterov;
};

/* The options shared by nnet-average and nnet-train-mpi (docs/STYLE.md §12): --bmuf,
 * --block-momentum (auto = 1 - 1/N), --block-learning-rate, --block-nesterov, --block-state-in,
 * --block-state-out. bmuf_cli_check: the ranges, before anything is read or trained. */
struct bmuf_cli {
    struct bmuf_options *o;
    const char *momentum;            /* "auto" or a number */
    const char *state_in, *state_out; /* "" when not given */
};
#define BMUF_CLI_NUM_SPECS 6
int bmuf_cli_register(struct bmuf_cli *c, struct bmuf_options *o, struct option_spec *specs);
int bmuf_cli_check(struct bmuf_cli *c);
/* eta for N jobs: the option, or 1 - 1/N for auto. */
float bmuf_resolve_momentum(const struct bmuf_options *o, int num_jobs);

/* The rule above, in place: start holds S(t-1) and becomes S(t); velocity holds m(t-1) and
 * becomes m(t); avg is A(t). Same dimensions, any device. */
void bmuf_update(struct vector *start, struct vector *velocity, const struct vector *avg,
                 float eta, float zeta, int nesterov);

/* The state file. read: velocity must be initialised to the model's size; the stored N and
 * Nesterov flag must equal num_jobs and nesterov. */
int bmuf_state_write(const char *wxfilename, const struct vector *velocity, int num_jobs,
                     float eta, float zeta, int nesterov);
int bmuf_state_read(const char *rxfilename, struct vector *velocity, int num_jobs, int nesterov);
/* The reader on an open stream (the fuzz target): the velocity of any size. */
int bmuf_state_read_stream(struct kin *in, struct vector *velocity, int *num_jobs, int *nesterov);

#endif
