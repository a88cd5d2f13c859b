#!/usr/bin/env bash
# nnet-train-mpi --mode=parle and --mode=elastic under Open MPI (2 ranks on localhost), with
# momentum and weight decay: both train to a good model with the ranks ending identical; Parle's
# exchanges and scoping are logged; the state files carry a run across passes (two passes with
# --state-out/--state-in equal one pass over the same data, as the unit test checks in-process);
# bad options and a bad state file fail with a message; steps/train_mpi.sh runs both modes.
# (The maths is checked against the update written out in tests/unit/train-sync-test.c.)
. "$PARNET_TOP/tests/prog/lib.sh"

need_mpirun
if ! command -v nnet-train-mpi >/dev/null; then
    fail "mpirun is installed but nnet-train-mpi was not built (no mpicc?)"; exit 1
fi
mpi() { timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$@"; }
recipe_links

# 3 Gaussian classes in 8 dimensions: a Kaldi data dir of 1600 utterances; per-rank archives
# a/b (600 each, a1/a2 and b1/b2 their halves), and validation data.
gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=9, spread=1.5, dim=8)
a, b, v = g.utts("a", 640), g.utts("b", 640), g.utts("v", 300)
g.write("a", a); g.write("b", b); g.write("valid", v)
g.write("a1", a[:320]); g.write("a2", a[320:]); g.write("b1", b[:320]); g.write("b2", b[320:])
g.write("all", g.utts("u", 1600))
PY
# none: the comparisons below need an example to decode the same in every archive (8bit's
# PQ ranges come from each archive's own first examples)
text_egs --compress=none a b a1 a2 b1 b2 valid
text_data_dir all. data/train
cp a.egs egs.1.ark; cp b.egs egs.2.ark
cp a1.egs first.1.ark; cp b1.egs first.2.ark; cp a2.egs second.1.ark; cp b2.egs second.2.ark
mlp_config 8 32 3 Affine Affine learning-rate=0.002 >sgd.config
nnet-init --srand=3 sgd.config sgd.mdl 2>/dev/null
accuracy() { nnet-compute-prob $1 ark:valid.egs 2>&1 | grep -o 'accuracy is [0-9.]*' | awk '{print $3}'; }
nnet-copy --binary=false sgd.mdl init.txt 2>/dev/null
maxdiff() { paste -d' ' <(tr -s ' []' '\n' <"$1" | grep -E '^-?[0-9]') <(tr -s ' []' '\n' <"$2" | grep -E '^-?[0-9]') |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g\n", m }'; }

# Parle: 640/32 = 20 minibatches per rank, L = 5: 4 exchanges of 2 all-reduces each
expect_status "parle, 2 ranks" 0 mpi nnet-train-mpi --mode=parle --parle-inner-steps=5 \
    --parle-minibatches-per-epoch=20 --weight-decay=1e-4 --check-sync=true --minibatch-size=32 \
    sgd.mdl ark:egs.JOB.ark parle.mdl
expect_err "parle: momentum defaults to Nesterov 0.9" "momentum 0.9 \(Nesterov\), weight decay 0.0001"
expect_err "parle: 4 outer steps, counter and scoped couplings logged" "Parle: 4 outer steps; scoping counter t=20, gamma 0.01485, rho 0.1485"
expect_err "parle: 8 all-reduces" "8 all-reduces of the EMAs and anchors"
expect_err "parle: ranks end identical" "Checked: all 2 ranks held bitwise the same parameters"
acc=$(accuracy parle.mdl)
if awk -v a="$acc" 'BEGIN { exit !(a > 0.9) }'; then pass "parle accuracy $acc > 0.9"; else fail "parle accuracy '$acc'"; fi

# EASGD: tau = 4, alpha 0.45: 5 exchanges; EAMSGD's Nesterov 0.99 by default
expect_status "elastic, 2 ranks" 0 mpi nnet-train-mpi --mode=elastic --average-every=4 \
    --check-sync=true --minibatch-size=32 sgd.mdl ark:egs.JOB.ark elastic.mdl
expect_err "elastic: EAMSGD momentum" "momentum 0.99 \(Nesterov\)"
expect_err "elastic: 5 exchanges" "5 all-reduces of the elastic differences"
expect_status "elastic, plain momentum 0.9" 0 mpi nnet-train-mpi --mode=elastic --average-every=4 \
    --momentum=0.9 --nesterov=false --minibatch-size=32 sgd.mdl ark:egs.JOB.ark elastic.mdl
acc=$(accuracy elastic.mdl)
if awk -v a="$acc" 'BEGIN { exit !(a > 0.9) }'; then pass "elastic accuracy $acc > 0.9"; else fail "elastic accuracy '$acc'"; fi

# state files: two passes (first halves, then second halves) == one pass over the whole archives
for m in parle elastic; do
    opts="--mode=$m --parle-inner-steps=5 --average-every=5 --minibatch-size=32"
    mpi nnet-train-mpi $opts sgd.mdl ark:egs.JOB.ark one.mdl 2>/dev/null
    expect_status "$m: first pass writes the states" 0 mpi nnet-train-mpi $opts --state-out=st.JOB \
        sgd.mdl ark:first.JOB.ark half.mdl
    [ -s st.1 ] && [ -s st.2 ] && pass "$m: one state per rank" || fail "$m: no st.1 / st.2"
    expect_status "$m: second pass reads them" 0 mpi nnet-train-mpi $opts --state-in=st.JOB \
        half.mdl ark:second.JOB.ark two.mdl
    nnet-copy --binary=false one.mdl one.txt 2>/dev/null; nnet-copy --binary=false two.mdl two.txt 2>/dev/null
    d=$(maxdiff one.txt two.txt); moved=$(maxdiff one.txt init.txt)
    if awk -v d="$d" -v m="$moved" 'BEGIN { exit !(d < 1e-5 && m > 0.05) }'; then
        pass "$m: split run == one pass (max diff $d, moved $moved)"
    else fail "$m: split run vs one pass: max diff $d (moved $moved)"; fi
done
expect_status "a state of another mode" 1 mpi nnet-train-mpi --mode=params --state-in=st.JOB \
    half.mdl ark:second.JOB.ark x.mdl
expect_err "says why" "state 'st.[12]'.*<Mode>"
expect_status "a missing state" 1 mpi nnet-train-mpi --mode=elastic --state-in=nosuch.JOB \
    half.mdl ark:second.JOB.ark x.mdl
expect_err "names the file" "nosuch.[12]"
[ ! -e x.mdl ] && pass "no model after a bad state" || fail "model written after a bad state"

# bad options (no mpirun needed: checked before MPI starts)
expect_status "bad --parle-ema" 1 nnet-train-mpi --mode=parle --parle-ema=1 sgd.mdl ark:egs.JOB.ark x.mdl
expect_err "says which" "parle-ema in \[0, 1\)"
expect_status "bad --momentum" 1 nnet-train-mpi --momentum=1.5 sgd.mdl ark:egs.JOB.ark x.mdl
expect_err "says which" "--momentum=1.5: must lie in \[0, 1\)"
expect_status "bad --nesterov" 1 nnet-train-mpi --nesterov=maybe sgd.mdl ark:egs.JOB.ark x.mdl
expect_status "elastic needs tau >= 1" 1 nnet-train-mpi --mode=elastic --average-every=0 sgd.mdl ark:egs.JOB.ark x.mdl

# steps/train_mpi.sh runs both modes end to end, carrying the states between iterations
expect_status "get_egs for 2 jobs" 0 steps/get_egs.sh --num-jobs 2 --samples-per-iter 400 \
    --num-utts-subset 200 --num-frames-diagnostic 200 --num-frames-combine 300 data/train egs
for m in parle elastic; do
    expect_status "train_mpi.sh --mode $m" 0 steps/train_mpi.sh --num-jobs 2 --num-epochs 2 \
        --mode $m --average-every 4 --parle-inner-steps 5 --minibatch-size 32 --weight-decay 1e-5 \
        --initial-learning-rate 0.004 --final-learning-rate 0.001 --cleanup false egs sgd.config exp/$m
    grep -q -- "--state-in=exp/$m/state/1.JOB" exp/$m/log/train.1.log && pass "$m: iteration 1 reads the states" \
        || fail "$m: iteration 1 did not read exp/$m/state/1.JOB"
    [ -s exp/$m/state/4.2 ] && pass "$m: the last states written" || fail "$m: no exp/$m/state/4.2"
    grep -q 'learning-rate=0.004' <(nnet-info exp/$m/0.mdl 2>/dev/null) && pass "$m: the single-worker rate" \
        || fail "$m: initial per-rank rate is not 0.004"
    expect_accuracy "$m: validation accuracy" exp/$m/log/compute_prob_valid.final.log 0.9
done
[ $(grep -c "parle-minibatches-per-epoch=" exp/parle/log/train.0.log) -ge 1 ] && pass "parle: nb passed" \
    || fail "parle: no --parle-minibatches-per-epoch in the log"
