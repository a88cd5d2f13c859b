/* nnet-combine: trained per-layer combination of the last models (Kaldi nnet-combine-fast). */
#include "models/models.h"

#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Combine models of the same structure with one weight per (model, updatable component),\n"
    "chosen by L-BFGS to maximise the log-probability of validation examples, starting from the\n"
    "plain average. The result is never worse on those examples than the best input.\n"
    "--method=twa trains instead in the span of the models (TWA): an orthonormal basis\n"
    "(Gram-Schmidt in double), start at their mean, projected-gradient ascent on the validation\n"
    "examples (TWA-v) or on --twa-train-egs (TWA-t); never worse than the mean on validation.\n"
    "Usage:  nnet-combine [options] <model1> ... <modelN> <valid-egs-rspecifier> <model-out>\n"
    "e.g.:   nnet-combine 8.mdl 9.mdl 10.mdl ark:combine.egs final.mdl\n";

int main(int argc, char **argv) {
    struct combine_options o;
    combine_options_default(&o);
    struct twa_options t;
    twa_options_default(&t);
    int binary = 1;
    const char *method = "per-layer", *twa_train = "";
    struct matrix_cli mc = MATRIX_CLI_DEFAULTS;
    struct option_spec specs[] = {
        {"num-iters", OPT_INT, &o.num_iters, "L-BFGS iterations"},
        {"minibatch-size", OPT_INT, &o.minibatch_size, "Examples per evaluation minibatch"},
        {"max-examples", OPT_INT, &o.max_examples, "Validation examples used at most"},
        MATRIX_CLI_OPTIONS(mc),
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"method", OPT_STRING, &method, "per-layer (L-BFGS weights) or twa"},
        {"twa-epochs", OPT_INT, &t.num_epochs, "TWA: passes over the fitting examples"},
        {"twa-learning-rate", OPT_FLOAT, &t.learning_rate,
         "TWA: rate on the per-frame log-probability (x0.1 at 50% and 75% of the epochs)"},
        {"twa-momentum", OPT_FLOAT, &t.momentum, "TWA: heavy-ball momentum"},
        {"twa-train-egs", OPT_STRING, &twa_train,
         "TWA: fit on these examples (TWA-t) instead of the validation examples (TWA-v)"},
    };
    options_parse_args(&argc, argv, usage, specs, sizeof specs / sizeof specs[0], 3, -1);
    static const struct option_limit limits[] = {{"minibatch-size", 1, 1 << 20}};
    options_check_limits(specs, sizeof specs / sizeof specs[0], limits, 1);
    if (o.minibatch_size < 1) die("--minibatch-size=%d: must be at least 1", o.minibatch_size);
    if (o.max_examples < 1) die("--max-examples=%d: must be at least 1", o.max_examples);
    if (o.num_iters < 0) die("--num-iters=%d: must not be negative", o.num_iters);
    if (strcmp(method, "per-layer") && strcmp(method, "twa"))
        die("--method='%s': expected per-layer or twa", method);
    if (t.num_epochs < 0) die("--twa-epochs=%d: must not be negative", t.num_epochs);
    if (!(t.learning_rate >= 0))
        die("--twa-learning-rate=%g: must not be negative", t.learning_rate);
    if (!(t.momentum >= 0 && t.momentum < 1)) die("--twa-momentum=%g: must lie in [0, 1)", t.momentum);
    t.minibatch_size = o.minibatch_size < 256 ? o.minibatch_size : 256;
    t.max_examples = o.max_examples;
    if (*twa_train) t.train_rspec = twa_train;
    if (matrix_cli_apply(&mc)) die("%s", error_get());
    struct model_set models;
    if (model_set_read(&models, argv + 1, argc - 3)) die("%s", error_get());
    struct nnet *out = *method == 't' ? twa_combine(&models, argv[argc - 2], &t)
                                      : combine_models(&models, argv[argc - 2], &o);
    if (!out) die("%s", error_get());
    if (nnet_write_file(out, argv[argc - 1], binary))
        die("cannot write '%s': %s", argv[argc - 1], error_get());
    model_set_release(&models);
    nnet_free(out);
    return 0;
}
