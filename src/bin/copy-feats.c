/* copy-feats: copy feature matrices, converting format (binary/text, compressed). */
#include "io/io.h"

static const char *usage =
    "Copy features [and possibly change format]\n"
    "Usage: copy-feats [options] <feature-rspecifier> <feature-wspecifier>\n"
    " or:   copy-feats [options] <feats-rxfilename> <feats-wxfilename>\n"
    "e.g.: copy-feats ark:- ark,scp:foo.ark,foo.scp\n"
    " or: copy-feats ark:foo.ark ark,t:txt.ark";

struct copy {
    const char *rspecifier, *wspecifier;
    int compress, method;
    struct compressed_matrix cm;
};

/* Non-finite values are copied as they are, with a warning; --compress: the compressed form. */
static int copy_entry(void *c_, const char *key, void *m, const void **out) {
    struct copy *c = c_;
    long long bad = io_count_nonfinite(m);
    if (bad)
        WARN("'%s': key '%s': %lld NaN or Inf values (copied as they are)", c->rspecifier, key,
             bad);
    if (!c->compress) return 0;
    if (compressed_matrix_compress(&c->cm, m, c->method))
        return error_wrap("cannot write '%s': key '%s': ", c->wspecifier, key);
    *out = &c->cm;
    return 0;
}

int main(int argc, char **argv) {
    int binary = 1, compress = 0, method = CM_METHOD_AUTO;
    const struct option_spec specs[] = {
        {"binary", OPT_BOOL, &binary, "Binary-mode output (not relevant if writing to archive)"},
        {"compress", OPT_BOOL, &compress, "If true, write output in compressed form"},
        {"compression-method", OPT_INT, &method,
         "Compression method if --compress=true: 1 auto, 2 speech-feature (CM), 3 2-byte auto, "
         "4 2-byte signed integer, 5 1-byte auto, 6 1-byte unsigned integer, 7 1-byte 0-1"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 2, 2);
    if (method < CM_METHOD_AUTO || method > CM_METHOD_1BYTE_01) {
        fprintf(stderr, "%s: invalid --compression-method=%d (use 1..7)\n", log_program(), method);
        options_usage_exit(usage, specs, nspecs);
    }
    const char *in_name = argv[1], *out_name = argv[2];

    if (!io_is_table_specifier(in_name)) {
        struct matrix m = {0};
        if (io_read_matrix_file(in_name, &m)) die("cannot read '%s': %s", in_name, error_get());
        struct kout out;
        if (kout_open(&out, out_name)) die("%s", error_get());
        int rc;
        if (compress) {
            struct compressed_matrix cm = {0};
            rc = compressed_matrix_compress(&cm, &m, method) ||
                 holder_compressed_matrix.write(&out, binary, &cm);
            compressed_matrix_release(&cm);
        } else {
            rc = holder_matrix.write(&out, binary, &m);
        }
        matrix_release(&m);
        if (rc) {
            kout_abort(&out);
            die("cannot write '%s': %s", out_name, error_get());
        }
        if (kout_close(&out)) die("cannot write '%s': %s", out_name, error_get());
        LOG("Copied features from %s to %s", in_name, out_name);
        return 0;
    }

    struct copy c = {in_name, out_name, compress, method, {0}};
    struct matrix m = {0};
    long long num_done =
        table_copy(in_name, &holder_matrix, &m, out_name,
                   compress ? &holder_compressed_matrix : &holder_matrix, copy_entry, &c);
    if (num_done < 0) die("%s", error_get());
    matrix_release(&m);
    compressed_matrix_release(&c.cm);
    LOG("Copied %lld feature matrices.", num_done);
    if (!num_done) die("no feature matrices in '%s'", in_name);
    return 0;
}
