#!/usr/bin/env bash
# Every unit test under valgrind's memcheck: any invalid access, use of uninitialised memory or
# definite leak fails it. The binaries must not use AVX-512 (valgrind cannot decode it): build
# with `make ARCH=x86-64-v2` (make valgrind-test ARCH=x86-64-v2 does both).
#   usage: tests/valgrind-unit.sh [unit-test-dir]     e.g.: tests/valgrind-unit.sh build/obj-x86-64-v2/tests
# Prints PASS/FAIL per test and "N passed, N failed"; GPU tests are left out (no GPU under valgrind),
# and so are those matching the extended regex VALGRIND_SKIP (e.g. 'matrix-test' where time is short).
# VALGRIND_JOBS tests run at once (default: the cores, at most 4): each valgrind is single-threaded.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/obj-x86-64-v2/tests}
command -v valgrind >/dev/null || { echo "SKIP valgrind not installed"; exit 0; }
# OpenBLAS must not pick its AVX-512 kernels either (tools/blas-env.sh would choose SKYLAKEX);
# PRESCOTT (SSE3) rather than HASWELL: nnet-test test_direct_update fails with the HASWELL
# kernels (a tolerance, seen 2026-12-01 with OpenBLAS 0.3.21, in the native build too).
export OPENBLAS_CORETYPE=${VALGRIND_OPENBLAS_CORETYPE:-PRESCOTT}
# One BLAS thread per test: the tests run side by side instead.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
jobs=${VALGRIND_JOBS:-$(n=$(nproc 2>/dev/null || echo 1); echo $((n < 4 ? n : 4)))}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

check_one() { # test binary: "PASS ..." or "FAIL ..." with the log's tail, in $log/<name>.res
    local t=$1 name start
    name=$(basename "$t")
    start=$(date +%s)
    if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        "$t" >"$log/$name.out" 2>&1; then
        echo "PASS valgrind $name ($(( $(date +%s) - start ))s)" >"$log/$name.res"
    else
        { echo "FAIL valgrind $name"; tail -n 30 "$log/$name.out" | sed 's/^/    /'; } >"$log/$name.res"
    fi
}
tests=() running=0
for t in "$dir"/*-test; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    case $name in *gpu*) continue ;; esac
    [ -n "${VALGRIND_SKIP:-}" ] && [[ $name =~ $VALGRIND_SKIP ]] && { echo "SKIP valgrind $name"; continue; }
    if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
    check_one "$t" &
    running=$((running + 1)); tests+=("$name")
done
wait
pass=0 fail=0
for name in "${tests[@]}"; do
    cat "$log/$name.res"
    case $(head -c 4 "$log/$name.res") in PASS) pass=$((pass + 1)) ;; *) fail=$((fail + 1)) ;; esac
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
