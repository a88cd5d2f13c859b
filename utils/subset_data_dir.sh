#!/usr/bin/env bash
# subset_data_dir.sh: a subset of a Kaldi data directory (Kaldi's utils/subset_data_dir.sh).
# Copies utt2spk, spk2utt, and, where present, feats.scp, wav.scp, text, utt2dur, utt2num_frames,
# segments, spk2gender and cmvn.scp (the last two keyed by speaker), each filtered to the chosen
# utterances (speakers), in the source's order.
#   <num-utt> alone picks num-utt utterances evenly spaced through utt2spk (deterministic, as
#   Kaldi's subset_scp.pl); --first / --last the first / last num-utt; --per-spk num-utt of each
#   speaker (the first ones); --speakers whole speakers, evenly spaced, until num-utt utterances are
#   reached; --utt-list / --spk-list a given list.
first=false
last=false
per_spk=false
speakers=false
utt_list=
spk_list=
help_message="Usage: $0 [--speakers|--first|--last|--per-spk] <srcdir> <num-utt> <destdir>
   or: $0 --spk-list <speaker-list-file> <srcdir> <destdir>
   or: $0 --utt-list <utterance-list-file> <srcdir> <destdir>
e.g.: $0 data/train 1000 data/train_1k
 or:  $0 --speakers data/train 1000 data/train_1k_spk
 or:  $0 --utt-list valid.list data/train data/valid"
# The selection modes are bare flags, as in Kaldi; --utt-list / --spk-list take a value.
while true; do
    case ${1:-} in
        --first) first=true; shift ;;
        --last) last=true; shift ;;
        --per-spk) per_spk=true; shift ;;
        --speakers) speakers=true; shift ;;
        --first=*|--last=*|--per-spk=*|--speakers=*) v=${1#*=}; k=${1%%=*}; k=${k#--}
            case $v in true|false) ;; *) echo "$0: $1: expected true or false" 1>&2; exit 1 ;; esac
            case $k in first) first=$v ;; last) last=$v ;; per-spk) per_spk=$v ;;
                speakers) speakers=$v ;; esac
            shift ;;
        *) break ;;
    esac
done
. "$(dirname "$0")/parse_options.sh" || exit 1
if [ -n "$utt_list$spk_list" ]; then
    [ $# = 2 ] || { echo "$help_message" 1>&2; exit 1; }
    src=$1 dest=$2 n=
else
    [ $# = 3 ] || { echo "$help_message" 1>&2; exit 1; }
    src=$1 n=$2 dest=$3
    case $n in ''|*[!0-9]*) echo "$0: <num-utt> must be a positive integer, got '$n'" 1>&2; exit 1 ;; esac
    [ "$n" -gt 0 ] || { echo "$0: <num-utt> must be positive" 1>&2; exit 1; }
fi
[ -f "$src/utt2spk" ] || { echo "$0: no such file $src/utt2spk" 1>&2; exit 1; }
[ "$(cd "$src" && pwd)" != "$(mkdir -p "$dest" && cd "$dest" && pwd)" ] ||
    { echo "$0: <srcdir> and <destdir> are the same" 1>&2; exit 1; }
set -o pipefail
tmp=$(mktemp -d "$dest/.subset.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
total=$(wc -l < "$src/utt2spk")
# spk2utt from utt2spk when the source has none (speakers in order of first appearance)
spk2utt() { awk '{ if (!($2 in s)) { o[++n] = $2 } s[$2] = s[$2] " " $1 } END { for (i = 1; i <= n; i++) print o[i] s[o[i]] }' "$1"; }

if [ -n "$utt_list" ]; then
    perl "$(dirname "$0")/filter_scp.pl" "$utt_list" "$src/utt2spk" > "$tmp/utt2spk" || exit 1
elif [ -n "$spk_list" ]; then
    awk 'NR == FNR { want[$1] = 1; next } ($2 in want)' "$spk_list" "$src/utt2spk" > "$tmp/utt2spk"
elif $first; then
    head -n "$n" "$src/utt2spk" > "$tmp/utt2spk"
elif $last; then
    tail -n "$n" "$src/utt2spk" > "$tmp/utt2spk"
elif $per_spk; then
    awk -v n="$n" '++c[$2] <= n' "$src/utt2spk" > "$tmp/utt2spk"
elif $speakers; then
    spk2utt "$src/utt2spk" > "$tmp/spk2utt.all"
    nspk=$(wc -l < "$tmp/spk2utt.all")
    # speakers evenly spaced, fewer and fewer apart, until enough utterances
    awk -v n="$n" -v nspk="$nspk" '{ line[NR] = $0; cnt[NR] = NF - 1 }
        END { got = 0; for (step = nspk; step >= 1 && got < n; step = int(step / 2))
                  for (i = 1; i <= nspk && got < n; i += step) if (!(i in take)) { take[i] = 1; got += cnt[i] }
              for (i = 1; i <= nspk; i++) if (i in take) print line[i] }' "$tmp/spk2utt.all" |
        awk '{ for (i = 2; i <= NF; i++) print $1 }' > "$tmp/spk.list"
    awk 'NR == FNR { want[$1] = 1; next } ($2 in want)' "$tmp/spk.list" "$src/utt2spk" > "$tmp/utt2spk"
else
    [ "$n" -le "$total" ] || { echo "$0: cannot take $n of $total utterances" 1>&2; exit 1; }
    # line i (0-based) of the N taken is line floor(i * total / N) of the source
    awk -v n="$n" -v total="$total" 'BEGIN { next_i = 0; k = 0 }
        { if (k < n && NR - 1 == int(k * total / n)) { print; k++ } }' "$src/utt2spk" > "$tmp/utt2spk"
fi
[ -s "$tmp/utt2spk" ] || { echo "$0: the subset of $src is empty" 1>&2; exit 1; }
cut -d' ' -f1 "$tmp/utt2spk" > "$tmp/utts"
awk '{print $2}' "$tmp/utt2spk" | awk '!seen[$1]++' > "$tmp/spks"
keep() { awk 'NR == FNR { want[$1] = 1; next } ($1 in want)' "$1" "$2"; }
for f in feats.scp wav.scp text utt2dur utt2num_frames segments; do
    [ -f "$src/$f" ] && { keep "$tmp/utts" "$src/$f" > "$tmp/$f" || exit 1; }
done
for f in spk2gender cmvn.scp; do
    [ -f "$src/$f" ] && { keep "$tmp/spks" "$src/$f" > "$tmp/$f" || exit 1; }
done
spk2utt "$tmp/utt2spk" > "$tmp/spk2utt"
rm -f "$tmp/utts" "$tmp/spks" "$tmp/spk.list" "$tmp/spk2utt.all"
for f in "$tmp"/*; do mv "$f" "$dest/" || exit 1; done
echo "$0: created a subset of $src in $dest: $(wc -l < "$dest/utt2spk") utterances, $(wc -l < "$dest/spk2utt") speakers"
