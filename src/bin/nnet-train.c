/* nnet-train: one pass of SGD (NG-SGD in NaturalGradientAffine components) over examples. */
#include "train/momentum.h"
#include "train/train.h"

#include <string.h>

static const char *usage =
    "Train a neural network with SGD (natural-gradient SGD in NaturalGradientAffine components) on\n"
    "the examples of an archive: the gradient is summed over each minibatch, so learning rates are\n"
    "per sample (as Kaldi). The last line on stderr is log-prob-per-frame=X.\n"
    "--gaf-microbatches=M filters gradients by agreement (GAF): one update per M minibatches\n"
    "at the same parameters. --proximal-model pulls toward a reference (EASGD/Parle);\n"
    "--entropy-inner-steps runs Entropy-SGD's inner loop (Chaudhari et al., ICLR 2017).\n"
    "--momentum/--nesterov/--weight-decay filter every update (GAF's fused one included).\n"
    "Usage:  nnet-train [options] <model-in> <egs-rspecifier> <model-out>\n"
    "e.g.:   nnet-shuffle-egs --srand=1 ark:egs.1.0.ark ark:- | nnet-train 1.mdl ark:- 2.1.mdl\n";

int main(int argc, char **argv) {
    struct train_options o;
    train_options_default(&o);
    int binary = 1, num_threads = 1, srand_seed = 0;
    float max_change = NNET_DEFAULT_MAX_CHANGE_GLOBAL;
    const char *fusion = "halving", *gaf_on = "gradient", *proximal = "";
    const char *use_gpu = "no";
    const char *gaf_scale = "accepted";
    const char *precision = "fp32";
    struct option_spec specs[] = {
        {"minibatch-size", OPT_INT, &o.minibatch_size, "Examples per minibatch"},
        {"srand", OPT_INT, &srand_seed, "Seed for the random draws of training (Dropout)"},
        {"num-threads", OPT_INT, &num_threads, "threads for the matrix work"},
        MATRIX_PRECISION_OPTION(precision),
        {"minibatches-per-phase", OPT_INT, &o.progress_every,
         "Log progress every this many minibatches (0: never)"},
        {"max-change", OPT_FLOAT, &max_change,
         "Global max-change: largest norm of one minibatch's whole step (Kaldi's 2.0; 0: no limit)"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"gaf-microbatches", OPT_INT, &o.gaf_microbatches,
         "GAF: minibatches per update, filtered by agreement (0 or 1: off)"},
        {"gaf-threshold", OPT_FLOAT, &o.gaf_threshold,
         "GAF: largest cosine distance 1-cos accepted (0.97: cos >= 0.03; >= 2 accepts all)"},
        {"gaf-fusion", OPT_STRING, &fusion,
         "GAF: halving (G=(G+g)/2, the reference code) or mean (uniform mean of the accepted)"},
        {"gaf-on", OPT_STRING, &gaf_on,
         "GAF: filter raw gradients (gradient; NaturalGradientAffine then trains as plain SGD) or "
         "each minibatch's preconditioned step (step)"},
        {"gaf-scale", OPT_STRING, &gaf_scale,
         "GAF: size of an applied update: accepted (number agreed x lr x fusion: tau >= 2 and "
         "mean fusion = SGD on the union) or one (lr x fusion, the reference's step_GAF)"},
        {"proximal-model", OPT_STRING, &proximal,
         "Reference model for the proximal/elastic pull x <- x - c (x - ref) after each update"},
        {"proximal-coupling", OPT_FLOAT, &o.proximal_coupling,
         "c of --proximal-model, per update (per outer update with --entropy-inner-steps)"},
        {"entropy-inner-steps", OPT_INT, &o.entropy_inner_steps,
         "Entropy-SGD: inner (SGLD) updates per outer update (0: off)"},
        {"entropy-coupling", OPT_FLOAT, &o.entropy_coupling,
         "Entropy-SGD: pull y <- y - g (y - x) of the inner iterate toward x per inner update"},
        {"entropy-ema", OPT_FLOAT, &o.entropy_ema, "Entropy-SGD: EMA factor of the inner mean"},
        {"entropy-noise", OPT_FLOAT, &o.entropy_noise,
         "Entropy-SGD: Langevin noise stddev per parameter per inner update"},
        {"entropy-outer-rate", OPT_FLOAT, &o.entropy_outer_rate,
         "Entropy-SGD: outer step x <- x - eta (x - mu) (1: x becomes the inner mean)"},
        {"use-gpu", OPT_STRING, &use_gpu, "yes|no|optional|wait: run on a GPU (make CUDA=1)"},
        /* momentum and weight decay (momentum.h) */
        {"momentum", OPT_FLOAT, &o.momentum,
         "Heavy-ball momentum as Kaldi nnet3 (v <- mu v + step, move (1-mu) v; 0: off)"},
        {"nesterov", OPT_BOOL, &o.nesterov, "Nesterov's form of --momentum"},
        {"weight-decay", OPT_FLOAT, &o.weight_decay,
         "L2: the step gains -lambda x frames x lr x theta (PyTorch's weight_decay; 0: off)"},
    };
    options_parse(&argc, argv, usage, specs, sizeof specs / sizeof specs[0]);
    if (argc != 4) options_usage_exit(usage, specs, sizeof specs / sizeof specs[0]);
    if (o.minibatch_size < 1) die("--minibatch-size must be at least 1");
    if (o.gaf_microbatches < 0 || !(o.gaf_threshold >= 0))
        die("--gaf-microbatches and --gaf-threshold must not be negative");
    if (!strcmp(fusion, "halving")) o.gaf_fusion = GAF_FUSION_HALVING;
    else if (!strcmp(fusion, "mean")) o.gaf_fusion = GAF_FUSION_MEAN;
    else die("--gaf-fusion='%s': expected halving or mean", fusion);
    if (!strcmp(gaf_scale, "accepted") || !strcmp(gaf_scale, "one"))
        o.gaf_unit_scale = *gaf_scale == 'o';
    else die("--gaf-scale='%s': expected accepted or one", gaf_scale);
    if (!strcmp(gaf_on, "gradient") || !strcmp(gaf_on, "step")) o.gaf_on_steps = *gaf_on == 's';
    else die("--gaf-on='%s': expected gradient or step", gaf_on);
    if (!(o.proximal_coupling >= 0 && o.proximal_coupling <= 1) ||
        !(o.entropy_coupling >= 0 && o.entropy_coupling <= 1) ||
        !(o.entropy_ema >= 0 && o.entropy_ema < 1) || !(o.entropy_noise >= 0) ||
        !(o.entropy_outer_rate >= 0 && o.entropy_outer_rate <= 1) || o.entropy_inner_steps < 0)
        die("couplings and --entropy-outer-rate must lie in [0, 1], --entropy-ema in [0, 1), "
            "--entropy-noise and --entropy-inner-steps must not be negative");
    if (o.proximal_coupling > 0 && !*proximal) die("--proximal-coupling needs --proximal-model");
    if (momentum_check(o.momentum, o.nesterov, o.weight_decay)) die("%s", error_get());
    o.srand = (uint64_t)srand_seed;
    matrix_set_num_threads(num_threads);
    if (matrix_select_device(use_gpu)) die("%s", error_get());
    if (matrix_set_precision(precision)) die("%s", error_get());

    struct nnet *n = nnet_read_file(argv[1]);
    if (!n) die("cannot read model '%s': %s", argv[1], error_get());
    if (max_change > 0) nnet_set_max_change(n, max_change);
    if (*proximal && !(o.proximal_model = nnet_read_file(proximal)))
        die("cannot read model '%s': %s", proximal, error_get());
    if (o.momentum > 0 || o.weight_decay > 0)
        LOG("momentum %g%s, weight decay %g", o.momentum, o.nesterov ? " (Nesterov)" : "",
            o.weight_decay);
    struct train_stats st;
    if (train_sgd(n, argv[2], &o, &st)) die("%s", error_get());
    if (st.num_egs == 0) die("no examples in '%s': nothing trained", argv[2]);
    if (nnet_write_file(n, argv[3], binary)) die("cannot write '%s': %s", argv[3], error_get());
    LOG("Trained on %lld examples (%lld frames, %lld minibatches, %lld steps skipped) in %.1f s, "
        "%.0f frames/s; accuracy %.4f", st.num_egs, st.num_frames, st.num_minibatches,
        st.num_skipped, st.seconds, st.num_frames / (st.seconds > 0 ? st.seconds : 1),
        st.correct / st.weight);
    if (o.gaf_microbatches >= 2)
        LOG("GAF: %lld steps, %lld skipped (nothing agreed), %lld updates; accept rate %.4f "
            "(%lld of %lld microbatches after the first of each step)", st.gaf_steps,
            st.gaf_skipped, st.num_updates,
            st.gaf_offered ? (double)st.gaf_accepted / st.gaf_offered : 0.0, st.gaf_accepted,
            st.gaf_offered);
    if (o.entropy_inner_steps > 0) LOG("Entropy-SGD: %lld outer updates", st.outer_steps);
    nnet_log_max_change_stats(n);
    LOG("[this line is to be parsed by a script:] log-prob-per-frame=%.6f", st.objf / st.weight);
    nnet_free(n);
    nnet_free(o.proximal_model);
    return 0;
}
