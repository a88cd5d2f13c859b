/* nnet-shuffle-egs: shuffle the order of examples (whole archive, or through a buffer). */
#include "egs/egs.h"

static const char *usage =
    "Copy examples in a random order. With --buffer-size=0 (default) every example is read and\n"
    "the whole archive shuffled; with --buffer-size=B examples stream through B slots (bounded\n"
    "memory, local shuffling). Both are seeded by --srand.\n"
    "--class-balanced=m writes class-balanced blocks of C x m examples (m of each of the C\n"
    "classes, by first label), in groups of --class-balanced-group=n blocks drawn together\n"
    "(distinct examples within a group), as the GAF reference samples its microbatches: train\n"
    "with --minibatch-size=C*m (and --gaf-microbatches=n). Examples recur across groups.\n"
    "\n"
    "Usage:  nnet-shuffle-egs [options] <egs-rspecifier> <egs-wspecifier>\n"
    "e.g.:\n"
    "nnet-shuffle-egs --buffer-size=5000 --srand=3 ark:egs.1.ark ark:- | nnet-train ...\n";

int main(int argc, char **argv) {
    int srand = 0, buffer_size = 0, balanced = 0, group = 1;
    const struct option_spec specs[] = {
        {"srand", OPT_INT, &srand, "Seed for the random number generator"},
        {"buffer-size", OPT_INT, &buffer_size,
         "If > 0, shuffle through a buffer of this many examples instead of the whole input"},
        {"class-balanced", OPT_INT, &balanced,
         "If > 0: blocks of this many examples of every class (GAF's iid microbatches)"},
        {"class-balanced-group", OPT_INT, &group,
         "With --class-balanced: blocks drawn together from distinct examples (GAF's n)"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 2, 2);
    static const struct option_limit limits[] = {{"buffer-size", 0, 1 << 20}};
    options_check_limits(specs, nspecs, limits, 1);
    if (buffer_size < 0) die("--buffer-size must be >= 0");
    if (balanced < 0 || group < 1) die("--class-balanced must be >= 0, --class-balanced-group >= 1");
    if (balanced > 0 && buffer_size > 0) die("--class-balanced reads everything: no --buffer-size");
    if (balanced > 0) {
        struct egs_stats bs;
        if (egs_shuffle_balanced(argv[1], argv[2], balanced, group, (uint64_t)(int64_t)srand, &bs))
            die("%s", error_get());
        LOG("Wrote %lld class-balanced examples (%d per class per block, %d blocks per group) "
            "drawn from %lld", bs.num_written, balanced, group, bs.num_read);
        if (bs.num_written == 0) die("wrote no examples from '%s'", argv[1]);
        return 0;
    }

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
