/* nnet-subset-egs: a random subset of --n examples (reservoir sampling). */
#include "egs/egs.h"

static const char *usage =
    "Write a random subset of --n examples (all of them if there are fewer), chosen by reservoir\n"
    "sampling in O(n) memory and, with --randomize-order (default), written in a random order.\n"
    "\n"
    "Usage:  nnet-subset-egs [options] <egs-rspecifier> <egs-wspecifier>\n"
    "e.g.:\n"
    "nnet-subset-egs --n=4000 --srand=2 ark:valid_all.egs ark:valid_diagnostic.egs\n";

int main(int argc, char **argv) {
    int n = 1000, srand = 0, randomize = 1;
    const struct option_spec specs[] = {
        {"n", OPT_INT, &n, "Number of examples to keep"},
        {"srand", OPT_INT, &srand, "Seed for the random number generator"},
        {"randomize-order", OPT_BOOL, &randomize, "Write the subset in a random order"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 2, 2);
    /* --n=0 would write an empty archive: "processed nothing" is an error (docs/STYLE.md §9). */
    static const struct option_limit limits[] = {{"n", 1, 1 << 26}};
    options_check_limits(specs, nspecs, limits, 1);

    struct egs_stats st;
    int rc = egs_subset(argv[1], argv[2], n, (uint64_t)(int64_t)srand, randomize, &st);
    if (rc) die("%s", error_get());
    LOG("Selected a subset of %lld out of %lld neural-network training examples", st.num_written,
        st.num_read);
    if (st.num_read == 0) die("no examples in '%s'", argv[1]);
    return 0;
}
