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

struct lengths {
    int32_t len; /* of the utterance just read */
    long long total;
};

static int length(void *l_, const char *key, void *m, const void **out) {
    struct lengths *l = l_;
    l->len = ((const struct matrix *)m)->rows;
    l->total += l->len;
    *out = &l->len;
    return 0;
}

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 1, 2);
    const char *in_name = argv[1], *out_name = argc == 3 ? argv[2] : NULL;
    struct matrix m = {0};
    struct lengths l = {0, 0};
    long long n = table_copy(in_name, &holder_matrix, &m, out_name, &holder_int32, length, &l);
    if (n < 0) die("%s", error_get());
    matrix_release(&m);
    if (!out_name) {
        printf("%lld\n", l.total);
        if (fflush(stdout)) die("cannot write to standard output");
    }
    if (!n) die("no feature matrices in '%s'", in_name);
    return 0;
}
