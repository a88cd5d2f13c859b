/* splice-feats: concatenate each frame with its neighbours (Kaldi featbin/splice-feats). */
#include "feat/feat.h"

static const char *usage =
    "Splice features with left and right context (e.g. prior to LDA)\n"
    "The first and last frames are repeated at the edges.\n"
    "Usage: splice-feats [options] <feature-rspecifier> <feature-wspecifier>\n"
    "e.g.: splice-feats --left-context=4 --right-context=4 scp:feats.scp ark:-";

struct splice {
    const char *rspecifier;
    int left, right;
    struct matrix out;
};

static int splice(void *s_, const char *key, void *in, const void **out) {
    struct splice *s = s_;
    if (io_check_finite(in)) return error_wrap("'%s': key '%s': ", s->rspecifier, key);
    feat_splice(in, s->left, s->right, &s->out);
    *out = &s->out;
    return 0;
}

int main(int argc, char **argv) {
    int left = 4, right = 4;
    const struct option_spec specs[] = {
        {"left-context", OPT_INT, &left, "Number of frames of left context"},
        {"right-context", OPT_INT, &right, "Number of frames of right context"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 2, 2);
    if (left < 0 || right < 0 || left > 1000 || right > 1000)
        die("invalid --left-context=%d / --right-context=%d (0..1000)", left, right);
    struct splice s = {argv[1], left, right, {0}};
    struct matrix in = {0};
    long long num_done = table_copy(argv[1], &holder_matrix, &in, argv[2], &holder_matrix, splice,
                                    &s);
    if (num_done < 0) die("%s", error_get());
    matrix_release(&in);
    matrix_release(&s.out);
    LOG("Spliced %lld feature matrices (context -%d..+%d).", num_done, left, right);
    if (!num_done) die("no feature matrices in '%s'", argv[1]);
    return 0;
}
