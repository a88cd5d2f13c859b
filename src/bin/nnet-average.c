/* nnet-average: weighted average of models (the averaging step of parallel training). */
#include "train/train.h"

#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Average the parameters of models of the same structure; everything else (learning rates,\n"
    "fixed components) comes from the first model. At most two models are held in memory.\n"
    "Usage:  nnet-average [options] <model1> <model2> ... <modelN> <model-out>\n"
    "e.g.:   nnet-average 2.1.mdl 2.2.mdl 2.3.mdl 2.mdl\n";

int main(int argc, char **argv) {
    const char *weights_str = "";
    int binary = 1;
    struct option_spec specs[] = {
        {"weights", OPT_STRING, &weights_str,
         "Colon-separated weights, one per model (renormalised to sum 1; default uniform)"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
    };
    options_parse(&argc, argv, usage, specs, sizeof specs / sizeof specs[0]);
    if (argc < 3) options_usage_exit(usage, specs, sizeof specs / sizeof specs[0]);
    int num = argc - 2;
    float *weights = NULL;
    if (*weights_str) {
        weights = xmalloc(sizeof(float) * num);
        char *copy = xstrdup(weights_str), *save = NULL, *tok = strtok_r(copy, ":", &save);
        int k = 0;
        for (; tok; tok = strtok_r(NULL, ":", &save), k++)
            if (k >= num || parse_float(tok, &weights[k]) || weights[k] < 0)
                die("--weights='%s': expected %d non-negative numbers", weights_str, num);
        if (k != num) die("--weights='%s': expected %d numbers, got %d", weights_str, num, k);
        free(copy);
    }
    struct nnet *avg = average_model_files((const char *const *)argv + 1, num, weights);
    if (!avg) die("%s", error_get());
    if (nnet_write_file(avg, argv[argc - 1], binary))
        die("cannot write '%s': %s", argv[argc - 1], error_get());
    LOG("Averaged %d models into '%s'", num, argv[argc - 1]);
    nnet_free(avg);
    free(weights);
    return 0;
}
