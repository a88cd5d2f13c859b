#!/usr/bin/env bash
# --use-gpu in nnet-train, nnet-compute-prob, nnet-forward, nnet-combine. Without a GPU (or built
# without CUDA=1): "yes" fails with a clear message and exit 1, "optional" runs on the CPU with the
# same results as "no". With a GPU: every program's results on the GPU match the CPU's.
. "$PARNET_TOP/tests/prog/lib.sh"

gauss_py <<'PY'
from gauss import Gauss
g = Gauss(seed=7, spread=1.5, dim=6)
for name, n in (("train", 600), ("valid", 150)):
    g.write(name, g.utts(name, n))
PY
text_egs train valid
mlp_config 6 24 3 NaturalGradientAffine Affine learning-rate=0.01 >nnet.config
nnet-init --srand=2 nnet.config 0.mdl 2>/dev/null

# close NAME A B TOL : |A - B| <= TOL * max(1, |B|)
close() {
    if awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = a - b; if (d < 0) d = -d;
        m = b < 0 ? -b : b; if (m < 1) m = 1; exit !(d <= t * m) }'; then pass "$1 ($2 vs $3)"
    else fail "$1: $2 vs $3 (tolerance $4)"; fi
}

for prog in "nnet-train 0.mdl ark:train.egs x.mdl" "nnet-compute-prob 0.mdl ark:valid.egs" \
            "nnet-forward 0.mdl scp:valid.feats.scp ark,t:x.txt" \
            "nnet-combine 0.mdl 0.mdl ark:valid.egs x.mdl"; do
    name=${prog%% *}
    # shellcheck disable=SC2086
    expect_status "$name --use-gpu=maybe" 1 $name --use-gpu=maybe ${prog#* }
    expect_err "$name names the values" "expected yes, no, optional or wait, got 'maybe'"
done

expect_status "compute-prob --use-gpu=no" 0 nnet-compute-prob --use-gpu=no 0.mdl ark:valid.egs
cpu=$(cat out)
nnet-compute-prob --use-gpu=yes 0.mdl ark:valid.egs >out 2>err
if [ $? -ne 0 ]; then
    expect_err "--use-gpu=yes without a GPU: clear error" "ERROR .*--use-gpu=yes but no GPU: "
    for prog in "nnet-train 0.mdl ark:train.egs x.mdl" \
                "nnet-forward 0.mdl scp:valid.feats.scp ark,t:x.txt" \
                "nnet-combine 0.mdl 0.mdl ark:valid.egs x.mdl"; do
        # shellcheck disable=SC2086
        expect_status "${prog%% *} --use-gpu=yes without a GPU" 1 ${prog%% *} --use-gpu=yes ${prog#* }
        expect_err "${prog%% *}: clear error" "--use-gpu=yes but no GPU: "
    done
    expect_status "compute-prob --use-gpu=optional" 0 nnet-compute-prob --use-gpu=optional 0.mdl ark:valid.egs
    expect_eq "optional without a GPU gives the CPU's result" "$(cat out)" "$cpu"
    expect_err "optional says why" "--use-gpu=optional: no GPU \(.*\); running on the CPU"
    echo "SKIP use-gpu: no GPU, nothing compared with the CPU"
    exit 0
fi

# A GPU: the same models and outputs as on the CPU (float rounding, through training).
close "compute-prob on the GPU" "$(cat out)" "$cpu" 1e-5
expect_err "names the GPU" "--use-gpu=yes: using GPU"
nnet-train --use-gpu=no --minibatch-size=32 0.mdl ark:train.egs 1c.mdl 2>/dev/null
expect_status "nnet-train on the GPU" 0 nnet-train --use-gpu=yes --minibatch-size=32 0.mdl ark:train.egs 1g.mdl
pc=$(nnet-compute-prob 1c.mdl ark:valid.egs 2>/dev/null)
pg=$(nnet-compute-prob 1g.mdl ark:valid.egs 2>/dev/null)
close "GPU-trained model scores as the CPU-trained one (on the CPU)" "$pg" "$pc" 1e-3
nnet-forward --use-gpu=no 1c.mdl scp:valid.feats.scp ark,t:post-c.txt 2>/dev/null
expect_status "nnet-forward on the GPU" 0 nnet-forward --use-gpu=yes 1c.mdl scp:valid.feats.scp ark,t:post-g.txt
worst=$(python3 - <<'PY'
import re
def nums(p): return [float(x) for x in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", open(p).read().replace("valid", " "))]
a, b = nums("post-c.txt"), nums("post-g.txt")
print(max(abs(x - y) for x, y in zip(a, b)) if len(a) == len(b) and a else 1e9)
PY
)
close "GPU posteriors match the CPU's (largest difference)" "$worst" 0 1e-4
nnet-combine --use-gpu=no 0.mdl 1c.mdl ark:valid.egs comb-c.mdl 2>/dev/null
expect_status "nnet-combine on the GPU" 0 nnet-combine --use-gpu=yes 0.mdl 1c.mdl ark:valid.egs comb-g.mdl
pc=$(nnet-compute-prob comb-c.mdl ark:valid.egs 2>/dev/null)
pg=$(nnet-compute-prob comb-g.mdl ark:valid.egs 2>/dev/null)
close "GPU-combined model scores as the CPU-combined one" "$pg" "$pc" 1e-3
