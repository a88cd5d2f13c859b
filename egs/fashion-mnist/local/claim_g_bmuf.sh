#!/usr/bin/env bash
# Claim (g), issue 31: does block momentum (BMUF, Chen & Huo, ICASSP 2016) let N = 8 averaged
# jobs reach the accuracy of one job, where plain averaging at N = 8 falls short? NG-SGD
# (conf/nnet_small_ng.config), the same examples and epochs for every arm; --iters-per-epoch
# archives per job per epoch (10: 30 iterations in 3 epochs, so that the momentum has blocks to
# act on; claim a had 1, i.e. 3 iterations). Arms:
#   N=1             one job (the examples cut for 1 job, the same iterations per epoch)
#   N=8 averaged    steps/train.sh plain averaging, each job at 8 x the effective rate
#   N=8 large batch one job, minibatch 8 x 64 (the control of claim a)
#   N=8 BMUF        --averaging bmuf with the paper's defaults (eta 1 - 1/8, zeta 1, Nesterov),
#                   each job at the effective rate itself (8 (1 - eta) / zeta = 1)
#   N=8 BMUF classic  the same, --block-nesterov false
# and, scored on the same runs (no extra training): the running average of the models of the
# second half (--average-period 1 --average-start iters/2: final.avg.mdl) and the best-5 average
# (--average-best 5: final.best.mdl) against the last model, for plain averaging and BMUF, at the
# rate chosen for the last model (paired: the same runs).
# Rates (effective initial rate; final = /10): a grid per arm, {b/2, b, 2b} around the arm's
# natural rate (N=1, BMUF: b; averaged and large batch: b/sqrt(8), between claim a's choices),
# widened by a point (x2 or /2) while seed 1's best sits on an edge (at most --max-widen
# points; exp_lib.sh's tune_wide), so that no chosen rate is an edge of its grid.
#   local/claim_g_bmuf.sh [--limit 12000] [--num-epochs 3] [--seeds "1 2 3"]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=3
iters_per_epoch=10
minibatch_size=64
seeds="1 2 3"
n=8
base=0.004
arms="single avg big bmuf bmufc"
max_widen=3  # points added beyond an edge at most (0: the grid as it is)
dir=exp/claim_g
allow_small_test=  # for smoke tests only: accept a reduced test set
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh

exp_setup
ntrain=$(wc -l < $dir/data/train/feats.scp)
# egs<N>: N jobs, iters_per_epoch archives each per epoch
for j in 1 $n; do
    exp_egs $j $(( (ntrain + j * iters_per_epoch - 1) / (j * iters_per_epoch) ))
done
half=$(( num_epochs * iters_per_epoch / 2 ))
exp_header "BMUF vs plain averaging at N=$n vs N=1, NG-SGD, $num_epochs epochs x $iters_per_epoch iterations, minibatch $minibatch_size"

# train <dir> <lr> <seed> <jobs> <egs> <minibatch> [train.sh options]
train() {
    local d=$1 lr=$2 seed=$3 jobs=$4 egs=$5 mb=$6; shift 6
    exp_train train.sh $d $lr $seed $jobs $dir/$egs conf/nnet_small_ng.config --minibatch-size $mb \
        --cleanup false --average-period 1 --average-start $half --average-best 5 "$@"
}
single() { train $1 $2 $3 1 egs1 $minibatch_size; }
avg() { train $1 $2 $3 $n egs$n $minibatch_size; }
big() { train $1 $2 $3 1 egs1 $((n * minibatch_size)); }
bmuf() { train $1 $2 $3 $n egs$n $minibatch_size --averaging bmuf; }
bmufc() { train $1 $2 $3 $n egs$n $minibatch_size --averaging bmuf --block-nesterov false; }

grid3() { awk -v b=$1 'BEGIN { printf "%.3g %.3g %.3g", b / 2, b, 2 * b }'; }
# paired <arm> <run> <fn> <model>: another model of the same runs, at the rate chosen for the last
# model (tuned_lr): running and best-N averages against the last model on the same runs
paired() { [ -n "$tuned_lr" ] && tune "$1" $2 "$tuned_lr" $3 $4; }
centre_avg=$(awk -v b=$base -v n=$n 'BEGIN { printf "%.3g", b / sqrt(n) }')
for arm in $arms; do
    case $arm in
    single) tune_wide "N=1" single "$(grid3 $base)" single ;;
    avg)    tune_wide "N=$n averaged" avg "$(grid3 $centre_avg)" avg
            paired "N=$n averaged, running avg" avg avg final.avg.mdl
            paired "N=$n averaged, best-5" avg avg final.best.mdl ;;
    big)    tune_wide "N=$n large batch ($((n * minibatch_size)))" big "$(grid3 $centre_avg)" big ;;
    bmuf)   tune_wide "N=$n BMUF (Nesterov)" bmuf "$(grid3 $base)" bmuf
            paired "N=$n BMUF, running avg" bmuf bmuf final.avg.mdl
            paired "N=$n BMUF, best-5" bmuf bmuf final.best.mdl ;;
    bmufc)  tune_wide "N=$n BMUF (classic)" bmufc "$(grid3 $base)" bmufc ;;
    esac
done
echo "$0: results in $dir/results.txt"
