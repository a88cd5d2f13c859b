#!/usr/bin/env bash
# utils/fix_data_dir.sh (Kaldi's): makes a data directory valid for utils/validate_data_dir.sh:
# sorts every file (LC_ALL=C, by the first field, duplicates removed), keeps the utterances present
# in every file keyed by utterance (utt2spk, text, feats.scp, labels.scp, wav.scp without segments,
# segments, utt2dur, utt2num_frames), remakes spk2utt from utt2spk and keeps the speakers left in
# cmvn.scp and spk2gender. The old files go to <data-dir>/.backup/.
# Usage: utils/fix_data_dir.sh <data-dir>
if [ $# != 1 ] || [ "${1:0:2}" = -- ]; then
    echo "Usage: $0 <data-dir>
e.g.: $0 data/train" 1>&2
    [ "${1:-}" = --help ]; exit $?
fi
d=$1
export LC_ALL=C
[ -f $d/utt2spk ] || { echo "$0: no such file $d/utt2spk" 1>&2; exit 1; }
mkdir -p $d/.backup || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf $tmp' EXIT
utt_files="utt2spk text feats.scp labels.scp segments utt2dur utt2num_frames"
[ -f $d/segments ] || utt_files="$utt_files wav.scp"
n_before=$(wc -l < $d/utt2spk)
cut -d' ' -f1 $d/utt2spk | sort -u > $tmp/utts
for f in $utt_files; do
    [ -f $d/$f ] || continue
    cut -d' ' -f1 $d/$f | sort -u | comm -12 - $tmp/utts > $tmp/utts.new && mv $tmp/utts.new $tmp/utts
done
filter() {   # <file> <keys>: sorted, one line per key, only the keys listed
    [ -f $d/$1 ] || return 0
    cp $d/$1 $d/.backup/$1
    sort -k1,1 -u -s $d/$1 | awk -v keys=$2 'BEGIN { while ((getline k < keys) > 0) keep[k] = 1 } ($1 in keep) && !seen[$1]++' > $tmp/$1 &&
        mv $tmp/$1 $d/$1
}
for f in $utt_files; do filter $f $tmp/utts; done
[ -f $d/spk2utt ] && cp $d/spk2utt $d/.backup/spk2utt
"$(dirname "$0")"/utt2spk_to_spk2utt.pl $d/utt2spk | sort > $tmp/spk2utt && mv $tmp/spk2utt $d/spk2utt
cut -d' ' -f1 $d/spk2utt > $tmp/spks
for f in cmvn.scp spk2gender; do filter $f $tmp/spks; done
if [ -f $d/segments ] && [ -f $d/wav.scp ]; then   # recordings still used by a segment
    awk '{ print $2 }' $d/segments | sort -u > $tmp/recs
    filter wav.scp $tmp/recs
fi
n_after=$(wc -l < $d/utt2spk)
echo "$0: kept $n_after utterances out of $n_before (old files in $d/.backup)"
[ $n_after -gt 0 ] || { echo "$0: no utterance is in every file of $d" 1>&2; exit 1; }
