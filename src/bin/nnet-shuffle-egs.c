/* nnet-shuffle-egs: shuffle the order of examples (whole archive, or through a buffer). */
#include "egs/egs.h"

static const char *usage =
    "Copy examples in a random order. With --buffer-size=0 (default) every example is read and\n"
    "the whole archive shuffled; with --buffer-size=B examples stream through B slots (bounded\n"
    "memory, local shuffling). Both are seeded by --srand.\n"
    "\n"
    "Usage:  nnet-shuffle-egs [options] <egs-rspecifier> <egs-wspecifier>\n"
    "e.g.:\n"
    "nnet-shuffle-egs --buffer-size=5000 --srand=3 ark:egs.1.ark ark:- | nnet-train ...\n";

int main(int argc, char **argv) {
    log_set_program(argv[0]);
    int srand = 0, buffer_size = 0;
    const struct option_spec specs[] = {
        {"srand", OPT_INT, &srand, "Seed for the random number generator"},
        {"buffer-size", OPT_INT, &buffer_size,
         "If > 0, shuffle through a buffer of this many examples instead of the whole input"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse(&argc, argv, usage, specs, nspecs);
    if (argc != 3) options_usage_exit(usage, specs, nspecs);
    if (buffer_size < 0) die("--buffer-size must be >= 0");

    struct egs_stats st;
    int rc = egs_shuffle(argv[1], argv[2], buffer_size, (uint64_t)(int64_t)srand, &st);
    if (rc) die("%s", error_get());
    if (buffer_size)
        LOG("Shuffled order of %lld neural-network training examples using a buffer (partial "
            "randomization)",
            st.num_written);
    else
        LOG("Shuffled order of %lld neural-network training examples", st.num_written);
    if (st.num_written == 0) die("no examples in '%s'", argv[1]);
    return 0;
}
