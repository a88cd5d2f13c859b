/* splice-feats: concatenate each frame with its neighbours (Kaldi featbin/splice-feats). */
#include "feat/feat.h"

static const char *usage =
    "Splice features with left and right context (e.g. prior to LDA)\n"
    "The first and last frames are repeated at the edges.\n"
    "Usage: splice-feats [options] <feature-rspecifier> <feature-wspecifier>\n"
    "e.g.: splice-feats --left-context=4 --right-context=4 scp:feats.scp ark:-";

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
    struct table_reader reader;
    struct table_writer writer;
    if (table_reader_open(&reader, argv[1], &holder_matrix)) die("%s", error_get());
    if (table_writer_open(&writer, argv[2], &holder_matrix)) die("%s", error_get());
    struct matrix in = {0}, out = {0};
    long long num_done = 0;
    int rc;
    while ((rc = table_reader_next(&reader, &in)) > 0) {
        if (io_check_finite(&in))
            die("'%s': key '%s': %s", argv[1], table_reader_key(&reader), error_get());
        feat_splice(&in, left, right, &out);
        if (table_writer_write(&writer, table_reader_key(&reader), &out)) {
            table_writer_abort(&writer);
            die("cannot write '%s': %s", argv[2], error_get());
        }
        num_done++;
    }
    matrix_release(&in);
    matrix_release(&out);
    if (rc < 0 || table_reader_close(&reader)) {
        table_writer_abort(&writer);
        die("cannot read '%s': %s", argv[1], error_get());
    }
    if (table_writer_close(&writer)) die("cannot write '%s': %s", argv[2], error_get());
    LOG("Spliced %lld feature matrices (context -%d..+%d).", num_done, left, right);
    if (!num_done) die("no feature matrices in '%s'", argv[1]);
    return 0;
}
