#!/usr/bin/env bash
# Training throughput, measured side by side in one run: samples/s of nnet-train (Affine and
# NaturalGradientAffine; end to end, examples read from a pipe by its reading thread), of the
# training step alone (bench/train-step.c: the same step on examples in memory), against PyTorch on the CPU (Debian's python3-torch, its fastest setting:
# torch.set_num_threads(1), OpenBLAS with the given threads) and against the OpenBLAS sgemm bound
# (the three GEMMs per layer of one step, bench/sgemm-bound.c), for ReLU MLPs, minibatch sizes and
# thread counts. Each rate is the median of --repeats rounds, the configurations interleaved
# within a round; each ratio is the median over rounds of the ratio within a round (this VM's
# speed drifts by 10-20% between runs seconds apart, which ratios of medians inherit). The step
# figures come from one process training the Affine and the NG network in turns of 0.25 s
# (bench/train-step.c with a second model): its "step NG cost" is the median over turns.
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
field() { sed -n "s/.*\<$1=\([0-9.-]*\).*/\1/p"; } # field NAME < "a=1 NAME=2"

# nnet-train's rate covers its whole run, the first minibatch included (page faults, the
# natural-gradient initialisation): the archive is read `passes` times so that the run lasts
# about `seconds`, like the PyTorch and sgemm figures (a short run understated NG by ~10%).
# Prints "whole steady": the whole run's rate, and the rate after the first 5 minibatches (from
# the progress lines of 5-minibatch phases), which is what train-step's figure compares with.
parnet_rate() { # model egs mb threads passes
    nnet-train --minibatch-size=$3 --num-threads=$4 --minibatches-per-phase=5 --max-change=0 $1 \
        "ark:for i in \$(seq $5); do cat $2; done |" $work/out.mdl 2>$work/log
    local whole steady
    whole=$(grep -o '[0-9]* frames/s; accuracy' $work/log | awk '{print $1}')
    steady=$(steady_rate $work/log)
    echo "$whole $steady"
}

nets=("784 1024 1024 1024 10" "440 1024 1024 1024 1024 2000")
mbs=(128 512)
threads=(1 2)
$quick && { mbs=(512); threads=(2); repeats=1; }

echo "| network | mb | threads | parnet Affine | parnet NG | step Affine | step NG | PyTorch | sgemm bound | Affine/PyTorch | NG/PyTorch | Affine/bound | step/bound | e2e/step Affine | e2e/step NG | steady e2e/step Affine | steady e2e/step NG | NG cost | step NG cost |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
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
            a=() g=() as=() gs=() p=() b=() sa=() sg=() sc=()
            for r in $(seq $repeats); do
                v=$(parnet_rate $work/affine.mdl $work/data.egs $mb $t $passes); a+=("${v% *}") as+=("${v#* }")
                v=$(parnet_rate $work/ng.mdl $work/data.egs $mb $t $passes); g+=("${v% *}") gs+=("${v#* }")
                "$top/build/bench/train-step" $work/affine.mdl $mb $t $seconds no fp32 $work/ng.mdl >$work/step
                sa+=("$(field samples_per_sec <$work/step)") sg+=("$(field samples_per_sec2 <$work/step)")
                sc+=("$(field cost_median <$work/step)")
                if $have_torch; then
                    p+=("$(OPENBLAS_NUM_THREADS=$t /usr/bin/python3 $top/bench/torch_mlp.py \
                        --dims $(echo $net | tr ' ' ,) --minibatch $mb --threads 1 --seconds $seconds \
                        | field samples_per_sec)")
                fi
                b+=("$($top/build/bench/sgemm-bound $mb $t $(echo $net | tr ' ' ,) $seconds | field samples_per_sec)")
            done
            med() { printf '%s\n' "$@" | median | awk '{ printf "%.0f", $1 }'; }
            # median over rounds of a_r / b_r (two space-separated lists); n/a without b
            rmed() { [ -z "$2" ] && { echo n/a; return; }
                     paste <(printf '%s\n' $1) <(printf '%s\n' $2) | awk '{ print $1 / $2 }' | median \
                         | awk '{ printf "%.2f", $1 }'; }
            pct() { awk -v x=$1 'BEGIN { printf "%+.0f%%", (x - 1) * 100 }'; }
            P=n/a
            $have_torch && P=$(med "${p[@]}")
            printf "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" \
                $name $mb $t $(med "${a[@]}") $(med "${g[@]}") $(med "${sa[@]}") $(med "${sg[@]}") $P \
                $(med "${b[@]}") "$(rmed "${a[*]}" "${p[*]}")" "$(rmed "${g[*]}" "${p[*]}")" \
                "$(rmed "${a[*]}" "${b[*]}")" "$(rmed "${sa[*]}" "${b[*]}")" \
                "$(rmed "${a[*]}" "${sa[*]}")" "$(rmed "${g[*]}" "${sg[*]}")" \
                "$(rmed "${as[*]}" "${sa[*]}")" "$(rmed "${gs[*]}" "${sg[*]}")" \
                "$(pct $(rmed "${a[*]}" "${g[*]}"))" \
                "$(printf '%s\n' "${sc[@]}" | median | awk '{ printf "%+.0f%%", $1 * 100 }')"
        done
    done
done
echo
echo "samples/s, median of $repeats rounds; ratios: median over rounds of the ratio within a round; step = bench/train-step.c (the step alone, examples in memory; Affine and NG in turns of 0.25 s in one process); NG cost = time per sample of NG over Affine (step: median over turns); steady = nnet-train after its first 5 minibatches; $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
