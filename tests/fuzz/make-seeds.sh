#!/usr/bin/env bash
# Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/ from the programs
# in bin/ (make all first). The seeds are committed; run this again when a format changes.
# fuzz-egs keeps its hand-made seeds (one example per storage) and gets PQ archives (per-dimension
# ranges, egs.h) from nnet-get-egs below.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
B=$top/bin C=$top/tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
seed() { mkdir -p "$C/$1"; cat >"$C/$1/$2"; } # target name < bytes
sel() { printf "\\$(printf '%03o' "$1")"; }   # one selector byte

printf 'u1  [\n  0.5 -1 2\n  3 4.25 5 ]\nu2  [\n  1 2 3 ]\nu3  [ ]\n' >m.txt
$B/copy-feats --print-args=false ark,t:m.txt ark:m.ark 2>/dev/null
$B/copy-feats --print-args=false --compress=true ark,t:m.txt ark:cm.ark 2>/dev/null
$B/copy-feats --print-args=false --compress=true --compression-method=3 ark,t:m.txt ark:cm2.ark 2>/dev/null
$B/copy-feats --print-args=false --compress=true --compression-method=5 ark,t:m.txt ark:cm3.ark 2>/dev/null
printf 'u1 1 2 3\nu2 7\nu3\n' >iv.txt
$B/copy-int-vector --print-args=false ark,t:iv.txt ark:iv.ark 2>/dev/null
$B/feat-to-len --print-args=false ark:m.ark ark:len.ark 2>/dev/null

# fuzz-archive: selector % 5 picks matrix, int32 vector, vector, compressed matrix, int32;
# (selector / 5) % 2 reads ahead (ark,bg)
{ sel 0; cat m.ark; } | seed fuzz-archive matrix-binary
{ sel 5; cat m.txt; } | seed fuzz-archive matrix-text-bg
{ sel 1; cat iv.ark; } | seed fuzz-archive int32-vector-binary
{ sel 1; cat iv.txt; } | seed fuzz-archive int32-vector-text
{ sel 2; printf 'v1  [ 1 2 3 ]\nv2  [ ]\n'; } | seed fuzz-archive vector-text
{ sel 3; cat cm.ark; } | seed fuzz-archive cm-binary
{ sel 8; cat cm2.ark; } | seed fuzz-archive cm2-binary-bg
{ sel 3; cat cm3.ark; } | seed fuzz-archive cm3-binary
{ sel 4; cat len.ark; } | seed fuzz-archive int32-binary

# fuzz-egs: PQ archives (a range table inline in the first example, referred to by id after)
printf 'u1  [\n  0.001 100 -3\n  0.002 -50 7 ]\nu2  [\n  0.0015 20 1 ]\n' >pq.txt
printf 'u1 0 1\nu2 2\n' >pq-lab.txt
$B/nnet-get-egs --print-args=false --compress=8bit ark,t:pq.txt ark,t:pq-lab.txt ark:pq8.ark 2>/dev/null
seed fuzz-egs pq8-shared <pq8.ark
$B/nnet-get-egs --print-args=false --compress=16bit --left-context=1 --right-context=1 \
    ark,t:pq.txt ark,t:pq-lab.txt ark:pq16.ark 2>/dev/null
seed fuzz-egs pq16-context <pq16.ark
# multi-frame examples: 8-bit PQ with the codes coded (version 2), then one frame of them
$B/nnet-get-egs --print-args=false --num-frames=2 --left-context=1 --right-context=1 \
    ark,t:pq.txt ark,t:pq-lab.txt ark:pq8-frames.ark 2>/dev/null
seed fuzz-egs pq8-coded-frames <pq8-frames.ark

# fuzz-compressed-matrix: one matrix object (FM, CM, CM2, CM3, text)
printf ' [\n  0.5 -1 2\n  3 4.25 5 ]\n' >one.txt
$B/copy-feats --print-args=false one.txt fm.bin 2>/dev/null
seed fuzz-compressed-matrix fm <fm.bin
for m in 2 3 5 6; do
    $B/copy-feats --print-args=false --compress=true --compression-method=$m one.txt c$m.bin 2>/dev/null
    seed fuzz-compressed-matrix cm-method-$m <c$m.bin
done
seed fuzz-compressed-matrix text <one.txt

# fuzz-nnet-read: a model with every kind of component, binary and text
cat >nnet.config <<'CFG'
SpliceComponent input-dim=3 context=-1:0:1
FixedAffineComponent input-dim=9 output-dim=6
AffineComponentPreconditionedOnline input-dim=6 output-dim=8 learning-rate=0.02 rank-in=2
PnormComponent input-dim=8 output-dim=4 p=2
NormalizeComponent dim=4
AffineComponent input-dim=4 output-dim=3 learning-rate=0.01
SoftmaxComponent dim=3
CFG
$B/nnet-init --print-args=false --srand=1 nnet.config 0.mdl 2>/dev/null
$B/nnet-copy --print-args=false --binary=false 0.mdl 0.txt 2>/dev/null
seed fuzz-nnet-read model-binary <0.mdl
seed fuzz-nnet-read model-text <0.txt
# ... and a block-momentum state (update/update.h) beside it
$B/nnet-average --print-args=false --bmuf --previous-model=0.mdl --block-state-out=1.bmuf \
    0.mdl 0.mdl 1.mdl 2>/dev/null
seed fuzz-nnet-read block-momentum <1.bmuf

# ... and a CNN: Convolution (natural gradient and plain), MaxPooling, BatchNorm
cat >cnn.config <<'CFG'
ConvolutionComponent input-height=4 input-width=3 input-channels=2 num-filters=3 filter-height=3 filter-width=2 pad-height=1 learning-rate=0.01
RectifiedLinearComponent
MaxPoolingComponent input-height=4 input-width=2 input-channels=3 pool-height=2 pool-width=2 stride-height=1
ConvolutionComponent input-height=3 input-width=1 input-channels=3 num-filters=2 filter-height=2 filter-width=1 use-natural-gradient=false
BatchNormComponent block-dim=2 momentum=0.5
AffineComponent output-dim=3
SoftmaxComponent
CFG
model_seeds() { # STEM: STEM.config as a model, binary and text, seeds model-STEM-{binary,text}
    $B/nnet-init --print-args=false --srand=1 $1.config $1.mdl 2>/dev/null
    $B/nnet-copy --print-args=false --binary=false $1.mdl $1.txt 2>/dev/null
    seed fuzz-nnet-read model-$1-binary <$1.mdl
    seed fuzz-nnet-read model-$1-text <$1.txt
}
model_seeds cnn

# ... and a graph (docs/COMPONENTS.md "Residual connections"): <Name> and <Input> tokens with
# Sum, Append and Offset, contexts of different branches cropped
cat >graph.config <<'CFG'
AffineComponent input-dim=6 output-dim=4 name=a input=Append(Offset(input, -1), input)
TanhComponent name=t
SpliceComponent context=-1:0:1
AffineComponent output-dim=4 name=b
SigmoidComponent input=Sum(b, t, Offset(a, 1)) name=u
AffineComponent output-dim=3 input=Append(u, Offset(t, -1))
SoftmaxComponent
CFG
model_seeds graph

# fuzz-config: network configs (corpus/fuzz-config/splice-chain-oom, kept beside these, is an
# input the fuzzer found: a chain of splices whose activations took gigabytes in the forward)
seed fuzz-config full <nnet.config
seed fuzz-config cnn <cnn.config
seed fuzz-config graph <graph.config
printf '# a comment\nAffineComponent input-dim=2 output-dim=2\nSoftmaxComponent\n' |
    seed fuzz-config short

# fuzz-scp: lines over the target's own a.ark (k0 3x2 at byte 3, k1 4x3 at 45, k2 5x4 at 111)
printf 'k0 a.ark:3\nk1 a.ark:45\nk2 a.ark:111\n' | seed fuzz-scp offsets
printf 'k1 a.ark:45[1:2]\nk2 a.ark:111[0:1,1:2]\nk0 a.ark:3[:,1:1]\n' | seed fuzz-scp ranges
printf 'k0 a.ark\n' | seed fuzz-scp whole-archive

# fuzz-text: selector % 8 picks matrix, vector, int32 vector, primitives, or a text archive of
# matrices, int32 vectors, int32s, vectors
{ sel 0; cat one.txt; } | seed fuzz-text matrix
{ sel 1; printf ' [ 1 -2.5 3e2 ]\n'; } | seed fuzz-text vector
{ sel 2; printf '[ 1 2 3 ]\n'; } | seed fuzz-text int32-vector
{ sel 3; printf '<Tok> 3 1.5 2.25 T <Next> -7 1e-3 0.5 F '; } | seed fuzz-text primitives
{ sel 4; cat m.txt; } | seed fuzz-text matrix-archive
{ sel 5; cat iv.txt; } | seed fuzz-text int32-vector-archive
{ sel 6; printf 'u1 13\nu2 7\n'; } | seed fuzz-text int32-archive
{ sel 7; printf 'v1  [ 1 2 3 ]\nv2  [ ]\n'; } | seed fuzz-text vector-archive
echo "seeds written to $C"
