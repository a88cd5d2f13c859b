#!/usr/bin/env bash
# PQ example storage (issue 12 item 4): one-row examples under --compress=8bit/16bit keep a range
# per input dimension, shared by the examples, so that 20 features on scales 1e-3 .. 1e4 (the
# issue's case: 8 classes) all keep their information with no fallback; the per-dimension error is
# checked here independently of the programs' own measure. Then the archive through the tools:
# copy (bytes unchanged), split, shuffle, concatenation, ark,bg, the minibatch reader
# (nnet-compute-prob), and bad input: truncation, an scp missing the entry that holds a table.
. "$(dirname "$0")/lib.sh"

# 250 utterances of 10 frames, 20 dims: class c = utterance % 8, dimension j = 10^(-3 + 7j/19) x
# (centre of c in dim j + N(0, 1)); deterministic (awk's srand)
awk 'BEGIN { srand(3); pi = 3.14159265358979
    for (c = 0; c < 8; c++) for (j = 0; j < 20; j++) centre[c, j] = 3 * (rand() - 0.5)
    for (u = 0; u < 250; u++) { c = u % 8; printf "utt%03d  [\n", u
        for (t = 0; t < 10; t++) { printf " "
            for (j = 0; j < 20; j++) {
                g = sqrt(-2 * log(1 - rand())) * cos(2 * pi * rand())
                printf " %.7g", 10 ^ (-3 + 7 * j / 19) * (centre[c, j] + g) }
            print (t == 9 ? " ]" : "") } } }' >feats.txt
awk '/\[/ { u = $1; c = substr(u, 4) % 8; printf "%s", u; for (t = 0; t < 10; t++) printf " %d", c
    print "" }' feats.txt >labels.txt
copy-feats ark,t:feats.txt ark:feats.ark 2>/dev/null

expect_status "get-egs --compress=none" 0 nnet-get-egs --compress=none ark:feats.ark ark,t:labels.txt ark:none.ark
expect_status "get-egs --compress=8bit" 0 nnet-get-egs --compress=8bit ark:feats.ark ark,t:labels.txt ark:pq8.ark
if grep -q 'would destroy' err; then fail "8bit needs no fallback"; else pass "8bit needs no fallback"; fi
expect_err "logs the PQ tables" 'per-dimension ranges \(PQ\): [0-9]+ range table'
worst=$(sed -n "s/.*worst RMS error \([^ ]*\) of a dimension.*/\1/p" err)
if awk -v w="$worst" 'BEGIN { exit !(w != "" && w < 0.05) }'; then pass "its own measure: worst $worst < 0.05"
else fail "its own measure: worst '$worst'"; fi
expect_eq "stored as pq8" "$(nnet-egs-info ark:pq8.ark 2>/dev/null | grep '^storage')" "storage pq8=2500"
expect_status "get-egs --compress=16bit" 0 nnet-get-egs --compress=16bit ark:feats.ark ark,t:labels.txt ark:pq16.ark
expect_eq "stored as pq16" "$(nnet-egs-info ark:pq16.ark 2>/dev/null | grep '^storage')" "storage pq16=2500"
size_none=$(stat -c %s none.ark) size8=$(stat -c %s pq8.ark)
if [ "$size8" -lt $((size_none * 85 / 100)) ]; then pass "8bit archive smaller ($size8 vs $size_none bytes)"
else fail "8bit archive $size8 bytes, float $size_none"; fi

# every dimension within the bound, measured here: RMS(decoded - float) / s.d. per dimension
values() { nnet-copy-egs "$1" ark,t:- 2>/dev/null | awk '/<InputFrames>/ { getline; gsub(/[\[\]]/, ""); print }'; }
values ark:none.ark >v-none.txt
for c in 8 16; do
    values ark:pq$c.ark >v-$c.txt
    rel=$(paste -d' ' v-none.txt v-$c.txt | awk '{ for (j = 1; j <= 20; j++) { x = $j; y = $(j + 20)
            s[j] += x; q[j] += x * x; e[j] += (y - x) ^ 2 } n++ }
        END { w = 0; for (j = 1; j <= 20; j++) { m = s[j] / n; r = sqrt(e[j] / n / (q[j] / n - m * m))
            if (r > w) w = r } printf "%.3g", w }')
    bound=$([ $c = 8 ] && echo 0.05 || echo 0.001)
    if awk -v r="$rel" -v b="$bound" 'BEGIN { exit !(r < b) }'; then
        pass "${c}bit: every dimension's RMS error < $bound of its s.d. (worst $rel)"
    else fail "${c}bit: worst relative error $rel (bound $bound)"; fi
done
# the smallest dimension (scale 1e-3) keeps distinct values
if [ "$(awk '{print $1}' v-8.txt | sort -u | wc -l)" -gt 100 ]; then pass "dimension 0 keeps its values"
else fail "dimension 0 collapsed"; fi

# through the tools
expect_status "copy (keep)" 0 nnet-copy-egs ark:pq8.ark ark:copy.ark
expect_same "copy rewrites the bytes unchanged" pq8.ark copy.ark
expect_status "copy float -> 8bit" 0 nnet-copy-egs --compress=8bit ark:none.ark ark:c8.ark
if grep -q WARNING err; then fail "copy --compress=8bit warns nothing"; else pass "copy --compress=8bit warns nothing"; fi
expect_same "copy --compress=8bit stores as get-egs does" pq8.ark c8.ark
expect_status "split in three" 0 nnet-copy-egs ark:pq8.ark ark:s1.ark ark:s2.ark ark:s3.ark
expect_status "random split" 0 nnet-copy-egs --random=true --srand=2 ark:pq8.ark ark:r1.ark ark:r2.ark
expect_status "shuffle" 0 nnet-shuffle-egs --srand=1 ark:pq8.ark ark:sh.ark
expect_status "shuffle the concatenated splits (ark,bg)" 0 nnet-shuffle-egs --srand=3 \
    "ark,bg:cat s1.ark s2.ark s3.ark r1.ark r2.ark |" ark:all.ark
expect_err "read all of them" 'Shuffled order of 5000 '
values ark:sh.ark | sort >v-sh.txt
expect_eq "shuffled: the same decoded values" "$(sort v-8.txt | cmp - v-sh.txt && echo same)" same
expect_status "subset" 0 nnet-subset-egs --n=300 ark:all.ark ark:sub.ark
expect_eq "subset readable" "$(nnet-egs-info ark:sub.ark 2>/dev/null | grep '^storage')" "storage pq8=300"
# the minibatch reader (nnet-compute-prob) sees the same inputs as from floats
cat >nnet.config <<'CFG'
AffineComponent input-dim=20 output-dim=8 param-stddev=0.00001 bias-stddev=0
SoftmaxComponent dim=8
CFG
nnet-init --srand=1 nnet.config 0.mdl 2>/dev/null
nnet-compute-prob 0.mdl ark:pq16.ark 2>p16.log >/dev/null
nnet-compute-prob 0.mdl ark:none.ark 2>pn.log >/dev/null
p16=$(grep -o 'average probability is [-0-9.e]*' p16.log | awk '{print $NF}')
pn=$(grep -o 'average probability is [-0-9.e]*' pn.log | awk '{print $NF}')
if [ -n "$p16" ] && awk -v a="$p16" -v b="$pn" 'BEGIN { d = (a - b) / b; exit !(d < 1e-4 && d > -1e-4) }'; then
    pass "nnet-compute-prob on pq16 = on floats ($p16, $pn)"
else fail "nnet-compute-prob: pq16 '$p16', floats '$pn'"; fi

# bad input: one line naming the file, the key and the reason
head -c $(( $(stat -c %s pq8.ark) - 7 )) pq8.ark >trunc.ark
expect_status "truncated archive" 1 nnet-copy-egs ark:trunc.ark ark:x.ark
expect_err "names file and key" "trunc.ark.*key 'utt249-9'|key 'utt249-9'.*trunc.ark"
expect_status "ark,scp" 0 nnet-copy-egs ark:pq8.ark ark,scp:o.ark,o.scp
sed 1d o.scp >cut.scp
expect_status "an scp without the entry holding the table" 1 nnet-copy-egs scp:cut.scp ark:x.ark
expect_err "says why" "key 'utt000-1'.*refers to range table .* not held before"
expect_eq "in one line" "$(grep -vc '^nnet-copy-egs ' err)" 1
expect_status "the scp in archive order reads" 0 nnet-copy-egs scp:o.scp ark:x.ark
