/* feat-to-dim: print the feature dimension (columns) of the first matrix, or of each. */
#include "io/io.h"

static const char *usage =
    "Reads an archive of features.  If second argument is wxfilename, writes\n"
    "the feature dimension of the first feature file; if second argument is\n"
    "wspecifier, writes an archive of the feature dimension, indexed by utterance id.\n"
    "Usage: feat-to-dim [options] <feat-rspecifier> (<dim-wspecifier>|<dim-wxfilename>)\n"
    "e.g.: feat-to-dim scp:feats.scp -";

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 2, 2);
    const char *in_name = argv[1], *out_name = argv[2];
    struct matrix m = {0};

    if (!io_is_table_specifier(in_name)) {
        if (io_read_matrix_file(in_name, &m)) die("cannot read '%s': %s", in_name, error_get());
        struct kout out;
        if (kout_open(&out, out_name) || kout_printf(&out, "%d\n", m.cols) || kout_close(&out))
            die("cannot write '%s': %s", out_name, error_get());
        matrix_release(&m);
        return 0;
    }
    struct table_reader reader;
    if (table_reader_open(&reader, in_name, &holder_matrix)) die("%s", error_get());
    if (io_is_table_specifier(out_name)) {
        struct table_writer writer;
        if (table_writer_open(&writer, out_name, &holder_int32)) die("%s", error_get());
        long long n = 0;
        int rc;
        while ((rc = table_reader_next(&reader, &m)) > 0) {
            int32_t dim = m.cols;
            if (table_writer_write(&writer, table_reader_key(&reader), &dim)) {
                table_writer_abort(&writer);
                die("cannot write '%s': %s", out_name, error_get());
            }
            n++;
        }
        matrix_release(&m);
        if (rc < 0 || table_reader_close(&reader)) {
            table_writer_abort(&writer);
            die("cannot read '%s': %s", in_name, error_get());
        }
        if (table_writer_close(&writer)) die("cannot write '%s': %s", out_name, error_get());
        if (!n) die("no feature matrices in '%s'", in_name);
        return 0;
    }
    int rc = table_reader_next(&reader, &m);
    if (rc < 0) die("cannot read '%s': %s", in_name, error_get());
    if (rc == 0) die("Could not read any features from '%s' (empty archive?)", in_name);
    struct kout out;
    if (kout_open(&out, out_name) || kout_printf(&out, "%d\n", m.cols) || kout_close(&out))
        die("cannot write '%s': %s", out_name, error_get());
    matrix_release(&m);
    table_reader_close(&reader); /* read only the first entry: a pipe may see SIGPIPE */
    return 0;
}
