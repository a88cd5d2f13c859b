#!/usr/bin/env bash
# Claim (e), issue 20: HWA (hierarchical weight averaging) needs no learning-rate schedule: at a
# CONSTANT rate, the window average of the last W synchronised models matches or beats a run
# with a decaying rate. Arms: HWA at a constant rate (steps/train.sh, N jobs averaged every
# iteration = the online level; the offline level averages the last --window models), the same
# runs' last model (no window), and a decaying-rate run (initial -> initial/10) scored on its last
# model. Learning rates tuned per arm on validation over --grid.
#   local/claim_e_hwa.sh [--limit 12000] [--num-epochs 4] [--num-jobs 2] [--window 5]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=4
num_jobs=2
samples_per_iter=1500    # iterations per epoch = examples per job / this (the window counts these)
window=5
minibatch_size=64
seeds="1 2 3"
grid="0.0005 0.001 0.002"
config=conf/nnet_small_sgd.config
dir=exp/claim_e
allow_small_test=
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh

exp_setup
exp_egs $num_jobs $samples_per_iter egs
exp_header "HWA at a constant rate (window $window) vs its last model vs a decaying rate; $num_jobs jobs, $num_epochs epochs"

# train_run <dir> <lr> <seed> (final from the caller: the end rate)
train_run() {
    local final=$2
    [ $decay = true ] && final=$(awk -v r=$2 'BEGIN { print r / 10 }')
    steps/train.sh --num-jobs $num_jobs --num-epochs $num_epochs --minibatch-size $minibatch_size \
        --initial-learning-rate $2 --final-learning-rate $final --srand $3 --combine false \
        --max-models-combine $window --cleanup true $dir/egs $config $1
    local last=$(cat $1/num_iters)
    cp $1/$last.mdl $1/last.mdl
    steps/hwa.sh --window $window --egs-dir $dir/egs --minibatch-size $minibatch_size $1 $1/hwa.mdl
}
decay=false
tune_wide "HWA constant rate (window $window)" const "$grid" train_run hwa.mdl
tune_wide "constant rate, last model" const "$grid" train_run last.mdl
decay=true
tune_wide "decaying rate, last model" decay "$grid" train_run last.mdl
tune_wide "decaying rate + window $window" decay "$grid" train_run hwa.mdl
echo "$0: results in $dir/results.txt"
