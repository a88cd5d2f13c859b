#!/usr/bin/env bash
# utils/split_data.sh (Kaldi's): splits a data directory into <data-dir>/split<N>/{1..N}, each a
# data directory of whole speakers (--per-utt: of utterances, into split<N>utt), the parts as even
# in utterances as whole speakers allow, in the order of utt2spk. Every file keyed by utterance
# (utt2spk, feats.scp, labels.scp, text, wav.scp without segments, segments, utt2dur,
# utt2num_frames) and by speaker (spk2utt, cmvn.scp, spk2gender) is filtered into each part;
# wav.scp with segments keeps the recordings the part's segments use. Used with JOB=1:N and
# <data-dir>/split<N>/JOB/feats.scp, as Kaldi's scripts do.
# Usage: utils/split_data.sh [--per-utt] <data-dir> <num-to-split>
per_utt=false
[ "${1:-}" = --per-utt ] && { per_utt=true; shift; }
if [ $# != 2 ] || [ "${1:0:2}" = -- ]; then
    echo "Usage: $0 [--per-utt] <data-dir> <num-to-split>
e.g.: $0 data/train 4       (data/train/split4/1 .. 4)" 1>&2
    [ "${1:-}" = --help ]; exit $?
fi
d=$1 n=$2
export LC_ALL=C
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "$0: <num-to-split> '$n': expected a number >= 1" 1>&2; exit 1; }
[ -f $d/utt2spk ] || { echo "$0: no such file $d/utt2spk" 1>&2; exit 1; }
if $per_utt; then
    out=$d/split${n}utt
    units=$(wc -l < $d/utt2spk)
    [ $units -ge $n ] || { echo "$0: $d has $units utterances, fewer than $n parts" 1>&2; exit 1; }
else
    out=$d/split$n
    units=$(cut -d' ' -f2 $d/utt2spk | sort -u | wc -l)
    [ $units -ge $n ] || { echo "$0: $d has $units speakers, fewer than $n parts (--per-utt splits by utterance)" 1>&2; exit 1; }
fi
rm -rf $out
for j in $(seq $n); do mkdir -p $out/$j; done
# Part of each utterance: with speakers, a whole speaker goes where the running utterance count
# puts its first utterance (so the parts are as even as whole speakers allow) and at least one
# speaker goes to each part.
awk -v n=$n -v per_utt=$per_utt -v out=$out -v units=$units '
    NR == FNR { total++; next }
    {
        if (per_utt == "true") part = int((FNR - 1) * n / total) + 1
        else {
            if (!($2 in spk)) {
                k++
                p = int(done * n / total) + 1
                if (p < last) p = last
                if (units - k < n - p) p = n - (units - k)   # leave a speaker for every later part
                spk[$2] = p; last = p
            }
            part = spk[$2]
        }
        done++
        print > (out "/" part "/utt2spk")
    }' $d/utt2spk $d/utt2spk
for j in $(seq $n); do
    p=$out/$j
    "$(dirname "$0")"/utt2spk_to_spk2utt.pl $p/utt2spk > $p/spk2utt
    for f in feats.scp labels.scp text segments utt2dur utt2num_frames; do
        [ -f $d/$f ] && "$(dirname "$0")"/filter_scp.pl $p/utt2spk $d/$f > $p/$f
    done
    if [ -f $d/wav.scp ]; then
        if [ -f $d/segments ]; then
            awk '{ print $2 }' $p/segments > $p/.recs
            "$(dirname "$0")"/filter_scp.pl $p/.recs $d/wav.scp > $p/wav.scp; rm -f $p/.recs
        else "$(dirname "$0")"/filter_scp.pl $p/utt2spk $d/wav.scp > $p/wav.scp; fi
    fi
    for f in cmvn.scp spk2gender; do
        [ -f $d/$f ] && "$(dirname "$0")"/filter_scp.pl $p/spk2utt $d/$f > $p/$f
    done
done
exit 0
