#!/usr/bin/env bash
# steps/make_mfcc.sh (Kaldi's): MFCC features of a data directory's wav.scp with
# compute-mfcc-feats in --nj jobs through --cmd, written as Kaldi does (steps/lib/make-feats.sh).
# Begin configuration section.
nj=4
cmd=utils/run.pl
mfcc_config=conf/mfcc.conf   # options for compute-mfcc-feats (none if the file does not exist)
# End configuration section.
echo "$0 $*"
help_message="Usage: $0 [options] <data-dir> [<log-dir> [<mfcc-dir>]]
e.g.: $0 --nj 4 --cmd utils/run.pl data/train exp/make_mfcc/train mfcc
<log-dir> defaults to <data-dir>/log, <mfcc-dir> to <data-dir>/data.
Options:
  --mfcc-config <file>   compute-mfcc-feats options (default: conf/mfcc.conf when it exists)
  --nj <n>                 jobs (default: 4)
  --cmd <runner>           utils/run.pl | utils/queue.pl | utils/slurm.pl (default: utils/run.pl)"
[ -f ./path.sh ] && . ./path.sh
. utils/parse_options.sh || exit 1
if [ $# -lt 1 ] || [ $# -gt 3 ]; then echo "$help_message" 1>&2; exit 1; fi
kind=mfcc prog=compute-mfcc-feats config=$mfcc_config
[ -f "$config" ] || { [ "$config" = conf/mfcc.conf ] && config=; }
. steps/lib/make-feats.sh
make_feats "$@"
