#!/usr/bin/env bash
# Best-N checkpoint averaging (ESPnet's average_nbest_models, by validation score): the average of
# the N iteration models of a steps/train.sh (or train_mpi.sh) directory with the best validation
# objective, among those still on disk (train.sh --cleanup keeps every 10th and the last
# --max-models-combine; run it with --cleanup false to choose among all). The objective of $x.mdl
# is the one its log/compute_prob_valid.$x.log holds; 0.mdl (the initial model) is never chosen.
# Ties go to the later iteration. The chosen iterations and objectives are printed.

# Begin configuration section.
cmd=utils/run.pl
num=5        # N
egs_dir=       # examples (train_diagnostic.egs) to recompute BatchNorm's statistics from
minibatch_size=128  # examples per forward pass for that (the training minibatch)
# End configuration section.

echo "$0 $*"
help_message="Usage: $0 [options] <exp-dir> <model-out>
e.g.: $0 --num 5 exp/nnet exp/nnet/final.best.mdl
Options:
  --num <N>       models averaged (default: 5)
  --egs-dir <dir>  for a network with BatchNorm: recompute its statistics from <dir>/train_diagnostic.egs
  --minibatch-size <n>  examples per forward pass for that (default: 128; the training minibatch)
  --cmd <runner>  runner of nnet-average (default: utils/run.pl)"

. "$(dirname "$0")/lib/args.sh"
. "$(dirname "$0")/lib/train-common.sh"
args_want $# 2
dir=$1 out=$2
[[ $num =~ ^[1-9][0-9]*$ ]] || { echo "$0: --num '$num': expected a number >= 1"; exit 1; }
[ -f $dir/num_iters ] || { echo "$0: no $dir/num_iters (not a training directory?)"; exit 1; }

# "objective iteration" for every iteration model with a finite validation objective
list=$(for x in $(seq 1 $(cat $dir/num_iters)); do
    [ -f $dir/$x.mdl ] || continue
    o=$(grep -o 'average probability is [^ ]*' $dir/log/compute_prob_valid.$x.log 2>/dev/null |
        tail -n 1 | awk '{print $4}')
    [[ $o =~ ^-?[0-9.]+([eE][-+]?[0-9]+)?$ ]] && echo "$o $x"
done | sort -k1,1gr -k2,2nr | head -n $num)
have=$(echo -n "$list" | grep -c .)
[ $have -eq 0 ] && { echo "$0: no iteration model in $dir with a validation objective"; exit 1; }
[ $have -lt $num ] && echo "$0: only $have models in $dir have a validation objective: averaging those"
models=$(awk -v d=$dir '{ printf "%s/%s.mdl ", d, $2 }' <<<"$list")
echo "$0: the $have best models by validation objective: $(awk '{ printf "%s (%s) ", $2, $1 }' <<<"$list")"
mkdir -p $dir/log
$cmd $dir/log/average_best.log nnet-average $models $out || exit 1
train_recompute_stats "$cmd" $dir/log/recompute_stats.average_best.log "$egs_dir" $minibatch_size $out || exit 1
echo "$0: wrote $out"
