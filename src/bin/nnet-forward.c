/* nnet-forward: network outputs for every utterance of a feature archive. */
#include "train/train.h"

static const char *usage =
    "Compute the network's outputs (posteriors) for each utterance of a feature archive; the\n"
    "utterance edges are padded by repeating the first and last frame for the network's context.\n"
    "Usage:  nnet-forward [options] <model-in> <feats-rspecifier> <matrix-wspecifier>\n"
    "e.g.:   nnet-forward --apply-log=true final.mdl scp:data/test/feats.scp ark:post.ark\n";

int main(int argc, char **argv) {
    int apply_log = 0, num_threads = 1;
    const char *use_gpu = "no";
    const char *precision = "fp32";
    struct option_spec specs[] = {
        {"apply-log", OPT_BOOL, &apply_log, "Output log-probabilities instead of probabilities"},
        {"num-threads", OPT_INT, &num_threads, "threads for the matrix work"},
        MATRIX_PRECISION_OPTION(precision),
        {"use-gpu", OPT_STRING, &use_gpu, "yes|no|optional|wait: run on a GPU (make CUDA=1)"},
    };
    options_parse(&argc, argv, usage, specs, sizeof specs / sizeof specs[0]);
    if (argc != 4) options_usage_exit(usage, specs, sizeof specs / sizeof specs[0]);
    matrix_set_num_threads(num_threads);
    if (cuda_select_device(use_gpu)) die("%s", error_get());
    if (matrix_set_precision(precision)) die("%s", error_get());

    struct nnet *n = nnet_read_file(argv[1]);
    if (!n) die("cannot read model '%s': %s", argv[1], error_get());
    struct table_reader reader;
    struct table_writer writer;
    if (table_reader_open(&reader, argv[2], &holder_matrix)) die("%s", error_get());
    if (table_writer_open(&writer, argv[3], &holder_matrix)) die("%s", error_get());
    struct matrix feats = {0}, out = {0};
    matrix_init_on(&out, 0, 0, MATRIX_CPU);
    long long num_done = 0, num_frames = 0;
    int rc;
    while ((rc = table_reader_next(&reader, &feats)) == 1) {
        const char *key = table_reader_key(&reader);
        if (feats.cols != nnet_input_dim(n))
            die("'%s': key '%s': feature dimension %d, the network expects %d", argv[2], key,
                feats.cols, nnet_input_dim(n));
        if (feats.rows == 0) {
            WARN("'%s': key '%s': empty utterance, skipped", argv[2], key);
            continue;
        }
        forward_utterance(n, &feats, apply_log, &out);
        if (table_writer_write(&writer, key, &out)) die("%s", error_get());
        num_done++;
        num_frames += feats.rows;
    }
    if (rc < 0) die("%s", error_get());
    if (table_reader_close(&reader)) die("%s", error_get());
    if (table_writer_close(&writer)) die("%s", error_get());
    LOG("Processed %lld utterances, %lld frames", num_done, num_frames);
    matrix_release(&feats);
    matrix_release(&out);
    nnet_free(n);
    return num_done > 0 ? 0 : 1;
}
