# bench/lib.sh: what the training benchmarks share (sourced; defines functions only).
# The networks are written with max-change=0 on every line and the trainers run with
# --max-change=0: the figures measure the step itself (as PyTorch's plain SGD beside it), and stay
# comparable with the figures from before max-change was on by default (README "Safe by default").

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# The rounds of a configuration as "r1 r2 ...": their median rounded, or n/a where none ran.
median_of_rounds() { [ -z "$1" ] && { echo n/a; return; }; printf '%s\n' $1 | median | awk '{ printf "%.0f", $1 }'; }
# Two configurations' rounds: the median over rounds of x_r / y_r (paired within a round), or n/a.
paired_ratio() {
    { [ -z "$1" ] || [ -z "$2" ]; } && { echo n/a; return; }
    paste <(printf '%s\n' $1) <(printf '%s\n' $2) | awk '{ print $1 / $2 }' | median |
        awk '{ printf "%.2f", $1 }'
}

# Random examples: enough for `seconds` of training at a generous rate.
make_egs() { # input-dim num-classes count out
    /usr/bin/python3 - "$@" <<'PY'
import random, struct, sys
dim, classes, count, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
random.seed(1)
with open(out + ".feats.ark", "wb") as f, open(out + ".labels.ark", "wb") as l:
    for i in range(count):
        key = f"u{i:06d} ".encode()
        row = struct.pack(f"<{dim}f", *[random.gauss(0, 1) for _ in range(dim)])
        f.write(key + b"\0BFM \x04" + struct.pack("<i", 1) + b"\x04" + struct.pack("<i", dim) + row)
        l.write(key + b"\0B\x04" + struct.pack("<i", 1) + b"\x04" + struct.pack("<i", random.randrange(classes)))
PY
    nnet-get-egs --compress=none ark:$4.feats.ark ark:$4.labels.ark ark:$4.egs 2>/dev/null
}

config() { # type dims...
    local type=$1; shift
    local dims=("$@") n=$(($# - 1))
    for ((i = 0; i < n; i++)); do
        echo "$type input-dim=${dims[i]} output-dim=${dims[i+1]} learning-rate=0.0001 max-change=0"
        [ $i -lt $((n - 1)) ] && echo "RectifiedLinearComponent dim=${dims[i+1]}"
    done
    echo "SoftmaxComponent dim=${dims[n]}"
}

# The benchmarks' start: programs on PATH, OpenBLAS's kernel as the recipes get it, a scratch
# directory $work removed at exit, build/bench for the compiled peers.
bench_setup() {
    export PATH=$top/bin:$PATH LC_ALL=C
    . "$top/tools/blas-env.sh"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$top/build/bench"
}

field() { sed -n "s/.*\<$1=\([0-9.-]*\).*/\1/p"; } # field NAME < "a=1 NAME=-2"

# nnet-train's wall rate after its first phase (frames over time of the later progress lines of
# --minibatches-per-phase), or 0 where the log has no later phase.
steady_rate() { # log
    sed -n 's/.*Minibatches \([0-9]*\)-.* over \([0-9.]*\) frames, \([0-9.]*\) frames\/s.*/\1 \2 \3/p' \
        "$1" | awk '$1 > 0 { f += $2; t += $2 / $3 } END { printf "%.1f\n", (t > 0 ? f / t : 0) }'
}

# nnet-train end to end: "wall cpu" rates (frames over its own clock; over user+sys CPU / threads).
# It also writes $work/steady: the wall rate after the first 10 minibatches (from the progress
# lines of 10-minibatch phases), without the process's start (primitive creation, first touches:
# ~0.1 s, a few per cent of a run of a few seconds and nothing in a real one); 0 where the run
# had no later phase.
parnet_rate() { # model egs mb threads passes precision
    /usr/bin/time -f 'cpu_seconds=%U %S' -o $work/time nnet-train --minibatch-size=$3 \
        --num-threads=$4 --precision=$6 --minibatches-per-phase=10 --max-change=0 $1 \
        "ark:for i in \$(seq $5); do cat $2; done |" $work/out.mdl 2>$work/log ||
        { echo "$0: nnet-train failed:" >&2; cat $work/log $work/time >&2; exit 1; }
    local wall frames cpu
    wall=$(grep -o '[0-9]* frames/s;' $work/log | awk '{print $1}')
    steady_rate $work/log >$work/steady
    frames=$(grep -o 'examples ([0-9]* frames' $work/log | grep -o '[0-9]*')
    cpu=$(sed -n 's/cpu_seconds=\([0-9.]*\) \([0-9.]*\)/\1 \2/p' $work/time | awk '{print $1 + $2}')
    echo "$wall $(awk -v f=$frames -v c=$cpu -v t=$4 'BEGIN { printf "%.1f", f * t / c }')"
}

# true where --precision=bf16 runs (AMX-BF16 or AVX512-BF16), false where nnet-train refuses it;
# any other failure ends the benchmark.
bf16_runs() { # model egs
    nnet-train --precision=bf16 $1 "ark:nnet-subset-egs --n=256 ark:$2 ark:- 2>/dev/null |" \
        $work/probe.mdl 2>$work/log && return 0
    grep -q 'cannot run here' $work/log && return 1
    cat $work/log >&2; exit 1
}
