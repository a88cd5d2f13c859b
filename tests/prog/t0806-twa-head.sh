#!/usr/bin/env bash
# steps/twa_head.sh: TWA-t over the head-stage checkpoints of a steps/train.sh run (coefficients
# fitted on training examples), with the SWA mean of the same checkpoints, and its refusals.
. "$PARNET_TOP/tests/prog/lib.sh"
ln -s $PARNET_TOP/steps steps
ln -s $PARNET_TOP/utils utils

. "$PARNET_TOP/tests/prog/gauss3-task.sh"
gauss3_task 6 1.2 || { fail "get_egs.sh"; tail -n 5 egs.log; exit 1; }
expect_status "train.sh, models kept" 0 steps/train.sh --num-epochs 2 --minibatch-size 16 \
    --initial-learning-rate 0.003 --final-learning-rate 0.001 --cleanup false egs nnet.config exp
expect_eq "4 iterations" "$(cat exp/num_iters)" 4

expect_status "twa_head.sh over iterations 1..2 (the default: half)" 0 steps/twa_head.sh \
    --num-fit 500 --twa-epochs 3 --swa-out exp/swa_head.mdl egs exp exp/twa_head.mdl
grep -q "TWA-t over 2 checkpoints (iterations 1..2 every 1)" out && pass "says which checkpoints" \
    || fail "no 'TWA-t over 2 checkpoints' line"
grep -q "fitting the coefficients on 500 training examples" exp/log/twa_head.log \
    && pass "fitted on 500 training examples (TWA-t)" || fail "twa_head.log: not fitted on training examples"
grep -q "TWA: 2 models span 2 dimensions" exp/log/twa_head.log && pass "basis of the 2 checkpoints" \
    || fail "twa_head.log: no basis line"
for m in twa_head swa_head; do
    [ -s exp/$m.mdl ] && pass "$m.mdl written" || fail "no exp/$m.mdl"
    grep -q 'accuracy is' exp/log/compute_prob_valid.$m.log && pass "$m evaluated" || fail "$m not evaluated"
done
# TWA starts at the mean and keeps the better of the two on validation: never worse than SWA
t=$(nnet-compute-prob exp/twa_head.mdl ark:egs/valid_diagnostic.egs 2>/dev/null)
s=$(nnet-compute-prob exp/swa_head.mdl ark:egs/valid_diagnostic.egs 2>/dev/null)
awk -v t="$t" -v s="$s" 'BEGIN { exit !(t >= s - 1e-6) }' && pass "TWA-t $t >= SWA $s on validation" \
    || fail "TWA-t $t < SWA $s"
expect_status "one checkpoint is refused" 1 steps/twa_head.sh --first 2 --last 2 egs exp exp/x.mdl
grep -q "TWA needs 2 or more" out && pass "says why" || fail "no reason for one checkpoint"
rm -f exp/1.mdl
expect_status "a missing checkpoint" 1 steps/twa_head.sh --last 2 egs exp exp/x.mdl
grep -q "missing exp/1.mdl (train with --cleanup false)" out && pass "names it" || fail "missing checkpoint not named"
