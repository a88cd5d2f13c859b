#!/usr/bin/env bash
# Every unit test under valgrind's memcheck: any invalid access, use of uninitialised memory or
# definite leak fails it. The binaries must not use AVX-512 (valgrind cannot decode it): build
# with `make ARCH=x86-64-v2` (make valgrind-test ARCH=x86-64-v2 does both).
#   usage: tests/valgrind-unit.sh [unit-test-dir]     e.g.: tests/valgrind-unit.sh build/obj-x86-64-v2/tests
# Prints PASS/FAIL per test and "N passed, N failed"; GPU tests are left out (no GPU under valgrind).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/obj-x86-64-v2/tests}
command -v valgrind >/dev/null || { echo "SKIP valgrind not installed"; exit 0; }
# OpenBLAS must not pick its AVX-512 kernels either (tools/blas-env.sh would choose SKYLAKEX).
export OPENBLAS_CORETYPE=${VALGRIND_OPENBLAS_CORETYPE:-HASWELL}
pass=0 fail=0
for t in "$dir"/*-test; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    case $name in *gpu*) continue ;; esac
    start=$(date +%s)
    if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        "$t" >/tmp/valgrind-unit.$$ 2>&1; then
        echo "PASS valgrind $name ($(( $(date +%s) - start ))s)"; pass=$((pass + 1))
    else
        echo "FAIL valgrind $name"; tail -n 30 /tmp/valgrind-unit.$$ | sed 's/^/    /'; fail=$((fail + 1))
    fi
done
rm -f /tmp/valgrind-unit.$$
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
