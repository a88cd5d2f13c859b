#!/usr/bin/env bash
# egs/fashion-mnist/run.sh end to end on a small slice: --net cnn with its own defaults (the CNN,
# final.mdl the average of the last epoch's models), then --nnet-config with a network of one's own
# (the option that was --config, which utils/parse_options.sh reserves for a file it sources).
. "$PARNET_TOP/tests/prog/lib.sh"
fashion_mnist_recipe
cp "$PARNET_TOP/egs/fashion-mnist/run.sh" .

expect_status "run.sh --net cnn on 1200 images" 0 ./run.sh --net cnn --limit 1200 --shifts 0 --num-epochs 2
grep -qE '^\./run\.sh: validation accuracy [0-9.]+%, test accuracy [0-9.]+% \(log-prob -[0-9.]+\) after [0-9]+ s$' out \
    && pass "the accuracy line" || fail "no accuracy line: $(tail -n 1 out)"
grep -q '^steps/train.sh: HWA: final.mdl is the average of the last 1 models$' out \
    && pass "--net cnn: final.mdl the average of the last epoch's models (1 iteration here)" \
    || fail "no HWA line: $(grep -E 'HWA|combin' out)"
grep -q 'Recomputed the statistics of .*final.mdl.* from [0-9]* examples' exp/nnet/log/recompute_stats.final.log \
    && pass "BatchNorm's statistics recomputed for the average" || fail "no recompute_stats.final.log"
expect_eq "conf/cnn.config's two convolutions" \
    "$(nnet-info exp/nnet/final.mdl 2>/dev/null | grep -c 'ConvolutionComponent')" 2
expect_accuracy "test accuracy" exp/nnet/log/compute_prob_test.log 0.5
grep -q -- ' --weight-decay=5e-4 ' exp/nnet/log/train.0.1.log \
    && pass "--net cnn: weight decay 5e-4 by default" || fail "no --weight-decay=5e-4 in train.0.1.log"

# conf/cnn.config pools before its ReLUs: the same network as ReLU before pooling (max-pooling
# commutes with ReLU, derivatives included), so both orders train to the same model, bit for bit
# (the ReLUs' own lines aside: their dimensions differ).
python3 - conf/cnn.config >relu-first.config <<'PY'
import sys
lines = [l for l in open(sys.argv[1]) if l.strip() and not l.startswith('#')]
for i in range(len(lines) - 1):
    if lines[i].startswith('MaxPooling') and lines[i + 1].startswith('RectifiedLinear'):
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
sys.stdout.write(''.join(lines))
PY
expect_eq "relu-first.config moves both ReLUs before their pooling" \
    "$(grep -A1 '^RectifiedLinear' relu-first.config | grep -c '^MaxPooling')" 2
for order in pool relu; do
    cfg=conf/cnn.config
    [ $order = relu ] && cfg=relu-first.config
    nnet-init --srand=1 $cfg $order.0.mdl 2>/dev/null &&
        nnet-train --minibatch-size=64 $order.0.mdl ark:exp/egs/egs.1.0.ark $order.1.mdl 2>/dev/null &&
        nnet-copy --binary=false $order.1.mdl - 2>/dev/null |
        sed '/^<RectifiedLinearComponent>/,/<\/RectifiedLinearComponent>/d' >$order.txt &&
        nnet-compute-prob $order.1.mdl ark:exp/egs/valid_diagnostic.egs 2>&1 >/dev/null |
        grep -o 'average probability is.*' >$order.prob || fail "training the $order-first network"
done
expect_eq "the trained model in text" "$(grep -c '^<ConvolutionComponent>' pool.txt)" 2
expect_same "ReLU before or after pooling: every parameter and statistic the same" relu.txt pool.txt
expect_eq "... and the same validation log-prob and accuracy" "$(cat relu.prob)" "$(cat pool.prob)"
grep -q 'average probability is -' pool.prob && pass "a log-prob to compare" || fail "no log-prob"

expect_status "run.sh --nnet-config" 0 ./run.sh --stage 2 --nnet-config conf/nnet_small_ng.config \
    --num-epochs 1 --dir exp/own
grep -q ' conf/nnet_small_ng.config exp/own$' out && pass "--nnet-config reaches train.sh" \
    || fail "train.sh line: $(grep '^steps/train.sh ' out)"
grep -q '^steps/train.sh: combining the last' out && pass "--net mlp: combination" \
    || fail "no combination line"
grep -q -- ' --weight-decay=0 ' exp/own/log/train.0.1.log && pass "--net mlp: no weight decay" \
    || fail "--net mlp: $(grep -o -- '--weight-decay=[^ ]*' exp/own/log/train.0.1.log)"
expect_status "run.sh --net rnn" 2 ./run.sh --net rnn
expect_eq "names the choices" "$(tail -n 1 err)" "./run.sh: --net: expected mlp or cnn, got 'rnn'"

# --flips: each shifted copy mirrored left-right with probability 1/2; the held-out images and the
# image count unchanged, and without it the data as before the option.
local/prepare_data.sh --limit 120 --shifts 2 plain >/dev/null 2>&1
expect_status "prepare_data.sh --flips true" 0 local/prepare_data.sh --limit 120 --shifts 2 --flips true flipped
expect_eq "as many training images" "$(wc -l < flipped/train/feats.scp)" "$(wc -l < plain/train/feats.scp)"
expect_same "validation images unchanged" plain/valid/feats.ark flipped/valid/feats.ark
expect_eq "each copy a shift, about half of them mirrored" "$(python3 -c "
import array, sys
sys.path.insert(0, 'local')
from idx_to_kaldi import shifted, mirrored
def read(p):
    d = open(p, 'rb').read(); out = {}; i = 0
    while i < len(d):
        j = d.index(b' ', i); k = d[i:j].decode(); i = j + 16
        out[k] = bytes(round(v * 255) for v in array.array('f', d[i:i + 3136])); i += 3136
    return out
b = read('flipped/train/feats.ark')
shifts = [(x, y) for x in range(-2, 3) for y in range(-2, 3)]
plain = mirror = other = 0
for k, v in b.items():
    if '-s' not in k: continue
    o = b[k.split('-s')[0]]
    if any(shifted(o, 0, 784, x, y) == v for x, y in shifts): plain += 1
    elif any(mirrored(shifted(o, 0, 784, x, y), 784) == v for x, y in shifts): mirror += 1
    else: other += 1
print('ok' if other == 0 and 0.3 < mirror / (plain + mirror) < 0.7 else f'{plain} {mirror} {other}')")" ok
