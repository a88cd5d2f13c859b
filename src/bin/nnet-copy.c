/* nnet-copy: copy a network, optionally setting or scaling learning rates and converting between
 * binary and text. */
#include "nnet/nnet.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Copy a neural network, optionally changing learning rates or the format (binary/text).\n"
    "Usage:  nnet-copy [options] <model-in> <model-out>\n"
    "e.g.:\n"
    " nnet-copy --binary=false 1.mdl 1.txt\n"
    " nnet-copy --learning-rate=0.002 1.mdl 1.new.mdl\n";

int main(int argc, char **argv) {
    int binary = 1;
    float lr = -1, lr_scale = 1;
    const char *lrs = NULL;
    struct option_spec specs[] = {
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"learning-rate", OPT_FLOAT, &lr,
         "If >= 0, set the learning rate of every updatable component to this"},
        {"learning-rates", OPT_STRING, &lrs,
         "Colon-separated learning rates, one per updatable component"},
        {"learning-rate-scale", OPT_FLOAT, &lr_scale,
         "Multiply all learning rates by this (after --learning-rate(s))"},
    };
    int num_specs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, num_specs, 2, 2);
    const char *model_in = argv[1], *model_out = argv[2];
    if (lr >= 0 && lrs) die("give --learning-rate or --learning-rates, not both");
    if (lr_scale < 0) die("--learning-rate-scale must be >= 0, got %g", lr_scale);

    struct nnet *n = nnet_read_file(model_in);
    if (!n) die("cannot read '%s': %s", model_in, error_get());
    if (lr >= 0) nnet_set_learning_rate(n, lr);
    if (lrs) {
        float *v = NULL;
        int num = 0;
        if (parse_float_list(lrs, 0, &v, &num)) die("--learning-rates: %s", error_get());
        if (nnet_set_learning_rates(n, v, num)) die("%s", error_get());
        free(v);
    }
    if (lr_scale != 1) nnet_scale_learning_rates(n, lr_scale);
    if (nnet_write_file(n, model_out, binary)) die("cannot write '%s': %s", model_out, error_get());
    LOG("Copied network with %d components from %s to %s", nnet_num_components(n), model_in,
        model_out);
    nnet_free(n);
    return 0;
}
