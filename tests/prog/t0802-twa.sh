#!/usr/bin/env bash
# nnet-combine --method=twa: basis of the models' span, start at the mean, projected-gradient
# training of the coefficients on validation (TWA-v) or training examples (TWA-t).
. "$PARNET_TOP/tests/prog/lib.sh"

gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=11, spread=1.2, dim=8)
g.write("train", g.utts("train", 600))
g.write("valid", g.utts("valid", 300))
PY
text_egs train valid
mlp_config 8 16 3 Affine Affine learning-rate=0.003 >nnet.config
nnet-init --srand=3 nnet.config 0.mdl 2>/dev/null
for i in 1 2 3 4; do
    nnet-shuffle-egs --srand=$i ark:train.egs ark:- 2>/dev/null | nnet-train --minibatch-size=32 $((i - 1)).mdl ark:- $i.mdl 2>/dev/null
done
prob() { nnet-compute-prob $1 ark:valid.egs 2>/dev/null; }

expect_status "TWA-v" 0 nnet-combine --method=twa 2.mdl 3.mdl 4.mdl ark:valid.egs twa.mdl
expect_err "basis size" "TWA: 3 models span 3 dimensions"
expect_err "objective change logged" "TWA: objective per frame on the validation examples changed from -[0-9.]+ to -[0-9.]+"
nnet-average 2.mdl 3.mdl 4.mdl mean.mdl 2>/dev/null
m=$(prob mean.mdl) t=$(prob twa.mdl)
if awk -v m=$m -v t=$t 'BEGIN { exit !(t > m) }'; then pass "TWA $t > mean $m"; else fail "TWA $t <= mean $m"; fi
expect_status "TWA-t" 0 nnet-combine --method=twa --twa-train-egs=ark:train.egs 2.mdl 3.mdl 4.mdl ark:valid.egs twat.mdl
expect_err "fits on training examples" "fitting the coefficients on 600 training examples"
t2=$(prob twat.mdl)
if awk -v m=$m -v t=$t2 'BEGIN { exit !(t >= m - 1e-6) }'; then pass "TWA-t $t2 >= mean $m"; else fail "TWA-t $t2 < mean $m"; fi
expect_status "duplicate model" 0 nnet-combine --method=twa --twa-epochs=0 2.mdl 3.mdl 3.mdl ark:valid.egs d.mdl
expect_err "dependent row dropped" "TWA: 3 models span 2 dimensions"
nnet-average 2.mdl 3.mdl 3.mdl dmean.mdl 2>/dev/null
if awk -v a=$(prob d.mdl) -v b=$(prob dmean.mdl) 'BEGIN { d = a - b; exit !(d < 1e-5 && d > -1e-5) }'; then
    pass "0 epochs: the mean"; else fail "0 epochs is not the mean"; fi
expect_status "bad method" 1 nnet-combine --method=swa 2.mdl 3.mdl ark:valid.egs x.mdl
expect_err "names it" "--method='swa': expected per-layer or twa"
[ ! -e x.mdl ] && pass "no output on error" || fail "output written on error"
