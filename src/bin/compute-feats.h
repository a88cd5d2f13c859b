/* compute-feats.h: the one main of compute-fbank-feats and compute-mfcc-feats (Kaldi featbin/).
 * The two programs differ only in the feature kind and the words of their usage, so each is a
 * one-line main over this body (an exception to one file per program: two copies of the same
 * main would drift apart). */
#include "feat/feat.h"

#include <stdio.h>

static int compute_feats_main(int argc, char **argv, enum feat_kind kind) {
    static const struct { const char *what, *program, *file; } words[] = {
        [FEAT_FBANK] = {"Mel-filter bank (FBANK)", "compute-fbank-feats", "fbank"},
        [FEAT_MFCC] = {"MFCC", "compute-mfcc-feats", "mfcc"},
    };
    char usage[512];
    snprintf(usage, sizeof usage,
             "Create %s feature files.\n"
             "Usage:  %s [options...] <wav-rspecifier> <feature-wspecifier>\n"
             "e.g.: %s --dither=0 scp:data/train/wav.scp ark,scp:%s.ark,%s.scp\n"
             "Utterances that cannot be read or are too short are skipped with a warning; "
             "the exit status\nis 1 when none was processed.",
             words[kind].what, words[kind].program, words[kind].program, words[kind].file,
             words[kind].file);
    struct feat_opts o;
    feat_opts_default(&o, kind);
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
