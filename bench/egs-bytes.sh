#!/usr/bin/env bash
# bench/egs-bytes.sh: bytes on disk per labelled frame of each example layout, against the
# Kaldi-compressed features (copy-feats --compress: CM, a range per column from percentiles), with
# each layout's worst per-dimension error (RMS error / the dimension's standard deviation, as
# nnet-get-egs measures it) -- issue 27 item 2.
#   bench/egs-bytes.sh [--context 5] <data-dir> [<work-dir>]
# <data-dir> holds feats.scp and labels.scp (e.g. egs/espeak-digits/data/train_cmvn). Layouts:
# one labelled frame per example with +-context (the layout before issue 27; 8bit: Kaldi's CM for
# > 8 rows), and 8 labelled frames sharing their context (Kaldi get_egs2's) as Kaldi writes it
# (--compress=kaldi) and as parnet does (8bit: PQ, the codes coded; 16bit: PQ).
set -e -o pipefail
context=5
[ "$1" = --context ] && { context=$2; shift 2; }
[ $# -lt 1 ] && { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
data=$1
work=${2:-$(mktemp -d)}
mkdir -p $work
frames=$(feat-to-len scp:$data/feats.scp 2>/dev/null)
copy-feats --compress=true scp:$data/feats.scp ark:$work/feats.cm.ark 2>/dev/null
feat=$(stat -c %s $work/feats.cm.ark)
printf "%d labelled frames, %d dims; Kaldi-compressed features %.1f bytes per frame\n" $frames \
    $(feat-to-dim scp:$data/feats.scp - 2>/dev/null) $(echo "$feat / $frames" | bc -l)
echo "| layout | --compress | bytes per labelled frame | x compressed features | worst RMS error / s.d. |"
echo "|---|---|---|---|---|"
for layout in "1 8bit" "8 kaldi" "8 8bit" "8 16bit" "1 kaldi"; do
    set -- $layout
    nnet-get-egs --num-frames=$1 --left-context=$context --right-context=$context --compress=$2 \
        scp:$data/feats.scp scp:$data/labels.scp ark:$work/egs.ark 2>$work/log
    err=$(sed -n 's/.*worst RMS error \([^ ]*\) of a dimension.*/\1/p' $work/log | tail -n 1)
    bytes=$(stat -c %s $work/egs.ark)
    printf "| %d frame%s, +-%d context | %s | %.1f | %.2f | %s |\n" $1 "$([ $1 -gt 1 ] && echo s)" \
        $context $2 $(echo "$bytes / $frames" | bc -l) $(echo "$bytes / $feat" | bc -l) "$err"
done
rm -f $work/egs.ark $work/feats.cm.ark
