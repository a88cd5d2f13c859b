#!/usr/bin/env bash
# steps/train.sh with --averaging agreement|elastic|parle|bmuf (resumed mid-run), --offline-window (HWA) and
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

# (with --hierarchical-period 2, which falls back to flat averaging under run.pl: checked below)
expect_status "hwa" 0 steps/train.sh $opts --offline-window 2 --hierarchical-period 2 egs nnet.config hwa
grep -q 'names no host (run.pl?): averaging all jobs (flat)' out && pass "hierarchical: warns and falls back to flat" || fail "hierarchical: no fallback warning"
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

# BMUF: a run, then the same run resumed at iteration 2 from a copy: the same final model (the
# block momentum is read back, not restarted); a missing or foreign state is one error.
# The same run keeps a running average of models 3 and 4 and the average of the 2 best.
expect_status "bmuf" 0 steps/train.sh $opts --averaging bmuf --block-momentum 0.5 --combine false \
    --average-period 1 --average-start 2 --average-best 2 egs nnet.config bmuf
grep -q 'Block momentum over 2 models (eta 0.5, zeta 1, Nesterov, from bmuf/2.bmuf)' bmuf/log/average.2.log && pass "bmuf: iteration 2 reads 2.bmuf" || fail "bmuf: average.2.log"
grep -q 'zero momentum' bmuf/log/average.1.log && pass "bmuf: momentum starts at zero after iteration 0" || fail "bmuf: average.1.log"
check_acc bmuf
mkdir bmuf2 && cp -r bmuf/log bmuf/0.mdl bmuf/1.mdl bmuf/2.mdl bmuf/2.bmuf bmuf2/
expect_status "bmuf resumed at 2" 0 steps/train.sh $opts --averaging bmuf --block-momentum 0.5 --combine false --stage 2 egs nnet.config bmuf2
nnet-copy --binary=false bmuf/final.mdl a.txt 2>/dev/null; nnet-copy --binary=false bmuf2/final.mdl b.txt 2>/dev/null
expect_same "bmuf: the resumed run ends with the same model" a.txt b.txt
rm bmuf2/2.bmuf
expect_status "bmuf: missing state" 1 steps/train.sh $opts --averaging bmuf --block-momentum 0.5 --stage 2 egs nnet.config bmuf2
cat out err | grep -q 'no bmuf2/2.bmuf' && pass "bmuf: missing state named" || fail "bmuf: missing state not named"
nnet-average --bmuf --previous-model=bmuf/2.mdl --block-state-out=bmuf2/2.bmuf bmuf/2.mdl bmuf/2.mdl bmuf/2.mdl x3.mdl 2>/dev/null
rm -f bmuf2/log/train.2.*
expect_status "bmuf: the state of 3 jobs" 1 steps/train.sh $opts --averaging bmuf --block-momentum 0.5 --stage 2 egs nnet.config bmuf2
cat out err | grep -q "bmuf2/2.bmuf.*<NumJobs> 3, this run has 2 jobs" && pass "  refused, named" || fail "  state of 3 jobs not refused"
ls bmuf2/log/train.2.* >/dev/null 2>&1 && fail "  jobs ran before the check" || pass "  before any job ran"
expect_status "bmuf: momentum 1" 1 steps/train.sh $opts --averaging bmuf --block-momentum 1 egs nnet.config bad
cat out err | grep -q "block-momentum '1': must lie in \[0, 1)" && pass "bmuf: momentum range" || fail "bmuf: momentum range"
expect_status "nnet-average: state of another N" 1 nnet-average --bmuf --previous-model=bmuf/2.mdl \
    --block-state-in=bmuf/3.bmuf --block-state-out=x.bmuf bmuf/3.mdl bmuf/3.mdl bmuf/3.mdl x.mdl
expect_err "  one line" '^[^ ]*ERROR.*<NumJobs> 2, this run has 3 jobs'
nnet-init nnet.config other.mdl 2>/dev/null; echo "AffineComponent input-dim=8 output-dim=3" > o.config
nnet-init o.config other.mdl 2>/dev/null
expect_status "nnet-average: state of another model" 1 nnet-average --bmuf --previous-model=other.mdl \
    --block-state-in=bmuf/3.bmuf --block-state-out=x.bmuf other.mdl other.mdl x.mdl
expect_err "  named" '3.bmuf.*another model'
expect_status "nnet-average: bmuf and agreement" 1 nnet-average --bmuf --agreement-threshold=1 \
    --previous-model=bmuf/2.mdl --block-state-out=x.bmuf bmuf/3.mdl bmuf/3.mdl x.mdl
expect_err "  exclude each other" 'agreement and bmuf exclude each other'

nnet-average bmuf/3.mdl bmuf/4.mdl ra.mdl 2>/dev/null
cmp -s ra.mdl bmuf/final.avg.mdl && pass "final.avg.mdl = the average of 3.mdl and 4.mdl" || fail "final.avg.mdl"
[ -f bmuf/log/compute_prob_valid.final_avg.log ] && pass "running average validated" || fail "no final_avg log"
best=$(for x in 1 2 3 4; do echo "$(grep -o 'average probability is [^ ]*' bmuf/log/compute_prob_valid.$x.log | awk '{print $4}') $x"; done | sort -gr | head -n 2 | awk '{ printf "bmuf/%s.mdl ", $2 }')
nnet-average $best rb.mdl 2>/dev/null
nnet-copy --binary=false rb.mdl a.txt 2>/dev/null; nnet-copy --binary=false bmuf/final.best.mdl b.txt 2>/dev/null
expect_same "final.best.mdl = the average of the 2 best ($best)" a.txt b.txt
expect_status "average_best.sh, more than there are" 0 steps/average_best.sh --num 9 bmuf best9.mdl
grep -q 'only 4 models in bmuf have a validation objective' out && pass "  says so" || fail "  no note of the 4 models"
expect_status "average_best.sh --num 0" 1 steps/average_best.sh --num 0 bmuf x.mdl

# Hierarchical averaging (--hierarchical-period 2): the hwa run above fell back to flat (run.pl
# names no host). A runner that says both jobs ran on one node gives the same models, bitwise (a
# node's average is everyone's); on two nodes the jobs part.
cat > node.sh <<'SH'
#!/usr/bin/env bash
# run.pl, then each job's log claims a host: node$(( (j - 1) / PER_NODE ))
utils/run.pl "$@"; rc=$?
for a in "$@"; do case $a in JOB=*) r=${a#JOB=} ;; *.JOB.log) log=$a ;; esac; done
[ -n "$r" ] && for j in $(seq ${r%:*} ${r#*:}); do
    f=${log//JOB/$j}; [ -f $f ] && sed -i "1i # Running on node$(( (j - 1) / PER_NODE ))" $f
done
exit $rc
SH
chmod +x node.sh
PER_NODE=2 expect_status "hierarchical, one node" 0 steps/train.sh $opts --combine false --cmd ./node.sh --hierarchical-period 2 egs nnet.config hier1
grep -q 'iteration 2: averaging within 1 node(s): node0:1,2' out && pass "  groups by host" || fail "  no node grouping"
cmp -s hwa/4.mdl hier1/4.mdl && pass "  one node: the flat fallback's model" || fail "  one node differs from flat"
PER_NODE=1 expect_status "hierarchical, two nodes" 0 steps/train.sh $opts --combine false --cmd ./node.sh --hierarchical-period 2 egs nnet.config hier2
grep -q 'iteration 2: averaging within 2 node(s)' out && pass "  two nodes" || fail "  not two nodes"
grep -q 'hier2/3.1.rep.mdl' hier2/log/train.3.1.log && pass "  job 1 carries on from its node's model" || fail "  job 1 did not start from its replica"
cmp -s hwa/4.mdl hier2/4.mdl && fail "  two nodes gave the flat model" || pass "  two nodes: another model"
expect_status "hierarchical period 1" 1 steps/train.sh $opts --hierarchical-period 1 egs nnet.config bad

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
