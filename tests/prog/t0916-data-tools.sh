#!/usr/bin/env bash
# Kaldi's data tools (issue 32): utt2spk_to_spk2utt.pl, spk2utt_to_utt2spk.pl, validate_data_dir.sh,
# fix_data_dir.sh, split_data.sh, steps/make_fbank.sh, make_mfcc.sh, compute_cmvn_stats.sh, and
# csv_to_data.sh's utt2spk/spk2utt and class names; the messages' wording included.
. "$PARNET_TOP/tests/prog/lib.sh"
ln -s $PARNET_TOP/steps steps
ln -s $PARNET_TOP/utils utils
export LC_ALL=C
# ---- speaker maps ----
printf 'a-1 a\na-2 a\nb-1 b\nc-1 c\nc-2 c\nc-3 c\n' > utt2spk
expect_eq "utt2spk_to_spk2utt.pl" "$(utils/utt2spk_to_spk2utt.pl utt2spk | tr '\n' ';')" "a a-1 a-2;b b-1;c c-1 c-2 c-3;"
expect_eq "spk2utt_to_utt2spk.pl inverts it" "$(utils/utt2spk_to_spk2utt.pl utt2spk | utils/spk2utt_to_utt2spk.pl)" "$(cat utt2spk)"
# ---- validate / fix ----
mkdir -p d && cp utt2spk d/ && utils/utt2spk_to_spk2utt.pl utt2spk > d/spk2utt
awk '{ print $1, "w" NR }' utt2spk > d/text
expect_status "validate_data_dir.sh" 0 utils/validate_data_dir.sh --no-feats --no-wav d
expect_eq "says so" "$(cat out)" "utils/validate_data_dir.sh: Successfully validated data-directory d"
sed -i '2d' d/text
expect_status "a missing utterance" 1 utils/validate_data_dir.sh --no-feats --no-wav d
expect_eq "names it" "$(tail -n 1 err)" "utils/validate_data_dir.sh: d/text and d/utt2spk do not have the same keys ('a-2' only in d/utt2spk; utils/fix_data_dir.sh keeps the common ones)"
{ sed -n 2p d/text; sed 2d d/text; } > t && mv t d/text
expect_status "unsorted" 1 utils/validate_data_dir.sh --no-feats --no-wav d
expect_eq "unsorted named" "$(tail -n 1 err)" "utils/validate_data_dir.sh: file d/text is not in sorted order or has duplicates (utils/fix_data_dir.sh sorts it)"
expect_status "fix_data_dir.sh" 0 utils/fix_data_dir.sh d
expect_eq "kept" "$(cat out)" "utils/fix_data_dir.sh: kept 5 utterances out of 6 (old files in d/.backup)"
expect_eq "spk2utt remade" "$(tr '\n' ';' < d/spk2utt)" "a a-1;b b-1;c c-1 c-2 c-3;"
expect_status "valid after fixing" 0 utils/validate_data_dir.sh --no-feats --no-wav d
# ---- split ----
expect_status "split_data.sh by speaker" 0 utils/split_data.sh d 2
expect_eq "whole speakers, even parts" "$(cut -d' ' -f2 d/split2/1/utt2spk | uniq | tr '\n' ' ')/$(cut -d' ' -f2 d/split2/2/utt2spk | uniq | tr '\n' ' ')" "a b /c "
expect_eq "text split too" "$(cat d/split2/*/text | md5sum)" "$(md5sum < d/text)"
expect_status "more parts than speakers" 1 utils/split_data.sh d 4
expect_eq "says so" "$(tail -n 1 err)" "utils/split_data.sh: d has 3 speakers, fewer than 4 parts (--per-utt splits by utterance)"
expect_status "split_data.sh --per-utt" 0 utils/split_data.sh --per-utt d 4
expect_eq "utterances in 4 parts" "$(cat d/split4utt/*/utt2spk | wc -l) $(ls d/split4utt | wc -l)" "5 4"
# ---- features and CMVN from audio ----
mkdir -p w
python3 - <<'PY'
import math, struct, wave
for i, f in enumerate([220, 330, 440]):
    with wave.open(f"w/u{i}.wav", "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * f * t / 16000))) for t in range(4000)))
PY
mkdir -p a
for i in 0 1 2; do echo "s$((i / 2))-u$i $PWD/w/u$i.wav"; done > a/wav.scp
echo "s1-u3 $PWD/w/missing.wav" >> a/wav.scp
awk '{ split($1, p, "-"); print $1, p[1] }' a/wav.scp > a/utt2spk
utils/utt2spk_to_spk2utt.pl a/utt2spk > a/spk2utt
expect_status "make_fbank.sh" 0 steps/make_fbank.sh --nj 2 a exp/make_fbank fbank
grep -q "^steps/make_fbank.sh: WARNING: 1 of 4 recordings gave no features (the logs exp/make_fbank/make_fbank_a.\*.log say why); utils/fix_data_dir.sh a leaves them out$" out \
    && pass "an unreadable recording counted" || fail "no warning: $(cat out)"
expect_eq "Kaldi's layout" "$(ls fbank | tr '\n' ' ')" "raw_fbank_a.1.ark raw_fbank_a.1.scp raw_fbank_a.2.ark raw_fbank_a.2.scp "
expect_eq "feats.scp: 3 utterances" "$(wc -l < a/feats.scp)" 3
expect_status "fix_data_dir.sh after features" 0 utils/fix_data_dir.sh a
expect_status "compute_cmvn_stats.sh" 0 steps/compute_cmvn_stats.sh a exp/make_fbank fbank
expect_eq "per speaker" "$(cut -d' ' -f1 a/cmvn.scp | tr '\n' ' ')" "s0 s1 "
expect_status "apply-cmvn with them" 0 apply-cmvn --utt2spk=ark:a/utt2spk scp:a/cmvn.scp scp:a/feats.scp ark:/dev/null
expect_status "compute_cmvn_stats.sh --fake" 0 steps/compute_cmvn_stats.sh --fake a exp/make_fbank fbank_fake
apply-cmvn --utt2spk=ark:a/utt2spk scp:a/cmvn.scp scp:a/feats.scp ark,t:fake.txt 2>/dev/null
copy-feats scp:a/feats.scp ark,t:orig.txt 2>/dev/null
expect_same "fake statistics change nothing" fake.txt orig.txt
expect_status "validate the directory" 0 utils/validate_data_dir.sh --no-text a
expect_status "make_mfcc.sh" 0 steps/make_mfcc.sh --nj 1 a exp/make_mfcc mfcc
expect_eq "13 cepstra" "$(feat-to-dim scp:a/feats.scp - 2>/dev/null)" 13
# ---- csv_to_data.sh: speakers and class names ----
printf 'sl,sw,class\n5.1,3.5,setosa\n7.0,3.2,versicolor\n6.3,3.3,virginica\n4.9,3.0,setosa\n' > iris.csv
expect_status "class names" 0 utils/csv_to_data.sh --label-column 3 --header true iris.csv iris
expect_eq "mapped in sorted order" "$(tail -n 1 err)" "utils/csv_to_data.sh: wrote 4 rows of dimension 2 to iris"
expect_eq "mapping saved" "$(tr '\n' ';' < iris/label_map.txt)" "setosa 0;versicolor 1;virginica 2;"
expect_eq "labels" "$(copy-int-vector scp:iris/labels.scp ark,t:- 2>/dev/null | awk '{ print $2 }' | tr '\n' ' ')" "0 1 2 0 "
expect_status "utt2spk/spk2utt written" 0 utils/validate_data_dir.sh --no-text --no-wav iris
expect_status "subset_data_dir.sh works on it" 0 utils/subset_data_dir.sh iris 2 iris2
printf '5,3,setosa\n6,3,rose\n' > test.csv
expect_status "an unknown class" 1 utils/csv_to_data.sh --label-column 3 --label-map iris/label_map.txt test.csv iris_test
expect_eq "named with its line" "$(tail -n 1 err)" 'csv_to_data.sh: test.csv line 2: label "rose" is not in iris/label_map.txt'
# ---- sample_lines.pl: K lines by reservoir sampling, in input order ----
seq 1 1000 | awk '{print "u" $1, $1}' > lines
utils/sample_lines.pl --srand 3 50 lines > s1
expect_eq "sample_lines.pl: K lines" "$(wc -l < s1)" 50
expect_eq "all of them input lines, in input order" "$(sort -k2 -n s1 | cmp - s1 && grep -c -x -F -f s1 lines)" 50
expect_eq "no line twice" "$(sort -u s1 | wc -l)" 50
expect_eq "reproducible from the seed" "$(utils/sample_lines.pl --srand 3 50 < lines | md5sum)" "$(md5sum < s1)"
expect_eq "another seed, another sample" "$(utils/sample_lines.pl --srand 4 50 lines | cmp -s - s1; echo $?)" 1
expect_eq "spread over the input (not the first K)" "$(awk '$2 > 500' s1 | wc -l | awk '{print ($1 > 10 && $1 < 40)}')" 1
expect_eq "--exclude skips those keys" "$(utils/sample_lines.pl --exclude s1 2000 lines | grep -c -x -F -f s1)" 0
expect_eq "and keeps the rest" "$(utils/sample_lines.pl --exclude s1 2000 lines | wc -l)" 950
expect_eq "fewer lines than K: all of them" "$(head -3 lines | utils/sample_lines.pl 10 | tr '\n' ';')" "u1 1;u2 2;u3 3;"
expect_status "K missing" 255 utils/sample_lines.pl --srand 1
expect_err "usage" "Usage: utils/sample_lines.pl"
