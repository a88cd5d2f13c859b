# Helpers for program tests (sourced). Each check prints one PASS or FAIL line.
# Programs are on PATH (tests/run-tests.sh puts $PARNET_BIN first). Run in a fresh temp dir.
: "${PARNET_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
export PARNET_TOP
TESTS=$PARNET_TOP/tests

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }

# expect_status NAME CODE cmd...   : run cmd (stdout > out, stderr > err), check its exit status
expect_status() {
    local name=$1 want=$2; shift 2
    "$@" >out 2>err; local rc=$?
    if [ "$rc" -eq "$want" ]; then pass "$name"; else
        fail "$name: exit $rc, expected $want"; sed 's/^/    /' err | tail -n 5; fi
}
# expect_err NAME PATTERN : the last command's stderr matches the extended regex
expect_err() {
    if grep -Eq -- "$2" err; then pass "$1"; else fail "$1: stderr lacks /$2/"; sed 's/^/    /' err | tail -n 5; fi
}
# expect_same NAME FILE1 FILE2 : byte-identical
expect_same() {
    if cmp -s "$2" "$3"; then pass "$1"; else fail "$1: $2 and $3 differ"; cmp "$2" "$3" | head -3; fi
}
# expect_eq NAME GOT WANT
expect_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', expected '$3'"; fi
}
