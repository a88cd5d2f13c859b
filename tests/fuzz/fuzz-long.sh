#!/usr/bin/env bash
# Long fuzzing: runs every libFuzzer target (or those named) for SECONDS each (or, with --runs N,
# until each has made N executions on this corpus), one after another,
# at the lowest priority, on a corpus kept in build/fuzz/corpus/<target>/ between runs (seeded from
# tests/fuzz/corpus/<target>/). Appends one line per target to build/fuzz/fuzz-long.log:
#   <UTC date> <target> <seconds> <executions> <exec/s> <corpus size> ok|CRASH
# and stops at the first crash (the reproducer is build/fuzz/artifacts/<target>/crash-*).
#   usage: tests/fuzz/fuzz-long.sh [--runs N] SECONDS [fuzz-target ...]
#          (make fuzz-long FUZZ_SECONDS=N [FUZZ_RUNS=M])
#   e.g.:  tests/fuzz/fuzz-long.sh 3600 fuzz-egs fuzz-archive
#          tests/fuzz/fuzz-long.sh --runs 10000000 7200      (10 M each, at most 2 h each)
set -euo pipefail
runs_opt=()
if [ "${1:-}" = --runs ]; then
    [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "$0: --runs needs a positive count" >&2; exit 2; }
    runs_opt=(-runs="$2"); shift 2
fi
[ $# -ge 1 ] || { sed -n '2,11p' "$0"; exit 2; }
[[ "$1" =~ ^[1-9][0-9]*$ ]] || { echo "$0: SECONDS must be a positive integer, not '$1'" >&2; exit 2; }
secs=$1; shift
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
make -j2 fuzz >/dev/null
if [ $# -gt 0 ]; then targets=("$@"); else
    targets=(); for t in build/fuzz/fuzz-*; do [ -x "$t" ] && targets+=("$(basename "$t")"); done; fi
log=build/fuzz/fuzz-long.log
for name in "${targets[@]}"; do
    corpus=build/fuzz/corpus/$name art=build/fuzz/artifacts/$name/
    mkdir -p "$corpus" "$art"
    [ -d "tests/fuzz/corpus/$name" ] && cp -n "tests/fuzz/corpus/$name/"* "$corpus/" 2>/dev/null || true
    out=build/fuzz/$name.long.log
    status=ok
    nice -n 19 "build/fuzz/$name" -max_total_time="$secs" "${runs_opt[@]}" -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$art" "$corpus" >"$out" 2>&1 || status=CRASH
    runs=$(grep -Eo 'Done [0-9]+ runs' "$out" | awk '{print $2}' | tail -n 1)
    rate=$(grep -Eo 'exec/s: [0-9]+' "$out" | awk '{print $2}' | tail -n 1)
    size=$(ls "$corpus" | wc -l)
    echo "$(date -u +%FT%TZ) $name $secs ${runs:-?} ${rate:-?} $size $status" | tee -a "$log"
    if [ "$status" != ok ]; then tail -n 40 "$out"; exit 1; fi
done
