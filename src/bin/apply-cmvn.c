/* apply-cmvn: cepstral mean (and variance) normalization from CMVN statistics (Kaldi featbin). */
#include "feat/feat.h"

#include <string.h>

static const char *usage =
    "Apply cepstral mean and (optionally) variance normalization\n"
    "Per-utterance by default, or per-speaker if utt2spk option provided\n"
    "Usage: apply-cmvn [options] (<cmvn-stats-rspecifier>|<cmvn-stats-rxfilename>) "
    "<feats-rspecifier> <feats-wspecifier>\n"
    "e.g.: apply-cmvn --utt2spk=ark:data/train/utt2spk scp:data/train/cmvn.scp "
    "scp:data/train/feats.scp ark:-";

int main(int argc, char **argv) {
    const char *utt2spk = "";
    int norm_means = 1, norm_vars = 0;
    const struct option_spec specs[] = {
        {"utt2spk", OPT_STRING, &utt2spk,
         "rspecifier for utterance to speaker map (the stats are per speaker)"},
        {"norm-means", OPT_BOOL, &norm_means, "If true, do mean normalization (note: you can't "
         "normalize the variance but not the mean)"},
        {"norm-vars", OPT_BOOL, &norm_vars, "If true, normalize variance to one."},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 3, 3);
    if (norm_vars && !norm_means) die("You cannot normalize the variance but not the mean.");
    const char *stats_in = argv[1], *feats_in = argv[2], *feats_out = argv[3];
    struct token_map spk = {0};
    if (*utt2spk && token_map_read(&spk, utt2spk)) die("%s", error_get());
    int global = !io_is_table_specifier(stats_in);
    struct table_reader stats_table;
    struct feat_dmatrix stats = {0};
    if (global) {
        struct kin in;
        if (kin_open(&in, stats_in) || holder_double_matrix.read(&in, &stats))
            die("cannot read '%s': %s", stats_in, error_get());
        if (kin_close(&in)) die("cannot read '%s': %s", stats_in, error_get());
    } else if (table_reader_open(&stats_table, stats_in, &holder_double_matrix)) {
        die("%s", error_get());
    }
    struct table_reader feats;
    struct table_writer writer;
    if (table_reader_open(&feats, feats_in, &holder_matrix)) die("%s", error_get());
    if (table_writer_open(&writer, feats_out, &holder_matrix)) die("%s", error_get());
    struct matrix m = {0};
    long long num_done = 0, num_err = 0;
    int rc;
    while ((rc = table_reader_next(&feats, &m)) > 0) {
        const char *utt = table_reader_key(&feats);
        if (io_check_finite(&m)) die("'%s': key '%s': %s", feats_in, utt, error_get());
        if (!global) {
            const char *key = *utt2spk ? token_map_find(&spk, utt) : utt;
            int got = key ? table_reader_lookup(&stats_table, key, &stats) : 0;
            if (got < 0) {
                table_writer_abort(&writer);
                die("cannot read '%s': %s", stats_in, error_get());
            }
            if (got == 0) {
                WARN("No normalization statistics available for key %s, producing no output "
                     "for this utterance", utt);
                num_err++;
                continue;
            }
        }
        if (norm_means && feat_cmvn_apply(&stats, norm_vars, &m)) {
            table_writer_abort(&writer);
            die("'%s': key '%s': %s", feats_in, utt, error_get());
        }
        if (table_writer_write(&writer, utt, &m)) {
            table_writer_abort(&writer);
            die("cannot write '%s': %s", feats_out, error_get());
        }
        num_done++;
    }
    matrix_release(&m);
    feat_dmatrix_release(&stats);
    token_map_release(&spk);
    if (rc < 0 || table_reader_close(&feats)) {
        table_writer_abort(&writer);
        die("cannot read '%s': %s", feats_in, error_get());
    }
    if (!global && table_reader_close(&stats_table)) {
        table_writer_abort(&writer);
        die("cannot read '%s': %s", stats_in, error_get());
    }
    if (table_writer_close(&writer)) die("cannot write '%s': %s", feats_out, error_get());
    LOG("Applied cepstral mean %snormalization to %lld utterances, errors on %lld",
        norm_vars ? "and variance " : "", num_done, num_err);
    if (!num_done) die("no feature matrices in '%s'", feats_in);
    return 0;
}
