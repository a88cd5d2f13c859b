#!/usr/bin/env bash
# CNN training throughput, side by side in one run: samples/s of nnet-train on a Fashion-MNIST CNN
# (plain SGD and with the config's natural gradient), of the same network in PyTorch at its fastest
# setting (bench/torch_cnn.py), and the oneDNN bound of its convolutions (bench/conv-bound.c: the
# convolution passes of one step alone, in oneDNN's preferred layouts).
#   --net recipe (default): the main job's egs/fashion-mnist/conf/cnn.config (batch norm after
#       every convolution and the 256 layer, pooling before ReLU; natural gradient on the affine
#       layers only);
#   --net small: bench/conf/cnn-small.config, the recipe's network of 2026-12-02 (natural gradient
#       on every layer), kept for comparison with the tables measured on it.
# "plain" is the config with natural gradient off everywhere; both run with max-change off (the
# step itself is measured, as PyTorch's plain SGD). fp32, and bf16 where the CPU has AVX512-BF16 or
# AMX (n/a otherwise).
# Every figure is the median of --repeats rounds; within a round the configurations run one after
# another, so load from other jobs spreads over all of them; ratios are the median over rounds of
# the ratio within a round. Wall-clock and CPU-time rates, as bench/precision-throughput.sh.
#   bench/cnn-throughput.sh [--net recipe|small] [--repeats 3] [--seconds 4] [--threads "1 2"]
#                           [--mbs "128"]
# PyTorch's settings probed per cell for 1 s each, the fastest kept (table's last column):
# "cl"/"nchw" = channels-last or not, "i<n>" = n intra-op threads, "u"/"k" = the environment's
# OPENBLAS_CORETYPE unset for its process or kept.
# Needs: make, python3-torch (tools/install-deps.sh --bench). Prints Markdown tables.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
repeats=3 seconds=4 threads="1 2" mbs=128 net=recipe
while [ $# -gt 0 ]; do
    case $1 in
        --repeats) repeats=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --mbs) mbs=$2; shift 2 ;;
        --net) net=$2; shift 2 ;;
        *) echo "usage: $0 [--net recipe|small] [--repeats N] [--seconds S] [--threads \"1 2\"] [--mbs \"128\"]" >&2; exit 2 ;;
    esac
done
. "$top/bench/lib.sh"
bench_setup
make -s -C "$top" all >/dev/null
cc -std=c11 -D_GNU_SOURCE -O2 "$top/bench/conv-bound.c" -ldnnl -o "$top/build/bench/conv-bound"
case $net in
    recipe) net_config=$top/egs/fashion-mnist/conf/cnn.config ;;
    small) net_config=$top/bench/conf/cnn-small.config ;;
    *) echo "$0: --net $net: recipe or small" >&2; exit 2 ;;
esac
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "$0: needs python3-torch" >&2; exit 1; }

# The benchmark's network, max-change off (the step itself is measured, as PyTorch's plain SGD), and
# its plain-SGD twin (no natural gradient anywhere).
sed -e '/^#/d' -e 's/$/ max-change=0/' -e '/^RectifiedLinear\|^MaxPooling\|^BatchNorm\|^Softmax/s/ max-change=0//' \
    "$net_config" >$work/ng.config
sed -e 's/NaturalGradientAffineComponent/AffineComponent/' -e 's/ use-natural-gradient=[a-z]*//' \
    -e '/^ConvolutionComponent/s/$/ use-natural-gradient=false/' $work/ng.config >$work/plain.config
nnet-init $work/ng.config $work/ng.mdl 2>/dev/null
nnet-init $work/plain.config $work/plain.mdl 2>/dev/null
count=4000
make_egs 784 10 $count $work/data
# The convolutions of both networks as conv-bound layers (H,W,C,F,KH,KW,PAD)
layers="28,28,1,32,3,3,1 14,14,32,64,3,3,1"
bf16=true
bf16_runs $work/plain.mdl $work/data.egs || bf16=false

torch_run() { # setting mb threads autocast seconds -> "wall cpu"
    local env cl intra opts=()
    IFS=, read -r env cl intra <<<"$1"
    [ $cl = cl ] && opts+=(--channels-last)
    local unset=()
    [ $env = u ] && unset=(-u OPENBLAS_CORETYPE)
    env "${unset[@]}" OPENBLAS_NUM_THREADS=1 /usr/bin/python3 $top/bench/torch_cnn.py --net $net --minibatch $2 \
        --threads ${intra#i} --cpu-threads $3 --seconds $5 --autocast $4 "${opts[@]}" >$work/t
    echo "$(field samples_per_sec <$work/t) $(field cpu_samples_per_sec <$work/t)"
}
torch_fastest() { # mb threads autocast -> the setting with the best wall rate over 1 s
    local s best= best_rate=0 v env cl
    for env in k u; do
        for cl in nchw cl; do
            s=$env,$cl,i$2
            v=$(torch_run $s $1 $2 $3 1)
            if awk -v a=${v% *} -v b=$best_rate 'BEGIN { exit !(a > b) }'; then best=$s best_rate=${v% *}; fi
        done
    done
    echo $best
}
bound_rate() { # mb threads precision -> "wall cpu"
    OMP_NUM_THREADS=$2 "$top/build/bench/conv-bound" $1 $seconds $3 $layers >$work/b
    echo "$(field samples_per_sec <$work/b) $(field cpu_samples_per_sec <$work/b)"
}

cols=(fp32-plain fp32-NG torch-fp32 bound-fp32 bf16-plain bf16-NG torch-bf16 bound-bf16)
rows_wall=() rows_cpu=()
for mb in $mbs; do
    for t in $threads; do
        # about `seconds` of training at a generous 1500 samples/s per thread
        passes=$(( (seconds * t * 1500 + count - 1) / count ))
        declare -A wall=() cpu=()
        torch_fp32=$(torch_fastest $mb $t none) torch_bf16=n/a
        $bf16 && torch_bf16=$(torch_fastest $mb $t bf16)
        for r in $(seq $repeats); do
            for c in "${cols[@]}"; do
                [[ $c == *bf16* ]] && ! $bf16 && continue
                case $c in
                    fp32-plain) v=$(parnet_rate $work/plain.mdl $work/data.egs $mb $t $passes fp32) ;;
                    fp32-NG) v=$(parnet_rate $work/ng.mdl $work/data.egs $mb $t $passes fp32) ;;
                    torch-fp32) v=$(torch_run $torch_fp32 $mb $t none $seconds) ;;
                    bound-fp32) v=$(bound_rate $mb $t f32) ;;
                    bf16-plain) v=$(parnet_rate $work/plain.mdl $work/data.egs $mb $t $passes bf16) ;;
                    bf16-NG) v=$(parnet_rate $work/ng.mdl $work/data.egs $mb $t $passes bf16) ;;
                    torch-bf16) v=$(torch_run $torch_bf16 $mb $t bf16 $seconds) ;;
                    bound-bf16) v=$(bound_rate $mb $t bf16) ;;
                esac
                wall[$c]+="${v% *} " cpu[$c]+="${v#* } "
            done
        done
        for kind in wall cpu; do
            declare -n vals=$kind
            declare -A med=()
            for c in "${cols[@]}"; do
                med[$c]=$(median_of_rounds "${vals[$c]:-}")
            done
            ratio() { paired_ratio "${vals[$1]:-}" "${vals[$2]:-}"; }
            row="| $mb | $t"
            for c in "${cols[@]}"; do row+=" | ${med[$c]}"; done
            for pair in "fp32-plain torch-fp32" "fp32-plain bound-fp32" "fp32-NG fp32-plain" \
                        "bf16-plain torch-bf16" "bf16-plain bound-bf16"; do
                row+=" | $(ratio $pair)"
            done
            row+=" | $torch_fp32 $torch_bf16 |"
            [ $kind = wall ] && rows_wall+=("$row") || rows_cpu+=("$row")
            echo "$kind $row" >&2
            unset -n vals
        done
    done
done
head="| mb | threads | parnet fp32 | parnet fp32 NG | PyTorch fp32 | conv bound fp32 | parnet bf16 | parnet bf16 NG | PyTorch bf16 autocast | conv bound bf16 | fp32/PyTorch | fp32/bound | NG/plain fp32 | bf16/PyTorch | bf16/bound | PyTorch setting fp32 bf16 |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
echo "Fashion-MNIST CNN (${net_config#$top/}), wall-clock samples/s:"; echo; echo "$head"
printf '%s\n' "${rows_wall[@]}"; echo
echo "CPU-time samples/s (per threads x CPU-second):"; echo; echo "$head"
printf '%s\n' "${rows_cpu[@]}"; echo
echo "median of $repeats interleaved rounds of ~$seconds s; ratios: median over rounds of the ratio within a round; $(lscpu | sed -n 's/^Model name: *//p'); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(date -u +%F)"
