#!/usr/bin/env bash
# Claim (h), issue 31: post-local SGD (Lin et al., ICLR 2020; PyTorch's PostLocalSGDOptimizer)
# and hierarchical averaging (PyTorch's HierarchicalModelAverager) over MPI
# (steps/train_mpi.sh, nnet-train-mpi --warmup-steps / --group-size / --group-average-every).
# The same examples, epochs and ranks for every arm (--ranks, one archive per rank per epoch):
#   synchronous        --mode gradients (the ranks' steps summed every minibatch)
#   local K            params mode, averaging every K minibatches from the start
#   post-local K       the first --warmup-steps minibatches per rank synchronous (default: one
#                      epoch's), then local SGD every K
#   flat Kg            params mode every Kg minibatches (the frequent averaging hierarchy imitates)
#   hierarchical       groups of --group-size ranks every Kg, all ranks every K
# for plain SGD, where claim (b) found local SGD losing (NG-SGD too with --nets "sgd ng";
# conf/nnet_small_{sgd,ng}.config). Rates (effective initial rate; final = /10; params mode runs
# each rank at N x it) tuned per arm on validation over --sgd-grid / --ng-grid, widened while the
# best is an edge (exp_lib.sh's tune_wide).
#   local/claim_h_postlocal.sh [--limit 12000] [--num-epochs 3] [--ranks 4] [--seeds "1 2 3"]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=3
minibatch_size=64
ranks=4
k=16               # local SGD's period (minibatches); all-rank period of the hierarchy
group_size=2
group_k=2          # the groups' period, and the flat frequent arm's
warmup_steps=      # post-local SGD: synchronous minibatches per rank (default: one epoch's)
seeds="1 2 3"
nets=sgd           # sgd and/or ng
arms="sync local post flat hier"
sgd_grid="0.0005 0.001 0.002"
ng_grid="0.002 0.004 0.008"
max_widen=3
dir=exp/claim_h
allow_small_test=
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh
command -v mpirun >/dev/null || { echo "$0: needs mpirun (tools/install-deps.sh --mpi)"; exit 1; }

exp_setup
exp_egs $ranks
per_rank=$(( $(wc -l < $dir/data/train/feats.scp) / ranks / minibatch_size ))  # minibatches per epoch
: ${warmup_steps:=$per_rank}
exp_header "post-local and hierarchical averaging over MPI: $ranks ranks, K=$k, post-local warm-up $warmup_steps minibatches (an epoch is ~$per_rank), groups of $group_size every $group_k, $num_epochs epochs"

# mpi_run <dir> <lr> <seed> (mode and opts from the caller)
mpi_run() {
    exp_train train_mpi.sh $1 $2 $3 $ranks $dir/egs$ranks conf/nnet_small_$net.config \
        --mode $mode $opts --minibatch-size $minibatch_size --cleanup true
}
for net in $nets; do
    grid=$sgd_grid
    [ $net = ng ] && grid=$ng_grid
    for arm in $arms; do
        mode=params
        case $arm in
        sync)  mode=gradients opts=; name="synchronous (gradients)" ;;
        local) opts="--average-every $k"; name="local SGD K=$k" ;;
        post)  opts="--average-every $k --warmup-steps $warmup_steps"; name="post-local SGD K=$k" ;;
        flat)  opts="--average-every $group_k"; name="local SGD K=$group_k" ;;
        hier)  opts="--average-every $k --group-size $group_size --group-average-every $group_k"
               name="hierarchical G=$group_size Kg=$group_k K=$k" ;;
        *) echo "$0: unknown arm $arm"; exit 1 ;;
        esac
        tune_wide "$net $name" $net.$arm "$grid" mpi_run
    done
done
echo "$0: results in $dir/results.txt"
