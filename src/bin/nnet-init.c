/* nnet-init: build a network from a config file (Kaldi nnet2 syntax, one component per line). */
#include "nnet/nnet.h"

static const char usage_text[] =
    "Initialize a neural network from a config file, one component per line:\n"
    "<Type> key=value ... (Kaldi nnet2 syntax). Types (keys and defaults: docs/COMPONENTS.md):\n"
    "%s"
    "Usage:  nnet-init [options] <config-in> <model-out>\n"
    "e.g.:\n"
    " nnet-init --srand=1 nnet.config 0.raw\n"
    " nnet-init --left-context=5 --right-context=5 tdnn.config 0.raw\n";

int main(int argc, char **argv) {
    int srand_seed = 0, binary = 1, left = -1, right = -1;
    struct option_spec specs[] = {
        {"srand", OPT_INT, &srand_seed, "Seed for the random initialization of the parameters"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"left-context", OPT_INT, &left,
         "The examples' left context (nnet-get-egs): a network reading further is an error "
         "(-1: not checked)"},
        {"right-context", OPT_INT, &right, "The same on the right (-1: not checked)"},
    };
    int num_specs = (int)(sizeof specs / sizeof specs[0]);
    char usage[4096]; /* the types from the component registry */
    snprintf(usage, sizeof usage, usage_text, component_type_names());
    options_parse_args(&argc, argv, usage, specs, num_specs, 2, 2);
    const char *config = argv[1], *model_out = argv[2];

    struct nnet *n = nnet_init_from_config(config, (uint64_t)(uint32_t)srand_seed);
    if (!n) die("%s", error_get());
    if (nnet_check_context(n, left < 0 ? INT32_MAX : left, right < 0 ? INT32_MAX : right))
        die("config '%s': %s", config, error_get());
    if (nnet_write_file(n, model_out, binary)) die("cannot write '%s': %s", model_out, error_get());
    LOG("Initialized network with %d components and %d parameters; wrote it to %s",
        nnet_num_components(n), nnet_num_params(n), model_out);
    nnet_free(n);
    return 0;
}
