#!/usr/bin/env bash
# The paper's experiment on speech (Povey et al. 2014; issue 14 item 5): N jobs in {1, 2, 4, 8} x
# {plain SGD, NG-SGD} with parameter averaging at an equal number of samples seen, three seeds
# each; frame accuracy and WER on the held-out voices, mean +- s.d. over the seeds, in
# $dir/results.md. Needs run.sh through stage 5 (data, features, CMVN, labels, priors).
#
# Design:
#  - Equal samples: the same epochs at every N, 2 iterations per epoch; each job's archive holds
#    1/(2N) of the training frames (get_egs.sh --samples-per-iter), so an iteration of N jobs sees
#    half an epoch and every run sees every training frame num_epochs times. (Kaldi's iteration 0
#    keeps the best job's model, so 1/(2N) of the first half epoch reaches the model there.)
#  - Learning rates in Kaldi's convention (steps/train.sh): --initial/--final-learning-rate are the
#    effective rate; each job trains at N x that rate. One effective rate per update kind, the
#    same at every N, chosen on validation at N=1 (stage 1: seed 1, the base rate x each of
#    --lr-scales, the best validation objective of final.mdl; --lr-scales "" skips it).
#  - The same network and max-change defaults for both kinds (conf/nnet.config with
#    NaturalGradientAffineComponent, conf/nnet_sgd.config with AffineComponent).
#  - Seeds vary the initialisation and the shuffling (train.sh --srand); the archives are the same.
#  - Each model gets its own decoder settings (acoustic scale x insertion penalty) chosen on the
#    validation utterances (held out of training by get_egs.sh), then decodes the test voices.
#  - Frame accuracy of final.mdl (the combination of the last models) and of the last averaged
#    model, on all test frames.
# Runs go seed by seed (all N x kind for seed 1, then 2, ...) so that a run cut short still has
# whole seeds; stage 3 tabulates what $dir/runs.txt holds.
#   egs/espeak-digits/local/jobs_experiment.sh [--jobs "1 2 4 8"] [--seeds "1 2 3"] [--num-epochs 6]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
stage=0
cmd=utils/run.pl
jobs="1 2 4 8"
seeds="1 2 3"
kinds="sgd ng"
num_epochs=6
minibatch_size=128
ng_lr=0.008          # effective initial learning rates; the final rate is a tenth
sgd_lr=0.008
lr_scales="0.25 1 4" # stage 1: base rate x these, N=1, seed 1, chosen on validation
num_utts_subset=40   # validation utterances (as run.sh)
acoustic_scales="0.05 0.1 0.2"
word_insertion_penalties="0 2 4 6 8"
beam=16
data=data
exp=exp
dir=exp/jobs_experiment
# End configuration section.
help_message="Usage: $0 [options]
e.g.: $0 --jobs \"1 2 4 8\" --seeds \"1 2 3\" --num-epochs 6
Options:
  --stage <n>        0 examples, 1 learning-rate choice, 2 runs, 3 table (default: 0)
  --jobs <list>      numbers of jobs (default: \"1 2 4 8\")
  --seeds <list>     (default: \"1 2 3\")
  --kinds <list>     sgd and/or ng (default: \"sgd ng\")
  --num-epochs <n>   (default: 6)
  --ng-lr <r> --sgd-lr <r>   base effective initial rates (default: 0.008, 0.008)
  --lr-scales <list> scales of the base rates tried at N=1 on validation; \"\": none (default: \"0.25 1 4\")
  --num-utts-subset <n>      validation utterances (default: 40; run.sh --size tiny uses 6)"
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh
mkdir -p $dir
exp_check_data
num_pdfs=$(cat $data/lang/num_pdfs)
frames=$(feat-to-len scp:$data/train_cmvn/feats.scp 2>/dev/null)
first_n=${jobs%% *}

if [ $stage -le 0 ]; then
    for n in $jobs; do
        steps/get_egs.sh --cmd "$cmd" --num-jobs $n --left-context 5 --right-context 5 \
            --samples-per-iter $(( (frames + 2 * n - 1) / (2 * n) )) \
            --num-utts-subset $num_utts_subset $data/train_cmvn $dir/egs$n > $dir/egs$n.log 2>&1
        [ "$(cat $dir/egs$n/info/iters_per_epoch)" = 2 ] || \
            { echo "$0: $dir/egs$n: expected 2 iterations per epoch" >&2; exit 1; }
    done
    # The validation utterances are the same for every N (get_egs.sh's seed): check, then keep.
    for n in $jobs; do
        cmp -s $dir/egs$first_n/valid_uttlist $dir/egs$n/valid_uttlist || \
            { echo "$0: validation utterances differ between egs$first_n and egs$n" >&2; exit 1; }
    done
    exp_valid_test $dir/egs$first_n
fi

# acc LOG: accuracy in % from a nnet-compute-prob log.
acc() { grep -o 'accuracy is [0-9.]*' $1 | awk '{printf "%.2f", $3 * 100}'; }
# objf LOG: the average log-probability from a nnet-compute-prob log.
objf() { grep -o 'average probability is [^ ]*' $1 | tail -n 1 | awk '{print $4}'; }

# train_one N KIND SEED RATE DIR: steps/train.sh; 0 on success.
train_one() {
    local n=$1 kind=$2 seed=$3 rate=$4 d=$5 cfg=conf/nnet.config
    [ $kind = sgd ] && cfg=conf/nnet_sgd.config
    rm -rf $d
    mkdir -p $d
    sed "s/NUM_PDFS/$num_pdfs/g" $cfg > $d/nnet.config
    steps/train.sh --cmd "$cmd" --num-jobs $n --num-epochs $num_epochs --srand $seed \
        --minibatch-size $minibatch_size --initial-learning-rate $rate \
        --final-learning-rate $(awk -v r=$rate 'BEGIN { printf "%.6g", r / 10 }') \
        $dir/egs$n $d/nnet.config $d > $d.log 2>&1
}

# score_one DIR: decoder settings chosen on the validation utterances, then the test voices.
# Prints "<test frame acc of final.mdl> <test WER> <test frame acc of the last averaged model>
# <validation objective of final.mdl> <acoustic scale> <insertion penalty>".
score_one() {
    local d=$1 last=$1/$(cat $1/num_iters).mdl as wip
    exp_decode $d
    nnet-compute-prob $last ark:$dir/test.egs 2>$d/decode/compute_prob_test_last.log >/dev/null
    echo "$(acc $d/decode/compute_prob_test.log) $(awk '/^%WER/ {print $2}' $d/decode/wer)" \
        "$(acc $d/decode/compute_prob_test_last.log) $(objf $d/log/compute_prob_valid.final.log) $as $wip"
}

if [ $stage -le 1 ]; then
    # The effective rate of each kind, chosen at N=1 (seed 1) on the validation objective.
    for kind in $kinds; do
        base=$ng_lr
        [ $kind = sgd ] && base=$sgd_lr
        best=$base
        if [ -n "$lr_scales" ]; then
            : > $dir/lr_grid_$kind
            for s in $lr_scales; do
                rate=$(awk -v b=$base -v s=$s 'BEGIN { printf "%.6g", b * s }')
                d=$dir/lr_${kind}_$rate
                o=failed
                train_one 1 $kind 1 $rate $d && o=$(objf $d/log/compute_prob_valid.final.log)
                echo "$rate $o" | tee -a $dir/lr_grid_$kind
                rm -rf $d   # keep the log only
            done
            best=$(awk '$2 != "failed" && (b == "" || $2 > o) { b = $1; o = $2 } END { print b }' \
                $dir/lr_grid_$kind)
            [ -n "$best" ] || { echo "$0: every learning rate failed for $kind" >&2; exit 1; }
        fi
        echo $best > $dir/lr_$kind
        echo "$0: $kind: effective initial learning rate $best"
    done
fi

if [ $stage -le 2 ]; then
    echo "jobs kind seed lr frame_acc wer frame_acc_last valid_objf acoustic_scale wip seconds" \
        > $dir/runs.txt
    for seed in $seeds; do
        for n in $jobs; do
            for kind in $kinds; do
                rate=$(cat $dir/lr_$kind)
                d=$dir/${kind}_n${n}_s$seed
                t0=$(date +%s)
                r="failed failed failed failed - -"
                if train_one $n $kind $seed $rate $d; then
                    r=$(score_one $d) || true
                    # Six fields, the first four numbers; else the scoring failed.
                    echo "$r" | awk '{ exit !(NF == 6 && $1 $2 $3 $4 ~ /^[-0-9.]+$/) }' || \
                        { echo "$0: scoring $d failed: '$r'" >&2; r="failed failed failed failed - -"; }
                fi
                echo "$n $kind $seed $rate $r $(( $(date +%s) - t0 ))" | tee -a $dir/runs.txt
            done
        done
    done
fi

if [ $stage -le 3 ]; then
    {
        echo "| jobs | update | eff. lr | frame acc % | WER % | frame acc % (last averaged model) | valid log-prob | seeds | s per run |"
        echo "|---|---|---|---|---|---|---|---|---|"
        awk 'function sd(s, ss, n) { return n > 1 ? sqrt((ss - s * s / n) / (n - 1)) : 0 }
             NR > 1 && $5 != "failed" { k = $1 " " $2; n[k]++; lr[k] = $4
                 a[k] += $5; aa[k] += $5 * $5; w[k] += $6; ww[k] += $6 * $6
                 l[k] += $7; ll[k] += $7 * $7; o[k] += $8; oo[k] += $8 * $8; t[k] += $11 }
             NR > 1 && $5 == "failed" { f[$1 " " $2]++; lr[$1 " " $2] = $4 }
             END { for (k in f) if (!(k in n)) {
                     split(k, x, " ")
                     printf "| %d | %s | %s | all %d failed | | | | 0 | |\n", x[1],
                         x[2] == "ng" ? "NG-SGD" : "SGD", lr[k], f[k] }
                 for (k in n) { split(k, x, " ");
                 printf "| %d | %s | %s | %.2f ± %.2f | %.2f ± %.2f | %.2f ± %.2f | %.3f ± %.3f | %d%s | %.0f |\n",
                     x[1], x[2] == "ng" ? "NG-SGD" : "SGD", lr[k],
                     a[k] / n[k], sd(a[k], aa[k], n[k]), w[k] / n[k], sd(w[k], ww[k], n[k]),
                     l[k] / n[k], sd(l[k], ll[k], n[k]), o[k] / n[k], sd(o[k], oo[k], n[k]),
                     n[k], f[k] ? " (" f[k] " failed)" : "", t[k] / n[k] } }' $dir/runs.txt | \
            sort -t'|' -k2,2n -k3,3
    } > $dir/results.md
    cat $dir/results.md
fi
