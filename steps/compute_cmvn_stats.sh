#!/usr/bin/env bash
# steps/compute_cmvn_stats.sh (Kaldi's): per-speaker CMVN statistics of a data directory's features
# (compute-cmvn-stats --spk2utt), written as <cmvn-dir>/cmvn_<name>.{ark,scp} and linked in as
# <data-dir>/cmvn.scp, for apply-cmvn --utt2spk. --fake writes statistics that change nothing.
# Begin configuration section.
fake=false
# End configuration section.
echo "$0 $*"
help_message="Usage: $0 [options] <data-dir> [<log-dir> [<cmvn-dir>]]
e.g.: $0 data/train exp/make_fbank/train fbank
<log-dir> defaults to <data-dir>/log, <cmvn-dir> to <data-dir>/data.
Options:
  --fake <true|false>   statistics of mean 0 and variance 1 per speaker (default: false)"
[ "${1:-}" = --fake ] && [ "${2:-}" != true ] && [ "${2:-}" != false ] && { fake=true; shift; }
. "$(dirname "$0")/lib/args.sh"
args_want $# 1 3
data=$1 logdir=${2:-$1/log} cmvndir=${3:-$1/data}
name=$(basename $data)
for f in $data/feats.scp $data/spk2utt; do [ -f $f ] || { echo "$0: no such file $f"; exit 1; }; done
mkdir -p $logdir $cmvndir || exit 1
cmvndir=$(cd $cmvndir && pwd)
if $fake; then
    dim=$(feat-to-dim --print-args=false scp:$data/feats.scp - 2>/dev/null) || { echo "$0: cannot read $data/feats.scp"; exit 1; }
    # Kaldi's CMVN stats: row 0 = sums then the count, row 1 = sums of squares then 0; a count of
    # 1 with sum 0 and square 1 is mean 0, variance 1.
    awk -v d=$dim '{ printf "%s  [\n ", $1; for (i = 0; i < d; i++) printf " 0"; printf " 1\n ";
                     for (i = 0; i < d; i++) printf " 1"; printf " 0 ]\n" }' $data/spk2utt | \
        copy-feats --print-args=false ark,t:- ark,scp:$cmvndir/cmvn_$name.ark,$cmvndir/cmvn_$name.scp \
            2>$logdir/cmvn_$name.log || { echo "$0: failed (log $logdir/cmvn_$name.log)"; exit 1; }
else
    # Where spk2utt lists the utterances in sorted order (Kaldi's data directories: sorted, each
    # utterance id starting with its speaker's), the features are read forward ("s,cs"), not
    # indexed: memory that does not grow with the corpus. Else they are indexed.
    feats=scp:$data/feats.scp
    LC_ALL=C sort -c $data/feats.scp 2>/dev/null && \
        awk '{ for (i = 2; i <= NF; i++) print $i }' $data/spk2utt | LC_ALL=C sort -c 2>/dev/null && \
        feats=scp,s,cs:$data/feats.scp
    compute-cmvn-stats --spk2utt=ark:$data/spk2utt $feats \
        ark,scp:$cmvndir/cmvn_$name.ark,$cmvndir/cmvn_$name.scp 2>$logdir/cmvn_$name.log || \
        { echo "$0: compute-cmvn-stats failed (log $logdir/cmvn_$name.log)"; exit 1; }
fi
cp $cmvndir/cmvn_$name.scp $data/cmvn.scp || exit 1
echo "$0: Succeeded creating CMVN stats for $name"
