#!/usr/bin/env bash
# The averaging experiment of the paper (Povey et al. 2014, and the parallel-training issue): N jobs
# in {1, 2, 4, 8} x {plain SGD, NG-SGD} at the same total number of samples (the same epochs), with
# parameter averaging after every iteration (2 iterations per epoch), per-job learning rate = N x
# the effective rate. Prints validation accuracy at the start of each epoch and the final test
# accuracy; the table goes to $dir/results.md.
#   egs/fashion-mnist/local/jobs_experiment.sh [--limit 12000] [--num-epochs 4] [--jobs "1 2 4 8"]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
stage=0
cmd=utils/run.pl
limit=12000
num_epochs=4
jobs="1 2 4 8"
minibatch_size=64
ng_lr="--initial-learning-rate 0.004 --final-learning-rate 0.0004"
sgd_lr="--initial-learning-rate 0.001 --final-learning-rate 0.0001"
dir=exp/jobs_experiment
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
data=$dir/data
mkdir -p $dir

if [ $stage -le 0 ]; then
    local/prepare_data.sh --limit $limit $data >$dir/prepare.log
    nnet-get-egs scp:$data/test/feats.scp scp:$data/test/labels.scp ark:$dir/test.egs 2>/dev/null
fi
ntrain=$(wc -l < $data/train/feats.scp)
if [ $stage -le 1 ]; then
    for n in $jobs; do   # 2 archives per job per epoch: ntrain / (2 n) examples each
        steps/get_egs.sh --num-jobs $n --samples-per-iter $(( (ntrain + 2 * n - 1) / (2 * n) )) \
            --valid-data-dir $data/valid --num-utts-subset 300 $data/train $dir/egs$n >$dir/egs$n.log 2>&1
    done
fi

acc() { grep -o 'accuracy is [0-9.]*' "$1" 2>/dev/null | awk '{printf "%.1f", $3 * 100}'; }
results=$dir/results.md
if [ $stage -le 2 ]; then
    echo "| jobs | update | test acc % | valid acc % at the start of epochs 1..$num_epochs | valid acc % at the end | wall s |" > $results
    echo "|---|---|---|---|---|---|" >> $results
    for n in $jobs; do
        for kind in sgd ng; do
            d=$dir/${kind}_n$n
            lr=$ng_lr; [ $kind = sgd ] && lr=$sgd_lr
            t0=$(date +%s)
            rm -rf $d
            if steps/train.sh --cmd "$cmd" --num-jobs $n --num-epochs $num_epochs \
                --minibatch-size $minibatch_size $lr --combine false --cleanup false \
                $dir/egs$n conf/compare-$kind.config $d >$d.log 2>&1; then
                nnet-compute-prob $d/final.mdl ark:$dir/test.egs 2>$d/log/compute_prob_test.log >/dev/null
                test=$(acc $d/log/compute_prob_test.log)
            else
                test="failed"
            fi
            curve=""
            for e in $(seq 0 $((num_epochs - 1))); do curve="$curve $(acc $d/log/compute_prob_valid.$((2 * e)).log)"; done
            curve="$curve | $(acc $d/log/compute_prob_valid.final.log)"
            echo "| $n | $kind | $test | $curve | $(( $(date +%s) - t0 )) |" | tee -a $results
        done
    done
fi
