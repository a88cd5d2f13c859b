#!/usr/bin/env bash
# The malformed-input matrix (issue 15): every program against every class of bad input. Each
# cell runs one program with one input (or the output, or an option) replaced by a bad one and
# checks: the exit status (1, or 2 for a bad option; never a crash or a signal), exactly one
# ERROR line (the "prog: ..." line for a usage error) naming the bad file -- and the key where the
# fault is inside one entry --, no sanitizer report, a pre-existing output byte-identical, and no
# temporary left behind.
#
# Adding a program is one row in ROWS below:
#   "<command with @ for the bad input and OUT for the output>|<input kind>|<classes>"
# kinds: feats (a matrix archive), labels (an int32-vector archive), model, bnmodel (a model with
# BatchNorm), config, egs.
# classes: trunc (cut at 1 byte, half-way and one byte short), token (a format token broken),
# dims (a dimension the model does not take), nan, label (out of range), empty, dir, missing,
# and for every row also: unwritable (the output in a missing directory; rows with OUT),
# badopt (an unknown option) and badval (--verbose=x). A class a program has no use for is left
# out of its row: e.g. copy-feats copies NaN (with a warning) and takes any dimension.
. "$(dirname "$0")/lib.sh"

# ---- good inputs ----
printf 'u1  [\n  1 2\n  3 4\n  5 6 ]\nu2  [\n  7 8\n  9 10 ]\n' >good.txt
copy-feats ark,t:good.txt ark:good.feats 2>/dev/null
printf 'u1 0 1 1\nu2 1 0\n' >good.ali.txt
copy-int-vector ark,t:good.ali.txt ark:good.labels 2>/dev/null
cat >good.config <<'CFG'
SpliceComponent input-dim=2 context=-1:0:1
AffineComponent input-dim=6 output-dim=2 learning-rate=0.01
SoftmaxComponent dim=2
CFG
nnet-init good.config good.model 2>/dev/null
nnet-init --srand=2 good.config good2.model 2>/dev/null
sed '1a BatchNormComponent dim=6' good.config >good_bn.config
nnet-init good_bn.config good_bn.model 2>/dev/null
compute-cmvn-stats ark:good.feats good.cmvn 2>/dev/null
nnet-get-egs --left-context=1 --right-context=1 --compress=none ark:good.feats ark:good.labels \
    ark:good.egs 2>/dev/null
mkdir lang   # decode-word-loop's: two pdfs, as good.feats has two columns
printf '<eps> 0\na 1\n' >lang/words.txt; printf 'sil 0\nA 1\n' >lang/phone_pdfs.txt; printf 'a A\n' >lang/lexicon.txt

# ---- the rows ----
ROWS=(
    "copy-feats ark:@ ark:OUT|feats|trunc token empty dir missing"
    "copy-feats ark:good.feats ark,scp:OUT,OUT.scp|none|"
    "feat-to-dim ark:@ ark,t:OUT|feats|trunc token empty dir missing"
    "feat-to-len ark:@ ark,t:OUT|feats|trunc token empty dir missing"
    "copy-int-vector ark:@ ark:OUT|labels|trunc token empty dir missing"
    "nnet-init @ OUT|config|token empty dir missing"
    "nnet-info @|model|trunc token empty dir missing"
    "nnet-copy @ OUT|model|trunc token empty dir missing"
    "nnet-forward @ ark:good.feats ark:OUT|model|trunc token empty dir missing"
    "nnet-forward good.model ark:@ ark:OUT|feats|trunc token dims nan empty dir missing"
    "nnet-get-egs --num-pdfs=2 ark:@ ark:good.labels ark:OUT|feats|trunc token nan empty dir missing"
    "nnet-get-egs --num-pdfs=2 ark:good.feats ark:@ ark:OUT|labels|trunc token label empty dir missing"
    "nnet-copy-egs ark:@ ark:OUT|egs|trunc token nan empty dir missing"
    "nnet-shuffle-egs ark:@ ark:OUT|egs|trunc token nan empty dir missing"
    "nnet-subset-egs --n=1 ark:@ ark:OUT|egs|trunc token nan empty dir missing"
    "nnet-egs-info ark:@|egs|trunc token nan empty dir missing"
    "nnet-compute-prob @ ark:good.egs|model|trunc token empty dir missing"
    "nnet-compute-prob good.model ark:@|egs|trunc token dims nan label empty dir missing"
    "nnet-train @ ark:good.egs OUT|model|trunc token empty dir missing"
    "nnet-train good.model ark:@ OUT|egs|trunc token dims nan label empty dir missing"
    "nnet-average good.model @ OUT|model|trunc token empty dir missing"
    "nnet-combine good.model @ ark:good.egs OUT|model|trunc token empty dir missing"
    "nnet-combine good.model good2.model ark:@ OUT|egs|trunc token dims nan label empty dir missing"
    "nnet-recompute-stats @ ark:good.egs OUT|bnmodel|trunc token empty dir missing"
    "nnet-recompute-stats good_bn.model ark:@ OUT|egs|trunc token dims nan label empty dir missing"
    "splice-feats --left-context=1 --right-context=1 ark:@ ark:OUT|feats|trunc token nan empty dir missing"
    "compute-cmvn-stats ark:@ ark:OUT|feats|trunc token nan empty dir missing"
    "apply-cmvn good.cmvn ark:@ ark:OUT|feats|trunc token dims nan empty dir missing"
    "decode-word-loop lang ark:@ ark:OUT|feats|trunc token nan empty dir missing"
    "nnet-get-feature-transform ark:@ OUT|feats|trunc token nan empty dir missing"
    "analyze-counts ark:@ OUT|labels|trunc token empty dir missing"
    "ali-to-post ark:@ ark:OUT|labels|trunc token empty dir missing"
    "copy-post ark:@ ark:OUT|labels|trunc token empty dir missing"
    "nnet-show-progress good.model @|model|trunc token empty dir missing"
)

# ---- bad inputs: make_bad KIND CLASS -> prints the bad path (made in bad/) ----
mkdir -p bad
good_of() { case $1 in feats) echo good.feats ;; labels) echo good.labels ;; model) echo good.model ;;
    bnmodel) echo good_bn.model ;;
    config) echo good.config ;; egs) echo good.egs ;; esac; }
make_bad() { # kind class [n]
    local kind=$1 cls=$2 n=${3:-} g p
    g=$(good_of "$kind") p=bad/$kind.$cls$n
    case $cls in
    trunc) local size; size=$(wc -c <"$g")
        case $n in 1) head -c 1 "$g" ;; 2) head -c $((size / 2)) "$g" ;; 3) head -c $((size - 1)) "$g" ;; esac >"$p" ;;
    token) case $kind in # break the first format token the reader expects
        feats) sed 's/FM /FX /' "$g" ;;
        labels) LC_ALL=C sed 's/u1 \x00B\x04/u1 \x00B\x07/' "$g" ;;
        model|bnmodel) sed 's/<Nnet>/<Nxet>/' "$g" ;;
        config) sed 's/AffineComponent/AffineComponant/' "$g" ;;
        egs) sed 's/<NnetExample>/<NnetExampl>/' "$g" ;; esac >"$p" ;;
    dims) case $kind in
        feats) printf 'u1  [\n  1 2 3\n  4 5 6 ]\n' | copy-feats ark,t:- ark:"$p" 2>/dev/null ;;
        egs) printf 'u1  [\n  1 2 3\n  4 5 6 ]\n' | copy-feats ark,t:- ark:bad/dims.feats 2>/dev/null
            printf 'u1 0 1\n' | nnet-get-egs --left-context=1 --right-context=1 --compress=none \
                ark:bad/dims.feats ark,t:- ark:"$p" 2>/dev/null ;; esac ;;
    nan) case $kind in
        feats) printf 'u1  [\n  1 2\n  nan 4\n  5 6 ]\n' | copy-feats ark,t:- ark:"$p" 2>/dev/null ;;
        egs) nnet-copy-egs ark:good.egs ark,t:- 2>/dev/null |
                awk '!done && /^ +[-0-9]/ { $1 = "nan"; done = 1; print "  " $0; next } { print }' |
                nnet-copy-egs --print-args=false ark,t:- ark:"$p" 2>/dev/null ||
            nnet-copy-egs ark:good.egs ark,t:- 2>/dev/null |
                awk '!done && /^ +[-0-9]/ { $1 = "nan"; done = 1; print "  " $0; next } { print }' >"$p" ;; esac ;;
    label) case $kind in
        labels) printf 'u1 0 5 1\nu2 1 0\n' | copy-int-vector ark,t:- ark:"$p" 2>/dev/null ;;
        egs) nnet-copy-egs ark:good.egs ark,t:- 2>/dev/null | sed '0,/<Lab1> \[ [0-9]* \]/s//<Lab1> [ 7 ]/' >"$p" ;; esac ;;
    empty) : >"$p" ;;
    dir) mkdir -p "$p" ;;
    missing) p=bad/$kind.does-not-exist ;;
    esac
    echo "$p"
}

# ---- one cell ----
# cell NAME WANT_STATUS NEEDLE KEYNEEDLE cmd...   (cmd already substituted)
cell() {
    local name=$1 want=$2 needle=$3 key=$4; shift 4
    echo "precious" >OUT.ark; cp OUT.ark OUT.ark.scp; cp OUT.ark expect
    "$@" >out 2>err; local rc=$?
    local why=""
    [ "$rc" -eq "$want" ] || why="exit $rc, expected $want"
    if grep -qE 'Sanitizer|runtime error|ASSERTION_FAILED|Segmentation' err; then why="$why; sanitizer/crash report"; fi
    local msg
    if [ "$want" -eq 2 ]; then msg=$(grep -E "^$(basename "$1"): " err)
    else msg=$(grep -E '^ERROR \(' err); fi
    local nlines; nlines=$(printf '%s' "$msg" | grep -c '^' || true)
    [ "$nlines" -eq 1 ] || why="$why; $nlines error lines"
    [ -z "$needle" ] || grep -qF -- "$needle" <<<"$msg" || why="$why; message lacks '$needle'"
    [ -z "$key" ] || grep -qF -- "$key" <<<"$msg" || why="$why; message lacks '$key'"
    cmp -s OUT.ark expect || why="$why; existing output changed"
    cmp -s OUT.ark.scp expect || why="$why; existing scp changed"
    local temps; temps=$(ls -A . bad | grep -E '^\..+\.[A-Za-z0-9]{6}$' || true)
    [ -z "$temps" ] || { why="$why; temporaries left: $temps"; (cd . && rm -f .OUT*); }
    if [ -z "$why" ]; then pass "$name"; else
        fail "$name: ${why#; }"; sed 's/^/    /' err | grep -v '^    /' | head -n 4; fi
}

subst() { # template bad-path out-path -> the command, one word per line
    local w
    for w in $1; do w=${w//@/$2}; w=${w//OUT/$3}; printf '%s\n' "$w"; done
}

run_cell() { # template kind class [n]
    local tmpl=$1 kind=$2 cls=$3 n=${4:-} bad want=1 key=""
    bad=$(make_bad "$kind" "$cls" "$n")
    # a fault inside one entry names its key -- except in example minibatches (several examples
    # at once; the message names the file and the dimension or label)
    [ "$kind" = egs ] || case $cls in nan|dims|label) key="key '" ;; esac
    [ "$kind" = egs ] && [ "$cls" = nan ] && key="key '"
    local -a cmd; mapfile -t cmd < <(subst "$tmpl" "$bad" OUT.ark)
    cell "${cmd[0]} $kind $cls$n" $want "$bad" "$key" "${cmd[@]}"
}

for row in "${ROWS[@]}"; do
    tmpl=${row%%|*} rest=${row#*|} kind=${rest%%|*} classes=${rest#*|}
    for cls in $classes; do
        if [ "$cls" = trunc ]; then for n in 1 2 3; do run_cell "$tmpl" "$kind" trunc $n; done
        else run_cell "$tmpl" "$kind" "$cls"; fi
    done
    g=$(good_of "$kind")
    prog=${tmpl%% *}
    if [[ $tmpl == *OUT* ]]; then # the output cannot be written
        mapfile -t cmd < <(subst "$tmpl" "$g" nodir/out)
        cell "$prog output unwritable ($kind row)" 1 "nodir/out" "" "${cmd[@]}"
    fi
    mapfile -t cmd < <(subst "$tmpl" "$g" OUT.ark)
    cell "$prog unknown option ($kind row)" 2 "--no-such-option" "" "${cmd[0]}" --no-such-option=1 "${cmd[@]:1}"
    cell "$prog bad option value ($kind row)" 2 "--verbose" "" "${cmd[0]}" --verbose=x "${cmd[@]:1}"
done

# An out-of-range value of the computing programs' shared options (matrix_cli, train_cli) is an
# error naming the option, not ignored.
for cmd in "nnet-forward good.model ark:good.feats ark:OUT.ark" "nnet-compute-prob good.model ark:good.egs" \
           "nnet-train good.model ark:good.egs OUT.ark" "nnet-combine good.model good2.model ark:good.egs OUT.ark"; do
    read -ra c <<<"$cmd"
    cell "${c[0]} --num-threads=0" 1 "--num-threads" "" "${c[0]}" --num-threads=0 "${c[@]:1}"
done

# Issue 29: an option value past its limit is one ERROR naming the option and the limit, exit 1 --
# not an abort from an allocation of minibatch x dim (or of the buffer) before any data is read.
big=2147483647
LIMITS=(
    "nnet-train --minibatch-size=$big good.model ark:good.egs OUT.ark|--minibatch-size=$big: must be from 1 to 1048576"
    "nnet-compute-prob --minibatch-size=$big good.model ark:good.egs|--minibatch-size=$big: must be from 1 to 1048576"
    "nnet-combine --minibatch-size=$big good.model good2.model ark:good.egs OUT.ark|--minibatch-size=$big: must be from 1 to 1048576"
    "nnet-recompute-stats --minibatch-size=$big good_bn.model ark:good.egs OUT.ark|--minibatch-size=$big: must be from 1 to 1048576"
    "nnet-shuffle-egs --buffer-size=$big ark:good.egs ark:OUT.ark|--buffer-size=$big: must be from 0 to 1048576"
    "nnet-subset-egs --n=$big ark:good.egs ark:OUT.ark|--n=$big: must be from 1 to 67108864"
    "nnet-subset-egs --n=0 ark:good.egs ark:OUT.ark|--n=0: must be from 1"
    "nnet-get-egs --num-frames=100000000 ark:good.feats ark:good.labels ark:OUT.ark|--num-frames=100000000: must be from 1 to 10000"
    "nnet-get-egs --left-context=100000000 ark:good.feats ark:good.labels ark:OUT.ark|--left-context=100000000: must be from 0 to 1000"
    "analyze-counts --counts-dim=$big ark:good.labels OUT.ark|--counts-dim=$big: must be from 0 to 16777216"
    "nnet-copy-egs --keep-proportion=0 ark:good.egs ark:OUT.ark|wrote no examples from 'ark:good.egs'"
)
for row in "${LIMITS[@]}"; do
    read -ra c <<<"${row%%|*}"
    cell "${c[0]} ${c[1]}" 1 "${row#*|}" "" "${c[@]}"
done
