#!/usr/bin/env bash
# Claim (f), TWA's own fit tuned. local/claim_f_twa.sh tunes every arm's training rate but fits
# TWA-t's coefficients with one setting (rate 0.5, 5 passes). Here the runs are trained once per
# seed at --lr (that script's choice for its TWA-t arm) with the head stage's checkpoints kept,
# and TWA-t's fit is tuned on them: its learning rate over --fit-grid (widened past an edge that
# scores best, x2 or /2, at most 3 times, as tune_wide does) for each number of passes in
# --passes-grid, scored on validation with the first seed; the best (rate, passes) is then fitted
# on every seed. From the same runs, for comparison: the untuned fit (0.5, 5 passes), the plain
# mean of the head checkpoints (SWA), the head stage's last checkpoint and the last model.
#   local/claim_f_twa_fit.sh [--config conf/resnet.config] [--lr 0.002] [--fit-grid "..."]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
limit=12000
num_epochs=6
num_jobs=2
samples_per_iter=1500
head_fraction=0.5
num_fit=5000
minibatch_size=64
seeds="1 2 3"
lr=0.002
fit_grid="0.125 0.25 0.5 1 2"
passes_grid="5 10 20"
config=conf/resnet.config
dir=exp/claim_f_fit
allow_small_test=
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh

exp_setup
exp_egs $num_jobs $samples_per_iter egs
exp_header "TWA-t's fit tuned (rate x passes) on the head stage (first $head_fraction) of runs at lr $lr; $num_jobs jobs, $num_epochs epochs, $config"

train_keep() { # run-dir lr seed: train, keep the head stage's checkpoints and the last model
    exp_train train.sh $1 $2 $3 $num_jobs $dir/egs $config --minibatch-size $minibatch_size \
        --cleanup false
    local n=$(cat $1/num_iters)
    local head=$(exp_head_iters $1 $head_fraction)
    echo $head > $1/head_iters
    cp $1/$n.mdl $1/last.mdl
    cp $1/$head.mdl $1/head_last.mdl
    local m
    for m in $1/[0-9]*.mdl; do
        m=${m##*/}
        [ ${m%.mdl} -gt $head ] && rm -f $1/$m
    done
    return 0
}
fit() { # run-dir rate passes seed -> prints the validation accuracy of that fit
    local d=$1 out=$1/twa.r$2.p$3.mdl
    if [ ! -f $out ]; then
        local swa=()
        [ -f $d/swa.mdl ] || swa=(--swa-out $d/swa.mdl)
        steps/twa_head.sh --first 1 --last $(cat $d/head_iters) --num-fit $num_fit \
            --twa-epochs $3 --twa-learning-rate $2 --srand $4 --minibatch-size $minibatch_size \
            "${swa[@]}" $dir/egs $d $out.tmp > $out.log 2>&1 || { echo "$0: fit failed, see $out.log" >&2; return 1; }
        mv $out.tmp $out
    fi
    exp_acc $out $dir/valid.egs
}

first=${seeds%% *}
for s in $seeds; do run_once train_keep $dir/run/s$s $lr $s; done
[ -f $dir/run/s$first/.diverged ] && { echo "$0: lr $lr diverged with seed $first"; exit 1; }
best= best_acc=-1 best_passes=
for p in $passes_grid; do
    grid=$fit_grid w=0
    while :; do
        b= b_acc=-1 acc_lo= acc_hi= lo=${grid%% *} hi=${grid##* } edge=
        for r in $grid; do
            acc=$(fit $dir/run/s$first $r $p $first)
            echo "TWA-t fit rate=$r passes=$p seed=$first valid=$acc" >> $dir/tuning.txt
            if awk -v a=$acc -v b=$b_acc 'BEGIN { exit !(a > b) }'; then b=$r b_acc=$acc; fi
            [ $r = $lo ] && acc_lo=$acc
            [ $r = $hi ] && acc_hi=$acc
        done
        edge=$(grid_widened "$grid" "$b_acc" "$acc_lo" "$acc_hi")
        [ -n "$edge" ] && [ $w -lt 3 ] || break
        grid=$edge
        w=$((w + 1))
    done
    [ -n "$edge" ] && echo "# passes $p: the best fit rate $b is still an edge of {$grid}" | tee -a $dir/results.txt
    echo "# passes $p: fit rates {$grid}, best $b (valid $b_acc, seed $first)" | tee -a $dir/results.txt
    if awk -v a=$b_acc -v b=$best_acc 'BEGIN { exit !(a > b) }'; then
        best=$b best_acc=$b_acc best_passes=$p
    fi
done
[ "$best_passes" = "${passes_grid##* }" ] && [ "$best_passes" != "${passes_grid%% *}" ] &&
    echo "# the best passes $best_passes is the top of {$passes_grid}" | tee -a $dir/results.txt

row() { # arm model-name: validation and test accuracy over the seeds
    local valid= test= s
    for s in $seeds; do
        valid="$valid $(exp_acc $dir/run/s$s/$2 $dir/valid.egs)"
        test="$test $(exp_acc $dir/run/s$s/$2 $dir/test.egs)"
    done
    printf "%-36s valid %s  test %s  (test:%s)\n" "$1" "$(mean_sd $valid)" "$(mean_sd $test)" \
        "$test" | tee -a $dir/results.txt
}
for s in $seeds; do
    fit $dir/run/s$s $best $best_passes $s >/dev/null
    fit $dir/run/s$s 0.5 5 $s >/dev/null
done
row "TWA-t, fit tuned (rate $best, $best_passes passes)" twa.r$best.p$best_passes.mdl
row "TWA-t, untuned fit (rate 0.5, 5 passes)" twa.r0.5.p5.mdl
row "SWA of the head checkpoints" swa.mdl
row "head stage, its last checkpoint" head_last.mdl
row "full training (last model)" last.mdl
echo "$0: results in $dir/results.txt"
