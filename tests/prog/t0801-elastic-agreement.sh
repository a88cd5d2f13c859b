#!/usr/bin/env bash
# nnet-train's proximal pull and Entropy-SGD loop; nnet-average's job-level agreement, elastic
# centre and window (HWA), on 3 Gaussian classes in 8 dimensions.
. "$PARNET_TOP/tests/prog/lib.sh"

python3 - <<'PY'
import random
random.seed(7)
means = [[random.gauss(0, 1.5) for _ in range(8)] for _ in range(3)]
with open("feats.txt", "w") as f, open("labels.txt", "w") as l, open("noise.txt", "w") as n:
    for i in range(600):
        c = i % 3
        f.write(f"u{i:04d}  [\n  " + " ".join(f"{m + random.gauss(0, 1):.5f}" for m in means[c]) + " ]\n")
        l.write(f"u{i:04d} {c}\n")
        n.write(f"u{i:04d} {random.randrange(3)}\n")
PY
copy-feats ark,t:feats.txt ark:feats.ark 2>/dev/null
copy-int-vector ark,t:labels.txt ark:labels.ark 2>/dev/null
copy-int-vector ark,t:noise.txt ark:noise.ark 2>/dev/null
nnet-get-egs ark:feats.ark ark:labels.ark ark:train.egs 2>/dev/null
nnet-get-egs ark:feats.ark ark:noise.ark ark:noise.egs 2>/dev/null
mlp_config 8 16 3 Affine Affine learning-rate=0.01 >nnet.config
nnet-init --srand=3 nnet.config 0.mdl 2>/dev/null
nnet-init --srand=4 nnet.config ref.mdl 2>/dev/null
txt() { nnet-copy --binary=false $1 $2 2>/dev/null; }
prob() { nnet-compute-prob $1 ark:train.egs 2>/dev/null; }

# proximal coupling 1: every update is pulled all the way back to the reference
expect_status "proximal coupling 1" 0 nnet-train --minibatch-size=32 --proximal-model=ref.mdl \
    --proximal-coupling=1 0.mdl ark:train.egs p1.mdl
txt ref.mdl ref.txt; txt p1.mdl p1.txt
expect_same "coupling 1 gives the reference" ref.txt p1.txt
expect_status "proximal coupling 0.01" 0 nnet-train --minibatch-size=32 --proximal-model=ref.mdl \
    --proximal-coupling=0.01 0.mdl ark:train.egs p01.mdl
if awk -v a=$(prob 0.mdl) -v b=$(prob p01.mdl) 'BEGIN { exit !(b > a + 0.2) }'; then
    pass "weak coupling still trains"; else fail "weak coupling did not train"; fi
expect_status "coupling without a model" 1 nnet-train --proximal-coupling=0.5 0.mdl ark:train.egs x.mdl
printf 'AffineComponent input-dim=8 output-dim=3\nSoftmaxComponent dim=3\n' > other.config
nnet-init other.config other.mdl 2>/dev/null
expect_status "proximal model of another structure" 1 nnet-train --proximal-model=other.mdl \
    --proximal-coupling=0.1 0.mdl ark:train.egs x.mdl
expect_err "says so" "proximal model does not have the structure"

# Entropy-SGD: 19 minibatches, L = 5: outer updates after 5, 10, 15 and the last 4
expect_status "Entropy-SGD" 0 nnet-train --minibatch-size=32 --entropy-inner-steps=5 \
    --entropy-coupling=0.01 --entropy-noise=0.0001 0.mdl ark:train.egs e.mdl
expect_err "outer updates counted" "Entropy-SGD: 4 outer updates"
if awk -v a=$(prob 0.mdl) -v b=$(prob e.mdl) 'BEGIN { exit !(b > a + 0.2) }'; then
    pass "Entropy-SGD trains"; else fail "Entropy-SGD did not train"; fi
expect_status "outer rate 0" 0 nnet-train --minibatch-size=32 --entropy-inner-steps=5 \
    --entropy-outer-rate=0 0.mdl ark:train.egs e0.mdl
txt 0.mdl 0.txt; txt e0.mdl e0.txt
expect_same "outer rate 0 keeps the outer iterate" 0.txt e0.txt
expect_status "bad ema" 1 nnet-train --entropy-inner-steps=5 --entropy-ema=1 0.mdl ark:train.egs x.mdl

# Job-level agreement: two jobs on the true labels, one on random labels
nnet-train --minibatch-size=32 0.mdl ark:train.egs 1.mdl 2>/dev/null
nnet-shuffle-egs --srand=1 ark:train.egs ark:- 2>/dev/null | nnet-train --minibatch-size=32 0.mdl ark:- 2.mdl 2>/dev/null
nnet-train --minibatch-size=32 0.mdl ark:noise.egs 3.mdl 2>/dev/null
expect_status "agreement" 0 nnet-average --agreement-threshold=1 --previous-model=0.mdl 1.mdl 2.mdl 3.mdl agree.mdl
expect_err "logs each job" "Job 3 \('3.mdl'\): cosine distance to the consensus change [0-9.]+: "
d=$(grep -o 'Job [0-9] .*change [0-9.]*' err | awk '{print $NF}' | tr '\n' ' ')
if echo $d | awk '{ exit !($3 > $1 && $3 > $2) }'; then pass "the random-label job is the farthest ($d)"; else fail "distances $d"; fi
expect_status "agreement tau 2" 0 nnet-average --agreement-threshold=2 --previous-model=0.mdl 1.mdl 2.mdl 3.mdl a2.mdl
expect_err "keeps all" "Averaged 3 of 3 models"
nnet-average 1.mdl 2.mdl 3.mdl plain.mdl 2>/dev/null
if awk -v a=$(prob a2.mdl) -v b=$(prob plain.mdl) 'BEGIN { d = a - b; exit !(d < 1e-5 && d > -1e-5) }'; then
    pass "tau 2 is the plain average"; else fail "tau 2 differs from the plain average"; fi
expect_status "agreement tau 0" 0 nnet-average --agreement-threshold=0 --previous-model=0.mdl 1.mdl 2.mdl 3.mdl a0.mdl
expect_err "warns" "no job agrees with the consensus change"
txt a0.mdl a0.txt
expect_same "nothing agrees: the previous model" 0.txt a0.txt
expect_status "threshold without a previous model" 1 nnet-average --agreement-threshold=1 1.mdl 2.mdl x.mdl

# Elastic centre: alpha = 1/N is the plain average; alpha > 1/N is refused
expect_status "elastic alpha 1/3" 0 nnet-average --elastic-alpha=0.3333333 --elastic-center=0.mdl 1.mdl 2.mdl 3.mdl el.mdl
if awk -v a=$(prob el.mdl) -v b=$(prob plain.mdl) 'BEGIN { d = a - b; exit !(d < 1e-4 && d > -1e-4) }'; then
    pass "alpha 1/N is the average"; else fail "alpha 1/N differs from the average"; fi
expect_status "elastic alpha too big" 1 nnet-average --elastic-alpha=0.5 --elastic-center=0.mdl 1.mdl 2.mdl 3.mdl x.mdl

# Window (HWA's offline level): the last W models
expect_status "window 1" 0 nnet-average --window=1 1.mdl 2.mdl 3.mdl w1.mdl
txt 3.mdl 3.txt; txt w1.mdl w1.txt
expect_same "window 1 is the last model" 3.txt w1.txt
nnet-average --window=2 1.mdl 2.mdl 3.mdl w2.mdl 2>/dev/null
nnet-average 2.mdl 3.mdl w23.mdl 2>/dev/null
txt w2.mdl w2.txt; txt w23.mdl w23.txt
expect_same "window 2 averages the last two" w2.txt w23.txt
[ ! -e x.mdl ] && pass "no model after errors" || fail "model written after an error"

# Running average (icefall's model_avg): 20 minibatches, a snapshot every 10 = the average of the
# models after the first and the second 300 examples; continued from it (--average-in, 2
# snapshots) with one more snapshot = the weighted average 2:1
nnet-copy-egs ark:train.egs ark,t:- 2>/dev/null | awk '/^u0300-/ { n = 1 } { print > (n ? "b.txt" : "a.txt") }'
nnet-copy-egs ark,t:a.txt ark:first.egs 2>/dev/null; nnet-copy-egs ark,t:b.txt ark:second.egs 2>/dev/null
expect_status "running average" 0 nnet-train --minibatch-size=30 --average-period=10 \
    --average-out=avg.mdl 0.mdl ark:train.egs r20.mdl
expect_err "  of 2 snapshots" "Running average of 2 snapshots \(every 10 minibatches\) in 'avg.mdl'"
nnet-train --minibatch-size=30 0.mdl ark:first.egs r10.mdl 2>/dev/null
nnet-train --minibatch-size=30 r10.mdl ark:second.egs r20b.mdl 2>/dev/null
nnet-average r10.mdl r20b.mdl ravg.mdl 2>/dev/null
if awk -v a=$(prob avg.mdl) -v b=$(prob ravg.mdl) -v c=$(prob r20.mdl) 'BEGIN { d = a - b; e = a - c; exit !(d < 1e-5 && d > -1e-5 && (e > 1e-4 || e < -1e-4)) }'; then
    pass "the running average is the mean of the snapshots"; else fail "running average $(prob avg.mdl) vs $(prob ravg.mdl) by hand"; fi
expect_status "running average continued" 0 nnet-train --minibatch-size=30 --average-period=20 \
    --average-in=avg.mdl --average-count=2 --average-out=avg3.mdl r20.mdl ark:train.egs r40.mdl
nnet-average --weights=2:1 avg.mdl r40.mdl ravg3.mdl 2>/dev/null
if awk -v a=$(prob avg3.mdl) -v b=$(prob ravg3.mdl) 'BEGIN { d = a - b; exit !(d < 1e-5 && d > -1e-5) }'; then
    pass "continued: (2 avg + x) / 3"; else fail "continued running average $(prob avg3.mdl) vs $(prob ravg3.mdl)"; fi
expect_status "period without an output" 1 nnet-train --average-period=10 0.mdl ark:train.egs x.mdl
expect_status "no snapshot" 1 nnet-train --minibatch-size=30 --average-period=100 --average-out=x.mdl 0.mdl ark:train.egs y.mdl
expect_err "  says so" "--average-period=100: no snapshot in 20 minibatches"
