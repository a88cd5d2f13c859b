#!/usr/bin/env bash
# utils/best_wer.sh (Kaldi's): reads "FILE:%WER ..." lines (as `grep WER dir/wer_*` prints them)
# on stdin and prints the line of the lowest WER as "%WER ... FILE"; on a tie the first line wins.
# e.g.: grep WER exp/nnet/decode_test/wer_* | utils/best_wer.sh
awk '{ if (match($0, /%WER [0-9.]+/)) { w = substr($0, RSTART + 5, RLENGTH - 5) + 0
           if (best == "" || w < bw) { best = $0; bw = w } } }
     END { if (best == "") exit
           i = index(best, "%WER"); f = substr(best, 1, i - 1); sub(/:[ \t]*$/, "", f)
           line = substr(best, i); gsub(/[ \t]+/, " ", line); sub(/ $/, "", line)
           print (f == "" ? line : line " " f) }'
