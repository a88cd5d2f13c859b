#!/usr/bin/env bash
# Decoding speed of the speech recipe's task: decode-word-loop over the test voices' pseudo-
# likelihoods (egs/espeak-digits, a trained model), pinned to one core, repeated; prints the
# median real-time factor (wall and CPU time) and speed-up over real time. The network's forward
# pass (nnet-forward) is run once beforehand and timed apart, so the figure is the search alone.
#
# Usage: bench/decode-rtf.sh [--repeats N] [<recipe-dir>]    (after egs/espeak-digits/run.sh)
# e.g.:  bench/decode-rtf.sh --repeats 5 egs/espeak-digits
# The figures in docs/BENCHMARKS.md ("Decoding") come from it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$top/bin:$PATH
. "$top/tools/blas-env.sh"
repeats=5
if [ "${1:-}" = --repeats ]; then repeats=$2; shift 2; fi
r=${1:-$top/egs/espeak-digits}
d=$r/exp/nnet
for f in $d/final.mdl $d/pdf_counts.vec $r/data/test_cmvn/feats.scp $r/data/lang/lexicon.txt; do
    [ -f $f ] || { echo "$0: no $f (run egs/espeak-digits/run.sh first)" >&2; exit 1; }
done
as=0.1 wip=0
if [ -f $d/decode_valid/best_wer ]; then   # ... wer_<lmwt>_<penalty>, as Kaldi's local/score.sh
    b=$(awk '{ print $NF }' $d/decode_valid/best_wer); b=${b##*/wer_}
    as=$(awk -v l=${b%_*} 'BEGIN { printf "%g", 1 / l }'); wip=${b##*_}
fi
work=$(mktemp -d)
trap 'rm -rf $work' EXIT
t0=$(date +%s.%N)
taskset -c 0 nnet-forward --apply-log=true --class-frame-counts=$d/pdf_counts.vec $d/final.mdl \
    scp:$r/data/test_cmvn/feats.scp ark:$work/ll.ark 2>$work/fwd.log
t1=$(date +%s.%N)
frames=$(feat-to-len scp:$r/data/test_cmvn/feats.scp 2>/dev/null)
echo "test set: $frames frames ($(echo "$frames / 100" | bc -l | xargs printf %.1f) s of audio)," \
     "$(wc -l < $r/data/test_cmvn/feats.scp) utterances; graph: $(wc -l < $r/data/lang/lexicon.txt) pronunciations"
echo "nnet-forward (1 core): $(echo "$t1 - $t0" | bc -l | xargs printf %.2f) s wall," \
     "$(echo "$frames / 100 / ($t1 - $t0)" | bc -l | xargs printf %.0f)x real time"
for i in $(seq $repeats); do
    taskset -c 0 decode-word-loop --acoustic-scale=$as --word-insertion-penalty=$wip \
        $r/data/lang ark:$work/ll.ark ark:/dev/null 2>&1 | \
        sed -n 's/.*real-time factor \([0-9.e-]*\) (CPU \([0-9.e-]*\)).*/\1 \2/p'
done | sort -g -k2 | awk -v n=$repeats '{w[NR] = $1; c[NR] = $2}
    END { m = int((n + 1) / 2); printf "decode-word-loop (1 core, median of %d): RTF %.5f wall, %.5f CPU = %.0fx real time (CPU)\n", n, w[m], c[m], 1 / c[m] }'
