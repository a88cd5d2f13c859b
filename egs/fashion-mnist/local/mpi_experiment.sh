#!/usr/bin/env bash
# The MPI local-SGD experiment of docs/history/2026-12-01-experiments.md: Fashion-MNIST (reduced
# with --limit), 2 and 4 ranks, averaging every K in {1, 8, 64, one epoch} minibatches, plain
# SGD vs NG-SGD, plus synchronous SGD (--mode gradients) as the baseline. Prints one table row per run: validation and
# test accuracy, parameter bytes all-reduced per rank, wall time of training, and the share of the
# training loop spent in the parameter all-reduce and in the per-minibatch flag.
#   local/mpi_experiment.sh [--limit 24000] [--num-epochs 3] [--minibatch-size 64] [--ranks "2 4"]
# Rerunning skips finished runs (delete $dir/<run> to redo one).
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=24000
num_epochs=3
minibatch_size=64
# effective learning rates (initial final) per net: plain SGD is unstable at NG-SGD's 0.004
sgd_rates="0.001 0.0001"
ng_rates="0.004 0.0004"
ranks="2 4"
ks="1 8 64 0"            # 0: once per epoch (each iteration is one epoch here)
nets="sgd ng"
dir=exp/mpi
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail

if [ ! -f $dir/data/test/feats.scp ]; then
    mkdir -p $dir
    local/prepare_data.sh --limit $limit $dir/data
fi
for n in $ranks; do
    if [ ! -f $dir/egs$n/combine.egs ]; then
        # one archive per rank per epoch: samples-per-iter >= the examples of one rank
        steps/get_egs.sh --num-jobs $n --samples-per-iter $limit --valid-data-dir $dir/data/valid \
            --num-utts-subset 1000 $dir/data/train $dir/egs$n > $dir/egs$n.log
    fi
done
[ -f $dir/test.egs ] || nnet-get-egs scp:$dir/data/test/feats.scp scp:$dir/data/test/labels.scp \
    ark:$dir/test.egs 2>/dev/null

acc() { grep -o 'accuracy is [0-9.]*' $1 | awk '{printf "%.2f", $3 * 100}'; }
run() { # name ranks net mode K
    local name=$1 n=$2 net=$3 mode=$4 k=$5 out=$dir/$1
    if [ ! -f $out/final.mdl ]; then
        local start=$(date +%s.%N) rates=$sgd_rates
        [ $net = ng ] && rates=$ng_rates
        set -- $rates
        steps/train_mpi.sh --num-jobs $n --num-epochs $num_epochs --mode $mode --average-every $k \
            --minibatch-size $minibatch_size --initial-learning-rate $1 --final-learning-rate $2 \
            --combine false --cleanup false \
            $dir/egs$n conf/nnet_small_$net.config $out > $out.log
        echo "$(date +%s.%N) - $start" | bc > $out/wall_seconds
    fi
    nnet-compute-prob $out/final.mdl ark:$dir/test.egs 2>$out/log/compute_prob_test.log >/dev/null
    # parameter all-reduces: payload MB and seconds summed over iterations (rank 0), loop seconds
    local stats=$(cat $out/log/train.*.log | awk '
        /Exchanges \(rank 0\)/ { for (i = 1; i <= NF; i++) { if ($i == "MB") mb += $(i-1);
            if ($i == "s" && !seen) { ex += $(i-1); seen = 1 } else if ($i == "s") fl += $(i-1) } seen = 0 }
        /Trained on/ { for (i = 1; i <= NF; i++) if ($i == "in") t += $(i+1) }
        END { printf "%.1f %.1f %.1f %.2f", mb, 100 * ex / t, 100 * fl / t, t }')
    set -- $stats
    printf "| %-22s | %s | %-4s | %-9s | %5s | %6s | %6s | %8s | %6.0f | %5s%% | %5s%% |\n" \
        "$name" $n $net $mode "$([ $mode = gradients ] && echo 1 || ([ $k = 0 ] && echo epoch || echo $k))" \
        "$(acc $out/log/compute_prob_valid.final.log)" "$(acc $out/log/compute_prob_test.log)" \
        $1 "$(cat $out/wall_seconds)" $2 $3
}

echo "| run | ranks | net | mode | K | valid % | test % | MB/rank | wall s | all-reduce | flag |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in $ranks; do
    for net in $nets; do
        for k in $ks; do run n$n-$net-k$k $n $net params $k; done
        run n$n-$net-grad $n $net gradients 1
    done
done
