#!/usr/bin/env bash
# bench/callgrind-ab.sh: instructions per function of nnet-train's training step, two revisions
# side by side (a change that must not cost speed, checked on a machine too loaded for clocks).
#
# Each revision is exported (git archive) and built with `make ARCH=x86-64-v3 DNNL=0` (valgrind
# cannot run AVX-512 code; oneDNN is not on the fp32 path); both then train the same model on the
# same random examples (bench/lib.sh: make_egs, config) under
#   OPENBLAS_CORETYPE=HASWELL valgrind --tool=callgrind nnet-train --minibatch-size=128
#       --minibatches-per-phase=0 --max-change=0 --num-threads=T <model> ark:<egs> <out>
# and callgrind_annotate's self counts are paired by function. Prints a row per function with at
# least 0.1% of either run's instructions: A, B and B/A, then the totals. One thread gives counts
# that do not depend on timing; with two the pool's spin-wait moves with scheduling.
#
# Usage: [THREADS=1] [EGS=1024] [TYPE=AffineComponent] [DIR=/tmp/callgrind-ab] bench/callgrind-ab.sh REV-A REV-B
# e.g.:  bench/callgrind-ab.sh main HEAD
#        TYPE=NaturalGradientAffineComponent THREADS=2 bench/callgrind-ab.sh main i34
set -euo pipefail
threads=${THREADS:-1} egs=${EGS:-1024} type=${TYPE:-AffineComponent} dir=${DIR:-/tmp/callgrind-ab}
[ $# -eq 2 ] || { sed -n '/^# Usage:/,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
mkdir -p "$dir"

build() { # rev -> $dir/<name>/bin (kept, and reused for the same commit)
    local rev=$1 out=$dir/$2 commit
    commit=$(git -C "$top" rev-parse "$rev^{commit}")
    [ -x "$out/bin/nnet-train" ] && [ "$(cat "$out.commit" 2>/dev/null)" = "$commit" ] && return
    rm -rf "$out" && mkdir -p "$out"
    git -C "$top" archive "$rev" | tar -x -C "$out"
    make -C "$out" -j2 ARCH=x86-64-v3 DNNL=0 bin/nnet-train bin/nnet-init bin/nnet-get-egs \
        >"$out.build.log" 2>&1 || { echo "$0: build of $rev failed: $out.build.log" >&2; exit 1; }
    echo "$commit" >"$out.commit"
}
build "$1" a
build "$2" b

export PATH=$dir/a/bin:$PATH
[ -s "$dir/data.$egs.egs" ] || make_egs 784 10 "$egs" "$dir/data.$egs"
config "$type" 784 512 512 10 >"$dir/net.config"
nnet-init --srand=1 "$dir/net.config" "$dir/0.mdl" 2>/dev/null

# REANNOTATE=1: pair the profiles of an earlier run (same settings) again without running them.
for side in a b; do
    run=$dir/$side-$type-$threads-$egs
    if [ -z "${REANNOTATE:-}" ] || [ ! -s "$run.out" ]; then
        OPENBLAS_CORETYPE=HASWELL valgrind --tool=callgrind --callgrind-out-file="$run.out" \
            "$dir/$side/bin/nnet-train" --minibatch-size=128 --minibatches-per-phase=0 \
            --max-change=0 --num-threads="$threads" "$dir/0.mdl" "ark:$dir/data.$egs.egs" \
            "$run.mdl" 2>"$run.log"
    fi
    callgrind_annotate --threshold=100 "$run.out" 2>/dev/null |
        awk '/file:function/ && !seen { on = seen = 1; getline; next } on && /^---/ { on = 0 }
             on && /^ *[0-9,]+ .*:/ { n = $1; gsub(",", "", n); f = $0; sub(/^ *[0-9,]+ +(\([^)]*\) +)?/, "", f);
             sub(/ \[[^]]*\]$/, "", f); i = index(f, ":"); file = substr(f, 1, i - 1);
             sub(/.*\//, "", file); c[file ":" substr(f, i + 1)] += n }
             END { for (f in c) print c[f] "\t" f }' \
            >"$dir/$side.fn"
done

echo "callgrind A/B: $1 (A) vs $2 (B), $type 784-512-512-10, $egs examples, minibatch 128, $threads thread(s)"
awk -F'\t' 'FNR == NR { a[$2] = $1; ta += $1; next } { b[$2] = $1; tb += $1 }
    END {
        for (f in a) seen[f] = 1
        for (f in b) seen[f] = 1
        printf "%15s %15s %9s  %s\n", "A", "B", "B/A", "function"
        for (f in seen) if (a[f] >= ta / 1000 || b[f] >= tb / 1000)
            printf "%15d %15d %9.5f  %s\n", a[f], b[f], a[f] ? b[f] / a[f] : 0, f
        printf "%15d %15d %9.5f  %s\n", ta, tb, tb / ta, "(total)"
    }' "$dir/a.fn" "$dir/b.fn" | { read -r head; echo "$head"; sort -k1,1nr; }
