#!/usr/bin/env bash
# steps/train_mpi.sh end to end on a tiny synthetic task with 2 ranks under mpirun: both modes
# train to a good model; a missing launcher is refused. Skipped only where mpirun is missing.
. "$PARNET_TOP/tests/prog/lib.sh"

need_mpirun
recipe_links

gauss_data_dir 7 1600
mlp_config 8 32 3 NaturalGradientAffine NaturalGradientAffine learning-rate=0.01 'param-stddev=0 bias-stddev=0' \
    >nnet.config
expect_status "get_egs for 2 jobs" 0 steps/get_egs.sh --num-jobs 2 --samples-per-iter 400 \
    --num-utts-subset 200 --num-frames-diagnostic 200 --num-frames-combine 300 data/train egs

for mode in params gradients; do
    expect_status "train_mpi.sh --mode $mode" 0 steps/train_mpi.sh --num-jobs 2 --num-epochs 2 \
        --mode $mode --average-every 4 --minibatch-size 32 --initial-learning-rate 0.02 \
        --final-learning-rate 0.005 egs nnet.config exp/$mode
    grep -q "iteration 1 / 4" out && pass "$mode: iterations logged" || fail "$mode: no iteration 1 / 4"
    grep -q 'log-prob-per-frame=' exp/$mode/log/train.0.log && pass "$mode: rank 0's summary in the log" \
        || fail "$mode: no summary in exp/$mode/log/train.0.log"
    expect_accuracy "$mode: validation accuracy" exp/$mode/log/compute_prob_valid.final.log 0.9
done
grep -q 'learning-rate=0.04' <(nnet-info exp/params/0.mdl 2>/dev/null) && pass "params: rate x num_jobs" \
    || fail "params mode: initial per-rank rate is not 2 x 0.02"
expect_status "unknown launcher" 1 steps/train_mpi.sh --launcher qsub egs nnet.config exp/x
grep -q "must be mpirun, srun or sbatch" out && pass "says which launchers" || fail "no launcher message"

# params mode after the paper: BMUF through the iterations (resumed at 2 from a copy: the same
# final model), post-local SGD's warm-up counted across iterations, groups
opts="--num-jobs 2 --num-epochs 2 --average-every 4 --minibatch-size 32 --initial-learning-rate 0.02 --final-learning-rate 0.005 --combine false --cleanup false"
expect_status "train_mpi.sh --bmuf true" 0 steps/train_mpi.sh $opts --bmuf true --warmup-steps 30 egs nnet.config exp/bmuf
grep -q 'from exp/bmuf/2.bmuf' exp/bmuf/log/train.2.log && pass "bmuf: iteration 2 reads 2.bmuf" || fail "bmuf: no state read in train.2.log"
grep -q -- '--warmup-steps=30 --minibatch-offset=[1-9]' exp/bmuf/log/train.1.log && pass "warm-up counted across iterations" || fail "no minibatch offset in train.1.log"
expect_accuracy "bmuf: validation accuracy" exp/bmuf/log/compute_prob_valid.final.log 0.9
mkdir -p exp/bmuf2 && cp -r exp/bmuf/log exp/bmuf/0.mdl exp/bmuf/1.mdl exp/bmuf/2.mdl exp/bmuf/2.bmuf exp/bmuf2/
expect_status "bmuf resumed at 2" 0 steps/train_mpi.sh $opts --bmuf true --warmup-steps 30 --stage 2 egs nnet.config exp/bmuf2
cmp -s exp/bmuf/final.mdl exp/bmuf2/final.mdl && pass "bmuf: the resumed run ends with the same model" || fail "bmuf: resumed run differs"
rm exp/bmuf2/2.bmuf
expect_status "bmuf: missing state" 1 steps/train_mpi.sh $opts --bmuf true --stage 2 egs nnet.config exp/bmuf2
cat out err | grep -q 'no exp/bmuf2/2.bmuf' && pass "  named" || fail "  missing state not named"
expect_status "bmuf in gradients mode refused" 1 steps/train_mpi.sh $opts --mode gradients --bmuf true egs nnet.config exp/x
