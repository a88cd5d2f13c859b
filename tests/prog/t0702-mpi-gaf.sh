#!/usr/bin/env bash
# nnet-train-mpi --gaf-microbatches (GAF across ranks) under Open MPI, 2 ranks: with M=1 and M=2
# per rank it is bitwise nnet-train's GAF on the ranks' minibatches interleaved in rank order
# (the same rule, reused); --gaf-on=step keeps the ranks identical; a short last step; errors.
. "$PARNET_TOP/tests/prog/lib.sh"

need_mpirun
mpi() { timeout 60 mpirun --allow-run-as-root --oversubscribe -np "$@"; }

# 3 Gaussian classes in 8 dimensions; a/b: the two ranks' data (576 each, a multiple of 32);
# ab16/ab32: both interleaved in blocks of 16/32 (a's block, then b's), as the ranks' minibatches
# reach GAF; short: b's first 200.
gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=7, spread=1.5, dim=8)
a, b = g.utts("a", 576), g.utts("b", 576)
g.write("a", a); g.write("b", b); g.write("short", b[:200])
for k in (16, 32):
    g.write(f"ab{k}", [u for i in range(0, 576, k) for u in a[i:i + k] + b[i:i + k]])
PY
# none: the equalities below need an example to decode the same in every archive (8bit's
# PQ ranges come from each archive's own first examples)
text_egs --compress=none a b ab16 ab32 short
cp a.egs egs.1.ark; cp b.egs egs.2.ark; cp a.egs uneven.1.ark; cp short.egs uneven.2.ark
mlp_config 8 16 3 Affine Affine learning-rate=0.01 >sgd.config
sed 's/^AffineComponent/NaturalGradientAffineComponent/' sgd.config > ng.config
nnet-init --srand=3 sgd.config sgd.mdl 2>/dev/null
nnet-init --srand=3 ng.config ng.mdl 2>/dev/null
text() { nnet-copy --binary=false "$1" "$1.txt" 2>/dev/null; }
gafline() { grep -o 'GAF: [0-9]* steps.*' "$1"; }

expect_status "--help documents GAF across ranks" 0 nnet-train-mpi --help
expect_err "help says the order" "offered in rank order, rank 0's M first"

# M = 1 per rank, tau = 0.97, halving: each step is rank 0's minibatch, then rank 1's
expect_status "GAF M=1, 2 ranks" 0 mpi 2 nnet-train-mpi --gaf-microbatches=1 --check-sync=true \
    --minibatch-size=16 sgd.mdl ark:egs.JOB.ark m1.mdl
cp err m1.err
expect_err "gathers every step" "36 all-reduces of the gathered microgradients"
expect_err "ranks identical" "held bitwise the same parameters after each of the 36 exchanges"
nnet-train --gaf-microbatches=2 --minibatch-size=16 sgd.mdl ark:ab16.egs s1.mdl 2>s1.err
text m1.mdl; text s1.mdl; text sgd.mdl
expect_same "GAF M=1 x 2 ranks == nnet-train GAF M=2 on the interleaved data" m1.mdl.txt s1.mdl.txt
expect_eq "same GAF counts as nnet-train" "$(gafline m1.err)" "$(gafline s1.err)"
if cmp -s m1.mdl.txt sgd.mdl.txt; then fail "GAF M=1 did not train"; else pass "GAF M=1 trained"; fi

# M = 2 per rank and a tighter threshold (some microbatches rejected): rank 0's 2, then rank 1's 2
expect_status "GAF M=2, tau=0.8, 2 ranks" 0 mpi 2 nnet-train-mpi --gaf-microbatches=2 \
    --gaf-threshold=0.8 --gaf-fusion=mean --minibatch-size=16 sgd.mdl ark:egs.JOB.ark m2.mdl
cp err m2.err
nnet-train --gaf-microbatches=4 --gaf-threshold=0.8 --gaf-fusion=mean --minibatch-size=16 \
    sgd.mdl ark:ab32.egs s2.mdl 2>s2.err
text m2.mdl; text s2.mdl
expect_same "GAF M=2 x 2 ranks == nnet-train GAF M=4 on the interleaved data" m2.mdl.txt s2.mdl.txt
expect_eq "same GAF counts" "$(gafline m2.err)" "$(gafline s2.err)"
rate=$(gafline m2.err | grep -o 'accept rate [0-9.]*' | awk '{print $3}')
if awk -v r="$rate" 'BEGIN { exit !(r > 0 && r < 1) }'; then pass "tau=0.8 rejects some ($rate)"
else fail "tau=0.8 accept rate '$rate' (wanted strictly between 0 and 1)"; fi

# preconditioned steps with NG components, uneven archives: 13 minibatches per rank with M=2
# -> 6 full steps and a short one of 1 per rank (2 microbatches), ranks identical throughout
expect_status "GAF on NG steps, uneven" 0 mpi 2 nnet-train-mpi --gaf-microbatches=2 --gaf-on=step \
    --check-sync=true --minibatch-size=16 ng.mdl ark:uneven.JOB.ark ng2.mdl
expect_err "short last step taken, ranks identical" "after each of the 7 exchanges"
expect_err "GAF steps logged" "GAF: 7 steps, [0-9]+ skipped"

# errors
expect_status "GAF with params mode" 1 nnet-train-mpi --mode=params --gaf-microbatches=1 \
    sgd.mdl ark:egs.JOB.ark x.mdl
expect_err "says why" "needs --mode=gradients"
expect_status "one rank, one microbatch" 1 mpi 1 nnet-train-mpi --gaf-microbatches=1 \
    sgd.mdl ark:egs.JOB.ark x.mdl
expect_err "names the problem" "GAF needs at least 2 microbatches per update: 1 rank"
expect_status "bad fusion" 1 nnet-train-mpi --gaf-microbatches=1 --gaf-fusion=max \
    sgd.mdl ark:egs.JOB.ark x.mdl
[ ! -e x.mdl ] && pass "no model written after errors" || fail "model written after an error"
