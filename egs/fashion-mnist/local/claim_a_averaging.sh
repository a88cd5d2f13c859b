#!/usr/bin/env bash
# Claim (a), issue 20: does model averaging degrade SGD but not NG-SGD (Povey et al. 2014)?
# N in {1, 2, 4, 8} jobs x {SGD, NG-SGD}; each N with steps/train.sh parameter averaging (each
# job at N x the effective rate) AND a large-batch control: one process (steps/train.sh with 1
# job) whose minibatch is N x minibatch-size, the same examples per update as N averaged jobs.
# Learning rates (effective initial rate; final = /10) tuned per arm on validation over a grid
# around the net's base rate b (--sgd-base, --ng-base): {b/2, b, 2b} at N = 1 and {b/N, b/sqrt(N),
# b} at N > 1 (N x the per-job or per-update step may need 1/N of the rate; the grid lets either
# arm find that, so "averaging degrades SGD" is separated from "N x the step degrades SGD").
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
sgd_base=0.001
ng_base=0.004
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
    exp_train train.sh $1 $2 $3 $n $dir/egs$n conf/nnet_small_$net.config \
        --minibatch-size $minibatch_size --cleanup true
}
big() {
    exp_train train.sh $1 $2 $3 1 $dir/egs1 conf/nnet_small_$net.config \
        --minibatch-size $((n * minibatch_size)) --cleanup true
}
grid_for() { # <n> <base>
    awk -v n=$1 -v b=$2 'BEGIN { if (n == 1) printf "%g %g %g", b / 2, b, 2 * b;
        else printf "%.3g %.3g %g", b / n, b / sqrt(n), b }'
}
for net in $nets; do
    base=$sgd_base
    [ $net = ng ] && base=$ng_base
    for n in $ns; do
        grid=$(grid_for $n $base)
        tune "$net N=$n averaged" $net.avg$n "$grid" avg
        if [ $n -gt 1 ]; then tune "$net N=$n large-batch ($((n * minibatch_size)))" $net.big$n "$grid" big; fi
    done
done
echo "$0: results in $dir/results.txt"
