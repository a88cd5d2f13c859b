#!/usr/bin/env bash
# How nnet-train's rate depends on where its examples come from, side by side in one run: the
# 784-1024x3-10 ReLU MLP (Affine), mb 512, reading the same examples (a) from a file, (b) through
# `cat` ("ark:cat FILE |", the throughput benchmarks' way), (c) through nnet-copy-egs writing
# its standard output, and (d) through `nnet-shuffle-egs --buffer-size=5000` (steps/train.sh's
# way). Each rate is nnet-train's after its first 10 minibatches (bench/lib.sh steady_rate), the
# median of --repeats rounds with the paths interleaved within a round; "/ file" is the median
# of the within-round ratios. "switches" are nnet-train's context switches, voluntary +
# involuntary (GNU time; its children included), in the last round.
#   bench/pipe-read.sh [--repeats 3] [--threads 2] [--precision bf16] [--passes 8]
# Needs: make. Prints a Markdown table.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
repeats=3 threads=2 precision=bf16 passes=8
while [ $# -gt 0 ]; do
    case $1 in
        --repeats) repeats=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --precision) precision=$2; shift 2 ;;
        --passes) passes=$2; shift 2 ;;
        *) echo "usage: $0 [--repeats N] [--threads T] [--precision fp32|bf16] [--passes P]" >&2
           exit 2 ;;
    esac
done
bench_setup
dims=(784 1024 1024 1024 10)
config AffineComponent "${dims[@]}" > $work/affine.config
nnet-init $work/affine.config $work/affine.mdl 2>/dev/null
make_egs 784 10 12000 $work/data
for ((i = 0; i < passes; i++)); do cat $work/data.egs; done > $work/all.egs

paths=(file cat copy shuffle)
rspec() {
    case $1 in
        file) echo "ark:$work/all.egs" ;;
        cat) echo "ark:cat $work/all.egs |" ;;
        copy) echo "ark:nnet-copy-egs ark:$work/all.egs ark:- 2>/dev/null |" ;;
        shuffle) echo "ark:nnet-shuffle-egs --buffer-size=5000 --srand=1 ark:$work/all.egs ark:- 2>/dev/null |" ;;
    esac
}
declare -A rates=() switches=()
for ((r = 0; r < repeats; r++)); do
    for p in "${paths[@]}"; do
        /usr/bin/time -f '%w %c' -o $work/time nnet-train --minibatch-size=512 \
            --num-threads=$threads --precision=$precision --minibatches-per-phase=10 \
            --max-change=0 $work/affine.mdl "$(rspec $p)" $work/out.mdl 2>$work/log ||
            { echo "$0: nnet-train failed ($p):" >&2; cat $work/log >&2; exit 1; }
        rates[$p]+="$(steady_rate $work/log) "
        switches[$p]=$(awk '{ print $1 + $2 }' $work/time)
    done
done

echo "| source | samples/s | / file | switches |"
echo "|---|---:|---:|---:|"
for p in "${paths[@]}"; do
    echo "| $p | $(median_of_rounds "${rates[$p]}") | $(paired_ratio "${rates[$p]}" "${rates[file]}") | ${switches[$p]} |"
done
echo
echo "nnet-train --precision=$precision --num-threads=$threads, mb 512, 784-1024x3-10 Affine, $((12000 * passes)) examples a run; median of $repeats rounds; $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%F %H:%M UTC')"
