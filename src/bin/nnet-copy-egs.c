/* nnet-copy-egs: copy examples, split over several outputs, subsample or duplicate. */
#include "egs/egs.h"

#include <stdlib.h>
#include <string.h>

static const char *usage =
    "Copy examples to one or more archives: with several outputs each example goes to the next\n"
    "in turn (round-robin) or, with --random, to a random one. --keep-proportion=p writes each\n"
    "example floor(p) or ceil(p) times, p times on average. --compress re-stores inputs\n"
    "(default: as read, so nothing is decoded or re-quantized). --frame=k|random keeps one\n"
    "labelled frame of each multi-frame example (nnet2's: frame k, or one drawn per example),\n"
    "with the input as stored and its left context moved to that frame; examples without it, or\n"
    "whose frame is padding (no labels), are skipped and counted.\n"
    EGS_COMPRESS_HELP "nnet-copy-egs warns.\n"
    "\n"
    "Usage:  nnet-copy-egs [options] <egs-rspecifier> <egs-wspecifier1> [<egs-wspecifier2> ...]\n"
    "e.g.:\n"
    "nnet-copy-egs ark:train.egs ark,t:text.egs\n"
    "nnet-copy-egs --random --srand=1 ark:all.egs ark:1.egs ark:2.egs\n"
    "nnet-copy-egs --frame=3 ark:egs.1.ark ark:- | nnet-shuffle-egs ...\n";

int main(int argc, char **argv) {
    int random = 0, srand = 0;
    double keep = 1.0;
    const char *compress = "", *frame_opt = "";
    const struct option_spec specs[] = {
        {"random", OPT_BOOL, &random, "Send each example to a random output (else round-robin)"},
        {"srand", OPT_INT, &srand, "Seed for the random number generator"},
        {"keep-proportion", OPT_DOUBLE, &keep,
         "Write each example this many times on average (< 1 subsamples, > 1 duplicates)"},
        {"compress", OPT_STRING, &compress,
         "Re-store inputs: none, 8bit, 16bit, zlib or kaldi (empty or keep: as read)"},
        {"frame", OPT_STRING, &frame_opt,
         "Keep only this labelled frame of each example: an index from 0, or random (empty: all)"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 2, -1);
    if (keep < 0) die("--keep-proportion must be >= 0");
    int how;
    if (egs_compress_parse(compress, &how)) {
        fprintf(stderr, "%s: --compress: %s\n", log_program(), error_get());
        options_usage_exit(usage, specs, nspecs);
    }

    int frame = EGS_FRAME_ALL;
    if (!strcmp(frame_opt, "random")) {
        frame = EGS_FRAME_RANDOM;
    } else if (*frame_opt) {
        char *end;
        long v = strtol(frame_opt, &end, 10);
        if (*end || v < 0 || v > 1000000)
            die("--frame=%s: expected a frame index (0, 1, ...) or random", frame_opt);
        frame = (int)v;
    }

    struct egs_stats st;
    int rc = egs_copy(argv[1], (const char *const *)argv + 2, argc - 2, random,
                      (uint64_t)(int64_t)srand, keep, how, frame, &st);
    if (rc) die("%s", error_get());
    if (st.num_skipped)
        LOG("skipped %lld examples whose frame %s is absent or padding", st.num_skipped, frame_opt);
    LOG("Read %lld neural-network training examples, wrote %lld", st.num_read, st.num_written);
    if (st.num_read == 0) die("no examples in '%s'", argv[1]);
    if (st.num_written == 0) die("wrote no examples from '%s' (--keep-proportion=%g)", argv[1], keep);
    return 0;
}
