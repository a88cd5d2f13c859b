#!/usr/bin/env bash
# csv_to_data.sh: a user's tabular data (CSV) into a parnet data directory, so that it enters the
# same path as any Kaldi data: <data-dir>/feats.{ark,scp} (one 1 x D matrix per row) and
# <data-dir>/labels.{ark,scp} (one int32 label per row). The conversion is a documented pipe:
#   awk (CSV -> Kaldi text archive) | copy-feats ark,t:- ark,scp:...    and likewise for labels.
# Each row must have the same number of fields; features must be numbers; the label an integer >= 0.
# A bad row stops the conversion with a message naming the file and line, and nothing is written.
#   utils/csv_to_data.sh [--label-column 1] [--header false] [--delimiter ,] [--prefix row] <csv> <data-dir>
label_column=1   # 1-based column of the class label (0: no labels)
header=false     # skip the first line
delimiter=,
prefix=row       # keys are <prefix>-<line number>
help_message="Usage: $0 [options] <csv-file> <data-dir>
e.g.: $0 --label-column 5 --header true iris.csv data/iris
Options: --label-column N (1-based; 0: no labels), --header true|false, --delimiter C, --prefix P"
. "$(dirname "$0")/parse_options.sh" || exit 1
if [ $# != 2 ]; then echo "$help_message" 1>&2; exit 1; fi
csv=$1
dir=$2
[ -f "$csv" ] || { echo "$0: no such file '$csv'" 1>&2; exit 1; }
set -o pipefail
mkdir -p "$dir" || exit 1
tmp=$(mktemp -d "$dir/.csv.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

awk -F"$delimiter" -v lab=$label_column -v header=$header -v prefix="$prefix" -v file="$csv" \
    -v feats="$tmp/feats.txt" -v labels="$tmp/labels.txt" '
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
                if (v !~ /^[0-9]+$/) bad("label \"" v "\" is not an integer >= 0")
                print key, v > labels
                continue
            }
            if (v !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) bad("field " i " \"" v "\" is not a number")
            row = row " " v
        }
        print key, " [" row " ]" > feats
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
# The scp files name the archives by their final paths; then everything is renamed into place.
for f in feats labels; do
    [ -f $tmp/$f.ark ] || continue
    sed "s|$tmp/$f.ark|$(cd "$dir" && pwd)/$f.ark|" $tmp/$f.scp > $tmp/$f.scp.final
    mv $tmp/$f.ark "$dir/$f.ark" && mv $tmp/$f.scp.final "$dir/$f.scp" || exit 1
done
echo "$0: wrote $(wc -l < "$dir/feats.scp") rows of dimension $(feat-to-dim --print-args=false scp:$dir/feats.scp - 2>/dev/null) to $dir" 1>&2
