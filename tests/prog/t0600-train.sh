#!/usr/bin/env bash
# nnet-train, nnet-compute-prob, nnet-forward, nnet-average, nnet-combine on a small synthetic task:
# 3 Gaussian classes in 8 dimensions, written as a Kaldi text feature archive.
. "$PARNET_TOP/tests/prog/lib.sh"

gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=5, spread=1.5, dim=8)
g.write("train", g.utts("tr", 1200))
g.write("valid", g.utts("va", 300))
PY
text_egs train valid
mlp_config 8 32 3 NaturalGradientAffine Affine learning-rate=0.01 'param-stddev=0 bias-stddev=0' >nnet.config
expect_status "nnet-init" 0 nnet-init --srand=3 nnet.config 0.mdl

expect_status "compute-prob of the initial model" 0 nnet-compute-prob 0.mdl ark:valid.egs
expect_eq "initial log-prob is log(1/3)" "$(cat out)" "-1.098612"
expect_err "Kaldi's summary line" "Saw 300 examples, average probability is -1.098612 and accuracy is [0-9.]+ with total weight 300"

expect_status "nnet-train" 0 nnet-train --minibatch-size=32 --minibatches-per-phase=10 0.mdl ark:train.egs 1.mdl
expect_err "progress line" "Minibatches 0-9: average objective"
expect_err "parseable objective" "log-prob-per-frame=-[0-9.]+"
nnet-compute-prob 1.mdl ark:valid.egs >out 2>err
expect_accuracy "trained accuracy" err 0.9
if awk -v a="$(cat out)" 'BEGIN { exit !(a > -0.4) }'; then pass "trained log-prob $(cat out) > -0.4"; else fail "trained log-prob $(cat out)"; fi

# the same seed and data give the same model
nnet-train --minibatch-size=32 0.mdl ark:train.egs 1b.mdl 2>/dev/null
expect_same "training is deterministic" 1.mdl 1b.mdl

# a second job on other data, then average: the average of a model with itself is the model
nnet-shuffle-egs --srand=9 ark:train.egs ark:- 2>/dev/null | nnet-train --minibatch-size=32 0.mdl ark:- 2.mdl 2>/dev/null
expect_status "nnet-average of a model with itself" 0 nnet-average 1.mdl 1.mdl self.mdl
nnet-copy --binary=false 1.mdl 1.txt 2>/dev/null; nnet-copy --binary=false self.mdl self.txt 2>/dev/null
expect_same "self-average is the model" 1.txt self.txt
expect_status "nnet-average two models" 0 nnet-average 1.mdl 2.mdl avg.mdl
expect_status "nnet-average with weights" 0 nnet-average --weights=1:0 1.mdl 2.mdl w.mdl
nnet-copy --binary=false w.mdl w.txt 2>/dev/null
expect_same "weights 1:0 give the first model" 1.txt w.txt
expect_status "wrong number of weights" 1 nnet-average --weights=1:2:3 1.mdl 2.mdl x.mdl
expect_err "names the count" "expected 2 "
cat > other.config <<'CFG'
AffineComponent input-dim=8 output-dim=3 learning-rate=0.01
SoftmaxComponent dim=3
CFG
nnet-init other.config other.mdl 2>/dev/null
expect_status "average of different structures fails" 1 nnet-average 1.mdl other.mdl x.mdl
expect_err "names the model" "other.mdl' does not have the structure"
[ ! -e x.mdl ] && pass "no output on failure" || fail "output written on failure"

# combination: never worse than the best input on the validation examples
expect_status "nnet-combine" 0 nnet-combine 0.mdl 1.mdl 2.mdl ark:valid.egs comb.mdl
expect_err "combination log line" "Combining nnets, objf per frame changed from"
best=$(for m in 0 1 2 avg; do nnet-compute-prob $m.mdl ark:valid.egs 2>/dev/null; done | sort -g | tail -n 1)
comb=$(nnet-compute-prob comb.mdl ark:valid.egs 2>/dev/null)
if awk -v c="$comb" -v b="$best" 'BEGIN { exit !(c >= b - 1e-5) }'; then
    pass "combined $comb >= best input $best"; else fail "combined $comb < best input $best"; fi

# forward: posteriors sum to 1; with --apply-log they are logs
expect_status "nnet-forward" 0 nnet-forward 1.mdl scp:valid.feats.scp ark,t:post.txt
rows=$(grep -c '^  ' post.txt)
expect_eq "one output row per utterance" "$rows" 300
bad=$(awk '/^  / { s = 0; for (i = 1; i <= NF; i++) if ($i != "]") s += $i; if (s < 0.999 || s > 1.001) n++ } END { print n + 0 }' post.txt)
expect_eq "rows sum to 1" "$bad" 0
expect_status "nnet-forward --apply-log" 0 nnet-forward --apply-log=true 1.mdl scp:valid.feats.scp ark,t:logpost.txt
pos=$(awk '/^  / { for (i = 1; i <= NF; i++) if ($i != "]" && $i > 0) n++ } END { print n + 0 }' logpost.txt)
expect_eq "log-posteriors are <= 0" "$pos" 0

# bad input
printf 'va0000 7\n' > bad.labels.txt
copy-int-vector ark,t:bad.labels.txt ark:bad.labels.ark 2>/dev/null
head -n 2 valid.feats.txt > one.feats.txt
copy-feats ark,t:one.feats.txt ark:one.feats.ark 2>/dev/null
nnet-get-egs ark:one.feats.ark ark:bad.labels.ark ark:bad.egs 2>/dev/null
expect_status "label out of range" 1 nnet-train 0.mdl ark:bad.egs x.mdl
expect_err "names the label" "label 7 out of range for a network with 3 outputs"
expect_status "missing model" 1 nnet-train nosuch.mdl ark:train.egs x.mdl
expect_err "names the model file" "cannot read model 'nosuch.mdl'"
head -c 5000 train.egs > trunc.egs
expect_status "truncated archive" 1 nnet-train 0.mdl ark:trunc.egs x.mdl
expect_err "says truncated" "trunc.egs.*(truncated|end of file|bytes left)"
[ ! -e x.mdl ] && pass "no model written after errors" || fail "model written after an error"
nnet-init other.config wrongdim.mdl 2>/dev/null
printf 'AffineComponent input-dim=5 output-dim=3\nSoftmaxComponent dim=3\n' > five.config
nnet-init five.config five.mdl 2>/dev/null
expect_status "wrong input dimension" 1 nnet-compute-prob five.mdl ark:valid.egs
expect_err "names both dimensions" "input dimension 8, the network expects 5"
expect_status "empty archive" 1 nnet-train 0.mdl ark:/dev/null x.mdl
expect_err "says nothing trained" "no examples"
expect_status "usage error" 2 nnet-train 0.mdl
expect_status "unknown option" 2 nnet-train --no-such-option=1 0.mdl ark:train.egs x.mdl
