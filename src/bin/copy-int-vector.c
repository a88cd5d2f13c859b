/* copy-int-vector: copy vectors of integers (e.g. alignments), changing binary/text format. */
#include "io/io.h"

static const char *usage =
    "Copy vectors of integers, e.g. alignments (e.g. to change format from binary to text)\n"
    "Usage: copy-int-vector [options] (vector-in-rspecifier|vector-in-rxfilename) "
    "(vector-out-wspecifier|vector-out-wxfilename)\n"
    "e.g.: copy-int-vector --binary=false foo -\n"
    "   copy-int-vector ark:1.ali ark,t:-";

int main(int argc, char **argv) {
    int binary = 1;
    const struct option_spec specs[] = {
        {"binary", OPT_BOOL, &binary, "Write in binary mode (only relevant if output is a wxfilename)"},
    };
    options_parse_args(&argc, argv, usage, specs, 1, 2, 2);
    const char *in_name = argv[1], *out_name = argv[2];
    struct int32_vec v = {0};

    if (!io_is_table_specifier(in_name)) {
        /* A single object file: Kaldi's ReadIntegerVector / WriteIntegerVector form. */
        struct kin in;
        int bin_in;
        if (kin_open(&in, in_name) || io_read_header(&in, &bin_in) ||
            io_read_int32_vector(&in, bin_in, &v) || kin_close(&in))
            die("cannot read '%s': %s", in_name, error_get());
        struct kout out;
        if (kout_open(&out, out_name)) die("%s", error_get());
        if (io_write_header(&out, binary) || io_write_int32_vector(&out, binary, &v)) {
            kout_abort(&out);
            die("cannot write '%s': %s", out_name, error_get());
        }
        if (kout_close(&out)) die("cannot write '%s': %s", out_name, error_get());
        int32_vec_release(&v);
        LOG("Copied vector to %s", out_name);
        return 0;
    }
    long long num_done = table_copy(in_name, &holder_int32_vector, &v, out_name,
                                    &holder_int32_vector, NULL, NULL);
    if (num_done < 0) die("%s", error_get());
    int32_vec_release(&v);
    LOG("Copied %lld vectors of int32.", num_done);
    if (!num_done) die("no vectors in '%s'", in_name);
    return 0;
}
