#!/usr/bin/env bash
# The claim experiments' shared parts (egs/fashion-mnist/local/exp_lib.sh, flip_labels.py) and one
# claim script end to end at a tiny size: all 10 000 test images, a row per arm with the chosen
# rate and mean ± s.d. over the seeds (checked against the per-seed values it lists), cached runs
# on a rerun.
. "$PARNET_TOP/tests/prog/lib.sh"
fashion_mnist_recipe

# mean_sd: sample standard deviation
dir=. limit=0 seeds=1 . local/exp_lib.sh
expect_eq "mean ± s.d. (n - 1)" "$(mean_sd 1 2 3 4)" "2.50 ± 1.29"
expect_eq "one value" "$(mean_sd 7.5)" "7.50 ± 0.00"
mkdir -p h24 h1 && echo 24 > h24/num_iters && echo 1 > h1/num_iters
expect_eq "head stage: half of 24 iterations" "$(exp_head_iters h24 0.5)" 12
expect_eq "head stage: at least 2" "$(exp_head_iters h1 0.5)" 2

# flip_labels.py: exactly the fraction, always to a wrong class, seeded
for i in $(seq 0 999); do echo "u$i $((i % 10))"; done > clean.txt
python3 local/flip_labels.py --fraction 0.4 --seed 3 --classes 10 flipped.txt < clean.txt > noisy.txt
expect_eq "400 of 1000 flipped" "$(wc -l < flipped.txt)" 400
expect_eq "noisy labels differ exactly there" "$(paste -d' ' clean.txt noisy.txt | awk '$2 != $4' | wc -l)" 400
expect_eq "never to the true class" "$(awk '$2 == $3' flipped.txt | wc -l)" 0
python3 local/flip_labels.py --fraction 0.4 --seed 3 --classes 10 f2.txt < clean.txt > n2.txt
expect_same "seeded" noisy.txt n2.txt
expect_status "bad fraction" 1 python3 local/flip_labels.py --fraction 1.5 x.txt < clean.txt

# claim (a) at a tiny size: N in {1, 2}, SGD, 2 seeds, 1 epoch
expect_status "claim_a at a tiny size" 0 local/claim_a_averaging.sh --limit 1200 --num-epochs 1 \
    --ns "1 2" --nets sgd --seeds "1 2" --dir exp/a
expect_eq "all 10 000 test images" "$(feat-to-len scp:exp/a/data/test/feats.scp 2>/dev/null)" 10000
expect_eq "3 arms" "$(grep -c '^sgd N=' exp/a/results.txt)" 3
expect_eq "3 grid points per arm tuned" "$(wc -l < exp/a/tuning.txt)" 9
grep -q "^sgd N=2 large-batch (128) *lr 0.000707 \|^sgd N=2 large-batch (128) *lr 0.00035\|^sgd N=2 large-batch (128) *lr 0.001 " \
    exp/a/results.txt && pass "N=2 grid {b/2, b/sqrt 2, b}" || fail "N=2 rate not from its grid"
ok=$(awk -F'test:' '/^sgd N=/ { split($2, t, ";"); n = split(t[1], v, " "); s = 0; q = 0;
        for (i = 1; i <= n; i++) { s += v[i]; q += v[i] * v[i] } m = s / n; sd = sqrt((q - n * m * m) / (n - 1));
        if (match($0, /test [0-9.]+ ± [0-9.]+/)) { split(substr($0, RSTART + 5, RLENGTH - 5), r, " ± ");
            if (sprintf("%.2f", m) != r[1] || (r[2] - sd > 0.006 || sd - r[2] > 0.006)) bad++ } else bad++ }
    END { print bad + 0 }' exp/a/results.txt)
expect_eq "test mean ± s.d. match the listed seeds" "$ok" 0
n=$(ls -d exp/a/*/lr*.s* | wc -l)
expect_status "a rerun only scores" 0 local/claim_a_averaging.sh --limit 1200 --num-epochs 1 \
    --ns "1 2" --nets sgd --seeds "1 2" --dir exp/a
expect_eq "no new runs" "$(ls -d exp/a/*/lr*.s* | wc -l)" "$n"
# a diverging grid point is a result: scored "diverged", never chosen; a diverged seed of the
# chosen rate is left out of the mean and named; a failure that is not a divergence stops
good=$(ls exp/a/sgd.avg1/lr*.s1/final.mdl | head -n 1)
fake() { # <dir> <lr> <seed>: lr 9 diverges; lr 1 diverges for seed 2 only; lr 7 fails otherwise
    case $2 in
    9) echo "steps/train.sh: training diverged at iteration 0" >&2; return 1 ;;
    7) echo "no such file" >&2; return 1 ;;
    1) [ $3 = 2 ] && { echo "training diverged" >&2; return 1; }; cp $good $1/final.mdl ;;
    *) cp $good $1/final.mdl ;;
    esac
}
(dir=exp/a seeds="1 2" ; . local/exp_lib.sh; tune "fake arm" fake.run "9 1" fake > fake.out 2>&1)
expect_eq "tune with a diverging rate ends 0" "$?" 0
expect_eq "diverged grid point scored as such" "$(grep -c '^fake arm lr=9 seed=1 valid=diverged$' exp/a/tuning.txt)" 1
grep -q "^fake arm  *lr 1  .*(seeds: 1; .*DIVERGED seeds: 2)" exp/a/results.txt \
    && pass "the other rate chosen, the diverged seed named and left out" \
    || fail "row: $(grep '^fake arm' exp/a/results.txt)"
# tune_wide: the grid grows past an edge while the best score sits there (the rate chosen or one
# tied with it; then tune); a best still at an edge after --max-widen points is said in the results
init=$(dirname $good)/0.mdl
fake_w() { if [ $2 = 4 ]; then cp $good $1/final.mdl; else cp $init $1/final.mdl; fi; }
(dir=exp/a seeds=1; . local/exp_lib.sh; tune_wide "wide arm" wide.run "1 2 4" fake_w > /dev/null 2>&1)
expect_eq "one point added past the top" "$(grep '^wide arm lr=' exp/a/tuning.txt | cut -d' ' -f3 | tr '\n' ' ')" "lr=1 lr=2 lr=4 lr=8 "
grep -q "^wide arm  *lr 4 " exp/a/results.txt && pass "the inner best chosen" || fail "row: $(grep '^wide arm' exp/a/results.txt)"
fake_t() { case $2 in 4|8) cp $good $1/final.mdl ;; *) cp $init $1/final.mdl ;; esac; }
(dir=exp/a seeds=1; . local/exp_lib.sh; tune_wide "tie arm" tie.run "2 4 8" fake_t > /dev/null 2>&1)
expect_eq "an edge tied with the best is widened past" "$(grep '^tie arm lr=' exp/a/tuning.txt | cut -d' ' -f3 | tr '\n' ' ')" "lr=2 lr=4 lr=8 lr=16 "
grep -q "^tie arm  *lr 4 " exp/a/results.txt && pass "the first of the tied chosen" || fail "row: $(grep '^tie arm' exp/a/results.txt)"
(dir=exp/a seeds=1 max_widen=0; . local/exp_lib.sh; tune_wide "edge arm" edge.run "2 4" fake_w > /dev/null 2>&1)
expect_eq "an edge left is said" "$(grep -c '^# edge arm: the best rate 4 is still an edge of {2 4}' exp/a/results.txt)" 1
(dir=exp/a seeds="1"; . local/exp_lib.sh; tune "all diverge" fake.all "9" fake > /dev/null 2>&1)
expect_eq "every rate diverged: said" "$(grep -c '^all diverge .*every rate of the grid {9} diverged' exp/a/results.txt)" 1
expect_status "a failure that is not a divergence stops" 1 \
    bash -c 'dir=exp/a seeds=1; . local/exp_lib.sh; good='$good'; '"$(declare -f fake)"'; tune "failing" fake.fail "7" fake'

# claim (f)'s fit tuning at a tiny size: one seed, TWA's fit rate widened past the edges of a
# two-point grid until its best is inside (or said), every arm scored from the same runs
expect_status "claim_f_twa_fit at a tiny size" 0 local/claim_f_twa_fit.sh --limit 1200 \
    --num-epochs 2 --samples-per-iter 300 --seeds 1 --fit-grid "0.5 1" --passes-grid 1 \
    --num-fit 100 --dir exp/f
expect_eq "5 arms" "$(grep -c 'valid .* test .*(test: ' exp/f/results.txt)" 5
rates=$(sed -n 's/^# passes 1: fit rates {\(.*\)}, best \([0-9.]*\) .*/\1|\2/p' exp/f/results.txt)
expect_eq "every fit of the final grid scored" \
    "$(grep 'passes=1 seed=1 valid=[0-9]' exp/f/tuning.txt | sort -u | wc -l)" \
    "$(echo "${rates%|*}" | wc -w)"
best=${rates#*|} grid=" ${rates%|*} "
[[ "$grid" == *" $best "* ]] && pass "the rate chosen is from the grid" || fail "best $best not in {$grid}"
grep -q "^TWA-t, fit tuned (rate $best, 1 passes)" exp/f/results.txt && pass "the tuned row names it" \
    || fail "tuned row: $(grep '^TWA-t, fit tuned' exp/f/results.txt)"
