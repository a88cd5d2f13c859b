#!/usr/bin/env bash
# steps/make_fbank.sh (Kaldi's): log-mel filterbank features of a data directory's wav.scp with
# compute-fbank-feats in --nj jobs through --cmd, written as Kaldi does (steps/lib/make-feats.sh).
# Begin configuration section.
nj=4
cmd=utils/run.pl
fbank_config=conf/fbank.conf   # options for compute-fbank-feats (none if the file does not exist)
# End configuration section.
echo "$0 $*"
help_message="Usage: $0 [options] <data-dir> [<log-dir> [<fbank-dir>]]
e.g.: $0 --nj 4 --cmd utils/run.pl data/train exp/make_fbank/train fbank
<log-dir> defaults to <data-dir>/log, <fbank-dir> to <data-dir>/data.
Options:
  --fbank-config <file>   compute-fbank-feats options (default: conf/fbank.conf when it exists)
  --nj <n>                 jobs (default: 4)
  --cmd <runner>           utils/run.pl | utils/queue.pl | utils/slurm.pl (default: utils/run.pl)"
[ -f ./path.sh ] && . ./path.sh
. utils/parse_options.sh || exit 1
if [ $# -lt 1 ] || [ $# -gt 3 ]; then echo "$help_message" 1>&2; exit 1; fi
kind=fbank prog=compute-fbank-feats config=$fbank_config
[ -f "$config" ] || { [ "$config" = conf/fbank.conf ] && config=; }
. steps/lib/make-feats.sh
make_feats "$@"
