#!/usr/bin/env bash
# Issue 31, item 6 on speech: does block momentum (BMUF, Chen & Huo, ICASSP 2016) let N = 8
# averaged jobs reach one job's frame accuracy and WER on the held-out voices, where plain
# averaging at N = 8 falls short? The fashion-mnist claim (g) on this recipe. Needs run.sh through
# stage 5 (corpus, features, CMVN, labels, priors in $exp/nnet/pdf_counts.vec).
#
# Design:
#  - The same examples and epochs for every arm: --iters-per-epoch archives per job per epoch
#    (8: 24 iterations in 3 epochs, so that the momentum has blocks to act on), the archives cut
#    for 1 job (N=1, large batch) and for N jobs.
#  - Arms (NG-SGD, conf/nnet.config; --combine false, so final.mdl is the last model):
#      single  N=1, minibatch 128
#      avg     N=8, plain averaging, each job at 8 x the effective rate (Kaldi's convention)
#      bmuf    N=8, --averaging bmuf with the paper's defaults (eta 1 - 1/8, zeta 1, Nesterov),
#              each job at the effective rate (8 (1 - eta) / zeta = 1)
#      big     N=1, minibatch 8 x 128: the large-batch control (the same examples per update)
#  - Rates (effective initial rate, final = /10): per arm the grid {c/2, c, 2c}, c = --base (N=1,
#    BMUF) or --base / sqrt 8 (averaged, large batch), run with the first seed and scored on the
#    validation log-probability of final.mdl (the held-out utterances of the training speakers);
#    while the best is an edge of the grid, one more point beyond it (x2 or /2, at most
#    --max-widen), so that no chosen rate is an edge. The chosen rate runs with every seed.
#  - Each final run gets its own decoder settings (acoustic scale x insertion penalty) chosen on
#    the validation utterances, then decodes the test voices (jobs_experiment.sh's scoring).
# Runs are cached (<run>/.done): a rerun only scores. Rows in $dir/results.txt: mean ± s.d. of
# test frame accuracy and WER over the seeds, every seed's values, seconds per run; every grid
# point's validation score in $dir/tuning.txt.
#   local/claim_bmuf.sh [--seeds "1 2 3"] [--num-epochs 3] [--arms "single avg bmuf big"]
cd "$(dirname "$0")/.."
. ./path.sh

# Begin configuration section.
cmd=utils/run.pl
arms="single avg bmuf big"
seeds="1 2 3"
n=8
num_epochs=3
iters_per_epoch=8
minibatch_size=128
base=0.008           # the centre of the N=1 and BMUF grids; averaged and large batch: base/sqrt(n)
max_widen=3
num_utts_subset=40   # validation utterances (as run.sh)
acoustic_scales="0.05 0.1 0.2"
word_insertion_penalties="0 2 4 6 8"
beam=16
data=data
exp=exp
dir=exp/claim_bmuf
# End configuration section.
. utils/parse_options.sh || exit 1
set -e -o pipefail
. local/exp_lib.sh
mkdir -p $dir
exp_check_data
num_pdfs=$(cat $data/lang/num_pdfs)
frames=$(feat-to-len scp:$data/train_cmvn/feats.scp 2>/dev/null)
sed "s/NUM_PDFS/$num_pdfs/g" conf/nnet.config > $dir/nnet.config

for j in 1 $n; do
    [ -f $dir/egs$j/combine.egs ] && continue
    steps/get_egs.sh --cmd "$cmd" --num-jobs $j --left-context 5 --right-context 5 \
        --samples-per-iter $(( (frames + j * iters_per_epoch - 1) / (j * iters_per_epoch) )) \
        --num-utts-subset $num_utts_subset $data/train_cmvn $dir/egs$j > $dir/egs$j.log 2>&1
    [ "$(cat $dir/egs$j/info/iters_per_epoch)" = $iters_per_epoch ] || \
        { echo "$0: $dir/egs$j: expected $iters_per_epoch iterations per epoch" >&2; exit 1; }
done
cmp -s $dir/egs1/valid_uttlist $dir/egs$n/valid_uttlist || \
    { echo "$0: validation utterances differ between egs1 and egs$n" >&2; exit 1; }
[ -f $dir/test.egs ] || exp_valid_test $dir/egs1
{ echo "# $0 $(date -u '+%F %T') UTC, $(nproc) cores, seeds $seeds"
  echo "# BMUF vs plain averaging at N=$n vs N=1, NG-SGD, $num_epochs epochs x $iters_per_epoch iterations, minibatch $minibatch_size"; } \
  | tee -a $dir/results.txt

# train <run-dir> <lr> <seed> <jobs> <minibatch> [train.sh options]; 0 on success
train() {
    local d=$1 lr=$2 seed=$3 jobs=$4 mb=$5; shift 5
    steps/train.sh --cmd "$cmd" --num-jobs $jobs --num-epochs $num_epochs --srand $seed \
        --minibatch-size $mb --initial-learning-rate $lr \
        --final-learning-rate $(awk -v r=$lr 'BEGIN { printf "%.6g", r / 10 }') \
        --combine false "$@" $dir/egs$jobs $dir/nnet.config $d
}
single() { train $1 $2 $3 1 $minibatch_size; }
avg() { train $1 $2 $3 $n $minibatch_size; }
bmuf() { train $1 $2 $3 $n $minibatch_size --averaging bmuf; }
big() { train $1 $2 $3 1 $((n * minibatch_size)); }

# run_once <fn> <run-dir> <lr> <seed>: trains once (cached); a divergence is a result
run_once() {
    local fn=$1 d=$2 t0=$(date +%s)
    [ -f $d/.done ] && return 0
    rm -rf $d; mkdir -p $d
    if ! $fn $d $3 $4 > $d.log 2>&1; then
        grep -q diverged $d.log || { echo "$0: run $d failed, see $d.log" >&2; return 1; }
        touch $d/.diverged
    fi
    echo $(( $(date +%s) - t0 )) > $d/seconds
    touch $d/.done
}
# valid_score <run-dir>: the validation log-probability of final.mdl, or "diverged"
valid_score() {
    [ -f $1/.diverged ] && { echo diverged; return; }
    nnet-compute-prob $1/final.mdl ark:$dir/egs1/valid_diagnostic.egs 2>&1 >/dev/null | \
        grep -o 'average probability is [^ ]*' | tail -n 1 | awk '{ print $4 }'
}
acc() { grep -o 'accuracy is [0-9.]*' $1 | awk '{ printf "%.2f", $3 * 100 }'; }
# score <run-dir>: decoder settings chosen on the validation utterances, then the test voices;
# prints "<test frame acc %> <test %WER> <acoustic scale> <insertion penalty>" (cached)
score() {
    local d=$1 as wip
    [ -f $d/decode/score ] && { cat $d/decode/score; return; }
    exp_decode $d
    echo "$(acc $d/decode/compute_prob_test.log) $(awk '/^%WER/ {print $2}' $d/decode/wer) $as $wip" \
        | tee $d/decode/score
}
mean_sd() {
    echo "$@" | awk 'NF == 0 { print "n/a"; exit } { for (i = 1; i <= NF; i++) { s += $i; q += $i * $i } m = s / NF;
        v = NF > 1 ? (q - NF * m * m) / (NF - 1) : 0; if (v < 0) v = 0; printf "%.2f ± %.2f", m, sqrt(v) }'
}

# tune <arm> <run> "<grid>" <fn>: widen while the best is an edge, then every seed at the best
tune() {
    local arm=$1 run=$2 grid=$3 fn=$4 lr o best best_o first=${seeds%% *} w=0 s
    while :; do
        best= best_o=
        for lr in $grid; do
            run_once $fn $dir/$run/lr$lr.s$first $lr $first || return 1
            o=$(valid_score $dir/$run/lr$lr.s$first)
            [ "$o" = diverged ] && continue
            [ -n "$o" ] || { echo "$0: no validation score for $dir/$run/lr$lr.s$first" >&2; return 1; }
            if [ -z "$best" ] || awk -v a="$o" -v b="$best_o" 'BEGIN { exit !(a > b) }'; then best=$lr; best_o=$o; fi
        done
        [ -n "$best" ] && [ $w -lt $max_widen ] || break
        if [ "$best" = "${grid%% *}" ]; then
            grid="$(awk -v b=$best 'BEGIN { printf "%.3g", b / 2 }') $grid"
        elif [ "$best" = "${grid##* }" ]; then
            grid="$grid $(awk -v b=$best 'BEGIN { printf "%.3g", b * 2 }')"
        else
            break
        fi
        w=$((w + 1))
    done
    case " ${grid%% *} ${grid##* } " in *" $best "*)
        echo "# $arm: the best rate $best is still an edge of {$grid} (--max-widen $max_widen)" \
            | tee -a $dir/results.txt ;;
    esac
    for lr in $grid; do
        echo "$arm lr=$lr seed=$first valid_logprob=$(valid_score $dir/$run/lr$lr.s$first)"
    done >> $dir/tuning.txt
    [ -n "$best" ] || { printf "%-24s every rate of {%s} diverged\n" "$arm" "$grid" | tee -a $dir/results.txt; return 0; }
    local accs= wers= vals= secs= div= r
    for s in $seeds; do
        d=$dir/$run/lr$best.s$s
        run_once $fn $d $best $s || return 1
        secs="$secs $(cat $d/seconds)"
        [ -f $d/.diverged ] && { div="$div $s"; continue; }
        r=($(score $d))
        accs="$accs ${r[0]}"; wers="$wers ${r[1]}"; vals="$vals $(valid_score $d)"
    done
    printf "%-24s lr %-7s grid {%s}  frame acc %s  WER %s  valid log-prob %s  (acc:%s; WER:%s; s/run:%s%s)\n" \
        "$arm" $best "$grid" "$(mean_sd $accs)" "$(mean_sd $wers)" \
        "$(echo $vals | awk '{ for (i = 1; i <= NF; i++) s += $i; printf "%.3f", s / NF }')" \
        "$accs" "$wers" "$secs" "${div:+; DIVERGED seeds:$div}" | tee -a $dir/results.txt
}

grid3() { awk -v b=$1 'BEGIN { printf "%.3g %.3g %.3g", b / 2, b, 2 * b }'; }
centre_avg=$(awk -v b=$base -v n=$n 'BEGIN { printf "%.3g", b / sqrt(n) }')
for arm in $arms; do
    case $arm in
    single) tune "N=1" single "$(grid3 $base)" single ;;
    avg)    tune "N=$n averaged" avg "$(grid3 $centre_avg)" avg ;;
    bmuf)   tune "N=$n BMUF (Nesterov)" bmuf "$(grid3 $base)" bmuf ;;
    big)    tune "N=$n large batch ($((n * minibatch_size)))" big "$(grid3 $centre_avg)" big ;;
    *) echo "$0: unknown arm $arm" >&2; exit 1 ;;
    esac
done
echo "$0: results in $dir/results.txt"
