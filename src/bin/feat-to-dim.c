/* feat-to-dim: print the feature dimension (columns) of the first matrix, or of each. */
#include "io/io.h"

static const char *usage =
    "Reads an archive of features.  If second argument is wxfilename, writes\n"
    "the feature dimension of the first feature file; if second argument is\n"
    "wspecifier, writes an archive of the feature dimension, indexed by utterance id.\n"
    "Usage: feat-to-dim [options] <feat-rspecifier> (<dim-wspecifier>|<dim-wxfilename>)\n"
    "e.g.: feat-to-dim scp:feats.scp -";

static int dimension(void *dim, const char *key, void *m, const void **out) {
    *(int32_t *)dim = ((const struct matrix *)m)->cols;
    *out = dim;
    return 0;
}

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
    if (io_is_table_specifier(out_name)) {
        int32_t dim;
        long long n = table_copy(in_name, &holder_matrix, &m, out_name, &holder_int32, dimension,
                                 &dim);
        if (n < 0) die("%s", error_get());
        matrix_release(&m);
        if (!n) die("no feature matrices in '%s'", in_name);
        return 0;
    }
    struct table_reader reader;
    if (table_reader_open(&reader, in_name, &holder_matrix)) die("%s", error_get());
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
