/* train_options: defaults, and the trainers' option groups (train.h, "command-line options"). */
#include "update/update.h"
#include "train/train.h"

#include <string.h>

void train_options_default(struct train_options *o) {
    memset(o, 0, sizeof *o);
    o->minibatch_size = 512;
    o->srand = 0;
    o->progress_every = 50;
    o->gaf_threshold = 0.97f;
    o->gaf_fusion = GAF_FUSION_HALVING;
    o->entropy_coupling = 0.01f;
    o->entropy_ema = 0.75f;
    o->entropy_outer_rate = 1;
}

int train_cli_register(struct train_cli *c, struct train_options *o, int groups, int sync,
                       struct option_spec *specs) {
    memset(c, 0, sizeof *c);
    train_options_default(o);
    c->o = o;
    c->groups = groups;
    c->sync = sync;
    c->binary = 1;
    c->max_change = NNET_DEFAULT_MAX_CHANGE_GLOBAL;
    c->mc = (struct matrix_cli)MATRIX_CLI_DEFAULTS;
    c->gaf_fusion = "halving";
    c->gaf_on = "gradient";
    c->gaf_scale = "accepted";
    c->proximal = "";
    c->average_in = c->average_out = "";
    c->nesterov = "auto";
    if (sync) o->momentum = -1; /* by mode */
    int n = 0;
    if (groups & TRAIN_CLI_COMMON) {
        OPTION("minibatch-size", OPT_INT, &o->minibatch_size,
               sync ? "Examples per minibatch per rank" : "Examples per minibatch");
        OPTION("srand", OPT_INT, &c->srand,
               sync ? "Seed for the random draws of training (+ rank)"
                    : "Seed for the random draws of training (Dropout)");
        OPTION("num-threads", OPT_INT, &c->mc.num_threads,
               sync ? "threads for the matrix work, per rank" : "threads for the matrix work");
        specs[n++] = (struct option_spec)MATRIX_PRECISION_OPTION(c->mc.precision);
        OPTION("use-gpu", OPT_STRING, &c->mc.use_gpu,
               sync ? "yes|no|optional|wait: each rank on a GPU (make CUDA=1), one per rank by "
                      "local rank; the all-reduces then go through NCCL on the device"
                    : "yes|no|optional|wait: run on a GPU (make CUDA=1)");
        OPTION("minibatches-per-phase", OPT_INT, &o->progress_every,
               sync ? "Log progress (rank 0) every this many minibatches (0: never)"
                    : "Log progress every this many minibatches (0: never)");
        OPTION("max-change", OPT_FLOAT, &c->max_change,
               "Global max-change: largest norm of one minibatch's whole step (Kaldi's 2.0; 0: no "
               "limit)");
        OPTION("binary", OPT_BOOL, &c->binary, "Write the model in binary mode");
    }
    if (groups & TRAIN_CLI_GAF) {
        OPTION("gaf-microbatches", OPT_INT, &o->gaf_microbatches,
               sync ? "GAF across ranks: minibatches per rank per update (0: off; implies "
                      "gradients "
                      "mode)"
                    : "GAF: minibatches per update, filtered by agreement (0 or 1: off)");
        OPTION("gaf-threshold", OPT_FLOAT, &o->gaf_threshold,
               "GAF: largest cosine distance 1-cos accepted (0.97: cos >= 0.03; >= 2 accepts all)");
        OPTION("gaf-fusion", OPT_STRING, &c->gaf_fusion,
               "GAF: halving (G=(G+g)/2, the reference code) or mean (uniform mean of the "
               "accepted)");
        OPTION("gaf-on", OPT_STRING, &c->gaf_on,
               "GAF: filter raw gradients (gradient; NaturalGradientAffine then trains as plain "
               "SGD) "
               "or each minibatch's preconditioned step (step)");
        OPTION("gaf-scale", OPT_STRING, &c->gaf_scale,
               "GAF: size of an applied update: accepted (number agreed x lr x fusion: tau >= 2 "
               "and "
               "mean fusion = SGD on the union) or one (lr x fusion, the reference's step_GAF)");
    }
    if (groups & TRAIN_CLI_PROXIMAL) {
        OPTION("proximal-model", OPT_STRING, &c->proximal,
               "Reference model for the proximal/elastic pull x <- x - c (x - ref) after each "
               "update");
        OPTION("proximal-coupling", OPT_FLOAT, &o->proximal_coupling,
               "c of --proximal-model, per update (per outer update with --entropy-inner-steps)");
        OPTION("entropy-inner-steps", OPT_INT, &o->entropy_inner_steps,
               "Entropy-SGD: inner (SGLD) updates per outer update (0: off)");
        OPTION("entropy-coupling", OPT_FLOAT, &o->entropy_coupling,
               "Entropy-SGD: pull y <- y - g (y - x) of the inner iterate toward x per inner "
               "update");
        OPTION("entropy-ema", OPT_FLOAT, &o->entropy_ema,
               "Entropy-SGD: EMA factor of the inner mean");
        OPTION("entropy-noise", OPT_FLOAT, &o->entropy_noise,
               "Entropy-SGD: Langevin noise stddev per parameter per inner update");
        OPTION("entropy-outer-rate", OPT_FLOAT, &o->entropy_outer_rate,
               "Entropy-SGD: outer step x <- x - eta (x - mu) (1: x becomes the inner mean)");
    }
    if (groups & TRAIN_CLI_MOMENTUM) { /* update.h */
        OPTION("momentum", OPT_FLOAT, &o->momentum,
               sync ? "Heavy-ball momentum as Kaldi nnet3 (-1: by mode: 0; parle 0.9, elastic 0.99)"
                    : "Heavy-ball momentum as Kaldi nnet3 (v <- mu v + step, move (1-mu) v; 0: "
                      "off)");
        if (sync)
            OPTION("nesterov", OPT_STRING, &c->nesterov,
                   "true|false|auto: Nesterov's form of --momentum (auto: true in parle and "
                   "elastic)");
        else
            OPTION("nesterov", OPT_BOOL, &o->nesterov, "Nesterov's form of --momentum");
        OPTION("weight-decay", OPT_FLOAT, &o->weight_decay,
               "L2: the step gains -lambda x frames x lr x theta (PyTorch's weight_decay; 0: off)");
    }
    if (groups & TRAIN_CLI_AVERAGE) {
        OPTION("average-period", OPT_INT, &o->average_period,
               "Running average of the model (icefall's model_avg): a snapshot every P minibatches "
               "(0: off)");
        OPTION("average-in", OPT_STRING, &c->average_in,
               "The running average so far (of --average-count snapshots; default: none yet)");
        OPTION("average-count", OPT_INT, &c->average_count, "Snapshots in --average-in");
        OPTION("average-out", OPT_STRING, &c->average_out,
               "Write the running average here (with --average-period)");
    }
    ASSERT(n <= TRAIN_CLI_MAX_SPECS);
    return n;
}

int train_cli_check(struct train_cli *c) {
    struct train_options *o = c->o;
    if ((c->groups & TRAIN_CLI_COMMON) && (o->minibatch_size < 1 || o->minibatch_size > (1 << 20)))
        return error_set("--minibatch-size=%d: must be from 1 to %d", o->minibatch_size, 1 << 20);
    if (c->groups & TRAIN_CLI_GAF) {
        if (o->gaf_microbatches < 0 || !(o->gaf_threshold >= 0))
            return error_set("--gaf-microbatches and --gaf-threshold must not be negative");
        if (!strcmp(c->gaf_fusion, "halving")) o->gaf_fusion = GAF_FUSION_HALVING;
        else if (!strcmp(c->gaf_fusion, "mean")) o->gaf_fusion = GAF_FUSION_MEAN;
        else return error_set("--gaf-fusion='%s': expected halving or mean", c->gaf_fusion);
        if (!strcmp(c->gaf_scale, "accepted") || !strcmp(c->gaf_scale, "one"))
            o->gaf_unit_scale = *c->gaf_scale == 'o';
        else return error_set("--gaf-scale='%s': expected accepted or one", c->gaf_scale);
        if (!strcmp(c->gaf_on, "gradient") || !strcmp(c->gaf_on, "step"))
            o->gaf_on_steps = *c->gaf_on == 's';
        else return error_set("--gaf-on='%s': expected gradient or step", c->gaf_on);
    }
    if (c->groups & TRAIN_CLI_PROXIMAL) {
        if (!(o->proximal_coupling >= 0 && o->proximal_coupling <= 1) ||
            !(o->entropy_coupling >= 0 && o->entropy_coupling <= 1) ||
            !(o->entropy_ema >= 0 && o->entropy_ema < 1) || !(o->entropy_noise >= 0) ||
            !(o->entropy_outer_rate >= 0 && o->entropy_outer_rate <= 1) ||
            o->entropy_inner_steps < 0)
            return error_set("couplings and --entropy-outer-rate must lie in [0, 1], "
                             "--entropy-ema in [0, 1), --entropy-noise and --entropy-inner-steps "
                             "must not be negative");
        if (o->proximal_coupling > 0 && !*c->proximal)
            return error_set("--proximal-coupling needs --proximal-model");
    }
    if ((c->groups & TRAIN_CLI_MOMENTUM) && !c->sync &&
        momentum_check(o->momentum, o->nesterov, o->weight_decay))
        return -1;
    if (c->groups & TRAIN_CLI_AVERAGE) {
        if (o->average_period < 0 || c->average_count < 0)
            return error_set("--average-period and --average-count must not be negative");
        if ((o->average_period > 0) != (*c->average_out != 0))
            return error_set("--average-period (> 0) and --average-out go together");
        if ((*c->average_in != 0) != (c->average_count > 0))
            return error_set("--average-in and --average-count (> 0) go together");
    }
    o->srand = (uint64_t)c->srand;
    return 0;
}
