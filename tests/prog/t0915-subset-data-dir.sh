#!/usr/bin/env bash
# utils/subset_data_dir.sh: every selection mode, the files it filters, and its errors.
. "$(dirname "$0")/lib.sh"
sub=$PARNET_TOP/utils/subset_data_dir.sh
mkdir -p data
for s in a b c d; do for u in 1 2 3; do echo "$s-$u $s"; done; done > data/utt2spk
awk '{print $1, "/audio/" $1 ".wav"}' data/utt2spk > data/wav.scp
awk '{print $1, "word"}' data/utt2spk > data/text
awk '{print $1, "feats.ark:" NR}' data/utt2spk > data/feats.scp
printf 'a cmvn.ark:1\nb cmvn.ark:2\nc cmvn.ark:3\nd cmvn.ark:4\n' > data/cmvn.scp
printf 'a m\nb f\nc m\nd f\n' > data/spk2gender
utts() { cut -d' ' -f1 "$1/utt2spk" | tr '\n' ' '; }

expect_status "evenly spaced" 0 bash "$sub" data 4 e
expect_eq "every third utterance" "$(utts e)" "a-1 b-1 c-1 d-1 "
expect_eq "spk2utt made" "$(cat e/spk2utt | tr '\n' ';')" "a a-1;b b-1;c c-1;d d-1;"
expect_eq "wav.scp filtered" "$(cut -d' ' -f1 e/wav.scp | tr '\n' ' ')" "a-1 b-1 c-1 d-1 "
expect_eq "feats.scp filtered" "$(wc -l < e/feats.scp)" 4
expect_eq "text filtered" "$(wc -l < e/text)" 4
expect_status "first" 0 bash "$sub" --first data 5 f
expect_eq "first 5" "$(utts f)" "a-1 a-2 a-3 b-1 b-2 "
expect_eq "cmvn.scp by speaker" "$(cut -d' ' -f1 f/cmvn.scp | tr '\n' ' ')" "a b "
expect_eq "spk2gender by speaker" "$(wc -l < f/spk2gender)" 2
expect_status "last" 0 bash "$sub" --last data 2 l
expect_eq "last 2" "$(utts l)" "d-2 d-3 "
expect_status "per speaker" 0 bash "$sub" --per-spk=true data 1 p
expect_eq "one per speaker" "$(utts p)" "a-1 b-1 c-1 d-1 "
expect_status "whole speakers" 0 bash "$sub" --speakers data 5 s
expect_eq "two whole speakers (6 >= 5 utterances)" "$(cut -d' ' -f1 s/spk2utt | wc -l)" 2
expect_eq "whole speakers only" "$(awk '{print NF - 1}' s/spk2utt | sort -u)" 3
printf 'c-2\na-3\nzz\n' > list
expect_status "utterance list" 0 bash "$sub" --utt-list list data u
expect_eq "listed, in source order" "$(utts u)" "a-3 c-2 "
printf 'b\n' > slist
expect_status "speaker list" 0 bash "$sub" --spk-list slist data k
expect_eq "listed speaker" "$(utts k)" "b-1 b-2 b-3 "
expect_status "too many" 1 bash "$sub" data 20 x
expect_err "says so" "cannot take 20 of 12"
expect_status "not a number" 1 bash "$sub" data many x
expect_status "empty subset" 1 bash "$sub" --utt-list /dev/null data x2
expect_err "says empty" "subset of data is empty"
expect_status "usage" 1 bash "$sub" data
