/* nnet-train: one pass of SGD (NG-SGD in NaturalGradientAffine components) over examples. */
#include "train/train.h"

static const char *usage =
    "Train a neural network with SGD (natural-gradient SGD in NaturalGradientAffine components) on\n"
    "the examples of an archive: the gradient is summed over each minibatch, so learning rates are\n"
    "per sample (as Kaldi). The last line on stderr is log-prob-per-frame=X.\n"
    "Usage:  nnet-train [options] <model-in> <egs-rspecifier> <model-out>\n"
    "e.g.:   nnet-shuffle-egs --srand=1 ark:egs.1.0.ark ark:- | nnet-train 1.mdl ark:- 2.1.mdl\n";

int main(int argc, char **argv) {
    struct train_options o;
    train_options_default(&o);
    int binary = 1, num_threads = 1, srand_seed = 0;
    float max_change = 0;
    const char *use_gpu = "no";
    struct option_spec specs[] = {
        {"minibatch-size", OPT_INT, &o.minibatch_size, "Examples per minibatch"},
        {"srand", OPT_INT, &srand_seed, "Seed for the random draws of training (Dropout)"},
        {"num-threads", OPT_INT, &num_threads, "BLAS threads"},
        {"minibatches-per-phase", OPT_INT, &o.progress_every,
         "Log progress every this many minibatches (0: never)"},
        {"max-change", OPT_FLOAT, &max_change,
         "Global max-change: largest norm of one minibatch's whole step (0: no limit)"},
        {"binary", OPT_BOOL, &binary, "Write the model in binary mode"},
        {"use-gpu", OPT_STRING, &use_gpu, "yes|no|optional|wait: run on a GPU (make CUDA=1)"},
    };
    options_parse(&argc, argv, usage, specs, sizeof specs / sizeof specs[0]);
    if (argc != 4) options_usage_exit(usage, specs, sizeof specs / sizeof specs[0]);
    if (o.minibatch_size < 1) die("--minibatch-size must be at least 1");
    o.srand = (uint64_t)srand_seed;
    matrix_set_num_threads(num_threads);
    if (cuda_select_device(use_gpu)) die("%s", error_get());

    struct nnet *n = nnet_read_file(argv[1]);
    if (!n) die("cannot read model '%s': %s", argv[1], error_get());
    if (max_change > 0) nnet_set_max_change(n, max_change);
    struct train_stats st;
    if (train_sgd(n, argv[2], &o, &st)) die("%s", error_get());
    if (st.num_egs == 0) die("no examples in '%s': nothing trained", argv[2]);
    if (nnet_write_file(n, argv[3], binary)) die("cannot write '%s': %s", argv[3], error_get());
    LOG("Trained on %lld examples (%lld frames, %lld minibatches, %lld steps skipped) in %.1f s, "
        "%.0f frames/s; accuracy %.4f", st.num_egs, st.num_frames, st.num_minibatches,
        st.num_skipped, st.seconds, st.num_frames / (st.seconds > 0 ? st.seconds : 1),
        st.correct / st.weight);
    LOG("[this line is to be parsed by a script:] log-prob-per-frame=%.6f", st.objf / st.weight);
    nnet_free(n);
    return 0;
}
