#!/usr/bin/env bash
# Claim (d), issue 20: Parle (Chaudhari et al. 2017) converges faster / generalises better than
# data-parallel SGD. At equal epochs over the same N ranks: synchronous SGD (--mode gradients),
# local SGD (params, averaging every K), EASGD/EAMSGD (elastic, tau) and Parle (L inner steps),
# all in nnet-train-mpi (steps/train_mpi.sh; Parle and EASGD exchange by all-reduce, their states
# carried across iterations). Every arm gets the same momentum (Nesterov, --momentum) so that
# the comparison is of the methods, not of momentum; Parle and EASGD use the single-worker rate,
# local SGD N x it (train_mpi.sh). Learning rates tuned per arm on validation over --grid.
#   local/claim_d_parle.sh [--limit 12000] [--num-epochs 3] [--ranks 4] [--seeds "1 2 3"]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=3
minibatch_size=64
ranks=4
momentum=0.9
local_k=8
elastic_tau=4
parle_l=25
seeds="1 2 3"
grid="0.0005 0.001 0.002"
config=conf/nnet_small_sgd.config
dir=exp/claim_d
allow_small_test=
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh
command -v mpirun >/dev/null || { echo "$0: needs mpirun (tools/install-deps.sh --mpi)"; exit 1; }

exp_setup
exp_egs $ranks
exp_header "Parle vs sync SGD vs local SGD (K=$local_k) vs EASGD (tau=$elastic_tau) at $num_epochs epochs, $ranks ranks, Nesterov momentum $momentum"

# mpi_run <dir> <lr> <seed> (mode, k from the caller)
mpi_run() {
    exp_train train_mpi.sh $1 $2 $3 $ranks $dir/egs$ranks $config --mode $mode \
        --average-every $k --parle-inner-steps $parle_l --momentum $momentum --nesterov true \
        --minibatch-size $minibatch_size --cleanup true
}
mode=gradients k=1;           tune_wide "synchronous SGD" sync "$grid" mpi_run
mode=params k=$local_k;       tune_wide "local SGD K=$local_k" local "$grid" mpi_run
mode=elastic k=$elastic_tau;  tune_wide "EASGD tau=$elastic_tau" elastic "$grid" mpi_run
mode=parle k=1;               tune_wide "Parle L=$parle_l" parle "$grid" mpi_run
echo "$0: results in $dir/results.txt"
