#!/usr/bin/env bash
# Builds the libFuzzer targets (make fuzz) and runs each for FUZZ_SECONDS (default 20) from a seed
# corpus in tests/fuzz/corpus/<target>/ when present. Fails if any target finds a crash.
# FUZZ_JOBS targets run at once (default: the cores, at most 4); each is one process.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
secs=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-$(n=$(nproc 2>/dev/null || echo 1); echo $((n < 4 ? n : 4)))}
make -j2 fuzz >/dev/null
shopt -s nullglob
targets=(); for t in build/fuzz/fuzz-*; do [ -x "$t" ] && [ -f "$t" ] && targets+=("$t"); done
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets"; exit 0; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fuzz_one() { # target: its log in $out/<name>.log, "ok <runs>" or "crash" in $out/<name>.res
    local t=$1 name work runs
    name=$(basename "$t")
    work=$(mktemp -d)
    [ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/" 2>/dev/null
    if "$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=4096 "$work" >"$out/$name.log" 2>&1; then
        runs=$(grep -Eo 'Done [0-9]+ runs' "$out/$name.log" | awk '{print $2}' | tail -n 1)
        echo "ok ${runs:-0}" >"$out/$name.res"
    else
        echo crash >"$out/$name.res"
    fi
    rm -rf "$work"
}
running=0
for t in "${targets[@]}"; do
    if [ $running -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait
total=0 crashed=0
for t in "${targets[@]}"; do
    name=$(basename "$t")
    read -r status runs <"$out/$name.res" || status=crash
    if [ "$status" = ok ]; then
        echo "fuzz: $name ran $runs executions in ${secs}s, no crash"
        total=$((total + runs))
    else
        tail -n 40 "$out/$name.log"; echo "fuzz: $name FAILED"; crashed=1
    fi
done
echo "fuzz: $total executions in all"
[ "$crashed" -eq 0 ]
