/* compute-cmvn-stats: CMVN statistics per utterance, per speaker, or global (Kaldi featbin). */
#include "feat/feat.h"

static const char *usage =
    "Compute cepstral mean and variance normalization statistics\n"
    "If wspecifier provided: per-utterance by default, or per-speaker if\n"
    "spk2utt option provided; if wxfilename: global\n"
    "Statistics are a 2 x (dim + 1) double matrix: sums, sums of squares, count.\n"
    "Usage: compute-cmvn-stats  [options] <feats-rspecifier> "
    "(<stats-wspecifier>|<stats-wxfilename>)\n"
    "e.g.: compute-cmvn-stats --spk2utt=ark:data/train/spk2utt scp:data/train/feats.scp "
    "ark,scp:cmvn.ark,data/train/cmvn.scp";

int main(int argc, char **argv) {
    const char *spk2utt = "";
    int binary = 1;
    const struct option_spec specs[] = {
        {"spk2utt", OPT_STRING, &spk2utt, "rspecifier for speaker to utterance-list map"},
        {"binary", OPT_BOOL, &binary, "write in binary mode (applies only to global CMN/CVN)"},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 2, 2);
    const char *feats_in = argv[1], *out = argv[2];
    int global = !io_is_table_specifier(out);
    if (global && *spk2utt) die("--spk2utt needs a stats wspecifier, not the file '%s'", out);
    struct table_reader feats;
    struct table_writer writer;
    if (table_reader_open(&feats, feats_in, &holder_matrix)) die("%s", error_get());
    if (!global && table_writer_open(&writer, out, &holder_double_matrix)) die("%s", error_get());
    struct matrix m = {0};
    struct feat_dmatrix stats = {0};
    long long num_done = 0, num_err = 0;
    int rc = 0;
    if (*spk2utt) {
        struct table_reader spk;
        struct token_vec utts = {0};
        if (table_reader_open(&spk, spk2utt, &holder_token_vector)) die("%s", error_get());
        long long num_spk = 0;
        while ((rc = table_reader_next(&spk, &utts)) > 0) {
            feat_dmatrix_release(&stats);
            for (int i = 0; i < utts.n; i++) {
                int got = table_reader_lookup(&feats, utts.v[i], &m);
                if (got < 0) {
                    table_writer_abort(&writer);
                    die("cannot read '%s': %s", feats_in, error_get());
                }
                if (got == 0) {
                    WARN("Did not find features for utterance %s", utts.v[i]);
                    num_err++;
                    continue;
                }
                if (io_check_finite(&m)) die("'%s': key '%s': %s", feats_in, utts.v[i], error_get());
                if (stats.rows && stats.cols != m.cols + 1) {
                    WARN("utterance %s: dimension %d differs from %d", utts.v[i], m.cols,
                         stats.cols - 1);
                    num_err++;
                    continue;
                }
                feat_cmvn_acc(&stats, &m);
                num_done++;
            }
            if (stats.rows == 0) {
                WARN("No stats accumulated for speaker %s", table_reader_key(&spk));
                continue;
            }
            if (table_writer_write(&writer, table_reader_key(&spk), &stats)) {
                table_writer_abort(&writer);
                die("cannot write '%s': %s", out, error_get());
            }
            num_spk++;
        }
        token_vec_release(&utts);
        if (rc < 0 || table_reader_close(&spk)) {
            table_writer_abort(&writer);
            die("cannot read '%s': %s", spk2utt, error_get());
        }
        LOG("Done accumulating CMVN stats for %lld speakers; %lld utterances processed, %lld "
            "with errors.", num_spk, num_done, num_err);
        if (!num_done) die("no utterance of '%s' has features in '%s'", spk2utt, feats_in);
    } else {
        while ((rc = table_reader_next(&feats, &m)) > 0) {
            const char *utt = table_reader_key(&feats);
            if (m.rows == 0) {
                WARN("Empty feature matrix for utterance %s", utt);
                num_err++;
                continue;
            }
            if (io_check_finite(&m)) die("'%s': key '%s': %s", feats_in, utt, error_get());
            if (!global) feat_dmatrix_release(&stats);
            if (stats.rows && stats.cols != m.cols + 1)
                die("utterance %s: feature dimension %d differs from %d", utt, m.cols,
                    stats.cols - 1);
            feat_cmvn_acc(&stats, &m);
            if (!global && table_writer_write(&writer, utt, &stats)) {
                table_writer_abort(&writer);
                die("cannot write '%s': %s", out, error_get());
            }
            num_done++;
        }
        LOG("Done accumulating CMVN stats for %lld utterances; %lld had errors.", num_done,
            num_err);
    }
    matrix_release(&m);
    if (rc < 0 || table_reader_close(&feats)) {
        if (!global) table_writer_abort(&writer);
        die("cannot read '%s': %s", feats_in, error_get());
    }
    if (global) {
        if (!num_done) die("no features in '%s': no global statistics", feats_in);
        struct kout o;
        if (kout_open(&o, out) || holder_double_matrix.write(&o, binary, &stats)) {
            kout_abort(&o);
            die("cannot write '%s': %s", out, error_get());
        }
        if (kout_close(&o)) die("cannot write '%s': %s", out, error_get());
        LOG("Wrote global CMVN stats to %s", out);
    } else if (table_writer_close(&writer)) {
        die("cannot write '%s': %s", out, error_get());
    }
    feat_dmatrix_release(&stats);
    if (!num_done) die("no features in '%s'", feats_in);
    return 0;
}
