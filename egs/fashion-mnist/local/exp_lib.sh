# Shared by the claim experiments local/claim_[a-h]_*.sh (sourced; issue 20, docs/EXPERIMENTS.md).
# Every experiment: Fashion-MNIST with --limit training images, the validation set (a fixed
# random subset of the training images), ALL 10 000 test images; per arm a small learning-rate
# grid, each rate run with the first seed and scored on validation; the best rate then run with
# every seed (the first one's run reused); the row reports validation and test accuracy as mean ±
# s.d. over the seeds (sample s.d., n - 1). Runs are cached: a finished run leaves <run>/.done,
# so rerunning a script only scores.
#
# Expects, before sourcing: dir (the experiment's directory), limit, seeds ("1 2 3"). Provides:
#   exp_setup                 data in $dir/data, $dir/valid.egs and $dir/test.egs
#   exp_egs <n>               examples cut for n jobs in $dir/egs<n> (one archive per job per epoch)
#   exp_acc <model> <egs>     accuracy in percent
#   exp_head_iters <run-dir> <fraction>
#                             the head stage's last iteration (the first <fraction> of the run's
#                             iterations, rounded, at least 2)
#   exp_train <script> <run-dir> <lr> <seed> <jobs> <egs-dir> <config> [options]
#                             steps/<script> (train.sh or train_mpi.sh) for num_epochs epochs, the
#                             rate falling from <lr> to a tenth of it, without the final
#                             combination; the options go to the script
#   mean_sd <x...>            "m ± s" (s = 0 for one value)
#   tune <arm> <run> "<grid>" <fn> [<model>]
#                             fn <run-dir> <lr> <seed> trains into <run-dir>; the arm's model is
#                             <run-dir>/<model> (default final.mdl), so several arms may score
#                             different models of the same runs (e.g. HWA and the last model).
#                             Appends the arm's row to $dir/results.txt and every tuning score to
#                             $dir/tuning.txt; sets tuned_lr to the rate chosen. A run whose log
#                             says "diverged" (train.sh's check) is a result: that grid point is
#                             scored "diverged" and not chosen; a diverged seed of the chosen rate
#                             is left out of the mean and named in the row.
#   tune_wide <arm> <run> "<grid>" <fn> [<model>]
#                             tune, after widening the grid: while the first seed's best score
#                             is at an edge of the grid (the rate chosen, or one tied with it),
#                             one more point beyond it (x2 or /2; at most $max_widen, default
#                             3), so that no chosen rate is an edge or tied with one

exp_setup() {
    if [ ! -f $dir/data/test/feats.scp ]; then
        mkdir -p $dir
        local/prepare_data.sh --limit $limit --full-test true $dir/data || return 1
    fi
    local t
    for t in valid test; do
        [ -f $dir/$t.egs ] || nnet-get-egs scp:$dir/data/$t/feats.scp scp:$dir/data/$t/labels.scp \
            ark:$dir/$t.egs 2>/dev/null || return 1
    done
    local ntest=$(feat-to-len scp:$dir/data/test/feats.scp 2>/dev/null)
    [ -n "$allow_small_test" ] || [ "$ntest" -eq 10000 ] || {
        echo "$0: the test set has $ntest images, not 10000"; return 1; }
}

# exp_egs N [SAMPLES-PER-ITER [NAME]]: examples for N jobs in $dir/NAME (default egsN), made once;
# SAMPLES-PER-ITER by default each job's share of the training set (one archive per job).
exp_egs() {
    local n=$1 name=${3:-egs$1}
    [ -f $dir/$name/combine.egs ] && return 0
    local per_job=${2:-$(( ($(wc -l < $dir/data/train/feats.scp) + n - 1) / n ))}
    steps/get_egs.sh --num-jobs $n --samples-per-iter $per_job --valid-data-dir $dir/data/valid \
        --num-utts-subset 1000 $dir/data/train $dir/$name > $dir/$name.log 2>&1 \
        || { echo "$0: get_egs.sh for $n jobs failed, see $dir/$name.log"; return 1; }
}

exp_train() {
    local script=$1 d=$2 lr=$3 seed=$4 jobs=$5 egs=$6 config=$7
    shift 7
    steps/$script --num-jobs $jobs --num-epochs $num_epochs --initial-learning-rate $lr \
        --final-learning-rate $(awk -v r=$lr 'BEGIN { print r / 10 }') --srand $seed \
        --combine false "$@" $egs $config $d
}

# exp_head_iters <run-dir> <fraction>: the last iteration of a run's head stage (TWA's claim f):
# the first <fraction> of its iterations, rounded, at least 2
exp_head_iters() {
    awk -v n=$(cat $1/num_iters) -v f=$2 'BEGIN { h = int(n * f + 0.5); print h < 2 ? 2 : h }'
}
exp_acc() {
    nnet-compute-prob $1 ark:$2 2>&1 >/dev/null | grep -o 'accuracy is [0-9.]*' \
        | awk '{ printf "%.2f", $3 * 100 }'
}

mean_sd() {
    echo "$@" | awk 'NF == 0 { print "n/a"; exit } { for (i = 1; i <= NF; i++) { s += $i; q += $i * $i } m = s / NF;
        v = NF > 1 ? (q - NF * m * m) / (NF - 1) : 0; if (v < 0) v = 0;
        printf "%.2f ± %.2f", m, sqrt(v) }'
}

# run_once <fn> <run-dir> <lr> <seed>
run_once() {
    local fn=$1 d=$2 lr=$3 seed=$4
    [ -f $d/.done ] && return 0
    rm -rf $d
    mkdir -p $d
    local start=$(date +%s)
    if ! $fn $d $lr $seed > $d.log 2>&1; then
        # a rate that diverges (train.sh stops with "diverged") is a result, not a failure
        grep -q 'diverged' $d.log || { echo "$0: run $d failed, see $d.log"; return 1; }
        echo "$0: run $d diverged (learning rate $lr), see $d.log"
        touch $d/.diverged
    fi
    echo $(( $(date +%s) - start )) > $d/seconds
    touch $d/.done
}

# run_acc <run-dir> <model> <egs>: accuracy, or "diverged" for a run that diverged
run_acc() {
    if [ -f $1/.diverged ]; then echo diverged; else exp_acc $1/$2 $3; fi
}

tune() {
    local arm=$1 run=$2 grid=$3 fn=$4 model=${5:-final.mdl}
    local first=${seeds%% *} best= best_acc=-1 lr acc s
    for lr in $grid; do
        run_once $fn $dir/$run/lr$lr.s$first $lr $first || return 1
        acc=$(run_acc $dir/$run/lr$lr.s$first $model $dir/valid.egs)
        echo "$arm lr=$lr seed=$first valid=$acc" >> $dir/tuning.txt
        [ "$acc" = diverged ] && continue
        [ -n "$acc" ] || { echo "$0: no accuracy for $dir/$run/lr$lr.s$first/$model"; return 1; }
        if awk -v a="$acc" -v b="$best_acc" 'BEGIN { exit !(a > b) }'; then best=$lr; best_acc=$acc; fi
    done
    if [ -z "$best" ]; then
        tuned_lr=
        printf "%-30s every rate of the grid {%s} diverged\n" "$arm" "$grid" | tee -a $dir/results.txt
        return 0
    fi
    local valid= test= secs= used= div=
    for s in $seeds; do
        local d=$dir/$run/lr$best.s$s
        run_once $fn $d $best $s || return 1
        secs="$secs $(cat $d/seconds)"
        if [ -f $d/.diverged ]; then div="$div $s"; continue; fi  # left out of the mean, named
        used="$used $s"
        valid="$valid $(exp_acc $d/$model $dir/valid.egs)"
        test="$test $(exp_acc $d/$model $dir/test.egs)"
    done
    tuned_lr=$best  # for the caller
    printf "%-30s lr %-8s valid %s  test %s  (seeds:%s; test:%s; s/run:%s%s)\n" "$arm" "$best" \
        "$(mean_sd $valid)" "$(mean_sd $test)" "$used" "$test" "$secs" \
        "${div:+; DIVERGED seeds:$div}" | tee -a $dir/results.txt
}

# grid_widened "<grid>" <best score> <score at its lowest rate> <at its highest>: the grid with one
# more point past the edge that scores the best (chosen or tied with the rate chosen; x2 above,
# /2 below, the top edge first), or nothing when neither edge does
grid_widened() {
    local grid=$1 lo=${1%% *} hi=${1##* }
    if [ "$4" = "$2" ]; then echo "$grid $(awk -v b=$hi 'BEGIN { printf "%.3g", b * 2 }')"
    elif [ "$3" = "$2" ]; then echo "$(awk -v b=$lo 'BEGIN { printf "%.3g", b / 2 }') $grid"; fi
}
tune_wide() {
    local arm=$1 run=$2 grid=$3 fn=$4 model=${5:-final.mdl} lr acc best best_acc lo hi acc_lo acc_hi edge first=${seeds%% *} w=0
    while :; do
        best= best_acc=-1  # chosen as tune chooses: the first best in the grid's order
        lo=${grid%% *} hi=${grid##* } acc_lo= acc_hi= edge=
        for lr in $grid; do
            run_once $fn $dir/$run/lr$lr.s$first $lr $first || return 1
            acc=$(run_acc $dir/$run/lr$lr.s$first $model $dir/valid.egs)
            [ "$acc" = diverged ] && continue
            if awk -v a="$acc" -v b="$best_acc" 'BEGIN { exit !(a > b) }'; then best=$lr; best_acc=$acc; fi
            [ $lr = $lo ] && acc_lo=$acc
            [ $lr = $hi ] && acc_hi=$acc
        done
        [ -n "$best" ] && edge=$(grid_widened "$grid" "$best_acc" "$acc_lo" "$acc_hi")
        [ -n "$edge" ] && [ $w -lt ${max_widen:-3} ] || break
        grid=$edge
        w=$((w + 1))
    done
    [ -n "$edge" ] && echo "# $arm: the best rate $best is still an edge of {$grid} or tied with it" \
        "(--max-widen ${max_widen:-3})" | tee -a $dir/results.txt
    tune "$arm" $run "$grid" $fn $model
}

exp_header() {
    mkdir -p $dir
    { echo "# $0 $(date -u '+%F %T') UTC, $(nproc) cores, limit $limit, seeds $seeds"
      echo "# $1"; } | tee -a $dir/results.txt
}
