#!/usr/bin/env bash
# nnet-train-mpi under Open MPI (2 ranks on localhost): averaging keeps the ranks identical,
# gradients mode equals one process on the concatenated minibatch, K=1 averaging at 2 x the rate
# (Plain-SGD equalities hold without clipping: those runs turn the default max-changes off.)
# equals gradients mode, uneven archives end together, and a failing or killed rank fails the job
# (with a message, no model, no hang). Skipped only where mpirun or the program is missing.
. "$PARNET_TOP/tests/prog/lib.sh"

need_mpirun
if ! command -v nnet-train-mpi >/dev/null; then
    fail "mpirun is installed but nnet-train-mpi was not built (no mpicc?)"; exit 1
fi
# As root (CI), Open MPI wants --allow-run-as-root; --oversubscribe lets 2 ranks share 1 core.
mpi() { timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$@"; }

# 3 Gaussian classes in 8 dimensions; a/b: the two ranks' data (600 each); ab: the two
# interleaved in blocks of 16 (a's 16, then b's 16, ...) for the single-process comparison.
gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=5, spread=1.5, dim=8)
a, b, v = g.utts("a", 600), g.utts("b", 600), g.utts("va", 300)
g.write("a", a); g.write("b", b); g.write("valid", v)
g.write("ab", [u for k in range(0, 600, 16) for u in a[k:k + 16] + b[k:k + 16]])
g.write("short", b[:300])
PY
# none: the comparisons below need an example to decode the same in every archive (8bit's
# PQ ranges come from each archive's own first examples)
text_egs --compress=none a b ab valid short
cp a.egs egs.1.ark; cp b.egs egs.2.ark; cp a.egs uneven.1.ark; cp short.egs uneven.2.ark
mlp_config 8 32 3 NaturalGradientAffine NaturalGradientAffine learning-rate=0.02 'param-stddev=0 bias-stddev=0' >ng.config
mlp_config 8 32 3 Affine Affine 'learning-rate=0.01 max-change=0' >sgd.config
nnet-init --srand=3 ng.config ng.mdl 2>/dev/null
nnet-init --srand=3 sgd.config sgd.mdl 2>/dev/null

expect_status "--help works without mpirun" 0 nnet-train-mpi --help
expect_err "help says NG state is local" "Natural-gradient state stays local"

# params mode, K = 4: 19 minibatches per rank -> 4 averages + the final one, all checked identical
expect_status "params mode, 2 ranks" 0 mpi nnet-train-mpi --check-sync=true --minibatch-size=32 \
    --average-every=4 ng.mdl ark:egs.JOB.ark p.mdl
expect_err "ranks identical after every averaging" "Checked: all 2 ranks held bitwise the same parameters after each of the 5 exchanges"
expect_err "bytes are reported" "5 all-reduces of the parameters, 0.008 MB of payload per rank"
expect_err "both ranks' examples counted" "Trained on 1200 examples"
expect_err "parseable objective" "log-prob-per-frame=-[0-9.]+"
nnet-compute-prob p.mdl ark:valid.egs >out 2>err
expect_accuracy "params-mode accuracy" err 0.9

# params mode after the paper: block momentum carried between two passes in one state file;
# post-local SGD's warm-up; groups (of 2: the MPI sub-communicator); bad values refused early
expect_status "bmuf pass 1" 0 mpi nnet-train-mpi --check-sync=true --minibatch-size=32 \
    --average-every=4 --bmuf --block-state-out=b1.bmuf ng.mdl ark:egs.JOB.ark b1.mdl
expect_err "bmuf: eta 1 - 1/N, from zero" "block momentum 0.5 \(Nesterov\), block learning rate 1, from zero momentum"
expect_status "bmuf pass 2 reads the state" 0 mpi nnet-train-mpi --minibatch-size=32 \
    --average-every=4 --bmuf --block-state-in=b1.bmuf --block-state-out=b2.bmuf b1.mdl ark:egs.JOB.ark b2.mdl
expect_err "bmuf: from the state" "from b1.bmuf"
expect_accuracy "bmuf accuracy" <(nnet-compute-prob b2.mdl ark:valid.egs 2>&1) 0.9
expect_status "bmuf: the state of another N refused" 1 mpi nnet-train-mpi --minibatch-size=32 --bmuf \
    --block-state-in=b1.bmuf --block-nesterov=false b1.mdl ark:egs.JOB.ark x.mdl
expect_err "  says why" "b1.bmuf.*<Nesterov> true, this run's --block-nesterov false"
expect_status "bmuf: momentum 1 refused" 1 nnet-train-mpi --bmuf --block-momentum=1 ng.mdl ark:egs.JOB.ark x.mdl
expect_err "  one line" "--block-momentum=1: must lie in \[0, 1\)"
expect_status "post-local and groups, 2 ranks" 0 mpi nnet-train-mpi --check-sync=true --minibatch-size=32 \
    --average-every=8 --warmup-steps=3 --group-size=2 --group-average-every=2 ng.mdl ark:egs.JOB.ark pl.mdl
expect_err "post-local logged" "post-local SGD: 3 synchronous minibatches"
# 19 minibatches per rank: 3 synchronous, then 16 local: all ranks at 8 and 16, the group at 2, 4, 6
# after each: 3 + 2 + 6 exchanges, each checked
expect_err "groups checked" "Checked: all 2 ranks held bitwise the same parameters after each of the 11 exchanges"
expect_status "group size not dividing the ranks" 1 mpi nnet-train-mpi --group-size=3 \
    --group-average-every=2 ng.mdl ark:egs.JOB.ark x.mdl
expect_err "  says so" "--group-size=3: must divide the 2 ranks"
expect_status "group period 0" 1 nnet-train-mpi --group-size=2 ng.mdl ark:egs.JOB.ark x.mdl
expect_err "  says so" "--group-size=2 needs --group-average-every of at least 1"

# gradients mode with NG components: identical ranks after every summed step
expect_status "gradients mode, NG, 2 ranks" 0 mpi nnet-train-mpi --mode=gradients --check-sync=true \
    --minibatch-size=32 ng.mdl ark:egs.JOB.ark g.mdl
expect_err "ranks identical after every step" "held bitwise the same parameters after each of the 19 exchanges"

# gradients mode, plain SGD: equals one process with minibatches of 2 x 16 from the interleaved archive
mpi nnet-train-mpi --mode=gradients --max-change=0 --minibatch-size=16 sgd.mdl ark:egs.JOB.ark g2.mdl 2>err
expect_err "gradients mode ran" "Trained on 1200 examples \(1200 frames, 76 minibatches"
nnet-train --max-change=0 --minibatch-size=32 sgd.mdl ark:ab.egs single.mdl 2>/dev/null
nnet-copy --binary=false g2.mdl g2.txt 2>/dev/null; nnet-copy --binary=false single.mdl single.txt 2>/dev/null
nnet-copy --binary=false sgd.mdl init.txt 2>/dev/null
# largest |a - b| over all numbers of two text models
maxdiff() { paste -d' ' <(tr -s ' []' '\n' <"$1" | grep -E '^-?[0-9]') <(tr -s ' []' '\n' <"$2" | grep -E '^-?[0-9]') |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g\n", m }'; }
d=$(maxdiff g2.txt single.txt); moved=$(maxdiff single.txt init.txt)
if awk -v d="$d" -v m="$moved" 'BEGIN { exit !(d < 1e-4 && m > 0.05) }'; then
    pass "gradients mode == single process on the concatenated minibatch (max diff $d, moved $moved)"
else fail "gradients mode vs single process: max diff $d (moved $moved)"; fi

# params mode with K = 1 at twice the learning rate is the same algorithm (plain SGD)
nnet-copy --learning-rate=0.02 sgd.mdl sgd2.mdl 2>/dev/null
mpi nnet-train-mpi --average-every=1 --max-change=0 --minibatch-size=16 sgd2.mdl ark:egs.JOB.ark k1.mdl 2>/dev/null
nnet-copy --binary=false --learning-rate=0.01 k1.mdl k1.txt 2>/dev/null  # same rate token as g2
d=$(maxdiff k1.txt g2.txt)
if awk -v d="$d" 'BEGIN { exit !(d < 1e-4) }'; then pass "K=1 averaging at 2x rate == gradients mode (max diff $d)"
else fail "K=1 averaging vs gradients mode: max diff $d"; fi

# uneven archives: 19 and 10 minibatches -> both ranks stop after 10, cleanly
expect_status "uneven archives end cleanly" 0 mpi nnet-train-mpi --check-sync=true --minibatch-size=32 \
    ng.mdl ark:uneven.JOB.ark u.mdl
expect_err "stopped together" "Trained on 6[0-9][0-9] examples \([0-9]+ frames, 20 minibatches over 2 ranks"
expect_err "says a rank had examples left" "1 rank\(s\) stopped with examples left"

# a rank with a truncated archive: the job fails with the rank's message and writes nothing
head -c 5000 b.egs > bad.2.ark; cp a.egs bad.1.ark
expect_status "a failing rank fails the job" 1 mpi nnet-train-mpi ng.mdl ark:bad.JOB.ark x.mdl
expect_err "names the rank and the archive" "rank 1: .*bad.2.ark.*truncated"
expect_err "the other rank says which failed" "rank 1 failed"
# a rank killed outright (its input command kills it): no hang, non-zero exit, Open MPI says so
mpi nnet-train-mpi ng.mdl 'ark:cat egs.JOB.ark; if [ JOB = 2 ]; then kill -9 $PPID; fi |' x.mdl >out 2>err
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then pass "a killed rank fails the job (exit $rc, no hang)"
else fail "killed rank: exit $rc (124 = hung until the timeout)"; fi
expect_err "mpirun names the dead rank" "process rank 1 .*exited on signal 9"
expect_status "missing model" 1 mpi nnet-train-mpi nosuch.mdl ark:egs.JOB.ark x.mdl
expect_err "names the model" "cannot read model 'nosuch.mdl'"
[ ! -e x.mdl ] && pass "no model written after failures" || fail "model written after a failure"
expect_status "bad --mode" 1 nnet-train-mpi --mode=sideways ng.mdl ark:egs.JOB.ark x.mdl
expect_status "usage error" 2 nnet-train-mpi ng.mdl
expect_status "--num-threads=0" 1 nnet-train-mpi --num-threads=0 ng.mdl ark:egs.JOB.ark x.mdl
expect_err "names the option" "ERROR .*--num-threads=0: must be at least 1"

# --use-gpu as nnet-train's. A bad value fails on every rank with one line.
expect_status "--use-gpu=maybe" 1 mpi nnet-train-mpi --use-gpu=maybe ng.mdl ark:egs.JOB.ark x.mdl
expect_err "names the values" "expected yes, no, optional or wait, got 'maybe'"
expect_eq "one error line for all ranks" "$(grep -c 'ERROR' err)" 1
mpi nnet-train-mpi --use-gpu=no --minibatch-size=32 --average-every=4 ng.mdl ark:egs.JOB.ark gc.mdl 2>/dev/null
pc=$(nnet-compute-prob gc.mdl ark:valid.egs 2>/dev/null)
mpi nnet-train-mpi --use-gpu=yes --minibatch-size=32 --average-every=4 ng.mdl ark:egs.JOB.ark gg.mdl >out 2>err
if [ $? -ne 0 ]; then  # no GPU here (or a CPU-only build): a clear one-line error, no model
    expect_err "--use-gpu=yes without a GPU: clear error" "ERROR .*rank 0: --use-gpu=yes but no GPU: "
    expect_eq "one error line, from the lowest rank" "$(grep -c 'ERROR' err)" 1
    [ ! -e gg.mdl ] && pass "no model written" || fail "model written without a GPU"
    expect_status "--use-gpu=optional without a GPU" 0 mpi nnet-train-mpi --use-gpu=optional \
        --minibatch-size=32 --average-every=4 ng.mdl ark:egs.JOB.ark go.mdl
    expect_err "optional says why" "--use-gpu=optional: no GPU \(.*\); running on the CPU"
    expect_same "optional on the CPU gives the CPU's model" go.mdl gc.mdl
    echo "SKIP nnet-train-mpi --use-gpu: no GPU, nothing compared with the CPU"
else  # each rank on a GPU, parameters all-reduced with NCCL
    expect_err "names the GPU" "--use-gpu=yes: using GPU"
    pg=$(nnet-compute-prob gg.mdl ark:valid.egs 2>/dev/null)
    if awk -v a="$pg" -v b="$pc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-3 * (b < 0 ? -b : b) + 1e-3) }'
    then pass "GPU ranks (NCCL) train as the CPU ranks ($pg vs $pc)"
    else fail "GPU ranks: $pg vs CPU ranks $pc"; fi
fi
