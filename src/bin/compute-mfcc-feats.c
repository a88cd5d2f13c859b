/* compute-mfcc-feats: MFCC features from audio (Kaldi featbin/). */
#include "feat/feat.h"

static const char *usage =
    "Create MFCC feature files.\n"
    "Usage:  compute-mfcc-feats [options...] <wav-rspecifier> <feature-wspecifier>\n"
    "e.g.: compute-mfcc-feats --dither=0 scp:data/train/wav.scp ark,scp:mfcc.ark,mfcc.scp\n"
    "Utterances that cannot be read or are too short are skipped with a warning; the exit status\n"
    "is 1 when none was processed.";

int main(int argc, char **argv) {
    struct feat_opts o;
    feat_opts_default(&o, FEAT_MFCC);
    struct feat_table_opts t = {.channel = -1};
    struct option_spec specs[FEAT_MAX_SPECS + 8];
    int n = feat_opts_specs(&o, specs);
    specs[n++] = (struct option_spec){"channel", OPT_INT, &t.channel,
                                      "Channel to extract (-1 -> expect mono, 0 -> left, "
                                      "1 -> right)"};
    specs[n++] = (struct option_spec){"subtract-mean", OPT_BOOL, &t.subtract_mean,
                                      "Subtract mean of each feature file [CMS; not recommended to "
                                      "do it this way.]"};
    specs[n++] = (struct option_spec){"min-duration", OPT_FLOAT, &t.min_duration,
                                      "Minimum duration of segments to process (in seconds)."};
    specs[n++] = (struct option_spec){"seed", OPT_INT, &t.seed,
                                      "Seed of the dither noise, mixed with each utterance-id (so "
                                      "output does not depend on the order of utterances)"};
    options_parse(&argc, argv, usage, specs, n);
    if (argc != 3) options_usage_exit(usage, specs, n);
    if (feat_opts_check(&o)) die("%s", error_get());
    long long done, total;
    if (feat_compute_table(&o, &t, argv[1], argv[2], &done, &total)) die("%s", error_get());
    LOG(" Done %lld out of %lld utterances.", done, total);
    return done ? 0 : 1;
}
