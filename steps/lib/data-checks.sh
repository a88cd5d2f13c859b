# steps/lib/data-checks.sh: checks of a data directory's feats.scp and labels.scp before any job
# starts (sourced by steps/get_egs.sh; functions only). The contract (README "Bring your own data"):
#   feats.scp   <utt> <rxfilename> of a Kaldi feature matrix (frames x dim)
#   labels.scp  <utt> <rxfilename> of a Kaldi int32 vector: one pdf-id per frame of the utterance,
#               0 <= pdf-id < num-pdfs (the network's output dim); Kaldi's alignments hold
#               transition-ids: `ali-to-pdf final.mdl "ark:gunzip -c ali.*.gz |" ark:-` makes them
#               pdf-ids. Or a Kaldi Posterior per utterance (ali-to-post), one list per frame.

# nnet_config_output_dim CONFIG: the output dim of a network config (the last line's dim= or
# output-dim=); empty when none is found.
nnet_config_output_dim() {
    awk '!/^[[:space:]]*(#|$)/ { d = ""; for (i = 2; i <= NF; i++) if ($i ~ /^(output-)?dim=/) { d = $i; sub(/.*=/, "", d) }
                                 if (d != "") last = d }
         END { if (last != "") print last }' $1 2>/dev/null
}

# data_check DIR NUM_PDFS OUT: reads every utterance's frame count and labels once; prints one
# console line, or an error line naming the utterance and the reason and returns 1. Utterances of
# feats.scp without labels are counted (nnet-get-egs skips them); none labelled is an error.
# Writes "utts frames min_label max_label" to OUT. Streams: one line per utterance from each
# table, sorted (with a fixed buffer: sort spills to disk beyond it) and joined by key, so its
# memory does not grow with the corpus.
data_check() {
    local d=$1 num_pdfs=$2 out=$3 tmp res
    tmp=$(mktemp -d) || return 1
    if ! ( set -o pipefail; feat-to-len scp:$d/feats.scp ark,t:- 2>$tmp/err | \
           LC_ALL=C sort -S 4M -T $tmp > $tmp/lens ); then
        echo "$0: cannot read $d/feats.scp: $(grep ERROR $tmp/err | tail -n 1)"; rm -rf $tmp; return 1
    fi
    # copy-post reads either form of labels (int32 pdf-ids or Kaldi Posteriors) and prints
    # "utt [ id w id w ] [ id w ] ...": one bracket per frame; per utterance "utt frames lo hi".
    if ! ( set -o pipefail; copy-post scp:$d/labels.scp ark,t:- 2>$tmp/err | awk '
           { T = 0; have = 0
             for (i = 2; i <= NF; i++) {
                 if ($i == "[") { T++; k = 0; continue }
                 if ($i == "]" || k++ % 2) continue
                 v = $i + 0
                 if (!have || v < lo) lo = v
                 if (!have || v > hi) hi = v
                 have = 1 }
             print $1, T, (have ? lo : "-"), (have ? hi : "-") }' | \
           LC_ALL=C sort -S 4M -T $tmp > $tmp/labels ); then
        echo "$0: cannot read $d/labels.scp: $(grep ERROR $tmp/err | tail -n 1)"; rm -rf $tmp; return 1
    fi
    # every utterance of feats.scp: "utt frames labels lo hi", "none" where it has no labels
    res=$(LC_ALL=C join -a 1 -e none -o 0,1.2,2.2,2.3,2.4 $tmp/lens $tmp/labels | \
        awk -v d=$d -v np="$num_pdfs" '
        { n++
          if ($3 == "none") { miss++; if (miss == 1) firstmiss = $1; next }
          nl++; frames += $3
          if ($3 != $2) { bad++; if (bad == 1) firstbad = sprintf("%s: %d frames of features, %d labels", $1, $2, $3) }
          if ($4 == "-") next
          if (!have || $4 + 0 < lo) { lo = $4 + 0; lou = $1 }
          if (!have || $5 + 0 > hi) { hi = $5 + 0; hiu = $1 }
          have = 1 }
        END {
          if (nl == 0) { printf "ERROR %s/labels.scp labels none of the %d utterances of %s/feats.scp (the keys must be the same)\n", d, n, d; exit }
          if (bad) { printf "ERROR %s: %d of %d utterances have as many labels as frames, %d not (first: %s); labels.scp must hold one label (pdf-id) per frame of feats.scp\n", d, nl - bad, nl, bad, firstbad; exit }
          if (lo < 0) { printf "ERROR %s/labels.scp: label %d (utterance %s) is negative: labels are pdf-ids 0..num-pdfs-1\n", d, lo, lou; exit }
          if (np != "" && hi >= np) { printf "ERROR %s/labels.scp: label %d (utterance %s) is not below --num-pdfs %d: labels are pdf-ids 0..%d; Kaldi alignments hold transition-ids, which ali-to-pdf turns into pdf-ids\n", d, hi, hiu, np, np - 1; exit }
          printf "OK %d %d %d %d %d %s\n", nl, frames, lo, hi, miss, firstmiss }')
    rm -rf $tmp
    case $res in
        ERROR*) echo "$0: ${res#ERROR }"; return 1 ;;
        OK*) ;;
        *) echo "$0: cannot read $d/labels.scp"; return 1 ;;
    esac
    set -- ${res#OK }
    local range="labels $3..$4"
    [ -n "$num_pdfs" ] && range="$range (--num-pdfs $num_pdfs)"
    echo "$0: $d: $1 labelled utterances, $2 frames, $range"
    [ $5 -gt 0 ] && echo "$0: $d: $5 utterances of feats.scp have no labels and are left out (first: $6)"
    echo "$1 $2 $3 $4" > $out
    return 0
}
