/* analyze-counts: per-class frame counts of an alignment archive (Kaldi's analyze-counts), the
 * priors nnet-forward --class-frame-counts turns into pseudo-likelihoods. */
#include "decode/decode.h"

static const char *usage =
    "Computes element counts of integer vectors (e.g. the frame counts of each pdf in an\n"
    "alignment), written as a Kaldi vector of dimension --counts-dim (default: the largest\n"
    "label + 1).\n"
    "Usage: analyze-counts [options] <alignments-rspecifier> <counts-wxfilename>\n"
    "e.g.: analyze-counts --binary=false ark:labels.ark counts.vec";

int main(int argc, char **argv) {
    int binary = 1, counts_dim = 0;
    struct option_spec specs[] = {
        {"binary", OPT_BOOL, &binary, "write in binary mode"},
        {"counts-dim", OPT_INT, &counts_dim, "output dimension (0: the largest label + 1)"},
    };
    int ns = sizeof specs / sizeof specs[0];
    options_parse(&argc, argv, usage, specs, ns);
    static const struct option_limit limits[] = {{"counts-dim", 0, 1 << 24}};
    options_check_limits(specs, ns, limits, 1);
    if (argc != 3) options_usage_exit(usage, specs, ns);
    struct table_reader r;
    if (table_reader_open(&r, argv[1], &holder_int32_vector)) die("%s", error_get());
    struct int32_vec ali = {0};
    struct vector counts = {0};
    vector_init_on(&counts, counts_dim > 0 ? counts_dim : 1, MATRIX_CPU);
    long long num_utts = 0, num_frames = 0;
    int rc;
    while ((rc = table_reader_next(&r, &ali)) == 1) {
        if (counts_dim <= 0) /* grow to the largest label seen */
            for (int t = 0; t < ali.dim; t++)
                if (ali.data[t] >= counts.dim && ali.data[t] < (1 << 24)) {
                    struct vector grown = {0};
                    vector_init_on(&grown, ali.data[t] + 1, MATRIX_CPU); /* zeroed */
                    for (int i = 0; i < counts.dim; i++) grown.data[i] = counts.data[i];
                    vector_release(&counts);
                    counts = grown;
                }
        if (decode_counts_add(&counts, &ali))
            die("'%s': key '%s': %s", argv[1], table_reader_key(&r), error_get());
        num_utts++;
        num_frames += ali.dim;
    }
    if (rc < 0 || table_reader_close(&r)) die("%s", error_get());
    if (decode_write_vector_file(argv[2], binary, &counts))
        die("cannot write '%s': %s", argv[2], error_get());
    LOG("Summed %lld int32 vectors to counts, skipped 0 vectors; %lld frames, dimension %d",
        num_utts, num_frames, counts.dim);
    int32_vec_release(&ali);
    vector_release(&counts);
    if (!num_utts) die("no alignments in '%s'", argv[1]);
    return 0;
}
