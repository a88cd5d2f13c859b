#!/usr/bin/env bash
# HWA's offline level over a finished (or running) training directory: the average of the last W
# synchronised (averaged) models $dir/N.mdl, as steps/train.sh --offline-window W does at the end
# (HWA: Gu et al., IEEE TNNLS 2023, arXiv 2304.11519). The models must still be there (train.sh --cleanup keeps
# the last max(max-models-combine, offline-window) and every 10th).

# Begin configuration section.
cmd=utils/run.pl
window=5
last=          # the last iteration to include (default: $dir/num_iters)
egs_dir=       # examples (train_diagnostic.egs) to recompute BatchNorm's statistics from
minibatch_size=128  # examples per forward pass for that (the training minibatch)
# End configuration section.

echo "$0 $*"
help_message="Usage: $0 [options] <exp-dir> <model-out>
e.g.: $0 --window 5 exp/nnet exp/nnet/hwa.mdl
Options:
  --window <W>     models averaged (default: 5)
  --last <n>       last iteration averaged (default: the directory's num_iters)
  --egs-dir <dir>  for a network with BatchNorm: recompute its statistics from <dir>/train_diagnostic.egs
  --minibatch-size <n>  examples per forward pass for that (default: 128; the training minibatch)
  --cmd <runner>   (default: utils/run.pl)"
. "$(dirname "$0")/lib/args.sh"
. "$(dirname "$0")/lib/train-common.sh"
args_want $# 2
dir=$1 out=$2
[ -z "$last" ] && { [ -f $dir/num_iters ] || { echo "$0: no $dir/num_iters"; exit 1; }; last=$(cat $dir/num_iters); }
first=$((last - window + 1))
[ $window -lt 1 ] || [ $first -lt 0 ] && echo "$0: bad window $window for last iteration $last" && exit 1
models=
for x in $(seq $first $last); do
    [ ! -f $dir/$x.mdl ] && echo "$0: missing $dir/$x.mdl" && exit 1
    models="$models $dir/$x.mdl"
done
mkdir -p $dir/log
$cmd $dir/log/hwa.$first-$last.log nnet-average $models $out || exit 1
train_recompute_stats "$cmd" $dir/log/recompute_stats.hwa.$first-$last.log "$egs_dir" $minibatch_size $out || exit 1
echo "$0: averaged iterations $first..$last into $out"
