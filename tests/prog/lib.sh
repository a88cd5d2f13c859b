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
# expect_accuracy NAME LOG MIN : the accuracy of nnet-compute-prob's summary line in LOG is above MIN
expect_accuracy() {
    local acc
    acc=$(grep -o 'accuracy is [0-9.]*' "$2" 2>/dev/null | awk '{print $3}')
    if awk -v a="${acc:-0}" -v m="$3" 'BEGIN { exit !(a > m) }'; then pass "$1 $acc > $3"
    else fail "$1 '$acc'"; fi
}

# The training tests' small task: gauss.py's Gaussian classes as text archives, then as examples.
# gauss_py <<'PY' ... PY : python3 on a here-document, with gauss.py importable (`from gauss import Gauss`)
gauss_py() { PYTHONPATH="$TESTS/prog${PYTHONPATH:+:$PYTHONPATH}" python3 - "$@"; }
# text_egs [NNET-GET-EGS-OPTION...] SET... : SET.feats.txt and SET.labels.txt (the text archives
# gauss.py writes) as SET.feats.ark with SET.feats.scp, SET.labels.ark and the examples SET.egs
text_egs() {
    local opts=() s
    while [[ $1 == --* ]]; do opts+=("$1"); shift; done
    for s; do
        copy-feats ark,t:$s.feats.txt ark,scp:$s.feats.ark,$s.feats.scp 2>/dev/null
        copy-int-vector ark,t:$s.labels.txt ark:$s.labels.ark 2>/dev/null
        nnet-get-egs "${opts[@]}" ark:$s.feats.ark ark:$s.labels.ark ark:$s.egs 2>/dev/null
    done
}
# text_data_dir PREFIX DIR : PREFIXfeats.txt and PREFIXlabels.txt as the Kaldi data directory DIR
# (feats.scp, labels.scp and their archives), as steps/get_egs.sh reads it
text_data_dir() {
    mkdir -p "$2"
    copy-feats ark,t:$1feats.txt ark,scp:$PWD/$2/feats.ark,$2/feats.scp 2>/dev/null
    copy-int-vector ark,t:$1labels.txt ark,scp:$PWD/$2/labels.ark,$2/labels.scp 2>/dev/null
}
# gauss_data_dir SEED N : data/train, a Kaldi data directory of N one-frame utterances (u0000 ...)
# of 3 Gaussian classes in 8 dimensions (gauss.py, spread 1.5)
gauss_data_dir() {
    gauss_py "$1" "$2" <<'PY'
import sys
from gauss import Gauss
g = Gauss(seed=int(sys.argv[1]), spread=1.5, dim=8)
g.write("", g.utts("u", int(sys.argv[2])))
PY
    text_data_dir "" data/train
}
# mlp_config IN HIDDEN OUT FIRST LAST OPTIONS [LAST-OPTIONS] : on stdout, the network config of the
# training tests: FIRST (an affine component, without "Component") from IN to HIDDEN, ReLU, LAST
# from HIDDEN to OUT, softmax; OPTIONS go on both affine lines, LAST-OPTIONS on the output one only.
mlp_config() {
    echo "${4}Component input-dim=$1 output-dim=$2 $6"
    echo "RectifiedLinearComponent dim=$2"
    echo "${5}Component input-dim=$2 output-dim=$3 $6${7:+ $7}"
    echo "SoftmaxComponent dim=$3"
}

# recipe_links: steps/ and utils/ in the current directory, as a recipe has them
recipe_links() { ln -s "$PARNET_TOP/steps" steps; ln -s "$PARNET_TOP/utils" utils; }
# fashion_mnist_recipe : the current directory as egs/fashion-mnist (its local/, conf/, path.sh,
# steps/ and utils/, the programs on PATH); the test fails at once where the dataset is missing
fashion_mnist_recipe() {
    if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
        fail "dataset-fashion-mnist is not installed (tools/install-deps.sh installs it)"; exit 1
    fi
    local recipe=$PARNET_TOP/egs/fashion-mnist
    cp -r "$recipe/local" "$recipe/conf" "$recipe/path.sh" .
    recipe_links
    export PATH=$PARNET_BIN:$PARNET_TOP/utils:$PATH
}
# mpi_sanitizers: under SAN=address, Open MPI's own allocations outlive MPI_Finalize: suppress
# those only (with full unwinding, so that every such stack shows its Open MPI frames)
mpi_sanitizers() {
    export LSAN_OPTIONS="suppressions=$TESTS/prog/lsan-openmpi.supp:print_suppressions=0"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
}
# need_mpirun : skip the test (exit 0) where mpirun is missing; otherwise mpi_sanitizers
need_mpirun() {
    if ! command -v mpirun >/dev/null; then
        echo "SKIP $(basename "$0" .sh): mpirun not found (tools/install-deps.sh --mpi installs Open MPI)"
        exit 0
    fi
    mpi_sanitizers
}
