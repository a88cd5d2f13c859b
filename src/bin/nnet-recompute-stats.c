/* nnet-recompute-stats: BatchNorm's stored statistics recomputed from examples (after combining
 * models; train_recompute_stats in src/train/train.h). */
#include "train/train.h"

static const char *usage =
    "Recompute the stored statistics of a model's BatchNorm components from examples: forward\n"
    "passes in training mode (each minibatch normalised with its own statistics, as in training);\n"
    "the stored mean and second moment become those of all the minibatches pooled. Run it after\n"
    "combining models (nnet-average over a window of checkpoints, TWA, nnet-combine): their\n"
    "stored statistics are not those of the combined network's activations. Nothing else changes.\n"
    "Usage:  nnet-recompute-stats [options] <model-in> <egs-rspecifier> <model-out>\n"
    "e.g.:   nnet-recompute-stats avg.mdl ark:train_diagnostic.egs avg.mdl\n";

int main(int argc, char **argv) {
    int minibatch_size = 128, binary = 1, srand_seed = 0;
    struct matrix_cli mc = MATRIX_CLI_DEFAULTS;
    struct option_spec specs[] = {
        {"minibatch-size", OPT_INT, &minibatch_size,
         "Examples per forward pass (the training minibatch size: the statistics of later layers "
         "depend on it)"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"srand", OPT_INT, &srand_seed, "Seed of the components that draw (Dropout masks)"},
        MATRIX_CLI_OPTIONS(mc),
    };
    options_parse_args(&argc, argv, usage, specs, sizeof specs / sizeof specs[0], 3, 3);
    static const struct option_limit limits[] = {{"minibatch-size", 1, 1 << 20}};
    options_check_limits(specs, sizeof specs / sizeof specs[0], limits, 1);
    if (matrix_cli_apply(&mc)) die("%s", error_get());

    struct nnet *n = nnet_read_file(argv[1]);
    if (!n) die("cannot read model '%s': %s", argv[1], error_get());
    nnet_set_seed(n, (uint64_t)srand_seed);
    struct train_stats st;
    if (train_recompute_stats(n, argv[2], minibatch_size, &st))
        die("model '%s': %s", argv[1], error_get());
    if (nnet_write_file(n, argv[3], binary)) die("cannot write '%s': %s", argv[3], error_get());
    LOG("Recomputed the statistics of '%s' from %lld examples (training-mode objective %.6f, "
        "accuracy %.6f); wrote '%s'", argv[1], st.num_egs, st.objf / st.weight,
        st.correct / st.weight, argv[3]);
    nnet_free(n);
    return 0;
}
