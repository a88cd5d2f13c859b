#!/usr/bin/env bash
# --precision=fp32|bf16 in the programs that compute: bf16 training reaches fp32's accuracy on a
# small task and writes the same fp32 model format; nnet-compute-prob, nnet-forward and
# nnet-combine take the option; a wrong value and a CPU without bf16 are refused clearly.
. "$PARNET_TOP/tests/prog/lib.sh"

gauss_py <<'PY'
import random
from gauss import Gauss
g = Gauss(seed=7, spread=1.0, dim=40, classes=4)
g.write("train", g.utts("tr", 2000))
g.write("valid", g.utts("va", 400))
# utterances of 100 frames for nnet-forward (a 1-frame product is too thin for bf16)
with open("utts.feats.txt", "w") as f:
    for u in range(4):
        f.write(f"utt{u}  [\n")
        for i in range(100):
            f.write("  " + " ".join(f"{m + random.gauss(0, 1):.5f}" for m in g.means[i % 4]) + "\n")
        f.write("  ]\n")
PY
copy-feats ark,t:utts.feats.txt ark:utts.feats.ark 2>/dev/null
text_egs train valid
# widths and minibatch >= 256 so that the hidden products take the bf16 path (thinner ones,
# here the first layer's and the output layer's, stay fp32: matrix.h)
cat > nnet.config <<'CFG'
NaturalGradientAffineComponent input-dim=40 output-dim=256 learning-rate=0.002
RectifiedLinearComponent dim=256
AffineComponent input-dim=256 output-dim=256 learning-rate=0.002
RectifiedLinearComponent dim=256
AffineComponent input-dim=256 output-dim=4 learning-rate=0.002 param-stddev=0 bias-stddev=0
SoftmaxComponent dim=4
CFG
expect_status "nnet-init" 0 nnet-init --srand=3 nnet.config 0.mdl

expect_status "unknown precision" 1 nnet-train --precision=fp16 0.mdl ark:train.egs x.mdl
expect_err "names the value" "--precision: expected fp32 or bf16, got 'fp16'"
expect_status "nnet-compute-prob: unknown precision" 1 nnet-compute-prob --precision=half 0.mdl ark:valid.egs
expect_err "nnet-compute-prob names the value" "expected fp32 or bf16, got 'half'"

# Without AMX-BF16 / AVX512-BF16 (here: oneDNN limited to AVX2) bf16 is refused, saying why.
if nnet-train --help 2>&1 | grep -q -- --precision; then pass "nnet-train --help lists --precision"; else fail "nnet-train --help lacks --precision"; fi
expect_status "bf16 on a CPU without it" 1 env ONEDNN_MAX_CPU_ISA=AVX2 nnet-train --precision=bf16 0.mdl ark:train.egs x.mdl
expect_err "says what is missing" "--precision=bf16 cannot run here: (this CPU has neither AMX-BF16 nor AVX512-BF16 .*avx2|parnet was built without oneDNN).*use --precision=fp32"
if [ -e x.mdl ]; then fail "a refused run wrote a model"; else pass "a refused run writes no model"; fi

nnet-train --precision=bf16 0.mdl ark:train.egs x.mdl >out 2>err
if [ $? -ne 0 ]; then
    grep -q "cannot run here" err && echo "SKIP bf16 training: $(grep -o 'cannot run here: .*' err)" ||
        fail "nnet-train --precision=bf16: $(tail -n 2 err)"
    exit 0
fi
expect_err "bf16 says what runs where" "--precision=bf16: layer products in bf16 with fp32 accumulation on oneDNN"

for p in fp32 bf16; do
    expect_status "nnet-train --precision=$p" 0 nnet-train --precision=$p --minibatch-size=256 0.mdl ark:train.egs $p.mdl
    nnet-shuffle-egs --srand=2 ark:train.egs ark:- 2>/dev/null |
        nnet-train --precision=$p --minibatch-size=256 $p.mdl ark:- $p.2.mdl 2>/dev/null
    nnet-compute-prob $p.2.mdl ark:valid.egs >out 2>err
    eval acc_$p=$(grep -o 'accuracy is [0-9.]*' err | awk '{print $3}')
    eval lp_$p=$(cat out)
done
if awk -v a="$acc_bf16" -v b="$acc_fp32" 'BEGIN { exit !(a > 0.9 && a >= b - 0.01) }'; then
    pass "bf16 accuracy $acc_bf16 within 0.01 of fp32's $acc_fp32 (> 0.9)"; else
    fail "bf16 accuracy $acc_bf16 vs fp32 $acc_fp32"; fi
if awk -v a="$lp_bf16" -v b="$lp_fp32" 'BEGIN { d = a - b; exit !(d < 0.02 && d > -0.02) }'; then
    pass "bf16 log-prob $lp_bf16 within 0.02 of fp32's $lp_fp32"; else
    fail "bf16 log-prob $lp_bf16 vs fp32 $lp_fp32"; fi
# the model format is fp32 whatever the precision: the same components and sizes
nnet-copy --binary=false fp32.2.mdl fp32.txt 2>/dev/null
nnet-copy --binary=false bf16.2.mdl bf16.txt 2>/dev/null
if [ "$(wc -w <fp32.txt)" -eq "$(wc -w <bf16.txt)" ] && [ "$(grep -c '<' fp32.txt)" -eq "$(grep -c '<' bf16.txt)" ]; then
    pass "bf16 writes the same model format"; else fail "bf16 model format differs"; fi
if cmp -s fp32.txt bf16.txt; then fail "bf16 and fp32 models identical (bf16 not used?)"; else pass "bf16 training took its own path"; fi

# evaluation and inference in bf16 agree with fp32
expect_status "nnet-compute-prob --precision=bf16" 0 nnet-compute-prob --precision=bf16 fp32.2.mdl ark:valid.egs
if awk -v a="$(cat out)" -v b="$lp_fp32" 'BEGIN { d = a - b; exit !(d < 0.005 && d > -0.005) }'; then
    pass "bf16 evaluation $(cat out) within 0.005 of fp32's $lp_fp32"; else
    fail "bf16 evaluation $(cat out) vs fp32 $lp_fp32"; fi
nnet-forward fp32.2.mdl ark:utts.feats.ark ark,t:post32.txt 2>/dev/null
expect_status "nnet-forward --precision=bf16" 0 nnet-forward --precision=bf16 fp32.2.mdl ark:utts.feats.ark ark,t:post16.txt
d=$(paste -d' ' <(tr -s ' ' '\n' <post32.txt) <(tr -s ' ' '\n' <post16.txt) |
    awk '$1 ~ /^[-0-9.e]+$/ && $2 ~ /^[-0-9.e]+$/ { d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { print m + 0 }')
if awk -v d="$d" 'BEGIN { exit !(d < 0.02 && d > 0) }'; then pass "bf16 posteriors within 0.02 of fp32 (max diff $d)"; else fail "bf16 posteriors differ by $d"; fi
expect_status "nnet-combine --precision=bf16" 0 nnet-combine --precision=bf16 0.mdl fp32.2.mdl bf16.2.mdl ark:valid.egs comb.mdl
expect_status "combined model evaluates" 0 nnet-compute-prob comb.mdl ark:valid.egs
