#!/usr/bin/env bash
# Runs every unit test binary and every program test script; each prints PASS/FAIL lines.
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

count() { # name, output file, exit status
    local p f
    p=$(grep -c '^PASS ' "$2"); f=$(grep -c '^FAIL ' "$2")
    grep '^FAIL ' "$2"
    grep '^SKIP ' "$2" # what did not run (e.g. GPU tests without a GPU); counts neither way
    if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $1: exited with status $3"; tail -n 5 "$2" | sed 's/^/    /'; f=1
    fi
    # A test may skip itself (a missing optional tool) with a "SKIP reason" line and no checks.
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$3" -eq 0 ] && grep -q '^SKIP ' "$2"; then
        grep '^SKIP ' "$2"; echo "$1: skipped"; return
    fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $1: ran no check"; f=1; fi
    pass=$((pass + p)); fail=$((fail + f))
    echo "$1: $p passed, $f failed"
}

only=${1:-}
# PARNET_TEST_SKIP: an extended regex of test names to leave out (e.g. 't0510|t0511|t0520' where
# another run on the same machine holds the single-node Slurm and Grid Engine).
skip=${PARNET_TEST_SKIP:-}
for t in "$PARNET_UNIT"/*-test; do
    [ -x "$t" ] || continue
    name=unit/$(basename "$t")
    [ -n "$only" ] && [[ $name != *$only* ]] && continue
    [ -n "$skip" ] && [[ $name =~ $skip ]] && continue
    "$t" >"$log/out" 2>"$log/err"; rc=$?
    cat "$log/err" >>"$log/out"
    count "$name" "$log/out" $rc
done
for t in "$top"/tests/prog/t[0-9]*.sh; do
    [ -f "$t" ] || continue
    name=prog/$(basename "$t")
    [ -n "$only" ] && [[ $name != *$only* ]] && continue
    [ -n "$skip" ] && [[ $name =~ $skip ]] && continue
    work=$(mktemp -d)
    (cd "$work" && bash "$t") >"$log/out" 2>&1; rc=$?
    rm -rf "$work"
    count "$name" "$log/out" $rc
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
