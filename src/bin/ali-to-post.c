/* ali-to-post: per-frame integer labels -> Kaldi Posterior, weight 1 each (Kaldi bin/). */
#include "io/io.h"

static const char *usage =
    "Convert alignments to posteriors.  This is simply a format change\n"
    "from integer vectors to Posteriors, which are vectors of lists of\n"
    "pairs (int, float) where the float represents the posterior.  The\n"
    "floats would all be 1.0 in this case.\n"
    "Usage:  ali-to-post [options] <alignments-rspecifier> <posteriors-wspecifier>\n"
    "e.g.: ali-to-post ark:1.ali ark:1.post";

int main(int argc, char **argv) {
    options_parse_args(&argc, argv, usage, NULL, 0, 2, 2);
    struct table_reader reader;
    struct table_writer writer;
    if (table_reader_open(&reader, argv[1], &holder_int32_vector)) die("%s", error_get());
    if (table_writer_open(&writer, argv[2], &holder_posterior)) die("%s", error_get());
    struct int32_vec ali = {0};
    long long num_done = 0;
    int rc;
    while ((rc = table_reader_next(&reader, &ali)) > 0) {
        int T = ali.dim;
        struct posterior p = {T, xmalloc(sizeof(int) * (size_t)(T + 1)),
                              xmalloc(sizeof(int32_t) * (size_t)(T ? T : 1)),
                              xmalloc(sizeof(float) * (size_t)(T ? T : 1))};
        for (int t = 0; t <= T; t++) p.start[t] = t;
        for (int t = 0; t < T; t++) {
            p.index[t] = ali.data[t];
            p.weight[t] = 1.0f;
        }
        int wrc = table_writer_write(&writer, table_reader_key(&reader), &p);
        posterior_release(&p);
        if (wrc) {
            table_writer_abort(&writer);
            die("cannot write '%s': %s", argv[2], error_get());
        }
        num_done++;
    }
    int32_vec_release(&ali);
    if (rc < 0 || table_reader_close(&reader)) {
        table_writer_abort(&writer);
        die("cannot read '%s': %s", argv[1], error_get());
    }
    if (table_writer_close(&writer)) die("cannot write '%s': %s", argv[2], error_get());
    LOG("Converted %lld alignments.", num_done);
    if (!num_done) die("no alignments in '%s'", argv[1]);
    return 0;
}
