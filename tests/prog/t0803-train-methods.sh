#!/usr/bin/env bash
# steps/train.sh with --averaging agreement|elastic|parle, --offline-window (HWA) and
# --combine-method twa, and steps/hwa.sh, on 3 Gaussian classes in 8 dimensions (2 jobs).
. "$PARNET_TOP/tests/prog/lib.sh"
ln -s $PARNET_TOP/steps steps
ln -s $PARNET_TOP/utils utils

. "$PARNET_TOP/tests/prog/gauss3-task.sh"
gauss3_task 5 1.5 || { fail "get_egs.sh"; tail -n 5 egs.log; exit 1; }
opts="--num-epochs 2 --minibatch-size 16 --initial-learning-rate 0.003 --final-learning-rate 0.001 --cleanup false"
valid_acc() { grep -o 'accuracy is [0-9.]*' $1/log/compute_prob_valid.final.log | awk '{print $3}'; }
check_acc() {
    local a=$(valid_acc $1)
    if awk -v a="$a" 'BEGIN { exit !(a > 0.85) }'; then pass "$1: valid accuracy $a > 0.85"; else fail "$1: valid accuracy '$a'"; fi
}

expect_status "agreement" 0 steps/train.sh $opts --averaging agreement --agreement-threshold 1.0 egs nnet.config agree
grep -q 'cosine distance to the consensus change' agree/log/average.1.log && pass "agreement logs distances" || fail "no distances in the averaging log"
check_acc agree

expect_status "elastic" 0 steps/train.sh $opts --averaging elastic --combine false egs nnet.config elastic
grep -q 'Moved the centre' elastic/log/average.1.log && pass "elastic centre update" || fail "no centre update"
[ -f elastic/log/pull.1.2.log ] && pass "replicas pulled toward the centre" || fail "no replica pull"
check_acc elastic

expect_status "parle" 0 steps/train.sh $opts --averaging parle --parle-inner-steps 3 --combine false egs nnet.config parle
grep -q -- '--entropy-inner-steps=3 .*--proximal-model=parle/1.mdl' parle/log/train.1.1.log && pass "parle job options" || fail "parle job options"
c0=$(grep -o 'proximal-coupling=[0-9.e-]*' parle/log/train.0.1.log | head -n 1 | cut -d= -f2)
c3=$(grep -o 'proximal-coupling=[0-9.e-]*' parle/log/train.3.1.log | head -n 1 | cut -d= -f2)
awk -v a=$c0 -v b=$c3 'BEGIN { exit !(b > a) }' && pass "couplings are scoped ($c0 -> $c3)" || fail "coupling $c0 -> $c3"
check_acc parle

expect_status "hwa" 0 steps/train.sh $opts --offline-window 2 egs nnet.config hwa
nnet-average hwa/3.mdl hwa/4.mdl by-hand.mdl 2>/dev/null
nnet-copy --binary=false hwa/final.mdl a.txt 2>/dev/null; nnet-copy --binary=false by-hand.mdl b.txt 2>/dev/null
expect_same "final.mdl = average of the last 2 models" a.txt b.txt
expect_status "hwa.sh" 0 steps/hwa.sh --window 2 hwa hwa2.mdl
nnet-copy --binary=false hwa2.mdl c.txt 2>/dev/null
expect_same "steps/hwa.sh gives the same model" a.txt c.txt
expect_status "hwa.sh missing model" 1 steps/hwa.sh --window 9 hwa x.mdl

expect_status "twa combine" 0 steps/train.sh $opts --stage 4 --combine-method twa egs nnet.config hwa
grep -q 'TWA: 4 models span 4 dimensions' hwa/log/combine.log && pass "TWA over the last models" || fail "no TWA in combine.log"
expect_status "bad averaging" 1 steps/train.sh $opts --averaging mean egs nnet.config bad

# Issue 29. Resuming elastic or parle: the centre stands in for the replicas only at iteration 0;
# a later iteration whose replicas are missing (the previous one did not finish) is an error
# naming the stage to resume from, never a silently different model.
for m in elastic parle; do
    cp $m/final.mdl $m.final.mdl
    expect_status "$m: --stage 3 without 3.*.rep.mdl" 1 steps/train.sh $opts --averaging $m --combine false --stage 3 egs nnet.config $m
    expect_err "$m: the missing replica and the stage named" "missing $m/3\.1\.rep\.mdl \(job 1's replica\): iteration 2 did not finish; resume with --stage 2"
    expect_same "$m: final.mdl untouched" $m.final.mdl $m/final.mdl
done
# One run per directory: a live run's lock (here a sleeping process standing in for it) stops a
# second run before it writes anything, naming the other run; a dead run's lock is taken over.
sleep 60 & holder=$!
mkdir hwa/.lock
printf '%s %s %s %s\nsteps/train.sh other run\n' $(hostname) $holder "$(sed 's/^.*) //' /proc/$holder/stat | awk '{print $20}')" 2026-01-01T00:00:00Z >hwa/.lock/owner
cp hwa/final.mdl hwa.final.mdl
expect_status "a second run on a locked directory" 1 steps/train.sh $opts --stage 4 egs nnet.config hwa
expect_err "the other run named" "hwa is in use by another run \(host $(hostname), pid $holder, started 2026-01-01T00:00:00Z: steps/train.sh other run\)"
expect_same "the locked directory's final.mdl untouched" hwa.final.mdl hwa/final.mdl
kill $holder; wait $holder 2>/dev/null
expect_status "a dead run's lock is taken over" 0 steps/train.sh $opts --stage 5 egs nnet.config hwa
expect_err "taking over named" "taking over the stale lock hwa/\.lock of pid $holder"
[ ! -e hwa/.lock ] && pass "the lock is released at the end" || fail "hwa/.lock left behind"
# Option values are checked before any job runs.
for lr in nan 0 -1 inf ''; do
    expect_status "--initial-learning-rate '$lr'" 1 steps/train.sh $opts --initial-learning-rate "$lr" egs nnet.config badlr
    expect_err "--initial-learning-rate '$lr' named" "\-\-initial-learning-rate '$lr': must be a positive finite number"
done
[ ! -e badlr/log ] && pass "a bad option runs no job" || fail "badlr/log exists"
# Kill -9 at a random point of an elastic run and resume: the same final.mdl (the 20-kill campaign
# for every method is tests/reliability/kill-resume.sh, run by hand; docs/RELIABILITY.md).
$PARNET_TOP/tests/reliability/kill-resume.sh --kills 1 --seed 3 --work $PWD elastic >kr.log 2>&1  # reuses egs/
grep -q 'SUMMARY elastic: 1 of 1 identical' kr.log && pass "kill -9 and resume: $(grep '^elastic kill' kr.log)" \
    || { fail "kill -9 and resume"; cat kr.log; }
