#!/usr/bin/env bash
# TWA as the paper uses it (Li et al., ICLR 2023, arXiv 2205.13104): the
# checkpoints of the HEAD stage of a run (iterations --first..--last of $dir, every --every-th),
# combined by TWA with the coefficients fitted on TRAINING examples (TWA-t: a random subset of
# --num-fit examples of the training archives), checked on the validation examples. The claim
# under test is that this reaches the accuracy of training to the end with much less training,
# so compare $out with $dir/final.mdl (steps/report.sh, or the logs written here). With --swa-out
# the plain mean of the same checkpoints (SWA) is written too. The models must still be there:
# run steps/train.sh or train_mpi.sh with --cleanup false.

# Begin configuration section.
cmd=utils/run.pl
first=1
last=            # last iteration of the head stage (default: half of $dir/num_iters)
every=1          # take every n-th checkpoint of first..last
num_fit=10000    # training examples the coefficients are fitted on
twa_epochs=10
twa_learning_rate=0.5
swa_out=         # also write the mean of the same checkpoints here
srand=0
minibatch_size=128  # for a network with BatchNorm: examples per forward when recomputing its statistics
# End configuration section.

echo "$0 $*"
help_message="Usage: $0 [options] <egs-dir> <exp-dir> <model-out>
e.g.: $0 --last 8 exp/nnet/egs exp/nnet exp/nnet/twa_head.mdl
Options:
  --first <n> --last <n>     head-stage iterations (default: 1 .. half of num_iters)
  --every <n>                stride over the checkpoints (default: 1)
  --num-fit <n>              training examples for fitting the coefficients (default: 10000)
  --twa-epochs <n>           passes over them (default: 10)
  --twa-learning-rate <r>    (default: 0.5)
  --swa-out <model>          also write the plain mean of the same checkpoints
  --minibatch-size <n>       BatchNorm networks: examples per forward when their statistics are
                             recomputed from <egs-dir>/train_diagnostic.egs (default: 128)
  --cmd <runner>             (default: utils/run.pl)"
. "$(dirname "$0")/lib/args.sh"
. "$(dirname "$0")/lib/train-common.sh"
args_want $# 3
egs_dir=$1 dir=$2 out=$3
set -o pipefail
for f in $egs_dir/valid_diagnostic.egs $egs_dir/info/num_jobs; do
    [ ! -f $f ] && echo "$0: no such file $f" && exit 1
done
if [ -z "$last" ]; then
    [ -f $dir/num_iters ] || { echo "$0: no $dir/num_iters (give --last)"; exit 1; }
    last=$(( $(cat $dir/num_iters) / 2 ))
fi
if [ $first -lt 0 ] || [ $last -lt $first ] || [ $every -lt 1 ]; then
    echo "$0: bad head stage --first $first --last $last --every $every"; exit 1
fi
models=
n=0
for x in $(seq $first $every $last); do
    [ ! -f $dir/$x.mdl ] && echo "$0: missing $dir/$x.mdl (train with --cleanup false)" && exit 1
    models="$models $dir/$x.mdl"
    n=$((n + 1))
done
[ $n -lt 2 ] && echo "$0: the head stage $first..$last holds $n checkpoint(s); TWA needs 2 or more" && exit 1
mkdir -p $dir/log
ls $egs_dir/egs.*.ark >/dev/null 2>&1 || { echo "$0: no training archives $egs_dir/egs.*.ark"; exit 1; }
echo "$0: TWA-t over $n checkpoints (iterations $first..$last every $every), fitted on $num_fit training examples"
$cmd $dir/log/twa_head.log \
    nnet-combine --method=twa --twa-epochs=$twa_epochs --twa-learning-rate=$twa_learning_rate \
        --max-examples=$num_fit \
        --twa-train-egs="ark:cat $egs_dir/egs.*.ark | nnet-subset-egs --n=$num_fit --srand=$srand ark:- ark:- |" \
        $models ark:$egs_dir/valid_diagnostic.egs $out || exit 1
train_recompute_stats "$cmd" $dir/log/recompute_stats.twa_head.log $egs_dir $minibatch_size $out || exit 1
$cmd $dir/log/compute_prob_valid.twa_head.log nnet-compute-prob $out ark:$egs_dir/valid_diagnostic.egs || exit 1
if [ -n "$swa_out" ]; then
    $cmd $dir/log/swa_head.log nnet-average $models $swa_out || exit 1
    train_recompute_stats "$cmd" $dir/log/recompute_stats.swa_head.log $egs_dir $minibatch_size $swa_out || exit 1
    $cmd $dir/log/compute_prob_valid.swa_head.log nnet-compute-prob $swa_out ark:$egs_dir/valid_diagnostic.egs || exit 1
fi
echo "$0: done; $out$([ -n "$swa_out" ] && echo " and $swa_out")"
