#!/usr/bin/env bash
# GAF as the reference (Fchaubard/gradient_agreement_filtering) runs it: class-balanced ("iid")
# microbatches from nnet-shuffle-egs --class-balanced (m of every class per block, n blocks of
# distinct examples per group), Nesterov momentum and weight decay with GAF in nnet-train and
# across 2 MPI ranks, and the reference's update size (--gaf-scale=one).
. "$PARNET_TOP/tests/prog/lib.sh"

# 3 classes of 60, 30 and 10 examples in 4 dimensions
python3 - <<'PY'
import random
random.seed(3)
with open("f.txt", "w") as f, open("l.txt", "w") as l:
    for i in range(100):
        c = 0 if i < 60 else (1 if i < 90 else 2)
        f.write(f"u{i:03d}  [\n  " + " ".join(f"{random.gauss(2 * c, 1):.4f}" for _ in range(4)) + " ]\n")
        l.write(f"u{i:03d} {c}\n")
PY
copy-feats ark,t:f.txt ark:f.ark 2>/dev/null
copy-int-vector ark,t:l.txt ark:l.ark 2>/dev/null
nnet-get-egs ark:f.ark ark:l.ark ark:e.egs 2>/dev/null

# m = 2, n = 3: blocks of 6 (2 per class), groups of 18: 100 / 18 -> 5 groups, 90 examples
expect_status "class-balanced shuffle" 0 nnet-shuffle-egs --srand=4 --class-balanced=2 \
    --class-balanced-group=3 ark:e.egs ark,t:b.txt
expect_err "says what it wrote" "Wrote 90 class-balanced examples \(2 per class per block, 3 blocks per group\) drawn from 100"
grep -o '<Lab1> \[ [0-9]* \]' b.txt | awk '{print $3}' > labels
expect_eq "90 examples written" "$(wc -l <labels)" 90
bad=$(awk '{ n[int((NR - 1) / 6) "," $1]++ } END { for (k in n) if (n[k] != 2) b++; print b + 0 }' labels)
expect_eq "every block has 2 of each class" "$bad" 0
# within a group the 6 draws of class 2 (10 examples) are distinct; across groups they recur
grep -o '^u[0-9]*' b.txt > keys
dup=$(awk '{ g = int((NR - 1) / 18); if (seen[g "," $1]++) d++ } END { print d + 0 }' keys)
expect_eq "distinct examples within a group" "$dup" 0
[ $(sort keys | uniq -d | wc -l) -gt 0 ] && pass "examples recur across groups (iid)" || fail "no example recurs across groups"
nnet-shuffle-egs --srand=4 --class-balanced=2 --class-balanced-group=3 ark:e.egs ark,t:b2.txt 2>/dev/null
expect_same "seeded: the same order again" b.txt b2.txt
expect_status "too few examples for one group" 1 nnet-shuffle-egs --class-balanced=40 ark:e.egs ark:x.egs
expect_err "says why" "make no block of 40 per class"
expect_status "no buffer with balancing" 1 nnet-shuffle-egs --class-balanced=2 --buffer-size=10 ark:e.egs ark:x.egs

# GAF with Nesterov momentum and weight decay, on the balanced blocks (minibatch = 6 = C x m)
cat > lin.config <<'CFG'
AffineComponent input-dim=4 output-dim=3 learning-rate=0.01
SoftmaxComponent dim=3
CFG
nnet-init --srand=1 lin.config lin.mdl 2>/dev/null
nnet-shuffle-egs --srand=5 --class-balanced=2 --class-balanced-group=2 ark:e.egs ark:bal.egs 2>/dev/null
expect_status "GAF + Nesterov + weight decay" 0 nnet-train --minibatch-size=6 --gaf-microbatches=2 \
    --gaf-threshold=0.97 --momentum=0.9 --nesterov=true --weight-decay=0.01 lin.mdl ark:bal.egs g.mdl
expect_err "momentum logged" "momentum 0.9 \(Nesterov\), weight decay 0.01"
expect_err "GAF steps logged" "GAF: [0-9]+ steps"
expect_status "the reference's update size" 0 nnet-train --minibatch-size=6 --gaf-microbatches=2 \
    --gaf-scale=one --momentum=0.9 --nesterov=true lin.mdl ark:bal.egs g1.mdl
expect_status "bad --gaf-scale" 1 nnet-train --gaf-microbatches=2 --gaf-scale=half lin.mdl ark:bal.egs x.mdl
expect_err "names it" "--gaf-scale='half'"
expect_status "bad --weight-decay" 1 nnet-train --weight-decay=-1 lin.mdl ark:bal.egs x.mdl
expect_err "names it" "--weight-decay=-1"
# with tau >= 2 every pair agrees: GAF + momentum then equals momentum SGD on the pairs (mean fusion)
nnet-train --minibatch-size=6 --gaf-microbatches=2 --gaf-threshold=2 --gaf-fusion=mean \
    --momentum=0.5 --weight-decay=0.01 lin.mdl ark:bal.egs a.mdl 2>/dev/null
nnet-train --minibatch-size=12 --momentum=0.5 --weight-decay=0.01 lin.mdl ark:bal.egs b.mdl 2>/dev/null
nnet-copy --binary=false a.mdl a.txt 2>/dev/null; nnet-copy --binary=false b.mdl b.txt 2>/dev/null
d=$(paste -d' ' <(tr -s ' []' '\n' <a.txt | grep -E '^-?[0-9]') <(tr -s ' []' '\n' <b.txt | grep -E '^-?[0-9]') |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g\n", m }')
awk -v d="$d" 'BEGIN { exit !(d < 1e-5) }' && pass "GAF (all agree) + momentum == momentum SGD on the pairs (max diff $d)" \
    || fail "GAF + momentum vs momentum SGD: max diff $d"

if command -v mpirun >/dev/null && command -v nnet-train-mpi >/dev/null; then
    export LSAN_OPTIONS="suppressions=$TESTS/prog/lsan-openmpi.supp:print_suppressions=0"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
    cp bal.egs egs.1.ark; nnet-shuffle-egs --srand=6 --class-balanced=2 ark:e.egs ark:egs.2.ark 2>/dev/null
    expect_status "GAF across 2 ranks with Nesterov and weight decay" 0 timeout 60 mpirun \
        --allow-run-as-root --oversubscribe -np 2 nnet-train-mpi --gaf-microbatches=1 \
        --momentum=0.9 --nesterov=true --weight-decay=0.01 --check-sync=true --minibatch-size=6 \
        lin.mdl ark:egs.JOB.ark m.mdl
    expect_err "ranks identical" "Checked: all 2 ranks held bitwise the same parameters"
    expect_err "momentum logged" "momentum 0.9 \(Nesterov\), weight decay 0.01"
else
    echo "SKIP t0805 MPI part: mpirun or nnet-train-mpi missing"
fi
