#!/usr/bin/env bash
# Kaldi Posterior archives (binary bytes written here by hand, and text) as nnet-get-egs targets,
# next to the int32 labels it took before; ali-to-post; soft targets carried into the examples.
. "$(dirname "$0")/lib.sh"
{
    echo "utt1  ["; for t in 0 1 2 3; do echo "  $t $((10 + t))"; done; echo " ]"
    echo "utt2  ["; for t in 0 1 2; do echo "  $t $((20 + t))"; done; echo " ]"
} > feats.txt
copy-feats ark,t:feats.txt ark:feats.ark 2>/dev/null
printf 'utt1 1 2 3 4\nutt2 5 6 7\n' > ali.txt
python3 - <<'PY'
import struct
i32 = lambda v: b'\x04' + struct.pack('<i', v)
f32 = lambda v: b'\x04' + struct.pack('<f', v)
def post(frames):  # Kaldi WritePosterior, binary
    b = b'\0B' + i32(len(frames))
    for fr in frames:
        b += i32(len(fr)) + b''.join(i32(p) + f32(w) for p, w in fr)
    return b
open('hard.post', 'wb').write(b'utt1 ' + post([[(1, 1)], [(2, 1)], [(3, 1)], [(4, 1)]]) +
                              b'utt2 ' + post([[(5, 1)], [(6, 1)], [(7, 1)]]))
open('soft.post', 'wb').write(b'utt1 ' + post([[(1, 1)], [(2, 0.25), (3, 0.75)], [], [(4, 1)]]) +
                              b'utt2 ' + post([[(5, 1)], [(6, 1)], [(7, 0.5)]]))
open('trunc.post', 'wb').write((b'utt1 ' + post([[(1, 1)], [(2, 1)], [(3, 1)], [(4, 1)]]))[:-3])
def ivec(v):  # BasicVectorHolder<int32>, binary
    return b'\0B' + i32(len(v)) + b''.join(i32(x) for x in v)
open('ali.ark', 'wb').write(b'utt1 ' + ivec([1, 2, 3, 4]) + b'utt2 ' + ivec([5, 6, 7]))
open('zeros.ark', 'wb').write(b'utt1 ' + ivec([0, 0, 0, 0]) + b'utt2 ' + ivec([0, 1, 0]))
PY

expect_status "ali-to-post" 0 ali-to-post ark,t:ali.txt ark:ali.post
expect_same "ali-to-post writes Kaldi's binary Posterior" hard.post ali.post
expect_status "ali-to-post text" 0 ali-to-post ark,t:ali.txt ark,t:ali.post.txt
expect_eq "text Posterior" "$(head -n 1 ali.post.txt)" "utt1 [ 1 1 ] [ 2 1 ] [ 3 1 ] [ 4 1 ] "

g() { nnet-get-egs --compress=none --left-context=1 --right-context=1 --num-frames=2 ark:feats.ark "$@"; }
expect_status "egs from int labels (text)" 0 g ark,t:ali.txt ark:egs.int.ark
expect_status "egs from int labels (binary)" 0 g ark:ali.ark ark:egs.intb.ark
expect_same "binary int labels recognised" egs.int.ark egs.intb.ark
expect_status "egs from a binary Posterior" 0 g ark:hard.post ark:egs.post.ark
expect_same "weight-1 posteriors give the same examples as labels" egs.int.ark egs.post.ark
expect_status "egs from a text Posterior through a pipe" 0 g "ark:ali-to-post ark,t:ali.txt ark,t:- |" \
    ark:egs.postt.ark
expect_same "text Posterior through a pipe" egs.int.ark egs.postt.ark
expect_status "all-zero int labels stay labels" 0 g ark:zeros.ark ark,t:egs.zeros.txt
expect_eq "label 0 on every frame" "$(grep -o '^utt1-0 <NnetExample> <Lab1> \[ [0-9 ]* \]' egs.zeros.txt)" \
    "utt1-0 <NnetExample> <Lab1> [ 0 0 ]"

expect_status "soft targets" 0 g ark:soft.post ark,t:egs.soft.txt
expect_eq "two weighted pairs on one frame" "$(grep -o '^utt1-0 <NnetExample> <Lab2> [0-9. ]*<' egs.soft.txt)" \
    "utt1-0 <NnetExample> <Lab2> 2 1 1 1 2 2 0.25 3 0.75 <"
expect_eq "a frame with no pairs" "$(grep -o '^utt1-2 <NnetExample> <Lab2> [0-9. ]*<' egs.soft.txt)" \
    "utt1-2 <NnetExample> <Lab2> 2 0 1 4 1 <"
expect_eq "a weight below one" "$(grep -o '^utt2-2 <NnetExample> <Lab2> [0-9. ]*<' egs.soft.txt)" \
    "utt2-2 <NnetExample> <Lab2> 2 1 7 0.5 0 <"
printf 'utt1 [ 1 1 ] [ 2 0.25 3 0.75 ] [ ] [ 4 1 ]\nutt2 [ 5 1 ] [ 6 1 ] [ 7 0.5 ]\n' > soft.txt
g ark,t:soft.txt ark:egs.softt.ark 2>/dev/null
g ark:soft.post ark:egs.softb.ark 2>/dev/null
expect_same "text and binary Posteriors agree" egs.softb.ark egs.softt.ark
nnet-egs-info ark:egs.softb.ark > info 2>/dev/null
expect_eq "egs-info counts the soft labels" "$(grep -E '^num-labels' info)" "num-labels 7"

expect_status "truncated Posterior" 1 g ark:trunc.post ark:x.ark
expect_err "names the key" "key 'utt1'.*truncated"
printf 'utt1 [ 1 1 ] [ 2 0.5\n' > bad.txt
expect_status "unclosed frame in a text Posterior" 1 g ark,t:bad.txt ark:x.ark
expect_err "says which frame" "frame 1 has no closing"
