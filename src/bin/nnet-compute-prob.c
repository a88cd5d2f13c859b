/* nnet-compute-prob: average log-probability and accuracy of a model on examples. */
#include "train/train.h"

#include <math.h>

static const char *usage =
    "Compute the average log-probability and accuracy of a model on the examples of an archive.\n"
    "Prints the average log-probability per frame on stdout.\n"
    "Usage:  nnet-compute-prob [options] <model-in> <egs-rspecifier>\n"
    "e.g.:   nnet-compute-prob final.mdl ark:valid_diagnostic.egs\n";

int main(int argc, char **argv) {
    int minibatch_size = 1000;
    struct matrix_cli mc = MATRIX_CLI_DEFAULTS;
    struct option_spec specs[] = {
        {"minibatch-size", OPT_INT, &minibatch_size, "Examples evaluated at a time"},
        MATRIX_CLI_OPTIONS(mc),
    };
    options_parse_args(&argc, argv, usage, specs, sizeof specs / sizeof specs[0], 2, 2);
    static const struct option_limit limits[] = {{"minibatch-size", 1, 1 << 20}};
    options_check_limits(specs, sizeof specs / sizeof specs[0], limits, 1);
    if (minibatch_size < 1) die("--minibatch-size must be at least 1");
    if (matrix_cli_apply(&mc)) die("%s", error_get());

    struct nnet *n = nnet_read_file(argv[1]);
    if (!n) die("cannot read model '%s': %s", argv[1], error_get());
    struct train_stats st;
    if (train_eval_prob(n, argv[2], minibatch_size, &st)) die("%s", error_get());
    if (st.num_egs == 0 || !(st.weight > 0)) die("no labelled examples in '%s'", argv[2]);
    if (!isfinite(st.objf))
        die("'%s' with model '%s': the objective is not finite (%g)", argv[2], argv[1], st.objf);
    LOG("Saw %lld examples, average probability is %.6f and accuracy is %.6f with total weight %g",
        st.num_egs, st.objf / st.weight, st.correct / st.weight, st.weight);
    printf("%.6f\n", st.objf / st.weight);
    nnet_free(n);
    return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
