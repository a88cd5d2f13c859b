/* nnet-forward: network outputs for every utterance of a feature archive. */
#include "decode/decode.h"
#include "train/train.h"

static const char *usage =
    "Compute the network's outputs (posteriors) for each utterance of a feature archive; the\n"
    "utterance edges are padded by repeating the first and last frame for the network's context.\n"
    "With --class-frame-counts (a Kaldi vector of per-class frame counts, from analyze-counts),\n"
    "writes pseudo-log-likelihoods log p(s|x) - prior-scale * log p(s) for a decoder (as Kaldi\n"
    "nnet1's nnet-forward); classes with a prior below --prior-floor are made hopeless.\n"
    "Usage:  nnet-forward [options] <model-in> <feats-rspecifier> <matrix-wspecifier>\n"
    "e.g.:   nnet-forward --apply-log=true final.mdl scp:data/test/feats.scp ark:post.ark\n"
    "e.g.:   nnet-forward --apply-log=true --class-frame-counts=counts.vec final.mdl \\\n"
    "          scp:data/test/feats.scp ark:loglikes.ark\n";

int main(int argc, char **argv) {
    int apply_log = 0;
    const char *class_frame_counts = "";
    float prior_scale = 1.0f, prior_floor = 1e-10f;
    struct matrix_cli mc = MATRIX_CLI_DEFAULTS;
    struct option_spec specs[] = {
        {"class-frame-counts", OPT_STRING, &class_frame_counts,
         "Kaldi vector of class frame counts: output log(post) - log(prior) (needs --apply-log)"},
        {"prior-scale", OPT_FLOAT, &prior_scale, "scale of the log-priors subtracted"},
        {"prior-floor", OPT_FLOAT, &prior_floor, "classes with a prior below this are hopeless"},
        {"apply-log", OPT_BOOL, &apply_log, "Output log-probabilities instead of probabilities"},
        MATRIX_CLI_OPTIONS(mc),
    };
    options_parse_args(&argc, argv, usage, specs, sizeof specs / sizeof specs[0], 3, 3);
    if (matrix_cli_apply(&mc)) die("%s", error_get());
    struct vector log_priors = {0};
    if (*class_frame_counts) {
        if (!apply_log) die("--class-frame-counts needs --apply-log=true");
        struct vector counts = {0};
        int floored;
        if (io_read_object(class_frame_counts, &holder_vector, &counts) ||
            decode_priors_from_counts(&counts, prior_floor, &log_priors, &floored))
            die("cannot read priors from '%s': %s", class_frame_counts, error_get());
        vector_release(&counts);
        if (floored) WARN("%d of %d classes have a prior below %g", floored, log_priors.dim,
                          prior_floor);
    }

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
        if (io_check_finite(&feats)) die("'%s': key '%s': %s", argv[2], key, error_get());
        if (feats.rows == 0) {
            WARN("'%s': key '%s': empty utterance, skipped", argv[2], key);
            continue;
        }
        train_forward_utterance(n, &feats, apply_log, &out);
        if (io_check_finite(&out))
            die("'%s': key '%s': the output of model '%s' is not finite: %s", argv[2], key,
                argv[1], error_get());
        if (log_priors.dim && decode_subtract_log_priors(&out, &log_priors, prior_scale))
            die("'%s': %s", class_frame_counts, error_get());
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
    vector_release(&log_priors);
    nnet_free(n);
    if (!num_done) die("no non-empty utterances in '%s'", argv[2]);
    return 0;
}
