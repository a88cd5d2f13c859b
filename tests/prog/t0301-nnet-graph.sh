#!/usr/bin/env bash
# Networks that are graphs (name=, input= with Sum, Append, Offset; docs/COMPONENTS.md "Residual
# connections"): nnet-init's errors, nnet-info's wiring, the model file, and a small residual CNN
# through nnet-train (NG-SGD and plain SGD), nnet-compute-prob, nnet-forward, nnet-average and
# nnet-combine (per layer and TWA) on synthetic 8 x 8 images of bars.
. "$PARNET_TOP/tests/prog/lib.sh"

# ---- errors: one line naming the line and the reason, exit 1, no model ----
bad_config() { # NAME PATTERN CONFIG-TEXT
    printf '%b' "$3" >bad.config
    expect_status "$1 fails" 1 nnet-init bad.config bad.mdl
    expect_err "$1 named" "$2"
    expect_eq "$1: one error line" "$(grep -c ERROR err)" 1
    [ -e bad.mdl ] && fail "$1: model written" || pass "$1: no model written"
}
bad_config "unknown name" "line 2: key 'input': unknown name 'conv9'" \
    'SigmoidComponent dim=4 name=a\nTanhComponent input=Sum(a, conv9)\n'
bad_config "forward reference" "line 2: key 'input': unknown name 'c'.*earlier lines" \
    'SigmoidComponent dim=4 name=a\nTanhComponent input=Sum(a, c)\nTanhComponent name=c\n'
bad_config "dims of a Sum" "line 3: key 'input': Sum of dims 4 and 2" \
    'SigmoidComponent dim=4 name=a\nAffineComponent output-dim=2 name=b\nTanhComponent input=Sum(a, input, Offset(input, 0), b)\n'
bad_config "dim against the input" "line 2: input dim 5 of TanhComponent does not match dim 8 of its input Append\(a,input\)" \
    'SigmoidComponent dim=4 name=a\nTanhComponent dim=5 input=Append(a, input)\n'
bad_config "a name twice" "line 2: name 'a' is given twice" \
    'SigmoidComponent dim=4 name=a\nTanhComponent name=a\n'
bad_config "an output read by nothing" "line 1: the output of SigmoidComponent \(name 'a'\) is read by no later line" \
    'SigmoidComponent dim=4 name=a\nTanhComponent input=input\n'
bad_config "an unknown function" "line 2: key 'input': unknown function 'Max'" \
    'SigmoidComponent dim=4 name=a\nTanhComponent input=Max(a, input)\n'

# the recipes put the feature transform in front: a config that names `input` is refused there
printf 'SigmoidComponent dim=4 name=a\nTanhComponent input=Sum(a, input)\n' >reads-input.config
( . $PARNET_TOP/steps/lib/train-common.sh; train_check_transform_fits reads-input.config ) >out 2>&1 &&
    fail "train_check_transform_fits refuses input" || pass "train_check_transform_fits refuses input"
grep -q "reads 'input' in an input= descriptor" out && pass "says why" || fail "says why"

# ---- a TDNN with a skip connection: contexts of different branches cropped to one ----
cat >tdnn.config <<'CFG'
SpliceComponent input-dim=5 context=-1:0:1
AffineComponent output-dim=6 name=l1
RectifiedLinearComponent name=r1
AffineComponent output-dim=6 input=Append(Offset(r1, -2), r1, Offset(r1, 2))
RectifiedLinearComponent name=r2
AffineComponent output-dim=3 input=Append(r2, r1)
SoftmaxComponent
CFG
expect_status "TDNN with a skip" 0 nnet-init tdnn.config tdnn.mdl
nnet-info tdnn.mdl >out 2>/dev/null
expect_eq "its context" "$(grep -- '-context' out | tr '\n' ' ')" "left-context 3 right-context 3 "
expect_eq "nnet-info prints the wiring" "$(grep '^component 5 : ' out | sed 's/.*; //')" "input=Append(r2,r1)"
expect_eq "and the names" "$(grep -c '; name=r[12]' out)" 2
expect_status "past the examples' context" 1 nnet-init --left-context=2 tdnn.config x.mdl
expect_err "names the line" "line 4: AffineComponent.*needs 3 frames of left context"

# ---- the residual CNN ----
python3 - <<'PY'
import random
random.seed(3)
def img(c):  # a horizontal, vertical or diagonal bar at a random place, in noise
    x = [[random.gauss(0, 0.5) for _ in range(8)] for _ in range(8)]
    p = random.randrange(8)
    for k in range(8):
        if c == 0: x[p][k] += 1.5
        elif c == 1: x[k][p] += 1.5
        else: x[k][(k + p) % 8] += 1.5
    return [v for row in x for v in row]
for stem, n in (("train", 600), ("valid", 150)):
    with open(stem + ".feats.txt", "w") as f, open(stem + ".labels.txt", "w") as l:
        for i in range(n):
            key = f"{stem[:2]}{i:04d}"
            f.write(f"{key}  [\n  " + " ".join(f"{v:.4f}" for v in img(i % 3)) + " ]\n")
            l.write(f"{key} {i % 3}\n")
PY
text_egs train valid
cat >res.config <<'CFG'
# stem, then a residual block: conv, relu, conv, the sum with the block's input, relu
ConvolutionComponent input-height=8 input-width=8 input-channels=1 num-filters=4 filter-height=3 filter-width=3 pad-height=1 pad-width=1 learning-rate=0.01
RectifiedLinearComponent name=block_in
ConvolutionComponent input-height=8 input-width=8 input-channels=4 num-filters=4 filter-height=3 filter-width=3 pad-height=1 pad-width=1 learning-rate=0.01
RectifiedLinearComponent
ConvolutionComponent name=conv2 input-height=8 input-width=8 input-channels=4 num-filters=4 filter-height=3 filter-width=3 pad-height=1 pad-width=1 learning-rate=0.01
RectifiedLinearComponent input=Sum(conv2, block_in)
MaxPoolingComponent input-height=8 input-width=8 input-channels=4 pool-height=2 pool-width=2
NaturalGradientAffineComponent output-dim=3 learning-rate=0.01 param-stddev=0 bias-stddev=0
SoftmaxComponent
CFG
expect_status "nnet-init residual CNN" 0 nnet-init --srand=1 res.config 0.mdl
( . $PARNET_TOP/steps/lib/train-common.sh; train_check_transform_fits res.config ) >out 2>&1 &&
    pass "the recipes take it" || fail "the recipes take it"
nnet-info 0.mdl >out 2>/dev/null
expect_eq "the Sum in nnet-info" "$(grep -c '^component 5 : RectifiedLinearComponent.*; input=Sum(conv2,block_in)$' out)" 1

# the model file: version 2, the wiring tokens, text and binary round trips
expect_status "to text" 0 nnet-copy --binary=false 0.mdl 0.txt
grep -q '^<Nnet> <Version> 2 <NumComponents> 9 <Components>' 0.txt && pass "version 2" || fail "version 2"
grep -q '<Name> conv2 <ConvolutionComponent>' 0.txt && pass "<Name> token" || fail "<Name> token"
grep -q '<Input> Sum(conv2,block_in) <RectifiedLinearComponent>' 0.txt && pass "<Input> token" || fail "<Input> token"
nnet-copy 0.txt 1.mdl 2>/dev/null; nnet-copy --binary=false 1.mdl 1.txt 2>/dev/null
expect_same "text round trip" 0.txt 1.txt
nnet-copy 0.mdl 2.mdl 2>/dev/null
expect_same "binary round trip" 0.mdl 2.mdl

expect_status "compute-prob of the initial model" 0 nnet-compute-prob 0.mdl ark:valid.egs
initial=$(cat out)
expect_status "nnet-train (NG-SGD)" 0 nnet-train --minibatch-size=8 --minibatches-per-phase=15 0.mdl ark:train.egs a.mdl
first=$(grep -o 'average objective [-0-9.]*' err | head -n 1 | awk '{print $NF}')
last=$(grep -o 'average objective [-0-9.]*' err | tail -n 1 | awk '{print $NF}')
if awk -v f="$first" -v l="$last" 'BEGIN { exit !(l > f + 0.5) }'; then
    pass "training objective rises: $first -> $last"; else fail "training objective $first -> $last"; fi
nnet-compute-prob a.mdl ark:valid.egs >out 2>err
if awk -v a="$(cat out)" -v i="$initial" 'BEGIN { exit !(a > i + 0.5) }'; then
    pass "validation log-prob $initial -> $(cat out)"; else fail "validation log-prob $initial -> $(cat out)"; fi
expect_accuracy "trained accuracy" err 0.8
# plain SGD learns this task slowly: a smaller step, and a check only that it learns
sed 's/NaturalGradientAffine/Affine/; s/^Convolution.*/& use-natural-gradient=false/;
     s/learning-rate=0.01/learning-rate=0.003/; s/ param-stddev=0 bias-stddev=0//' res.config >sgd.config
nnet-init --srand=1 sgd.config s0.mdl 2>/dev/null
nnet-shuffle-egs --srand=2 ark:train.egs ark:- 2>/dev/null | nnet-train --minibatch-size=8 s0.mdl ark:- b.mdl 2>/dev/null
nnet-compute-prob b.mdl ark:valid.egs >out 2>/dev/null
if awk -v a="$(cat out)" -v i="$initial" 'BEGIN { exit !(a > i + 0.05) }'; then
    pass "plain SGD trains it: $(cat out)"; else fail "plain SGD: $(cat out)"; fi

# every operation on models works on it
nnet-shuffle-egs --srand=5 ark:train.egs ark:- 2>/dev/null | nnet-train --minibatch-size=8 0.mdl ark:- c.mdl 2>/dev/null
expect_status "nnet-average" 0 nnet-average a.mdl c.mdl avg.mdl
expect_status "nnet-average of other structures fails" 1 nnet-average a.mdl b.mdl x.mdl
nnet-info avg.mdl >out 2>/dev/null
expect_eq "the average keeps the wiring" "$(grep -c 'input=Sum(conv2,block_in)' out)" 1
expect_status "nnet-combine" 0 nnet-combine 0.mdl a.mdl c.mdl ark:valid.egs comb.mdl
expect_status "nnet-combine --method=twa" 0 nnet-combine --method=twa a.mdl c.mdl ark:valid.egs twa.mdl
best=$(for m in a c; do nnet-compute-prob $m.mdl ark:valid.egs 2>/dev/null; done | sort -g | tail -n 1)
comb=$(nnet-compute-prob comb.mdl ark:valid.egs 2>/dev/null)
if awk -v c="$comb" -v b="$best" 'BEGIN { exit !(c >= b - 1e-5) }'; then
    pass "combined $comb >= best input $best"; else fail "combined $comb < best input $best"; fi
expect_status "nnet-forward" 0 nnet-forward a.mdl ark:valid.feats.ark ark,t:post.txt
expect_eq "one posterior row per image" "$(grep -c '^  ' post.txt)" 150

# ---- BatchNorm's stored statistics after combining models: nnet-recompute-stats ----
# the residual CNN with BatchNorm after each convolution; two jobs, averaged
awk '{ print } /^ConvolutionComponent/ && !/name=conv2/ { print "BatchNormComponent block-dim=4" }
     /^ConvolutionComponent name=conv2/ { print "BatchNormComponent block-dim=4 name=conv2.bn" }' res.config |
    sed 's/^\(ConvolutionComponent\) name=conv2/\1/; s/Sum(conv2, block_in)/Sum(conv2.bn, block_in)/' >bn.config
expect_status "nnet-init with BatchNorm" 0 nnet-init --srand=1 bn.config bn0.mdl
for j in 1 2; do
    nnet-shuffle-egs --srand=$j ark:train.egs ark:- 2>/dev/null |
        nnet-train --minibatch-size=8 bn0.mdl ark:- bn$j.mdl 2>/dev/null
done
nnet-average bn1.mdl bn2.mdl bnavg.mdl 2>/dev/null
expect_status "nnet-recompute-stats" 0 nnet-recompute-stats --minibatch-size=8 bnavg.mdl ark:train.egs re8.mdl
expect_err "it logs what it read" "from 600 examples"
nnet-recompute-stats --minibatch-size=1000 bnavg.mdl ark:train.egs re1000.mdl 2>/dev/null
# the first BatchNorm reads the first convolution of the images alone: its pooled statistics are
# the whole set's, whatever the minibatch; those after it depend on the minibatch (batch statistics)
stats() { # MODEL K: the K-th BatchNorm's stored mean and second moment
    nnet-copy --binary=false $1 - 2>/dev/null | grep -o '<Stats[A-Za-z]*>  *\[[^]]*\]' |
        sed -n "$((2 * $2 - 1)),$((2 * $2))p" | tr -d '[]<>A-Za-z'; }
diff_max() { paste <(echo "$1" | tr -s ' ' '\n' | grep .) <(echo "$2" | tr -s ' ' '\n' | grep .) |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.2g", m }'; }
d1=$(diff_max "$(stats re8.mdl 1)" "$(stats re1000.mdl 1)")
if awk -v d=$d1 'BEGIN { exit !(d < 2e-4) }'; then pass "first BatchNorm: pooled over minibatches = one batch ($d1)"
else fail "first BatchNorm: minibatches 8 and 1000 differ by $d1"; fi
d0=$(diff_max "$(stats bnavg.mdl 1)" "$(stats re1000.mdl 1)")
if awk -v d=$d0 'BEGIN { exit !(d > 1e-3) }'; then pass "the statistics changed ($d0)"
else fail "the averaged model's statistics are unchanged ($d0)"; fi
# everything else, momentum included, is the input model's
strip() { nnet-copy --binary=false $1 - 2>/dev/null | sed 's/<Stats[A-Za-z]*>  *\[[^]]*\]//g'; }
strip bnavg.mdl >a.txt; strip re8.mdl >b.txt
expect_same "only the statistics change" a.txt b.txt
# with its own statistics the combined network scores at least as well in test mode
pa=$(nnet-compute-prob bnavg.mdl ark:valid.egs 2>/dev/null); pr=$(nnet-compute-prob re8.mdl ark:valid.egs 2>/dev/null)
if awk -v a=$pa -v r=$pr 'BEGIN { exit !(r > a - 0.02) }'; then pass "validation log-prob $pa -> $pr"
else fail "validation log-prob $pa -> $pr after recomputing"; fi
expect_status "a model without BatchNorm" 1 nnet-recompute-stats a.mdl ark:train.egs x.mdl
expect_err "says why" "model 'a.mdl': the model stores no statistics \(no BatchNorm component\)"
[ -e x.mdl ] && fail "no model written" || pass "no model written"
printf '' | expect_status "no examples" 1 nnet-recompute-stats bnavg.mdl ark:- x.mdl
expect_err "says so" "no examples in 'ark:-'"
