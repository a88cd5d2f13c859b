/* nnet-average: weighted average of models (the averaging step of parallel training), with the
 * job-level agreement filter, EASGD's elastic centre update and HWA's window. */
#include "train/average.h"

#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Average the parameters of models of the same structure; everything else (learning rates,\n"
    "fixed components) comes from the first model. At most two models are held in memory.\n"
    "--window=W averages only the last W models given (HWA's offline level).\n"
    "--agreement-threshold=T with --previous-model=P leaves out the jobs whose change since P\n"
    "has a cosine distance above T to the consensus (mean) change; other settings come from P.\n"
    "--elastic-alpha=A with --elastic-center=C writes EASGD's centre C + A sum_i (model_i - C).\n"
    "Usage:  nnet-average [options] <model1> <model2> ... <modelN> <model-out>\n"
    "e.g.:   nnet-average 2.1.mdl 2.2.mdl 2.3.mdl 2.mdl\n"
    "        nnet-average --agreement-threshold=1 --previous-model=1.mdl 2.1.mdl 2.2.mdl 2.mdl\n";

int main(int argc, char **argv) {
    const char *weights_str = "", *previous = "", *center = "";
    int binary = 1, window = 0;
    float tau = -1, alpha = 0;
    struct option_spec specs[] = {
        {"weights", OPT_STRING, &weights_str,
         "Colon-separated weights, one per model (renormalised to sum 1; default uniform)"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"window", OPT_INT, &window, "Average only the last W models (0: all)"},
        {"agreement-threshold", OPT_FLOAT, &tau,
         "Job-level agreement: largest cosine distance to the consensus change kept (<0: off)"},
        {"previous-model", OPT_STRING, &previous,
         "The model the jobs started from (for --agreement-threshold)"},
        {"elastic-alpha", OPT_FLOAT, &alpha, "EASGD centre update rate alpha (0: off)"},
        {"elastic-center", OPT_STRING, &center, "The current centre (for --elastic-alpha)"},
    };
    int nspecs = sizeof specs / sizeof specs[0];
    options_parse(&argc, argv, usage, specs, nspecs);
    if (argc < 3) options_usage_exit(usage, specs, nspecs);
    int num = argc - 2;
    const char *const *files = (const char *const *)argv + 1;
    if (window < 0) die("--window must not be negative");
    if (window > 0 && window < num) {
        files += num - window;
        num = window;
    }
    if ((tau >= 0) != (*previous != 0))
        die("--agreement-threshold and --previous-model go together");
    if ((alpha > 0) != (*center != 0)) die("--elastic-alpha and --elastic-center go together");
    if (alpha < 0 || alpha * num > 1) die("--elastic-alpha must lie in [0, 1/num-models]");
    if (tau >= 0 && alpha > 0) die("--agreement-threshold and --elastic-alpha exclude each other");
    float *weights = NULL;
    if (*weights_str) {
        int k = 0;
        if (parse_float_list(weights_str, 0, &weights, &k)) die("--weights: %s", error_get());
        if (k != num) die("--weights='%s': expected %d numbers, got %d", weights_str, num, k);
    }
    if (alpha > 0 && weights) die("--weights does not apply to --elastic-alpha");
    struct nnet *avg;
    int kept = num;
    if (tau >= 0)
        avg = average_model_files_agreement(files, num, weights, previous, tau, &kept);
    else if (alpha > 0)
        avg = average_elastic_center_files(center, files, num, alpha);
    else
        avg = average_model_files(files, num, weights);
    if (!avg) die("%s", error_get());
    if (nnet_write_file(avg, argv[argc - 1], binary))
        die("cannot write '%s': %s", argv[argc - 1], error_get());
    if (tau >= 0)
        LOG("Averaged %d of %d models (job-level agreement, threshold %g) into '%s'", kept, num,
            tau, argv[argc - 1]);
    else if (alpha > 0)
        LOG("Moved the centre '%s' by alpha=%g toward %d models into '%s'", center, alpha, num,
            argv[argc - 1]);
    else
        LOG("Averaged %d models into '%s'", num, argv[argc - 1]);
    nnet_free(avg);
    free(weights);
    return 0;
}
