/* nnet-train: one pass of SGD (NG-SGD in NaturalGradientAffine components) over examples. */
#include "train/train.h"

static const char *usage =
    "Train a neural network with SGD (natural-gradient SGD in NaturalGradientAffine components) on\n"
    "the examples of an archive: the gradient is summed over each minibatch, so learning rates are\n"
    "per sample (as Kaldi). The last line on stderr is log-prob-per-frame=X.\n"
    "--gaf-microbatches=M filters gradients by agreement (GAF): one update per M minibatches\n"
    "at the same parameters. --proximal-model pulls toward a reference (EASGD/Parle);\n"
    "--entropy-inner-steps runs Entropy-SGD's inner loop (Chaudhari et al., ICLR 2017).\n"
    "--momentum/--nesterov/--weight-decay filter every update (GAF's fused one included).\n"
    "--average-period=P --average-out=F writes a running average of the model (icefall's\n"
    "model_avg): the mean of the snapshots after every P-th minibatch, continuing the mean of\n"
    "--average-count snapshots in --average-in when given.\n"
    "Usage:  nnet-train [options] <model-in> <egs-rspecifier> <model-out>\n"
    "e.g.:   nnet-shuffle-egs --srand=1 ark:egs.1.0.ark ark:- | nnet-train 1.mdl ark:- 2.1.mdl\n";

int main(int argc, char **argv) {
    struct train_options o;
    struct train_cli c;
    struct option_spec specs[TRAIN_CLI_MAX_SPECS];
    int num_specs = train_cli_register(&c, &o, TRAIN_CLI_ALL, 0, specs);
    options_parse_args(&argc, argv, usage, specs, num_specs, 3, 3);
    if (train_cli_check(&c)) die("%s", error_get());
    if (matrix_cli_apply(&c.mc)) die("%s", error_get());

    struct nnet *n = nnet_read_file(argv[1]);
    if (!n) die("cannot read model '%s': %s", argv[1], error_get());
    if (c.max_change > 0) nnet_set_max_change(n, c.max_change);
    if (*c.proximal && !(o.proximal_model = nnet_read_file(c.proximal)))
        die("cannot read model '%s': %s", c.proximal, error_get());
    long long avg_count = c.average_count;
    if (o.average_period > 0) { /* the running average so far, or none yet (count 0) */
        o.average_model = *c.average_in ? nnet_read_file(c.average_in) : nnet_copy(n);
        if (!o.average_model) die("cannot read model '%s': %s", c.average_in, error_get());
        o.average_count = &avg_count;
    }
    if (o.momentum > 0 || o.weight_decay > 0)
        LOG("momentum %g%s, weight decay %g", o.momentum, o.nesterov ? " (Nesterov)" : "",
            o.weight_decay);
    struct train_stats st;
    if (train_sgd(n, argv[2], &o, &st)) die("%s", error_get());
    if (st.num_egs == 0) die("no examples in '%s': nothing trained", argv[2]);
    if (nnet_write_file(n, argv[3], c.binary)) die("cannot write '%s': %s", argv[3], error_get());
    if (o.average_period > 0) {
        if (avg_count == 0) die("--average-period=%d: no snapshot in %lld minibatches",
                                o.average_period, st.num_minibatches);
        if (nnet_write_file(o.average_model, c.average_out, c.binary))
            die("cannot write '%s': %s", c.average_out, error_get());
        LOG("Running average of %lld snapshots (every %d minibatches) in '%s'", avg_count,
            o.average_period, c.average_out);
    }
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
    nnet_free(o.average_model);
    return 0;
}
