#!/usr/bin/env bash
# csv_to_data.sh: a user's tabular data (CSV) into a parnet data directory, so that it enters the
# same path as any Kaldi data: <data-dir>/feats.{ark,scp} (one 1 x D matrix per row) and
# <data-dir>/labels.{ark,scp} (one int32 label per row). The conversion is a documented pipe:
#   awk (CSV -> Kaldi text archive) | copy-feats ark,t:- ark,scp:...    and likewise for labels.
# Each row must have the same number of fields; features must be numbers. Labels that are all
# integers >= 0 are the class ids (a fractional or negative number is an error); otherwise (class
# names: "setosa", "cat") each distinct name gets
# an id in sorted (LC_ALL=C) order, and the mapping is saved as <data-dir>/label_map.txt ("<name>
# <id>" lines, as a words.txt); --label-map uses a saved one (the test set with the training set's
# ids; an unknown name is an error). Each row is its own speaker: utt2spk and spk2utt map a key to
# itself (Kaldi's convention without speaker information), so the data tools work on it.
# A bad row stops the conversion with a message naming the file and line, and nothing is written.
#   utils/csv_to_data.sh [--label-column 1] [--header false] [--delimiter ,] [--prefix row] [--label-map F] <csv> <data-dir>
label_column=1   # 1-based column of the class label (0: no labels)
header=false     # skip the first line
delimiter=,
prefix=row       # keys are <prefix>-<line number>
label_map=       # "<name> <id>" lines: class names to ids (default: made from the data when needed)
help_message="Usage: $0 [options] <csv-file> <data-dir>
e.g.: $0 --label-column 5 --header true iris.csv data/iris
      $0 --label-column 5 --header true --label-map data/iris/label_map.txt iris-test.csv data/iris_test
Options: --label-column N (1-based; 0: no labels), --header true|false, --delimiter C, --prefix P,
  --label-map F (class names to ids, e.g. the training set's <data-dir>/label_map.txt)"
. "$(dirname "$0")/parse_options.sh" || exit 1
if [ $# != 2 ]; then echo "$help_message" 1>&2; exit 1; fi
csv=$1
dir=$2
[ -f "$csv" ] || { echo "$0: no such file '$csv'" 1>&2; exit 1; }
set -o pipefail
mkdir -p "$dir" || exit 1
tmp=$(mktemp -d "$dir/.csv.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Class names: the given mapping, or one made when any label is not an integer >= 0.
if [ -n "$label_map" ]; then
    [ -f "$label_map" ] || { echo "$0: no such file '$label_map' (--label-map)" 1>&2; exit 1; }
    cp "$label_map" $tmp/label_map.txt
elif [ $label_column -gt 0 ]; then
    awk -F"$delimiter" -v lab=$label_column -v header=$header '
        NR == 1 && header == "true" { next }
        /^[ \t\r]*$/ { next }
        { sub(/\r$/, ""); v = $lab; gsub(/^[ \t"]+|[ \t"]+$/, "", v); if (v != "") print v }' "$csv" | \
        LC_ALL=C sort -u > $tmp/names
    # Names when some label is not an integer >= 0 and none is another number (a fractional or
    # negative number is a mistake, reported below with its line, not a class name).
    if grep -qv '^[0-9][0-9]*$' $tmp/names && ! grep -qE '^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$' <(grep -v '^[0-9][0-9]*$' $tmp/names); then
        awk '{ print $1, NR - 1 }' $tmp/names > $tmp/label_map.txt
        grep -q ' ' $tmp/names && { echo "$0: $csv: class names with spaces are not supported ($(grep ' ' $tmp/names | head -n 1))" 1>&2; exit 1; }
    fi
fi
awk -F"$delimiter" -v lab=$label_column -v header=$header -v prefix="$prefix" -v file="$csv" \
    -v feats="$tmp/feats.txt" -v labels="$tmp/labels.txt" -v map="$tmp/label_map.txt" -v mapname="${label_map:-the class names}" '
    BEGIN { while ((getline l < map) > 0) { split(l, f, " "); id[f[1]] = f[2]; mapped = 1 } }
    function bad(msg) { bad_seen = 1; printf "%s: %s line %d: %s\n", "csv_to_data.sh", file, NR, msg > "/dev/stderr"; exit 1 }
    NR == 1 && header == "true" { next }
    /^[ \t\r]*$/ { next }
    {
        sub(/\r$/, "")
        if (nf == 0) nf = NF
        if (NF != nf) bad("expected " nf " fields, got " NF)
        if (lab > NF) bad("no label column " lab " (the row has " NF " fields)")
        key = sprintf("%s-%06d", prefix, NR)
        row = ""
        for (i = 1; i <= NF; i++) {
            v = $i; gsub(/^[ \t"]+|[ \t"]+$/, "", v)
            if (i == lab) {
                if (mapped) {
                    if (!(v in id)) bad("label \"" v "\" is not in " mapname)
                    v = id[v]
                } else if (v !~ /^[0-9]+$/) bad("label \"" v "\" is not an integer >= 0")
                print key, v > labels
                continue
            }
            if (v !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) bad("field " i " \"" v "\" is not a number")
            row = row " " v
        }
        print key, " [" row " ]" > feats
        print key, key > (feats ".utt2spk")
        n++
    }
    END { if (n == 0 && !bad_seen) { printf "csv_to_data.sh: %s: no data rows\n", file > "/dev/stderr"; exit 1 } }
' "$csv" || exit 1

copy-feats --print-args=false ark,t:$tmp/feats.txt ark,scp:$tmp/feats.ark,$tmp/feats.scp 2>$tmp/log \
    || { cat $tmp/log 1>&2; exit 1; }
if [ $label_column -gt 0 ]; then
    copy-int-vector --print-args=false ark,t:$tmp/labels.txt ark,scp:$tmp/labels.ark,$tmp/labels.scp 2>$tmp/log \
        || { cat $tmp/log 1>&2; exit 1; }
fi
# Every row its own speaker (sorted, as Kaldi's data tools want).
LC_ALL=C sort $tmp/feats.txt.utt2spk > $tmp/utt2spk
awk '{ print $1, $1 }' $tmp/utt2spk > $tmp/spk2utt
# The scp files name the archives by their final paths; then everything is renamed into place.
for f in feats labels; do
    [ -f $tmp/$f.ark ] || continue
    sed "s|$tmp/$f.ark|$(cd "$dir" && pwd)/$f.ark|" $tmp/$f.scp > $tmp/$f.scp.final
    mv $tmp/$f.ark "$dir/$f.ark" && mv $tmp/$f.scp.final "$dir/$f.scp" || exit 1
done
mv $tmp/utt2spk "$dir/utt2spk" && mv $tmp/spk2utt "$dir/spk2utt" || exit 1
if [ -f $tmp/label_map.txt ] && [ -z "$label_map" ]; then
    mv $tmp/label_map.txt "$dir/label_map.txt" || exit 1
    echo "$0: $(wc -l < "$dir/label_map.txt") class names mapped to ids 0..$(( $(wc -l < "$dir/label_map.txt") - 1 )) (sorted; saved as $dir/label_map.txt)" 1>&2
fi
echo "$0: wrote $(wc -l < "$dir/feats.scp") rows of dimension $(feat-to-dim --print-args=false scp:$dir/feats.scp - 2>/dev/null) to $dir" 1>&2
