/* nnet-combine: trained per-layer combination of the last models (Kaldi nnet-combine-fast). */
#include "train/train.h"

#include <stdlib.h>

static const char *usage =
    "Combine models of the same structure with one weight per (model, updatable component),\n"
    "chosen by L-BFGS to maximise the log-probability of validation examples, starting from the\n"
    "plain average. The result is never worse on those examples than the best input.\n"
    "Usage:  nnet-combine [options] <model1> ... <modelN> <valid-egs-rspecifier> <model-out>\n"
    "e.g.:   nnet-combine 8.mdl 9.mdl 10.mdl ark:combine.egs final.mdl\n";

int main(int argc, char **argv) {
    struct combine_options o;
    combine_options_default(&o);
    int binary = 1, num_threads = 1;
    const char *use_gpu = "no";
    struct option_spec specs[] = {
        {"num-iters", OPT_INT, &o.num_iters, "L-BFGS iterations"},
        {"minibatch-size", OPT_INT, &o.minibatch_size, "Examples per evaluation minibatch"},
        {"max-examples", OPT_INT, &o.max_examples, "Validation examples used at most"},
        {"num-threads", OPT_INT, &num_threads, "BLAS threads"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"use-gpu", OPT_STRING, &use_gpu, "yes|no|optional|wait: run on a GPU (make CUDA=1)"},
    };
    options_parse(&argc, argv, usage, specs, sizeof specs / sizeof specs[0]);
    if (argc < 4) options_usage_exit(usage, specs, sizeof specs / sizeof specs[0]);
    if (o.minibatch_size < 1 || o.max_examples < 1 || o.num_iters < 0)
        die("--minibatch-size and --max-examples must be positive, --num-iters >= 0");
    matrix_set_num_threads(num_threads);
    if (cuda_select_device(use_gpu)) die("%s", error_get());
    int num = argc - 3;
    struct nnet **models = xcalloc(num, sizeof *models);
    for (int i = 0; i < num; i++)
        if (!(models[i] = nnet_read_file(argv[i + 1])))
            die("cannot read model '%s': %s", argv[i + 1], error_get());
    struct nnet *out = combine_models(models, num, argv[argc - 2], &o);
    if (!out) die("%s", error_get());
    if (nnet_write_file(out, argv[argc - 1], binary))
        die("cannot write '%s': %s", argv[argc - 1], error_get());
    for (int i = 0; i < num; i++) nnet_free(models[i]);
    free(models);
    nnet_free(out);
    return 0;
}
