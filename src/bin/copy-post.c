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
    struct table_reader reader;
    struct table_writer writer;
    if (table_reader_open(&reader, argv[1], &holder_targets)) die("%s", error_get());
    if (table_writer_open(&writer, argv[2], &holder_posterior)) die("%s", error_get());
    struct posterior p = {0};
    long long num_done = 0;
    int rc;
    while ((rc = table_reader_next(&reader, &p)) > 0) {
        if (table_writer_write(&writer, table_reader_key(&reader), &p)) {
            table_writer_abort(&writer);
            die("cannot write '%s': %s", argv[2], error_get());
        }
        num_done++;
    }
    posterior_release(&p);
    if (rc < 0 || table_reader_close(&reader)) {
        table_writer_abort(&writer);
        die("cannot read '%s': %s", argv[1], error_get());
    }
    if (table_writer_close(&writer)) die("cannot write '%s': %s", argv[2], error_get());
    LOG("Done copying %lld posteriors.", num_done);
    if (!num_done) die("no posteriors in '%s'", argv[1]);
    return 0;
}
