#!/usr/bin/env bash
# Runs every unit test binary and every program test script (several at once); each prints PASS/FAIL lines.
# The last line is "N passed, N failed"; the exit status is 0 only if nothing failed.
# Environment: PARNET_BIN (programs), PARNET_UNIT (unit test binaries); set by `make test`.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${PARNET_BIN:=$top/bin}" "${PARNET_UNIT:=$top/build/obj/tests}"
export PARNET_BIN PATH="$PARNET_BIN:$top/utils:$PATH" PARNET_TOP=$top
. "$top/tools/blas-env.sh"   # the fast OpenBLAS kernels, as the recipes use
pass=0 fail=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

count() { # name, output file, exit status, seconds taken
    local p f
    p=$(grep -c '^PASS ' "$2"); f=$(grep -c '^FAIL ' "$2")
    grep '^FAIL ' "$2"
    grep '^SKIP ' "$2" # what did not run (e.g. GPU tests without a GPU); counts neither way
    if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $1: exited with status $3"; tail -n 5 "$2" | sed 's/^/    /'; f=1
    fi
    # A test may skip itself (a missing optional tool) with a "SKIP reason" line and no checks.
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$3" -eq 0 ] && grep -q '^SKIP ' "$2"; then
        grep '^SKIP ' "$2"; echo "$1: skipped (${4}s)"; return
    fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $1: ran no check"; f=1; fi
    pass=$((pass + p)); fail=$((fail + f))
    echo "$1: $p passed, $f failed (${4}s)"
}

only=${1:-}
# PARNET_TEST_SKIP: an extended regex of test names to leave out (e.g. 't0510|t0511|t0520' where
# another run on the same machine holds the single-node Slurm and Grid Engine).
skip=${PARNET_TEST_SKIP:-}
# PARNET_TEST_JOBS tests run at once (default: the cores, at most 4); those matching
# PARNET_TEST_SERIAL (the ones that start a batch system on localhost) run alone, after the rest.
jobs=${PARNET_TEST_JOBS:-$(n=$(nproc 2>/dev/null || echo 1); echo $((n < 4 ? n : 4)))}
serial=${PARNET_TEST_SERIAL:-t0505|t0510|t0511|t0512|t0520}
names=() paths=()
for t in "$PARNET_UNIT"/*-test "$top"/tests/prog/t[0-9]*.sh; do
    case $t in *.sh) [ -f "$t" ] || continue; name=prog/$(basename "$t") ;;
               *) [ -x "$t" ] || continue; name=unit/$(basename "$t") ;; esac
    [ -n "$only" ] && [[ $name != *$only* ]] && continue
    [ -n "$skip" ] && [[ $name =~ $skip ]] && continue
    names+=("$name") paths+=("$t")
done

run_one() { # index: output in $log/i.out, then "status seconds" in $log/i.rc
    local t=${paths[$1]} t0=$SECONDS rc work
    if [[ $t == *.sh ]]; then
        work=$(mktemp -d)
        (cd "$work" && bash "$t") >"$log/$1.out" 2>&1; rc=$?
        rm -rf "$work"
    else
        "$t" >"$log/$1.out" 2>"$log/$1.err"; rc=$?
        cat "$log/$1.err" >>"$log/$1.out"
    fi
    echo "$rc $((SECONDS - t0))" >"$log/$1.rc.tmp" && mv "$log/$1.rc.tmp" "$log/$1.rc"
}
next=0
report() { # the finished tests, in order (the serial ones are reported after the rest)
    local rc secs
    while [ $next -lt ${#names[@]} ]; do
        if ! [[ ${names[$next]} =~ $serial ]]; then
            [ -f "$log/$next.rc" ] || break
            read -r rc secs <"$log/$next.rc"
            count "${names[$next]}" "$log/$next.out" "$rc" "$secs"
        fi
        next=$((next + 1))
    done
}
running=0
for i in "${!names[@]}"; do
    [[ ${names[$i]} =~ $serial ]] && continue
    if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); report; fi
    run_one "$i" &
    running=$((running + 1))
done
wait
report
for i in "${!names[@]}"; do
    [[ ${names[$i]} =~ $serial ]] || continue
    run_one "$i"
    read -r rc secs <"$log/$i.rc"
    count "${names[$i]}" "$log/$i.out" "$rc" "$secs"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
