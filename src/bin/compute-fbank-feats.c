/* compute-fbank-feats: log mel filterbank features from audio (Kaldi featbin/). */
#include "feat/feat.h"

static const char *usage =
    "Create Mel-filter bank (FBANK) feature files.\n"
    "Usage:  compute-fbank-feats [options...] <wav-rspecifier> <feature-wspecifier>\n"
    "e.g.: compute-fbank-feats --dither=0 scp:data/train/wav.scp ark,scp:fbank.ark,fbank.scp\n"
    "Utterances that cannot be read or are too short are skipped with a warning; the exit status\n"
    "is 1 when none was processed.";

int main(int argc, char **argv) {
    struct feat_opts o;
    feat_opts_default(&o, FEAT_FBANK);
    struct feat_table_opts t = {.channel = -1};
    struct option_spec specs[FEAT_MAX_SPECS + FEAT_TABLE_SPECS];
    int n = feat_opts_specs(&o, specs);
    n += feat_table_opts_specs(&t, specs + n);
    options_parse_args(&argc, argv, usage, specs, n, 2, 2);
    if (feat_opts_check(&o)) die("%s", error_get());
    long long done, total;
    if (feat_compute_table(&o, &t, argv[1], argv[2], &done, &total)) die("%s", error_get());
    LOG(" Done %lld out of %lld utterances.", done, total);
    if (!done) die("no utterance of '%s' could be processed", argv[1]);
    return 0;
}
