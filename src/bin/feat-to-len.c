/* feat-to-len: number of frames (rows) per utterance, or in total. */
#include "io/io.h"

static const char *usage =
    "Reads an archive of features and writes a corresponding archive\n"
    "that maps utterance-id to utterance length in frames, or (with\n"
    "one argument) print to stdout the total number of frames in the\n"
    "input archive.\n"
    "Usage: feat-to-len [options] <in-rspecifier> [<out-wspecifier>]\n"
    "e.g.: feat-to-len scp:feats.scp ark,t:feats.lengths\n"
    "or: feat-to-len scp:feats.scp";

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 1, 2);
    const char *in_name = argv[1], *out_name = argc == 3 ? argv[2] : NULL;
    struct table_reader reader;
    struct table_writer writer;
    if (table_reader_open(&reader, in_name, &holder_matrix)) die("%s", error_get());
    if (out_name && table_writer_open(&writer, out_name, &holder_int32)) die("%s", error_get());
    struct matrix m = {0};
    long long n = 0, total = 0;
    int rc;
    while ((rc = table_reader_next(&reader, &m)) > 0) {
        int32_t len = m.rows;
        if (out_name && table_writer_write(&writer, table_reader_key(&reader), &len)) {
            table_writer_abort(&writer);
            die("cannot write '%s': %s", out_name, error_get());
        }
        total += len;
        n++;
    }
    matrix_release(&m);
    if (rc < 0 || table_reader_close(&reader)) {
        if (out_name) table_writer_abort(&writer);
        die("cannot read '%s': %s", in_name, error_get());
    }
    if (out_name) {
        if (table_writer_close(&writer)) die("cannot write '%s': %s", out_name, error_get());
    } else {
        printf("%lld\n", total);
        if (fflush(stdout)) die("cannot write to standard output");
    }
    if (!n) die("no feature matrices in '%s'", in_name);
    return 0;
}
