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
expect_eq "conf/cnn.config's two convolutions" \
    "$(nnet-info exp/nnet/final.mdl 2>/dev/null | grep -c 'ConvolutionComponent')" 2
expect_accuracy "test accuracy" exp/nnet/log/compute_prob_test.log 0.5

expect_status "run.sh --nnet-config" 0 ./run.sh --stage 2 --nnet-config conf/nnet_small_ng.config \
    --num-epochs 1 --dir exp/own
grep -q ' conf/nnet_small_ng.config exp/own$' out && pass "--nnet-config reaches train.sh" \
    || fail "train.sh line: $(grep '^steps/train.sh ' out)"
grep -q '^steps/train.sh: combining the last' out && pass "--net mlp: combination" \
    || fail "no combination line"
expect_status "run.sh --net rnn" 2 ./run.sh --net rnn
expect_eq "names the choices" "$(tail -n 1 err)" "./run.sh: --net: expected mlp or cnn, got 'rnn'"
