#!/usr/bin/env bash
# Builds the libFuzzer targets (make fuzz) and runs each for FUZZ_SECONDS (default 20) from a seed
# corpus in tests/fuzz/corpus/<target>/ when present. Fails if any target finds a crash.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
secs=${FUZZ_SECONDS:-20}
make -j2 fuzz >/dev/null
shopt -s nullglob
targets=(); for t in build/fuzz/fuzz-*; do [ -x "$t" ] && [ -f "$t" ] && targets+=("$t"); done
[ ${#targets[@]} -gt 0 ] || { echo "no fuzz targets"; exit 0; }
total=0
for t in "${targets[@]}"; do
    name=$(basename "$t")
    work=$(mktemp -d)
    [ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/" 2>/dev/null
    if ! "$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=4096 "$work" >"$work.log" 2>&1; then
        tail -n 40 "$work.log"; echo "fuzz: $name FAILED"; exit 1
    fi
    runs=$(grep -Eo 'Done [0-9]+ runs' "$work.log" | awk '{print $2}' | tail -n 1)
    echo "fuzz: $name ran ${runs:-?} executions in ${secs}s, no crash"
    total=$((total + ${runs:-0}))
    rm -rf "$work" "$work.log"
done
echo "fuzz: $total executions in all"
