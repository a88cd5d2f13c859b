/* nnet-get-feature-transform: a normalising input transform for FixedAffineComponent. */
#include "io/io.h"
#include "feat/feat.h"

#include <string.h>

static const char *usage =
    "Compute a normalising transform of the input features, written as the (out x in+1) matrix\n"
    "[A | b] that FixedAffineComponent matrix=F reads (y = A x + b), to put in front of a network\n"
    "(steps/get_egs.sh writes <egs-dir>/feature_transform.mat, steps/train.sh adds the line).\n"
    "--type=meanvar (default): per dimension (x - mean) / stddev over all frames; a constant\n"
    "dimension is only centred.  --type=lda: LDA on frames spliced with --left-context /\n"
    "--right-context (as Kaldi nnet2's get_lda.sh), needing per-frame labels: the output\n"
    "dimensions decorrelate the within-class covariance, the most discriminative first, each with\n"
    "unit total variance; its input is the spliced frame, so it goes after a SpliceComponent.\n"
    "Usage:  nnet-get-feature-transform [options] <feats-rspecifier> [<labels-rspecifier>] <matrix-out>\n"
    "e.g.:   nnet-get-feature-transform scp:data/train/feats.scp exp/egs/feature_transform.mat\n"
    "        nnet-get-feature-transform --type=lda --left-context=4 --right-context=4 \\\n"
    "          scp:data/train/feats.scp scp:data/train/labels.scp lda.mat\n";

int main(int argc, char **argv) {
    struct feature_transform_options o;
    feature_transform_options_default(&o);
    const char *type = "meanvar";
    int binary = 1;
    struct option_spec specs[] = {
        {"type", OPT_STRING, &type, "meanvar (per-dimension mean/variance) or lda"},
        {"left-context", OPT_INT, &o.left_context, "LDA: frames of left context spliced"},
        {"right-context", OPT_INT, &o.right_context, "LDA: frames of right context spliced"},
        {"dim", OPT_INT, &o.dim, "LDA: output dimension (0: all)"},
        {"binary", OPT_BOOL, &binary, "Write the matrix in binary mode"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse(&argc, argv, usage, specs, nspecs);
    if (!strcmp(type, "meanvar")) o.type = FEATURE_TRANSFORM_MEANVAR;
    else if (!strcmp(type, "lda")) o.type = FEATURE_TRANSFORM_LDA;
    else die("--type='%s': expected meanvar or lda", type);
    int lda = o.type == FEATURE_TRANSFORM_LDA;
    if (argc != (lda ? 4 : 3)) options_usage_exit(usage, specs, nspecs);
    if (o.left_context < 0 || o.right_context < 0 || o.dim < 0)
        die("--left-context, --right-context and --dim must not be negative");
    if (!lda && (o.left_context || o.right_context || o.dim))
        die("--left-context, --right-context and --dim are for --type=lda");
    struct matrix m = {0};
    long long frames;
    if (feature_transform_estimate(argv[1], lda ? argv[2] : NULL, &o, &m, &frames))
        die("%s", error_get());
    const char *out = argv[lda ? 3 : 2];
    if (io_write_matrix_file(out, binary, &m)) die("cannot write '%s': %s", out, error_get());
    LOG("Wrote a %s transform (%d x %d, input dimension %d) from %lld frames to %s", type, m.rows,
        m.cols, m.cols - 1, frames, out);
    matrix_release(&m);
    return 0;
}
