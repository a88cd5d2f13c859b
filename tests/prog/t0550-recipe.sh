#!/usr/bin/env bash
# The recipe path on a small slice of Fashion-MNIST: prepare_data.sh, get_egs.sh, train.sh with the
# local runner, report.sh; then crash safety: kill -9 a training job mid-iteration, check that no
# model is half-written, and resume with --stage.
. "$PARNET_TOP/tests/prog/lib.sh"
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    fail "dataset-fashion-mnist is not installed (tools/install-deps.sh installs it)"; exit 1
fi
recipe=$PARNET_TOP/egs/fashion-mnist
cp -r $recipe/local $recipe/conf $recipe/path.sh .
ln -s $PARNET_TOP/steps steps
ln -s $PARNET_TOP/utils utils
export PATH=$PARNET_BIN:$PARNET_TOP/utils:$PATH

expect_status "prepare_data.sh" 0 local/prepare_data.sh --limit 3000 data
expect_eq "train/valid/test sizes" "$(wc -l < data/train/feats.scp) $(wc -l < data/valid/feats.scp) $(wc -l < data/test/feats.scp)" "2750 250 500"
expect_eq "labels match feats" "$(cut -d' ' -f1 data/train/labels.scp | md5sum)" "$(cut -d' ' -f1 data/train/feats.scp | md5sum)"

expect_status "get_egs.sh" 0 steps/get_egs.sh --num-jobs 2 --samples-per-iter 700 \
    --valid-data-dir data/valid --num-utts-subset 200 data/train exp/egs
expect_eq "iters_per_epoch" "$(cat exp/egs/info/iters_per_epoch)" 2
n=$(for f in exp/egs/egs.*.*.ark; do nnet-copy-egs ark:$f ark:/dev/null 2>&1 | tail -n 1 | awk '{print $NF}'; done | awk '{s += $1} END {print s}')
expect_eq "every training example lands in exactly one archive" "$n" 2750
expect_eq "archives" "$(ls exp/egs/egs.*.*.ark | wc -l)" 4

expect_status "train.sh" 0 steps/train.sh --num-epochs 2 --minibatch-size 64 \
    --initial-learning-rate 0.004 --final-learning-rate 0.001 exp/egs conf/nnet.config exp/nnet
[ -f exp/nnet/final.mdl ] && pass "final.mdl written" || fail "no final.mdl"
acc=$(grep -o 'accuracy is [0-9.]*' exp/nnet/log/compute_prob_valid.final.log | awk '{print $3}')
if awk -v a="$acc" 'BEGIN { exit !(a > 0.7) }'; then pass "valid accuracy $acc > 0.7"; else fail "valid accuracy '$acc'"; fi
expect_status "report.sh" 0 steps/report.sh exp/nnet
# (iterations 0..4 and final: train.sh checks the validation objective of every new model, the last included)
expect_eq "report has a row per iteration and final" "$(grep -c -E '^([0-9]+|final) ' exp/nnet/report.txt)" 6

# Crash safety: kill -9 one training job of iteration 2 while it runs. The directory is absolute so
# that the process pattern matches this test's job only, not another checkout's test running beside.
# --on-job-failure stop: the default (rerun the job) is t0512's, on a cluster with a node killed.
crash=$PWD/exp/crash
steps/train.sh --on-job-failure stop --num-epochs 3 --minibatch-size 16 --initial-learning-rate 0.004 \
    --final-learning-rate 0.001 exp/egs conf/nnet.config $crash >crash.log 2>&1 &
runner=$!
killed=0
for i in $(seq 1 3000); do
    pid=$(pgrep -f "^nnet-train .*$crash/2\\.mdl" | head -n 1)
    if [ -n "$pid" ]; then kill -9 $pid 2>/dev/null && killed=1; break; fi
    kill -0 $runner 2>/dev/null || break
    sleep 0.02
done
wait $runner; rc=$?
[ $killed = 1 ] && pass "killed a training job mid-iteration" || fail "never saw iteration 2 run"
[ $rc -ne 0 ] && pass "train.sh fails when a job is killed" || fail "train.sh exit $rc after a kill"
grep -q 'run.pl: 1 / 2 failed' crash.log && pass "run.pl names the failure" || fail "no run.pl failure line"
bad=0
for m in exp/crash/*.mdl; do nnet-info $m >/dev/null 2>&1 || { bad=1; echo "    unreadable: $m"; }; done
[ $bad = 0 ] && pass "every .mdl left is complete" || fail "a half-written model is left"
[ ! -e exp/crash/3.mdl ] && pass "iteration 2 produced no model" || fail "3.mdl exists after the kill"
expect_status "resume with --stage 2" 0 steps/train.sh --stage 2 --num-epochs 3 --minibatch-size 16 \
    --initial-learning-rate 0.004 --final-learning-rate 0.001 exp/egs conf/nnet.config $crash
[ -f exp/crash/final.mdl ] && nnet-info exp/crash/final.mdl >/dev/null 2>&1 \
    && pass "resumed run finished" || fail "no final model after resuming"
