#!/usr/bin/env bash
# local/score.sh: decodes pseudo-likelihoods with the word-loop decoder over a grid of language-
# model weights and word insertion penalties and scores each as Kaldi's local/score.sh lays it
# out: <decode-dir>/scoring/<lmwt>.<penalty>.txt (the hypotheses), <decode-dir>/wer_<lmwt>_<penalty>
# (compute-wer's output) and <decode-dir>/best_wer (utils/best_wer.sh: the lowest, the first in
# file order on a tie). The LM weight is Kaldi's: the inverse of decode-word-loop's
# --acoustic-scale (0.1 -> 10). A best setting on the edge of the grid (where a value beyond it
# might be better) and ties are said on the console.
# Begin configuration section.
acoustic_scales="0.05 0.1 0.2"
word_insertion_penalties="0 2 4 6 8"
beam=16
mode=present        # compute-wer --mode
# End configuration section.
help_message="Usage: $0 [options] <text> <lang-dir> <loglikes-rspecifier> <decode-dir>
e.g.: $0 data/train/text data/lang ark:exp/nnet/decode_valid/loglikes.ark exp/nnet/decode_valid
Options:
  --acoustic-scales <list>           decode-word-loop --acoustic-scale values (LM weight 1/value)
                                     (default: \"0.05 0.1 0.2\")
  --word-insertion-penalties <list>  (default: \"0 2 4 6 8\")
  --beam <b>                         (default: 16)
  --mode <m>                         compute-wer --mode: strict|present|all (default: present)"
. utils/parse_options.sh || exit 1
if [ $# != 4 ]; then echo "$help_message" 1>&2; exit 1; fi
text=$1 lang=$2 loglikes=$3 dir=$4
set -o pipefail
mkdir -p $dir/scoring/log
rm -f $dir/wer_* $dir/best_wer
lmwt_of() { awk -v a=$1 'BEGIN { printf "%.10g", 1 / a }'; }
for as in $acoustic_scales; do
    lmwt=$(lmwt_of $as)
    for wip in $word_insertion_penalties; do
        decode-word-loop --acoustic-scale=$as --beam=$beam --word-insertion-penalty=$wip \
            $lang "$loglikes" ark,t:- 2>$dir/scoring/log/decode.$lmwt.$wip.log | \
            utils/int2sym.pl -f 2- $lang/words.txt > $dir/scoring/$lmwt.$wip.txt || \
            { echo "$0: decoding failed (log $dir/scoring/log/decode.$lmwt.$wip.log)"; exit 1; }
        compute-wer --text --mode=$mode ark:$text ark:$dir/scoring/$lmwt.$wip.txt \
            > $dir/wer_${lmwt}_$wip 2>$dir/scoring/log/score.$lmwt.$wip.log || \
            { echo "$0: compute-wer failed (log $dir/scoring/log/score.$lmwt.$wip.log)"; exit 1; }
    done
done
grep -H WER $dir/wer_* | utils/best_wer.sh > $dir/best_wer
[ -s $dir/best_wer ] || { echo "$0: no WER in $dir/wer_*"; exit 1; }
best=$(awk '{ print $NF }' $dir/best_wer); best=${best##*/wer_}
lmwt=${best%_*} wip=${best##*_}
wer=$(awk '{ print $2 }' $dir/best_wer)
ties=$(grep -l "^%WER $wer " $dir/wer_* | wc -l)
echo "$0: best WER $wer% with LM weight $lmwt (--acoustic-scale $(awk -v l=$lmwt 'BEGIN { printf "%g", 1 / l }')), --word-insertion-penalty $wip ($dir/best_wer)"
[ $ties -gt 1 ] && echo "$0: $ties settings tie at $wer%; the first in file order is taken ($(grep -l "^%WER $wer " $dir/wer_* | sed 's|.*/||' | tr '\n' ' '| sed 's/ $//'))"
# On the edge of a grid of more than one value: a value beyond it might do better.
edge() {   # <value> <name> <list...>
    local v=$1 name=$2; shift 2
    [ $# -lt 2 ] && return 0
    local lo hi
    lo=$(printf "%s\n" "$@" | sort -g | head -n 1); hi=$(printf "%s\n" "$@" | sort -g | tail -n 1)
    if awk -v a=$v -v b=$lo 'BEGIN { exit !(a == b) }'; then echo "$0: WARNING: the best $name $v is the smallest tried ($*): try smaller values"
    elif awk -v a=$v -v b=$hi 'BEGIN { exit !(a == b) }'; then echo "$0: WARNING: the best $name $v is the largest tried ($*): try larger values"; fi
}
edge $(awk -v l=$lmwt 'BEGIN { printf "%g", 1 / l }') --acoustic-scale $acoustic_scales
edge $wip --word-insertion-penalty $word_insertion_penalties
exit 0
