#!/usr/bin/env bash
# Fashion-MNIST with parnet: data preparation, example archives, parallel NG-SGD training with
# parameter averaging (2 jobs through the local runner), combination of the last models (the CNN:
# their average), and the test accuracy. Rerun with --stage N to resume.
#   egs/fashion-mnist/run.sh [--stage N] [--cmd utils/run.pl] [--num-jobs 2] [--num-epochs 6]
#                            [--net mlp|cnn] [--nnet-config F] [--precision fp32|bf16] [--srand N]
#                            [--weight-decay L] [--dir exp/nnet]
cd "$(dirname "$0")"
. ./path.sh

# Begin configuration section.
stage=0
cmd=utils/run.pl
num_jobs=2
num_epochs=      # default: 6 with --net mlp, 4 with --net cnn
samples_per_iter=20000
minibatch_size=128
initial_learning_rate=0.004
final_learning_rate=0.0004
net=mlp          # mlp: conf/nnet.config, 6 epochs, per-layer combination of the last models;
                 # cnn: conf/cnn.config (convolutions, batch norm, pooling), 4 epochs,
                 # final.mdl the average of the last epoch's models (train.sh --offline-window with
                 # the iterations of an epoch, 4 here: a per-layer combination would cost the CNN
                 # over a third of its training time; docs/EXPERIMENTS.md)
nnet_config=     # a network config of your own instead of --net's (--net's epochs and final
                 # model still apply); not --config, which utils/parse_options.sh reserves for a
                 # file of option settings that it sources as shell
limit=0          # use only this many training images (0: all); for quick tests
shifts=2         # shifted copies of each training image (data augmentation)
flips=false      # true: each shifted copy also mirrored left-right with probability 1/2 (no
                 # gain for the CNN over 3 seeds: docs/EXPERIMENTS.md, "The CNN")
dir=exp/nnet
weight_decay=    # L2 weight decay of training (nnet-train --weight-decay, PyTorch's weight_decay;
                 # 0: off). Default: 5e-4 with --net cnn (+0.3 points of validation accuracy over
                 # none, 3 seeds, chosen from 0..1e-3: docs/EXPERIMENTS.md, "The CNN"), 0 with
                 # --net mlp
precision=fp32   # of the layer products in training: bf16 needs AMX or AVX512-BF16 (oneDNN)
srand=0          # seed of the initial model and of the shuffling
egs_dir=exp/egs
use_gpu=no       # yes|no|wait|optional: the training jobs on GPUs (make CUDA=1; run.pl: one per GPU)
data_src=/usr/share/datasets/fashion-mnist   # the four idx .gz files
train_opts=      # extra options for steps/train.sh (e.g. "--averaging bmuf --average-best 5";
                 # "--offline-window 0" restores the combination for the CNN)
model=final      # the model stage 3 tests: final | avg (final.avg.mdl) | best (final.best.mdl)
# End configuration section.
help_message="Usage: $0 [--stage N] [--cmd runner] [--num-jobs N] [--num-epochs N] [--limit N] [--flips true|false] [--net mlp|cnn] [--nnet-config F] [--precision fp32|bf16] [--srand N] [--weight-decay L] [--dir D] [--use-gpu yes|no] [--data-src DIR] [--train-opts \"...\"] [--model final|avg|best]"
. utils/parse_options.sh || exit 1
case $net in
mlp) net_config=conf/nnet.config net_epochs=6 net_average=false net_weight_decay=0 ;;
cnn) net_config=conf/cnn.config net_epochs=4 net_average=true net_weight_decay=5e-4 ;;
*) echo "$0: --net: expected mlp or cnn, got '$net'" >&2; exit 2 ;;
esac
[ -z "$nnet_config" ] && nnet_config=$net_config
[ -z "$num_epochs" ] && num_epochs=$net_epochs
[ -z "$weight_decay" ] && weight_decay=$net_weight_decay
set -e -o pipefail
case $model in final) mdl=final.mdl ;; avg|best) mdl=final.$model.mdl ;;
    *) echo "$0: --model $model: expected final, avg or best"; exit 1 ;; esac
start=$(date +%s)

if [ $stage -le 0 ]; then
    echo "$0: stage 0: preparing data in data/"
    local/prepare_data.sh --src $data_src --limit $limit --shifts $shifts --flips $flips data
fi

if [ $stage -le 1 ]; then
    echo "$0: stage 1: making examples in $egs_dir"
    steps/get_egs.sh --cmd "$cmd" --num-jobs $num_jobs --samples-per-iter $samples_per_iter \
        --valid-data-dir data/valid --num-utts-subset 1000 data/train $egs_dir
fi

if [ $stage -le 2 ]; then
    echo "$0: stage 2: training with $num_jobs jobs and parameter averaging"
    net_train_opts=
    $net_average && net_train_opts="--offline-window $(cat $egs_dir/info/iters_per_epoch)"
    steps/train.sh --cmd "$cmd" --num-jobs $num_jobs --num-epochs $num_epochs \
        --minibatch-size $minibatch_size --initial-learning-rate $initial_learning_rate \
        --final-learning-rate $final_learning_rate --srand $srand --use-gpu $use_gpu \
        --train-opts "--precision=$precision --weight-decay=$weight_decay" $net_train_opts \
        $train_opts $egs_dir $nnet_config $dir
fi

if [ $stage -le 3 ]; then
    echo "$0: stage 3: test accuracy"
    [ -f $egs_dir/test.egs ] || nnet-get-egs scp:data/test/feats.scp scp:data/test/labels.scp \
        ark:$egs_dir/test.egs 2>$dir/log/test_egs.log
    nnet-compute-prob $dir/$mdl ark:$egs_dir/test.egs 2>$dir/log/compute_prob_test.log >/dev/null
    acc=$(grep -o 'accuracy is [0-9.]*' $dir/log/compute_prob_test.log | awk '{print $3}')
    logprob=$(grep -o 'average probability is [-0-9.]*' $dir/log/compute_prob_test.log | awk '{print $4}')
    vlog=$dir/log/compute_prob_valid.$(basename $mdl .mdl | tr . _).log   # final, final_avg, final_best
    valid_acc=$(grep -o 'accuracy is [0-9.]*' $vlog | awk '{print $3}')
    printf "%s: validation accuracy %.2f%%, test accuracy %.2f%% (log-prob %s) after %d s\n" \
        "$0" "$(echo "$valid_acc * 100" | bc -l)" "$(echo "$acc * 100" | bc -l)" "$logprob" \
        $(( $(date +%s) - start ))
fi
