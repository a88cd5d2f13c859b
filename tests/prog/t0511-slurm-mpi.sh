#!/usr/bin/env bash
# nnet-train-mpi launched by a real single-node Slurm (tools/slurm-local.sh): srun --mpi=pmix -n 2
# (direct launch: ranks from PMIx, no mpirun) gives bitwise the model mpirun gives and fails
# cleanly when a rank fails; steps/train_mpi.sh --launcher srun and --launcher sbatch (sbatch
# --wait running mpirun inside the allocation) train a short run. Starts Slurm if it is not up
# and stops it afterwards; skipped where Open MPI or Slurm cannot be had.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/engine-lib.sh"

need_mpirun

# 3 Gaussian classes in 8 dimensions, 320 examples per rank, 200 for validation.
gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=11, spread=1.5, dim=8)
for name, n in (("a", 320), ("b", 320), ("valid", 200)):
    g.write(name, g.utts(name, n))
PY
text_egs a b valid
cp a.egs egs.1.ark; cp b.egs egs.2.ark
mlp_config 8 16 3 NaturalGradientAffine NaturalGradientAffine learning-rate=0.02 >nnet.config
nnet-init --srand=3 nnet.config 0.mdl 2>/dev/null
# An examples directory as steps/get_egs.sh leaves it: 2 jobs, 1 archive per epoch.
mkdir -p egs/info
echo 1 > egs/info/iters_per_epoch; echo 2 > egs/info/num_jobs
cp a.egs egs/egs.1.0.ark; cp b.egs egs/egs.2.0.ark
for f in valid_diagnostic train_diagnostic combine; do cp valid.egs egs/$f.egs; done
recipe_links

engine_up slurm "$PARNET_TOP/tools/slurm-local.sh"

# Direct launch: srun starts both ranks, Open MPI wires them up through PMIx.
sr() { timeout 60 srun --mpi=pmix --kill-on-bad-exit=1 -n 2 "$@"; }
expect_status "srun --mpi=pmix -n 2 nnet-train-mpi" 0 sr nnet-train-mpi --check-sync=true \
    --average-every=4 --minibatch-size=32 0.mdl ark:egs.JOB.ark srun.mdl
expect_err "2 ranks under srun" "2 ranks, mode params"
expect_err "both ranks' examples" "Trained on 640 examples"
expect_err "ranks identical after every average" "held bitwise the same parameters after each of the 3 exchanges"
timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 nnet-train-mpi --average-every=4 \
    --minibatch-size=32 0.mdl ark:egs.JOB.ark mpirun.mdl 2>/dev/null
expect_same "srun and mpirun give the same model" srun.mdl mpirun.mdl
head -c 3000 b.egs > bad.2.ark; cp a.egs bad.1.ark
# srun reports the step as failed with the aborting rank's 1, or with 143 when Slurm's kill of the
# step (--kill-on-bad-exit, MPI_Abort) reaches a rank first: a race; either is a failed step.
sr nnet-train-mpi 0.mdl ark:bad.JOB.ark x.mdl >out 2>err; rc=$?
case $rc in 1|143) pass "a failing rank fails the srun step (exit $rc)" ;;
    *) fail "a failing rank fails the srun step: exit $rc, expected 1 or 143"; tail -n 5 err ;; esac
expect_err "names the rank and the archive" "rank 1: .*bad.2.ark"
[ ! -e x.mdl ] && pass "no model after the failure" || fail "model written after a failure"

# The recipe with each iteration launched by Slurm (2 iterations, no combination).
for l in srun sbatch; do
    expect_status "train_mpi.sh --launcher $l" 0 steps/train_mpi.sh --launcher $l --num-epochs 2 \
        --minibatch-size 32 --average-every 4 --combine false --cleanup false \
        --initial-learning-rate 0.02 --final-learning-rate 0.01 egs nnet.config exp-$l
    expect_eq "$l: both iterations logged by 2 ranks" \
        "$(grep -l 'Trained on 640 examples' exp-$l/log/train.0.log exp-$l/log/train.1.log | wc -l)" 2
    expect_accuracy "$l: valid accuracy" exp-$l/log/compute_prob_valid.final.log 0.8
done

engine_down slurmctld slurmd
