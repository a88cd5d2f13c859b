#!/usr/bin/env bash
# Claim (b), issue 20: local SGD / frequent model averaging over MPI (Su & Chen 2015; PR-SGD, Yu
# et al. 2019): with N ranks, averaging every K in {1, 8, 64, once per epoch} minibatches vs
# synchronous SGD (--mode gradients, the same examples per update), plain SGD and NG-SGD.
# K = 1 in params mode and gradients mode are the same computation for plain SGD: their gap is
# a measure of the noise. Learning rates tuned per arm on validation over --grid (effective
# initial rate; final = /10; params mode runs each rank at N x it, as steps/train_mpi.sh does).
#   local/claim_b_local_sgd.sh [--limit 12000] [--num-epochs 3] [--ranks 4] [--seeds "1 2 3"]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=3
minibatch_size=64
ranks=4
ks="1 8 64 0"      # 0: once per epoch (one iteration is one epoch here)
seeds="1 2 3"
nets="sgd ng"
sgd_grid="0.0005 0.001 0.002"
ng_grid="0.002 0.004 0.008"
dir=exp/claim_b
allow_small_test=
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh
command -v mpirun >/dev/null || { echo "$0: needs mpirun (tools/install-deps.sh --mpi)"; exit 1; }

exp_setup
exp_egs $ranks
exp_header "local SGD over MPI: $ranks ranks, K in {$ks} (0: once per epoch) x {sgd, ng}, $num_epochs epochs"

# mpi_run <dir> <lr> <seed> (mode, k, net from the caller)
mpi_run() {
    exp_train train_mpi.sh $1 $2 $3 $ranks $dir/egs$ranks conf/nnet_small_$net.config \
        --mode $mode --average-every $k --minibatch-size $minibatch_size --cleanup true
}
for net in $nets; do
    grid=$sgd_grid
    [ $net = ng ] && grid=$ng_grid
    mode=gradients k=1
    tune "$net synchronous (gradients)" $net.sync "$grid" mpi_run
    mode=params
    for k in $ks; do
        tune "$net local SGD K=$([ $k = 0 ] && echo epoch || echo $k)" $net.k$k "$grid" mpi_run
    done
done
echo "$0: results in $dir/results.txt"
