#!/usr/bin/env bash
# Claim (a), issue 20: does model averaging degrade SGD but not NG-SGD (Povey et al. 2014)?
# N in {1, 2, 4, 8} jobs x {SGD, NG-SGD}; each N with steps/train.sh parameter averaging (each
# job at N x the effective rate) AND a large-batch control: one process (steps/train.sh with 1
# job) whose minibatch is N x minibatch-size, the same examples per update as N averaged jobs.
# Learning rates tuned per arm on validation over --grid (effective initial rate; final = /10).
#   local/claim_a_averaging.sh [--limit 12000] [--num-epochs 3] [--seeds "1 2 3"] [--ns "1 2 4 8"]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=3
minibatch_size=64
seeds="1 2 3"
ns="1 2 4 8"
nets="sgd ng"
sgd_grid="0.0005 0.001 0.002"
ng_grid="0.002 0.004 0.008"
dir=exp/claim_a
allow_small_test=  # for smoke tests only: accept a reduced test set
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh

exp_setup
exp_egs 1
for n in $ns; do exp_egs $n; done
exp_header "averaging vs large batch: N x {sgd, ng}, $num_epochs epochs, minibatch $minibatch_size"

# avg <dir> <lr> <seed>: N averaged jobs (N, net from the caller's variables)
avg() {
    steps/train.sh --num-jobs $n --num-epochs $num_epochs --minibatch-size $minibatch_size \
        --initial-learning-rate $2 --final-learning-rate $(awk -v r=$2 'BEGIN { print r / 10 }') \
        --srand $3 --combine false --cleanup true $dir/egs$n conf/nnet_small_$net.config $1
}
big() {
    steps/train.sh --num-jobs 1 --num-epochs $num_epochs --minibatch-size $((n * minibatch_size)) \
        --initial-learning-rate $2 --final-learning-rate $(awk -v r=$2 'BEGIN { print r / 10 }') \
        --srand $3 --combine false --cleanup true $dir/egs1 conf/nnet_small_$net.config $1
}
for net in $nets; do
    grid=$sgd_grid
    [ $net = ng ] && grid=$ng_grid
    for n in $ns; do
        tune "$net N=$n averaged" $net.avg$n "$grid" avg
        if [ $n -gt 1 ]; then tune "$net N=$n large-batch ($((n * minibatch_size)))" $net.big$n "$grid" big; fi
    done
done
echo "$0: results in $dir/results.txt"
