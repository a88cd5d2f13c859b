#!/usr/bin/env bash
# --use-gpu in steps/train.sh and steps/train_mpi.sh (issue 18), as Kaldi's recipes: the training
# jobs get --gpu 1 from the runner (run.pl's one-job-per-GPU rule is t0500's) and the programs
# --use-gpu=<value>; the other jobs stay on the CPU. Without a GPU, "optional" trains on the CPU
# and "yes" fails the iteration with the program's reason; a bad value is refused at once.
. "$PARNET_TOP/tests/prog/lib.sh"
mpi_sanitizers
recipe_links

gauss_data_dir 11 900
mlp_config 8 24 3 NaturalGradientAffine NaturalGradientAffine learning-rate=0.01 'param-stddev=0 bias-stddev=0' \
    >nnet.config
expect_status "get_egs for 2 jobs" 0 steps/get_egs.sh --num-jobs 2 --samples-per-iter 400 \
    --num-utts-subset 100 --num-frames-diagnostic 100 --num-frames-combine 150 data/train egs
# A runner that records its options, then hands over to run.pl.
cat > logcmd.sh <<'SH'
#!/usr/bin/env bash
opts=; for a in "$@"; do case $a in *.log) break ;; esac; opts="$opts $a"; done
echo "runner:$opts" >> runner.log
exec utils/run.pl "$@"
SH
chmod +x logcmd.sh

expect_status "train.sh --use-gpu maybe is refused" 1 steps/train.sh --use-gpu maybe egs nnet.config exp/bad
grep -q -- "--use-gpu must be yes, no, wait or optional, not 'maybe'" out && pass "says the values" \
    || fail "no message for --use-gpu maybe"
[ ! -d exp/bad ] && pass "nothing started" || fail "exp/bad made for a bad --use-gpu"

expect_status "train.sh --use-gpu optional" 0 steps/train.sh --cmd ./logcmd.sh --use-gpu optional \
    --num-epochs 1 --minibatch-size 32 --initial-learning-rate 0.02 --final-learning-rate 0.005 \
    egs nnet.config exp/opt
grep -q '^runner: --gpu 1 JOB=1:2$' runner.log && pass "training jobs ask the runner for a GPU" \
    || fail "no '--gpu 1 JOB=1:2' in runner.log: $(sort -u runner.log | tr '\n' ';')"
n=$(grep -vc -- '--gpu' runner.log)
[ "$n" -gt 0 ] && pass "the other jobs ($n) ask for none" || fail "every job asked for a GPU"
grep -q -- 'nnet-train --use-gpu=optional' exp/opt/log/train.0.1.log && pass "nnet-train gets --use-gpu" \
    || fail "train.0.1.log lacks nnet-train --use-gpu=optional"
if grep -q -- '--use-gpu=optional: no GPU' exp/opt/log/train.0.1.log; then
    pass "optional without a GPU trains on the CPU"
    expect_accuracy "validation accuracy" exp/opt/log/compute_prob_valid.final.log 0.9
    expect_status "train.sh --use-gpu yes without a GPU fails" 1 steps/train.sh --use-gpu yes \
        --num-epochs 1 --minibatch-size 32 egs nnet.config exp/yes
    if grep -q 'built without CUDA' exp/opt/log/train.0.1.log; then
        # a CPU build: refused before anything starts
        grep -q -F "train.sh: --use-gpu yes: parnet was built without CUDA (make CUDA=1); use --use-gpu no (or optional)" out \
            && pass "names the build" || fail "no 'built without CUDA' message: $(tail -n 1 out)"
        [ ! -f exp/yes/0.mdl ] && pass "refused before initialising" || fail "initialised before refusing"
    else
        grep -q 'training iteration 0 failed' out && pass "names the iteration" || fail "no 'iteration 0 failed'"
        grep -q -- '--use-gpu=yes but no GPU' exp/yes/log/train.0.1.log && pass "the log says why" \
            || fail "train.0.1.log lacks the reason"
    fi
else
    grep -q -- '--use-gpu=optional: using GPU' exp/opt/log/train.0.1.log && pass "trained on a GPU" \
        || fail "train.0.1.log says neither CPU nor GPU"
fi

if ! command -v mpirun >/dev/null || ! command -v nnet-train-mpi >/dev/null; then
    echo "SKIP t0556 train_mpi.sh part: no mpirun or nnet-train-mpi"; exit 0
fi
expect_status "train_mpi.sh --use-gpu maybe is refused" 1 steps/train_mpi.sh --use-gpu maybe egs nnet.config exp/mbad
grep -q -- "--use-gpu must be yes, no, wait or optional" out && pass "says the values" || fail "no message"
expect_status "train_mpi.sh --use-gpu optional" 0 steps/train_mpi.sh --num-jobs 2 --num-epochs 1 \
    --use-gpu optional --minibatch-size 32 --initial-learning-rate 0.02 --final-learning-rate 0.005 \
    egs nnet.config exp/mopt
grep -Eq -- '--use-gpu=optional: (no GPU|using GPU)' exp/mopt/log/train.0.log \
    && pass "the ranks got --use-gpu" || fail "train.0.log lacks the --use-gpu line"
