/* ali-to-post: per-frame integer labels -> Kaldi Posterior, weight 1 each (Kaldi bin/). */
#include "io/io.h"

static const char *usage =
    "Convert alignments to posteriors.  This is simply a format change\n"
    "from integer vectors to Posteriors, which are vectors of lists of\n"
    "pairs (int, float) where the float represents the posterior.  The\n"
    "floats would all be 1.0 in this case.\n"
    "Usage:  ali-to-post [options] <alignments-rspecifier> <posteriors-wspecifier>\n"
    "e.g.: ali-to-post ark:1.ali ark:1.post";

static int to_post(void *p, const char *key, void *ali, const void **out) {
    posterior_from_ids(p, ali);
    *out = p;
    return 0;
}

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 2, 2);
    struct int32_vec ali = {0};
    struct posterior p = {0};
    long long num_done = table_copy(argv[1], &holder_int32_vector, &ali, argv[2],
                                    &holder_posterior, to_post, &p);
    if (num_done < 0) die("%s", error_get());
    int32_vec_release(&ali);
    posterior_release(&p);
    LOG("Converted %lld alignments.", num_done);
    if (!num_done) die("no alignments in '%s'", argv[1]);
    return 0;
}
