#!/usr/bin/env bash
# Claim (f), issue 20: TWA's head stage (Li et al., ICLR 2023): the checkpoints of the first part
# of training, combined by TWA with coefficients fitted on TRAINING data (TWA-t,
# steps/twa_head.sh), reach the accuracy of training to the end with much less training. Arms,
# all from the same runs: full training (last model), TWA-t over the checkpoints of the first
# --head-fraction of the iterations, the plain mean of those checkpoints (SWA), and the last
# checkpoint of the head stage (training simply stopped there: what TWA-t must beat). Learning
# rates tuned per arm on validation over --grid.
#   local/claim_f_twa.sh [--limit 12000] [--num-epochs 6] [--head-fraction 0.5]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=6
num_jobs=2
samples_per_iter=1500
head_fraction=0.5
num_fit=5000
twa_epochs=5
minibatch_size=64
seeds="1 2 3"
grid="0.0005 0.001 0.002"
config=conf/nnet_small_sgd.config
dir=exp/claim_f
allow_small_test=
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh

exp_setup
exp_egs $num_jobs $samples_per_iter egs
exp_header "TWA-t head stage (first $head_fraction of training) vs full training vs SWA of the same checkpoints; $num_jobs jobs, $num_epochs epochs"

train_run() {
    exp_train train.sh $1 $2 $3 $num_jobs $dir/egs $config --minibatch-size $minibatch_size \
        --cleanup false
    local n=$(cat $1/num_iters)
    local head=$(exp_head_iters $1 $head_fraction)
    steps/twa_head.sh --first 1 --last $head --num-fit $num_fit --twa-epochs $twa_epochs \
        --srand $3 --minibatch-size $minibatch_size --swa-out $1/swa_head.mdl $dir/egs $1 $1/twa_head.mdl
    echo "$head of $n iterations" > $1/head_iters
    cp $1/$n.mdl $1/last.mdl
    cp $1/$head.mdl $1/head_last.mdl   # training stopped at the end of the head stage
    rm -f $(ls $1/[0-9]*.mdl | grep -v "/$n.mdl")
}
tune_wide "full training (last model)" run "$grid" train_run last.mdl
tune_wide "TWA-t head stage" run "$grid" train_run twa_head.mdl
tune_wide "SWA of the head checkpoints" run "$grid" train_run swa_head.mdl
tune_wide "head stage, its last checkpoint" run "$grid" train_run head_last.mdl
echo "$0: head stage: $(cat $dir/run/lr$tuned_lr.s${seeds%% *}/head_iters)" | tee -a $dir/results.txt
echo "$0: results in $dir/results.txt"
