#!/usr/bin/env bash
# Safe by default (issue 12): steps/train.sh with all its defaults (no learning rate, no
# max-change, no rescaling given) on seven data sets of different shape and scale
# (tests/prog/robustness_data.py --small: sklearn's digits, wine and breast cancer, Gaussian
# mixtures with features scaled 1e-3..1e4 / around an offset of 1e4 / with 1000 classes, raw
# Fashion-MNIST pixels 0..255), each through utils/csv_to_data.sh, steps/get_egs.sh (default
# 8bit storage, meanvar transform) and steps/train.sh; each must beat the majority class by far
# on its test split (the thresholds below; figures measured when the test was written in the
# comments). Then absurd learning rates (10, 100): train, or stop with "diverged" and exit 1;
# and nnet-train alone at learning rate 0.004, minibatch 512, on raw features.
. "$PARNET_TOP/tests/prog/lib.sh"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
if ! $PY -c 'import numpy, sklearn' 2>/dev/null; then
    fail "python3-numpy / python3-sklearn are not installed (tools/install-deps.sh installs them)"; exit 1
fi
ln -s $PARNET_TOP/steps steps
ln -s $PARNET_TOP/utils utils
export PATH=$PARNET_BIN:$PARNET_TOP/utils:$PATH
run=$PARNET_TOP/tests/prog/robustness_run.sh
sets="digits wine cancer scaled offset classes1000"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] && sets="$sets pixels"
expect_status "make the data sets" 0 $PY $PARNET_TOP/tests/prog/robustness_data.py --small csv $sets

# data set, lowest test accuracy accepted (measured when written: accuracy / majority class)
threshold() {
    case $1 in
        digits) echo 0.90 ;;       # 0.960 / 0.120
        wine) echo 0.85 ;;         # 0.955 / 0.364
        cancer) echo 0.90 ;;       # 0.986 / 0.570
        scaled) echo 0.90 ;;       # 1.000 / 0.148
        offset) echo 0.85 ;;       # 0.955 / 0.179
        classes1000) echo 0.50 ;;  # 0.999 / 0.003
        pixels) echo 0.75 ;;       # 0.861 / 0.108
    esac
}
for d in $sets; do
    out=$(bash $run csv/$d work/$d); rc=$?
    acc=$(echo "$out" | sed -n 's/.*accuracy=\([^ ]*\).*/\1/p')
    maj=$(echo "$out" | sed -n 's/.*majority=\([^ ]*\).*/\1/p')
    t=$(threshold $d)
    if [ $rc -eq 0 ] && awk -v a="$acc" -v t=$t 'BEGIN { exit !(a >= t) }'; then
        pass "$d with all defaults: test accuracy $acc >= $t (majority class $maj)"
    else
        fail "$d with all defaults: rc $rc, test accuracy '$acc' (need $t, majority $maj); $(tail -n 2 work/$d/train.log)"
    fi
done
grep -q -- "--srand=0 .*--precision=fp32 " work/wine/nnet/log/train.0.1.log && \
    pass "robustness_run.sh defaults: train.sh --srand 0, nnet-train --precision=fp32" || \
    fail "robustness_run.sh defaults not in $(head -n 1 work/wine/nnet/log/train.0.1.log)"
# --precision and --srand reach nnet-train (the bf16 figures of docs/EXPERIMENTS.md use them).
out=$(bash $run --precision bf16 --srand 5 csv/wine work/wine-bf16); rc=$?
acc=$(echo "$out" | sed -n 's/.*accuracy=\([^ ]*\).*/\1/p')
if [ $rc -ne 0 ] && grep -rq "cannot run here" work/wine-bf16/nnet/log; then
    echo "SKIP robustness_run.sh --precision bf16: $(grep -rho 'cannot run here: .*' work/wine-bf16/nnet/log | head -n 1)"
elif [ $rc -eq 0 ] && grep -q -- "--srand=5 .*--precision=bf16 " work/wine-bf16/nnet/log/train.0.1.log \
    && awk -v a="$acc" -v t=$(threshold wine) 'BEGIN { exit !(a >= t) }'; then
    pass "robustness_run.sh --precision bf16 --srand 5 on wine: test accuracy $acc"
else
    fail "robustness_run.sh --precision bf16 --srand 5: rc $rc, accuracy '$acc'; $(head -n 1 work/wine-bf16/nnet/log/train.0.1.log)"
fi
expect_status "robustness_run.sh without its two directories" 1 bash $run --precision bf16 csv/wine

# Absurd learning rates: they train (max-change holds the step) or stop with "diverged", exit 1.
for lr in 10 100; do
    out=$(bash $run csv/scaled work/lr$lr --initial-learning-rate $lr --final-learning-rate $lr); rc=$?
    acc=$(echo "$out" | sed -n 's/.*accuracy=\([^ ]*\).*/\1/p')
    if [ $rc -eq 0 ] && awk -v a="$acc" 'BEGIN { exit !(a >= 0.5) }'; then
        pass "learning rate $lr: trains (test accuracy $acc)"
    elif [ $rc -eq 1 ] && grep -q diverged work/lr$lr/train.log && [ ! -f work/lr$lr/nnet/final.mdl ]; then
        pass "learning rate $lr: stops with 'diverged', exit 1, no final.mdl"
    else
        fail "learning rate $lr: rc $rc, accuracy '$acc' and no 'diverged' message"
    fi
done
# ... and the console says when max-change acts on nearly every step (issue 32).
if [ -f work/lr100/nnet/final.mdl ]; then
    grep -qE "^steps/train.sh: WARNING: iteration [0-9]+: max-change clipped (9[5-9]|100)\.[0-9]% of the steps of (component [0-9]+ \([A-Za-z]+\)|the global max-change): the step is limited on nearly every minibatch, so the learning rate \([0-9.e+-]+ per job\) is probably too high" work/lr100/train.log \
        && pass "learning rate 100: the console warns of clipping on nearly every step" \
        || fail "learning rate 100: no clipping WARNING on the console"
fi

# A diverging run is caught: max-change off and a huge rate on raw (untransformed) features.
out=$(bash $run csv/wine work/div --feature-transform none --initial-learning-rate 100 \
      --final-learning-rate 100 --train-opts "--max-change=0"); rc=$?
if [ $rc -eq 1 ] && grep -q "diverged at iteration" work/div/train.log && [ ! -f work/div/nnet/final.mdl ]; then
    pass "a diverging run stops: $(grep -o 'diverged at iteration [0-9]* (per-job learning rate [^)]*)' work/div/train.log)"
else
    fail "diverging run: rc $rc ($out), $(tail -n 1 work/div/train.log)"
fi
# ... and with --on-divergence backoff it reruns at half the rate (bounded), never silently.
out=$(bash $run csv/wine work/back --feature-transform none --initial-learning-rate 100 \
      --final-learning-rate 100 --train-opts "--max-change=0" --on-divergence backoff --max-backoffs 2); rc=$?
n=$(grep -c "backoff [0-9] of 2" work/back/train.log)
if [ "$n" -ge 1 ] && { [ $rc -eq 0 ] || grep -q diverged work/back/train.log; }; then
    pass "--on-divergence backoff: $n backoff(s), then rc $rc"
else
    fail "--on-divergence backoff: $n backoffs, rc $rc"
fi

# Kaldi's ramp of jobs: 1 -> 2 jobs, the per-job rate = current jobs x the effective rate.
out=$(bash $run csv/digits work/ramp --num-jobs-initial 1 --num-jobs-final 2); rc=$?
acc=$(echo "$out" | sed -n 's/.*accuracy=\([^ ]*\).*/\1/p')
if [ $rc -eq 0 ] && grep -q "jobs ramping 1 -> 2" work/ramp/train.log && grep -q "iteration 0 / [0-9]*, 1 jobs" work/ramp/train.log \
    && awk -v a="$acc" 'BEGIN { exit !(a >= 0.85) }'; then
    pass "--num-jobs-initial 1 --num-jobs-final 2: $(grep -o '[0-9]* iterations ([^)]*)' work/ramp/train.log), test accuracy $acc"
else fail "jobs ramp: rc $rc, accuracy '$acc'"; fi
grep -q -- "--minibatch-size=64 --max-change=1.41421" work/ramp/nnet/log/train.0.1.log && \
    pass "iteration 0: half the minibatch and max-change/sqrt(2)" || fail "iteration 0 ramp options missing"

# nnet-train alone at learning rate 0.004 and its default minibatch 512 on raw digits (0..16).
w=work/digits
nnet-init $w/nnet.config - 2>/dev/null | nnet-copy --learning-rate=0.004 - nt.mdl 2>/dev/null
cat $w/egs/egs.*.ark > all.egs
for i in $(seq 10); do
    nnet-shuffle-egs --srand=$i ark:all.egs ark:- 2>/dev/null | nnet-train nt.mdl ark:- nt.mdl 2>nt.$i.log || break
done
acc=$(nnet-compute-prob nt.mdl ark:$w/test.egs 2>&1 | grep -o 'accuracy is [0-9.]*' | awk '{print $3}')
if awk -v a="$acc" 'BEGIN { exit !(a >= 0.85) }'; then
    pass "nnet-train lr 0.004, minibatch 512, 10 passes on raw digits: test accuracy $acc"
else fail "nnet-train lr 0.004 mb 512: test accuracy '$acc'"; fi
cp nt.1.log err
expect_err "nnet-train logs its clipping per component" "Max-change of component 0 .*clipped [0-9]+ of [0-9]+ steps"

# nnet-get-feature-transform: the meanvar and LDA transforms give zero-mean, unit-variance outputs
# (checked through a FixedAffine network and nnet-forward on the training features).
unit_stats() { # feats-rspecifier transform -> "max|mean| min-var max-var"
    echo "FixedAffineComponent matrix=$2" > ft.config
    nnet-init ft.config ft.mdl 2>/dev/null
    nnet-forward ft.mdl "$1" ark,t:- 2>/dev/null | tr -d '[]' | awk 'NF > 1 && $1 !~ /-/ || NF > 2 {
        for (i = 1; i <= NF; i++) if ($i ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) { s[i] += $i; q[i] += $i * $i; if (i > d) d = i }
        n++ }
        END { if (!n) { print "1e30 0 0"; exit } m = 0; lo = 1e30; hi = 0; for (i = 1; i <= d; i++) { a = s[i] / n; v = q[i] / n - a * a;
              if ((a < 0 ? -a : a) > m) m = (a < 0 ? -a : a); if (v < lo) lo = v; if (v > hi) hi = v }
              printf "%.3g %.4f %.4f\n", m, lo, hi }'
}
f=scp:work/scaled/data/train/feats.scp
expect_status "nnet-get-feature-transform (meanvar) on features scaled 1e-3..1e4" 0 \
    nnet-get-feature-transform $f mv.mat
read m lo hi <<<"$(unit_stats $f mv.mat)"
if awk -v m=$m -v l=$lo -v h=$hi 'BEGIN { exit !(m < 1e-3 && l > 0.999 && h < 1.001) }'; then
    pass "meanvar output: max |mean| $m, variances $lo..$hi"
else fail "meanvar output: max |mean| $m, variances $lo..$hi"; fi
f=scp:work/wine/data/train/feats.scp
expect_status "nnet-get-feature-transform --type=lda" 0 nnet-get-feature-transform --type=lda \
    $f scp:work/wine/data/train/labels.scp lda.mat
read m lo hi <<<"$(unit_stats $f lda.mat)"
if awk -v m=$m -v l=$lo -v h=$hi 'BEGIN { exit !(m < 1e-3 && l > 0.999 && h < 1.001) }'; then
    pass "LDA output: max |mean| $m, variances $lo..$hi"
else fail "LDA output: max |mean| $m, variances $lo..$hi"; fi
expect_status "--type=foo is an error" 1 nnet-get-feature-transform --type=foo $f x.mat
expect_status "lda without labels is a usage error" 2 nnet-get-feature-transform --type=lda $f x.mat
expect_status "a missing archive is an error" 1 nnet-get-feature-transform scp:/nonexistent.scp x.mat
