#!/usr/bin/env bash
# fp32 against bf16 training throughput, side by side in one run (the sibling of
# bench/train-throughput.sh): samples/s of nnet-train end to end (Affine and NaturalGradientAffine,
# --precision=fp32 and bf16), of PyTorch's fastest fp32 setting and its bf16 autocast
# (bench/torch_mlp.py), and the GEMM bounds of one step (the three products of every layer,
# bench/gemm-rates.c bound: OpenBLAS, oneDNN fp32, oneDNN bf16 on operands already in bf16).
# Every figure is the median of --repeats rounds; within a round the configurations run one after
# another (interleaved), so load from other jobs spreads over all of them; every ratio is the
# median over rounds of the ratio within a round (this VM's speed drifts by 10-40% over seconds).
# "step NG cost" is bench/train-step.c training the Affine and the NG network (fp32, bf16) in
# turns of 0.25 s in one process (median over turns): the NG cost least disturbed by the drift,
# and without natural gradient's start (an estimate updated on each of its first 10 calls),
# which the end-to-end runs of a few hundred minibatches include. The same runs give the step's
# own rate ("step ... Affine"): set against the bound it says what the step loses, set against
# nnet-train's ("e2e/step") what reading the archive and assembling minibatches cost beside it.
# "steady" is nnet-train's wall rate after its first 10 minibatches (bench/lib.sh parnet_rate):
# without the process's start, which is a few per cent of a run of a few seconds.
# Two figures per cell: the wall-clock rate, and the CPU-time rate (samples per `threads` seconds
# of the process's CPU time: on a machine shared with other jobs, closer to what the run would
# reach alone; it undercounts runs whose idle threads spin).
#   bench/precision-throughput.sh [--repeats 3] [--seconds 4] [--threads "1 2"] [--mbs "128 512"]
#                                 [--nets "784 1024 1024 1024 10;440 1024 1024 1024 1024 2000"]
#                                 [--count N] [--rate R]
# --count: examples in the archive (default 12000, 8000 for the 440 MLP); --rate: the samples/s per
# thread assumed when reading the archive enough times to last --seconds (default 20000; lower it
# on a loaded machine so that nnet-train's runs stay near --seconds).
# Needs: make, python3-torch; bf16 needs AMX-BF16 or AVX512-BF16 (its columns are n/a without).
# Prints Markdown tables.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
repeats=3 seconds=4 threads="1 2" mbs="128 512" count_opt= rate=20000
nets="784 1024 1024 1024 10;440 1024 1024 1024 1024 2000"
while [ $# -gt 0 ]; do
    case $1 in
        --repeats) repeats=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --mbs) mbs=$2; shift 2 ;;
        --nets) nets=$2; shift 2 ;;
        --count) count_opt=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        *) echo "usage: $0 [--repeats N] [--seconds S] [--threads \"1 2\"] [--mbs \"128 512\"] [--nets \"d0 d1 ..;...\"]" >&2; exit 2 ;;
    esac
done
. "$top/bench/lib.sh"
bench_setup
make -s -C "$top" all >/dev/null
libs=$(make -s -C "$top" print-ldlibs)
cc -std=c11 -D_GNU_SOURCE -O2 -I"$top/src" "$top/bench/gemm-rates.c" "$top/lib/libparnet.a" $libs \
    -o "$top/build/bench/gemm-rates"
cc -std=c11 -D_GNU_SOURCE -O2 -I"$top/src" "$top/bench/train-step.c" "$top/lib/libparnet.a" $libs \
    -o "$top/build/bench/train-step"
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "$0: needs python3-torch" >&2; exit 1; }


# PyTorch at its fastest: each cell first probes a few settings for a second each and the rounds
# then run the fastest (named in the table's last column). The settings: the environment's
# OPENBLAS_CORETYPE kept or unset for PyTorch's process alone (Debian's OpenBLAS then picks its
# kernel itself; parnet never overrides the user's choice), and the threads given to torch's
# intra-op pool (oneDNN: bf16 autocast) or to OpenBLAS (fp32 products). "k" = coretype kept,
# "u" = unset; "i<n>/b<m>" = n intra-op threads, m OpenBLAS threads.
torch_settings() { # threads -> the settings to probe
    local t=$1 env i b
    for env in k u; do
        for i in 1 $t; do
            for b in 1 $t; do
                [ $((i * b)) -ge $t ] && [ $((i * b)) -le $((t * t)) ] && echo "$env,i$i/b$b"
            done
        done
    done | sort -u
}
torch_run() { # setting dims mb threads autocast seconds
    local env=${1%%,*} rest=${1#*,} intra blas
    intra=${rest%%/*} intra=${intra#i} blas=${rest#*/b}
    local unset=()
    [ $env = u ] && unset=(-u OPENBLAS_CORETYPE)
    env "${unset[@]}" OPENBLAS_NUM_THREADS=$blas /usr/bin/python3 $top/bench/torch_mlp.py --dims $2 \
        --minibatch $3 --threads $intra --cpu-threads $4 --seconds $6 --autocast $5 >$work/t
    echo "$(field samples_per_sec <$work/t) $(field cpu_samples_per_sec <$work/t)"
}
torch_fastest() { # dims mb threads autocast -> the setting with the best wall rate over 1 s
    local s best= best_rate=0 v
    for s in $(torch_settings $3); do
        v=$(torch_run $s $1 $2 $3 $4 1)
        if awk -v a=${v% *} -v b=$best_rate 'BEGIN { exit !(a > b) }'; then best=$s best_rate=${v% *}; fi
    done
    echo $best
}
bound_rate() { # engine mb threads dims
    "$top/build/bench/gemm-rates" bound $1 $2 $3 $4 $seconds >$work/b 2>/dev/null
    echo "$(field samples_per_sec <$work/b) $(field cpu_samples_per_sec <$work/b)"
}

cols=(fp32-A fp32-NG bf16-A bf16-NG torch-fp32 torch-bf16 bound-openblas bound-onednn-f32 bound-onednn-bf16)
rows_wall=() rows_cpu=()
IFS=';' read -r -a netlist <<<"$nets"
for net in "${netlist[@]}"; do
    read -r -a d <<<"$net"
    name=$(echo "$net" | tr ' ' '-') dims=$(echo "$net" | tr ' ' ,)
    config AffineComponent "${d[@]}" > $work/affine.config
    config NaturalGradientAffineComponent "${d[@]}" > $work/ng.config
    nnet-init $work/affine.config $work/affine.mdl 2>/dev/null
    nnet-init $work/ng.config $work/ng.mdl 2>/dev/null
    count=${count_opt:-$((d[0] > 500 ? 12000 : 8000))}
    make_egs ${d[0]} ${d[-1]} $count $work/data
    # bf16 needs AMX-BF16 or AVX512-BF16 (nnet-train refuses emulated bf16): without, its columns are n/a
    bf16=true
    bf16_runs $work/affine.mdl $work/data.egs || bf16=false
    for mb in $mbs; do
        for t in $threads; do
            # about `seconds` of bf16 training at a generous rate (samples/s per thread)
            passes=$(( (seconds * t * (d[0] > 500 ? rate : rate / 2) + count - 1) / count ))
            declare -A wall=() cpu=() steady=()
            declare -A step_cost=()
            torch_fp32=$(torch_fastest $dims $mb $t none) torch_bf16=n/a
            $bf16 && torch_bf16=$(torch_fastest $dims $mb $t bf16)
            for r in $(seq $repeats); do
                for c in "${cols[@]}"; do
                    [[ $c == *bf16* ]] && ! $bf16 && continue
                    case $c in
                        fp32-A) v=$(parnet_rate $work/affine.mdl $work/data.egs $mb $t $passes fp32) ;;
                        fp32-NG) v=$(parnet_rate $work/ng.mdl $work/data.egs $mb $t $passes fp32) ;;
                        bf16-A) v=$(parnet_rate $work/affine.mdl $work/data.egs $mb $t $passes bf16) ;;
                        bf16-NG) v=$(parnet_rate $work/ng.mdl $work/data.egs $mb $t $passes bf16) ;;
                        torch-fp32) v=$(torch_run $torch_fp32 $dims $mb $t none $seconds) ;;
                        torch-bf16) v=$(torch_run $torch_bf16 $dims $mb $t bf16 $seconds) ;;
                        bound-openblas) v=$(bound_rate openblas $mb $t $dims) ;;
                        bound-onednn-f32) v=$(bound_rate dnnl-f32 $mb $t $dims) ;;
                        bound-onednn-bf16) v=$(bound_rate dnnl-bf16 $mb $t $dims) ;;
                    esac
                    wall[$c]+="${v% *} " cpu[$c]+="${v#* } "
                    [[ $c == fp32-* || $c == bf16-* ]] && steady[$c]+="$(cat $work/steady) "
                done
                for p in fp32 bf16; do
                    [ $p = bf16 ] && ! $bf16 && continue
                    "$top/build/bench/train-step" $work/affine.mdl $mb $t $seconds no $p $work/ng.mdl \
                        >$work/step 2>/dev/null
                    step_cost[$p]+="$(field cost_median <$work/step) "
                    wall[step-$p]+="$(field samples_per_sec <$work/step) "
                    cpu[step-$p]+="$(field cpu_samples_per_sec <$work/step) "
                done
            done
            step_median() { printf '%s\n' ${step_cost[$1]} | median | awk '{ printf "%+.0f%%", $1 * 100 }'; }
            sc32=$(step_median fp32) sc=n/a
            $bf16 && sc=$(step_median bf16)
            for kind in wall cpu; do
                declare -n vals=$kind
                declare -A med=()
                for c in "${cols[@]}" step-fp32 step-bf16; do
                    med[$c]=$(median_of_rounds "${vals[$c]:-}")
                done
                # median over rounds of x_r / y_r, and of the cost y_r / x_r - 1
                ratio() { paired_ratio "${vals[$1]:-}" "${vals[$2]:-}"; }
                # nnet-train after its first 10 minibatches over the wall rates (no CPU-time figure)
                steady_ratio() { [ $kind = wall ] || { echo n/a; return; }
                                 paired_ratio "${steady[$1]:-}" "${wall[$2]:-}"; }
                cost() { local r; r=$(ratio $1 $2); [ $r = n/a ] && { echo n/a; return; }
                         awk -v r=$r 'BEGIN { printf "%+.0f%%", (r - 1) * 100 }'; }
                row=$(printf "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" \
                    $name $mb $t ${med[fp32-A]} ${med[fp32-NG]} ${med[bf16-A]} ${med[bf16-NG]} \
                    ${med[torch-fp32]} ${med[torch-bf16]} ${med[bound-openblas]} ${med[bound-onednn-f32]} \
                    ${med[bound-onednn-bf16]} "$(ratio bf16-A fp32-A)" "$(ratio fp32-A torch-fp32)" "$(ratio bf16-A torch-bf16)" \
                    "$(ratio bf16-A bound-onednn-bf16)" "$(cost fp32-A fp32-NG)" "$(cost bf16-A bf16-NG)" "$sc32" "$sc" \
                    ${med[step-fp32]} ${med[step-bf16]} "$(ratio step-bf16 bound-onednn-bf16)" \
                    "$(ratio fp32-A step-fp32)" "$(ratio bf16-A step-bf16)" \
                    "$(steady_ratio bf16-A bound-onednn-bf16)" "$(steady_ratio fp32-A step-fp32)" \
                    "$(steady_ratio bf16-A step-bf16)" "$torch_fp32 $torch_bf16")
                [ $kind = wall ] && rows_wall+=("$row") || rows_cpu+=("$row")
                echo "$kind $row" >&2
                unset -n vals
            done
        done
    done
done
head="| network | mb | threads | fp32 Affine | fp32 NG | bf16 Affine | bf16 NG | PyTorch fp32 | PyTorch bf16 autocast | bound OpenBLAS | bound oneDNN fp32 | bound oneDNN bf16 | bf16/fp32 | fp32/PyTorch fp32 | bf16/PyTorch bf16 | bf16/bf16 bound | NG cost fp32 | NG cost bf16 | step NG cost fp32 | step NG cost bf16 | step fp32 Affine | step bf16 Affine | step bf16/bf16 bound | e2e/step fp32 | e2e/step bf16 | steady bf16/bf16 bound | steady e2e/step fp32 | steady e2e/step bf16 | PyTorch setting fp32 bf16 |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
echo "Wall-clock samples/s:"; echo; echo "$head"; printf '%s\n' "${rows_wall[@]}"; echo
echo "CPU-time samples/s (per threads x CPU-second):"; echo; echo "$head"; printf '%s\n' "${rows_cpu[@]}"; echo
echo "median of $repeats interleaved rounds of ~$seconds s; ratios and NG costs: median over rounds of the ratio within a round; step NG cost and step rates: bench/train-step.c (the step alone on examples in memory), Affine and NG in turns of 0.25 s; e2e/step: nnet-train's Affine over the step's; steady: nnet-train after its first 10 minibatches (wall clock only); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $(date -u +%F)"
