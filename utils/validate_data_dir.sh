#!/usr/bin/env bash
# utils/validate_data_dir.sh (Kaldi's): checks a data directory. utt2spk and spk2utt must agree;
# every file keyed by utterance (utt2spk, text, feats.scp, wav.scp, labels.scp, utt2dur,
# utt2num_frames) and by speaker (spk2utt, cmvn.scp, spk2gender) must be sorted (LC_ALL=C, no
# duplicate keys) and cover the same utterances (speakers); feats.scp and labels.scp must name the
# same utterances as utt2spk. The first problem is reported in one line, exit 1;
# utils/fix_data_dir.sh repairs most of them.
# Usage: utils/validate_data_dir.sh [--no-feats] [--no-text] [--no-wav] [--no-spk-sort] <data-dir>
no_feats=false no_text=false no_wav=false no_spk_sort=false
while true; do
    case ${1:-} in
        --no-feats) no_feats=true; shift ;;
        --no-text) no_text=true; shift ;;
        --no-wav) no_wav=true; shift ;;
        --no-spk-sort) no_spk_sort=true; shift ;;
        --help|-h|--*) [ "${1:-}" = --help ] || [ "${1:-}" = -h ] || echo "$0: unknown option ${1:-}" 1>&2
            echo "Usage: $0 [--no-feats] [--no-text] [--no-wav] [--no-spk-sort] <data-dir>
e.g.: $0 data/train
--no-feats: feats.scp need not be present; --no-text: text need not be present (frame-label
data: labels.scp instead); --no-wav: wav.scp need not be present; --no-spk-sort: utt2spk need
not be sorted by speaker as well as by utterance." 1>&2
            [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; exit $? ;;
        *) break ;;
    esac
done
[ $# = 1 ] || { echo "Usage: $0 [--no-feats] [--no-text] [--no-wav] [--no-spk-sort] <data-dir>" 1>&2; exit 1; }
d=$1
export LC_ALL=C
err() { echo "$0: $*" 1>&2; exit 1; }
[ -d $d ] || err "no such directory $d"
[ -f $d/utt2spk ] || err "no such file $d/utt2spk"
[ -f $d/spk2utt ] || err "no such file $d/spk2utt"
sorted() {   # <file>: sorted by the first field, no duplicates
    cut -d' ' -f1 $1 | sort -c -u 2>/dev/null || err "file $1 is not in sorted order or has duplicates (utils/fix_data_dir.sh sorts it)"
}
sorted $d/utt2spk
sorted $d/spk2utt
if ! $no_spk_sort; then
    sort -k2,2 -s -c $d/utt2spk 2>/dev/null || \
        err "$d/utt2spk is not sorted by speaker as well as by utterance (speaker-id as utterance-id prefix), or use --no-spk-sort"
fi
cmp -s <(utils_spk2utt() { awk '{ u[$2] = u[$2] " " $1 } END { for (s in u) print s u[s] }' $1 | sort; }; utils_spk2utt $d/utt2spk) \
       <(sort $d/spk2utt | sed 's/[ \t]\+/ /g; s/ $//') || \
    err "$d/spk2utt does not match $d/utt2spk (utils/utt2spk_to_spk2utt.pl $d/utt2spk > $d/spk2utt)"
cut -d' ' -f1 $d/utt2spk > $d/.utts.$$; cut -d' ' -f1 $d/spk2utt > $d/.spks.$$
trap 'rm -f $d/.utts.$$ $d/.spks.$$' EXIT
same() {   # <file> <keys-file> <what>
    sorted $1
    cmp -s <(cut -d' ' -f1 $1) $2 || {
        local a b
        a=$(cut -d' ' -f1 $1 | comm -23 - $2 | head -n 1); b=$(cut -d' ' -f1 $1 | comm -13 - $2 | head -n 1)
        err "$1 and $d/$3 do not have the same keys (${a:+'$a' only in $1}${a:+${b:+, }}${b:+'$b' only in $d/$3}; utils/fix_data_dir.sh keeps the common ones)"
    }
}
if [ -f $d/text ]; then same $d/text $d/.utts.$$ utt2spk
elif ! $no_text && [ ! -f $d/labels.scp ]; then err "no such file $d/text (or labels.scp; --no-text if neither is expected)"; fi
if [ -f $d/feats.scp ]; then same $d/feats.scp $d/.utts.$$ utt2spk
elif ! $no_feats; then err "no such file $d/feats.scp (--no-feats if not expected yet)"; fi
[ -f $d/labels.scp ] && same $d/labels.scp $d/.utts.$$ utt2spk
if [ -f $d/wav.scp ]; then
    if [ -f $d/segments ]; then sorted $d/segments; sorted $d/wav.scp
    else same $d/wav.scp $d/.utts.$$ utt2spk; fi
elif ! $no_wav && [ ! -f $d/feats.scp ]; then err "no such file $d/wav.scp (--no-wav if not expected)"; fi
for f in utt2dur utt2num_frames; do [ -f $d/$f ] && same $d/$f $d/.utts.$$ utt2spk; done
for f in cmvn.scp spk2gender; do [ -f $d/$f ] && same $d/$f $d/.spks.$$ spk2utt; done
echo "$0: Successfully validated data-directory $d"
