#!/usr/bin/env bash
# The recipe path on a small slice of Fashion-MNIST: prepare_data.sh, get_egs.sh, train.sh with the
# local runner, report.sh; then crash safety: kill -9 a training job mid-iteration, check that no
# model is half-written, and resume with --stage.
. "$PARNET_TOP/tests/prog/lib.sh"
fashion_mnist_recipe

expect_status "prepare_data.sh" 0 local/prepare_data.sh --limit 3000 data
expect_eq "train/valid/test sizes" "$(wc -l < data/train/feats.scp) $(wc -l < data/valid/feats.scp) $(wc -l < data/test/feats.scp)" "2750 250 500"
expect_eq "labels match feats" "$(cut -d' ' -f1 data/train/labels.scp | md5sum)" "$(cut -d' ' -f1 data/train/feats.scp | md5sum)"

expect_status "get_egs.sh" 0 steps/get_egs.sh --num-jobs 2 --samples-per-iter 700 \
    --valid-data-dir data/valid --num-utts-subset 200 data/train exp/egs
expect_eq "iters_per_epoch" "$(cat exp/egs/info/iters_per_epoch)" 2
n=$(for f in exp/egs/egs.*.*.ark; do nnet-copy-egs ark:$f ark:/dev/null 2>&1 | tail -n 1 | awk '{print $NF}'; done | awk '{s += $1} END {print s}')
expect_eq "every training example lands in exactly one archive" "$n" 2750
expect_eq "archives" "$(ls exp/egs/egs.*.*.ark | wc -l)" 4
expect_eq "info/num_pdfs: the largest label + 1" "$(cat exp/egs/info/num_pdfs)" 10
grep -q "^steps/get_egs.sh: data/train: 2750 labelled utterances, 2750 frames, labels 0..9$" out \
    && pass "get_egs.sh says what it checked" || fail "no data line: $(grep labelled out)"
# Every check before any job starts (issue 32), each with one console line.
mkdir -p small bad
head -n 20 data/train/feats.scp > small/feats.scp; head -n 20 data/train/labels.scp > small/labels.scp
expect_status "20 utterances, --num-utts-subset 300" 1 steps/get_egs.sh small exp/egs_small
expect_eq "says what to do" "$(tail -n 1 out)" "steps/get_egs.sh: small has 20 labelled utterances, too few for --num-utts-subset 300 (utterances held out for validation): use at most a quarter of them (--num-utts-subset 5) or give --valid-data-dir"
[ ! -d exp/egs_small ] && pass "nothing made" || fail "exp/egs_small made"
sed 's/dim=10/dim=8/' conf/nnet.config > c8.config
expect_status "--nnet-config with 8 outputs" 1 steps/get_egs.sh --nnet-config c8.config small exp/egs_small
grep -qF "steps/get_egs.sh: small/labels.scp: label 9 (utterance " out && grep -qF "is not below --num-pdfs 8: labels are pdf-ids 0..7; Kaldi alignments hold transition-ids, which ali-to-pdf turns into pdf-ids" out \
    && pass "a label beyond the network's output: named" || fail "label range: $(tail -n 1 out)"
head -n 3 data/train/feats.scp > bad/feats.scp
copy-int-vector "scp:head -n 3 data/train/labels.scp |" ark,t:- 2>/dev/null | sed '1s/$/ 3/' | copy-int-vector ark,t:- ark,scp:$PWD/bad/labels.ark,bad/labels.scp 2>/dev/null
expect_status "frames against labels" 1 steps/get_egs.sh --num-utts-subset 0 bad exp/egs_bad
expect_eq "names the utterance" "$(tail -n 1 out | sed 's/(first: [^:]*:/(first: U:/')" "steps/get_egs.sh: bad: 2 of 3 utterances have as many labels as frames, 1 not (first: U: 1 frames of features, 2 labels); labels.scp must hold one label (pdf-id) per frame of feats.scp"
expect_status "train.sh: labels beyond the config's output" 1 steps/train.sh exp/egs c8.config exp/c8
expect_eq "before initialising" "$(tail -n 1 out)" "steps/train.sh: the examples in exp/egs have labels up to 9 (exp/egs/info/num_pdfs) but c8.config's output dim is 8: labels must be pdf-ids below it"

expect_status "train.sh" 0 steps/train.sh --num-epochs 2 --minibatch-size 64 \
    --initial-learning-rate 0.004 --final-learning-rate 0.001 exp/egs conf/nnet.config exp/nnet
[ -f exp/nnet/final.mdl ] && pass "final.mdl written" || fail "no final.mdl"
# The console (issue 32): one line per iteration from the logs, a summary at the end.
n=$(grep -cE '^steps/train.sh: iteration [0-3] / 4, 2 jobs, per-job learning rate [0-9.e-]+: train -[0-9.]+ \(acc [0-9.]+%\), valid -[0-9.]+ \(acc [0-9.]+%\), (no step clipped|clipped [0-9.]+% of steps \((component [0-9]+|global max-change)\))(, [0-9]+ warnings \(log/train\.[0-9]\.\*\.log\))?, [0-9.]+ s, ETA [0-9.]+ s$' out)
expect_eq "one console line per iteration (objectives, accuracies, clipping, seconds, ETA)" "$n" 4
grep -qE '^steps/train.sh: summary: valid objective -2.3026 -> -0.[0-9]+, valid accuracy [0-9.]+% -> [0-9.]+%; final train objective -[0-9.]+ \(acc [0-9.]+%\); [0-9][0-9. a-z]* s$' out \
    && pass "summary line" || fail "no summary line: $(grep summary out)"
# nnet-show-progress: per-component change between two models
expect_status "nnet-show-progress" 0 nnet-show-progress exp/nnet/1.mdl exp/nnet/2.mdl
grep -qE '^Relative parameter differences per layer are \[ [0-9.e-]+ [0-9.e-]+ [0-9.e-]+ \]$' out \
    && pass "one relative change per updatable component" || fail "nnet-show-progress: $(cat out)"
nnet-show-progress exp/nnet/2.mdl exp/nnet/2.mdl >out 2>/dev/null
expect_eq "no change between a model and itself" "$(head -n 1 out)" "Parameter differences per layer are [ 0 0 0 ]"
# A config error names the user's file and line, not the generated init.config.
sed 's/^\(RectifiedLinearComponent\) dim=/\1 dimm=/' conf/nnet.config > bad.config
l=$(grep -n dimm bad.config | head -n 1 | cut -d: -f1)
expect_status "train.sh with a bad config line" 1 steps/train.sh exp/egs bad.config exp/bad
grep -q "^steps/train.sh: bad.config line $l: RectifiedLinearComponent: unknown key 'dimm' (log exp/bad/log/init.log)$" out \
    && pass "names bad.config line $l" || fail "config error: $(tail -n 1 out)"
# Option errors come last, after the usage, with the closest name.
expect_status "train.sh --num-job" 1 steps/train.sh --num-job 2 exp/egs conf/nnet.config exp/bad
expect_eq "script option error last, with a suggestion" "$(tail -n 1 err)" "steps/train.sh: invalid option --num-job (did you mean --num-jobs?)"
expect_status "nnet-train --minibatch-sz" 2 nnet-train --minibatch-sz=3 a b c
expect_eq "program option error last, with a suggestion" "$(tail -n 1 err)" "nnet-train: unknown option '--minibatch-sz' (did you mean --minibatch-size?)"
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
