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

struct cmvn {
    const char *feats_in, *stats_in;
    struct table_reader *utt2spk;    /* NULL: the stats are per utterance */
    char *spk;                       /* utt2spk's object (holder_token) */
    struct table_reader *table;      /* NULL: global stats */
    struct feat_dmatrix *stats;
    int norm_means, norm_vars;
    long long num_err;
};

static int normalize(void *c_, const char *utt, void *m, const void **out) {
    struct cmvn *c = c_;
    if (io_check_finite(m)) return error_wrap("'%s': key '%s': ", c->feats_in, utt);
    if (c->table) {
        const char *key = utt;
        if (c->utt2spk) {
            int found = table_reader_lookup(c->utt2spk, utt, &c->spk);
            if (found < 0) return -1;
            key = found ? c->spk : NULL;
        }
        int got = key ? table_reader_lookup(c->table, key, c->stats) : 0;
        if (got < 0) return error_wrap("cannot read '%s': ", c->stats_in);
        if (got == 0) {
            WARN("No normalization statistics available for key %s, producing no output "
                 "for this utterance", utt);
            c->num_err++;
            return 1;
        }
    }
    if (c->norm_means && feat_cmvn_apply(c->stats, c->norm_vars, m))
        return error_wrap("'%s': key '%s': ", c->feats_in, utt);
    return 0;
}

int main(int argc, char **argv) {
    const char *utt2spk = "";
    int norm_means = 1, norm_vars = 0;
    const struct option_spec specs[] = {
        {"utt2spk", OPT_STRING, &utt2spk,
         "rspecifier for utterance to speaker map (the stats are per speaker; ark,s,cs: read "
         "forward, not held, when the features come in sorted order)"},
        {"norm-means", OPT_BOOL, &norm_means, "If true, do mean normalization (note: you can't "
         "normalize the variance but not the mean)"},
        {"norm-vars", OPT_BOOL, &norm_vars, "If true, normalize variance to one."},
    };
    int nspecs = (int)(sizeof specs / sizeof specs[0]);
    options_parse_args(&argc, argv, usage, specs, nspecs, 3, 3);
    if (norm_vars && !norm_means) die("You cannot normalize the variance but not the mean.");
    const char *stats_in = argv[1], *feats_in = argv[2], *feats_out = argv[3];
    struct table_reader spk;
    if (*utt2spk && table_reader_open(&spk, utt2spk, &holder_token)) die("%s", error_get());
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
    struct cmvn c = {feats_in, stats_in, *utt2spk ? &spk : NULL, NULL,
                     global ? NULL : &stats_table, &stats, norm_means, norm_vars, 0};
    struct matrix m = {0};
    long long num_done =
        table_copy(feats_in, &holder_matrix, &m, feats_out, &holder_matrix, normalize, &c);
    if (num_done < 0) die("%s", error_get());
    matrix_release(&m);
    feat_dmatrix_release(&stats);
    holder_token.release(&c.spk);
    if (*utt2spk && table_reader_close(&spk)) die("cannot read '%s': %s", utt2spk, error_get());
    if (!global && table_reader_close(&stats_table))
        die("cannot read '%s': %s", stats_in, error_get());
    LOG("Applied cepstral mean %snormalization to %lld utterances, errors on %lld",
        norm_vars ? "and variance " : "", num_done, c.num_err);
    if (!num_done) die("no feature matrices in '%s'", feats_in);
    return 0;
}
