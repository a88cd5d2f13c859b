#!/usr/bin/env bash
# Example archives: nnet-get-egs (context at utterance edges, skips), nnet-shuffle-egs,
# nnet-copy-egs, nnet-subset-egs (determinism, seeds, exactly-once), nnet-egs-info, compression,
# truncated archives and usage errors.
. "$(dirname "$0")/lib.sh"

# keys of an example archive, in order
keys() { nnet-copy-egs --print-args=false "$1" ark,t:- 2>/dev/null | grep -Eo '^[^ ]+ <NnetExample>' | cut -d' ' -f1; }

# Features: utt1 4 frames, utt2 3 frames (row t of uttN is "t N*10+t"); utt3 has the wrong
# number of labels and utt4 none. Written as text, converted with copy-feats.
{
    echo "utt1  ["; for t in 0 1 2 3; do echo "  $t $((10 + t))"; done; echo " ]"
    echo "utt2  ["; for t in 0 1 2; do echo "  $t $((20 + t))"; done; echo " ]"
    echo "utt3  ["; for t in 0 1; do echo "  $t $((30 + t))"; done; echo " ]"
    echo "utt4  [ 1 2 ]"
} >feats.txt
printf 'utt1 1 2 3 4\nutt2 5 6 7\nutt3 1 2 3\n' >labels.txt
expect_status "copy-feats from text" 0 copy-feats ark,t:feats.txt ark:feats.ark

expect_status "get-egs with context" 0 nnet-get-egs --left-context=2 --right-context=1 \
    --compress=none ark:feats.ark ark,t:labels.txt ark:egs.ark
expect_err "final log line counts skips" \
    'successfully processed 2 feature files, wrote 7 examples, 2 files had errors\.'
expect_err "label-count mismatch warned" 'WARNING .*utt3 has 3 labels for 2 frames'
expect_err "missing labels warned" 'WARNING .*no labels for utterance utt4'
expect_eq "keys are utt-frame" "$(keys ark:egs.ark | tr '\n' ' ')" \
    "utt1-0 utt1-1 utt1-2 utt1-3 utt2-0 utt2-1 utt2-2 "

# Edge repetition, by value: utt1-0 holds frames 0 0 0 1 (left 2, right 1), utt2-2 frames 0 1 2 2.
nnet-copy-egs ark:egs.ark ark,t:egs.txt 2>/dev/null
rows_of() { awk -v k="$1" '$1 == k {on = 1; next} on && /^ +-?[0-9]/ {print $1, $2; if (/\]/) exit}' egs.txt | tr '\n' ' '; }
expect_eq "left edge repeats the first frame" "$(rows_of utt1-0)" "0 10 0 10 0 10 1 11 "
expect_eq "right edge repeats the last frame" "$(rows_of utt2-2)" "0 20 1 21 2 22 2 22 "
expect_eq "labels in <Lab1>" "$(grep -o '^utt2-1 <NnetExample> <Lab1> \[ [0-9]* \]' egs.txt)" \
    "utt2-1 <NnetExample> <Lab1> [ 6 ]"

expect_status "egs-info" 0 nnet-egs-info ark:egs.ark
expect_eq "info: count" "$(grep '^num-examples' out)" "num-examples 7"
expect_eq "info: dim" "$(grep '^input-dim' out)" "input-dim 2"
expect_eq "info: context" "$(grep -E '^(left|right)-context' out | tr '\n' ' ')" \
    "left-context 2 right-context 1 "
expect_eq "info: histogram" "$(grep '^label-counts' out)" "label-counts [ 0 1 1 1 1 1 1 1 ]"

expect_status "nothing usable -> exit 1" 1 nnet-get-egs ark:feats.ark 'ark:echo utt9 1|' ark:none.ark
expect_err "all skipped counted" 'wrote 0 examples, 4 files had errors'

# A larger archive for the random tools: 12 utterances of 15 frames, 8-bit inputs.
awk 'BEGIN { for (u = 0; u < 12; u++) { printf "u%02d  [\n", u;
      for (t = 0; t < 15; t++) printf "  %d %d %.3f\n", t, u, (u * 15 + t) / 7.0; print " ]" } }' \
    >big.txt
awk 'BEGIN { for (u = 0; u < 12; u++) { printf "u%02d", u; for (t = 0; t < 15; t++)
      printf " %d", (u + t) % 5; print "" } }' >big-labels.txt
copy-feats ark,t:big.txt ark:big.ark 2>/dev/null
expect_status "get-egs 8bit" 0 nnet-get-egs --left-context=1 --right-context=1 ark:big.ark \
    ark,t:big-labels.txt ark:all.ark
keys ark:all.ark | sort >all.keys
expect_eq "180 examples" "$(wc -l <all.keys)" 180
nnet-egs-info ark:all.ark >info.txt 2>/dev/null
expect_eq "8-bit by default (3 rows: PQ, per-dimension ranges)" "$(grep '^storage' info.txt)" "storage pq8=180"

# shuffle: full and buffered, each deterministic, seed-dependent, a permutation of the input
for mode in 0 7; do
    nnet-shuffle-egs --buffer-size=$mode --srand=1 ark:all.ark ark:s1.ark 2>/dev/null
    nnet-shuffle-egs --buffer-size=$mode --srand=1 ark:all.ark ark:s1b.ark 2>err
    nnet-shuffle-egs --buffer-size=$mode --srand=2 ark:all.ark ark:s2.ark 2>/dev/null
    expect_same "shuffle (buffer $mode) is deterministic" s1.ark s1b.ark
    if cmp -s s1.ark s2.ark; then fail "shuffle (buffer $mode) changes with the seed"
    else pass "shuffle (buffer $mode) changes with the seed"; fi
    if keys ark:s1.ark | cmp -s - <(keys ark:all.ark); then fail "shuffle (buffer $mode) reorders"
    else pass "shuffle (buffer $mode) reorders"; fi
    expect_eq "shuffle (buffer $mode) keeps every example once" \
        "$(keys ark:s1.ark | sort | cmp - all.keys && echo same)" same
    expect_err "shuffle log" 'Shuffled order of 180 neural-network training examples'
done
# stored inputs are copied, not re-encoded: sorted back, the bytes match
nnet-copy-egs ark:s1.ark ark,t:- 2>/dev/null | grep -c '<NnetExample>' >n.txt
expect_eq "shuffled archive readable" "$(cat n.txt)" 180

# copy: round-robin split, random split, proportions
expect_status "round-robin split" 0 nnet-copy-egs ark:all.ark ark:a.ark ark:b.ark ark:c.ark
expect_eq "last log line" "$(tail -n 1 err | awk '{print $NF}')" 180
expect_err "copy log line" 'Read 180 neural-network training examples, wrote 180$'
expect_eq "round robin: a gets 0, 3, 6, ..." "$(keys ark:a.ark | head -n 3 | tr '\n' ' ')" \
    "$(keys ark:all.ark | sed -n '1p;4p;7p' | tr '\n' ' ')"
expect_eq "split keeps every example once" \
    "$(cat <(keys ark:a.ark) <(keys ark:b.ark) <(keys ark:c.ark) | sort | cmp - all.keys && echo same)" same
nnet-copy-egs --random --srand=4 ark:all.ark ark:r1.ark ark:r2.ark 2>/dev/null
nnet-copy-egs --random --srand=4 ark:all.ark ark:q1.ark ark:q2.ark 2>/dev/null
nnet-copy-egs --random --srand=5 ark:all.ark ark:p1.ark ark:p2.ark 2>/dev/null
expect_same "random split is deterministic" r1.ark q1.ark
if cmp -s r1.ark p1.ark; then fail "random split changes with the seed"
else pass "random split changes with the seed"; fi
expect_eq "random split keeps every example once" \
    "$(cat <(keys ark:r1.ark) <(keys ark:r2.ark) | sort | cmp - all.keys && echo same)" same
expect_status "keep-proportion 0.5" 0 nnet-copy-egs --keep-proportion=0.5 --srand=1 ark:all.ark ark:h.ark
n=$(tail -n 1 err | awk '{print $NF}')
if [ "$n" -gt 60 ] && [ "$n" -lt 120 ]; then pass "about half kept ($n)"; else fail "kept $n of 180"; fi
expect_eq "kept count matches archive" "$(keys ark:h.ark | wc -l)" "$n"
expect_status "keep-proportion 2" 0 nnet-copy-egs --keep-proportion=2 ark:all.ark ark:d.ark
expect_err "duplicated" 'wrote 360$'
expect_status "keep-proportion 0 writes nothing" 1 nnet-copy-egs --keep-proportion=0 ark:all.ark ark:z.ark

# subset
nnet-subset-egs --n=20 --srand=1 ark:all.ark ark:sub1.ark 2>err
expect_err "subset log" 'Selected a subset of 20 out of 180 neural-network training examples'
nnet-subset-egs --n=20 --srand=1 ark:all.ark ark:sub1b.ark 2>/dev/null
nnet-subset-egs --n=20 --srand=2 ark:all.ark ark:sub2.ark 2>/dev/null
expect_same "subset is deterministic" sub1.ark sub1b.ark
if cmp -s sub1.ark sub2.ark; then fail "subset changes with the seed"
else pass "subset changes with the seed"; fi
expect_eq "subset: 20 distinct input examples" \
    "$(keys ark:sub1.ark | sort -u | comm -23 - all.keys | wc -l) $(keys ark:sub1.ark | sort -u | wc -l)" "0 20"
expect_status "subset larger than input keeps all" 0 nnet-subset-egs --n=1000 ark:all.ark ark:suball.ark
expect_eq "all kept" "$(keys ark:suball.ark | sort | cmp - all.keys && echo same)" same

# compression modes: chosen on get-egs and copy-egs, read transparently
for c in none 16bit zlib; do
    nnet-copy-egs --compress=$c ark:egs.ark ark:egs-$c.ark 2>/dev/null
done
nnet-get-egs --left-context=2 --right-context=1 --compress=8bit ark:feats.ark ark,t:labels.txt \
    ark:egs-8bit.ark 2>/dev/null
for c in 8bit 16bit zlib; do
    want=$([ $c = 8bit ] && echo pq8 || { [ $c = 16bit ] && echo pq16 || echo zlib; })
    expect_eq "stored as $c" "$(nnet-egs-info ark:egs-$c.ark 2>/dev/null | grep '^storage')" \
        "storage $want=7"
done
nnet-copy-egs ark:egs-zlib.ark ark,t:zlib.txt 2>/dev/null
expect_same "zlib is lossless" egs.txt zlib.txt
expect_status "reading zlib through ark,bg" 0 nnet-shuffle-egs 'ark,bg:egs-zlib.ark' ark:zs.ark
expect_status "copy with keep re-writes bytes unchanged" 0 nnet-copy-egs ark:egs-8bit.ark ark:e8.ark
expect_same "no re-quantization on copy" egs-8bit.ark e8.ark
expect_status "bad --compress" 2 nnet-copy-egs --compress=4bit ark:egs.ark ark:x.ark
expect_err "names the choices" 'none, 8bit, 16bit, zlib or kaldi'

# Multi-frame examples (Kaldi get_egs2's layout): 4 labelled frames sharing +-1 frame of context;
# 15 frames cut into 0-3, 4-7, 8-11, 12-14 (+ one unlabelled padding frame).
expect_status "get-egs --num-frames=4" 0 nnet-get-egs --num-frames=4 --left-context=1 \
    --right-context=1 ark:big.ark ark,t:big-labels.txt ark:mf.ark
nnet-egs-info ark:mf.ark >mf-info.txt 2>/dev/null
expect_eq "48 examples of 4 frames, PQ" "$(grep -E '^(num-examples|frames-per-example|storage)' mf-info.txt | tr '\n' ' ')" \
    "num-examples 48 frames-per-example 4 storage pq8=48 "
expect_eq "one label per real frame" "$(grep '^num-labels' mf-info.txt)" "num-labels 180"
nnet-get-egs --num-frames=4 --left-context=1 --right-context=1 --compress=kaldi ark:big.ark \
    ark,t:big-labels.txt ark:mf-kaldi.ark 2>/dev/null
expect_eq "--compress=kaldi: Kaldi's CM2 (6 rows)" "$(nnet-egs-info ark:mf-kaldi.ark 2>/dev/null | grep '^storage')" \
    "storage cm2=48"
# --frame: frame 2 of u03-4 is frame 6 of u03, label (3 + 6) % 5 = 4, its context rows 5 6 7
expect_status "copy-egs --frame=2" 0 nnet-copy-egs --frame=2 ark:mf.ark ark,t:f2.txt
expect_err "every example has frame 2" 'Read 48 neural-network training examples, wrote 48$'
expect_eq "frame 2: its label" "$(grep -o '^u03-4 <NnetExample> <Lab1> \[ [0-9]* \]' f2.txt)" \
    "u03-4 <NnetExample> <Lab1> [ 4 ]"
lc=$(awk '$1 == "u03-4" { on = 1 } on && /<LeftContext>/ { print $2; exit }' f2.txt)
expect_eq "frame 2: left context 1 + 2" "$lc" 3
expect_status "copy-egs --frame=3 skips padding" 0 nnet-copy-egs --frame=3 ark:mf.ark ark:f3.ark
expect_err "padding frames skipped and counted" 'skipped 12 examples whose frame 3 is absent or padding'
nnet-copy-egs --frame=random --srand=7 ark:mf.ark ark:fr1.ark 2>/dev/null
nnet-copy-egs --frame=random --srand=7 ark:mf.ark ark:fr2.ark 2>/dev/null
expect_same "--frame=random is deterministic" fr1.ark fr2.ark
expect_eq "--frame=random: one frame each" \
    "$(nnet-egs-info ark:fr1.ark 2>/dev/null | grep '^frames-per-example')" "frames-per-example 1"
expect_status "bad --frame" 1 nnet-copy-egs --frame=x ark:mf.ark ark:fx.ark
expect_err "names the option" '--frame=x: expected a frame index'

# truncated archive and usage
head -c $(($(wc -c <all.ark) - 7)) all.ark >trunc.ark
expect_status "truncated archive -> exit 1" 1 nnet-shuffle-egs ark:trunc.ark ark:t.ark
expect_err "error names the file" "trunc\.ark"
expect_status "truncated archive in copy" 1 nnet-copy-egs ark:trunc.ark ark:t2.ark
expect_err "copy error names the file" "trunc\.ark"
expect_status "egs-info on truncated" 1 nnet-egs-info ark:trunc.ark
expect_status "copy-egs usage" 2 nnet-copy-egs ark:egs.ark
expect_status "shuffle-egs usage" 2 nnet-shuffle-egs ark:egs.ark
expect_status "get-egs usage" 2 nnet-get-egs ark:feats.ark
expect_status "empty input -> exit 1" 1 nnet-shuffle-egs ark:/dev/null ark:e.ark
