#!/usr/bin/env bash
# nnet-init, nnet-info, nnet-copy: build a model from a config, inspect it, convert it.
. "$PARNET_TOP/tests/prog/lib.sh"

cat >nnet.config <<'CFG'
# Kaldi nnet2-style config: one component per line
SpliceComponent input-dim=13 context=-2:-1:0:1:2
FixedAffineComponent input-dim=65 output-dim=40
AffineComponentPreconditionedOnline input-dim=40 output-dim=100 learning-rate=0.02 rank-in=10
PnormComponent input-dim=100 output-dim=50 p=2
NormalizeComponent dim=50
AffineComponent input-dim=50 output-dim=10 learning-rate=0.01 param-stddev=0 bias-stddev=0
SoftmaxComponent dim=10
CFG

expect_status "nnet-init succeeds" 0 nnet-init --srand=1 nnet.config 0.mdl
expect_status "nnet-info succeeds" 0 nnet-info 0.mdl
expect_eq "info num-components" "$(grep '^num-components' out)" "num-components 7"
expect_eq "info num-updatable" "$(grep '^num-updatable-components' out)" \
    "num-updatable-components 2"
expect_eq "info contexts" "$(grep -E '^(left|right)-context' out | tr '\n' ' ')" \
    "left-context 2 right-context 2 "
expect_eq "info dims" "$(grep -E '^(input|output)-dim' out | tr '\n' ' ')" \
    "input-dim 13 output-dim 10 "
expect_eq "info parameter-dim" "$(grep '^parameter-dim' out)" \
    "parameter-dim $((40 * 100 + 100 + 50 * 10 + 10))"
expect_eq "info component lines" "$(grep -c '^component [0-9]* : ' out)" 7
expect_eq "info component 2" "$(grep '^component 2 : ' out | cut -d, -f1-4)" \
    "component 2 : NaturalGradientAffineComponent, input-dim=40, output-dim=100, learning-rate=0.02"

# binary -> text -> binary -> text: the texts are identical; text -> binary -> text is stable
expect_status "copy to text" 0 nnet-copy --binary=false 0.mdl 0.txt
expect_status "text to binary" 0 nnet-copy 0.txt 1.mdl
expect_status "binary to text again" 0 nnet-copy --binary=false 1.mdl 1.txt
expect_same "text round trip" 0.txt 1.txt
expect_status "binary copy" 0 nnet-copy 1.mdl 2.mdl
expect_same "binary round trip" 1.mdl 2.mdl
if head -c 2 0.mdl | od -c | grep -q '\\0   B'; then pass "binary header"
else fail "binary header"; fi
if grep -q '^<Nnet> <Version> 1 <NumComponents> 7 <Components>' 0.txt; then
    pass "text model header"; else fail "text model header"; fi

# learning rates
expect_status "set learning rate" 0 nnet-copy --learning-rate=0.005 0.mdl lr.mdl
nnet-info --print-learning-rates lr.mdl >out 2>err
expect_eq "learning rates set" "$(cat out)" "0.005:0.005"
expect_status "scale learning rate" 0 nnet-copy --learning-rate-scale=2 0.mdl lr2.mdl
nnet-info --print-learning-rates lr2.mdl >out 2>err
expect_eq "learning rates scaled" "$(cat out)" "0.04:0.02"
expect_status "learning rates list" 0 nnet-copy --learning-rates=0.1:0.2 0.mdl lr3.mdl
nnet-info --print-learning-rates lr3.mdl >out 2>err
expect_eq "learning rates list set" "$(cat out)" "0.1:0.2"
expect_status "wrong number of learning rates" 1 nnet-copy --learning-rates=0.1 0.mdl lr4.mdl
expect_err "names the count" "1 learning rates given for 2 updatable components"

# the same seed gives the same model, another seed another one
nnet-init --srand=1 nnet.config same.mdl 2>/dev/null
expect_same "deterministic init" 0.mdl same.mdl
nnet-init --srand=2 nnet.config other.mdl 2>/dev/null
if cmp -s 0.mdl other.mdl; then fail "srand changes the model"
else pass "srand changes the model"; fi

# errors
echo "AffineComponent input-dim=3 output-dim=4 learnin-rate=0.1" >bad.config
expect_status "unknown key fails" 1 nnet-init bad.config bad.mdl
expect_err "unknown key named" "unknown key 'learnin-rate'"
expect_err "line named" "line 1"
[ -e bad.mdl ] && fail "no model written on error" || pass "no model written on error"
printf 'SigmoidComponent dim=4\nTanhComponent dim=x\n' >bad2.config
expect_status "bad value fails" 1 nnet-init bad2.config bad2.mdl
expect_err "bad value named" "line 2: .*key 'dim'"
# a time-delay network (Splice lines between layers) that reads past the examples' context
printf 'SpliceComponent input-dim=4 context=-2:0:2\nAffineComponent output-dim=6\nSpliceComponent context=-3:0:1\nAffineComponent output-dim=3\n' >tdnn.config
printf 'SpliceComponent input-dim=4 context=-2,0,2\n' >comma.config
expect_status "nnet3's comma list" 0 nnet-init comma.config comma.mdl
expect_eq "comma list read" "$(nnet-info comma.mdl 2>/dev/null | grep -c 'context=-2:0:2')" 1
expect_status "TDNN within its context" 0 nnet-init --left-context=5 --right-context=3 tdnn.config tdnn.mdl
nnet-info tdnn.mdl >out 2>/dev/null
expect_eq "TDNN context" "$(grep -- '-context' out | tr '\n' ' ')" "left-context 5 right-context 3 "
expect_status "TDNN past the left context fails" 1 nnet-init --left-context=4 tdnn.config tdnn2.mdl
expect_err "names the line and the frames" "config 'tdnn.config': line 3: SpliceComponent.*context=-3:0:1: needs 5 frames of left context by here; the examples have 4"
expect_status "TDNN past the right context fails" 1 nnet-init --right-context=2 tdnn.config tdnn2.mdl
expect_err "names the right side" "line 3: .*needs 3 frames of right context.*have 2"
expect_status "missing config fails" 1 nnet-init no-such.config x.mdl
expect_err "missing config named" "no-such.config"
expect_status "usage error" 2 nnet-init nnet.config
expect_status "missing model fails" 1 nnet-info no-such.mdl
head -c 300 0.mdl >trunc.mdl
expect_status "truncated model fails" 1 nnet-info trunc.mdl
expect_err "truncated model message" "trunc.mdl"
expect_status "truncated copy fails" 1 nnet-copy trunc.mdl t2.mdl
[ -e t2.mdl ] && fail "no copy written on error" || pass "no copy written on error"
ls -a | grep -q '\.tmp' && fail "no temporary files left" || pass "no temporary files left"

# Every component type in the sources is listed by nnet-init --help and in docs/COMPONENTS.md.
nnet-init --help >help.txt 2>&1
types=$(grep -ho '\.type = "[A-Za-z]*"\|NONLINEAR_OPS([a-z_]*, "[A-Za-z]*"' $PARNET_TOP/src/nnet/components-*.c |
        grep -o '"[A-Za-z]*"' | tr -d '"')
missing=
for t in $types; do
    grep -qw "$t" help.txt || missing="$missing help:$t"
    grep -qw "\`$t\`" $PARNET_TOP/docs/COMPONENTS.md || missing="$missing doc:$t"
done
expect_eq "component types documented ($(echo $types | wc -w) found)" "$missing" ""
