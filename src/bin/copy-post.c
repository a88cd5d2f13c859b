/* copy-post: copy Kaldi Posterior archives (Kaldi bin/), reading training targets in either
 * form (a Posterior, or an int32 vector of per-frame ids as from ali-to-pdf). */
#include "io/io.h"

static const char *usage =
    "Copy archives of posteriors, e.g. to text form. The input may also hold per-frame integer\n"
    "labels (ali-to-pdf's int32 vectors), told apart per utterance; they are written as\n"
    "posteriors of weight 1 (as ali-to-post).\n"
    "Usage:  copy-post [options] <post-rspecifier> <post-wspecifier>\n"
    "e.g.: copy-post scp:data/train/labels.scp ark,t:-";

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 2, 2);
    struct posterior p = {0};
    long long num_done =
        table_copy(argv[1], &holder_targets, &p, argv[2], &holder_posterior, NULL, NULL);
    if (num_done < 0) die("%s", error_get());
    posterior_release(&p);
    LOG("Done copying %lld posteriors.", num_done);
    if (!num_done) die("no posteriors in '%s'", argv[1]);
    return 0;
}
