#!/usr/bin/env bash
# Training throughput, measured side by side in one run: samples/s of nnet-train (Affine and
# NaturalGradientAffine; end to end, examples read from a pipe by its reading thread), of the
# training step alone (bench/train-step.c: the same step on examples in memory), against PyTorch on the CPU (Debian's python3-torch, its fastest setting:
# torch.set_num_threads(1), OpenBLAS with the given threads) and against the OpenBLAS sgemm bound
# (the three GEMMs per layer of one step, bench/sgemm-bound.c), for ReLU MLPs, minibatch sizes and
# thread counts. Each figure is the median of --repeats runs.
#   bench/train-throughput.sh [--repeats 3] [--seconds 4] [--quick]
# Needs: make, python3-torch (tools/install-deps.sh --bench). Prints a Markdown table.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
repeats=3 seconds=4 quick=false
while [ $# -gt 0 ]; do
    case $1 in
        --repeats) repeats=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --quick) quick=true; shift ;;
        *) echo "usage: $0 [--repeats N] [--seconds S] [--quick]" >&2; exit 2 ;;
    esac
done
export PATH=$top/bin:$PATH LC_ALL=C
. "$top/tools/blas-env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$top/build/bench"
cc -O2 "$top/bench/sgemm-bound.c" -lopenblas -o "$top/build/bench/sgemm-bound"
make -s -C "$top" lib/libparnet.a
cc -std=c11 -D_GNU_SOURCE -O2 -I"$top/src" "$top/bench/train-step.c" "$top/lib/libparnet.a" \
    $(make -s -C "$top" print-ldlibs) -o "$top/build/bench/train-step"
have_torch=true
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=false

. "$top/bench/lib.sh"

# nnet-train's rate covers its whole run, the first minibatch included (page faults, the
# natural-gradient initialisation): the archive is read `passes` times so that the run lasts
# about `seconds`, like the PyTorch and sgemm figures (a short run understated NG by ~10%).
parnet_rate() { # model egs mb threads passes
    nnet-train --minibatch-size=$3 --num-threads=$4 --minibatches-per-phase=0 --max-change=0 $1 \
        "ark:for i in \$(seq $5); do cat $2; done |" $work/out.mdl 2>&1 \
        | grep -o '[0-9]* frames/s' | awk '{print $1}'
}

nets=("784 1024 1024 1024 10" "440 1024 1024 1024 1024 2000")
mbs=(128 512)
threads=(1 2)
$quick && { mbs=(512); threads=(2); repeats=1; }

echo "| network | mb | threads | parnet Affine | parnet NG | step Affine | step NG | PyTorch | sgemm bound | Affine/PyTorch | NG/PyTorch | Affine/bound | step/bound | NG cost | step NG cost |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for net in "${nets[@]}"; do
    read -r -a d <<<"$net"
    name=$(echo "$net" | tr ' ' '-')
    config AffineComponent "${d[@]}" > $work/affine.config
    config NaturalGradientAffineComponent "${d[@]}" > $work/ng.config
    nnet-init $work/affine.config $work/affine.mdl 2>/dev/null
    nnet-init $work/ng.config $work/ng.mdl 2>/dev/null
    count=$((d[0] > 500 ? 12000 : 8000))
    make_egs ${d[0]} ${d[-1]} $count $work/data
    for mb in "${mbs[@]}"; do
        for t in "${threads[@]}"; do
            # examples for about `seconds` at a rough rate (samples/s per thread)
            passes=$(( (seconds * t * (d[0] > 500 ? 6000 : 3000) + count - 1) / count ))
            a=() g=() p=() b=() sa=() sg=()
            for r in $(seq $repeats); do
                a+=("$(parnet_rate $work/affine.mdl $work/data.egs $mb $t $passes)")
                g+=("$(parnet_rate $work/ng.mdl $work/data.egs $mb $t $passes)")
                sa+=("$("$top/build/bench/train-step" $work/affine.mdl $mb $t $seconds | sed 's/samples_per_sec=\([0-9.]*\).*/\1/')")
                sg+=("$("$top/build/bench/train-step" $work/ng.mdl $mb $t $seconds | sed 's/samples_per_sec=\([0-9.]*\).*/\1/')")
                if $have_torch; then
                    p+=("$(OPENBLAS_NUM_THREADS=$t /usr/bin/python3 $top/bench/torch_mlp.py \
                        --dims $(echo $net | tr ' ' ,) --minibatch $mb --threads 1 --seconds $seconds \
                        | sed 's/samples_per_sec=\([0-9.]*\).*/\1/')")
                fi
                b+=("$($top/build/bench/sgemm-bound $mb $t $(echo $net | tr ' ' ,) $seconds | sed 's/samples_per_sec=\([0-9.]*\).*/\1/')")
            done
            A=$(printf '%s\n' "${a[@]}" | median) G=$(printf '%s\n' "${g[@]}" | median)
            B=$(printf '%s\n' "${b[@]}" | median)
            SA=$(printf '%s\n' "${sa[@]}" | median) SG=$(printf '%s\n' "${sg[@]}" | median)
            P=n/a
            $have_torch && P=$(printf '%s\n' "${p[@]}" | median)
            ratio() { [ "$2" = n/a ] && echo n/a || awk -v a=$1 -v b=$2 'BEGIN { printf "%.2f", a / b }'; }
            cost=$(awk -v a=$A -v g=$G 'BEGIN { printf "%+.0f%%", (a / g - 1) * 100 }')
            scost=$(awk -v a=$SA -v g=$SG 'BEGIN { printf "%+.0f%%", (a / g - 1) * 100 }')
            printf "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %s | %.0f | %s | %s | %s | %s | %s | %s |\n" \
                $name $mb $t $A $G $SA $SG "$( [ $P = n/a ] && echo n/a || printf %.0f $P)" $B \
                "$(ratio $A $P)" "$(ratio $G $P)" "$(ratio $A $B)" "$(ratio $SA $B)" "$cost" "$scost"
        done
    done
done
echo
echo "samples/s, median of $repeats; step = bench/train-step.c (the step alone, examples in memory); NG cost = time per sample of NG over Affine; $(nproc) cores, $(date -u +%F)"
