/* compute-fbank-feats: log mel filterbank features from audio (Kaldi featbin/). */
#include "bin/compute-feats.h"

int main(int argc, char **argv) { return compute_feats_main(argc, argv, FEAT_FBANK); }
