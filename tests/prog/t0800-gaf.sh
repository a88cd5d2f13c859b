#!/usr/bin/env bash
# nnet-train with gradient agreement filtering (GAF) on 3 Gaussian classes in 8 dimensions:
# tau >= 2 with the mean fusion is SGD on the microbatches together; tau = 0 skips every step;
# the accept rate is logged; --gaf-on=step with natural gradient; option errors.
. "$PARNET_TOP/tests/prog/lib.sh"

gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=5, spread=1.5, dim=8)
g.write("", g.utts("u", 960))
PY
copy-feats ark,t:feats.txt ark:feats.ark 2>/dev/null
copy-int-vector ark,t:labels.txt ark:labels.ark 2>/dev/null
nnet-get-egs ark:feats.ark ark:labels.ark ark:train.egs 2>/dev/null
mlp_config 8 16 3 Affine Affine learning-rate=0.01 'param-stddev=0 bias-stddev=0' >sgd.config
sed 's/^AffineComponent/NaturalGradientAffineComponent/' sgd.config > ng.config
nnet-init --srand=3 sgd.config 0.mdl 2>/dev/null
nnet-init --srand=3 ng.config ng0.mdl 2>/dev/null
prob() { nnet-compute-prob $1 ark:train.egs 2>/dev/null; }

# tau = 2, mean fusion: 2 x 16 examples per step = one SGD step of 32 (learning rate per sample)
expect_status "GAF tau=2 mean" 0 nnet-train --minibatch-size=16 --gaf-microbatches=2 \
    --gaf-threshold=2 --gaf-fusion=mean 0.mdl ark:train.egs gaf2.mdl
expect_err "every microbatch accepted" "GAF: 30 steps, 0 skipped \(nothing agreed\), 30 updates; accept rate 1.0000 \(30 of 30"
nnet-train --minibatch-size=32 0.mdl ark:train.egs sgd32.mdl 2>/dev/null
a=$(prob gaf2.mdl) b=$(prob sgd32.mdl)
if awk -v a=$a -v b=$b 'BEGIN { d = a - b; exit !(d < 1e-4 && d > -1e-4) }'; then
    pass "tau=2 mean GAF = SGD with minibatch 32 ($a vs $b)"; else fail "GAF $a vs SGD $b"; fi

# tau = 0: only exactly parallel gradients agree, so nothing is ever applied
expect_status "GAF tau=0" 0 nnet-train --minibatch-size=16 --gaf-microbatches=3 --gaf-threshold=0 \
    0.mdl ark:train.egs gaf0.mdl
expect_err "all steps skipped" "GAF: 20 steps, 20 skipped \(nothing agreed\), 0 updates; accept rate 0.0000"
nnet-copy --binary=false 0.mdl 0.txt 2>/dev/null; nnet-copy --binary=false gaf0.mdl gaf0.txt 2>/dev/null
expect_same "a model where nothing agreed is unchanged" 0.txt gaf0.txt

# the default threshold 0.97 trains, and the short last step is counted
expect_status "GAF default" 0 nnet-train --minibatch-size=16 --gaf-microbatches=4 0.mdl ark:train.egs gaf.mdl
expect_err "accept rate logged" "GAF: 15 steps, [0-9]+ skipped \(nothing agreed\), [0-9]+ updates; accept rate [01]\.[0-9]{4}"
for i in 1 2 3; do nnet-train --minibatch-size=16 --gaf-microbatches=4 gaf.mdl ark:train.egs g.mdl 2>/dev/null && mv g.mdl gaf.mdl; done
nnet-compute-prob gaf.mdl ark:train.egs >/dev/null 2>err
expect_accuracy "GAF-trained accuracy" err 0.85

# a short last step counts; a lone last microbatch is dropped (60 minibatches)
nnet-train --minibatch-size=16 --gaf-microbatches=7 0.mdl ark:train.egs x7.mdl 2>err
expect_err "short last step of 4" "GAF: 9 steps"
nnet-train --minibatch-size=16 --gaf-microbatches=59 0.mdl ark:train.egs x59.mdl 2>err
expect_err "lone last microbatch dropped" "GAF: 1 steps, 0 skipped"
rm -f x7.mdl x59.mdl

# on preconditioned steps with natural gradient
expect_status "GAF on NG steps" 0 nnet-train --minibatch-size=16 --gaf-microbatches=2 --gaf-on=step \
    --gaf-threshold=2 --gaf-fusion=mean ng0.mdl ark:train.egs ngs.mdl
a=$(prob ng0.mdl) b=$(prob ngs.mdl)
if awk -v a=$a -v b=$b 'BEGIN { exit !(b > a + 0.1) }'; then pass "NG steps fused: $a -> $b"; else fail "NG GAF $a -> $b"; fi

expect_status "bad fusion" 1 nnet-train --gaf-fusion=sum --gaf-microbatches=2 0.mdl ark:train.egs x.mdl
expect_err "names the option" "--gaf-fusion='sum': expected halving or mean"
expect_status "bad gaf-on" 1 nnet-train --gaf-on=grad 0.mdl ark:train.egs x.mdl
expect_status "negative threshold" 1 nnet-train --gaf-threshold=-1 0.mdl ark:train.egs x.mdl
[ ! -e x.mdl ] && pass "no model after option errors" || fail "model written after an error"
