/* nnet-average: weighted average of models (the averaging step of parallel training), with the
 * job-level agreement filter, EASGD's elastic centre update, block momentum (BMUF) and HWA's
 * window: the methods are tables in src/models/average-methods.c. */
#include "models/models.h"

#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Average the parameters of models of the same structure; everything else (learning rates,\n"
    "fixed components) comes from the first model. At most two models are held in memory.\n"
    "--window=W averages only the last W models given (HWA's offline level).\n"
    "--agreement-threshold=T with --previous-model=P leaves out the jobs whose change since P\n"
    "has a cosine distance above T to the consensus (mean) change; other settings come from P.\n"
    "--elastic-alpha=A with --elastic-center=C writes EASGD's centre C + A sum_i (model_i - C).\n"
    "--bmuf with --previous-model=S: block momentum (BMUF; DiLoCo's outer Nesterov) on the\n"
    "average A: m <- eta m + zeta (A - S), read from --block-state-in (absent: zero) and written\n"
    "to --block-state-out; writes the next start model (src/update/update.h has the rule).\n"
    "Two methods' options exclude each other.\n"
    "Usage:  nnet-average [options] <model1> <model2> ... <modelN> <model-out>\n"
    "e.g.:   nnet-average 2.1.mdl 2.2.mdl 2.3.mdl 2.mdl\n"
    "        nnet-average --agreement-threshold=1 --previous-model=1.mdl 2.1.mdl 2.2.mdl 2.mdl\n";

int main(int argc, char **argv) {
    struct average_request r = {.previous = "", .center = "", .tau = -1, .alpha = 0};
    const char *weights_str = "";
    int binary = 1, window = 0;
    struct bmuf_cli bc;
    struct option_spec specs[7 + BMUF_CLI_NUM_SPECS] = {
        {"weights", OPT_STRING, &weights_str,
         "Colon-separated weights, one per model (renormalised to sum 1; default uniform)"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"window", OPT_INT, &window, "Average only the last W models (0: all)"},
        {"agreement-threshold", OPT_FLOAT, &r.tau,
         "Job-level agreement: largest cosine distance to the consensus change kept (<0: off)"},
        {"previous-model", OPT_STRING, &r.previous,
         "The model the jobs started from (for --agreement-threshold and --bmuf)"},
        {"elastic-alpha", OPT_FLOAT, &r.alpha, "EASGD centre update rate alpha (0: off)"},
        {"elastic-center", OPT_STRING, &r.center, "The current centre (for --elastic-alpha)"},
    };
    int nspecs = 7 + bmuf_cli_register(&bc, &r.bmuf, specs + 7);
    options_parse_args(&argc, argv, usage, specs, nspecs, 2, -1);
    if (bmuf_cli_check(&bc)) die("%s", error_get());
    r.bmuf_state_in = bc.state_in;
    r.bmuf_state_out = bc.state_out;
    r.num = argc - 2;
    r.models = (const char *const *)argv + 1;
    if (window < 0) die("--window must not be negative");
    if (window > 0 && window < r.num) {
        r.models += r.num - window;
        r.num = window;
    }
    float *weights = NULL;
    if (*weights_str) {
        int k = 0;
        if (parse_float_list(weights_str, 0, &weights, &k)) die("--weights: %s", error_get());
        if (k != r.num) die("--weights='%s': expected %d numbers, got %d", weights_str, r.num, k);
    }
    r.weights = weights;
    const struct average_method *method = average_method_select(&r);
    if (!method) die("%s", error_get());
    char summary[512];
    struct nnet *avg = method->run(&r, summary, sizeof summary);
    if (!avg) die("%s", error_get());
    if (nnet_write_file(avg, argv[argc - 1], binary))
        die("cannot write '%s': %s", argv[argc - 1], error_get());
    LOG("%s into '%s'", summary, argv[argc - 1]);
    nnet_free(avg);
    free(weights);
    return 0;
}
