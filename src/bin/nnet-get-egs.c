/* nnet-get-egs: features + per-frame labels -> training examples with spliced context. */
#include "egs/egs.h"

static const char *usage =
    "Cut features and per-frame targets into neural-network training examples of --num-frames\n"
    "labelled frames with --left-context / --right-context frames around them (the first/last\n"
    "frame repeated at utterance edges). Targets are, per utterance, either integer labels (an\n"
    "int32 vector, e.g. from ali-to-pdf) or a Kaldi Posterior (per frame a list of (pdf, weight),\n"
    "e.g. from ali-to-post; soft or weighted targets), binary or text, recognised per utterance.\n"
    "Utterances without targets, or whose target count differs from their frame count, are\n"
    "skipped with a warning; a negative label (or one >= --num-pdfs) or a NaN/Inf\n"
    "feature is an error.\n"
    EGS_COMPRESS_HELP "on the first 1000 examples nnet-get-egs falls back\n"
    "to the next finer mode (8bit -> 16bit -> zlib) with a warning.\n"
    "\n"
    "Usage:  nnet-get-egs [options] <feats-rspecifier> <targets-rspecifier> <egs-wspecifier>\n"
    "e.g.:\n"
    "nnet-get-egs --left-context=4 --right-context=4 scp:feats.scp \\\n"
    "  \"ark:gunzip -c ali.1.gz | ali-to-pdf final.mdl ark:- ark:- | ali-to-post ark:- ark:- |\" \\\n"
    "  ark:egs.1.ark\n";

int main(int argc, char **argv) {
    struct egs_get_opts opts = {0, 0, 1, EGS_COMPRESS_8BIT, 0};
    const char *compress = "8bit";
    const struct option_spec specs[] = {
        {"left-context", OPT_INT, &opts.left_context, "Frames of left context"},
        {"right-context", OPT_INT, &opts.right_context, "Frames of right context"},
        {"num-frames", OPT_INT, &opts.num_frames, "Labelled frames per example"},
        {"num-pdfs", OPT_INT, &opts.num_pdfs,
         "Number of classes (the model's output-dim): a label outside [0, num-pdfs) is an error; "
         "0: unknown, only negative labels are rejected (training checks the rest)"},
        {"compress", OPT_STRING, &compress,
         "Input storage: none, 8bit (Kaldi CompressedMatrix), 16bit or zlib"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 3, 3);
    static const struct option_limit limits[] = {
        {"num-frames", 1, 10000}, {"left-context", 0, 1000}, {"right-context", 0, 1000}};
    options_check_limits(specs, nspecs, limits, 3);
    if (opts.left_context < 0) die("--left-context=%d: must not be negative", opts.left_context);
    if (opts.right_context < 0)
        die("--right-context=%d: must not be negative", opts.right_context);
    if (opts.num_frames < 1) die("--num-frames=%d: must be at least 1", opts.num_frames);
    if (opts.num_pdfs < 0) die("--num-pdfs=%d: must not be negative", opts.num_pdfs);
    if (egs_compress_parse(compress, &opts.compress) || opts.compress == EGS_COMPRESS_KEEP) {
        fprintf(stderr, "%s: --compress: %s\n", log_program(),
                opts.compress == EGS_COMPRESS_KEEP ? "use none, 8bit, 16bit or zlib" : error_get());
        options_usage_exit(usage, specs, nspecs);
    }

    struct egs_stats st;
    int rc = egs_get(argv[1], argv[2], argv[3], &opts, &st);
    LOG("Finished generating examples, successfully processed %lld feature files, wrote %lld "
        "examples, %lld files had errors.",
        st.num_read, st.num_written, st.num_skipped);
    if (rc) die("%s", error_get());
    if (st.num_written == 0)
        die("wrote no examples from '%s' with labels '%s' (%lld utterances skipped)", argv[1],
            argv[2], st.num_skipped);
    return 0;
}
